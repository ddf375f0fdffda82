//! Queue pairs: posting work requests, translating completions, the
//! connection's events, disconnection.

use rpcrdma_sync::lock;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use rpcrdma_verbs::{
    Access, ConnectError, DisconnectReason, PostError, QpCaps, QpParams, QueuePair as _, RecvWr,
    SendOp, SendWr, Sge, WcOpcode, WcStatus, WorkCompletion,
};
use tokio::sync::{watch, Notify};

use super::cm::CmId;
use super::cq::Cq;
use super::device::{DevInner, OwnBuf, PdInner, TempReg};
use super::{ffi, RdmaCore};
use crate::gather::{plan, GatherPlan, Piece, COPY_MAX};
use crate::limits::QpRequest;
use crate::recv::{Arrived, Matched, RecvMatcher};
use crate::status::{cm, cm_event_name, disconnect_reason, wc_status, wc_status_name};
use crate::Options;

/// Receive work request ids carry this bit (flushed completions have no
/// reliable opcode).
const RECV_TAG: u64 = 1 << 63;

/// Bounce buffer size classes: 512 octets to [`COPY_MAX`].
const CLASSES: usize = 8;
/// Most free bounce buffers kept per class.
const POOL_KEEP: usize = 64;

fn class_of(len: usize) -> usize {
    let mut c = 0;
    while c + 1 < CLASSES && (512usize << c) < len {
        c += 1;
    }
    c
}

