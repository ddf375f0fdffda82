//! The async RPC client.

//!
//! * `mod.rs`: the [`Client`], its settings, and the reply decoding;
//! * `source.rs`: where its connections come from.

mod source;

use parking_lot::Mutex;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rpcrdma_xdr::{Decoder, Payload, PayloadEncoder, XdrError};
use tokio::time::{timeout_at, Instant};
use tracing::Instrument;

use crate::auth::Credential;
use crate::backchannel::Backchannels;
use crate::client_key::ClientKey;
use crate::codec::{Marshal, Unmarshal};
use crate::conn::{ConnOps, Connection, Outcome, ServeLimits, SharedXids, XidAlloc};
use crate::error::{MessageError, RpcError, TransportError};
use crate::msg::{
    decode_header, AcceptedStatus, CallHeader, Header, OpaqueAuth, RejectedReply, ReplyBody,
};
use crate::service::Services;
use crate::transport::{CallHints, Connector};
use crate::util::{lock, Chain};
use source::{Bound, ConnSource, Fixed, Reconnecting, SourceError};

/// Client settings. Defaults are documented on each field.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Time a call may take in total, across reconnects (default 30 s).
    pub timeout: Duration,
    /// Calls outstanding at once; more wait for a slot (default 128).
    /// The transport may allow fewer (RDMA credits).
    pub max_in_flight: usize,
    /// How many times a call is sent again on a new connection after the
    /// connection it was sent on is lost (default 2). A failed connection
    /// attempt counts as one try.
    pub max_retransmits: u32,
    /// Pause before reconnecting after a connection is lost (default 100 ms).
    pub reconnect_delay: Duration,
    /// Credential sent with every call (default `AUTH_NONE`).
    pub credential: Credential,
    /// Programs this client serves to the peer on its connections
    /// (reverse direction; default none). When there are any, the client
    /// enables reverse-direction calls on every new connection before its
    /// first call ([`crate::Transport::enable_backchannel`], RFC 8167 §6);
    /// its Upper Layer then tells the server (e.g. NFSv4.1
    /// `CREATE_SESSION`). With none, reverse-direction calls are refused
    /// by a transport that gates them (RPC-over-RDMA: `RDMA_ERROR`) and
    /// answered `PROG_UNAVAIL` otherwise.
    pub services: Arc<Services>,
    /// Concurrency limit for those reverse-direction calls.
    pub serve_limits: ServeLimits,
    /// The first XID of a client made by [`Client::new`] or
    /// [`Client::connect`] (default: a random value). Fixing it makes runs
    /// reproducible (traces, tests). Clients on a server's connections
    /// share the server's reverse-direction XIDs instead
    /// (`ServerConfig::first_callback_xid`).
    pub first_xid: Option<u32>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            max_in_flight: 128,
            max_retransmits: 2,
            reconnect_delay: Duration::from_millis(100),
            credential: Credential::None,
            services: Arc::new(Services::new()),
            serve_limits: ServeLimits {
                per_connection: 16,
                global: None,
            },
            first_xid: None,
        }
    }
}

struct ClientInner {
    source: Box<dyn ConnSource>,
    /// Shared with every other client sending on the same connections, so
    /// XIDs are unique among all their outstanding calls.
    xids: SharedXids,
    in_flight: crate::Limit,
    config: ClientConfig,
    /// Where calls are encoded (no allocation per call; see
    /// [`PayloadEncoder::in_arena`]).
    arena: Mutex<bytes::BytesMut>,
}

impl Drop for ClientInner {
    fn drop(&mut self) {
        self.source.shutdown();
    }
}

/// An async ONC RPC client (cheap to clone; clones share connections,
/// XIDs and the in-flight limit).
///
/// Every call ends in exactly one result. XIDs are unique among the
/// client's outstanding calls and start at a random value. If the
/// connection is lost, outstanding calls are sent again on a new
/// connection with the same XID, up to
/// [`ClientConfig::max_retransmits`] times. Dropping a call's future
/// cancels it: its reply, if one comes, is discarded, and the transport's
/// `release` runs in the background.
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
    cred: OpaqueAuth,
    timeout: Duration,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("timeout", &self.timeout)
            .field("cred", &self.cred.flavor)
            .finish_non_exhaustive()
    }
}

/// Releases a call's resources if the call's future is dropped early.
struct CallGuard {
    conn: Option<Arc<dyn ConnOps>>,
    xid: u32,
    /// Whether the wait is still registered (the poll that returned the
    /// outcome removed it).
    waiting: bool,
}

