//! Errors of the connection state machine, split by cause, and the one
//! function that maps a protocol violation to the Terminate we send.

use bytes::Bytes;
use rpcrdma_verbs::{
    DisconnectReason, ProtocolLayer, ProtocolViolation, TerminateCode, TransportFailure,
    TransportFault, WcStatus,
};

use crate::mpa::MpaError;
use crate::mr::AccessError;
use crate::rdmap::{Opcode, TermError, Terminate};

/// A violation of MPA, DDP or RDMAP by the peer. Each maps to the
/// Terminate we send ([`ProtocolError::term_error`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// The MPA Request/Reply is malformed.
    #[error("malformed MPA frame: {0}")]
    MpaFrame(MpaError),
    /// A Request arrived where a Reply was expected, or the reverse.
    #[error("received an MPA {got} where an MPA {expected} was expected")]
    MpaUnexpectedKey {
        /// What arrived.
        got: &'static str,
        /// What was expected.
        expected: &'static str,
    },
    /// The MPA revision is neither 1 nor 2.
    #[error("MPA revision {0} is not supported (only 1 and 2)")]
    MpaRevision(u8),
    /// The Reply's revision differs from what we can accept.
    #[error("MPA Reply revision {got} does not match the Request's revision {sent}")]
    MpaReplyRevision {
        /// Revision of our Request.
        sent: u8,
        /// Revision of the Reply.
        got: u8,
    },
    /// The Reply asks for markers (we never use them).
    #[error("MPA Reply asks for markers, which this implementation never uses")]
    MpaMarkers,
    /// The peer's private data exceeds our configured limit.
    #[error("MPA private data of {len} octets exceeds the configured limit of {max}")]
    MpaPrivateDataTooLong {
        /// Length received.
        len: usize,
        /// Configured limit.
        max: usize,
    },
    /// We asked for peer-to-peer mode and the Reply picked no RTR type we offered.
    #[error("MPA Reply picked no ready-to-receive message type we offered")]
    MpaNoMatchingRtr,
    /// The initiator sent bytes after its Request before our Reply.
    #[error("the initiator sent {0} octets after its MPA Request before the Reply")]
    MpaEarlyData(usize),
    /// The MPA CRC of an FPDU does not match.
    #[error("MPA CRC mismatch: FPDU carries {received:#010x}, computed {computed:#010x}")]
    BadCrc {
        /// CRC from the wire.
        received: u32,
        /// CRC we computed.
        computed: u32,
    },
    /// The ULPDU is shorter than its DDP header (or the RDMAP header it needs).
    #[error("DDP segment of {len} octets is too short for its {needed}-octet header")]
    ShortSegment {
        /// ULPDU length.
        len: usize,
        /// Needed.
        needed: usize,
    },
    /// DDP version is not 1.
    #[error("DDP version {version} is not supported (only 1)")]
    DdpVersion {
        /// Version received.
        version: u8,
        /// Tagged buffer model.
        tagged: bool,
    },
    /// RDMAP version is not 1.
    #[error("RDMAP version {0} is not supported (only 1)")]
    RdmapVersion(u8),
    /// An opcode RFC 5040 does not define, or one in the wrong buffer model.
    #[error("unexpected RDMAP opcode {opcode:?} in a {} DDP segment", if *tagged { "tagged" } else { "untagged" })]
    UnexpectedOpcode {
        /// The opcode.
        opcode: Opcode,
        /// Tagged flag of the segment.
        tagged: bool,
    },
    /// An untagged segment names a queue its opcode does not use.
    #[error("untagged DDP segment on queue {qn} for opcode {opcode:?}")]
    InvalidQueue {
        /// Queue number.
        qn: u32,
        /// Opcode.
        opcode: Opcode,
    },
    /// Message sequence number out of order.
    #[error("MSN {msn} on queue {qn}, expected {expected}")]
    MsnRange {
        /// Queue.
        qn: u32,
        /// MSN received.
        msn: u32,
        /// MSN expected.
        expected: u32,
    },
    /// Message offset out of order.
    #[error("message offset {mo}, expected {expected}")]
    InvalidMo {
        /// MO received.
        mo: u32,
        /// MO expected.
        expected: u32,
    },
    /// A Send arrived with no receive posted.
    #[error("a Send (MSN {msn}) arrived but no receive buffer is posted")]
    NoReceiveBuffer {
        /// MSN of the Send.
        msn: u32,
    },
    /// A Send is longer than the posted receive buffer.
    #[error(
        "a Send of at least {len} octets does not fit the posted {buffer}-octet receive buffer"
    )]
    MessageTooLong {
        /// Octets so far.
        len: usize,
        /// Buffer size.
        buffer: usize,
    },
    /// A tagged placement failed the protection checks.
    #[error("RDMA Write placement refused: {0}")]
    WriteAccess(AccessError),
    /// An RDMA Read Request failed the protection checks.
    #[error("RDMA Read Request refused: {0}")]
    ReadAccess(AccessError),
    /// An RDMA Read Request is malformed (wrong length, not a single segment).
    #[error("malformed RDMA Read Request: {0}")]
    BadReadRequest(&'static str),
    /// The peer has more Read Requests outstanding than our IRD.
    #[error("peer exceeded our IRD of {0} outstanding RDMA Read Requests")]
    IrdExceeded(u16),
    /// A Read Response arrived with no Read outstanding.
    #[error("RDMA Read Response without an outstanding RDMA Read Request")]
    UnexpectedReadResponse,
    /// A Read Response does not match the outstanding request.
    #[error("RDMA Read Response does not match the request: {0}")]
    ReadResponseMismatch(&'static str),
    /// Send with Invalidate named a key that cannot be invalidated.
    #[error("Send with Invalidate names key {0:#010x}, which is not a region of this connection")]
    CannotInvalidate(u32),
    /// A tagged message was interleaved with a different one mid-message.
    #[error("DDP segment of a new {opcode:?} message before the previous one ended")]
    Interleaved {
        /// The new opcode.
        opcode: Opcode,
    },
    /// A Terminate message with a bad header.
    #[error("malformed Terminate message")]
    BadTerminate,
}

impl ProtocolError {
    /// The provider-neutral account of the violation: the layer the
    /// Terminate answering it names (a malformed Terminate is RDMAP's), the
    /// Terminate's numbers, and the text.
    pub fn violation(&self) -> ProtocolViolation {
        let term = self.term_error();
        let layer = match term.map(|t| t.layer.0) {
            Some(1) => ProtocolLayer::Ddp,
            Some(2) => ProtocolLayer::Mpa,
            _ => ProtocolLayer::Rdmap,
        };
        let terminate = term.map(|t| TerminateCode {
            layer: t.layer.0,
            etype: t.etype,
            code: t.code,
        });
        ProtocolViolation::new(layer, terminate, self.to_string())
    }

    /// The Terminate layer/type/code this violation is answered with
    /// (`None`: close without a Terminate, e.g. during MPA set-up where only
    /// a Reject or a close is possible).
    pub fn term_error(&self) -> Option<TermError> {
        use ProtocolError as P;
        Some(match self {
            P::MpaFrame(_)
            | P::MpaUnexpectedKey { .. }
            | P::MpaRevision(_)
            | P::MpaReplyRevision { .. } => TermError::LLP_INVALID_REQUEST_REPLY,
            P::MpaMarkers | P::MpaPrivateDataTooLong { .. } | P::MpaEarlyData(_) => {
                TermError::LLP_INVALID_REQUEST_REPLY
            }
            P::MpaNoMatchingRtr => TermError::LLP_NO_MATCHING_RTR,
            P::BadCrc { .. } => TermError::LLP_BAD_CRC,
            P::ShortSegment { .. } => TermError::LLP_BAD_FPDU,
            P::DdpVersion { tagged: true, .. } => TermError::DDP_TAGGED_INVALID_VERSION,
            P::DdpVersion { tagged: false, .. } => TermError::DDP_UNTAGGED_INVALID_VERSION,
            P::RdmapVersion(_) => TermError::RDMAP_INVALID_VERSION,
            P::UnexpectedOpcode { .. } | P::UnexpectedReadResponse | P::Interleaved { .. } => {
                TermError::RDMAP_UNEXPECTED_OPCODE
            }
            P::InvalidQueue { .. } => TermError::DDP_UNTAGGED_INVALID_QN,
            P::MsnRange { .. } => TermError::DDP_UNTAGGED_MSN_RANGE,
            P::InvalidMo { .. } => TermError::DDP_UNTAGGED_INVALID_MO,
            P::NoReceiveBuffer { .. } => TermError::DDP_UNTAGGED_NO_BUFFER,
            P::MessageTooLong { .. } => TermError::DDP_UNTAGGED_TOO_LONG,
            P::WriteAccess(e) => match e {
                AccessError::InvalidKey(_) | AccessError::Invalidated(_) => {
                    TermError::DDP_TAGGED_INVALID_STAG
                }
                AccessError::Bounds { .. } => TermError::DDP_TAGGED_BASE_BOUNDS,
                AccessError::Wrap { .. } => TermError::DDP_TAGGED_TO_WRAP,
                AccessError::Rights { .. } => TermError::RDMAP_ACCESS_RIGHTS,
            },
            P::ReadAccess(e) => match e {
                AccessError::InvalidKey(_) | AccessError::Invalidated(_) => {
                    TermError::RDMAP_INVALID_STAG
                }
                AccessError::Bounds { .. } => TermError::RDMAP_BASE_BOUNDS,
                AccessError::Wrap { .. } => TermError::RDMAP_TO_WRAP,
                AccessError::Rights { .. } => TermError::RDMAP_ACCESS_RIGHTS,
            },
            P::BadReadRequest(_) => TermError::RDMAP_CATASTROPHIC_STREAM,
            P::IrdExceeded(_) => TermError::RDMAP_CATASTROPHIC_STREAM,
            P::ReadResponseMismatch(_) => TermError::DDP_TAGGED_BASE_BOUNDS,
            P::CannotInvalidate(_) => TermError::RDMAP_CANNOT_INVALIDATE,
            P::BadTerminate => return None,
        })
    }
}

/// Why a connection ended or never came up. The connection keeps the first
/// one (sticky); later calls report it again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnError {
    /// We detected a protocol violation (and queued a Terminate, or an MPA
    /// Reject, where the protocol allows one).
    #[error("protocol violation by the peer: {0}")]
    Protocol(ProtocolError),
    /// The peer sent a Terminate.
    #[error("the peer terminated the connection: {}", .0.error)]
    RemoteTerminate(Terminate),
    /// The peer rejected our MPA Request.
    #[error("the peer rejected the connection ({} octets of private data)", private_data.len())]
    Rejected {
        /// The peer's private data (Upper Layer part).
        private_data: Bytes,
    },
    /// We rejected the peer's MPA Request.
    #[error("connection request rejected{}", if *markers { " (it asked for markers)" } else { "" })]
    RejectedLocally {
        /// The Request asked for markers (refused automatically).
        markers: bool,
    },
    /// MPA negotiation did not finish in time.
    #[error("MPA negotiation timed out")]
    MpaTimeout,
    /// The peer closed the stream at an FPDU boundary.
    #[error("the peer closed the connection")]
    PeerClosed,
    /// The stream ended inside an MPA frame or FPDU.
    #[error("the stream ended in the middle of {0}")]
    Truncated(&'static str),
    /// A local work request failed a protection check when it was
    /// processed (its region was deregistered or invalidated meanwhile).
    #[error("local protection error: {0}")]
    LocalProtection(AccessError),
    /// We closed the connection gracefully.
    #[error("connection closed locally")]
    LocalClose,
    /// We aborted the connection.
    #[error("connection aborted locally")]
    LocalAbort,
    /// The transport failed (reported by the driver).
    #[error("transport failure: {0}")]
    Transport(TransportError),
}

/// How the byte stream under a connection failed, as its driver reports it
/// ([`Connection::handle_transport_failure`](super::Connection::handle_transport_failure)).
///
/// ```
/// use rpcrdma_iwarp::conn::{ConnError, TransportError};
///
/// let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
/// let err = ConnError::Transport(TransportError::from(&reset));
/// assert!(matches!(
///     err,
///     ConnError::Transport(TransportError::Io { kind: std::io::ErrorKind::ConnectionReset, .. })
/// ));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The socket reported an I/O error (reset, broken pipe, a write that
    /// moved no octets, ...).
    #[error("{message}")]
    Io {
        /// The kind of the error, for matching.
        kind: std::io::ErrorKind,
        /// The error as the operating system described it.
        message: String,
    },
    /// A completion queue attached to the connection overflowed (it was
    /// sized for fewer work requests than its queue pairs can complete).
    #[error("completion queue overrun: size the CQ for the queues attached to it")]
    CompletionQueueOverrun,
    /// A write to the socket moved no octets (the peer is gone).
    #[error("the socket accepted no data")]
    AcceptedNothing,
}

