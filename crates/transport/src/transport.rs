//! [`RdmaTransport`]: one RPC-over-RDMA connection as an ONC RPC
//! [`Transport`].
//!
//! The driver is deliberately thin (STYLE-ANCHORS §1, quinn's
//! `ConnectionDriver`): the engine lives behind a mutex; commands (send a
//! call, send a reply, release a call) lock it, feed the engine and post the
//! work requests it emits straight from the caller; the reader
//! ([`Transport::recv`]) drains the completion queue into the engine, posts
//! what that produced, and hands up the engine's events. No task of its
//! own, no channel hop on the data path.
//!
//! # Sends written together
//!
//! A Send posted alone costs software iWARP a system call and the kernel a
//! TCP segment through loopback; a chain of them costs one of each
//! (`QueuePair::post_send_chain`). So the driver keeps some sends back in
//! the engine's queue and posts them together (docs/performance.md,
//! "Small calls by the million"):
//!
//! * replies sent while the reader hands up a batch of received calls (a
//!   call handed up, the reader not yet back): they go out together when
//!   the reader comes back and finds no more events, before it reads on,
//!   or when it stops reading ([`Transport::recv_paused`]);
//! * calls the RPC layer sends with [`Transport::try_send_call_batched`]
//!   (it does so while other calls' replies wait for their tasks, which
//!   send their next calls right after): they go out with the next send
//!   that is not kept back, the next poll of the receive side, or
//!   [`Transport::flush`], which the RPC layer's reader makes when woken
//!   for it, after the tasks already runnable.
//!
//! Nothing else changes: the engine queued the work requests in order and
//! they are posted in that order; only when they reach the socket does.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;

use parking_lot::{Mutex, MutexGuard};
use rpcrdma_engine::{
    ApiError, CallError, CallToken, ConnectionInfo, Engine, EngineError, Event, MessageForm,
    ReplyHints, Stats,
};
use rpcrdma_oncrpc::{CallHints, Received, Transport, TransportError};
use rpcrdma_sync::Signal;
use rpcrdma_verbs::{CompletionQueue, Device, QueuePair, WorkCompletion};
use rpcrdma_xdr::Payload;
use tokio::sync::oneshot;

use crate::error::{Chain, RdmaError};

/// Completions taken from the queue per lock.
const CQ_BATCH: usize = 64;

/// The forms of the last call and reply, for displays such as `rpcrdma demo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastForms {
    /// The XID.
    pub xid: u32,
    /// How the call went.
    pub call: MessageForm,
    /// How the reply came back.
    pub reply: MessageForm,
}

struct Shared<D: Device> {
    engine: Engine<D::Pd>,
    negotiated: Option<(u32, bool)>,
    last_forms: Option<LastForms>,
    /// Diagnostic exchanges waiting for their outcome.
    diag: HashMap<u32, oneshot::Sender<CallError>>,
    next_diag: u32,
    /// Completions taken from the queue (kept to reuse the allocation).
    wcs: Vec<WorkCompletion>,
    /// The engine deadline the reader sleeps until (`None`: no timer).
    armed: Option<Instant>,
    /// Work requests left in the engine's queue to post with later ones
    /// (see "Sends written together").
    held: bool,
    /// The reader handed up a received call and has not polled again:
    /// replies are kept back until it does.
    in_batch: bool,
}

struct Inner<D: Device> {
    state: Mutex<Shared<D>>,
    qp: D::Qp,
    cq: D::Cq,
    /// Wakes the reader ([`Transport::recv`]) when a command left events
    /// for it or an earlier deadline.
    wake: Signal,
    peer: SocketAddr,
    peer_private: Bytes,
    on_negotiated: Option<NegotiatedHook>,
    on_fatal: Option<FatalHook>,
    /// The reader's timer (at the engine's deadline), once one was needed.
    timer: Mutex<Option<(Instant, Pin<Box<tokio::time::Sleep>>)>>,
    /// Completions the provider hands over while the reader waits
    /// ([`CompletionQueue::poll_next_batch`], outside the engine's lock;
    /// kept to reuse the allocation).
    wcs: Mutex<Vec<WorkCompletion>>,
}

