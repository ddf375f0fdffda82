//! An in-memory transport pair for tests (feature `test-transport`).
//!
//! A test double of the RPC-over-RDMA hand-off, not a model of
//! RPC-over-RDMA: the protocol's reduction rules, chunk limits and errors
//! are the engine's (`rpcrdma-engine`, which this crate does not depend
//! on) and are tested there and end to end in `rpcrdma-transport`. This
//! pair only carries a program's DDP-eligible items out of band and checks
//! that its Upper Layer Binding's hints would be enough over RDMA, with no
//! header encoding, no credits and no memory registration:
//!
//! * a call's DDP-eligible arguments travel beside the inline stream as
//!   Read chunks (position + data) and are rebuilt with
//!   [`Payload::from_read_chunks`];
//! * the requester provisions one Write chunk per
//!   [`CallHints::ddp_results`] entry and a Reply chunk when
//!   [`CallHints::max_reply_size`] exceeds the inline threshold; the
//!   responder fills the Write chunks in order (an item larger than its
//!   chunk fails the call, as `RDMA_ERROR` would), returns unused ones
//!   empty, and must fit the rest of the reply inline or in the Reply chunk;
//!   the requester rebuilds the reply with [`Payload::from_write_chunks`];
//! * [`CallHints::no_reduce`] sends everything inline (or as a Long
//!   message) in both directions.
//!
//! So a program whose Upper Layer Binding is wrong — a missing Write chunk
//! hint, a maximum reply size too small, a chunk where the binding allows
//! none — fails here as it would over RDMA. It also records
//! [`Transport::release`] calls and can drop the connection on demand
//! (fault injection).
//!
//! Reverse-direction readiness (RFC 8167 §6) is gated as over RDMA: the
//! client end answers a call with an error until
//! [`Transport::enable_backchannel`], and the server end refuses to send
//! one ([`TransportError::BackchannelNotReady`]) until
//! [`Transport::peer_backchannel_ready`].

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use rpcrdma_xdr::{pad_len, Payload};
use tokio::sync::{mpsc, Notify};

use crate::error::TransportError;
use crate::msg::{peek_kind, MsgType};
use crate::transport::{CallHints, Connector, Received, Transport};
use crate::util::lock;

/// Settings of an in-memory pair.
#[derive(Debug, Clone)]
pub struct MemConfig {
    /// Inline threshold in bytes, both directions (default 1024, the
    /// RPC-over-RDMA Version One default).
    pub inline_threshold: usize,
    /// Messages queued per direction before senders wait (default 256).
    pub queue: usize,
    /// The address the server end reports for its peer
    /// ([`Transport::peer_addr`]; default none), so tests can make a
    /// client that reconnects look like the same host to the duplicate
    /// request cache.
    pub client_addr: Option<std::net::SocketAddr>,
}

impl Default for MemConfig {
    fn default() -> Self {
        Self {
            inline_threshold: 1024,
            queue: 256,
            client_addr: None,
        }
    }
}

/// What crossed the "wire", by message form.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemStats {
    /// Messages sent whole inline.
    pub inline: usize,
    /// Calls that carried Read chunks.
    pub read_chunks: usize,
    /// Replies that filled at least one Write chunk.
    pub write_chunks: usize,
    /// Replies sent through a Reply chunk.
    pub reply_chunks: usize,
    /// Calls sent as Long messages (the whole call pulled by the peer).
    pub long_calls: usize,
    /// Calls failed by the responder side (chunk too small, no room).
    pub errors: usize,
}

#[derive(Debug)]
enum Wire {
    Call {
        xid: u32,
        inline: Bytes,
        read_chunks: Vec<(u32, Bytes)>,
        write_chunks: Vec<u32>,
        reply_chunk: Option<u32>,
    },
    Reply {
        xid: u32,
        inline: Bytes,
        write_chunks: Vec<Bytes>,
    },
    Error {
        xid: u32,
        error: MemCallError,
    },
    Close,
}

/// Why one end of a pair failed a call, as RPC-over-RDMA's `RDMA_ERROR`
/// would: the call fails with [`TransportError::Backend`] holding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MemCallError {
    /// A DDP-eligible result is larger than the Write chunk the requester
    /// provisioned for it ([`CallHints::ddp_results`]).
    #[error("a DDP-eligible result is larger than its Write chunk")]
    WriteChunkTooSmall,
    /// The reply does not fit inline and the requester provisioned no
    /// Reply chunk large enough ([`CallHints::max_reply_size`]).
    #[error("the reply exceeds the inline threshold and no large enough Reply chunk was provided")]
    NoReplyChunk,
    /// A reverse-direction call reached a client end that did not enable
    /// them ([`Transport::enable_backchannel`], RFC 8167 §6).
    #[error(
        "reverse-direction call refused: the client has not enabled its backchannel (RFC 8167 §6)"
    )]
    BackchannelRefused,
}

