//! An `rdma_cm_id` with its own event channel ([`CmId`]), the events it
//! reports ([`Event`]) and the socket addresses librdmacm takes.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::io::unix::AsyncFd;

use super::fd::{register, set_nonblocking, FdRef};
use super::ffi;
use crate::status::cm_event_name;
use rpcrdma_sync::lock;

/// One RDMA-CM event, copied out of librdmacm (and acknowledged).
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub(crate) event: u32,
    pub(crate) status: i32,
    pub(crate) id: *mut ffi::rdma_cm_id,
    pub(crate) private_data: Bytes,
    pub(crate) responder_resources: u16,
    pub(crate) initiator_depth: u16,
}

/// An `rdma_cm_id` with its own event channel.
pub(crate) struct CmId {
    // Declared first: deregistered from tokio before the channel closes.
    afd: Mutex<Option<Arc<AsyncFd<FdRef>>>>,
    pub(crate) id: *mut ffi::rdma_cm_id,
    ch: *mut ffi::rdma_event_channel,
    fd: i32,
}

// SAFETY: librdmacm ids and channels may be used from any thread; the
// channel is read by one task at a time (the owner of the id's events).
unsafe impl Send for CmId {}
// SAFETY: as above.
unsafe impl Sync for CmId {}

impl Drop for CmId {
    fn drop(&mut self) {
        lock(&self.afd).take();
        // SAFETY: the queue pair (if any) was destroyed by its owner, which
        // held this id; every event taken was acknowledged; the id and its
        // channel are destroyed once, in this order.
        unsafe {
            if !self.id.is_null() {
                ffi::rdma_destroy_id(self.id);
            }
            ffi::rdma_destroy_event_channel(self.ch);
        }
    }
}

fn new_channel() -> std::io::Result<(*mut ffi::rdma_event_channel, i32)> {
    // SAFETY: no arguments.
    let ch = unsafe { ffi::rdma_create_event_channel() };
    if ch.is_null() {
        let e = std::io::Error::last_os_error();
        return Err(std::io::Error::new(
            e.kind(),
            format!("cannot open the RDMA connection manager ({e}); is /dev/infiniband/rdma_cm there (module rdma_ucm)?"),
        ));
    }
    // SAFETY: ch is live.
    let fd = unsafe { ffi::rs_cm_channel_fd(ch) };
    set_nonblocking(fd)?;
    Ok((ch, fd))
}

impl CmId {
    /// A new id on a new channel.
    pub(crate) fn new() -> std::io::Result<Arc<CmId>> {
        let (ch, fd) = new_channel()?;
        let mut id = std::ptr::null_mut();
        // SAFETY: ch is live; id is a valid out-pointer.
        let rc =
            unsafe { ffi::rdma_create_id(ch, &mut id, std::ptr::null_mut(), ffi::RDMA_PS_TCP) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: ch has no ids.
            unsafe { ffi::rdma_destroy_event_channel(ch) };
            return Err(e);
        }
        Ok(Arc::new(CmId {
            afd: Mutex::new(None),
            id,
            ch,
            fd,
        }))
    }

