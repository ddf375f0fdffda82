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
//! * `handle.rs`: the [`Connection`] handle and the operations clients use
//!   ([`ConnOps`]);
//! * `mod.rs`: opening a connection over a transport (the [`ConnOps`] of
//!   a [`Transport`]);
//! * `xid.rs`: XID allocation;
//! * `pending.rs`: the calls waiting for replies, their deadline sweep, and
//!   who reads the transport for them;
//! * `inline.rs`: the inline receive (a waiting call reads the transport
//!   itself);
//! * `reader.rs`: the reader task.

#[cfg(test)]
mod batch_tests;
mod handle;
mod inline;
mod pending;
mod reader;
mod xid;

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Waker;

use crate::util::lock;
use rpcrdma_sync::Signal;
use rpcrdma_xdr::Payload;
use std::task::{Context, Poll};

use tokio::sync::watch;
use tokio::time::Instant;
use tracing::Instrument;

pub use handle::Connection;
pub(crate) use handle::{ConnOps, Side};
pub(crate) use pending::Outcome;
use pending::Pending;
pub(crate) use xid::{SharedXids, XidAlloc};

use crate::backchannel::{Backchannels, DEFAULT_CALLBACK_WAIT};
use crate::client_key::ClientKey;
use crate::error::TransportError;
use crate::service::Services;
use crate::transport::{CallHints, Transport};
use crate::util::BoxFuture;

/// Limits on the calls a connection runs at once.
#[derive(Debug, Clone)]
pub struct ServeLimits {
    /// Calls from the peer run concurrently on this connection (default
    /// 64). When reached, the connection stops reading until one finishes
    /// — replies included, so a handler that waits for the reply to a
    /// reverse-direction call on its own connection can stall until its
    /// timeout if the peer fills every slot meanwhile. (Over RDMA the
    /// peer's credits bound its calls below this limit.)
    pub per_connection: usize,
    /// A semaphore shared by several connections (a server's global
    /// limit), if any.
    pub global: Option<Arc<crate::Limit>>,
}

impl Default for ServeLimits {
    fn default() -> Self {
        Self {
            per_connection: 64,
            global: None,
        }
    }
}

struct Conn<T: Transport> {
    id: u64,
    peer: String,
    peer_addr: Option<std::net::SocketAddr>,
    transport: T,
    pending: Arc<Pending>,
    /// Whether the transport's receive is a poll any task may make
    /// (`Transport::polls_recv`): then waiting calls read it themselves
    /// (`inline.rs`).
    inline: bool,
    /// The waker of every poll of such a transport (`pending`'s
    /// [`std::task::Wake`]).
    reader_waker: Waker,
    /// What a caller reading the transport left for the reader task.
    stash: Mutex<Option<inline::Next<T::CallContext>>>,
    stashed: AtomicBool,
    stop: watch::Sender<u8>,
    /// Wakes the reader for control work: a stop (`stop` says which) or a
    /// sweep timer to set earlier (a call registered with an earlier
    /// deadline than the one armed).
    ctl: Signal,
    /// Set by an abort: calls in progress must not reply any more.
    aborted: AtomicBool,
    done: watch::Sender<bool>,
    xids: SharedXids,
    side: Side,
    /// See [`ConnOps::backchannel_ready`].
    ready: AtomicBool,
    /// Server side: the Upper Layer's name for the client, once declared.
    key: Mutex<Option<ClientKey>>,
    /// Server side: where the connection is bound to its key.
    registry: Option<Backchannels>,
    /// See [`ConnOps::arena`].
    arena: Mutex<bytes::BytesMut>,
    /// Whether the transport keeps sends back to write several at once
    /// ([`Transport::batches_sends`]).
    batches: bool,
    /// A call was kept back ([`Transport::try_send_call_batched`]) and the
    /// reader was asked to [`Transport::flush`] (through `ctl`).
    flush_due: AtomicBool,
}

