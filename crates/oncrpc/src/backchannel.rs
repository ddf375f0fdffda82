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

use tokio::sync::watch;
use tokio::time::Instant;

use crate::client_key::ClientKey;
use crate::conn::{ConnOps, Connection, SharedXids, Side, XidAlloc};
use crate::error::TransportError;
use crate::util::lock;

/// Default of [`crate::ServerConfig::callback_reconnect_wait`] (and the
/// wait of a connection's own registry, [`Connection::open`]): 30 s.
pub const DEFAULT_CALLBACK_WAIT: Duration = Duration::from_secs(30);

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
    #[error("the transport refused")]
    Transport(#[source] TransportError),
}

/// Why [`Backchannels::wait_for`] found no connection.
#[derive(Debug)]
pub(crate) enum WaitError {
    /// None bound to the key within the bound (or the key was forgotten).
    Gone { waited: Duration },
    /// The server is shutting down.
    Shutdown,
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

    /// The live connection bound to `key` now, if any.
    pub(crate) fn live(&self, key: &ClientKey) -> Option<Arc<dyn ConnOps>> {
        lock(&self.inner.slots)
            .get(key)
            .and_then(Slot::live)
            .cloned()
    }

    /// Waits for a live connection bound to `key`, until `deadline` or
    /// the registry's wait, whichever comes first.
    pub(crate) async fn wait_for(
        &self,
        key: &ClientKey,
        deadline: Instant,
    ) -> Result<Arc<dyn ConnOps>, WaitError> {
        let start = Instant::now();
        let limit = deadline.min(start + self.inner.wait);
        let mut stop = self.inner.stop.subscribe();
        let mut logged = false;
        loop {
            if *stop.borrow_and_update() {
                return Err(WaitError::Shutdown);
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
            let gone = || WaitError::Gone {
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

impl Connection {
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
}