/// The responder's record of a received call (its chunks).
#[derive(Debug)]
pub struct MemCallContext {
    xid: u32,
    write_chunks: Vec<u32>,
    reply_chunk: Option<u32>,
}

struct Side {
    stats: Mutex<MemStats>,
    released: Mutex<Vec<u32>>,
    closed: AtomicBool,
    notify: Notify,
    /// The end that connected (its received calls are reverse-direction).
    client: bool,
    /// Client end: takes reverse-direction calls. Server end: may send them.
    backchannel: AtomicBool,
}

/// One end of an in-memory connection.
pub struct MemTransport {
    tx: mpsc::Sender<Wire>,
    rx: tokio::sync::Mutex<mpsc::Receiver<Wire>>,
    me: Arc<Side>,
    peer_side: Arc<Side>,
    config: MemConfig,
    name: String,
}

impl std::fmt::Debug for MemTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTransport")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

static PAIRS: AtomicUsize = AtomicUsize::new(0);

/// A connected pair: (client end, server end). Either end may send calls:
/// the server end's calls are reverse-direction calls, gated as the module
/// documentation describes.
pub fn pair(config: MemConfig) -> (MemTransport, MemTransport) {
    let n = PAIRS.fetch_add(1, Ordering::Relaxed);
    let (atx, arx) = mpsc::channel(config.queue.max(1));
    let (btx, brx) = mpsc::channel(config.queue.max(1));
    let side = |client| {
        Arc::new(Side {
            stats: Mutex::new(MemStats::default()),
            released: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            notify: Notify::new(),
            client,
            backchannel: AtomicBool::new(false),
        })
    };
    let (sa, sb) = (side(true), side(false));
    let a = MemTransport {
        tx: atx,
        rx: tokio::sync::Mutex::new(brx),
        me: sa.clone(),
        peer_side: sb.clone(),
        config: config.clone(),
        name: format!("mem {n}a"),
    };
    let b = MemTransport {
        tx: btx,
        rx: tokio::sync::Mutex::new(arx),
        me: sb,
        peer_side: sa,
        config,
        name: format!("mem {n}b"),
    };
    (a, b)
}

impl MemTransport {
    /// What this side has sent so far.
    pub fn stats(&self) -> MemStats {
        *lock(&self.me.stats)
    }

    /// A handle that can read this side's statistics and releases and
    /// break the connection after the transport was handed to a client or
    /// server.
    pub fn probe(&self) -> MemProbe {
        MemProbe {
            me: self.me.clone(),
            peer: self.peer_side.clone(),
        }
    }

    fn bump(&self, f: impl FnOnce(&mut MemStats)) {
        f(&mut lock(&self.me.stats));
    }

    async fn put(&self, w: Wire) -> Result<(), TransportError> {
        if self.me.closed.load(Ordering::Acquire) || self.peer_side.closed.load(Ordering::Acquire) {
            return Err(TransportError::Closed);
        }
        self.tx.send(w).await.map_err(|_| TransportError::Closed)
    }
}

/// Observes and breaks a [`MemTransport`] from outside.
#[derive(Clone)]
pub struct MemProbe {
    me: Arc<Side>,
    peer: Arc<Side>,
}

impl std::fmt::Debug for MemProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemProbe").finish_non_exhaustive()
    }
}

impl MemProbe {
    /// XIDs passed to [`Transport::release`] on this side, in order.
    pub fn released(&self) -> Vec<u32> {
        lock(&self.me.released).clone()
    }

    /// What this side has sent so far.
    pub fn stats(&self) -> MemStats {
        *lock(&self.me.stats)
    }

    /// Drops the connection: both sides' `recv` fail at once.
    pub fn break_connection(&self) {
        for s in [&self.me, &self.peer] {
            s.closed.store(true, Ordering::Release);
            s.notify.notify_waiters();
        }
    }
}