const STOP_NONE: u8 = 0;
const STOP_GRACEFUL: u8 = 1;
const STOP_ABORT: u8 = 2;

static NEXT_CONN_ID: AtomicU64 = AtomicU64::new(1);

impl<T: Transport> ConnOps for Conn<T> {
    fn id(&self) -> u64 {
        self.id
    }
    fn peer(&self) -> &str {
        &self.peer
    }
    fn peer_addr(&self) -> Option<std::net::SocketAddr> {
        self.peer_addr
    }
    fn side(&self) -> Side {
        self.side
    }
    fn backchannel_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
    fn declare_peer_ready(&self, key: ClientKey) -> Result<Option<ClientKey>, TransportError> {
        self.transport.peer_backchannel_ready()?;
        let old = lock(&self.key).replace(key);
        self.ready.store(true, Ordering::Release);
        Ok(old)
    }
    fn client_key(&self) -> Option<ClientKey> {
        lock(&self.key).clone()
    }
    fn backchannels(&self) -> Option<&Backchannels> {
        self.registry.as_ref()
    }
    fn register(&self, xid: u32, deadline: Instant) -> bool {
        match self.pending.register(xid, deadline) {
            None => false,
            Some(rearm) => {
                if rearm {
                    self.ctl.notify();
                }
                true
            }
        }
    }
    fn poll_outcome(&self, xid: u32, cx: &mut Context<'_>) -> Poll<Option<Outcome>> {
        self.poll_outcome_inline(xid, cx)
    }
    fn unregister(&self, xid: u32) {
        self.pending.unregister(xid);
    }
    fn try_send_call(
        &self,
        xid: u32,
        message: Payload,
        hints: &CallHints,
    ) -> Result<Result<(), TransportError>, Payload> {
        if self.batches && self.pending.others_ready() {
            // Other calls' tasks are about to run and send their next
            // calls: this one may go with them. The reader flushes once
            // the tasks already runnable have run (it is woken after
            // them), whatever they do.
            let r = self.transport.try_send_call_batched(xid, message, hints);
            if !self.flush_due.load(Ordering::Acquire)
                && !self.flush_due.swap(true, Ordering::AcqRel)
            {
                self.ctl.notify();
            }
            return r;
        }
        self.transport.try_send_call(xid, message, hints)
    }
    fn try_release(&self, xid: u32) -> bool {
        self.transport.try_release(xid)
    }
    fn send_call<'a>(
        &'a self,
        xid: u32,
        message: Payload,
        hints: &'a CallHints,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(self.transport.send_call(xid, message, hints))
    }
    fn release(&self, xid: u32) -> BoxFuture<'_, ()> {
        Box::pin(self.transport.release(xid))
    }
    fn is_alive(&self) -> bool {
        self.pending.is_alive()
    }
    fn abort(&self) {
        self.aborted.store(true, Ordering::Release);
        self.pending.fail_all();
        self.stop.send_replace(STOP_ABORT);
        self.ctl.notify();
    }
    fn shutdown(&self) {
        self.stop.send_if_modified(|s| {
            if *s == STOP_NONE {
                *s = STOP_GRACEFUL;
                true
            } else {
                false
            }
        });
        self.ctl.notify();
    }
    fn closed(&self) -> BoxFuture<'_, ()> {
        let mut rx = self.done.subscribe();
        Box::pin(async move {
            let _ = rx.wait_for(|d| *d).await;
        })
    }
    fn xids(&self) -> &SharedXids {
        &self.xids
    }
    fn arena(&self) -> &Mutex<bytes::BytesMut> {
        &self.arena
    }
}

impl<T: Transport> Conn<T> {
    /// The reader's part of [`Transport::try_send_call_batched`]: puts on
    /// the wire what the transport kept back, when asked to.
    fn flush_if_due(&self) {
        if self.flush_due.load(Ordering::Acquire) && self.flush_due.swap(false, Ordering::AcqRel) {
            self.transport.flush();
        }
    }
}

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
