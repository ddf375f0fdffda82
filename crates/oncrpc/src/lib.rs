//! ONC RPC (RFC 5531) for the RPC-over-RDMA stack: messages, record
//! marking, an async client and server that run unchanged over TCP and over
//! RPC-over-RDMA, rpcbind, and a transport interface that lets a program's
//! Upper Layer Binding steer Direct Data Placement.
//!
//! # Layers
//!
//! * **Sans-IO cores** — [`msg`] (call and reply headers, every
//!   `accept_stat`, `reject_stat` and `auth_stat`), [`auth`] (`AUTH_NONE`,
//!   `AUTH_SYS` with its limits, other flavors passed through) and
//!   [`record`] (RFC 5531 §11 record marking with a bounded deframer) are
//!   pure functions over bytes: no sockets, clocks or tasks. The dispatch
//!   step of [`Services`] is pure too.
//! * **The transport interface** — [`Transport`] carries whole RPC
//!   messages as [`rpcrdma_xdr::Payload`]s both ways on one connection,
//!   with per-call [`CallHints`] from the Upper Layer Binding (Write chunks,
//!   maximum reply size, reduction off), a per-call context for replies,
//!   and an awaited `release` hook. [`tcp::TcpTransport`] implements it with
//!   record marking. With the feature `test-transport`, `mem` is an
//!   in-memory pair for tests that moves DDP items out of band as the RDMA
//!   transport does (a test double: the rules of RPC-over-RDMA live in
//!   `rpcrdma-engine`).
//! * **Thin tokio drivers** — [`Connection`] (one reader task per
//!   transport, routing replies to calls and calls to handlers), [`Client`]
//!   (XIDs, timeouts, cancellation, reconnect and retransmission with the
//!   same XID) and [`Server`] (listeners, limits, graceful shutdown).
//! * **Memory** — [`budget`]: a server's TCP connections charge what their
//!   clients make them hold (records, calls in progress, unwritten
//!   replies) to one server-wide [`rpcrdma_sync::MemoryAccount`], the
//!   same one its RPC-over-RDMA listener charges, and stop reading from a
//!   client that is over it.
//! * **The reverse direction** (RFC 8167) — a client serves
//!   [`ClientConfig::services`] on its connections and enables them before
//!   its first call; a server calls back once its Upper Layer declares the
//!   client ready ([`Connection::peer_ready_for_callbacks`], §6), on one
//!   connection ([`Connection::client`]) or through [`Backchannels`], whose
//!   calls wait (bounded) for the client to reconnect and are sent again
//!   with the same XID (§5.4).
//! * **rpcbind** — [`rpcbind`]: PMAP v2 and RPCBIND v3/v4 client, and
//!   registration of a server's programs under any netid.
//!
//! # Example
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use rpcrdma_oncrpc::{CallHints, Client, ClientConfig, ProcError, Server, ServerConfig, Services};
//! use rpcrdma_oncrpc::tcp::TcpConnector;
//!
//! const PROG: u32 = 0x2000_0001;
//! let mut services = Services::new();
//! services.program(PROG, 1).null().proc(1, |_info, x: u32| async move {
//!     Ok::<_, ProcError>(x * 2)
//! });
//! let server = Server::new(services, ServerConfig::default());
//! let addr = server.serve_tcp("127.0.0.1:0").await?;
//!
//! let client = Client::connect(TcpConnector::new(addr), ClientConfig::default()).await?;
//! client.null(PROG, 1).await?;
//! let doubled: u32 = client.call(PROG, 1, 1, &21u32, &CallHints::new()).await?;
//! assert_eq!(doubled, 42);
//! server.shutdown().await;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

pub mod auth;
mod backchannel;
pub mod budget;
mod client;
mod client_key;
mod codec;
mod conn;
pub mod drc;
mod error;
mod limit;
#[cfg(feature = "test-transport")]
pub mod mem;
pub mod msg;
pub mod record;
mod record_pool;
pub mod rpcbind;
mod server;
mod service;
pub mod tcp;
mod transport;
mod util;

pub use auth::{AuthSysParams, Credential};
pub use backchannel::{BackchannelError, Backchannels, DEFAULT_CALLBACK_WAIT};
pub use client::{decode_reply, Client, ClientConfig};
pub use client_key::ClientKey;
pub use codec::{Marshal, Unmarshal};
pub use conn::{Connection, ServeLimits};
pub use drc::{ReplyCache, ReplyCacheConfig};
pub use error::{AuthSysError, MessageError, RecordError, RpcError, TransportError};
pub use limit::{Limit, OwnedSlot, Slot};
pub use server::{Server, ServerConfig, DEFAULT_STALL_TIMEOUT};
pub use service::{
    encode_reply, encode_success, AuthPolicy, CallInfo, CallObserver, CallOutcome, Dispatch,
    ProcError, Services, Version,
};
pub use transport::{CallHints, Connector, Received, Transport};
pub use util::BoxFuture;
