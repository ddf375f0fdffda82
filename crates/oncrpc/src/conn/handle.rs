//! The [`Connection`] handle and the operations behind it ([`ConnOps`],
//! the transport type erased), apart from the state that implements them
//! (`state.rs`), the clients that call over it (`crate::client`) and the
//! registry that binds it to a client (`crate::backchannel`). That
//! registry holds connections and a server's connection knows its
//! registry, so this file and `backchannel.rs` refer to each other.

use parking_lot::Mutex;
use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use rpcrdma_xdr::Payload;
use tokio::time::Instant;

use super::pending::Outcome;
use super::xid::SharedXids;
use crate::backchannel::Backchannels;
use crate::client_key::ClientKey;
use crate::error::TransportError;
use crate::transport::CallHints;
use crate::util::BoxFuture;

/// Which end of the connection we are (RFC 8167 §2: the client
/// establishes connections; our calls on a server's connection are
/// reverse-direction calls).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// We connected: our calls are forward, received calls are reverse.
    Client,
    /// We accepted: received calls are forward, our calls are reverse.
    Server,
}

/// The operations the client needs from a connection, with the transport
/// type erased.
pub(crate) trait ConnOps: Send + Sync + 'static {
    fn id(&self) -> u64;
    fn peer(&self) -> &str;
    fn peer_addr(&self) -> Option<std::net::SocketAddr>;
    fn side(&self) -> Side;
    /// Client side: we take reverse-direction calls. Server side: the
    /// Upper Layer declared that the client does.
    fn backchannel_ready(&self) -> bool;
    /// Server side: tells the transport the client is ready, marks the
    /// connection ready and records `key`; returns the key it had before.
    fn declare_peer_ready(&self, key: ClientKey) -> Result<Option<ClientKey>, TransportError>;
    fn client_key(&self) -> Option<ClientKey>;
    fn backchannels(&self) -> Option<&Backchannels>;
    /// Starts waiting for the reply to `xid`, until `deadline` at the
    /// latest ([`Outcome::TimedOut`]); false if the connection is dead (or
    /// `xid` is already waited for).
    fn register(&self, xid: u32, deadline: Instant) -> bool;
    /// The outcome of a registered wait once there is one; `Ready(None)`
    /// if the connection was lost first.
    fn poll_outcome(&self, xid: u32, cx: &mut Context<'_>) -> Poll<Option<Outcome>>;
    fn unregister(&self, xid: u32);
    /// [`crate::Transport::try_send_call`].
    fn try_send_call(
        &self,
        xid: u32,
        message: Payload,
        hints: &CallHints,
    ) -> Result<Result<(), TransportError>, Payload>;
    /// [`crate::Transport::try_release`].
    fn try_release(&self, xid: u32) -> bool;
    fn send_call<'a>(
        &'a self,
        xid: u32,
        message: Payload,
        hints: &'a CallHints,
    ) -> BoxFuture<'a, Result<(), TransportError>>;
    fn release(&self, xid: u32) -> BoxFuture<'_, ()>;
    fn is_alive(&self) -> bool;
    /// Fails every waiting call and closes the transport now.
    fn abort(&self);
    /// Stops reading; finishes calls in progress, then closes.
    fn shutdown(&self);
    fn closed(&self) -> BoxFuture<'_, ()>;
    fn xids(&self) -> &SharedXids;
    /// Where replies are encoded (see `PayloadEncoder::in_arena`).
    fn arena(&self) -> &Mutex<bytes::BytesMut>;
}

/// A handle to one open connection (cheap to clone).
#[derive(Clone)]
pub struct Connection {
    pub(crate) ops: Arc<dyn ConnOps>,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("id", &self.ops.id())
            .field("peer", &self.ops.peer())
            .finish()
    }
}

impl Connection {
    /// Server side: whether the Upper Layer declared the client ready for
    /// reverse-direction calls ([`Connection::peer_ready_for_callbacks`]).
    /// Client side: whether we take reverse-direction calls on it (our
    /// [`crate::ClientConfig::services`] is not empty).
    pub fn backchannel_ready(&self) -> bool {
        self.ops.backchannel_ready()
    }

    /// Server side: the key given to
    /// [`Connection::peer_ready_for_callbacks`], if any.
    pub fn client_key(&self) -> Option<ClientKey> {
        self.ops.client_key()
    }

    /// Server side: the registry this connection binds its key in (the
    /// server's, for connections served by a [`crate::Server`]). `None` on
    /// a client's connection.
    pub fn backchannels(&self) -> Option<Backchannels> {
        self.ops.backchannels().cloned()
    }

    /// Whether we accepted this connection (the server side, whose calls
    /// are reverse-direction calls).
    pub fn is_server_side(&self) -> bool {
        self.ops.side() == Side::Server
    }

    /// A description of the peer.
    pub fn peer(&self) -> &str {
        self.ops.peer()
    }

    /// The peer's network address, if the transport knows it.
    pub fn peer_addr(&self) -> Option<std::net::SocketAddr> {
        self.ops.peer_addr()
    }

    /// A process-unique id for logs.
    pub fn id(&self) -> u64 {
        self.ops.id()
    }

    /// Whether the connection still accepts calls.
    pub fn is_alive(&self) -> bool {
        self.ops.is_alive()
    }

    /// Graceful close: stop reading, let calls in progress send their
    /// replies, then close the transport. Waits until done.
    pub async fn close(&self) {
        self.ops.shutdown();
        self.ops.closed().await;
    }

    /// Drops the connection at once: outstanding calls see it lost (and
    /// retransmit if their client can reconnect); calls in progress can no
    /// longer reply. Does not wait.
    pub fn abort(&self) {
        self.ops.abort();
    }

    /// Waits until the connection is closed.
    pub async fn closed(&self) {
        self.ops.closed().await;
    }
}
