//! The provider proper (the `rdma-core` feature): everything that touches
//! libibverbs and librdmacm. This module is the FFI edge: it is the only
//! place allowed `unsafe`, and every unsafe block says why it is sound.
#![allow(unsafe_code)]

mod cm;
mod cm_id;
mod cq;
mod device;
mod fd;
mod ffi;
mod qp;

use std::net::SocketAddr;

use bytes::Bytes;
use rpcrdma_verbs::{ConnectError, Device, QpParams, ResourceError};

pub use cm::{Listener, Request};
pub use cq::Cq;
pub use device::{Mr, Pd, RdmaCore};
pub use qp::Qp;

use crate::Options;

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
