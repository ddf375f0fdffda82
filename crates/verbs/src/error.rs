//! Errors of the verbs interface, split by operation.

use bytes::Bytes;

use crate::connect_cause::{DeviceFault, InvalidConnect, PeerClosed, Unreachable};
use crate::errno::Errno;
use crate::types::Access;

/// Why a memory registration failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// The protection domain already holds its maximum number of regions.
    #[error(
        "protection domain holds {max} memory regions already; deregister some or raise the limit"
    )]
    TooManyRegions {
        /// The limit.
        max: usize,
    },
    /// Read-only memory (`Bytes`) cannot be registered with a write right.
    #[error("a read-only buffer (Bytes) cannot be registered with {access}; register a BytesMut for writable memory")]
    ReadOnlyBuffer {
        /// The requested rights.
        access: String,
    },
    /// The buffer is larger than a region may be.
    #[error("buffer of {len} octets exceeds the largest region ({max} octets)")]
    TooLarge {
        /// Buffer length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The locked-memory limit (`RLIMIT_MEMLOCK`) does not let the device
    /// pin the buffer.
    #[error(
        "cannot pin {len} octets for the RDMA device: the locked-memory limit is {limit}; \
         raise it (`ulimit -l unlimited`, or memlock in /etc/security/limits.conf) or run with CAP_IPC_LOCK"
    )]
    MemlockLimit {
        /// Buffer length.
        len: usize,
        /// The limit in force, as text (e.g. "64 KiB").
        limit: String,
    },
    /// The device refused the registration for another reason.
    #[error("the RDMA device refused to register {len} octets: {call}: {errno}")]
    Device {
        /// Buffer length.
        len: usize,
        /// The device call that failed (e.g. "ibv_reg_mr").
        call: &'static str,
        /// The error number it failed with.
        errno: Errno,
    },
}

/// Why a device could not create a resource (protection domain,
/// completion queue).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResourceError {
    /// The request exceeds what the device supports.
    #[error("{what}: {requested} requested, the device supports at most {max}")]
    Limit {
        /// What was asked for (e.g. "completion queue entries").
        what: &'static str,
        /// How many.
        requested: usize,
        /// The device's limit.
        max: usize,
    },
    /// The device failed to create it.
    #[error("cannot create {what}: {errno}")]
    Device {
        /// What (e.g. "a protection domain").
        what: &'static str,
        /// The error number the device call failed with.
        errno: Errno,
    },
}

/// Why a deregistration failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeregisterError {
    /// The region is no longer registered (e.g. its protection domain is gone).
    #[error("memory region with key {key:#010x} is not registered")]
    NotRegistered {
        /// The key.
        key: u32,
    },
}

/// Why a work request could not be posted. Nothing was queued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PostError {
    /// The queue holds its maximum of uncompleted requests.
    #[error("{queue} queue is full ({depth} work requests outstanding); poll the completion queue first")]
    QueueFull {
        /// "send" or "receive".
        queue: &'static str,
        /// The depth.
        depth: u32,
    },
    /// The queue pair is not connected (closing, closed or failed).
    #[error("queue pair is not connected ({state}); no work requests can be posted")]
    NotConnected {
        /// The state it is in.
        state: &'static str,
    },
    /// A local key in the request is invalid, out of bounds or lacks the
    /// access right the request needs.
    #[error("local protection error on key {key:#010x}: {reason}")]
    LocalProtection {
        /// The key.
        key: u32,
        /// What is wrong.
        reason: ProtectionFault,
    },
    /// A work request is malformed.
    #[error("invalid work request: {reason}")]
    Invalid {
        /// What is wrong.
        reason: &'static str,
    },
}

/// What is wrong with a local key or the memory behind it
/// ([`PostError::LocalProtection`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtectionFault {
    /// No region has this key (never registered, deregistered, or in
    /// another protection domain).
    #[error("no memory region with key {0:#010x}")]
    InvalidKey(u32),
    /// The region was invalidated (locally or by the peer).
    #[error("memory region key {0:#010x} was invalidated")]
    Invalidated(u32),
    /// The range is outside the region.
    #[error("range {addr:#x}+{len} is outside the region with key {key:#010x}")]
    Bounds {
        /// Key.
        key: u32,
        /// Start address.
        addr: u64,
        /// Length.
        len: u64,
    },
    /// `addr + len` overflows 64 bits.
    #[error("range {addr:#x}+{len} wraps around the 64-bit address space")]
    Wrap {
        /// Start address.
        addr: u64,
        /// Length.
        len: u64,
    },
    /// The region lacks a needed right.
    #[error("memory region key {key:#010x} lacks the {needed:?} right")]
    Rights {
        /// Key.
        key: u32,
        /// The right that was needed.
        needed: Access,
    },
    /// The key is not a live region of this protection domain, or the
    /// range is out of its bounds (the device does not say which).
    #[error("not a live region of this protection domain, or out of its bounds")]
    NotInDomain,
    /// The provider could not register a buffer to send from.
    #[error("cannot register a send buffer: {0}")]
    SendBuffer(RegisterError),
}