impl CallGuard {
    /// Stops waiting on the connection and awaits the transport's release
    /// (at once when it needs no waiting).
    async fn finish(&mut self) {
        if let Some(c) = self.conn.take() {
            if self.waiting {
                c.unregister(self.xid);
            }
            if !c.try_release(self.xid) {
                c.release(self.xid).await;
            }
        }
    }

    /// Waits for the call's outcome (`None`: the connection was lost).
    async fn outcome(&mut self) -> Option<Outcome> {
        let c = self.conn.as_ref()?;
        let xid = self.xid;
        let r = std::future::poll_fn(|cx| c.poll_outcome(xid, cx)).await;
        self.waiting = false;
        r
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if let Some(c) = self.conn.take() {
            if self.waiting {
                c.unregister(self.xid);
            }
            let xid = self.xid;
            if !c.try_release(xid) {
                if let Ok(rt) = tokio::runtime::Handle::try_current() {
                    rt.spawn(async move { c.release(xid).await });
                }
            }
        }
    }
}

/// Runs `fut` until `deadline`: polled once right away, and put under a
/// timer only if it has to wait (most sends complete at once).
async fn until<F: Future>(deadline: Instant, fut: F) -> Result<F::Output, ()> {
    let mut fut = std::pin::pin!(fut);
    let first = std::future::poll_fn(|cx| std::task::Poll::Ready(fut.as_mut().poll(cx))).await;
    match first {
        std::task::Poll::Ready(v) => Ok(v),
        std::task::Poll::Pending => timeout_at(deadline, fut).await.map_err(|_| ()),
    }
}

/// Frees an XID when its call ends, however it ends.
struct XidGuard<'a> {
    inner: &'a ClientInner,
    xid: u32,
}

impl Drop for XidGuard<'_> {
    fn drop(&mut self) {
        lock(&self.inner.xids).free(self.xid);
    }
}

impl Client {
    /// A client that connects with `connector` when first used and
    /// reconnects after a connection is lost.
    ///
    /// If `config.services` is not empty, every connection takes
    /// reverse-direction calls from before its first call (RFC 8167 §6).
    pub fn new<C: Connector>(connector: C, config: ClientConfig) -> Self {
        let xids = XidAlloc::shared(config.first_xid);
        let source = Reconnecting {
            connector,
            current: tokio::sync::Mutex::new(None),
            snapshot: Mutex::new(None),
            services: config.services.clone(),
            limits: config.serve_limits.clone(),
            xids: xids.clone(),
        };
        Self::build(Box::new(source), xids, config)
    }

