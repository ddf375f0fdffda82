//! The provider proper (the `rdma-core` feature): everything that touches
//! libibverbs and librdmacm. This module is the FFI edge: it is the only
//! place allowed `unsafe`, and every unsafe block says why it is sound.
#![allow(unsafe_code)]

mod cm;
mod cq;
mod device;
mod ffi;
mod qp;

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use rpcrdma_verbs::{ConnectError, Device, QpParams, ResourceError};

pub use cm::{Listener, Request};
pub use cq::Cq;
pub use device::{Mr, Pd};
pub use qp::Qp;

use crate::{DeviceConfig, DeviceInfo, OpenError, Options};

pub(crate) fn set_nonblocking(fd: i32) -> std::io::Result<()> {
    // SAFETY: fcntl on a descriptor we own, with integer arguments only.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// An rdma-core RDMA device: an InfiniBand, RoCE or iWARP adapter, or the
/// kernel's soft devices `rxe` and `siw`, through libibverbs and
/// librdmacm. Cheap to clone.
#[derive(Clone)]
pub struct RdmaCore {
    pub(crate) inner: Arc<device::DevInner>,
}

impl std::fmt::Debug for RdmaCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RdmaCore")
            .field("device", &self.inner.info.name)
            .field("transport", &self.inner.info.limits.transport)
            .finish()
    }
}

impl RdmaCore {
    /// Opens the device named in `config` (or the first with an active
    /// port). Errors say what is missing and how to get it.
    pub fn open(config: &DeviceConfig) -> Result<RdmaCore, OpenError> {
        Ok(RdmaCore {
            inner: device::open(config)?,
        })
    }

    /// Every device rdma-core sees.
    pub fn devices() -> Result<Vec<DeviceInfo>, OpenError> {
        device::devices()
    }

    /// What the device is and what it can do.
    pub fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    /// The process's locked-memory limit (`ulimit -l`) in octets, `None`
    /// if unlimited.
    pub fn memlock_limit() -> Option<u64> {
        device::memlock_limit()
    }
}

impl Device for RdmaCore {
    type Pd = Pd;
    type Mr = Mr;
    type Cq = Cq;
    type Qp = Qp;
    type Listener = Listener;
    type Request = Request;
    type Options = Options;

    /// Regions registered with `ibv_reg_mr` cannot be invalidated by a
    /// peer's Send with Invalidate (only memory windows of type 2 and
    /// fast-registered regions can, and this provider uses neither), so it
    /// never advertises remote invalidation.
    fn remote_invalidation(&self) -> bool {
        false
    }

    fn alloc_pd(&self) -> Result<Pd, ResourceError> {
        device::alloc_pd(&self.inner)
    }

    fn create_cq(&self, capacity: usize) -> Result<Cq, ResourceError> {
        cq::create_cq(&self.inner, capacity)
    }

    async fn listen(&self, addr: SocketAddr, options: Options) -> std::io::Result<Listener> {
        cm::listen(self, addr, options).await
    }

    async fn connect(
        &self,
        addr: SocketAddr,
        params: QpParams<'_, Self>,
        private_data: Bytes,
    ) -> Result<(Qp, Bytes), ConnectError> {
        cm::connect(self, addr, params, private_data).await
    }
}