/// Why a connection attempt failed.
///
/// [`ConnectError::is_transient`] tells the failures worth retrying (the
/// peer is not listening yet, or went away during set-up) from the others.
///
/// ```
/// use rpcrdma_verbs::{ConnectError, Unreachable};
/// let refused = ConnectError::Io(std::io::ErrorKind::ConnectionRefused.into());
/// assert!(refused.is_transient());
/// assert!(ConnectError::Unreachable(Unreachable::NoListener).is_transient());
/// assert!(!ConnectError::Timeout.is_transient());
/// assert!(!ConnectError::Rejected { private_data: Default::default() }.is_transient());
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The peer rejected the connection, with its private data.
    #[error("connection rejected by the peer ({} octets of private data)", private_data.len())]
    Rejected {
        /// The peer's private data (Upper Layer part).
        private_data: Bytes,
    },
    /// Connection set-up did not finish in time.
    #[error("connection set-up timed out; is the peer an iWARP/RDMA endpoint listening on that address?")]
    Timeout,
    /// The transport failed (the I/O error is the [source](std::error::Error::source)).
    #[error("transport error during connection set-up")]
    Io(#[from] std::io::Error),
    /// The peer broke the connection set-up protocol, or asked for
    /// something we do not support: [`SetupViolation::fault`] says which,
    /// its text what the provider saw.
    #[error("connection set-up failed: {0}")]
    Protocol(SetupViolation),
    /// The request itself is invalid (e.g. private data too long).
    #[error("invalid connection parameters: {0}")]
    Invalid(InvalidConnect),
    /// Nobody accepts connections there: no listener (connection refused,
    /// an InfiniBand CM reject for an unknown service), or the address or
    /// route could not be resolved.
    #[error("the peer is unreachable: {0}")]
    Unreachable(Unreachable),
    /// The peer (or the network) closed the connection during set-up,
    /// before it was established.
    #[error("the peer closed the connection during set-up: {0}")]
    PeerClosed(PeerClosed),
    /// The device cannot make the connection (no device for that address,
    /// queue pair creation failed, the device went away).
    #[error("the RDMA device cannot make the connection: {0}")]
    Device(DeviceFault),
}

/// What kind of breach of the connection set-up protocol a
/// [`SetupViolation`] is, for matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SetupFault {
    /// A set-up message is malformed, or not of the protocol at all (the
    /// peer may not speak it).
    Malformed,
    /// A set-up message came where another was due (a request where the
    /// reply was expected).
    Unexpected,
    /// The peer asked for something this side does not support (a
    /// protocol revision, a feature, a mode no side offered).
    Unsupported,
    /// A set-up message exceeds a limit (private data too long).
    TooLarge,
    /// The peer sent data before set-up finished.
    EarlyData,
    /// A set-up message failed its integrity check.
    BadChecksum,
    /// Any other breach of the set-up protocol.
    Other,
}

/// How the peer broke connection set-up ([`ConnectError::Protocol`]): the
/// kind of breach, for matching, and the provider's account of it, for
/// reading (its text is the account).
///
/// ```
/// use rpcrdma_verbs::{ConnectError, SetupFault, SetupViolation};
/// let e = ConnectError::Protocol(SetupViolation::new(
///     SetupFault::Unsupported,
///     "MPA revision 3 is not supported (only 1 and 2)",
/// ));
/// assert!(matches!(&e, ConnectError::Protocol(v) if v.fault() == SetupFault::Unsupported));
/// assert_eq!(
///     e.to_string(),
///     "connection set-up failed: MPA revision 3 is not supported (only 1 and 2)"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct SetupViolation {
    fault: SetupFault,
    detail: String,
}

impl SetupViolation {
    /// A breach of kind `fault`, as the provider describes it.
    pub fn new(fault: SetupFault, detail: impl Into<String>) -> Self {
        SetupViolation {
            fault,
            detail: detail.into(),
        }
    }

    /// The kind of breach.
    pub fn fault(&self) -> SetupFault {
        self.fault
    }

    /// The provider's account of it.
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

impl ConnectError {
    /// Whether retrying later may succeed: the peer is not listening yet,
    /// or went away during set-up ([`ConnectError::Unreachable`],
    /// [`ConnectError::PeerClosed`], or an I/O error refusing, resetting or
    /// ending the connection). Timeouts, rejections, protocol errors and
    /// invalid parameters are not transient.
    pub fn is_transient(&self) -> bool {
        match self {
            ConnectError::Io(io) => matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionRefused
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::UnexpectedEof
            ),
            ConnectError::Unreachable(_) | ConnectError::PeerClosed(_) => true,
            _ => false,
        }
    }
}
