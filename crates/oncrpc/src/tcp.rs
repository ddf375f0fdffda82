//! ONC RPC over TCP with record marking (RFC 5531 §11).
//!
//! Each message is written as one record with a vectored write of the
//! fragment headers and the [`Payload`] pieces (inline runs and DDP items
//! side by side; nothing is copied), straight from the sending task when
//! the socket has room. A writer task per connection finishes any record a
//! sender could not write at once, so a caller that gives up on a call can
//! never leave half a record on the wire. Reads go through the
//! [`Deframer`], which enforces the maximum record size before buffering.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::io::IoSlice;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::util::lock;
use bytes::{BufMut, Bytes, BytesMut};
use rpcrdma_xdr::Payload;
use tokio::net::TcpStream;
use tokio::sync::Notify;

use crate::client::{Client, ClientConfig};
use crate::error::{RecordError, RpcError, TransportError};
use crate::msg::{peek_kind, MsgType};
use crate::record::{frame, Deframer, DEFAULT_MAX_RECORD, MAX_FRAGMENT_LEN};
use crate::record_pool::{RecordPool, LARGE_RECORD};
use crate::transport::{CallHints, Connector, Received, Transport};

/// Most bytes reserved in the receive buffer at once, whatever a fragment
/// header announces: a peer that announces a large record and stalls pins
/// no more than this per connection.
const READ_RESERVE_CAP: usize = 1 << 20;

/// Records queued for the writer before senders wait.
const WRITE_QUEUE: usize = 256;

/// Records coalesced into one vectored write.
const WRITE_BATCH: usize = 32;

/// Most I/O vectors handed to one `writev` (Linux `IOV_MAX` is 1024).
const MAX_IOVECS: usize = 1024;

/// TCP transport settings.
#[derive(Debug, Clone)]
#[non_exhaustive]
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

struct ReadSide {
    buf: BytesMut,
    deframer: Deframer,
    /// A large single-fragment record being read into a buffer of its own
    /// (`record_pool`), with its length.
    body: Option<(Vec<u8>, usize)>,
    pool: RecordPool,
}

struct Shared {
    closed: AtomicBool,
    notify: Notify,
}

impl Shared {
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }
}

/// Records waiting for the writer task, oldest first, each with the bytes
/// of it already written.
#[derive(Default)]
struct WriteState {
    /// The writer task owns the socket's send side (it has queued records
    /// or is writing one); senders must queue behind it.
    busy: bool,
    queue: VecDeque<(Payload, usize)>,
    closing: bool,
    failed: bool,
}

struct WriteSide {
    state: Mutex<WriteState>,
    /// Wakes the writer task.
    work: Notify,
    /// Wakes senders waiting for queue space.
    space: Notify,
    max_fragment: usize,
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
        });
        tokio::spawn(writer(stream.clone(), write.clone(), shared.clone()));
        Ok(Self {
            stream,
            read: tokio::sync::Mutex::new(ReadSide {
                buf: BytesMut::with_capacity(64 * 1024),
                deframer: Deframer::new(config.max_record),
                body: None,
                pool: RecordPool::default(),
            }),
            write,
            shared,
            peer,
            peer_addr,
            max_record: config.max_record,
        })
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
    async fn send(&self, message: Payload) -> Result<(), TransportError> {
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
                        st.busy = true;
                        st.queue.push_back((message, written));
                        self.write.work.notify_one();
                    }
                    return Ok(());
                }
                if st.queue.len() < WRITE_QUEUE {
                    st.queue.push_back((message, 0));
                    self.write.work.notify_one();
                    return Ok(());
                }
            }
            space.await;
        }
    }
}

/// Writes as much of `slices` (after skipping `skip` bytes) as the socket
/// takes without blocking; returns the bytes written including `skip`.
fn try_write_slices(stream: &TcpStream, slices: &[&[u8]], skip: usize) -> std::io::Result<usize> {
    let total: usize = slices.iter().map(|s| s.len()).sum();
    let mut done = skip;
    while done < total {
        let iov = iovecs(slices, done);
        match stream.try_write_vectored(&iov) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// I/O vectors for `slices` starting `skip` bytes in (at most `MAX_IOVECS`).
fn iovecs<'a>(slices: &[&'a [u8]], mut skip: usize) -> Vec<IoSlice<'a>> {
    let mut iov = Vec::with_capacity(slices.len().min(MAX_IOVECS));
    for s in slices {
        if iov.len() == MAX_IOVECS {
            break;
        }
        if skip >= s.len() {
            skip -= s.len();
            continue;
        }
        iov.push(IoSlice::new(&s[skip..]));
        skip = 0;
    }
    iov
}