/// What a send-queue request holds until it completes.
enum Hold {
    Bytes(#[allow(dead_code)] Bytes),
    Bounce(OwnBuf),
    Temp(#[allow(dead_code)] TempReg),
}

struct SendEntry {
    seq: u64,
    wr_id: u64,
    opcode: WcOpcode,
    signaled: bool,
    len: u32,
    holds: Vec<Hold>,
}

struct Slot {
    buf: OwnBuf,
}

struct QpState {
    closed: bool,
    disconnect_sent: bool,
    seq: u64,
    sq: VecDeque<SendEntry>,
    recv: RecvMatcher,
    slots: Vec<Slot>,
    slot_size: usize,
    pool: Vec<Vec<OwnBuf>>,
}

pub(crate) struct QpShared {
    pub(crate) cm: Arc<CmId>,
    qp: *mut ffi::ibv_qp,
    pub(crate) qp_num: u32,
    pd: Arc<PdInner>,
    send_cq: Cq,
    recv_cq: Cq,
    caps: Mutex<QpCaps>,
    max_sge: u32,
    max_inline: u32,
    state: Mutex<QpState>,
    reason: watch::Sender<Option<DisconnectReason>>,
    stop: Arc<Notify>,
    dev: Arc<DevInner>,
}

// SAFETY: ibv_qp may be used from any thread (libibverbs serialises posts
// per queue); our state is behind mutexes.
unsafe impl Send for QpShared {}
// SAFETY: as above.
unsafe impl Sync for QpShared {}

impl Drop for QpShared {
    fn drop(&mut self) {
        self.stop.notify_one();
        let st = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        // SAFETY: the id is live (this holds it) and has our queue pair;
        // after rdma_destroy_qp the device no longer touches the slots and
        // bounce buffers, which are freed after this (field drops).
        unsafe {
            if !st.disconnect_sent {
                ffi::rdma_disconnect(self.cm.id);
            }
            ffi::rdma_destroy_qp(self.cm.id);
        }
        self.send_cq.detach(self.qp_num);
        self.recv_cq.detach(self.qp_num);
    }
}

fn post_slot(qp: *mut ffi::ibv_qp, idx: usize, slot: &mut Slot) -> Result<(), i32> {
    let sge = ffi::rs_sge {
        addr: slot.buf.addr(),
        length: slot.buf.buf.len() as u32,
        lkey: slot.buf.lkey,
    };
    // SAFETY: the queue pair is live; the slot is registered and owned by
    // the queue pair's state until the queue pair is destroyed.
    let rc = unsafe { ffi::rs_post_recv(qp, RECV_TAG | idx as u64, &sge) };
    if rc != 0 {
        return Err(rc);
    }
    Ok(())
}

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
        return Err(ConnectError::Invalid {
            reason: "the protection domain belongs to another device".into(),
        });
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
        return Err(ConnectError::Device {
            reason: format!(
                "cannot create the queue pair ({} send, {} receive work requests, {} gather elements): {}",
                req.send_depth,
                req.recv_depth,
                req.send_sge,
                ffi::err_text(rc)
            ),
        });
    }
    // SAFETY: the id now has a queue pair.
    let qp = unsafe { ffi::rs_id_qp(cm.id) };
    let send_depth = caps.max_send_wr.min(req.send_depth).max(1);
    let recv_depth = caps.max_recv_wr.min(req.recv_depth).max(1);
    let slot_size = opts.recv_size.max(64);
    let mut slots = Vec::with_capacity(recv_depth as usize);
    for _ in 0..recv_depth {
        let buf =
            OwnBuf::new(&pd, slot_size, Access::LOCAL_WRITE).map_err(|e| ConnectError::Device {
                reason: format!("cannot register the receive buffers: {e}"),
            })?;
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
            post_slot(qp, i, s).map_err(|rc| ConnectError::Device {
                reason: format!("cannot post the receive buffers: {}", ffi::err_text(rc)),
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

impl QpShared {
    fn lock(&self) -> MutexGuard<'_, QpState> {
        lock(&self.state)
    }

    fn set_reason(&self, r: DisconnectReason) {
        self.lock().closed = true;
        self.reason.send_if_modified(|cur| {
            if cur.is_none() {
                tracing::debug!(qp_num = self.qp_num, reason = ?r, "connection ended");
                *cur = Some(r);
                true
            } else {
                false
            }
        });
    }

    fn send_disconnect(&self) {
        let mut st = self.lock();
        if !st.disconnect_sent {
            st.disconnect_sent = true;
            // SAFETY: the id is live; rdma_disconnect moves the queue pair
            // to the error state, flushing what is outstanding.
            unsafe { ffi::rdma_disconnect(self.cm.id) };
        }
    }

    /// Translates one device completion of this queue pair.
    pub(crate) fn on_completion(&self, wc: &ffi::rs_wc, ready: &mut VecDeque<WorkCompletion>) {
        let status = wc_status(wc.status);
        let mut fatal = None;
        if status != WcStatus::Success && status != WcStatus::WrFlush {
            fatal = Some(format!(
                "{} (vendor error {:#x})",
                wc_status_name(wc.status),
                wc.vendor_err
            ));
        }
        if wc.wr_id & RECV_TAG != 0 {
            let slot = (wc.wr_id & !RECV_TAG) as usize;
            let mut st = self.lock();
            let st = &mut *st;
            let arrived = Arrived {
                slot,
                status,
                byte_len: wc.byte_len,
                invalidated: (wc.with_inv != 0).then_some(wc.invalidated_rkey),
            };
            let slots = &st.slots;
            let out = st.recv.arrived(arrived, |i| {
                slots.get(i).map_or(&[][..], |s| &s.buf.buf[..])
            });
            let overflow = self.finish_receives(st, out, ready);
            if overflow {
                fatal = Some("a message was longer than the posted receive buffer".into());
            }
        } else {
            let mut st = self.lock();
            let Some(front) = st.sq.pop_front() else {
                tracing::warn!(wr_id = wc.wr_id, "send completion with nothing outstanding");
                return;
            };
            if front.seq != wc.wr_id {
                tracing::error!(
                    expected = front.seq,
                    got = wc.wr_id,
                    "send completions out of order"
                );
            }
            for h in front.holds {
                if let Hold::Bounce(b) = h {
                    let c = class_of(b.buf.len());
                    if (512usize << c) == b.buf.len() && st.pool[c].len() < POOL_KEEP {
                        st.pool[c].push(b);
                    }
                }
            }
            drop(st);
            if front.signaled || status != WcStatus::Success {
                ready.push_back(WorkCompletion {
                    wr_id: front.wr_id,
                    opcode: front.opcode,
                    status,
                    byte_len: if front.opcode == WcOpcode::RdmaRead && status.is_ok() {
                        front.len
                    } else {
                        0
                    },
                    invalidated_rkey: None,
                    solicited: false,
                    buf: None,
                });
            }
            if let Some(why) = &fatal {
                tracing::debug!(qp_num = self.qp_num, ?front.opcode, why, "send work request failed");
            }
        }
        if let Some(reason) = fatal {
            self.set_reason(DisconnectReason::Transport { reason });
            self.send_disconnect();
        } else if status == WcStatus::WrFlush {
            // The reason comes from the connection manager (peer) or from
            // our own disconnect; nothing more may be posted meanwhile.
            self.lock().closed = true;
        }
    }

    /// Reports matched receives and reposts their slots; true if one did
    /// not fit its buffer.
    fn finish_receives(
        &self,
        st: &mut QpState,
        out: Vec<Matched>,
        ready: &mut VecDeque<WorkCompletion>,
    ) -> bool {
        let mut overflow = false;
        for m in out {
            overflow |= m.fatal;
            ready.push_back(m.wc);
            if let Some(i) = m.repost {
                if st.closed {
                    continue;
                }
                // Grow the slot if the caller posts larger buffers.
                let want = st.slot_size;
                if st.slots[i].buf.buf.len() < want {
                    match OwnBuf::new(&self.pd, want, Access::LOCAL_WRITE) {
                        Ok(b) => st.slots[i].buf = b,
                        Err(e) => tracing::warn!(error = %e, "cannot grow a receive buffer"),
                    }
                }
                if let Err(rc) = post_slot(self.qp, i, &mut st.slots[i]) {
                    tracing::warn!(rc, "cannot repost a receive buffer");
                }
            }
        }
        overflow
    }

    fn bounce(&self, st: &mut QpState, len: usize) -> Result<OwnBuf, PostError> {
        let c = class_of(len);
        if len <= COPY_MAX {
            if let Some(b) = st.pool[c].pop() {
                return Ok(b);
            }
        }
        let size = if len <= COPY_MAX { 512usize << c } else { len };
        OwnBuf::new(&self.pd, size, Access::LOCAL_READ).map_err(|e| PostError::LocalProtection {
            key: 0,
            reason: format!("cannot register a send buffer: {e}"),
        })
    }

    /// Turns a gather list into device elements; what must live until the
    /// completion goes into `holds`.
    fn gather(
        &self,
        st: &mut QpState,
        sges: &[Sge],
        out: &mut Vec<ffi::rs_sge>,
        holds: &mut Vec<Hold>,
    ) -> Result<bool, PostError> {
        match plan(sges, self.max_sge, self.max_inline) {
            GatherPlan::Inline => {
                for s in sges {
                    if let Sge::Bytes(b) = s {
                        if !b.is_empty() {
                            out.push(ffi::rs_sge {
                                addr: b.as_ptr() as u64,
                                length: b.len() as u32,
                                lkey: 0,
                            });
                            holds.push(Hold::Bytes(b.clone()));
                        }
                    }
                }
                Ok(true)
            }
            GatherPlan::Pieces(pieces) => {
                for (s, p) in sges.iter().zip(pieces) {
                    match (p, s) {
                        (Piece::Skip, _) => {}
                        (Piece::Region, Sge::Region(r)) => out.push(ffi::rs_sge {
                            addr: r.addr,
                            length: r.len,
                            lkey: r.lkey,
                        }),
                        (Piece::Copy, Sge::Bytes(b)) => {
                            let mut bb = self.bounce(st, b.len())?;
                            bb.buf[..b.len()].copy_from_slice(b);
                            out.push(ffi::rs_sge {
                                addr: bb.addr(),
                                length: b.len() as u32,
                                lkey: bb.lkey,
                            });
                            holds.push(Hold::Bounce(bb));
                        }
                        (Piece::Register, Sge::Bytes(b)) => {
                            let (t, lkey) = TempReg::new(&self.pd, b.clone()).map_err(|e| {
                                PostError::LocalProtection {
                                    key: 0,
                                    reason: format!("cannot register a send buffer: {e}"),
                                }
                            })?;
                            out.push(ffi::rs_sge {
                                addr: b.as_ptr() as u64,
                                length: b.len() as u32,
                                lkey,
                            });
                            holds.push(Hold::Temp(t));
                        }
                        _ => unreachable!("plan pieces follow the elements"),
                    }
                }
                Ok(false)
            }
            GatherPlan::Coalesce { total } => {
                let mut bb = self.bounce(st, total)?;
                let mut at = 0;
                for s in sges {
                    match s {
                        Sge::Bytes(b) => bb.buf[at..at + b.len()].copy_from_slice(b),
                        Sge::Region(r) => {
                            if r.len > 0 && !self.pd.check(r.lkey, r.addr, r.len) {
                                return Err(PostError::LocalProtection {
                                    key: r.lkey,
                                    reason: "not a live region of this protection domain, or out of its bounds".into(),
                                });
                            }
                            if r.len > 0 {
                                // SAFETY: the range was just checked to lie
                                // in a live registered region (owned by its
                                // Mr, which stays registered while it is in
                                // the table); it is only read.
                                let src = unsafe {
                                    std::slice::from_raw_parts(r.addr as *const u8, r.len as usize)
                                };
                                bb.buf[at..at + src.len()].copy_from_slice(src);
                            }
                        }
                    }
                    at += s.len();
                }
                out.push(ffi::rs_sge {
                    addr: bb.addr(),
                    length: total as u32,
                    lkey: bb.lkey,
                });
                holds.push(Hold::Bounce(bb));
                Ok(false)
            }
        }
    }
}

/// A connected queue pair of an rdma-core device.
pub struct Qp {
    shared: Arc<QpShared>,
}

impl std::fmt::Debug for Qp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Qp")
            .field("qp_num", &self.shared.qp_num)
            .field("caps", &self.caps())
            .finish()
    }
}

impl Qp {
    /// The queue pair number.
    pub fn qp_num(&self) -> u32 {
        self.shared.qp_num
    }

