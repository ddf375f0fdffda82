//! The facade's error: what failed and what to do.

use std::fmt;
use std::net::SocketAddr;

use rpcrdma_oncrpc::RpcError;
use rpcrdma_transport::RdmaError;
use tokio::net::ToSocketAddrs;

/// Why connecting, serving or a call failed.
///
/// Each cause is told once: a variant with a source returns it from
/// [`std::error::Error::source`] and leaves it out of its own message
/// (print the chain, e.g. `anyhow`'s `{:#}`, to see it), and a
/// transparent variant is its source's message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The address did not resolve.
    #[error("cannot resolve {addr} (give HOST:PORT, e.g. 192.0.2.1:20049)")]
    Resolve {
        /// The address as given.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Connecting or a call failed (the message says why; a TCP client on
    /// an RPC-over-RDMA port and a call above
    /// [`crate::EngineConfig::max_message`] say what to change).
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// An RPC-over-RDMA listener could not be opened.
    #[error(transparent)]
    Rdma(#[from] RdmaError),
    /// A TCP listener could not be opened.
    #[error("cannot listen for ONC RPC over TCP on {addr} (is the port in use?)")]
    ListenTcp {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// [`crate::ServeBuilder::start`] was given no address.
    #[error("nothing to listen on: give ServeBuilder::rdma(ADDR), ServeBuilder::tcp(ADDR) or both before start()")]
    NoListener,
    /// The RDMA device could not be opened (feature `rdma-core`).
    #[cfg(feature = "rdma-core")]
    #[error(transparent)]
    Device(rpcrdma_rdmacore::OpenError),
}

/// The first address `addr` resolves to.
pub(crate) async fn resolve<A>(addr: A) -> Result<SocketAddr, Error>
where
    A: ToSocketAddrs + fmt::Display,
{
    let shown = addr.to_string();
    let mut found = tokio::net::lookup_host(addr)
        .await
        .map_err(|source| Error::Resolve {
            addr: shown.clone(),
            source,
        })?;
    found.next().ok_or_else(|| Error::Resolve {
        addr: shown,
        source: std::io::Error::new(std::io::ErrorKind::NotFound, "no address"),
    })
}