/// One RPC-over-RDMA connection, usable by the ONC RPC client and server
/// (`rpcrdma_oncrpc::Server::serve`, `rpcrdma_oncrpc::Client` through
/// [`crate::RdmaConnector`]). Cheap to clone; clones share the connection.
pub struct RdmaTransport<D: Device> {
    inner: Arc<Inner<D>>,
}

impl<D: Device> Clone for RdmaTransport<D> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<D: Device> std::fmt::Debug for RdmaTransport<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RdmaTransport")
            .field("peer", &self.inner.peer)
            .finish()
    }
}

/// Called with the settled version and the error a client fell back on
/// (`None`: no fallback).
pub(crate) type NegotiatedHook = Box<dyn Fn(u32, Option<rpcrdma_engine::ErrCode>) + Send + Sync>;
/// Called with the error that ended the connection and whether the
/// client's Version Two probe was still unanswered then
/// ([`Engine::probe_unanswered`]).
pub(crate) type FatalHook = Box<dyn Fn(&EngineError, bool) + Send + Sync>;

/// Callbacks a connector installs to learn the outcome of negotiation.
pub(crate) struct Hooks {
    pub(crate) on_negotiated: Option<NegotiatedHook>,
    pub(crate) on_fatal: Option<FatalHook>,
}

impl<D: Device> RdmaTransport<D> {
    /// Wraps a connected queue pair and its engine. The engine's initial
    /// receives are posted here, before anything is sent. `peer_private` is
    /// the private data the peer sent at connection set-up (kept for
    /// display).
    pub fn new(
        engine: Engine<D::Pd>,
        qp: D::Qp,
        cq: D::Cq,
        peer: SocketAddr,
        peer_private: Bytes,
    ) -> Self {
        Self::with_hooks(
            engine,
            qp,
            cq,
            peer,
            peer_private,
            Hooks {
                on_negotiated: None,
                on_fatal: None,
            },
        )
    }

    pub(crate) fn with_hooks(
        engine: Engine<D::Pd>,
        qp: D::Qp,
        cq: D::Cq,
        peer: SocketAddr,
        peer_private: Bytes,
        hooks: Hooks,
    ) -> Self {
        let t = Self {
            inner: Arc::new(Inner {
                state: Mutex::new(Shared {
                    engine,
                    negotiated: None,
                    last_forms: None,
                    diag: HashMap::new(),
                    next_diag: 0,
                    wcs: Vec::with_capacity(CQ_BATCH),
                    armed: None,
                    held: false,
                    in_batch: false,
                }),
                qp,
                cq,
                wake: Signal::new(),
                peer,
                peer_private,
                on_negotiated: hooks.on_negotiated,
                on_fatal: hooks.on_fatal,
                timer: Mutex::new(None),
                wcs: Mutex::new(Vec::with_capacity(CQ_BATCH)),
            }),
        };
        let mut s = t.lock();
        t.post_queued(&mut s);
        drop(s);
        t
    }

