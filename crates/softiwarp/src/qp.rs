//! Queue pairs and the per-connection I/O task.
//!
//! The connection state machine lives behind a mutex shared by the
//! application's calls and one I/O task. Posting a Send or Write encodes it
//! and writes it to the socket right away from the caller's thread (no
//! task hop); the I/O task only waits for the socket: it reads when the
//! socket is readable and no completion-queue waiter is reading it itself
//! (straight into registered memory or posted receive buffers, see
//! [`rpcrdma_iwarp::conn::Connection::recv_buffers`]), and finishes writes
//! the socket could not take at once. Its read waker sits in the socket's
//! single poll slot, which a completion-queue waiter mutes while it reads,
//! so the I/O task is not woken once per message.

use std::io::{self, IoSlice, IoSliceMut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use rpcrdma_iwarp::conn::{ConnError, Connection, Event, TransportError, MAX_RECV_SLICES};
use rpcrdma_sync::{Latch, Signal};
use rpcrdma_verbs::{
    DisconnectReason, PostError, QpCaps, QueuePair, RecvWr, SendOp, SendWr, Sge, WcOpcode,
    WorkCompletion,
};
use std::task::{Context, Poll, Waker};
use tokio::net::TcpStream;

use crate::cq::Cq;
use crate::mem::PdInner;
use crate::sock::{shutdown, sock_read, sock_read_vectored, sock_write};

/// Reads per wake-up before the I/O task yields (fairness between
/// connections on one runtime thread).
const READ_BUDGET: usize = 32;
/// Slices per vectored write.
const MAX_IOVECS: usize = 64;
/// Slices of a write with little queued (a message of a few FPDUs).
const FEW_IOVECS: usize = 8;

#[derive(Debug)]
pub(crate) struct QpState {
    pub(crate) conn: Connection,
    /// Completions sorted by queue under the lock, pushed to the CQs after
    /// (only when the two queues differ).
    send_wcs: Vec<WorkCompletion>,
    recv_wcs: Vec<WorkCompletion>,
    reason: Option<DisconnectReason>,
    shut: bool,
}

#[derive(Debug)]
pub(crate) struct QpInner {
    state: Mutex<QpState>,
    pub(crate) pd: Arc<PdInner>,
    stream: TcpStream,
    send_cq: Cq,
    recv_cq: Cq,
    /// Whether `send_cq` and `recv_cq` are the same queue.
    one_cq: bool,
    /// Wakes the I/O task.
    wake: Signal,
    /// Why the connection ended, once it has, and the tasks waiting to
    /// learn it (cheaper than a watch channel for the per-message
    /// `closed()` polls of a reader's `select!`).
    closed: Latch<DisconnectReason>,
    caps: QpCaps,
    /// Tasks reading the socket from a completion-queue wait; while there
    /// are any, the I/O task does not wait for readability itself.
    pub(crate) consumers: AtomicUsize,
    /// Whether incoming traffic is being processed (see [`QpInner::start_io`]).
    started: std::sync::atomic::AtomicBool,
    /// Tells the I/O task that the consumer started the queue pair.
    start_signal: Signal,
}

/// How long a new queue pair waits for its consumer's first work request
/// or completion-queue wait before it processes incoming traffic anyway
/// (a purely passive consumer that only exposes memory).
const START_GRACE: std::time::Duration = std::time::Duration::from_millis(100);

/// A connected queue pair. Dropping it closes the connection gracefully.
#[derive(Debug)]
pub struct Qp {
    inner: Arc<QpInner>,
}

impl QpInner {
    fn lock(&self) -> MutexGuard<'_, QpState> {
        self.state.lock()
    }

    /// Starts processing incoming traffic, once. A new queue pair holds
    /// what arrives (it stays in the socket, or in the MPA set-up's
    /// leftovers) until its consumer first posts a receive or a send or
    /// waits on its completion queue (or [`START_GRACE`] passes): verbs lets
    /// a consumer post its receives before the peer's first Send is
    /// processed, so a Send racing the consumer's first `post_recv` on a
    /// multi-threaded runtime never finds an empty receive queue.
    pub(crate) fn start_io(&self) {
        if !self.started.load(Ordering::Acquire) && !self.started.swap(true, Ordering::AcqRel) {
            // Deliver anything that arrived with the MPA exchange.
            self.with(|_| ());
            self.start_signal.notify();
        }
    }

    pub(crate) fn wants_read(&self) -> bool {
        let st = self.lock();
        !st.shut && st.conn.wants_read()
    }

    pub(crate) async fn readable(&self) -> io::Result<()> {
        self.stream.readable().await
    }

    /// Read readiness through the socket's single poll slot (the I/O task
    /// does not use it while a completion-queue poller reads). An error
    /// counts as ready: the read that follows reports it.
    pub(crate) fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.stream.poll_read_ready(cx).map(|_| ())
    }

    /// A completion-queue waiter starts reading the socket itself: the I/O
    /// task's read-readiness registration (a single slot) is replaced by a
    /// no-op waker, so readiness wakes only the waiter.
    pub(crate) fn mute_io_read(&self) {
        let mut cx = Context::from_waker(Waker::noop());
        let _ = self.stream.poll_read_ready(&mut cx);
    }

    /// The last completion-queue waiter left: the I/O task watches the
    /// socket again (its waker goes back into the read slot; if the socket
    /// is readable already, or the task is not waiting, it is woken).
    pub(crate) fn hand_back_read(&self) {
        match self.wake.waiter() {
            Some(w) => {
                let mut cx = Context::from_waker(&w);
                if self.stream.poll_read_ready(&mut cx).is_ready() {
                    self.wake.notify();
                }
            }
            None => self.wake.notify(),
        }
    }

    /// Writes what the connection has queued, as far as the socket takes it.
    fn flush(&self, st: &mut QpState) {
        while st.conn.wants_write() {
            // A small message is one slice (its FPDU encoded whole); a few
            // FPDUs take a few: no need to set up `MAX_IOVECS` of them (a
            // measurable part of a round trip).
            let slices = st.conn.transmit_slices();
            let res = if slices == 1 {
                let mut iov = [IoSlice::new(&[])];
                let n = st.conn.transmit_iovecs(&mut iov);
                sock_write(&self.stream, &iov[..n])
            } else if slices <= FEW_IOVECS {
                let mut iov = [IoSlice::new(&[]); FEW_IOVECS];
                let n = st.conn.transmit_iovecs(&mut iov);
                sock_write(&self.stream, &iov[..n])
            } else {
                let mut iov = [IoSlice::new(&[]); MAX_IOVECS];
                let n = st.conn.transmit_iovecs(&mut iov);
                sock_write(&self.stream, &iov[..n])
            };
            match res {
                Ok(0) => {
                    st.conn
                        .handle_transport_failure(TransportError::AcceptedNothing);
                    break;
                }
                Ok(w) => st.conn.handle_written(w),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    st.conn.handle_transport_failure(TransportError::from(&e));
                    break;
                }
            }
        }
    }

    /// Hands the connection's completions to the completion queues (under
    /// the state lock; the CQ locks are leaves). A full queue fails the
    /// connection. `me`: the task reading the socket itself, which is not
    /// woken for what it publishes.
    fn publish(&self, st: &mut QpState, me: Option<&Waker>) {
        let overrun = if self.one_cq {
            // One queue for both: straight from the connection, one lock,
            // no intermediate vector.
            let conn = &mut st.conn;
            self.send_cq
                .push_from(|| conn.poll_completion(), me)
                .is_err()
        } else {
            self.collect(st);
            self.send_cq.push_all(&mut st.send_wcs, me).is_err()
                | self.recv_cq.push_all(&mut st.recv_wcs, me).is_err()
        };
        if overrun {
            st.conn
                .handle_transport_failure(TransportError::CompletionQueueOverrun);
            self.collect(st);
            let _ = self.send_cq.push_all(&mut st.send_wcs, None);
            let _ = self.recv_cq.push_all(&mut st.recv_wcs, None);
            self.wake.notify();
        }
    }

    /// Learns whether the connection closed, and tells the waiters.
    fn take_events(&self, st: &mut QpState) {
        while let Some(ev) = st.conn.poll_event() {
            if let Event::Closed(err) = ev {
                tracing::debug!(error = %err, "queue pair closed");
                st.reason = Some(err.disconnect_reason());
            }
        }
        if let Some(reason) = &st.reason {
            if !self.closed.is_set() {
                self.closed.set(reason.clone());
            }
        }
    }

    /// Moves the connection's completions into the per-queue vectors.
    fn collect(&self, st: &mut QpState) {
        while let Some(wc) = st.conn.poll_completion() {
            if wc.opcode == WcOpcode::Recv {
                st.recv_wcs.push(wc);
            } else {
                st.send_wcs.push(wc);
            }
        }
    }

    /// Runs `f` on the state, then [`QpInner::after`].
    fn with<R>(&self, f: impl FnOnce(&mut QpState) -> R) -> R {
        let mut st = self.lock();
        let r = f(&mut st);
        self.after(st, None);
        r
    }

    /// Flushes and publishes, then wakes the I/O task if there is work
    /// for it: writes the socket could not take yet (which may be Read
    /// Responses queued by a completion-queue waiter's read, on a task
    /// that does not wait for writability), a close, a shutdown.
    #[inline]
    fn after(&self, st: MutexGuard<'_, QpState>, me: Option<&Waker>) {
        self.after_into(st, me, None);
    }

    /// [`QpInner::after`] for the completion-queue poller reading the
    /// socket itself (`me`), which takes the completions into `direct`
    /// (up to its length limit) when the connection has one queue for
    /// both and nothing waits in it before them: in order, with no trip
    /// through the queue.
    #[inline]
    fn after_into(
        &self,
        mut st: MutexGuard<'_, QpState>,
        me: Option<&Waker>,
        direct: Option<(&mut Vec<WorkCompletion>, usize)>,
    ) {
        if st.conn.wants_write() {
            self.flush(&mut st);
        }
        if st.conn.completions_pending() > 0 {
            if let Some((out, limit)) = direct {
                // Every earlier completion of this queue pair went in
                // under this same lock: none is queued before these.
                if self.one_cq && !self.send_cq.has_queued() {
                    while out.len() < limit {
                        match st.conn.poll_completion() {
                            Some(wc) => out.push(wc),
                            None => break,
                        }
                    }
                }
            }
            if st.conn.completions_pending() > 0 {
                self.publish(&mut st, me);
            }
        }
        if st.conn.events_pending() > 0 || st.reason.is_some() {
            self.take_events(&mut st);
        }
        let wake = st.conn.wants_write() || st.conn.wants_close() || st.reason.is_some();
        drop(st);
        if wake {
            self.wake.notify();
        }
    }

    /// Reads what the socket has, within the budget. `me`: the
    /// completion-queue waiter reading on its own task (it is not woken
    /// for the completions it publishes).
    pub(crate) fn read_ready(&self, me: Option<&Waker>) -> ReadOutcome {
        self.read_ready_into(me, None)
    }

    /// [`QpInner::read_ready`], the completions it produces going straight
    /// into `direct` where they may ([`QpInner::after_into`]).
    pub(crate) fn read_ready_into(
        &self,
        me: Option<&Waker>,
        direct: Option<(&mut Vec<WorkCompletion>, usize)>,
    ) -> ReadOutcome {
        if !self.started.load(Ordering::Acquire) {
            return ReadOutcome {
                alive: true,
                wants_read: false,
            };
        }
        let mut st = self.lock();
        let mut alive = true;
        {
            let mut table = self.pd.table();
            for _ in 0..READ_BUDGET {
                if !st.conn.wants_read() {
                    break;
                }
                let st_ref = &mut *st;
                let mut bufs = st_ref.conn.recv_buffers(&mut table);
                let (res, asked) = if bufs.direct.is_none() {
                    let asked = bufs.staging.len();
                    (sock_read(&self.stream, bufs.staging), asked)
                } else {
                    let mut iov: [IoSliceMut<'_>; MAX_RECV_SLICES] =
                        std::array::from_fn(|_| IoSliceMut::new(&mut []));
                    let n = bufs.io_slices(&mut iov);
                    let asked = iov[..n].iter().map(|v| v.len()).sum();
                    (sock_read_vectored(&self.stream, &mut iov[..n]), asked)
                };
                match res {
                    Ok(0) => {
                        st_ref.conn.handle_eof();
                        alive = false;
                        break;
                    }
                    Ok(n) => {
                        st_ref.conn.handle_read(n, &mut table);
                        if n < asked {
                            // The socket had no more (its readiness is
                            // cleared): another read now would only say
                            // EAGAIN.
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        st_ref
                            .conn
                            .handle_transport_failure(TransportError::from(&e));
                        alive = false;
                        break;
                    }
                }
            }
        }
        let wants_read = alive && st.conn.wants_read();
        self.after_into(st, me, direct);
        ReadOutcome { alive, wants_read }
    }
}

/// What [`QpInner::read_ready`] left behind.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadOutcome {
    /// False once the stream ended or failed.
    pub(crate) alive: bool,
    /// Whether the connection takes more input (reading on is useful).
    pub(crate) wants_read: bool,
}

