//! Errors of the verbs interface, split by operation.

use bytes::Bytes;

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
        reason: String,
    },
    /// A work request is malformed.
    #[error("invalid work request: {reason}")]
    Invalid {
        /// What is wrong.
        reason: &'static str,
    },
}

/// Why a connection attempt failed.
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
    /// The transport failed.
    #[error("transport error during connection set-up: {0}")]
    Io(#[from] std::io::Error),
    /// The peer broke the connection set-up protocol, or asked for
    /// something we do not support; the provider's error says what.
    #[error("connection set-up failed: {0}")]
    Protocol(Box<dyn std::error::Error + Send + Sync>),
    /// The request itself is invalid (e.g. private data too long).
    #[error("invalid connection parameters: {reason}")]
    Invalid {
        /// What is wrong.
        reason: String,
    },
}