    /// The engine and its driver's state (`parking_lot`'s lock: taken
    /// several times per message, with no poisoning to check).
    fn lock(&self) -> MutexGuard<'_, Shared<D>> {
        self.inner.state.lock()
    }

    /// Posts everything the engine has queued. A post failure ends the
    /// connection.
    fn post_queued(&self, s: &mut Shared<D>) {
        s.held = false;
        if let Some(first) = s.engine.poll_recv() {
            let qp = &self.inner.qp;
            let r = match s.engine.poll_recv() {
                None => qp.post_recv(first),
                // Several (a batch of messages read at once gives back as
                // many buffers): one call.
                Some(second) => qp.post_recv_chain(
                    [first, second]
                        .into_iter()
                        .chain(std::iter::from_fn(|| s.engine.poll_recv())),
                ),
            };
            if let Err(e) = r {
                s.engine.close(EngineError::Post(e));
                return;
            }
        }
        let Some(first) = s.engine.poll_send() else {
            return;
        };
        let qp = &self.inner.qp;
        let r = match s.engine.poll_send() {
            // One request (a NULL's call or reply): as it is.
            None => qp.post_send(first),
            // Several, as one chain: a reply's RDMA Writes and its Send may
            // go to the wire together (software iWARP writes a small chain
            // with one system call).
            Some(second) => qp.post_send_chain(
                [first, second]
                    .into_iter()
                    .chain(std::iter::from_fn(|| s.engine.poll_send())),
            ),
        };
        if let Err(e) = r {
            s.engine.close(EngineError::Post(e));
        }
    }

    /// Whether the reader must look at the engine again after a command:
    /// the command left events, or a deadline earlier than the one the
    /// reader sleeps until.
    fn reader_must_look(s: &Shared<D>) -> bool {
        s.engine.has_events()
            || s.engine
                .poll_timeout()
                .is_some_and(|d| s.armed.is_none_or(|a| d < a))
    }

    /// What the connection negotiated so far (version, thresholds, private
    /// data, credits).
    pub fn info(&self) -> ConnectionInfo {
        self.lock().engine.info()
    }

    /// The engine's counters.
    pub fn stats(&self) -> Stats {
        *self.lock().engine.stats()
    }

    /// The version and whether a fallback happened, once settled.
    pub fn negotiated(&self) -> Option<(u32, bool)> {
        self.lock().negotiated
    }

    /// How the most recent call and its reply travelled.
    pub fn last_forms(&self) -> Option<LastForms> {
        self.lock().last_forms
    }

    /// Whether the connection has not failed or been closed.
    pub fn is_open(&self) -> bool {
        self.lock().engine.error().is_none()
    }

    /// Whether work requests are kept back in the engine's queue, to be
    /// posted with later ones (the module docs' "Sends written together";
    /// for tests and diagnostics).
    pub fn sends_held(&self) -> bool {
        self.lock().held
    }

    /// The private data the peer sent at connection set-up, as received
    /// (the RFC 8797 message may sit anywhere in it).
    pub fn peer_private_data(&self) -> &Bytes {
        &self.inner.peer_private
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> SocketAddr {
        self.inner.peer
    }

    /// Client: accept reverse-direction calls on this connection from now
    /// on (RFC 8167 §6). Tell the server through the Upper Layer afterwards.
    pub fn enable_backchannel(&self) -> Result<(), RdmaError> {
        let mut s = self.lock();
        s.engine.enable_backchannel()?;
        Ok(())
    }

    /// Server: the client said (through the Upper Layer) that it takes
    /// reverse-direction calls; calls on this connection's client handle
    /// work from now on.
    pub fn peer_backchannel_ready(&self) -> Result<(), RdmaError> {
        let mut s = self.lock();
        s.engine.peer_backchannel_ready(Instant::now())?;
        self.post_queued(&mut s);
        let wake = Self::reader_must_look(&s);
        drop(s);
        if wake {
            self.inner.wake.notify();
        }
        Ok(())
    }

    /// Sends a header with an undefined `rdma_proc` and waits for the
    /// responder's `RDMA_ERROR` (RFC 8166 §5.5.2): a diagnostic round trip
    /// for `rpcrdma demo` and `rpcrdma probe`. Needs the connection's reader
    /// (the RPC layer's) to be running.
    pub async fn error_round_trip(&self) -> Result<CallError, RdmaError> {
        let rx = {
            let mut s = self.lock();
            s.next_diag = s.next_diag.wrapping_add(1);
            let xid = 0xfade_0000 | (s.next_diag & 0xffff);
            s.engine.send_bad_header(xid)?;
            let (tx, rx) = oneshot::channel();
            s.diag.insert(xid, tx);
            self.post_queued(&mut s);
            rx
        };
        self.inner.wake.notify();
        rx.await
            .map_err(|_| RdmaError::Connection(EngineError::Closed))
    }

    /// The reader's step ([`Transport::recv`]): hands up the next event,
    /// feeding the engine with completions and timeouts until there is
    /// one; otherwise registers for what can make one (a completion, a
    /// command's notification, a timer, memory another connection
    /// releases). The end of the connection arrives as completions too: a
    /// provider flushes every outstanding work request (the receives the
    /// engine keeps posted included) when its queue pair closes.
    fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Result<Received<CallToken>, TransportError>> {
        // The engine's lock is held from one look to the next, and taken
        // again only after a wait found something: a message costs two
        // locks, the one that finds nothing and the one that hands it up.
        let mut s = self.lock();
        // Completions a wait below was handed, to feed in first.
        let mut handed: Option<MutexGuard<'_, Vec<WorkCompletion>>> = None;
        loop {
            // (Completions handed over are fed in before anything is
            // handed up: none may be left behind in `Inner::wcs`.)
            if handed.is_none() {
                if let Some(r) = self.next_received(&mut s) {
                    // Replies to this call (and to the others handed up
                    // before the reader finds no more) go out together.
                    s.in_batch = matches!(r, Ok(Received::Call { .. }));
                    return Poll::Ready(r);
                }
                s.in_batch = false;
                if s.held {
                    // What was kept back goes out before reading on.
                    self.post_queued(&mut s);
                }
            }
            let Shared { engine, wcs, .. } = &mut *s;
            let batch = match handed.as_deref_mut() {
                Some(w) => w,
                None => {
                    wcs.clear();
                    self.inner.cq.poll(wcs, CQ_BATCH);
                    wcs
                }
            };
            if !batch.is_empty() {
                let now = Instant::now();
                for wc in batch.drain(..) {
                    engine.handle_completion(now, wc);
                }
                handed = None;
                self.post_queued(&mut s);
                continue;
            }
            handed = None;
            // Timers: only when one is due (extra calls are harmless,
            // but reading the clock on every message is not free).
            let deadline = s.engine.poll_timeout();
            if let Some(d) = deadline {
                let now = Instant::now();
                if now >= d {
                    s.engine.handle_timeout(now);
                    self.post_queued(&mut s);
                    continue;
                }
            }
            s.armed = deadline;
            // A call waiting for memory another connection holds: wake
            // when the shared budget releases some (spec note E21).
            let memory = s
                .engine
                .memory_wait()
                .map(|epoch| (s.engine.memory_budget().clone(), epoch));
            drop(s);
            {
                // The provider may read the socket on this task and hand
                // over what that produced at once (outside the engine's
                // lock: commands of other tasks go on meanwhile).
                let mut w = self.inner.wcs.lock();
                w.clear();
                if self
                    .inner
                    .cq
                    .poll_next_batch(&mut w, CQ_BATCH, cx)
                    .is_ready()
                {
                    handed = Some(w);
                    s = self.lock();
                    continue;
                }
            }
            if self.inner.wake.poll_wait(cx).is_ready() {
                s = self.lock();
                continue;
            }
            if let Some((budget, epoch)) = memory {
                if budget.poll_released(epoch, cx).is_ready() {
                    s = self.lock();
                    s.engine.retry_admission();
                    self.post_queued(&mut s);
                    continue;
                }
            }
            if let Some(d) = deadline {
                let mut timer = self.inner.timer.lock();
                let (at, sleep) =
                    timer.get_or_insert_with(|| (d, Box::pin(tokio::time::sleep_until(d.into()))));
                if *at != d {
                    *at = d;
                    sleep.as_mut().reset(d.into());
                }
                if sleep.as_mut().poll(cx).is_ready() {
                    drop(timer);
                    s = self.lock();
                    continue;
                }
            }
            return Poll::Pending;
        }
    }

    /// Sends a call (the engine queues it until a credit is free); `hold`:
    /// leave it in the engine's queue to post with later ones.
    fn send_call_now(
        &self,
        xid: u32,
        message: Payload,
        hints: &CallHints,
        hold: bool,
    ) -> Result<(), TransportError> {
        let mut s = self.lock();
        let r = s
            .engine
            .send_call(Instant::now(), xid, message, reply_hints(hints));
        if hold {
            s.held = true;
        } else {
            self.post_queued(&mut s);
        }
        // The reader hands up what the command produced (a call that failed
        // at once, a fatal error) and arms new timers; nothing to do
        // otherwise.
        let wake = Self::reader_must_look(&s);
        drop(s);
        if wake {
            self.inner.wake.notify();
        }
        r.map_err(api_error)
    }

    /// Sends a reply (the engine queues what the send queue cannot take).
    /// While the reader hands up a batch of calls, the reply waits for the
    /// replies to the others ("Sends written together").
    fn send_reply_now(&self, context: CallToken, message: Payload) -> Result<(), TransportError> {
        let mut s = self.lock();
        let r = s.engine.send_reply(context, message);
        if s.in_batch {
            s.held = true;
        } else {
            self.post_queued(&mut s);
        }
        let wake = Self::reader_must_look(&s);
        drop(s);
        if wake {
            self.inner.wake.notify();
        }
        r.map_err(api_error)
    }

    /// Releases a call's registrations ([`Engine::release`]; it
    /// deregisters at once). Sends kept back stay so: whoever kept them
    /// back posts them.
    fn release_now(&self, xid: u32) {
        let mut s = self.lock();
        s.engine.release(xid);
        if !s.held {
            self.post_queued(&mut s);
        }
        let wake = Self::reader_must_look(&s);
        drop(s);
        if wake {
            self.inner.wake.notify();
        }
    }

    /// Maps the next engine event to what the RPC layer wants; bookkeeping
    /// events are consumed here.
    fn next_received(
        &self,
        s: &mut Shared<D>,
    ) -> Option<Result<Received<CallToken>, TransportError>> {
        while let Some(ev) = s.engine.poll_event() {
            match ev {
                Event::Call { token, message, .. } => {
                    return Some(Ok(Received::Call {
                        message,
                        context: token,
                    }))
                }
                Event::Reply {
                    xid,
                    message,
                    call_form,
                    reply_form,
                } => {
                    s.last_forms = Some(LastForms {
                        xid,
                        call: call_form,
                        reply: reply_form,
                    });
                    return Some(Ok(Received::Reply { xid, message }));
                }
                Event::CallFailed { xid, error } => {
                    if let Some(tx) = s.diag.remove(&xid) {
                        let _ = tx.send(error);
                        continue;
                    }
                    return Some(Ok(Received::CallFailed {
                        xid,
                        error: TransportError::Backend(Box::new(RdmaError::Call(error))),
                    }));
                }
                Event::Negotiated {
                    version,
                    fell_back,
                    cause,
                } => {
                    tracing::debug!(version, fell_back, ?cause, "RPC-over-RDMA version settled");
                    s.negotiated = Some((version, fell_back));
                    if let Some(f) = &self.inner.on_negotiated {
                        f(version, cause);
                    }
                }
                Event::Fatal(e) => {
                    if let Some(f) = &self.inner.on_fatal {
                        f(&e, s.engine.probe_unanswered());
                    }
                    return Some(Err(fatal_error(&e)));
                }
                _ => {}
            }
        }
        if let Some(e) = s.engine.error() {
            return Some(Err(fatal_error(e)));
        }
        None
    }
}