impl TcpTransport {
    /// Reads the rest of the large record in `rs.body` from the socket
    /// straight into its buffer (never past the record's end, so the
    /// next record's bytes stay in the socket for `rs.buf`), growing the
    /// buffer at most [`READ_RESERVE_CAP`] beyond what has arrived, and
    /// hands it out. Cancel-safe: what was read stays in `rs.body`.
    async fn read_body(&self, rs: &mut ReadSide) -> Result<Bytes, TransportError> {
        loop {
            let Some((body, len)) = rs.body.as_mut() else {
                unreachable!("read_body without a record in progress");
            };
            let len = *len;
            if body.len() == len {
                let (body, _) = rs.body.take().unwrap_or_default();
                return Ok(rs.pool.record(body));
            }
            if body.capacity() == body.len() {
                body.reserve_exact((len - body.len()).min(READ_RESERVE_CAP));
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
    /// TCP needs no per-call state.
    type CallContext = ();

    async fn send_call(
        &self,
        _xid: u32,
        message: Payload,
        _hints: &CallHints,
    ) -> Result<(), TransportError> {
        self.send(message).await
    }

    async fn send_reply(&self, _context: (), message: Payload) -> Result<(), TransportError> {
        self.send(message).await
    }

    async fn recv(&self) -> Result<Received<()>, TransportError> {
        let mut guard = self.read.lock().await;
        let rs = &mut *guard;
        loop {
            let decoded = if rs.body.is_some() {
                Ok(Some(self.read_body(rs).await?))
            } else {
                rs.deframer.decode(&mut rs.buf)
            };
            match decoded {
                Err(e) => {
                    tracing::warn!(peer = %self.peer, error = %e, "closing connection");
                    self.shared.close();
                    return Err(e.into());
                }
                Ok(Some(record)) => match peek_kind(&record) {
                    Some((_, MsgType::CALL)) => {
                        return Ok(Received::Call {
                            message: Payload::inline_only(record),
                            context: (),
                        })
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
                            body.extend_from_slice(&rs.buf);
                            rs.buf.clear();
                            rs.deframer.fragment_taken();
                            rs.body = Some((body, len));
                            continue;
                        }
                    }
                    let want = rs.deframer.wanted(&rs.buf).min(READ_RESERVE_CAP);
                    rs.buf.reserve(want);
                    if self.read_some(&mut rs.buf).await? == 0 {
                        rs.deframer.finish(&rs.buf)?;
                        return Err(TransportError::Closed);
                    }
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

/// Finishes records the senders could not write at once, in order,
/// coalescing queued records into one vectored write.
async fn writer(stream: Arc<TcpStream>, write: Arc<WriteSide>, shared: Arc<Shared>) {
    loop {
        let work = write.work.notified();
        tokio::pin!(work);
        work.as_mut().enable();
        let batch: Vec<(Payload, usize)> = {
            let mut st = lock(&write.state);
            if st.failed {
                break;
            }
            if st.queue.is_empty() {
                st.busy = false;
                if st.closing {
                    break;
                }
                Vec::new()
            } else {
                st.busy = true;
                st.queue.iter().take(WRITE_BATCH).cloned().collect()
            }
        };
        if batch.is_empty() {
            work.await;
            continue;
        }
        let result = write_batch(&stream, &batch, write.max_fragment).await;
        let mut st = lock(&write.state);
        match result {
            Ok(()) => {
                for _ in 0..batch.len() {
                    st.queue.pop_front();
                }
                drop(st);
                write.space.notify_waiters();
            }
            Err(e) => {
                tracing::debug!(error = %e, "write failed; closing");
                st.failed = true;
                st.queue.clear();
                break;
            }
        }
    }
    {
        let mut st = lock(&write.state);
        st.failed = true;
        st.queue.clear();
    }
    write.space.notify_waiters();
    shared.close();
    shutdown_write(&stream);
}

async fn write_batch(
    stream: &TcpStream,
    batch: &[(Payload, usize)],
    max_fragment: usize,
) -> std::io::Result<()> {
    let pieces: Vec<Vec<&[u8]>> = batch.iter().map(|(p, _)| p.pieces()).collect();
    let segments: Vec<Vec<_>> = pieces.iter().map(|p| frame(p, max_fragment)).collect();
    let mut slices: Vec<&[u8]> = Vec::new();
    for (segs, (_, skip)) in segments.iter().zip(batch) {
        // Skip what the sender already wrote of this record.
        let mut skip = *skip;
        for s in segs {
            let b = s.as_bytes();
            if skip >= b.len() {
                skip -= b.len();
            } else {
                slices.push(&b[skip..]);
                skip = 0;
            }
        }
    }
    let total: usize = slices.iter().map(|s| s.len()).sum();
    let mut done = 0;
    while done < total {
        stream.writable().await?;
        done = try_write_slices(stream, &slices, done)?;
    }
    Ok(())
}

/// Shuts down the sending direction so the peer reads end-of-stream.
fn shutdown_write(stream: &TcpStream) {
    use std::os::fd::AsFd;
    match stream.as_fd().try_clone_to_owned() {
        Ok(fd) => {
            let _ = std::net::TcpStream::from(fd).shutdown(std::net::Shutdown::Write);
        }
        Err(e) => tracing::debug!(error = %e, "cannot shut the socket down"),
    }
}

/// Makes TCP connections to one address, for [`Client::new`].
#[derive(Debug, Clone)]
pub struct TcpConnector {
    addr: SocketAddr,
    config: TcpConfig,
}

impl TcpConnector {
    /// Connects to `addr` with default settings.
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            config: TcpConfig::default(),
        }
    }

    /// Connects to `addr` with `config`.
    pub fn with_config(addr: SocketAddr, config: TcpConfig) -> Self {
        Self { addr, config }
    }
}

impl Connector for TcpConnector {
    type Transport = TcpTransport;

    async fn connect(&self) -> Result<TcpTransport, TransportError> {
        TcpTransport::connect(self.addr, &self.config).await
    }
}

/// Connects a client to an RPC server over TCP now.
///
/// ```no_run
/// # async fn f() -> Result<(), rpcrdma_oncrpc::RpcError> {
/// let client = rpcrdma_oncrpc::tcp::connect("127.0.0.1:111".parse().unwrap(),
///     Default::default()).await?;
/// client.null(100000, 2).await?;
/// # Ok(()) }
/// ```
pub async fn connect(addr: SocketAddr, config: ClientConfig) -> Result<Client, RpcError> {
    Client::connect(TcpConnector::new(addr), config).await
}
