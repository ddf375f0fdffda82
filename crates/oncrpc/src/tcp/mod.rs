//! ONC RPC over TCP with record marking (RFC 5531 §11).
//!
//! Each message is written as one record with a vectored write of the
//! fragment headers and the [`Payload`] pieces (inline runs and DDP items
//! side by side; nothing is copied), straight from the sending task when
//! the socket has room. A writer task per connection finishes any record a
//! sender could not write at once, so a caller that gives up on a call can
//! never leave half a record on the wire. Reads go through the
//! [`Deframer`], which enforces the maximum record size before buffering.
//!
//! A server's connections (`TcpTransport::serving`) count what their
//! peer makes them hold against the server's memory budget and stop
//! handing up calls while over it (`budget.rs`); one whose replies make no
//! progress for the stall timeout is dropped.
//!
//! A client's connection that the server closes without a byte of answer
//! to its calls asks the server, on a connection of its own, whether it
//! speaks iWARP MPA (a 20-octet MPA Request, [`answers_mpa`]): if it
//! answers, the port serves RPC-over-RDMA, and the calls fail with
//! [`TransportError::SpeaksRdma`], which says so, instead of being sent
//! again.

//!
//! * `mod.rs`: the transport, its sends, its receive loop and its reads;
//! * `read.rs`: the state of the receive side;
//! * `write.rs`: the queue of records not yet written and the writer task;
//! * `connector.rs`: connecting ([`TcpConnector`], [`connect`], [`answers_mpa`]).

mod connector;
mod read;
mod write;

use parking_lot::Mutex;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use rpcrdma_xdr::Payload;
use tokio::net::TcpStream;
use tokio::sync::Notify;

use crate::budget::{ConnMemory, Held};
use crate::error::{RecordError, TransportError};
use crate::msg::{peek_kind, MsgType};
use crate::record::{frame, Deframer, DEFAULT_MAX_RECORD, MAX_FRAGMENT_LEN};
use crate::record_pool::{RecordPool, LARGE_RECORD};
use crate::transport::{CallHints, Received, Transport};
use crate::util::lock;
pub use connector::{answers_mpa, connect, TcpConnector};
use read::{ReadSide, READ_RESERVE_CAP};
use write::{try_write_slices, writer, Shared, WriteSide, WriteState};

/// Records queued for the writer before senders wait.
const WRITE_QUEUE: usize = 256;

/// TCP transport settings.
#[derive(Debug, Clone)]
pub struct TcpConfig {
    /// Largest record accepted or sent (default
    /// [`DEFAULT_MAX_RECORD`], 32 MiB). A larger incoming record closes
    /// the connection.
    pub max_record: usize,
    /// Largest fragment sent (default 2^31 - 1: one fragment per record).
    pub max_fragment: usize,
}

impl Default for TcpConfig {
    fn default() -> Self {
        Self {
            max_record: DEFAULT_MAX_RECORD,
            max_fragment: MAX_FRAGMENT_LEN,
        }
    }
}

/// What a server's TCP connection keeps for a received call until its
/// reply is sent: the call's charge to the memory budget (its record and
/// the reservation for its reply). Nothing on a client.
#[derive(Debug, Default)]
pub struct TcpCall {
    held: Option<Held>,
}

/// One TCP connection carrying RPC records both ways.
///
/// Sending is a non-blocking write straight from the caller when the
/// socket has room and nothing is queued (no task switch); otherwise the
/// rest of the record goes to a writer task, which finishes it even if the
/// caller gives up. Records are never interleaved.
pub struct TcpTransport {
    stream: Arc<TcpStream>,
    read: tokio::sync::Mutex<ReadSide>,
    write: Arc<WriteSide>,
    shared: Arc<Shared>,
    peer: String,
    peer_addr: Option<SocketAddr>,
    max_record: usize,
    memory: Option<Arc<ConnMemory>>,
    /// A client's calls sent before any byte came back (kept until one
    /// does): those to fail if the port turns out to speak RPC-over-RDMA.
    unanswered: Mutex<Vec<u32>>,
    /// A byte came back (no more calls are kept in `unanswered`).
    answered: AtomicBool,
}

impl std::fmt::Debug for TcpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpTransport")
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

impl TcpTransport {
    /// Wraps a connected stream (sets `TCP_NODELAY`, starts the writer
    /// task; must run inside a tokio runtime).
    pub fn new(stream: TcpStream, config: &TcpConfig) -> std::io::Result<Self> {
        Self::build(stream, config, None)
    }