/// Copies `payload` into one inline stream, except the positioned items
/// for which `keep_out(index, len)` holds: their data is left out (the
/// length word stays) and returned with its offset in the new stream.
fn reduce(
    payload: &Payload,
    keep_out: impl Fn(usize, usize) -> bool,
) -> (Bytes, Vec<(usize, Bytes)>) {
    let inline = payload.inline();
    let mut out = BytesMut::with_capacity(payload.stream_len());
    let mut moved = Vec::new();
    let mut at = 0usize;
    for (i, (_, item)) in payload.item_positions().enumerate() {
        let off = item.inline_offset.unwrap_or(at).clamp(at, inline.len());
        out.extend_from_slice(&inline[at..off]);
        at = off;
        if keep_out(i, item.data.len()) {
            moved.push((out.len(), item.data.clone()));
        } else {
            out.extend_from_slice(&item.data);
            out.extend_from_slice(&[0u8; 4][..pad_len(item.data.len())]);
        }
    }
    out.extend_from_slice(&inline[at..]);
    (out.freeze(), moved)
}

impl Transport for MemTransport {
    type CallContext = MemCallContext;

    async fn send_call(
        &self,
        xid: u32,
        message: Payload,
        hints: &CallHints,
    ) -> Result<(), TransportError> {
        if !self.me.client && !self.me.backchannel.load(Ordering::Acquire) {
            return Err(TransportError::BackchannelNotReady);
        }
        let threshold = self.config.inline_threshold;
        let no_reduce = hints.is_no_reduce();
        let (inline, moved) = reduce(&message, |_, _| !no_reduce);
        // Read chunk positions count in the full stream.
        let mut placed = 0usize;
        let mut read_chunks = Vec::with_capacity(moved.len());
        for (off, data) in moved {
            read_chunks.push(((off + placed) as u32, data.clone()));
            placed += rpcrdma_xdr::round_up(data.len());
        }
        if inline.len() > threshold {
            // A Long call: the peer pulls the whole (reduced) message.
            self.bump(|s| s.long_calls += 1);
        } else if read_chunks.is_empty() {
            self.bump(|s| s.inline += 1);
        } else {
            self.bump(|s| s.read_chunks += 1);
        }
        let write_chunks = if no_reduce {
            Vec::new()
        } else {
            hints.ddp_results().to_vec()
        };
        // A Reply chunk when the largest reply may not fit inline; with
        // Write chunks and a stated reduced maximum, that one decides (as
        // over RDMA, spec note N13).
        let largest = match hints.max_reduced_reply_size() {
            Some(r) if !write_chunks.is_empty() => Some(r),
            _ => hints.max_reply_size(),
        };
        let reply_chunk = hints
            .max_reply_size()
            .filter(|_| largest.is_some_and(|m| m as usize > threshold));
        self.put(Wire::Call {
            xid,
            inline,
            read_chunks,
            write_chunks,
            reply_chunk,
        })
        .await
    }

    async fn send_reply(
        &self,
        context: MemCallContext,
        message: Payload,
    ) -> Result<(), TransportError> {
        let n = context.write_chunks.len();
        let too_big = message
            .item_positions()
            .enumerate()
            .any(|(i, (_, item))| i < n && item.data.len() > context.write_chunks[i] as usize);
        if too_big {
            self.bump(|s| s.errors += 1);
            return self
                .put(Wire::Error {
                    xid: context.xid,
                    error: MemCallError::WriteChunkTooSmall,
                })
                .await;
        }
        let (inline, moved) = reduce(&message, |i, _| i < n);
        let mut write_chunks = vec![Bytes::new(); n];
        for (i, (_, data)) in moved.into_iter().enumerate() {
            write_chunks[i] = data;
        }
        if inline.len() > self.config.inline_threshold {
            match context.reply_chunk {
                Some(max) if inline.len() <= max as usize => {
                    self.bump(|s| s.reply_chunks += 1);
                }
                _ => {
                    self.bump(|s| s.errors += 1);
                    return self
                        .put(Wire::Error {
                            xid: context.xid,
                            error: MemCallError::NoReplyChunk,
                        })
                        .await;
                }
            }
        } else if write_chunks.iter().any(|c| !c.is_empty()) {
            self.bump(|s| s.write_chunks += 1);
        } else {
            self.bump(|s| s.inline += 1);
        }
        self.put(Wire::Reply {
            xid: context.xid,
            inline,
            write_chunks,
        })
        .await
    }

