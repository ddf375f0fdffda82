//! RPC-over-RDMA as an ONC RPC transport.
//!
//! This crate is the thin async layer of DESIGN.md: it runs the sans-IO
//! [`rpcrdma_engine::Engine`] over any [`rpcrdma_verbs::Device`] (the
//! software iWARP provider by default) and plugs it into the ONC RPC client
//! and server of `rpcrdma-oncrpc` as a [`rpcrdma_oncrpc::Transport`]:
//!
//! * [`RdmaConnector`]: a client's connector (RFC 8797 private data, the
//!   Version Two probe and its memory of Version One-only responders).
//! * [`serve_rdma`]: a listener that accepts connections and serves each
//!   with a `rpcrdma_oncrpc::Server`, until that server's `shutdown` (or
//!   [`RdmaService::stop`]).
//! * [`RdmaTransport`]: one connection; exposes what was negotiated
//!   ([`RdmaTransport::info`]) and counters ([`RdmaTransport::stats`]).
//!
//! # Example
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use rpcrdma_oncrpc::{Client, ClientConfig, Server, ServerConfig, Services};
//! use rpcrdma_softiwarp::SoftIwarp;
//! use rpcrdma_transport::{serve_rdma, ListenConfig, RdmaConnector};
//!
//! let mut services = Services::new();
//! rpcrdma_demoprog::serve_demo(&mut services);
//! let server = Server::new(services, ServerConfig::default());
//! let dev = SoftIwarp::new();
//! let svc = serve_rdma(&server, dev.clone(), "127.0.0.1:0".parse()?, ListenConfig::default()).await?;
//!
//! // The client defaults (`RdmaConnector::new` takes an `EngineConfig`).
//! let connector = RdmaConnector::with_defaults(dev, svc.local_addr());
//! let client = Client::connect(connector, ClientConfig::default()).await?;
//! let demo = rpcrdma_demoprog::DemoClient::new(client);
//! demo.null().await?;
//! let data = demo.read_verified(7, 1 << 20).await?; // arrives in a Write chunk
//! assert_eq!(data.len(), 1 << 20);
//! server.shutdown().await;
//! # Ok(()) }
//! ```

mod connector;
mod error;
mod listener;
mod transport;

pub use connector::{ConnectorHandle, RdmaConnector, VersionMemory};
pub use error::RdmaError;
pub use listener::{serve_rdma, ListenConfig, ListenerStats, RdmaService, DEFAULT_MAX_CONNECTIONS};
pub use transport::{reply_hints, LastForms, RdmaTransport};
