//! ONC RPC over TCP with record marking (RFC 5531 §11).
//!
//! Each message is written as one record with a vectored write of the
//! fragment headers and the [`Payload`] pieces (inline runs and DDP items
//! side by side; nothing is copied). A writer task per connection owns the
//! socket's write half, so a caller that gives up on a call can never leave
//! half a record on the wire. Reads go through the [`Deframer`], which
//! enforces the maximum record size before buffering.

use std::io::IoSlice;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::BytesMut;
use rpcrdma_xdr::Payload;
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Notify};

use crate::client::{Client, ClientConfig};
use crate::error::{RpcError, TransportError};
use crate::msg::{peek_kind, MsgType};
use crate::record::{frame, Deframer, DEFAULT_MAX_RECORD, MAX_FRAGMENT_LEN};
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
    half: OwnedReadHalf,
    buf: BytesMut,
    deframer: Deframer,
}

enum Out {
    Message(Payload),
    Close,
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

/// One TCP connection carrying RPC records both ways.
pub struct TcpTransport {
    read: tokio::sync::Mutex<ReadSide>,
    tx: mpsc::Sender<Out>,
    shared: Arc<Shared>,
    peer: String,
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
        let peer = match stream.peer_addr() {
            Ok(a) => format!("tcp {a}"),
            Err(_) => "tcp ?".to_owned(),
        };
        let (r, w) = stream.into_split();
        let (tx, rx) = mpsc::channel(WRITE_QUEUE);
        let shared = Arc::new(Shared {
            closed: AtomicBool::new(false),
            notify: Notify::new(),
        });
        tokio::spawn(writer(w, rx, config.max_fragment, shared.clone()));
        Ok(Self {
            read: tokio::sync::Mutex::new(ReadSide {
                half: r,
                buf: BytesMut::with_capacity(64 * 1024),
                deframer: Deframer::new(config.max_record),
            }),
            tx,
            shared,
            peer,
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

    async fn enqueue(&self, message: Payload) -> Result<(), TransportError> {
        let len = message.stream_len();
        if len > self.max_record {
            return Err(TransportError::MessageTooLarge {
                len,
                max: self.max_record,
            });
        }
        if self.shared.closed.load(Ordering::Acquire) {
            return Err(TransportError::Closed);
        }
        self.tx
            .send(Out::Message(message))
            .await
            .map_err(|_| TransportError::Closed)
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
        self.enqueue(message).await
    }

    async fn send_reply(&self, _context: (), message: Payload) -> Result<(), TransportError> {
        self.enqueue(message).await
    }

    async fn recv(&self) -> Result<Received<()>, TransportError> {
        let mut guard = self.read.lock().await;
        let rs = &mut *guard;
        loop {
            match rs.deframer.decode(&mut rs.buf) {
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
                    let want = rs.deframer.wanted(&rs.buf).min(READ_RESERVE_CAP);
                    rs.buf.reserve(want);
                    let notified = self.shared.notify.notified();
                    tokio::pin!(notified);
                    notified.as_mut().enable();
                    if self.shared.closed.load(Ordering::Acquire) {
                        return Err(TransportError::Closed);
                    }
                    let n = tokio::select! {
                        r = rs.half.read_buf(&mut rs.buf) => r?,
                        _ = notified => return Err(TransportError::Closed),
                    };
                    if n == 0 {
                        self.shared.close();
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
        // The writer flushes what is queued, then shuts the socket down;
        // if it has already stopped, this fails harmlessly.
        let _ = self.tx.send(Out::Close).await;
    }

    fn peer(&self) -> String {
        self.peer.clone()
    }
}

async fn writer(
    mut half: OwnedWriteHalf,
    mut rx: mpsc::Receiver<Out>,
    max_fragment: usize,
    shared: Arc<Shared>,
) {
    let mut batch: Vec<Payload> = Vec::with_capacity(WRITE_BATCH);
    let mut closing = false;
    while !closing {
        match rx.recv().await {
            Some(Out::Message(p)) => batch.push(p),
            Some(Out::Close) | None => break,
        }
        while batch.len() < WRITE_BATCH {
            match rx.try_recv() {
                Ok(Out::Message(p)) => batch.push(p),
                Ok(Out::Close) => {
                    closing = true;
                    break;
                }
                Err(_) => break,
            }
        }
        let pieces: Vec<Vec<&[u8]>> = batch.iter().map(Payload::pieces).collect();
        let segments: Vec<_> = pieces.iter().flat_map(|p| frame(p, max_fragment)).collect();
        let slices: Vec<&[u8]> = segments.iter().map(|s| s.as_bytes()).collect();
        let result = write_all_vectored(&mut half, &slices).await;
        drop(slices);
        drop(segments);
        drop(pieces);
        batch.clear();
        if let Err(e) = result {
            tracing::debug!(error = %e, "write failed; closing");
            break;
        }
    }
    shared.close();
    let _ = half.shutdown().await;
}

/// Writes every slice, in order, with as few system calls as possible.
pub(crate) async fn write_all_vectored<W: AsyncWrite + Unpin>(
    w: &mut W,
    slices: &[&[u8]],
) -> std::io::Result<()> {
    let mut idx = 0usize;
    let mut off = 0usize;
    while idx < slices.len() {
        let mut iov = Vec::with_capacity((slices.len() - idx).min(MAX_IOVECS));
        iov.push(IoSlice::new(&slices[idx][off..]));
        iov.extend(
            slices[idx + 1..]
                .iter()
                .take(MAX_IOVECS - 1)
                .map(|s| IoSlice::new(s)),
        );
        let mut n = w.write_vectored(&iov).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while n > 0 && idx < slices.len() {
            let left = slices[idx].len() - off;
            if n >= left {
                n -= left;
                idx += 1;
                off = 0;
            } else {
                off += n;
                n = 0;
            }
        }
        while idx < slices.len() && slices[idx].len() == off {
            idx += 1;
            off = 0;
        }
    }
    w.flush().await
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