    /// A server's connection: what its peer makes it hold is charged to
    /// `memory`, it hands up no call while over budget, and it is dropped
    /// when its replies make no progress for `stall` (`budget.rs`).
    pub(crate) fn serving(
        stream: TcpStream,
        config: &TcpConfig,
        memory: Arc<ConnMemory>,
        stall: Duration,
    ) -> std::io::Result<Self> {
        Self::build(stream, config, Some((memory, stall)))
    }

    fn build(
        stream: TcpStream,
        config: &TcpConfig,
        memory: Option<(Arc<ConnMemory>, Duration)>,
    ) -> std::io::Result<Self> {
        stream.set_nodelay(true)?;
        let peer_addr = stream.peer_addr().ok();
        let peer = match peer_addr {
            Some(a) => format!("tcp {a}"),
            None => "tcp ?".to_owned(),
        };
        let stream = Arc::new(stream);
        let shared = Arc::new(Shared {
            closed: AtomicBool::new(false),
            notify: Notify::new(),
        });
        let write = Arc::new(WriteSide {
            state: Mutex::new(WriteState::default()),
            work: Notify::new(),
            space: Notify::new(),
            max_fragment: config.max_fragment,
            stall: memory.as_ref().map(|(_, stall)| *stall),
            peer: peer.clone(),
        });
        tokio::spawn(writer(stream.clone(), write.clone(), shared.clone()));
        let memory = memory.map(|(m, _)| m);
        let mut rs = ReadSide {
            buf: BytesMut::with_capacity(64 * 1024),
            buf_held: memory.as_ref().map(|m| m.charge(0)),
            deframer: Deframer::new(config.max_record),
            body: None,
            pool: match &memory {
                Some(m) => RecordPool::charged(m.clone()),
                None => RecordPool::default(),
            },
            waiting: None,
            received: false,
            refused: None,
        };
        rs.sync_buf();
        Ok(Self {
            stream,
            read: tokio::sync::Mutex::new(rs),
            write,
            shared,
            peer,
            peer_addr,
            max_record: config.max_record,
            memory,
            unanswered: Mutex::new(Vec::new()),
            answered: AtomicBool::new(false),
        })
    }

    /// The end of a connection (`end`: end of stream or a failed read) on
    /// which nothing arrived: if this is a client whose calls went
    /// unanswered and the server answers an MPA Request, the calls to
    /// fail with [`TransportError::SpeaksRdma`] first.
    async fn refused(&self, rs: &ReadSide) -> Option<(SocketAddr, Vec<u32>)> {
        if rs.received || self.memory.is_some() {
            return None;
        }
        let addr = self.peer_addr?;
        let xids = std::mem::take(&mut *lock(&self.unanswered));
        if xids.is_empty() || !answers_mpa(addr).await {
            return None;
        }
        tracing::debug!(%addr, "the server answers MPA: it speaks RPC-over-RDMA, not ONC RPC/TCP");
        Some((addr, xids))
    }