    /// Like [`Client::new`], but connects now so that an unreachable server
    /// is reported here.
    pub async fn connect<C: Connector>(
        connector: C,
        config: ClientConfig,
    ) -> Result<Self, RpcError> {
        let timeout = config.timeout;
        let c = Self::new(connector, config);
        match c.inner.source.get(Instant::now() + timeout).await {
            Ok(_) => Ok(c),
            Err(SourceError::Connect(e)) => Err(RpcError::Connect(e)),
            Err(_) => Err(RpcError::Connect(TransportError::Io(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no connection within the client timeout of {timeout:?}"),
            )))),
        }
    }

    pub(crate) fn on_connection(conn: Arc<dyn ConnOps>, config: ClientConfig) -> Self {
        let xids = conn.xids().clone();
        Self::build(Box::new(Fixed(conn)), xids, config)
    }

    pub(crate) fn build(
        source: Box<dyn ConnSource>,
        xids: SharedXids,
        config: ClientConfig,
    ) -> Self {
        let cred = config.credential.to_opaque_auth();
        let timeout = config.timeout;
        Self {
            inner: Arc::new(ClientInner {
                source,
                xids,
                in_flight: crate::Limit::new(config.max_in_flight),
                config,
                arena: Mutex::new(bytes::BytesMut::new()),
            }),
            cred,
            timeout,
        }
    }

    /// This client with another credential (shares everything else).
    #[must_use]
    pub fn with_credential(&self, cred: &Credential) -> Self {
        Self {
            cred: cred.to_opaque_auth(),
            ..self.clone()
        }
    }

    /// This client with another per-call timeout (shares everything else).
    #[must_use]
    pub fn with_timeout(&self, timeout: Duration) -> Self {
        Self {
            timeout,
            ..self.clone()
        }
    }

    /// The connection in use, if one is open.
    pub fn connection(&self) -> Option<Connection> {
        self.inner.source.current().map(|ops| Connection { ops })
    }

    /// Calls procedure `proc_` of program `prog` version `vers` and decodes
    /// its results.
    ///
    /// `args` is encoded before this returns (so it need not outlive the
    /// call); DDP-eligible items it marks travel out of line. `hints` come
    /// from the program's Upper Layer Binding ([`CallHints::new`] if it has
    /// none). The future resolves once, after the transport has released
    /// the call.
    pub fn call<'a, A, R>(
        &'a self,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: &A,
        hints: &'a CallHints,
    ) -> impl Future<Output = Result<R, RpcError>> + Send + 'a
    where
        A: Marshal + ?Sized,
        R: Unmarshal + 'a,
    {
        let xid = lock(&self.inner.xids).alloc();
        let xid_guard = XidGuard {
            inner: &self.inner,
            xid,
        };
        let header = CallHeader {
            xid,
            prog,
            vers,
            proc_,
            cred: self.cred.clone(),
            verf: OpaqueAuth::none(),
        };
        let message = {
            let mut arena = lock(&self.inner.arena);
            let mut pe = PayloadEncoder::in_arena(&mut arena, header.encoded_len() + 64);
            let mut enc = pe.encoder();
            header.encode(&mut enc);
            args.marshal(&mut enc);
            pe.finish_into(&mut arena)
        };
        let span = tracing::debug_span!(
            "rpc_call",
            xid = format_args!("{xid:#010x}"),
            prog,
            vers,
            proc_
        );
        async move {
            let reply = self.exchange(xid, message, hints).await;
            drop(xid_guard);
            decode_reply(&reply?, prog, vers, proc_)
        }
        .instrument(span)
    }

    /// Calls procedure 0 (NULL) of a program version. Its results are void
    /// (RFC 5531 §12.1), which the hints say, so an RDMA transport provides
    /// no Reply chunk for it.
    pub async fn null(&self, prog: u32, vers: u32) -> Result<(), RpcError> {
        // `CallHints::new().max_results(0)`, built once rather than in
        // every call's future.
        static NULL_HINTS: CallHints = CallHints::NULL;
        self.call(prog, vers, 0, &(), &NULL_HINTS).await
    }

    async fn exchange(
        &self,
        xid: u32,
        message: Payload,
        hints: &CallHints,
    ) -> Result<Payload, RpcError> {
        let inner = &self.inner;
        let deadline = Instant::now() + self.timeout;
        let timed_out = || RpcError::Timeout {
            xid,
            after: self.timeout,
        };
        // A free slot is taken without a future (or a timer).
        let _slot = match inner.in_flight.try_take() {
            Some(s) => s,
            None => timeout_at(deadline, inner.in_flight.take())
                .await
                .map_err(|_| timed_out())?,
        };
        let mut sends = 0u32;
        let mut tries = 0u32;
        let reconnects = inner.source.can_reconnect();
        loop {
            if tries > 0 {
                if tries > inner.config.max_retransmits || !reconnects {
                    return Err(RpcError::ConnectionLost {
                        xid,
                        attempts: sends,
                    });
                }
                if timeout_at(deadline, tokio::time::sleep(inner.config.reconnect_delay))
                    .await
                    .is_err()
                {
                    return Err(timed_out());
                }
            }
            tries += 1;
            let ready = inner.source.ready();
            let got = match ready {
                Some(c) => Ok(c),
                None => inner.source.get(deadline).await,
            };
            let conn = match got {
                Err(SourceError::Timeout) => return Err(timed_out()),
                Err(SourceError::NotReady) => return Err(RpcError::BackchannelNotReady { xid }),
                Err(SourceError::Shutdown) => return Err(RpcError::Shutdown),
                Err(SourceError::Gone { key, waited }) => {
                    return Err(RpcError::ClientGone {
                        xid,
                        key,
                        waited,
                        attempts: sends,
                    })
                }
                Err(SourceError::Connect(e)) => {
                    tracing::debug!(error = %Chain(&e), "no connection");
                    if sends == 0 && (tries > inner.config.max_retransmits || !reconnects) {
                        return Err(RpcError::Connect(e));
                    }
                    continue;
                }
                Ok(c) => c,
            };
            if !conn.register(xid, deadline) {
                continue;
            }
            let mut guard = CallGuard {
                conn: Some(conn.clone()),
                xid,
                waiting: true,
            };
            sends += 1;
            if sends > 1 {
                tracing::debug!(conn = conn.id(), "retransmitting on a new connection");
            }
            let sent = match conn.try_send_call(xid, message.clone(), hints) {
                Ok(r) => Ok(r),
                Err(message) => until(deadline, conn.send_call(xid, message, hints)).await,
            };
            match sent {
                Err(()) => {
                    guard.finish().await;
                    return Err(timed_out());
                }
                Ok(Err(TransportError::BackchannelNotReady)) => {
                    // Our transport refused a reverse-direction call (RFC
                    // 8167 §6); the connection is fine.
                    guard.finish().await;
                    return Err(RpcError::BackchannelNotReady { xid });
                }
                Ok(Err(e)) => {
                    tracing::debug!(error = %Chain(&e), "send failed; dropping the connection");
                    conn.abort();
                    guard.finish().await;
                    continue;
                }
                Ok(Ok(())) => {}
            }
            // No timer of our own: the connection's reader ends the wait
            // at the deadline (Outcome::TimedOut).
            let outcome = guard.outcome().await;
            guard.finish().await;
            match outcome {
                Some(Outcome::TimedOut) => return Err(timed_out()),
                Some(Outcome::Reply(reply)) => return Ok(reply),
                Some(Outcome::Failed(source)) => return Err(RpcError::Transport { xid, source }),
                None => {
                    tracing::debug!(conn = conn.id(), "connection lost before the reply");
                }
            }
        }
    }
}

