//! The typed causes inside a [`ConnectError`](crate::ConnectError): why a
//! connection request is invalid, why the peer is unreachable, how it
//! closed during set-up, and why the device cannot connect.
//!
//! Each cause prints itself whole (an operating-system error it carries is
//! part of its text, not a [`source`](std::error::Error::source)), so the
//! error a person reads names it once.

use std::fmt;
use std::net::SocketAddr;

use crate::error::RegisterError;

/// A status of a connection-manager event, as the provider reported it: a
/// negative errno (`-ECONNREFUSED`) or a provider-specific status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CmStatus(pub i32);

impl CmStatus {
    /// The operating-system error, when the status is a negative errno.
    ///
    /// ```
    /// use rpcrdma_verbs::CmStatus;
    /// let refused = CmStatus(-111).errno().unwrap();
    /// assert_eq!(refused.raw_os_error(), Some(111));
    /// assert!(CmStatus(28).errno().is_none());
    /// ```
    pub fn errno(self) -> Option<std::io::Error> {
        (self.0 < 0).then(|| std::io::Error::from_raw_os_error(-self.0))
    }
}

impl fmt::Display for CmStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.errno() {
            Some(e) => write!(f, "{e} (errno {})", -self.0),
            None => write!(f, "status {}", self.0),
        }
    }
}

/// Which connection set-up message carries private data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SetupMessage {
    /// The active side's request.
    Connect,
    /// The passive side's acceptance.
    Accept,
    /// The passive side's rejection.
    Reject,
}

impl fmt::Display for SetupMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SetupMessage::Connect => "connect",
            SetupMessage::Accept => "accept",
            SetupMessage::Reject => "reject",
        })
    }
}

/// Why a connection request (connect, accept or reject) is invalid
/// ([`ConnectError::Invalid`](crate::ConnectError::Invalid)).
///
/// ```
/// use rpcrdma_verbs::{InvalidConnect, SetupMessage};
/// let e = InvalidConnect::PrivateDataTooLong {
///     message: SetupMessage::Connect,
///     len: 57,
///     max: 56,
///     transport: "InfiniBand/RoCE",
/// };
/// assert_eq!(
///     e.to_string(),
///     "57 octets of private data in the connect; InfiniBand/RoCE carries at most 56"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidConnect {
    /// The private data is longer than the transport carries in `message`.
    #[error("{len} octets of private data in the {message}; {transport} carries at most {max}")]
    PrivateDataTooLong {
        /// The message it was given for.
        message: SetupMessage,
        /// Its length in octets.
        len: usize,
        /// The most the transport carries there.
        max: usize,
        /// The transport's name, for reading.
        transport: &'static str,
    },
    /// The protection domain belongs to another device than the queue
    /// pair's.
    #[error("the protection domain belongs to another device")]
    ForeignProtectionDomain,
    /// The connection request was already accepted or rejected.
    #[error("request already answered")]
    AlreadyAnswered,
    /// The command does not apply in the connection's current state.
    #[error("{command} is not allowed while the connection is {state}")]
    WrongState {
        /// The command, for reading.
        command: &'static str,
        /// The state, for reading.
        state: &'static str,
    },
    /// The provider's options or the queue capacities break one of its
    /// rules; the text is its account.
    #[error("invalid configuration: {detail}")]
    Options {
        /// What the provider says is wrong.
        detail: String,
    },
}

/// Why nobody accepts the connection
/// ([`ConnectError::Unreachable`](crate::ConnectError::Unreachable)).
///
/// ```
/// use rpcrdma_verbs::{CmStatus, Unreachable};
/// let e = Unreachable::Refused { status: CmStatus(-111) };
/// assert!(e.to_string().starts_with("connection refused ("), "{e}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unreachable {
    /// Nobody listens on that port (an InfiniBand CM reject for an
    /// unknown service).
    #[error("nobody listens on that port (IB CM reject: invalid service ID)")]
    NoListener,
    /// The InfiniBand CM rejected the request for another reason.
    #[error("IB CM reject, reason {reason}")]
    CmReject {
        /// The CM's reject reason.
        reason: i32,
    },
    /// The peer refused the connection (iWARP: the TCP connection).
    #[error("connection refused ({status})")]
    Refused {
        /// What the provider reported.
        status: CmStatus,
    },
    /// The address or route could not be resolved, or the peer could not
    /// be reached.
    #[error("{event}: {status}")]
    NoRoute {
        /// The connection-manager event that reported it, for reading.
        event: &'static str,
        /// What the provider reported.
        status: CmStatus,
    },
}

/// How the peer (or the network) closed the connection during set-up
/// ([`ConnectError::PeerClosed`](crate::ConnectError::PeerClosed)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PeerClosed {
    /// The connection manager reported an error or a disconnection.
    #[error("{event}: {status}")]
    Event {
        /// The connection-manager event, for reading.
        event: &'static str,
        /// What the provider reported.
        status: CmStatus,
    },
    /// The peer closed the stream.
    #[error("the peer closed the connection")]
    Closed,
    /// The stream under the connection failed.
    #[error("transport failure: {0}")]
    Transport(std::io::Error),
}

/// Why the RDMA device cannot make the connection
/// ([`ConnectError::Device`](crate::ConnectError::Device)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceFault {
    /// No RDMA device serves a route to the address.
    #[error(
        "no RDMA device serves a route to that address ({event}: {status}); \
         is the address on an RDMA-capable interface (`rdma link`)?"
    )]
    NoDevice {
        /// The connection-manager event that reported it, for reading.
        event: &'static str,
        /// What the provider reported.
        status: CmStatus,
    },
    /// The address is reached through another device than the opened one.
    #[error(
        "{addr} is reached through RDMA device {reached}, but this process opened {opened}; \
         choose it with --device {reached}"
    )]
    OtherDevice {
        /// The address.
        addr: SocketAddr,
        /// The device that reaches it.
        reached: String,
        /// The device this process opened.
        opened: String,
    },
    /// The device was removed.
    #[error("the RDMA device was removed")]
    Removed,
    /// The device would not create the queue pair.
    #[error(
        "cannot create the queue pair ({send_depth} send, {recv_depth} receive work requests, \
         {send_sge} gather elements): {status}"
    )]
    QueuePair {
        /// Send queue depth asked for.
        send_depth: u32,
        /// Receive queue depth asked for.
        recv_depth: u32,
        /// Gather elements per send asked for.
        send_sge: u32,
        /// What the provider reported.
        status: CmStatus,
    },
    /// The receive buffers could not be registered.
    #[error("cannot register the receive buffers: {0}")]
    RegisterReceive(RegisterError),
    /// The receive buffers could not be posted.
    #[error("cannot post the receive buffers: {status}")]
    PostReceive {
        /// What the provider reported.
        status: CmStatus,
    },
}