    /// Connects to `addr`.
    pub async fn connect(addr: SocketAddr, config: &TcpConfig) -> Result<Self, TransportError> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|source| TransportError::Connect {
                addr: addr.to_string(),
                source,
            })?;
        Ok(Self::new(stream, config)?)
    }

    /// Sends one record. Cancel-safe: once this has queued or started the
    /// record, the record is written whole even if the future is dropped.
    /// `call` is the charge of the call this replies to: given back once
    /// the reply is handed over (what the socket did not take is charged
    /// until it is written).
    async fn send(&self, message: Payload, call: Option<Held>) -> Result<(), TransportError> {
        let len = message.stream_len();
        if len > self.max_record {
            return Err(TransportError::MessageTooLarge {
                len,
                max: self.max_record,
            });
        }
        loop {
            let space = self.write.space.notified();
            tokio::pin!(space);
            space.as_mut().enable();
            {
                let mut st = lock(&self.write.state);
                if st.failed || st.closing || self.shared.closed.load(Ordering::Acquire) {
                    return Err(TransportError::Closed);
                }
                if !st.busy {
                    // Fast path: write from here while the socket takes it.
                    let pieces = message.pieces();
                    let segments = frame(&pieces, self.write.max_fragment);
                    let slices: Vec<&[u8]> = segments.iter().map(|s| s.as_bytes()).collect();
                    let total: usize = slices.iter().map(|s| s.len()).sum();
                    let written = match try_write_slices(&self.stream, &slices, 0) {
                        Ok(n) => n,
                        Err(e) => {
                            st.failed = true;
                            drop(st);
                            self.shared.close();
                            self.write.work.notify_one();
                            return Err(e.into());
                        }
                    };
                    if written < total {
                        drop(slices);
                        drop(segments);
                        drop(pieces);
                        let held = self.reply_charge(call.is_some(), total - written);
                        st.busy = true;
                        st.queue.push_back((message, written, held));
                        self.write.work.notify_one();
                    }
                    return Ok(());
                }
                if st.queue.len() < WRITE_QUEUE {
                    let held = self.reply_charge(call.is_some(), len);
                    st.queue.push_back((message, 0, held));
                    self.write.work.notify_one();
                    return Ok(());
                }
            }
            space.await;
        }
    }

    /// The charge of a reply's `unwritten` octets, on a server's
    /// connection.
    fn reply_charge(&self, reply: bool, unwritten: usize) -> Option<Held> {
        match &self.memory {
            Some(m) if reply => Some(m.charge_work(unwritten as u64)),
            _ => None,
        }
    }

    /// Waits until the memory budget has room for `n` more octets of this
    /// connection's work, or it closes (`Closed`).
    async fn room(&self, n: u64) -> Result<(), TransportError> {
        let Some(m) = &self.memory else {
            return Ok(());
        };
        if m.has_room(n) {
            return Ok(());
        }
        let closed = async {
            loop {
                let notified = self.shared.notify.notified();
                if self.shared.closed.load(Ordering::Acquire) {
                    return;
                }
                notified.await;
            }
        };
        if m.wait_for_room(n, closed).await {
            Ok(())
        } else {
            Err(TransportError::Closed)
        }
    }

    /// What a call takes from the budget while it runs: its record
    /// (unless its buffer carries its own charge) and the reservation for
    /// its reply.
    fn call_charge(&self, message: &[u8], pooled: bool) -> u64 {
        match &self.memory {
            Some(m) => {
                let own = if pooled { 0 } else { message.len() as u64 };
                own + m.reply_reserve(message)
            }
            None => 0,
        }
    }

    /// Hands up a call, charging it `charge` octets.
    fn call(&self, message: Bytes, charge: u64) -> Received<TcpCall> {
        let held = self.memory.as_ref().map(|m| m.charge_work(charge));
        Received::Call {
            message: Payload::inline_only(message),
            context: TcpCall { held },
        }
    }
}

impl TcpTransport {
    /// Reads the rest of the large record in `rs.body` from the socket
    /// straight into its buffer (never past the record's end, so the
    /// next record's bytes stay in the socket for `rs.buf`), growing the
    /// buffer at most [`READ_RESERVE_CAP`] beyond what has arrived, and
    /// hands it out. Cancel-safe: what was read stays in `rs.body`.
    async fn read_body(&self, rs: &mut ReadSide) -> Result<Bytes, TransportError> {
        loop {
            if rs.body.as_ref().is_some_and(|((b, _), len)| b.len() < *len) {
                // No more of it while over budget.
                self.room(0).await?;
            }
            let Some(((body, held), len)) = rs.body.as_mut() else {
                unreachable!("read_body without a record in progress");
            };
            let len = *len;
            if body.len() == len {
                let (body, _) = rs.body.take().unwrap_or_default();
                return Ok(rs.pool.record(body));
            }
            if body.capacity() == body.len() {
                body.reserve_exact((len - body.len()).min(READ_RESERVE_CAP));
                if let Some(h) = held.as_mut() {
                    h.resize(body.capacity() as u64);
                }
            }
            let room = (len - body.len()).min(body.capacity() - body.len());
            if self.read_some(&mut (&mut *body).limit(room)).await? == 0 {
                return Err(RecordError::Truncated {
                    buffered: body.len(),
                }
                .into());
            }
        }
    }

    /// One read from the socket into `into`, waiting for it to become
    /// readable first if it has nothing: the octets read, 0 at the end of
    /// the stream (the connection is then closed). A failed read closes
    /// the connection; a closed one answers `Closed`.
    async fn read_some<B: BufMut>(&self, into: &mut B) -> Result<usize, TransportError> {
        loop {
            let notified = self.shared.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.shared.closed.load(Ordering::Acquire) {
                return Err(TransportError::Closed);
            }
            match self.stream.try_read_buf(into) {
                Ok(0) => {
                    self.shared.close();
                    return Ok(0);
                }
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.shared.close();
                    return Err(e.into());
                }
            }
            tokio::select! {
                r = self.stream.readable() => r?,
                _ = notified => return Err(TransportError::Closed),
            }
        }
    }
}

impl Drop for TcpTransport {
    fn drop(&mut self) {
        // Let the writer task flush and stop even if close() never ran.
        lock(&self.write.state).closing = true;
        self.write.work.notify_one();
    }
}

impl Transport for TcpTransport {
    /// A server's connection keeps each call's charge to the memory
    /// budget until the reply is sent; nothing otherwise.
    type CallContext = TcpCall;

