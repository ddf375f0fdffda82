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

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};

use rpcrdma_xdr::Payload;
use tokio::sync::{oneshot, watch, Semaphore};
use tokio::time::Instant;
use tracing::Instrument;

use crate::backchannel::{BackchannelError, Backchannels, ClientKey};
use crate::client::{Client, ClientConfig};
use crate::error::TransportError;
use crate::service::{BoxFuture, Dispatch, Services};
use crate::transport::{CallHints, Received, Transport};
use crate::util::{IdMap, IdSet, Tracker};

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
    pub global: Option<Arc<Semaphore>>,
}

impl Default for ServeLimits {
    fn default() -> Self {
        Self {
            per_connection: 64,
            global: None,
        }
    }
}

/// How a call waiting on a connection ends.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// The reply.
    Reply(Payload),
    /// The transport failed the call.
    Failed(TransportError),
    /// The call's deadline passed (the connection's reader sweeps
    /// deadlines, so a waiting call needs no timer of its own).
    TimedOut,
}

/// XIDs in use by outstanding calls; allocation starts at a random value
/// (or at a fixed one, for reproducible runs).
pub(crate) struct XidAlloc {
    next: u32,
    used: IdSet<u32>,
}

/// An XID allocator shared by every client that sends on the same
/// connections.
pub(crate) type SharedXids = Arc<Mutex<XidAlloc>>;

impl XidAlloc {
    pub(crate) fn new(first: Option<u32>) -> Self {
        let next = first.unwrap_or_else(|| {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(0),
            );
            h.finish() as u32
        });
        Self {
            next,
            used: IdSet::default(),
        }
    }

    pub(crate) fn shared(first: Option<u32>) -> SharedXids {
        Arc::new(Mutex::new(Self::new(first)))
    }

    /// A fresh xid, unique among those not yet freed.
    pub(crate) fn alloc(&mut self) -> u32 {
        loop {
            let x = self.next;
            self.next = self.next.wrapping_add(1);
            if self.used.insert(x) {
                return x;
            }
        }
    }

    pub(crate) fn free(&mut self, xid: u32) {
        self.used.remove(&xid);
    }
}

/// Which end of the connection we are (RFC 8167 §2: the client
/// establishes connections; our calls on a server's connection are
/// reverse-direction calls).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// We connected: our calls are forward, received calls are reverse.
    Client,
    /// We accepted: received calls are forward, our calls are reverse.
    Server,
}

/// The operations the client needs from a connection, with the transport
/// type erased.
pub(crate) trait ConnOps: Send + Sync + 'static {
    fn id(&self) -> u64;
    fn peer(&self) -> &str;
    fn peer_addr(&self) -> Option<std::net::SocketAddr>;
    fn side(&self) -> Side;
    /// Client side: we take reverse-direction calls. Server side: the
    /// Upper Layer declared that the client does.
    fn backchannel_ready(&self) -> bool;
    /// Server side: tells the transport the client is ready, marks the
    /// connection ready and records `key`; returns the key it had before.
    fn declare_peer_ready(&self, key: ClientKey) -> Result<Option<ClientKey>, TransportError>;
    fn client_key(&self) -> Option<ClientKey>;
    fn backchannels(&self) -> Option<&Backchannels>;
    /// Starts waiting for the reply to `xid`, until `deadline` at the
    /// latest ([`Outcome::TimedOut`]); `None` if the connection is dead (or
    /// `xid` is already waited for).
    fn register(&self, xid: u32, deadline: Instant) -> Option<oneshot::Receiver<Outcome>>;
    fn unregister(&self, xid: u32);
    fn send_call<'a>(
        &'a self,
        xid: u32,
        message: Payload,
        hints: &'a CallHints,
    ) -> BoxFuture<'a, Result<(), TransportError>>;
    fn release(&self, xid: u32) -> BoxFuture<'_, ()>;
    fn is_alive(&self) -> bool;
    /// Fails every waiting call and closes the transport now.
    fn abort(&self);
    /// Stops reading; finishes calls in progress, then closes.
    fn shutdown(&self);
    fn closed(&self) -> BoxFuture<'_, ()>;
    fn xids(&self) -> &SharedXids;
}

