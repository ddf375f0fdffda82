//! The RDMA connection manager: event channels driven from tokio, active
//! connection set-up, listening, accepting and rejecting.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rpcrdma_verbs::{
    ConnectError, ConnectRequest, DeviceFault, InvalidConnect, QpParams, SetupMessage,
};

use super::cm_id::{to_storage, CmId, Event};
use super::device::DevInner;
use super::device::RdmaCore;
use super::ffi;
use super::qp::{self, Qp};
use crate::limits::{check_private_data, negotiate_active, negotiate_passive};
use crate::status::{cm, cm_event_name, connect_failure};
use crate::Options;

/// Checks that the id resolved to the opened device.
fn check_device(dev: &DevInner, cm: &CmId, addr: SocketAddr) -> Result<(), ConnectError> {
    let v = cm.verbs();
    if v.is_null() || v == dev.ctx {
        return Ok(());
    }
    // SAFETY: v is a live context of librdmacm's list.
    let other = unsafe {
        let p = ffi::rs_device_name(v);
        if p.is_null() {
            "?".into()
        } else {
            std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    Err(ConnectError::Device(DeviceFault::OtherDevice {
        addr,
        reached: other,
        opened: dev.info.name.clone(),
    }))
}

/// `rdma_connect` (active) or `rdma_accept`: 0 or a negative errno.
fn cm_call(
    cm: &CmId,
    active: bool,
    private_data: &[u8],
    ird: u16,
    ord: u16,
    opts: &Options,
) -> i32 {
    let conn = ffi::rs_conn {
        private_data: private_data.as_ptr().cast(),
        private_data_len: private_data.len() as u32,
        responder_resources: u32::from(ird),
        initiator_depth: u32::from(ord),
        retry_count: u32::from(opts.retry_count.min(7)),
        rnr_retry_count: u32::from(opts.rnr_retry_count.min(7)),
    };
    // SAFETY: the id is live with its queue pair; conn points at
    // private_data, alive across the call (librdmacm copies it).
    unsafe {
        if active {
            ffi::rs_connect(cm.id, &conn)
        } else {
            ffi::rs_accept(cm.id, &conn)
        }
    }
}

fn io_err(what: &str, e: std::io::Error) -> ConnectError {
    ConnectError::Io(std::io::Error::new(e.kind(), format!("{what}: {e}")))
}

async fn expect(cm: &CmId, dev: &DevInner, want: u32) -> Result<Event, ConnectError> {
    loop {
        let ev = cm
            .next_event()
            .await
            .map_err(|e| io_err("RDMA-CM event", e))?;
        if ev.event == want {
            return Ok(ev);
        }
        if ev.event == cm::ADDR_CHANGE {
            continue;
        }
        return Err(connect_failure(
            dev.transport(),
            ev.event,
            ev.status,
            &ev.private_data,
        ));
    }
}

pub(crate) async fn connect(
    dev: &RdmaCore,
    addr: SocketAddr,
    params: QpParams<'_, RdmaCore>,
    private_data: Bytes,
) -> Result<(Qp, Bytes), ConnectError> {
    let inner = &dev.inner;
    check_private_data(inner.transport(), SetupMessage::Connect, private_data.len())
        .map_err(ConnectError::Invalid)?;
    let opts = params.options.clone();
    let work = async {
        let cm = CmId::new().map_err(|e| io_err("rdma_create_id", e))?;
        let dst = to_storage(addr);
        let ms = opts.resolve_timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: id is live; dst is a valid sockaddr for its family.
        if unsafe {
            ffi::rdma_resolve_addr(
                cm.id,
                std::ptr::null(),
                (&dst as *const libc::sockaddr_storage).cast(),
                ms,
            )
        } != 0
        {
            return Err(connect_failure(
                inner.transport(),
                cm::ADDR_ERROR,
                -ffi::errno(),
                &[],
            ));
        }
        expect(&cm, inner, cm::ADDR_RESOLVED).await?;
        check_device(inner, &cm, addr)?;
        // SAFETY: id is live and its address resolved.
        if unsafe { ffi::rdma_resolve_route(cm.id, ms) } != 0 {
            return Err(connect_failure(
                inner.transport(),
                cm::ROUTE_ERROR,
                -ffi::errno(),
                &[],
            ));
        }
        expect(&cm, inner, cm::ROUTE_RESOLVED).await?;
        let (shared, req) = qp::create(inner, &cm, &params, &opts)?;
        let rc = cm_call(&cm, true, &private_data, req.ird, req.ord, &opts);
        if rc != 0 {
            return Err(ConnectError::Io(std::io::Error::new(
                std::io::Error::from_raw_os_error(-rc).kind(),
                format!("rdma_connect: {}", ffi::err_text(rc)),
            )));
        }
        let ev = expect(&cm, inner, cm::ESTABLISHED).await?;
        let (ird, ord) =
            negotiate_active(req.ird, req.ord, ev.responder_resources, ev.initiator_depth);
        let qp = qp::established(shared, cm, ird, ord);
        Ok((qp, ev.private_data))
    };
    match tokio::time::timeout(opts.connect_timeout, work).await {
        Ok(r) => r,
        Err(_) => Err(ConnectError::Timeout),
    }
}

// ------------------------------------------------------------------ passive

/// A listening RDMA-CM id.
pub struct Listener {
    cm: Arc<CmId>,
    local: SocketAddr,
    dev: RdmaCore,
    lock: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("local", &self.local)
            .finish()
    }
}

pub(crate) async fn listen(
    dev: &RdmaCore,
    addr: SocketAddr,
    options: Options,
) -> std::io::Result<Listener> {
    let cm = CmId::new()?;
    let sa = to_storage(addr);
    // SAFETY: id is live; sa is a valid sockaddr for its family.
    if unsafe { ffi::rdma_bind_addr(cm.id, (&sa as *const libc::sockaddr_storage).cast()) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(std::io::Error::new(
            e.kind(),
            format!("rdma_bind_addr({addr}): {e}; is {} an address of an RDMA-capable interface (`rdma link`)?", addr.ip()),
        ));
    }
    if let Err(ConnectError::Device(fault)) = check_device(&dev.inner, &cm, addr) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AddrNotAvailable,
            fault.to_string(),
        ));
    }
    // SAFETY: id is live and bound.
    if unsafe { ffi::rdma_listen(cm.id, options.backlog) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(std::io::Error::new(
            e.kind(),
            format!("rdma_listen({addr}): {e}"),
        ));
    }
    let local = cm.addrs().0.unwrap_or(addr);
    tracing::debug!(%local, device = %dev.inner.info.name, "RDMA-CM listening");
    Ok(Listener {
        cm,
        local,
        dev: dev.clone(),
        lock: tokio::sync::Mutex::new(()),
    })
}