// The conversions `#[from]` would derive, without making the inner error a
// `source()` as well: these variants print it (their text is what a
// `DisconnectReason` and the logs carry), so it is not returned twice.
impl From<MpaError> for ProtocolError {
    fn from(e: MpaError) -> Self {
        ProtocolError::MpaFrame(e)
    }
}

impl From<ProtocolError> for ConnError {
    fn from(e: ProtocolError) -> Self {
        ConnError::Protocol(e)
    }
}

impl From<ConfigError> for ApiError {
    fn from(e: ConfigError) -> Self {
        ApiError::Config(e)
    }
}

impl From<&std::io::Error> for TransportError {
    fn from(e: &std::io::Error) -> Self {
        TransportError::Io {
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

impl From<std::io::Error> for TransportError {
    fn from(e: std::io::Error) -> Self {
        TransportError::from(&e)
    }
}

impl ConnError {
    /// The status of the work request the error is blamed on (the oldest
    /// outstanding send-queue request); all others are flushed.
    pub fn culprit_status(&self) -> WcStatus {
        match self {
            ConnError::RemoteTerminate(t) => {
                let e = t.error;
                match (e.layer.0, e.etype) {
                    // RDMAP or DDP remote protection / tagged buffer errors.
                    (0, 1) | (1, 1) => WcStatus::RemoteAccess,
                    // DDP untagged buffer errors: no buffer, too long, ...
                    (1, 2) => WcStatus::RemoteInvalidRequest,
                    _ => WcStatus::RemoteOperation,
                }
            }
            ConnError::LocalProtection(_) => WcStatus::LocalProtection,
            ConnError::Protocol(_) | ConnError::Truncated(_) | ConnError::Transport(_) => {
                WcStatus::Fatal
            }
            _ => WcStatus::WrFlush,
        }
    }

    /// The kind of transport failure this is, for a
    /// [`DisconnectReason::Transport`].
    fn transport_fault(&self) -> TransportFault {
        match self {
            ConnError::Transport(TransportError::Io { kind, .. }) => TransportFault::Io(*kind),
            ConnError::Transport(TransportError::AcceptedNothing) => {
                TransportFault::Io(std::io::ErrorKind::WriteZero)
            }
            ConnError::Transport(TransportError::CompletionQueueOverrun) => {
                TransportFault::CompletionQueueOverrun
            }
            ConnError::Truncated(_) => TransportFault::Truncated,
            ConnError::MpaTimeout => TransportFault::Timeout,
            _ => TransportFault::Other,
        }
    }

    /// The provider-neutral reason.
    pub fn disconnect_reason(&self) -> DisconnectReason {
        match self {
            ConnError::RemoteTerminate(t) => DisconnectReason::RemoteTerminate {
                layer: t.error.layer.0,
                etype: t.error.etype,
                code: t.error.code,
            },
            ConnError::LocalClose | ConnError::LocalAbort | ConnError::RejectedLocally { .. } => {
                DisconnectReason::Local
            }
            ConnError::PeerClosed | ConnError::Rejected { .. } => DisconnectReason::Peer,
            ConnError::Protocol(p) => DisconnectReason::ProtocolError {
                reason: p.violation(),
            },
            ConnError::LocalProtection(e) => DisconnectReason::ProtocolError {
                reason: ProtocolViolation::new(ProtocolLayer::LocalAccess, None, e.to_string()),
            },
            other => DisconnectReason::Transport {
                reason: TransportFailure::new(other.transport_fault(), other.to_string()),
            },
        }
    }
}

/// Why an application command was refused (API misuse, never caused by
/// the peer).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// The command does not apply in the connection's current state.
    #[error("{command} is not allowed while the connection is {state}")]
    WrongState {
        /// The command.
        command: &'static str,
        /// The state.
        state: &'static str,
    },
    /// Private data longer than the configured limit.
    #[error("private data of {len} octets exceeds the limit of {max} (siw accepts at most 256 including the 4-octet IRD/ORD word)")]
    PrivateDataTooLong {
        /// Length given.
        len: usize,
        /// Limit.
        max: usize,
    },
    /// The configuration is invalid.
    #[error("invalid configuration: {0}")]
    Config(ConfigError),
}

/// Which rule a [`Config`](super::Config) or [`QpCaps`](rpcrdma_verbs::QpCaps)
/// breaks ([`ApiError::Config`]).
///
/// ```
/// use std::time::Instant;
/// use rpcrdma_iwarp::conn::{ApiError, Config, ConfigError, Connection};
///
/// let cfg = Config { revision: 3, ..Config::default() };
/// let err = Connection::responder(cfg, Instant::now()).unwrap_err();
/// assert_eq!(err, ApiError::Config(ConfigError::MpaRevision(3)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The MPA revision is neither 1 nor 2.
    #[error("MPA revision {0} is not supported (1 or 2)")]
    MpaRevision(u8),
    /// `max_ulpdu` is outside [`MIN_MAX_ULPDU`](crate::fpdu::MIN_MAX_ULPDU)..=
    /// [`MPA_MAX_ULPDU`](crate::fpdu::MPA_MAX_ULPDU).
    #[error("max_ulpdu {0} is outside {min}..={max}", min = crate::fpdu::MIN_MAX_ULPDU, max = crate::fpdu::MPA_MAX_ULPDU)]
    MaxUlpdu(usize),
    /// `max_private_data` exceeds what MPA can carry
    /// ([`MPA_MAX_PRIVATE_DATA`](crate::mpa::MPA_MAX_PRIVATE_DATA)).
    #[error("max_private_data {0} exceeds the MPA limit of {max}", max = crate::mpa::MPA_MAX_PRIVATE_DATA)]
    MaxPrivateData(usize),
    /// A send or receive queue depth of zero.
    #[error("queue depths must be at least 1 (send {send}, receive {recv})")]
    ZeroQueueDepth {
        /// The send-queue depth asked for.
        send: u32,
        /// The receive-queue depth asked for.
        recv: u32,
    },
}

impl ConfigError {
    /// Checks the queue depths of `caps`.
    pub(super) fn check_caps(caps: &rpcrdma_verbs::QpCaps) -> Result<(), ConfigError> {
        if caps.send_depth == 0 || caps.recv_depth == 0 {
            return Err(ConfigError::ZeroQueueDepth {
                send: caps.send_depth,
                recv: caps.recv_depth,
            });
        }
        Ok(())
    }
}