    async fn recv(&self) -> Result<Received<MemCallContext>, TransportError> {
        let mut rx = self.rx.lock().await;
        loop {
            let notified = self.me.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.me.closed.load(Ordering::Acquire) {
                return Err(TransportError::Closed);
            }
            let w = tokio::select! {
                w = rx.recv() => w,
                _ = notified => return Err(TransportError::Closed),
            };
            match w {
                None | Some(Wire::Close) => {
                    self.me.closed.store(true, Ordering::Release);
                    return Err(TransportError::Closed);
                }
                Some(Wire::Call {
                    xid,
                    inline,
                    read_chunks,
                    write_chunks,
                    reply_chunk,
                }) => {
                    if peek_kind(&inline).map(|k| k.1) != Some(MsgType::CALL) {
                        continue;
                    }
                    if self.me.client && !self.me.backchannel.load(Ordering::Acquire) {
                        // As the RDMA engine does (RFC 8167 §6).
                        self.bump(|s| s.errors += 1);
                        let _ = self
                            .put(Wire::Error {
                                xid,
                                error: MemCallError::BackchannelRefused,
                            })
                            .await;
                        continue;
                    }
                    let message = match Payload::from_read_chunks(inline, read_chunks) {
                        Ok(m) => m,
                        Err(e) => {
                            tracing::debug!(error = %e, "bad Read chunk positions");
                            continue;
                        }
                    };
                    return Ok(Received::Call {
                        message,
                        context: MemCallContext {
                            xid,
                            write_chunks,
                            reply_chunk,
                        },
                    });
                }
                Some(Wire::Reply {
                    xid,
                    inline,
                    write_chunks,
                }) => {
                    return Ok(Received::Reply {
                        xid,
                        message: Payload::from_write_chunks(inline, write_chunks),
                    });
                }
                Some(Wire::Error { xid, error }) => {
                    return Ok(Received::CallFailed {
                        xid,
                        error: TransportError::Backend(Box::new(error)),
                    });
                }
            }
        }
    }

    async fn release(&self, xid: u32) {
        lock(&self.me.released).push(xid);
    }

    async fn close(&self) {
        if !self.me.closed.swap(true, Ordering::AcqRel) {
            let _ = self.tx.try_send(Wire::Close);
            self.peer_side.closed.store(true, Ordering::Release);
            self.peer_side.notify.notify_waiters();
        }
        self.me.notify.notify_waiters();
    }

    fn peer(&self) -> String {
        self.name.clone()
    }

    fn peer_addr(&self) -> Option<std::net::SocketAddr> {
        if self.me.client {
            None
        } else {
            self.config.client_addr
        }
    }

    fn enable_backchannel(&self) -> Result<(), TransportError> {
        if !self.me.client {
            return Err(TransportError::BackchannelUnsupported(
                "enable_backchannel is for the client end of a mem pair",
            ));
        }
        self.me.backchannel.store(true, Ordering::Release);
        Ok(())
    }

    fn peer_backchannel_ready(&self) -> Result<(), TransportError> {
        if self.me.client {
            return Err(TransportError::BackchannelUnsupported(
                "peer_backchannel_ready is for the server end of a mem pair",
            ));
        }
        self.me.backchannel.store(true, Ordering::Release);
        Ok(())
    }
}

/// Makes in-memory connections to a [`MemListener`].
#[derive(Clone)]
pub struct MemConnector {
    config: MemConfig,
    tx: mpsc::UnboundedSender<MemTransport>,
    probes: Arc<Mutex<Vec<MemProbe>>>,
}

impl std::fmt::Debug for MemConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemConnector").finish_non_exhaustive()
    }
}

impl MemConnector {
    /// Probes of the client side of every connection made so far.
    pub fn probes(&self) -> Vec<MemProbe> {
        lock(&self.probes).clone()
    }
}

/// Accepts connections made by a [`MemConnector`].
#[derive(Debug)]
pub struct MemListener {
    rx: mpsc::UnboundedReceiver<MemTransport>,
}

impl MemListener {
    /// The server side of the next connection; `None` once every
    /// connector is gone.
    pub async fn accept(&mut self) -> Option<MemTransport> {
        self.rx.recv().await
    }
}

/// A connector/listener pair for in-memory connections.
pub fn listener(config: MemConfig) -> (MemConnector, MemListener) {
    let (tx, rx) = mpsc::unbounded_channel();
    (
        MemConnector {
            config,
            tx,
            probes: Arc::new(Mutex::new(Vec::new())),
        },
        MemListener { rx },
    )
}

impl Connector for MemConnector {
    type Transport = MemTransport;

    async fn connect(&self) -> Result<MemTransport, TransportError> {
        let (client, server) = pair(self.config.clone());
        self.tx.send(server).map_err(|_| TransportError::Connect {
            addr: "mem".to_owned(),
            source: std::io::ErrorKind::ConnectionRefused.into(),
        })?;
        lock(&self.probes).push(client.probe());
        Ok(client)
    }
}
