//! Creating a connection's queue pair (before it is established) with
//! its receive slots, and, once it is established, the task that
//! watches its connection-manager events.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rpcrdma_sync::lock;
use rpcrdma_verbs::{
    Access, CmStatus, ConnectError, DeviceFault, InvalidConnect, QpCaps, QpParams,
};
use tokio::sync::{watch, Notify};

use super::completion::post_slot;
use super::gather::CLASSES;
use super::{Qp, QpShared, QpState, Slot};
use crate::limits::QpRequest;
use crate::recv::RecvMatcher;
use crate::status::{cm, cm_event_name, disconnect_reason};
use crate::sys::cm_id::CmId;
use crate::sys::device::{DevInner, OwnBuf};
use crate::sys::{ffi, RdmaCore};
use crate::Options;

/// Creates the queue pair of a connection (before it is established) and
/// posts its receive slots.
pub(crate) fn create(
    dev: &Arc<DevInner>,
    cm: &Arc<CmId>,
    params: &QpParams<'_, RdmaCore>,
    opts: &Options,
) -> Result<(Arc<QpShared>, QpRequest), ConnectError> {
    let pd = params.pd.inner.clone();
    if !Arc::ptr_eq(&pd.dev, dev) && pd.dev.ctx != dev.ctx {
        return Err(ConnectError::Invalid(
            InvalidConnect::ForeignProtectionDomain,
        ));
    }
    let req = dev.limits().qp_request(params.caps);
    let mut caps = ffi::rs_qp_caps::default();
    let mut rc = 0;
    for inline in [req.inline, 64, 0] {
        caps = ffi::rs_qp_caps {
            max_send_wr: req.send_depth,
            max_recv_wr: req.recv_depth,
            max_send_sge: req.send_sge,
            max_recv_sge: 1,
            max_inline_data: inline,
            qp_num: 0,
        };
        // SAFETY: the id is live and resolved to this device; pd and the
        // queues are live objects of the same device.
        rc = unsafe {
            ffi::rs_create_qp(
                cm.id,
                pd.pd,
                params.send_cq.raw(),
                params.recv_cq.raw(),
                &mut caps,
            )
        };
        if rc != -libc::EINVAL {
            break;
        }
    }
    if rc != 0 {
        return Err(ConnectError::Device(DeviceFault::QueuePair {
            send_depth: req.send_depth,
            recv_depth: req.recv_depth,
            send_sge: req.send_sge,
            status: CmStatus(-rc.abs()),
        }));
    }
    // SAFETY: the id now has a queue pair.
    let qp = unsafe { ffi::rs_id_qp(cm.id) };
    let send_depth = caps.max_send_wr.min(req.send_depth).max(1);
    let recv_depth = caps.max_recv_wr.min(req.recv_depth).max(1);
    let slot_size = opts.recv_size.max(64);
    let mut slots = Vec::with_capacity(recv_depth as usize);
    for _ in 0..recv_depth {
        let buf = OwnBuf::new(&pd, slot_size, Access::LOCAL_WRITE)
            .map_err(|e| ConnectError::Device(DeviceFault::RegisterReceive(e)))?;
        slots.push(Slot { buf });
    }
    let (reason, _) = watch::channel(None);
    let shared = Arc::new(QpShared {
        cm: cm.clone(),
        qp,
        qp_num: caps.qp_num,
        pd,
        send_cq: params.send_cq.clone(),
        recv_cq: params.recv_cq.clone(),
        caps: Mutex::new(QpCaps {
            send_depth,
            recv_depth,
            ird: req.ird,
            ord: req.ord,
        }),
        max_sge: caps.max_send_sge.max(1),
        max_inline: caps.max_inline_data,
        state: Mutex::new(QpState {
            closed: false,
            disconnect_sent: false,
            seq: 0,
            sq: VecDeque::new(),
            recv: RecvMatcher::new(recv_depth as usize),
            slots,
            slot_size,
            pool: (0..CLASSES).map(|_| Vec::new()).collect(),
        }),
        reason,
        stop: Arc::new(Notify::new()),
        dev: dev.clone(),
    });
    shared
        .send_cq
        .attach(shared.qp_num, Arc::downgrade(&shared));
    shared
        .recv_cq
        .attach(shared.qp_num, Arc::downgrade(&shared));
    {
        let mut st = shared.lock();
        let st = &mut *st;
        for (i, s) in st.slots.iter_mut().enumerate() {
            post_slot(qp, i, s).map_err(|rc| {
                ConnectError::Device(DeviceFault::PostReceive {
                    status: CmStatus(-rc.abs()),
                })
            })?;
        }
    }
    tracing::debug!(
        qp_num = shared.qp_num,
        send_depth,
        recv_depth,
        max_sge = shared.max_sge,
        max_inline = shared.max_inline,
        slot_size,
        "queue pair created"
    );
    Ok((shared, req))
}

/// The connection is established: starts watching its events.
pub(crate) fn established(shared: Arc<QpShared>, cm: Arc<CmId>, ird: u16, ord: u16) -> Qp {
    {
        let mut c = lock(&shared.caps);
        c.ird = ird;
        c.ord = ord;
    }
    let weak = Arc::downgrade(&shared);
    let stop = shared.stop.clone();
    tokio::spawn(async move {
        loop {
            let ev = tokio::select! {
                ev = cm.next_event() => ev,
                () = stop.notified() => break,
            };
            let ev = match ev {
                Ok(ev) => ev,
                Err(e) => {
                    tracing::warn!(error = %e, "RDMA-CM event channel failed");
                    break;
                }
            };
            let Some(qp) = weak.upgrade() else { break };
            if let Some(reason) = disconnect_reason(ev.event) {
                qp.set_reason(reason);
                qp.send_disconnect();
            } else if ev.event == cm::TIMEWAIT_EXIT {
                break;
            } else {
                tracing::debug!(
                    event = cm_event_name(ev.event),
                    status = ev.status,
                    "connection event"
                );
            }
        }
        // `cm` is dropped here: the id goes once the queue pair is gone too.
    });
    Qp { shared }
}