impl rpcrdma_verbs::Listener for Listener {
    type Device = RdmaCore;

    async fn accept(&self) -> Result<Request, ConnectError> {
        let _g = self.lock.lock().await;
        loop {
            let ev = self
                .cm
                .next_event()
                .await
                .map_err(|e| io_err("RDMA-CM event", e))?;
            match ev.event {
                cm::CONNECT_REQUEST => {}
                cm::DEVICE_REMOVAL => {
                    return Err(connect_failure(
                        self.dev.inner.transport(),
                        ev.event,
                        ev.status,
                        &[],
                    ))
                }
                other => {
                    tracing::debug!(event = cm_event_name(other), "listener event ignored");
                    continue;
                }
            }
            let child = ev.id;
            // SAFETY: child is the live id of the request.
            let v = unsafe { ffi::rs_id_verbs(child) };
            if !v.is_null() && v != self.dev.inner.ctx {
                tracing::warn!(device = %self.dev.inner.info.name, "connection request on another RDMA device; rejected (choose the device with --device)");
                // SAFETY: child is live; rejected and destroyed once.
                unsafe {
                    ffi::rdma_reject(child, std::ptr::null(), 0);
                    ffi::rdma_destroy_id(child);
                }
                continue;
            }
            let cm = match CmId::migrate(child) {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot move a connection request to its own channel; rejected");
                    // SAFETY: as above.
                    unsafe {
                        ffi::rdma_reject(child, std::ptr::null(), 0);
                        ffi::rdma_destroy_id(child);
                    }
                    continue;
                }
            };
            let peer = cm
                .addrs()
                .1
                .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
            return Ok(Request {
                cm: Some(cm),
                private_data: ev.private_data,
                ird_ord: (ev.responder_resources, ev.initiator_depth),
                peer,
                dev: self.dev.clone(),
            });
        }
    }

    fn local_addr(&self) -> SocketAddr {
        self.local
    }
}

