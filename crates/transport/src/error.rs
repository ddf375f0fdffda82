//! The transport's error type, carried inside `TransportError::Backend`.

use rpcrdma_engine::{ApiError, CallError, EngineError};
use rpcrdma_verbs::{ConnectError, ResourceError};

/// Why an RPC-over-RDMA operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RdmaError {
    /// One call failed without an RPC reply (e.g. `RDMA_ERROR`).
    #[error("RPC-over-RDMA: {0}")]
    Call(#[from] CallError),
    /// The connection failed.
    #[error("RPC-over-RDMA connection failed: {0}")]
    Connection(#[from] EngineError),
    /// The engine refused a request.
    #[error("RPC-over-RDMA: {0}")]
    Api(#[from] ApiError),
    /// Connection set-up failed.
    #[error("RDMA connection set-up to {addr} failed: {source}")]
    Connect {
        /// Where.
        addr: String,
        /// Why.
        #[source]
        source: ConnectError,
    },
    /// The device could not create a protection domain or completion queue.
    #[error("RDMA device: {0}")]
    Resource(#[from] ResourceError),
    /// The engine configuration is invalid.
    #[error("invalid RPC-over-RDMA configuration: {0}")]
    Config(#[from] rpcrdma_engine::ConfigError),
    /// Binding or accepting on the listening socket failed.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// Where.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}