    /// Moves an id (of a connection request) to a new channel of its own.
    pub(super) fn migrate(id: *mut ffi::rdma_cm_id) -> std::io::Result<Arc<CmId>> {
        let (ch, fd) = new_channel()?;
        // SAFETY: id is a live child id whose events were acknowledged;
        // ch is live.
        if unsafe { ffi::rdma_migrate_id(id, ch) } != 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: ch has no ids.
            unsafe { ffi::rdma_destroy_event_channel(ch) };
            return Err(e);
        }
        Ok(Arc::new(CmId {
            afd: Mutex::new(None),
            id,
            ch,
            fd,
        }))
    }

    fn afd(&self) -> std::io::Result<Arc<AsyncFd<FdRef>>> {
        let mut g = lock(&self.afd);
        if let Some(a) = &*g {
            return Ok(a.clone());
        }
        let a = Arc::new(register(self.fd)?);
        *g = Some(a.clone());
        Ok(a)
    }

    fn try_event(&self) -> std::io::Result<Event> {
        // SAFETY: rs_event is plain data.
        let mut ev: ffi::rs_event = unsafe { std::mem::zeroed() };
        // SAFETY: the channel is live and non-blocking; ev is valid.
        let rc = unsafe { ffi::rs_get_event(self.ch, &mut ev) };
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(-rc));
        }
        let private_data = if ev.private_data.is_null() || ev.private_data_len == 0 {
            Bytes::new()
        } else {
            // SAFETY: librdmacm's event holds private_data_len octets there
            // until the event is acknowledged (below).
            Bytes::copy_from_slice(unsafe {
                std::slice::from_raw_parts(
                    ev.private_data.cast::<u8>(),
                    ev.private_data_len as usize,
                )
            })
        };
        let out = Event {
            event: ev.event,
            status: ev.status,
            id: ev.id,
            private_data,
            responder_resources: ev.responder_resources as u16,
            initiator_depth: ev.initiator_depth as u16,
        };
        // SAFETY: ev.ev is the event just taken; acknowledged once.
        unsafe { ffi::rdma_ack_cm_event(ev.ev) };
        tracing::trace!(
            event = cm_event_name(out.event),
            status = out.status,
            "RDMA-CM event"
        );
        Ok(out)
    }

    /// The next event of this id's channel.
    pub(crate) async fn next_event(&self) -> std::io::Result<Event> {
        match self.try_event() {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            r => return r,
        }
        let afd = self.afd()?;
        loop {
            let mut guard = afd.readable().await?;
            match guard.try_io(|_| self.try_event()) {
                Ok(r) => return r,
                Err(_would_block) => continue,
            }
        }
    }

    pub(crate) fn addrs(&self) -> (Option<SocketAddr>, Option<SocketAddr>) {
        // SAFETY: sockaddr_storage is plain data.
        let (mut l, mut p): (libc::sockaddr_storage, libc::sockaddr_storage) =
            unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
        // SAFETY: id is live; both out-pointers valid.
        unsafe { ffi::rs_id_addrs(self.id, &mut l, &mut p) };
        (from_storage(&l), from_storage(&p))
    }

    /// The device context the id is bound to (null before resolution).
    pub(crate) fn verbs(&self) -> *mut ffi::ibv_context {
        // SAFETY: id is live.
        unsafe { ffi::rs_id_verbs(self.id) }
    }
}

pub(super) fn from_storage(s: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match s.ss_family as i32 {
        libc::AF_INET => {
            // SAFETY: the family says it is a sockaddr_in.
            let a: &libc::sockaddr_in = unsafe { &*(s as *const _ as *const libc::sockaddr_in) };
            Some(SocketAddr::from((
                u32::from_be(a.sin_addr.s_addr).to_be_bytes(),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says it is a sockaddr_in6.
            let a: &libc::sockaddr_in6 = unsafe { &*(s as *const _ as *const libc::sockaddr_in6) };
            Some(SocketAddr::from((
                a.sin6_addr.s6_addr,
                u16::from_be(a.sin6_port),
            )))
        }
        _ => None,
    }
}

pub(super) fn to_storage(addr: SocketAddr) -> libc::sockaddr_storage {
    // SAFETY: sockaddr_storage is plain data.
    let mut s: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match addr {
        SocketAddr::V4(a) => {
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            let sin = unsafe { &mut *(&mut s as *mut _ as *mut libc::sockaddr_in) };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr.s_addr = u32::from_be_bytes(a.ip().octets()).to_be();
        }
        SocketAddr::V6(a) => {
            // SAFETY: as above for sockaddr_in6.
            let sin6 = unsafe { &mut *(&mut s as *mut _ as *mut libc::sockaddr_in6) };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_addr.s6_addr = a.ip().octets();
            sin6.sin6_scope_id = a.scope_id();
            sin6.sin6_flowinfo = a.flowinfo();
        }
    }
    s
}