fn fatal_error(e: &EngineError) -> TransportError {
    match e {
        EngineError::Closed => TransportError::Closed,
        other => TransportError::Backend(Box::new(RdmaError::Connection(other.clone()))),
    }
}

fn api_error(e: ApiError) -> TransportError {
    match e {
        ApiError::Failed(f) => fatal_error(&f),
        // A reverse-direction call before the client is ready (RFC 8167
        // §6): refused on our side; the RPC layer reports it without
        // dropping the connection.
        ApiError::BackchannelNotReady => TransportError::BackchannelNotReady,
        other => TransportError::Backend(Box::new(RdmaError::Api(other))),
    }
}

/// The engine's hints from the Upper Layer Binding's.
pub fn reply_hints(h: &CallHints) -> ReplyHints {
    ReplyHints {
        ddp_results: h.ddp_results().to_vec(),
        max_reply: h.max_reply_size(),
        reduce: !h.is_no_reduce(),
        max_reply_reduced: h.max_reduced_reply_size(),
    }
}

impl<D: Device> Transport for RdmaTransport<D> {
    type CallContext = CallToken;

    async fn send_call(
        &self,
        xid: u32,
        message: Payload,
        hints: &CallHints,
    ) -> Result<(), TransportError> {
        self.send_call_now(xid, message, hints, false)
    }