/// Decodes a reply message into results or the matching error.
pub fn decode_reply<R: Unmarshal>(
    message: &Payload,
    prog: u32,
    vers: u32,
    proc_: u32,
) -> Result<R, RpcError> {
    let mut dec = Decoder::with_ddp(message);
    let header = match decode_header(&mut dec).map_err(RpcError::BadReply)? {
        Header::Reply(r) => r,
        Header::Call(c) => {
            return Err(RpcError::BadReply(MessageError::BadMsgType {
                xid: c.xid,
                value: 0,
            }))
        }
    };
    match header.body {
        ReplyBody::Accepted { status, .. } => match status {
            AcceptedStatus::Success => {
                let r = R::unmarshal(&mut dec).map_err(RpcError::Results)?;
                check_end(&dec, message).map_err(RpcError::Results)?;
                Ok(r)
            }
            AcceptedStatus::ProgUnavail => Err(RpcError::ProgUnavail { prog }),
            AcceptedStatus::ProgMismatch { low, high } => Err(RpcError::ProgMismatch {
                prog,
                vers,
                low,
                high,
            }),
            AcceptedStatus::ProcUnavail => Err(RpcError::ProcUnavail { prog, vers, proc_ }),
            AcceptedStatus::GarbageArgs => Err(RpcError::GarbageArgs),
            AcceptedStatus::SystemErr => Err(RpcError::SystemErr),
            AcceptedStatus::Other(s) => Err(RpcError::UnknownAcceptStat(s)),
        },
        ReplyBody::Denied(RejectedReply::RpcMismatch { low, high }) => {
            Err(RpcError::RpcMismatch { low, high })
        }
        ReplyBody::Denied(RejectedReply::AuthError(stat)) => Err(RpcError::Auth(stat)),
    }
}

/// Like [`Decoder::expect_end`], except that Write chunks the responder
/// returned unused (empty, after the last one it filled; RFC 8166
/// §4.4.6.2) need not be consumed.
fn check_end(dec: &Decoder<'_>, message: &Payload) -> Result<(), XdrError> {
    match dec.expect_end() {
        Err(XdrError::DdpUnconsumed { count }) => {
            let unused = message
                .items()
                .iter()
                .rev()
                .take_while(|i| i.inline_offset.is_none() && i.data.is_empty())
                .count();
            if count > unused {
                return Err(XdrError::DdpUnconsumed { count });
            }
            if !dec.is_empty() {
                return Err(XdrError::TrailingBytes {
                    offset: dec.position(),
                    count: dec.rest().len(),
                });
            }
            Ok(())
        }
        other => other,
    }
}

/// Clients over connections that exist already (a server's reverse
/// direction).
impl Connection {
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
}

impl Backchannels {
    /// A client for reverse-direction calls to the client named `key`,
    /// on whichever of its connections is bound to `key` when each call
    /// is sent, surviving the loss of that connection (RFC 8167 §5.4: a
    /// call waits for the key to be bound again, at most
    /// [`Backchannels::reconnect_wait`], and is sent there with the same
    /// XID). `config.timeout` bounds each call in
    /// total; `config.max_retransmits` bounds how many times it is sent
    /// again on a new connection.
    pub fn client(&self, key: impl Into<ClientKey>, config: ClientConfig) -> Client {
        let source = Bound {
            registry: self.clone(),
            key: key.into(),
        };
        Client::build(Box::new(source), self.xids().clone(), config)
    }
}