/// Most rounds of work the I/O task does per poll before it yields
/// (fairness between connections on one runtime thread).
const IO_ROUNDS: usize = 16;

/// The I/O task of one connection.
///
/// It waits with the poll-based readiness API, whose read waker is a single
/// slot per socket: a completion-queue waiter that reads the socket itself
/// mutes that slot while it waits ([`QpInner::mute_io_read`]) and hands it
/// back when it leaves ([`QpInner::hand_back_read`]). So the I/O task is
/// woken for reading only when nobody else is reading, not once per message.
async fn run(inner: Arc<QpInner>) {
    // Wait for the consumer to start the queue pair (its receives posted).
    if !inner.started.load(Ordering::Acquire) {
        let _ = tokio::time::timeout(START_GRACE, inner.start_signal.wait()).await;
    }
    inner.start_io();
    let mut stream_alive = true;
    std::future::poll_fn(|cx| {
        for _ in 0..IO_ROUNDS {
            // Register before looking at the state: a notification after
            // the look wakes us again.
            inner.wake.register(cx.waker());
            inner.wake.take();
            let (readable, want_write, want_close) = {
                let st = inner.lock();
                (
                    stream_alive && st.conn.wants_read(),
                    st.conn.wants_write(),
                    st.conn.wants_close(),
                )
            };
            if want_close {
                return Poll::Ready(());
            }
            if want_write {
                match inner.stream.poll_write_ready(cx) {
                    Poll::Ready(Ok(())) => {
                        inner.with(|_| ());
                        continue;
                    }
                    Poll::Ready(Err(e)) => {
                        inner.with(|st| st.conn.handle_transport_failure(TransportError::from(&e)));
                        continue;
                    }
                    Poll::Pending => {}
                }
            }
            // While a completion-queue waiter reads, the I/O task does not.
            if readable && inner.consumers.load(Ordering::Acquire) == 0 {
                match inner.stream.poll_read_ready(cx) {
                    Poll::Ready(Ok(())) => {
                        stream_alive = inner.read_ready(None).alive;
                        continue;
                    }
                    Poll::Ready(Err(e)) => {
                        inner.with(|st| st.conn.handle_transport_failure(TransportError::from(&e)));
                        continue;
                    }
                    Poll::Pending => {}
                }
            }
            if inner.wake.is_set() {
                continue;
            }
            return Poll::Pending;
        }
        // Work left: let other tasks run first.
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await;
    // Everything queued (a Terminate, the last messages of a graceful close)
    // is written: close the stream.
    let aborted = {
        let mut st = inner.lock();
        st.shut = true;
        matches!(st.conn.error(), Some(ConnError::LocalAbort))
    };
    if aborted {
        let _ = inner.stream.set_zero_linger();
    }
    shutdown(&inner.stream);
    let reason = inner
        .lock()
        .reason
        .clone()
        .unwrap_or(DisconnectReason::Local);
    inner.closed.set(reason);
}

impl Qp {
    /// Wraps a connected state machine and starts its I/O task on the
    /// current tokio runtime.
    pub(crate) fn start(
        conn: Connection,
        stream: TcpStream,
        pd: Arc<PdInner>,
        send_cq: Cq,
        recv_cq: Cq,
    ) -> Qp {
        let caps = {
            let c = conn.config().caps;
            match conn.negotiated() {
                Some(n) => QpCaps {
                    ird: n.ird,
                    ord: n.ord,
                    ..c
                },
                None => c,
            }
        };
        let inner = Arc::new(QpInner {
            state: Mutex::new(QpState {
                conn,
                send_wcs: Vec::new(),
                recv_wcs: Vec::new(),
                reason: None,
                shut: false,
            }),
            pd,
            stream,
            one_cq: send_cq.same_queue(&recv_cq),
            send_cq,
            recv_cq,
            wake: Signal::new(),
            closed: Latch::new(),
            caps,
            consumers: AtomicUsize::new(0),
            started: std::sync::atomic::AtomicBool::new(false),
            start_signal: Signal::new(),
        });
        inner.send_cq.attach(&inner);
        inner.recv_cq.attach(&inner);
        tokio::spawn(run(inner.clone()));
        Qp { inner }
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.inner.stream.peer_addr()
    }

    /// What MPA set-up agreed (revision, CRC, IRD/ORD, RTR, private data).
    pub fn negotiated(&self) -> Option<rpcrdma_iwarp::conn::Negotiated> {
        self.inner.lock().conn.negotiated().cloned()
    }
}

/// The most octets a chain of work requests ([`QueuePair::post_send_chain`])
/// holds encoded before writing them: a reply's RDMA Writes and its Send
/// go to the socket together, the Send in the same TCP push as the Writes'
/// last FPDU (one system call for a 1 MiB reply in FPDUs of the default
/// size; `MAX_IOVECS` bounds what one call takes). 2 MiB holds a 1 MiB
/// READ reply (the largest `rsize` Linux's NFS client uses) with room to
/// spare. Holding costs no copy: an encoded FPDU refers to the region's
/// octets. A request that
/// takes the chain past it is written as soon as it is posted, as
/// [`QueuePair::post_send`] does (docs/performance.md, "A reply's Writes
/// and its Send in one system call").
const CHAIN_BYTES: usize = 2 * 1024 * 1024;

/// The payload octets a work request puts on the wire (its headers aside;
/// an RDMA Read Request carries none).
fn wire_len(wr: &SendWr) -> usize {
    match &wr.op {
        SendOp::Send { sges, .. } | SendOp::Write { sges, .. } => sges.iter().map(Sge::len).sum(),
        // Read Requests, local invalidations and whatever comes later:
        // headers only.
        _ => 0,
    }
}

impl Qp {
    /// Posts `wr` under the lock already held: a small Send with nothing
    /// queued before it is encoded and written in one go (no send-queue
    /// entry when the socket takes it whole); anything else is encoded and
    /// left for [`QpInner::after`] to write.
    fn post_send_locked(&self, st: &mut QpState, wr: SendWr) -> Result<(), PostError> {
        let inner = &*self.inner;
        let mut failed = None;
        let r = st.conn.post_send_now(wr, &mut inner.pd.table(), |b| {
            match sock_write(&inner.stream, &[IoSlice::new(b)]) {
                Ok(0) => {
                    failed = Some(TransportError::AcceptedNothing);
                    0
                }
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) =>
                {
                    0
                }
                Err(e) => {
                    failed = Some(TransportError::from(&e));
                    0
                }
            }
        });
        if let Some(e) = failed {
            st.conn.handle_transport_failure(e);
        }
        r
    }
}

impl QueuePair for Qp {
    fn post_send(&self, wr: SendWr) -> Result<(), PostError> {
        let inner = &*self.inner;
        let mut st = inner.lock();
        let r = self.post_send_locked(&mut st, wr);
        inner.after(st, None);
        inner.start_io();
        r
    }

    /// Encodes the chain's requests under one lock and writes them
    /// together, within `CHAIN_BYTES` (2 MiB): a reply's RDMA Writes (a 1 MiB
    /// READ's included) and its Send cost one system call rather than one
    /// per request.
    fn post_send_chain<I>(&self, wrs: I) -> Result<(), PostError>
    where
        I: IntoIterator<Item = SendWr>,
    {
        let inner = &*self.inner;
        let mut wrs = wrs.into_iter().peekable();
        let mut st = inner.lock();
        // Octets encoded by this chain and not yet handed to the socket.
        let mut held = 0usize;
        let mut r = Ok(());
        while let Some(wr) = wrs.next() {
            let len = wire_len(&wr);
            if held > 0 && held + len > CHAIN_BYTES {
                inner.flush(&mut st);
                held = 0;
            }
            r = if held == 0 && wrs.peek().is_none() {
                // Alone on the wire: as post_send (a small Send goes out
                // at once, without a send-queue entry).
                self.post_send_locked(&mut st, wr)
            } else {
                st.conn.post_send(wr, &mut inner.pd.table())
            };
            if r.is_err() {
                break;
            }
            held += len;
            if held > CHAIN_BYTES {
                inner.flush(&mut st);
                held = 0;
            }
        }
        inner.after(st, None);
        inner.start_io();
        r
    }

    fn post_recv(&self, wr: RecvWr) -> Result<(), PostError> {
        // Receives never touch the socket (iWARP has no receiver-not-ready
        // retry: a Send finding no buffer ends the connection).
        let r = self.inner.lock().conn.post_recv(wr);
        self.inner.start_io();
        r
    }

    /// The receives under one lock (a batch of messages read at once
    /// gives back as many buffers).
    fn post_recv_chain<I>(&self, wrs: I) -> Result<(), PostError>
    where
        I: IntoIterator<Item = RecvWr>,
    {
        let r = {
            let mut st = self.inner.lock();
            wrs.into_iter().try_for_each(|wr| st.conn.post_recv(wr))
        };
        self.inner.start_io();
        r
    }

    fn caps(&self) -> QpCaps {
        self.inner.caps
    }

    async fn disconnect(&self) {
        self.inner.with(|st| st.conn.close());
        let _ = self.closed().await;
    }

    fn abort(&self) {
        self.inner.with(|st| st.conn.abort());
    }

    async fn closed(&self) -> DisconnectReason {
        self.inner.closed.wait().await
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        let shut = self.inner.lock().shut;
        if !shut {
            self.inner.with(|st| st.conn.close());
        }
    }
}
