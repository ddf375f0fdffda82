//! Where a client's connections come from: one existing connection
//! ([`Fixed`]), connections made on demand by a [`Connector`]
//! ([`Reconnecting`]), or whichever connection a server's
//! [`Backchannels`] registry binds to a client ([`Bound`]).

use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::{timeout_at, Instant};

use crate::backchannel::{Backchannels, WaitError};
use crate::client_key::ClientKey;
use crate::conn::{ConnOps, Connection, OpenAs, ServeLimits, SharedXids, Side};
use crate::error::TransportError;
use crate::service::Services;
use crate::transport::{Connector, Transport};
use crate::util::{lock, BoxFuture};

/// Why a connection source has no connection for a call.
#[derive(Debug)]
pub(crate) enum SourceError {
    /// Connecting failed (may be retried).
    Connect(TransportError),
    /// The call's deadline passed.
    Timeout,
    /// A reverse-direction call on a connection whose client is not ready.
    NotReady,
    /// No connection of the client bound to `key` within the bound.
    Gone { key: ClientKey, waited: Duration },
    /// The source was shut down.
    Shutdown,
}

/// Where a client's connections come from.
pub(crate) trait ConnSource: Send + Sync + 'static {
    /// A connection to send on, by `deadline` at the latest.
    fn get(&self, deadline: Instant) -> BoxFuture<'_, Result<Arc<dyn ConnOps>, SourceError>>;
    /// The connection `get` would return at once, if there is one ready
    /// (the per-call fast path: no future, no wait).
    fn ready(&self) -> Option<Arc<dyn ConnOps>>;
    fn current(&self) -> Option<Arc<dyn ConnOps>>;
    fn shutdown(&self);
    fn can_reconnect(&self) -> bool;
}

/// A single existing connection (reverse direction, server side).
pub(crate) struct Fixed(pub(crate) Arc<dyn ConnOps>);

impl ConnSource for Fixed {
    fn get(&self, _deadline: Instant) -> BoxFuture<'_, Result<Arc<dyn ConnOps>, SourceError>> {
        let c = self.0.clone();
        Box::pin(async move {
            if !c.is_alive() {
                Err(SourceError::Connect(TransportError::Closed))
            } else if c.side() == Side::Server && !c.backchannel_ready() {
                //= rfc8167#section-6
                //# Therefore, a ULP MUST NOT perform reverse-direction ONC RPC
                //# operations until the peer has indicated it is prepared to
                //# handle them.
                //= rfc5666bis-04#section-7.3.1
                //# An Upper Layer Protocol consumer MUST NOT perform backward
                //# direction ONC RPC operations unless the peer consumer has
                //# indicated it is prepared to handle them.
                Err(SourceError::NotReady)
            } else {
                Ok(c)
            }
        })
    }
    fn ready(&self) -> Option<Arc<dyn ConnOps>> {
        let c = &self.0;
        (c.is_alive() && (c.side() != Side::Server || c.backchannel_ready())).then(|| c.clone())
    }
    fn current(&self) -> Option<Arc<dyn ConnOps>> {
        Some(self.0.clone())
    }
    fn shutdown(&self) {}
    fn can_reconnect(&self) -> bool {
        false
    }
}

/// Connections made on demand by a [`Connector`].
pub(crate) struct Reconnecting<C: Connector> {
    pub(crate) connector: C,
    pub(crate) current: tokio::sync::Mutex<Option<Arc<dyn ConnOps>>>,
    /// Mirror of `current` readable without awaiting.
    pub(crate) snapshot: Mutex<Option<Arc<dyn ConnOps>>>,
    pub(crate) services: Arc<Services>,
    pub(crate) limits: ServeLimits,
    pub(crate) xids: SharedXids,
}

impl<C: Connector> Reconnecting<C> {
    async fn connect(&self) -> Result<Arc<dyn ConnOps>, TransportError> {
        let mut cur = self.current.lock().await;
        if let Some(c) = cur.as_ref() {
            if c.is_alive() {
                return Ok(c.clone());
            }
        }
        let transport = self.connector.connect().await?;
        // RFC 8167 §6: take reverse-direction calls before the first call,
        // so that the Upper Layer may announce it in any call.
        let ready = !self.services.is_empty();
        if ready {
            if let Err(e) = transport.enable_backchannel() {
                transport.close().await;
                return Err(e);
            }
        }
        let open = OpenAs {
            side: Side::Client,
            ready,
            xids: self.xids.clone(),
            registry: None,
        };
        let conn =
            Connection::open_with(transport, self.services.clone(), self.limits.clone(), open);
        tracing::debug!(
            conn = conn.id(),
            peer = conn.peer(),
            backchannel = ready,
            "connected"
        );
        *cur = Some(conn.ops.clone());
        *lock(&self.snapshot) = Some(conn.ops.clone());
        Ok(conn.ops)
    }
}

impl<C: Connector> ConnSource for Reconnecting<C> {
    fn get(&self, deadline: Instant) -> BoxFuture<'_, Result<Arc<dyn ConnOps>, SourceError>> {
        Box::pin(async move {
            match timeout_at(deadline, self.connect()).await {
                Err(_) => Err(SourceError::Timeout),
                Ok(r) => r.map_err(SourceError::Connect),
            }
        })
    }
    fn ready(&self) -> Option<Arc<dyn ConnOps>> {
        lock(&self.snapshot)
            .as_ref()
            .filter(|c| c.is_alive())
            .cloned()
    }
    fn current(&self) -> Option<Arc<dyn ConnOps>> {
        lock(&self.snapshot).clone()
    }
    fn shutdown(&self) {
        if let Some(c) = lock(&self.snapshot).take() {
            c.shutdown();
        }
    }
    fn can_reconnect(&self) -> bool {
        true
    }
}

/// The connection source of [`Backchannels::client`].
pub(crate) struct Bound {
    pub(crate) registry: Backchannels,
    pub(crate) key: ClientKey,
}

impl ConnSource for Bound {
    fn get(&self, deadline: Instant) -> BoxFuture<'_, Result<Arc<dyn ConnOps>, SourceError>> {
        Box::pin(async move {
            self.registry
                .wait_for(&self.key, deadline)
                .await
                .map_err(|e| match e {
                    WaitError::Gone { waited } => SourceError::Gone {
                        key: self.key.clone(),
                        waited,
                    },
                    WaitError::Shutdown => SourceError::Shutdown,
                })
        })
    }

    fn ready(&self) -> Option<Arc<dyn ConnOps>> {
        // The waiting path decides (stopped registry, readiness, limits).
        None
    }

    fn current(&self) -> Option<Arc<dyn ConnOps>> {
        self.registry.live(&self.key)
    }

    fn shutdown(&self) {}

    fn can_reconnect(&self) -> bool {
        true
    }
}
