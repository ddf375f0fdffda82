//! A software iWARP RDMA provider: MPA/DDP/RDMAP over plain TCP, in user
//! space, implementing the [`rpcrdma_verbs`] interface. It needs no RDMA
//! hardware and no kernel module, and talks to the Linux kernel's Soft-iWARP
//! driver (`siw`).
//!
//! This crate is the thin tokio driver around the sans-IO protocol core
//! [`rpcrdma_iwarp::conn::Connection`]:
//!
//! * [`SoftIwarp`] is the [`rpcrdma_verbs::Device`]: protection domains,
//!   completion queues, `listen` and `connect`.
//! * Each connected [`Qp`] has one I/O task on the tokio runtime it was
//!   created on. Posting a Send or RDMA Write encodes it and writes it to the
//!   socket from the caller (vectored, payload straight from registered
//!   memory); the task reads the socket, placing tagged payload and Send
//!   payload straight into registered memory and posted receive buffers.
//! * Keys of memory regions come from an OS-seeded cryptographic generator.
//!
//! # Example
//!
//! ```
//! use bytes::{Bytes, BytesMut};
//! use rpcrdma_softiwarp::{Options, SoftIwarp};
//! use rpcrdma_verbs::*;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dev = SoftIwarp::new();
//! let listener = dev.listen("127.0.0.1:0".parse()?, Options::default()).await?;
//! let addr = listener.local_addr();
//! let (pd, cq) = (dev.alloc_pd()?, dev.create_cq(64)?);
//! let params = || QpParams::new(&pd, &cq, Options::default());
//!
//! let server = async {
//!     let req = listener.accept().await?;
//!     assert_eq!(&req.private_data()[..], b"hello");
//!     let qp = req.accept(params(), Bytes::from_static(b"welcome")).await?;
//!     qp.post_recv(RecvWr { wr_id: 1, buf: BytesMut::zeroed(64) })?;
//!     Ok::<_, Box<dyn std::error::Error>>(qp)
//! };
//! let client = dev.connect(addr, params(), Bytes::from_static(b"hello"));
//! let (server_qp, client) = tokio::join!(server, client);
//! let (server_qp, (client_qp, pd_back)) = (server_qp?, client?);
//! assert_eq!(&pd_back[..], b"welcome");
//!
//! client_qp.post_send(SendWr::send(2, vec![Sge::Bytes(Bytes::from_static(b"ping"))]))?;
//! let mut wcs = Vec::new();
//! while wcs.len() < 2 {
//!     cq.wait().await;
//!     cq.poll(&mut wcs, 16);
//! }
//! let recv = wcs.iter().find(|w| w.opcode == WcOpcode::Recv).unwrap();
//! assert_eq!(recv.data(), Some(&b"ping"[..]));
//! client_qp.disconnect().await;
//! drop(server_qp);
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

mod cm;
mod cq;
mod mem;
mod qp;
mod sock;

use std::net::SocketAddr;

use bytes::Bytes;
use rpcrdma_verbs::{ConnectError, Device, QpParams, ResourceError};

pub use cm::{Options, Request, SoftListener, DEFAULT_FIRST_FPDU_DELAY};
pub use cq::Cq;
pub use mem::{Mr, Pd};
pub use qp::Qp;
pub use rpcrdma_iwarp::conn::{P2pMode, Rtr};

/// The software iWARP device. Cheap to clone.
#[derive(Debug, Clone)]
pub struct SoftIwarp {
    keys: mem::Keys,
}

impl SoftIwarp {
    /// A device whose memory keys come from an OS-seeded cryptographic
    /// generator.
    pub fn new() -> Self {
        SoftIwarp {
            keys: mem::Keys::from_os(),
        }
    }
}

impl Default for SoftIwarp {
    fn default() -> Self {
        Self::new()
    }
}

impl Device for SoftIwarp {
    type Pd = Pd;
    type Mr = Mr;
    type Cq = Cq;
    type Qp = Qp;
    type Listener = SoftListener;
    type Request = Request;
    type Options = Options;

    fn alloc_pd(&self) -> Result<Pd, ResourceError> {
        Ok(Pd::new(self.keys.clone()))
    }

    fn create_cq(&self, capacity: usize) -> Result<Cq, ResourceError> {
        Ok(Cq::new(capacity))
    }

    async fn listen(&self, addr: SocketAddr, options: Options) -> std::io::Result<SoftListener> {
        cm::listen(addr, options).await
    }

    async fn connect(
        &self,
        addr: SocketAddr,
        params: QpParams<'_, Self>,
        private_data: Bytes,
    ) -> Result<(Qp, Bytes), ConnectError> {
        cm::connect(addr, params, private_data).await
    }
}