    async fn send_call(
        &self,
        xid: u32,
        message: Payload,
        _hints: &CallHints,
    ) -> Result<(), TransportError> {
        if !self.answered.load(Ordering::Relaxed) {
            lock(&self.unanswered).push(xid);
        }
        self.send(message, None).await
    }

    async fn send_reply(&self, context: TcpCall, message: Payload) -> Result<(), TransportError> {
        let call = match context.held {
            Some(h) => Some(h),
            // A server's reply always carries its call's charge (possibly
            // of nothing), so that the unwritten part is charged.
            None => self.memory.as_ref().map(|m| m.charge_work(0)),
        };
        self.send(message, call).await
    }

    fn retire_call(&self, context: TcpCall) {
        drop(context);
    }

    async fn recv(&self) -> Result<Received<TcpCall>, TransportError> {
        let mut guard = self.read.lock().await;
        let rs = &mut *guard;
        loop {
            if let Some((addr, xids)) = rs.refused.as_mut() {
                let addr = *addr;
                return match xids.pop() {
                    Some(xid) => Ok(Received::CallFailed {
                        xid,
                        error: TransportError::SpeaksRdma { addr },
                    }),
                    None => Err(TransportError::Closed),
                };
            }
            if rs.waiting.is_some() {
                // A call waits for room in the memory budget: no new call
                // is handed up until then.
                let need = rs.waiting.as_ref().map_or(0, |(_, n)| *n);
                self.room(need).await?;
                if let Some((record, charge)) = rs.waiting.take() {
                    return Ok(self.call(record, charge));
                }
            }
            let (decoded, pooled) = if rs.body.is_some() {
                (Ok(Some(self.read_body(rs).await?)), true)
            } else {
                let d = rs.deframer.decode(&mut rs.buf);
                rs.sync_buf();
                (d, false)
            };
            match decoded {
                Err(e) => {
                    tracing::warn!(peer = %self.peer, error = %e, "closing connection");
                    self.shared.close();
                    return Err(e.into());
                }
                Ok(Some(record)) => match peek_kind(&record) {
                    Some((_, MsgType::CALL)) => {
                        let charge = self.call_charge(&record, pooled);
                        if self.memory.is_some() {
                            // Through the budget's gate (cancel-safe: the
                            // call waits in `rs`).
                            rs.waiting = Some((record, charge));
                            continue;
                        }
                        return Ok(self.call(record, charge));
                    }
                    Some((xid, MsgType::REPLY)) => {
                        return Ok(Received::Reply {
                            xid,
                            message: Payload::inline_only(record),
                        })
                    }
                    _ => {
                        tracing::debug!(
                            peer = %self.peer,
                            len = record.len(),
                            "dropping a record that is neither a call nor a reply"
                        );
                    }
                },
                Ok(None) => {
                    if let Some(len) = rs.deframer.single_fragment_len() {
                        if len >= LARGE_RECORD {
                            // Read it into a pooled buffer of its own: the
                            // bytes here first, the rest from the socket.
                            let mut body = rs.pool.take(len.min(rs.buf.len() + READ_RESERVE_CAP));
                            body.0.extend_from_slice(&rs.buf);
                            rs.buf.clear();
                            rs.deframer.fragment_taken();
                            rs.body = Some((body, len));
                            continue;
                        }
                    }
                    // No more of a record while over budget.
                    self.room(0).await?;
                    let want = rs.deframer.wanted(&rs.buf).min(READ_RESERVE_CAP);
                    rs.buf.reserve(want);
                    rs.sync_buf();
                    let n = self.read_some(&mut rs.buf).await;
                    rs.sync_buf();
                    let end = match n {
                        Ok(0) => None,
                        Ok(_) => {
                            if !rs.received {
                                rs.received = true;
                                self.answered.store(true, Ordering::Relaxed);
                                lock(&self.unanswered).clear();
                            }
                            continue;
                        }
                        Err(TransportError::Io(e)) => Some(e),
                        Err(e) => return Err(e),
                    };
                    if let Some(refused) = self.refused(rs).await {
                        rs.refused = Some(refused);
                        continue;
                    }
                    if let Some(e) = end {
                        return Err(e.into());
                    }
                    rs.deframer.finish(&rs.buf)?;
                    return Err(TransportError::Closed);
                }
            }
        }
    }

    async fn release(&self, _xid: u32) {}

    async fn close(&self) {
        self.shared.close();
        lock(&self.write.state).closing = true;
        // The writer flushes what is queued, then shuts the socket down.
        self.write.work.notify_one();
        self.write.space.notify_waiters();
    }

    fn peer(&self) -> String {
        self.peer.clone()
    }

    fn peer_addr(&self) -> Option<SocketAddr> {
        self.peer_addr
    }
}