    /// Never waits: the engine queues a call that has no credit yet.
    fn try_send_call(
        &self,
        xid: u32,
        message: Payload,
        hints: &CallHints,
    ) -> Result<Result<(), TransportError>, Payload> {
        Ok(self.send_call_now(xid, message, hints, false))
    }

    /// Kept in the engine's queue until the next send that is not kept
    /// back, the next poll of the receive side, or [`Transport::flush`].
    fn try_send_call_batched(
        &self,
        xid: u32,
        message: Payload,
        hints: &CallHints,
    ) -> Result<Result<(), TransportError>, Payload> {
        Ok(self.send_call_now(xid, message, hints, true))
    }

    fn batches_sends(&self) -> bool {
        true
    }

    fn flush(&self) {
        let mut s = self.lock();
        if s.held {
            self.post_queued(&mut s);
        }
    }

    async fn send_reply(&self, context: CallToken, message: Payload) -> Result<(), TransportError> {
        self.send_reply_now(context, message)
    }

    /// Never waits: the engine queues what the send queue cannot take.
    fn try_send_reply(
        &self,
        context: CallToken,
        message: Payload,
    ) -> Result<Result<(), TransportError>, (CallToken, Payload)> {
        Ok(self.send_reply_now(context, message))
    }

    async fn recv(&self) -> Result<Received<CallToken>, TransportError> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }

    /// The receive is a poll over shared state (the engine, the completion
    /// queue): any task may make it, and the waker of the latest poll is
    /// the one woken. Waiting calls read their replies themselves.
    fn polls_recv(&self) -> bool {
        true
    }

    fn poll_recv(&self, cx: &mut Context<'_>) -> Poll<Result<Received<CallToken>, TransportError>> {
        self.poll_next(cx)
    }

    /// The reader stops for a while: the provider does the queue pair's
    /// I/O on its own meanwhile.
    fn recv_paused(&self) {
        {
            // Replies kept back for the reader's return go out now.
            let mut s = self.lock();
            s.in_batch = false;
            if s.held {
                self.post_queued(&mut s);
            }
        }
        self.inner.cq.pause();
    }

    /// The RPC layer drops the call (undecodable header): the engine
    /// forgets it and its credit of our grant is free again
    /// ([`Engine::retire_call`]); nothing is sent.
    fn retire_call(&self, context: CallToken) {
        let mut s = self.lock();
        if let Err(e) = s.engine.retire_call(context) {
            tracing::debug!(error = %Chain(&e), "retiring a call");
        }
        self.post_queued(&mut s);
        let wake = Self::reader_must_look(&s);
        drop(s);
        if wake {
            self.inner.wake.notify();
        }
    }

    async fn release(&self, xid: u32) {
        self.release_now(xid);
    }

    /// Never waits.
    fn try_release(&self, xid: u32) -> bool {
        self.release_now(xid);
        true
    }

    async fn close(&self) {
        {
            let mut s = self.lock();
            s.engine.close(EngineError::Closed);
        }
        self.inner.wake.notify();
        self.inner.qp.disconnect().await;
    }

    /// [`RdmaTransport::enable_backchannel`]: the engine takes reverse-direction
    /// calls from now on (the RPC layer calls this on a client's new
    /// connection before its first call when the client serves programs).
    fn enable_backchannel(&self) -> Result<(), TransportError> {
        let mut s = self.lock();
        match s.engine.enable_backchannel() {
            Ok(()) => Ok(()),
            Err(ApiError::BackchannelNotReady) => Err(TransportError::BackchannelUnsupported(
                "the client's EngineConfig::backchannel_credits is 0 or its receive queue has no room for reverse-direction calls",
            )),
            Err(e) => Err(api_error(e)),
        }
    }

    /// [`RdmaTransport::peer_backchannel_ready`]: reverse-direction calls may
    /// be sent from now on (called by the RPC layer's
    /// `Connection::peer_ready_for_callbacks`).
    fn peer_backchannel_ready(&self) -> Result<(), TransportError> {
        let mut s = self.lock();
        let r = s.engine.peer_backchannel_ready(Instant::now());
        self.post_queued(&mut s);
        let wake = Self::reader_must_look(&s);
        drop(s);
        if wake {
            self.inner.wake.notify();
        }
        match r {
            Ok(()) => Ok(()),
            Err(ApiError::BackchannelNotReady) => Err(TransportError::BackchannelUnsupported(
                "the server's EngineConfig::backchannel_credits is 0",
            )),
            Err(e) => Err(api_error(e)),
        }
    }

    fn peer(&self) -> String {
        let v = self
            .lock()
            .engine
            .info()
            .version
            .map_or_else(String::new, |v| format!(" v{v}"));
        format!("rdma{v} {}", self.inner.peer)
    }

    fn peer_addr(&self) -> Option<SocketAddr> {
        Some(self.inner.peer)
    }
}