struct State {
    alive: bool,
    pending: IdMap<u32, Waiting>,
    /// The deadline the reader's sweep timer is set to, if any. Never later
    /// than the earliest deadline in `pending`.
    armed: Option<Instant>,
}

/// A call waiting for its reply.
struct Waiting {
    tx: oneshot::Sender<Outcome>,
    deadline: Instant,
}

struct Conn<T: Transport> {
    id: u64,
    peer: String,
    peer_addr: Option<std::net::SocketAddr>,
    transport: T,
    state: Mutex<State>,
    stop: watch::Sender<u8>,
    /// Wakes the reader for control work: a stop (`stop` says which) or a
    /// sweep timer to set earlier (a call registered with an earlier
    /// deadline than the one armed).
    ctl: Ctl,
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
}

/// A flag and the waker of the one task that waits for it (the
/// connection's reader): cheaper to poll on every message than a watch
/// channel or a `Notify`.
#[derive(Default)]
struct Ctl {
    set: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Ctl {
    fn notify(&self) {
        self.set.store(true, Ordering::Release);
        if let Some(w) = lock(&self.waker).take() {
            w.wake();
        }
    }

    /// Resolves once `notify` was called since the last resolution.
    async fn wait(&self) {
        std::future::poll_fn(|cx| {
            if self.set.swap(false, Ordering::AcqRel) {
                return Poll::Ready(());
            }
            {
                let mut w = lock(&self.waker);
                match w.as_ref() {
                    Some(old) if old.will_wake(cx.waker()) => {}
                    _ => *w = Some(cx.waker().clone()),
                }
            }
            if self.set.swap(false, Ordering::AcqRel) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await
    }
}

const STOP_NONE: u8 = 0;
const STOP_GRACEFUL: u8 = 1;
const STOP_ABORT: u8 = 2;

static NEXT_CONN_ID: AtomicU64 = AtomicU64::new(1);

impl<T: Transport> Conn<T> {
    fn fail_pending(&self) {
        let drained: Vec<_> = {
            let mut st = lock(&self.state);
            st.alive = false;
            st.pending.drain().map(|(_, w)| w.tx).collect::<Vec<_>>()
        };
        if !drained.is_empty() {
            tracing::debug!(
                calls = drained.len(),
                "connection lost with calls outstanding"
            );
        }
        drop(drained);
    }

    /// The deadline the sweep timer should be set to.
    fn armed(&self) -> Option<Instant> {
        lock(&self.state).armed
    }

    /// Ends every call whose deadline has passed ([`Outcome::TimedOut`]);
    /// returns the earliest deadline left (the next time to sweep).
    fn sweep(&self, now: Instant) -> Option<Instant> {
        let mut expired = Vec::new();
        let next = {
            let mut st = lock(&self.state);
            let due: Vec<u32> = st
                .pending
                .iter()
                .filter(|(_, w)| w.deadline <= now)
                .map(|(xid, _)| *xid)
                .collect();
            for xid in due {
                if let Some(w) = st.pending.remove(&xid) {
                    expired.push(w.tx);
                }
            }
            let next = st.pending.values().map(|w| w.deadline).min();
            st.armed = next;
            next
        };
        for tx in expired {
            let _ = tx.send(Outcome::TimedOut);
        }
        next
    }

    fn complete(&self, xid: u32, outcome: Outcome) {
        let w = lock(&self.state).pending.remove(&xid);
        match w {
            Some(w) => {
                let _ = w.tx.send(outcome);
            }
            None => tracing::debug!(
                xid = format_args!("{xid:#010x}"),
                "dropping a reply for an xid with no outstanding call"
            ),
        }
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

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
    fn register(&self, xid: u32, deadline: Instant) -> Option<oneshot::Receiver<Outcome>> {
        let mut st = lock(&self.state);
        if !st.alive || st.pending.contains_key(&xid) {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        st.pending.insert(xid, Waiting { tx, deadline });
        // With one timeout for every call, deadlines only grow: the sweep
        // timer already armed for an earlier one covers this call too.
        let rearm = st.armed.is_none_or(|a| deadline < a);
        if rearm {
            st.armed = Some(deadline);
        }
        drop(st);
        if rearm {
            self.ctl.notify();
        }
        Some(rx)
    }
    fn unregister(&self, xid: u32) {
        lock(&self.state).pending.remove(&xid);
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
        lock(&self.state).alive
    }
    fn abort(&self) {
        self.aborted.store(true, Ordering::Release);
        self.fail_pending();
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
}

/// A handle to one open connection (cheap to clone).
#[derive(Clone)]
pub struct Connection {
    pub(crate) ops: Arc<dyn ConnOps>,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("id", &self.ops.id())
            .field("peer", &self.ops.peer())
            .finish()
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
    /// connections are opened by [`Client`] itself.
    ///
    /// Must be called inside a tokio runtime.
    pub fn open<T: Transport>(transport: T, services: Arc<Services>, limits: ServeLimits) -> Self {
        let registry = Backchannels::new(crate::server::DEFAULT_CALLBACK_WAIT, None);
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
        let conn = Arc::new(Conn {
            id,
            peer: peer.clone(),
            peer_addr,
            transport,
            state: Mutex::new(State {
                alive: true,
                pending: IdMap::default(),
                armed: None,
            }),
            stop,
            ctl: Ctl::default(),
            aborted: AtomicBool::new(false),
            done,
            xids: open.xids,
            side: open.side,
            ready: AtomicBool::new(open.ready),
            key: Mutex::new(None),
            registry: open.registry,
        });
        let handle = Connection { ops: conn.clone() };
        let span = tracing::info_span!("rpc_conn", id, peer = %peer);
        tokio::spawn(run(conn, handle.clone(), services, limits, stop_rx).instrument(span));
        handle
    }

    /// A client that calls the peer over this connection (no reconnect:
    /// calls fail with [`crate::RpcError::ConnectionLost`] if it closes).
    /// Its XIDs are unique among all clients of this connection.
    ///
    /// On a server's connection these are reverse-direction calls: they
    /// fail with [`crate::RpcError::BackchannelNotReady`] until
    /// [`Connection::peer_ready_for_callbacks`]. For calls that wait for
    /// the client to reconnect, use [`Backchannels::client`].
    pub fn client(&self, config: ClientConfig) -> Client {
        Client::on_connection(self.ops.clone(), config)
    }

    /// Server side: the Upper Layer learned (for example from an NFSv4.1
    /// `CREATE_SESSION` or `BIND_CONN_TO_SESSION`) that the client takes
    /// reverse-direction calls on this connection (RFC 8167 §6).
    /// Reverse-direction calls work from now on, and the connection is
    /// bound to `key`, the Upper Layer's name for that client, in the
    /// server's [`Backchannels`]: calls made with
    /// [`Backchannels::client`] for `key` use it, and when it is lost they
    /// wait for the next connection declared with the same key.
    ///
    /// Calling it again is harmless; with another key it rebinds the
    /// connection.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use rpcrdma_oncrpc::{mem, ClientConfig, Connection, RpcError, ServeLimits, Services};
    ///
    /// let (_client_end, server_end) = mem::pair(mem::MemConfig::default());
    /// let conn = Connection::open(server_end, Arc::new(Services::new()), ServeLimits::default());
    /// let back = conn.client(ClientConfig::default());
    /// // Not declared yet: refused on our side, nothing is sent.
    /// let e = back.null(0x4000_0000, 1).await.unwrap_err();
    /// assert!(matches!(e, RpcError::BackchannelNotReady { .. }));
    /// conn.peer_ready_for_callbacks(7u64).unwrap();
    /// assert!(conn.backchannel_ready());
    /// # }
    /// ```
    pub fn peer_ready_for_callbacks(
        &self,
        key: impl Into<ClientKey>,
    ) -> Result<(), BackchannelError> {
        if self.ops.side() != Side::Server {
            return Err(BackchannelError::ClientSide);
        }
        if !self.ops.is_alive() {
            return Err(BackchannelError::Closed);
        }
        let key = key.into();
        let old = self
            .ops
            .declare_peer_ready(key.clone())
            .map_err(BackchannelError::Transport)?;
        if let Some(registry) = self.ops.backchannels() {
            if let Some(old) = old.filter(|o| *o != key) {
                registry.unbind(&old, self.ops.id());
            }
            registry.bind(key, self.ops.clone());
        }
        Ok(())
    }

    /// Server side: whether the Upper Layer declared the client ready for
    /// reverse-direction calls ([`Connection::peer_ready_for_callbacks`]).
    /// Client side: whether we take reverse-direction calls on it (our
    /// [`crate::ClientConfig::services`] is not empty).
    pub fn backchannel_ready(&self) -> bool {
        self.ops.backchannel_ready()
    }

    /// Server side: the key given to
    /// [`Connection::peer_ready_for_callbacks`], if any.
    pub fn client_key(&self) -> Option<ClientKey> {
        self.ops.client_key()
    }

    /// Server side: the registry this connection binds its key in (the
    /// server's, for connections served by a [`crate::Server`]). `None` on
    /// a client's connection.
    pub fn backchannels(&self) -> Option<Backchannels> {
        self.ops.backchannels().cloned()
    }

    /// Whether we accepted this connection (the server side, whose calls
    /// are reverse-direction calls).
    pub fn is_server_side(&self) -> bool {
        self.ops.side() == Side::Server
    }

    /// A description of the peer.
    pub fn peer(&self) -> &str {
        self.ops.peer()
    }

    /// The peer's network address, if the transport knows it.
    pub fn peer_addr(&self) -> Option<std::net::SocketAddr> {
        self.ops.peer_addr()
    }

    /// A process-unique id for logs.
    pub fn id(&self) -> u64 {
        self.ops.id()
    }

    /// Whether the connection still accepts calls.
    pub fn is_alive(&self) -> bool {
        self.ops.is_alive()
    }

    /// Graceful close: stop reading, let calls in progress send their
    /// replies, then close the transport. Waits until done.
    pub async fn close(&self) {
        self.ops.shutdown();
        self.ops.closed().await;
    }

    /// Drops the connection at once: outstanding calls see it lost (and
    /// retransmit if their client can reconnect); calls in progress can no
    /// longer reply. Does not wait.
    pub fn abort(&self) {
        self.ops.abort();
    }

    /// Waits until the connection is closed.
    pub async fn closed(&self) {
        self.ops.closed().await;
    }
}

async fn run<T: Transport>(
    conn: Arc<Conn<T>>,
    handle: Connection,
    services: Arc<Services>,
    limits: ServeLimits,
    stop: watch::Receiver<u8>,
) {
    tracing::debug!("connection open");
    let tracker = Tracker::new();
    let local = Arc::new(Semaphore::new(limits.per_connection.max(1)));
    let mut aborted = false;
    // The sweep timer lives across messages (registered once, cheap to
    // poll again); control work (stop, re-arm) arrives through `ctl`.
    let sweep = tokio::time::sleep_until(Instant::now());
    tokio::pin!(sweep);
    let mut armed_at: Option<Instant> = None;
    let stopping = |stop: &watch::Receiver<u8>| *stop.borrow() != STOP_NONE;
    let mut rearm = false;
    macro_rules! rearm {
        () => {{
            let want = conn.armed();
            if want != armed_at {
                if let Some(d) = want {
                    sweep.as_mut().reset(d);
                }
                armed_at = want;
            }
        }};
    }
    'outer: loop {
        if std::mem::take(&mut rearm) {
            rearm!();
        }
        let received = tokio::select! {
            biased;
            () = conn.ctl.wait() => {
                if stopping(&stop) {
                    break;
                }
                rearm!();
                continue;
            }
            () = &mut sweep, if armed_at.is_some() => {
                armed_at = conn.sweep(Instant::now());
                if let Some(d) = armed_at {
                    sweep.as_mut().reset(d);
                }
                continue;
            }
            r = conn.transport.recv() => r,
        };
        let (message, context) = match received {
            Err(e) => {
                tracing::debug!(error = %e, "connection ended");
                aborted = true;
                break;
            }
            Ok(Received::Reply { xid, message }) => {
                conn.complete(xid, Outcome::Reply(message));
                continue;
            }
            Ok(Received::CallFailed { xid, error }) => {
                conn.complete(xid, Outcome::Failed(error));
                continue;
            }
            Ok(Received::Call { message, context }) => (message, context),
        };
        // Bound the calls in progress before reading more.
        let permits = {
            let acquiring = acquire(&local, limits.global.as_ref());
            tokio::pin!(acquiring);
            loop {
                tokio::select! {
                    biased;
                    () = conn.ctl.wait() => {
                        if stopping(&stop) {
                            break 'outer;
                        }
                        // A re-arm request: handled once the permits are
                        // here (this wait is bounded by calls finishing).
                        rearm = true;
                    }
                    p = &mut acquiring => break p,
                }
            }
        };
        let token = tracker.token();
        match services.dispatch(&message, &handle) {
            Dispatch::Drop(e) => {
                tracing::debug!(error = %e, "dropping an undecodable call");
                // No reply will come: the transport gives back what it
                // holds for the call (an RDMA credit of its grant).
                conn.transport.retire_call(context);
                drop((permits, token));
            }
            Dispatch::Reply(reply) => {
                let conn = conn.clone();
                run_or_spawn(Box::pin(
                    async move {
                        if let Err(e) = conn.transport.send_reply(context, reply).await {
                            tracing::debug!(error = %e, "cannot send error reply");
                        }
                        drop((permits, token));
                    }
                    .in_current_span(),
                ));
            }
            Dispatch::Run { xid, future } => {
                let conn = conn.clone();
                let span = tracing::debug_span!("rpc_serve", xid = format_args!("{xid:#010x}"));
                run_or_spawn(Box::pin(
                    async move {
                        let reply = future.await;
                        if conn.aborted.load(Ordering::Acquire) {
                            tracing::debug!("connection aborted; reply dropped");
                        } else if let Err(e) = conn.transport.send_reply(context, reply).await {
                            tracing::debug!(error = %e, "cannot send reply");
                        }
                        drop((permits, token));
                    }
                    .instrument(span),
                ));
            }
        }
    }
    conn.fail_pending();
    // An abort (or a broken transport) closes at once so the peer notices;
    // a graceful stop lets calls in progress send their replies first.
    if aborted || *stop.borrow() == STOP_ABORT {
        conn.transport.close().await;
    } else if tracker.count() > 0 {
        tracing::debug!(in_flight = tracker.count(), "finishing calls in progress");
    }
    tracker.wait().await;
    conn.transport.close().await;
    conn.done.send_replace(true);
    tracing::debug!("connection closed");
}

async fn acquire(
    local: &Arc<Semaphore>,
    global: Option<&Arc<Semaphore>>,
) -> (
    Option<tokio::sync::OwnedSemaphorePermit>,
    Option<tokio::sync::OwnedSemaphorePermit>,
) {
    let a = local.clone().acquire_owned().await.ok();
    let b = match global {
        Some(g) => g.clone().acquire_owned().await.ok(),
        None => None,
    };
    (a, b)
}

/// Runs a call to completion right here if it never has to wait (a NULL
/// call, a quick handler, a reply the transport takes at once), saving a
/// task switch; otherwise hands it to a new task, which polls it again with
/// a real waker.
fn run_or_spawn(mut task: BoxFuture<'static, ()>) {
    static NOOP: std::sync::OnceLock<std::task::Waker> = std::sync::OnceLock::new();
    let waker = NOOP.get_or_init(|| std::task::Waker::from(Arc::new(NoopWake)));
    let mut cx = std::task::Context::from_waker(waker);
    if task.as_mut().poll(&mut cx).is_pending() {
        tokio::spawn(task);
    }
}

struct NoopWake;

impl std::task::Wake for NoopWake {
    fn wake(self: Arc<Self>) {}
}