    /// Gather elements per send work request the device granted.
    pub fn max_send_sge(&self) -> u32 {
        self.shared.max_sge
    }

    /// Inline octets per send work request the device granted.
    pub fn max_inline(&self) -> u32 {
        self.shared.max_inline
    }

    /// The device's name.
    pub fn device_name(&self) -> &str {
        &self.shared.dev.info.name
    }

    /// The local and peer addresses.
    pub fn addrs(&self) -> (Option<std::net::SocketAddr>, Option<std::net::SocketAddr>) {
        self.shared.cm.addrs()
    }

    /// The port of the device the connection uses.
    pub fn port(&self) -> u32 {
        // SAFETY: the id is live.
        unsafe { ffi::rs_id_port(self.shared.cm.id) }
    }
}

impl rpcrdma_verbs::QueuePair for Qp {
    fn post_send(&self, wr: SendWr) -> Result<(), PostError> {
        let s = &*self.shared;
        let depth = lock(&s.caps).send_depth;
        if s.lock().sq.len() >= depth as usize {
            // Requests the caller did not signal complete only at the
            // device: reap them (lock order: queue, then queue pair).
            let mut cq = s.send_cq.lock();
            s.send_cq.drain_device(&mut cq);
            let any = !cq.ready.is_empty();
            drop(cq);
            if any {
                s.send_cq.wake();
            }
        }
        let mut st = s.lock();
        if st.closed {
            return Err(PostError::NotConnected { state: "closed" });
        }
        if st.sq.len() >= depth as usize {
            return Err(PostError::QueueFull {
                queue: "send",
                depth,
            });
        }
        let mut sges = Vec::with_capacity(4);
        let mut holds = Vec::new();
        let mut d = ffi::rs_send::default();
        let opcode = wr.wc_opcode();
        let mut len = 0u32;
        match &wr.op {
            SendOp::Send {
                sges: list,
                solicited,
                invalidate,
            } => {
                if s.gather(&mut st, list, &mut sges, &mut holds)? {
                    d.flags |= ffi::RS_INLINE;
                }
                if *solicited {
                    d.flags |= ffi::RS_SOLICITED;
                }
                match invalidate {
                    Some(k) => {
                        d.op = ffi::RS_SEND_INV;
                        d.invalidate = *k;
                    }
                    None => d.op = ffi::RS_SEND,
                }
            }
            SendOp::Write { sges: list, remote } => {
                if s.gather(&mut st, list, &mut sges, &mut holds)? {
                    d.flags |= ffi::RS_INLINE;
                }
                d.op = ffi::RS_WRITE;
                d.remote_addr = remote.addr;
                d.rkey = remote.rkey;
            }
            SendOp::Read { sink, remote } => {
                d.op = ffi::RS_READ;
                d.remote_addr = remote.addr;
                d.rkey = remote.rkey;
                len = sink.len;
                sges.push(ffi::rs_sge {
                    addr: sink.addr,
                    length: sink.len,
                    lkey: sink.lkey,
                });
            }
            SendOp::LocalInvalidate { .. } => {
                return Err(PostError::Invalid {
                    reason: "local invalidation needs memory windows or fast registration, which the rdma-core provider does not use; deregister the region instead",
                })
            }
            _ => {
                return Err(PostError::Invalid {
                    reason: "operation not supported by the rdma-core provider",
                })
            }
        }
        st.seq += 1;
        let seq = st.seq;
        d.wr_id = seq;
        d.num_sge = sges.len() as u32;
        // Every request is signaled at the device, so the provider knows
        // when its buffers are free; unsignaled ones report only errors.
        d.flags |= ffi::RS_SIGNALED;
        // SAFETY: the queue pair is live; `d` and `sges` are valid for the
        // call; the memory they name is registered (or inline) and held in
        // `holds` until the completion.
        let rc = unsafe { ffi::rs_post_send(s.qp, &d, sges.as_ptr()) };
        if rc != 0 {
            tracing::debug!(rc, op = d.op, "ibv_post_send refused a work request");
            return Err(match -rc {
                libc::ENOMEM => PostError::QueueFull {
                    queue: "send",
                    depth,
                },
                libc::EINVAL | libc::EOPNOTSUPP => PostError::Invalid {
                    reason: "the device does not support this operation or its parameters (ibv_post_send: EINVAL)",
                },
                _ => PostError::Invalid {
                    reason: "the device refused the work request (ibv_post_send)",
                },
            });
        }
        st.sq.push_back(SendEntry {
            seq,
            wr_id: wr.wr_id,
            opcode,
            signaled: wr.signaled,
            len,
            holds,
        });
        Ok(())
    }

