#![doc = include_str!("../README.md")]
//!
//! # What is here
//!
//! * [`connect`] / [`connect_with`]: a [`RpcClient`] to `HOST:PORT` over
//!   [`Transport::Rdma`] or [`Transport::Tcp`] — an ONC RPC [`Client`]
//!   (it derefs to one) that reconnects and retransmits, and over RDMA the
//!   connection's counters ([`RpcClient::rdma_stats`]).
//! * [`serve`]: a [`ServeBuilder`] that listens on RPC-over-RDMA and TCP
//!   for one [`Server`] (one memory budget over both) and gives a
//!   [`Serving`], which runs until [`Serving::shutdown`].
//! * [`AnyDevice`]: a verbs device whose provider ([`Provider`]) is chosen
//!   at run time, for code generic over [`verbs::Device`] that should be
//!   compiled once: [`AnyDevice::open`] and [`AnyOptions`].
//! * [`block_on`]: runs a future on a new multi-threaded tokio runtime,
//!   for a `main` that has no runtime of its own (with `#[tokio::main]`
//!   the functions above run on the application's runtime).
//! * The layers below, re-exported whole: [`oncrpc`] (messages, client,
//!   server, rpcbind), [`xdr`], [`transport`], [`engine`], [`verbs`],
//!   [`softiwarp`], `rdmacore` (feature `rdma-core`), [`bytes`] and
//!   [`tokio`]; and the names an application uses most at the top level.
//! * `codegen` (feature `codegen`): rpcgen for Rust. A `.x` file with a
//!   `program` definition becomes types, XDR codecs, async client stubs
//!   and a server trait, in a build script:
//!
//! ```toml
//! [dependencies]
//! rpcrdma = "0.1"
//!
//! [build-dependencies]
//! rpcrdma = { version = "0.1", default-features = false, features = ["codegen"] }
//! ```
//!
//! ```no_run
//! # #[cfg(feature = "codegen")]
//! // build.rs
//! fn main() {
//!     rpcrdma::codegen::builder("bulk.x")
//!         .generate_to_out_dir()
//!         .unwrap_or_else(|e| panic!("{e}"));
//! }
//! # #[cfg(not(feature = "codegen"))]
//! # fn main() {}
//! ```
//!
//! and `include!(concat!(env!("OUT_DIR"), "/bulk.rs"));` in the crate. The
//! generated code names only this crate. The workspace's `examples/bulk`
//! is such a program, end to end (README, "Your own program").
//!
//! # Checking that bulk data went by RDMA
//!
//! A DDP-eligible item (`/* @ddp */` in the `.x` file) of a call travels
//! in a Read chunk that the server pulls with RDMA Reads; of a reply, in a
//! Write chunk the server fills with RDMA Writes. The client's counters
//! say which form each call took ([`RpcClient::rdma_stats`]:
//! `calls_chunked`, `replies_chunked`), the server's say what it moved
//! ([`Serving::rdma_stats`]: `rdma_reads`, `rdma_writes`).
//!
//! # Configuration structs
//!
//! Every configuration struct of the stack ([`ClientConfig`],
//! [`ServerConfig`], [`EngineConfig`], [`ListenConfig`],
//! [`ConnectOptions`], ...) has public fields documented with their
//! defaults and a `Default` (or, for [`EngineConfig`], the role
//! constructors [`EngineConfig::client`] and [`EngineConfig::server`]),
//! and none is `#[non_exhaustive]`: write
//! `ClientConfig { timeout, ..Default::default() }`, or assign the fields
//! of a default. Builders are kept for things that are not plain
//! settings ([`ServeBuilder`] opens listeners).
//!
//! # Errors
//!
//! [`Error`] says what failed and what to do: an address that does not
//! resolve, a listener that cannot bind, an RPC that failed
//! ([`RpcError`]: a call larger than [`EngineConfig::max_message`] names
//! the limit; a TCP client pointed at an RPC-over-RDMA port is told to
//! use RDMA).
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "runtime")]
mod client;
#[cfg(feature = "runtime")]
mod device;
#[cfg(feature = "runtime")]
mod error;
#[cfg(feature = "runtime")]
mod provider;
#[cfg(feature = "runtime")]
mod server;

#[cfg(feature = "runtime")]
pub use client::{connect, connect_with, ConnectOptions, RpcClient, Transport};
#[cfg(feature = "runtime")]
pub use device::{AnyCq, AnyDevice, AnyListener, AnyMr, AnyOptions, AnyPd, AnyQp, AnyRequest};
#[cfg(feature = "runtime")]
pub use error::Error;
#[cfg(feature = "runtime")]
pub use provider::Provider;
#[cfg(feature = "runtime")]
pub use server::{serve, ServeBuilder, Serving};

// The layers, whole.
#[cfg(feature = "runtime")]
pub use bytes;
#[cfg(feature = "runtime")]
pub use rpcrdma_engine as engine;
#[cfg(feature = "runtime")]
pub use rpcrdma_oncrpc as oncrpc;
#[cfg(feature = "rdma-core")]
pub use rpcrdma_rdmacore as rdmacore;
#[cfg(feature = "runtime")]
pub use rpcrdma_softiwarp as softiwarp;
#[cfg(feature = "runtime")]
pub use rpcrdma_transport as transport;
#[cfg(feature = "runtime")]
pub use rpcrdma_verbs as verbs;
#[cfg(feature = "runtime")]
pub use rpcrdma_xdr as xdr;
#[cfg(feature = "runtime")]
pub use tokio;

// The names an application uses most.
#[cfg(feature = "runtime")]
pub use rpcrdma_engine::{EngineConfig, Stats};
#[cfg(feature = "runtime")]
pub use rpcrdma_oncrpc::{
    CallHints, CallInfo, Client, ClientConfig, Credential, Marshal, ProcError, RpcError, Server,
    ServerConfig, Services, TransportError, Unmarshal,
};
#[cfg(feature = "runtime")]
pub use rpcrdma_transport::{ListenConfig, RdmaConnector};

/// Runs `future` to completion on a new multi-threaded tokio runtime
/// (I/O and timers enabled) and returns its output: the runtime a `main`
/// without `#[tokio::main]` needs for [`connect`] and [`serve`].
///
/// # Panics
///
/// If the runtime cannot be created (the system refuses threads or an
/// event queue), or when called from within a tokio runtime.
#[cfg(feature = "runtime")]
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("rpcrdma::block_on: cannot start the tokio runtime: {e}"))
        .block_on(future)
}

/// rpcgen for Rust, for build scripts (feature `codegen`): the
/// [`rpcrdma-xdrgen`](rpcrdma_xdrgen) generator, set up so that the code
/// it writes names only this crate.
#[cfg(feature = "codegen")]
pub mod codegen {
    pub use rpcrdma_xdrgen::{check, definitions, generate, Builder, Error, Options};

    /// A [`Builder`] for the `.x` file at `path` (relative to the crate
    /// root in a build script) whose code names only the `rpcrdma` crate
    /// ([`Builder::runtime`]`("::rpcrdma")`): a crate that depends on
    /// `rpcrdma` alone compiles it.
    ///
    /// ```no_run
    /// // build.rs: writes $OUT_DIR/bulk.rs
    /// rpcrdma::codegen::builder("bulk.x")
    ///     .generate_to_out_dir()
    ///     .unwrap_or_else(|e| panic!("{e}"));
    /// ```
    pub fn builder(path: impl AsRef<std::path::Path>) -> Builder {
        Builder::new(path).runtime("::rpcrdma")
    }
}
