//! Reverse-direction calls that outlive a connection (RFC 8167 §5.4).
//!
//! A server cannot reconnect to a client: when the connection carrying a
//! reverse-direction call is lost, the call can only wait for the client
//! to connect again and be sent there with the same XID. Which new
//! connection belongs to "the same client" is the Upper Layer's knowledge
//! (NFSv4.1 binds connections to a session with `CREATE_SESSION` or
//! `BIND_CONN_TO_SESSION`), so the Upper Layer names the client with a
//! [`ClientKey`] when it declares readiness
//! ([`crate::Connection::peer_ready_for_callbacks`]).
//!
//! [`Backchannels`] is the server's registry of those bindings. A client
//! from [`Backchannels::client`] sends each call on the connection
//! currently bound to its key; if there is none, or the connection is
//! lost before the reply, the call waits until a connection is bound to
//! the key again — at most [`crate::ServerConfig::callback_reconnect_wait`]
//! (default 30 s) and never past the call's own timeout — and is then sent
//! there with the same XID, up to [`crate::ClientConfig::max_retransmits`]
//! times. Otherwise it fails with [`crate::RpcError::ClientGone`].
//!
//! Reverse-direction XIDs come from one allocator per registry, so a call
//! retransmitted on the client's new connection cannot collide with
//! another reverse-direction call already outstanding there.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::client::{Client, ClientConfig, ConnSource, SourceError};
use crate::conn::{ConnOps, Connection, SharedXids, XidAlloc};
use crate::error::TransportError;
use crate::service::BoxFuture;
use crate::util::lock;

/// The Upper Layer's name for one client, stable across its connections
/// (for NFSv4.1, its client ID or session ID). Opaque bytes; the Upper
/// Layer bounds their size when it decodes them.
///
/// ```
/// use rpcrdma_oncrpc::ClientKey;
/// let k = ClientKey::from(0x1234u64);
/// assert_eq!(k.as_bytes(), &[0, 0, 0, 0, 0, 0, 0x12, 0x34]);
/// assert_eq!(k.to_string(), "0000000000001234");
/// assert_eq!(ClientKey::new(&b"session-1"[..]), ClientKey::from(&b"session-1"[..]));
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientKey(Bytes);

impl ClientKey {
    /// A key from any bytes.
    pub fn new(bytes: impl Into<Bytes>) -> Self {
        Self(bytes.into())
    }

    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl From<u64> for ClientKey {
    /// The eight big-endian bytes of `id`.
    fn from(id: u64) -> Self {
        Self(Bytes::copy_from_slice(&id.to_be_bytes()))
    }
}

impl From<&[u8]> for ClientKey {
    fn from(b: &[u8]) -> Self {
        Self(Bytes::copy_from_slice(b))
    }
}

impl From<Vec<u8>> for ClientKey {
    fn from(b: Vec<u8>) -> Self {
        Self(Bytes::from(b))
    }
}

impl From<Bytes> for ClientKey {
    fn from(b: Bytes) -> Self {
        Self(b)
    }
}

impl fmt::Display for ClientKey {
    /// Lowercase hex.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0.iter() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for ClientKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ClientKey({self})")
    }
}

/// Why [`crate::Connection::peer_ready_for_callbacks`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackchannelError {
    /// Called on a client's connection. A client takes reverse-direction
    /// calls when its `ClientConfig::services` is not empty; only the
    /// server side declares its peer ready.
    #[error("peer_ready_for_callbacks is for a server's connection; a client takes reverse-direction calls when its ClientConfig::services is not empty")]
    ClientSide,
    /// The connection is closed; the client must reconnect and declare
    /// readiness on its new connection.
    #[error("the connection is closed; readiness must be declared on the client's new connection")]
    Closed,
    /// The transport cannot carry reverse-direction calls.
    #[error("the transport refused: {0}")]
    Transport(#[source] TransportError),
}

/// One key's binding.
struct Slot {
    conn: Option<Arc<dyn ConnOps>>,
    /// Bumped on every (re)binding; dropping it tells waiters the key was
    /// forgotten.
    changed: watch::Sender<u64>,
}

impl Slot {
    fn new() -> Self {
        Self {
            conn: None,
            changed: watch::channel(0).0,
        }
    }

    fn live(&self) -> Option<&Arc<dyn ConnOps>> {
        self.conn.as_ref().filter(|c| c.is_alive())
    }
}

struct Registry {
    wait: Duration,
    xids: SharedXids,
    slots: Mutex<HashMap<ClientKey, Slot>>,
    stop: watch::Sender<bool>,
}

/// A server's bindings of clients ([`ClientKey`]s) to their connections
/// that are ready for reverse-direction calls (cheap to clone; clones
/// share). Get it from [`crate::Server::backchannels`] or
/// [`crate::Connection::backchannels`].
///
/// Storage is bounded by the live connections plus the keys that calls
/// are waiting for: a binding whose connection is gone is dropped at the
/// next binding unless a call waits for it.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::time::Duration;
/// use rpcrdma_oncrpc::{ClientConfig, RpcError, Server, ServerConfig, Services};
///
/// let mut config = ServerConfig::default();
/// config.callback_reconnect_wait = Duration::from_millis(10);
/// let server = Server::new(Services::new(), config);
/// // No connection was ever declared ready for client 42: after the wait,
/// // the call fails.
/// let back = server.backchannels().client(42u64, ClientConfig::default());
/// let e = back.null(0x4000_0000, 1).await.unwrap_err();
/// assert!(matches!(e, RpcError::ClientGone { attempts: 0, .. }), "{e}");
/// # }
/// ```
#[derive(Clone)]
pub struct Backchannels {
    inner: Arc<Registry>,
}