    fn post_recv(&self, wr: RecvWr) -> Result<(), PostError> {
        let s = &*self.shared;
        // Lock order: completion queue, then queue pair (as when polling).
        let mut cq = s.recv_cq.lock();
        let mut st = s.lock();
        let st = &mut *st;
        if wr.buf.len() > st.slot_size {
            st.slot_size = wr.buf.len();
        }
        let slots = &st.slots;
        let matched = st
            .recv
            .post(wr, |i| slots.get(i).map_or(&[][..], |s| &s.buf.buf[..]))?;
        if let Some(m) = matched {
            let overflow = s.finish_receives(st, vec![m], &mut cq.ready);
            drop(cq);
            s.recv_cq.wake();
            if overflow {
                st.closed = true;
            }
        }
        Ok(())
    }

    fn caps(&self) -> QpCaps {
        *lock(&self.shared.caps)
    }

    async fn disconnect(&self) {
        let s = &*self.shared;
        // Let what is posted go out (the device completes it in order).
        for _ in 0..1000 {
            {
                let mut cq = s.send_cq.lock();
                s.send_cq.drain_device(&mut cq);
            }
            let done = {
                let st = s.lock();
                st.sq.is_empty() || st.closed
            };
            if done {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        s.send_cq.wake();
        s.set_reason(DisconnectReason::Local);
        s.send_disconnect();
        self.flush_receives();
        let mut rx = s.reason.subscribe();
        let _ = rx.wait_for(Option::is_some).await;
    }

    fn abort(&self) {
        self.shared.set_reason(DisconnectReason::Local);
        self.shared.send_disconnect();
        self.flush_receives();
    }

    async fn closed(&self) -> DisconnectReason {
        let mut rx = self.shared.reason.subscribe();
        let r = match rx.wait_for(Option::is_some).await {
            Ok(r) => r.clone().unwrap_or(DisconnectReason::Local),
            Err(_) => DisconnectReason::Local,
        };
        r
    }
}

impl Qp {
    /// Flushes the caller's receives that no message can fill any more.
    fn flush_receives(&self) {
        let s = &*self.shared;
        let mut cq = s.recv_cq.lock();
        let out = s.lock().recv.flush();
        let any = !out.is_empty();
        for m in out {
            cq.ready.push_back(m.wc);
        }
        drop(cq);
        if any {
            s.recv_cq.wake();
        }
    }
}
