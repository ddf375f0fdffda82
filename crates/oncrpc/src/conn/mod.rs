//! One transport connection, used in both directions.
//!
//! [`Connection::open`] starts a reader task over any [`Transport`]. The
//! task routes replies to the calls waiting for them and runs received
//! calls against the connection's [`Services`], with bounded concurrency.
//! The same connection therefore serves a server (forward calls in) and a
//! client (calls out) at once: a server gets a client for the connection
//! with [`Connection::client`], and a client serves the programs in its
//! [`crate::ClientConfig::services`] on each of its connections.
//!
//! # Readiness (RFC 8167 §6)
//!
//! Reverse-direction calls are explicit at both ends:
//!
//! * a client whose [`crate::ClientConfig::services`] is not empty enables
//!   reverse-direction calls on every new connection before its first call
//!   ([`Transport::enable_backchannel`]);
//! * a server sends none on a connection until its Upper Layer declares,
//!   with [`Connection::peer_ready_for_callbacks`], that the client said
//!   it takes them. Until then a reverse-direction call fails with
//!   [`crate::RpcError::BackchannelNotReady`] and nothing is sent, over
//!   every transport.

//!
//! # Files
//!
//! * `mod.rs`: opening a connection over a transport;
//! * `handle.rs`: the [`Connection`] handle and the operations clients use
//!   ([`ConnOps`]);
//! * `state.rs`: the state of one connection and its [`ConnOps`];
//! * `xid.rs`: XID allocation;
//! * `pending.rs`: the calls waiting for replies, their deadline sweep, and
//!   who reads the transport for them;
//! * `inline.rs`: the inline receive (a waiting call reads the transport
//!   itself);
//! * `reader.rs`: the reader task and its limits ([`ServeLimits`]).

#[cfg(test)]
mod batch_tests;
mod handle;
mod inline;
mod pending;
mod reader;
mod state;
mod xid;

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Waker;

use rpcrdma_sync::Signal;
use tokio::sync::watch;
use tracing::Instrument;

pub use handle::Connection;
pub(crate) use handle::{ConnOps, Side};
pub(crate) use pending::Outcome;
use pending::Pending;
pub use reader::ServeLimits;
use state::{Conn, STOP_NONE};
pub(crate) use xid::{SharedXids, XidAlloc};

use crate::backchannel::{Backchannels, DEFAULT_CALLBACK_WAIT};
use crate::service::Services;
use crate::transport::Transport;

static NEXT_CONN_ID: AtomicU64 = AtomicU64::new(1);

/// How [`Connection::open_with`] sets a connection up.
pub(crate) struct OpenAs {
    pub(crate) side: Side,
    /// Client side: whether reverse-direction calls were enabled.
    pub(crate) ready: bool,
    pub(crate) xids: SharedXids,
    pub(crate) registry: Option<Backchannels>,
}

impl Connection {
    /// Starts serving `transport`, a connection we **accepted** (the server
    /// side): a reader task routes replies to our calls and runs the
    /// peer's calls against `services` within `limits`.
    ///
    /// Our calls on it ([`Connection::client`]) are reverse-direction
    /// calls, refused until [`Connection::peer_ready_for_callbacks`]. The
    /// connection has its own [`Backchannels`] registry;
    /// [`crate::Server::serve`] uses the server's instead. A client's
    /// connections are opened by [`Client`](crate::Client) itself.
    ///
    /// Must be called inside a tokio runtime.
    pub fn open<T: Transport>(transport: T, services: Arc<Services>, limits: ServeLimits) -> Self {
        let registry = Backchannels::new(DEFAULT_CALLBACK_WAIT, None);
        let open = OpenAs {
            side: Side::Server,
            ready: false,
            xids: registry.xids().clone(),
            registry: Some(registry),
        };
        Self::open_with(transport, services, limits, open)
    }

    pub(crate) fn open_with<T: Transport>(
        transport: T,
        services: Arc<Services>,
        limits: ServeLimits,
        open: OpenAs,
    ) -> Self {
        let id = NEXT_CONN_ID.fetch_add(1, Ordering::Relaxed);
        let peer = transport.peer();
        let peer_addr = transport.peer_addr();
        let (stop, stop_rx) = watch::channel(STOP_NONE);
        let (done, _) = watch::channel(false);
        let pending = Arc::new(Pending::new());
        let reader_waker = Waker::from(pending.clone());
        let inline = transport.polls_recv();
        let batches = transport.batches_sends();
        let conn = Arc::new(Conn {
            id,
            peer: peer.clone(),
            peer_addr,
            transport,
            pending,
            inline,
            reader_waker,
            stash: Mutex::new(None),
            stashed: AtomicBool::new(false),
            stop,
            ctl: Signal::new(),
            aborted: AtomicBool::new(false),
            done,
            xids: open.xids,
            side: open.side,
            ready: AtomicBool::new(open.ready),
            key: Mutex::new(None),
            registry: open.registry,
            arena: Mutex::new(bytes::BytesMut::new()),
            batches,
            flush_due: AtomicBool::new(false),
        });
        let handle = Connection { ops: conn.clone() };
        let span = tracing::info_span!("rpc_conn", id, peer = %peer);
        tokio::spawn(reader::run(conn, handle.clone(), services, limits, stop_rx).instrument(span));
        handle
    }
}