impl fmt::Debug for Backchannels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<ClientKey> = lock(&self.inner.slots).keys().cloned().collect();
        f.debug_struct("Backchannels")
            .field("wait", &self.inner.wait)
            .field("keys", &keys)
            .finish()
    }
}

impl Backchannels {
    /// A registry whose calls wait at most `wait` for a connection and
    /// whose XIDs start at `first_xid` (random if `None`).
    pub(crate) fn new(wait: Duration, first_xid: Option<u32>) -> Self {
        Self {
            inner: Arc::new(Registry {
                wait,
                xids: XidAlloc::shared(first_xid),
                slots: Mutex::new(HashMap::new()),
                stop: watch::channel(false).0,
            }),
        }
    }

    pub(crate) fn xids(&self) -> &SharedXids {
        &self.inner.xids
    }

    /// How long a call waits for its client's connection.
    pub fn reconnect_wait(&self) -> Duration {
        self.inner.wait
    }

    /// A client for reverse-direction calls to the client named `key`,
    /// on whichever of its connections is bound to `key` when each call
    /// is sent, surviving the loss of that connection as the module
    /// documentation describes. `config.timeout` bounds each call in
    /// total; `config.max_retransmits` bounds how many times it is sent
    /// again on a new connection.
    pub fn client(&self, key: impl Into<ClientKey>, config: ClientConfig) -> Client {
        let source = Bound {
            registry: self.clone(),
            key: key.into(),
        };
        Client::build(Box::new(source), self.inner.xids.clone(), config)
    }

    /// The live connection bound to `key`, if any.
    pub fn connection(&self, key: &ClientKey) -> Option<Connection> {
        lock(&self.inner.slots)
            .get(key)
            .and_then(Slot::live)
            .map(|c| Connection { ops: c.clone() })
    }

    /// How many calls are waiting for a connection bound to `key`.
    pub fn waiting(&self, key: &ClientKey) -> usize {
        lock(&self.inner.slots)
            .get(key)
            .map_or(0, |s| s.changed.receiver_count())
    }

    /// Forgets `key` (the Upper Layer dropped that client, e.g. its
    /// session was destroyed): calls waiting for its connection fail with
    /// [`crate::RpcError::ClientGone`] now. A later declaration binds it
    /// again.
    pub fn forget(&self, key: &ClientKey) {
        let slot = lock(&self.inner.slots).remove(key);
        drop(slot);
    }

    /// Binds `key` to `conn` and wakes the calls waiting for it.
    pub(crate) fn bind(&self, key: ClientKey, conn: Arc<dyn ConnOps>) {
        let mut slots = lock(&self.inner.slots);
        // Drop bindings nobody can use any more.
        slots.retain(|k, s| *k == key || s.live().is_some() || s.changed.receiver_count() > 0);
        let slot = slots.entry(key).or_insert_with(Slot::new);
        let same = slot.conn.as_ref().is_some_and(|c| c.id() == conn.id());
        slot.conn = Some(conn);
        if !same {
            slot.changed.send_modify(|v| *v = v.wrapping_add(1));
        }
    }

    /// Removes `key`'s binding if it is connection `id`.
    pub(crate) fn unbind(&self, key: &ClientKey, id: u64) {
        let mut slots = lock(&self.inner.slots);
        if let Some(slot) = slots.get_mut(key) {
            if slot.conn.as_ref().is_some_and(|c| c.id() == id) {
                slot.conn = None;
            }
        }
    }

    /// The server is shutting down: waiting calls fail with
    /// [`crate::RpcError::Shutdown`].
    pub(crate) fn shut(&self) {
        self.inner.stop.send_replace(true);
    }

    /// Waits for a live connection bound to `key`, until `limit`.
    async fn wait_for(
        &self,
        key: &ClientKey,
        deadline: Instant,
    ) -> Result<Arc<dyn ConnOps>, SourceError> {
        let start = Instant::now();
        let limit = deadline.min(start + self.inner.wait);
        let mut stop = self.inner.stop.subscribe();
        let mut logged = false;
        loop {
            if *stop.borrow_and_update() {
                return Err(SourceError::Shutdown);
            }
            let mut changed = {
                let mut slots = lock(&self.inner.slots);
                let slot = slots.entry(key.clone()).or_insert_with(Slot::new);
                if let Some(c) = slot.live() {
                    return Ok(c.clone());
                }
                slot.changed.subscribe()
            };
            if !logged {
                tracing::debug!(%key, "waiting for the client to reconnect and declare readiness");
                logged = true;
            }
            let gone = || SourceError::Gone {
                key: key.clone(),
                waited: start.elapsed(),
            };
            tokio::select! {
                r = changed.changed() => {
                    if r.is_err() {
                        // Forgotten by the Upper Layer.
                        return Err(gone());
                    }
                }
                () = tokio::time::sleep_until(limit) => return Err(gone()),
                _ = stop.changed() => {}
            }
        }
    }
}

/// The connection source of [`Backchannels::client`].
struct Bound {
    registry: Backchannels,
    key: ClientKey,
}

impl ConnSource for Bound {
    fn get(&self, deadline: Instant) -> BoxFuture<'_, Result<Arc<dyn ConnOps>, SourceError>> {
        Box::pin(self.registry.wait_for(&self.key, deadline))
    }

    fn ready(&self) -> Option<Arc<dyn ConnOps>> {
        // The waiting path decides (stopped registry, readiness, limits).
        None
    }

    fn current(&self) -> Option<Arc<dyn ConnOps>> {
        lock(&self.registry.inner.slots)
            .get(&self.key)
            .and_then(Slot::live)
            .cloned()
    }

    fn shutdown(&self) {}

    fn can_reconnect(&self) -> bool {
        true
    }
}