/// An incoming connection request.
pub struct Request {
    cm: Option<Arc<CmId>>,
    private_data: Bytes,
    ird_ord: (u16, u16),
    peer: SocketAddr,
    dev: RdmaCore,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("peer", &self.peer)
            .field("private_data", &self.private_data)
            .field("ird_ord", &self.ird_ord)
            .finish()
    }
}

impl Drop for Request {
    fn drop(&mut self) {
        if let Some(cm) = self.cm.take() {
            // SAFETY: the id is live and neither accepted nor rejected.
            unsafe { ffi::rdma_reject(cm.id, std::ptr::null(), 0) };
        }
    }
}

impl ConnectRequest for Request {
    type Device = RdmaCore;

    fn private_data(&self) -> &Bytes {
        &self.private_data
    }

    fn ird_ord(&self) -> Option<(u16, u16)> {
        Some(self.ird_ord)
    }

    fn peer_addr(&self) -> SocketAddr {
        self.peer
    }

    async fn accept(
        mut self,
        params: QpParams<'_, RdmaCore>,
        private_data: Bytes,
    ) -> Result<Qp, ConnectError> {
        let inner = self.dev.inner.clone();
        check_private_data(inner.transport(), SetupMessage::Accept, private_data.len())
            .map_err(ConnectError::Invalid)?;
        let cm = self
            .cm
            .take()
            .ok_or(ConnectError::Invalid(InvalidConnect::AlreadyAnswered))?;
        let opts = params.options.clone();
        let (shared, req) = match qp::create(&inner, &cm, &params, &opts) {
            Ok(x) => x,
            Err(e) => {
                // SAFETY: the id is live and not yet answered.
                unsafe { ffi::rdma_reject(cm.id, std::ptr::null(), 0) };
                return Err(e);
            }
        };
        let (ird, ord) = negotiate_passive(req.ird, req.ord, self.ird_ord.0, self.ird_ord.1);
        let rc = cm_call(&cm, false, &private_data, ird, ord, &opts);
        if rc != 0 {
            return Err(ConnectError::Io(std::io::Error::new(
                std::io::Error::from_raw_os_error(-rc).kind(),
                format!("rdma_accept: {}", ffi::err_text(rc)),
            )));
        }
        let wait = expect(&cm, &inner, cm::ESTABLISHED);
        match tokio::time::timeout(opts.connect_timeout, wait).await {
            Ok(Ok(_)) => Ok(qp::established(shared, cm, ird, ord)),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(ConnectError::Timeout),
        }
    }

    async fn reject(mut self, private_data: Bytes) -> Result<(), ConnectError> {
        check_private_data(
            self.dev.inner.transport(),
            SetupMessage::Reject,
            private_data.len(),
        )
        .map_err(ConnectError::Invalid)?;
        let cm = self
            .cm
            .take()
            .ok_or(ConnectError::Invalid(InvalidConnect::AlreadyAnswered))?;
        let ptr = if private_data.is_empty() {
            std::ptr::null()
        } else {
            private_data.as_ptr().cast()
        };
        // SAFETY: id is live and not yet answered; the data outlives the call.
        if unsafe { ffi::rdma_reject(cm.id, ptr, private_data.len() as u8) } != 0 {
            return Err(io_err("rdma_reject", std::io::Error::last_os_error()));
        }
        // Give the reject time to leave before the id is destroyed.
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok(())
    }
}
