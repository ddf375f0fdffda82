//! Errors, split by cause (STYLE-ANCHORS §2): configuration, API misuse,
//! per-call failures, and connection-fatal conditions.

use rpcrdma_verbs::{DeregisterError, PostError, RegisterError, WcOpcode, WcStatus};
use rpcrdma_wire::ErrCode;

/// A configuration value that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `credits_grant` is zero, which would deadlock the peer (RFC 8166 §3.3.1).
    #[error("credits_grant must be at least 1 (a zero grant deadlocks the requester)")]
    ZeroGrant,
    /// `credits_request` is zero.
    #[error("credits_request must be at least 1")]
    ZeroRequest,
    /// An inline size outside what RFC 8797 can express.
    #[error("{field} = {value} is outside 1024..=262144 (RFC 8797 §4.2)")]
    InlineSize {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u32,
    },
    /// The client's version policy names a version outside `versions`.
    #[error("client_version asks for a version that `versions` excludes")]
    VersionPolicy,
    /// A chunk-list or memory limit of zero: no Long call, no chunk or no
    /// Read chunk could ever be accepted.
    #[error(
        "{field} must be at least 1 (a Long call needs one Read segment, a chunk one segment, a Read chunk some memory)"
    )]
    ZeroLimit {
        /// The field.
        field: &'static str,
    },
}

/// Why one call failed without an RPC reply. The connection stays usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The responder answered with `RDMA_ERROR`.
    #[error("the responder answered RDMA_ERROR {}", code_name(*code))]
    RdmaError {
        /// `rdma_err`.
        code: ErrCode,
    },
    /// The responder does not speak our version (`ERR_VERS`) and we cannot
    /// fall back.
    #[error("the responder supports RPC-over-RDMA versions {low}..={high} only")]
    Version {
        /// `rdma_vers_low`.
        low: u32,
        /// `rdma_vers_high`.
        high: u32,
    },
    /// The reply contradicted the chunks we provided (a lying chunk length,
    /// a changed handle, a missing Reply chunk, ...).
    #[error("malformed reply: {0}")]
    BadReply(ReplyFault),
    /// The call cannot be sent: it needs more than the limits allow.
    #[error("call cannot be sent: {0}")]
    TooLarge(SizeFault),
    /// The call, or the reply it must provision for, is larger than a
    /// limit of this end: `setting` names the limit to raise.
    #[error("call cannot be sent: {what} ({size} bytes) exceeds {setting} ({limit} bytes); raise {setting} on both ends to carry it")]
    OverLimit {
        /// What is too large.
        what: &'static str,
        /// Its size in bytes.
        size: u64,
        /// The limit in bytes.
        limit: u64,
        /// The setting that holds the limit.
        setting: &'static str,
    },
    /// Memory registration for the call's chunks failed (the provider's
    /// error is the source).
    #[error("memory registration for the call's chunks failed")]
    Register(#[source] RegisterError),
    /// The connection failed before a reply arrived.
    #[error("connection lost before the reply arrived")]
    ConnectionLost,
}

/// How a reply contradicted the call it answers or the chunks the call
/// provided ([`CallError::BadReply`]; RFC 8166 §4.4.6, §5.4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplyFault {
    /// The reply is in another RPC-over-RDMA version than the call.
    #[error("the reply's version differs from the call's")]
    VersionMismatch,
    /// The reply's transport header could not be decoded.
    #[error("the reply's transport header is malformed")]
    MalformedHeader,
    /// A reply carries a Read list.
    #[error("a reply carries a Read list")]
    ReadList,
    /// The reply returns more Write chunks than the call provided.
    #[error("more Write chunks than the call provided")]
    ExtraWriteChunks,
    /// An `RDMA_NOMSG` reply to a call that provided no Reply chunk.
    #[error("RDMA_NOMSG reply, but the call provided no Reply chunk")]
    NoReplyChunkProvided,
    /// An `RDMA_NOMSG` reply that does not return the Reply chunk.
    #[error("RDMA_NOMSG reply without the Reply chunk the call provided")]
    ReplyChunkMissing,
    /// A returned chunk names a handle other than the one provided.
    #[error("a returned chunk names another handle")]
    ForeignHandle,
    /// A returned chunk claims more bytes than were provided.
    #[error("a returned chunk claims more bytes than were provided")]
    ChunkOverclaimed,
    /// A returned chunk has another number of segments than provided.
    #[error("a returned chunk has a different number of segments")]
    SegmentCount,
    /// The memory of a provided chunk could not be recovered.
    #[error("chunk memory could not be recovered")]
    ChunkMemoryLost,
    /// A returned chunk's length is beyond its memory.
    #[error("chunk length beyond its memory")]
    ChunkBeyondMemory,
}

/// Which limit a call that cannot be sent exceeds ([`CallError::TooLarge`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SizeFault {
    /// One chunk of more than 4 GiB (a segment length is 32 bits).
    #[error("chunk over 4 GiB")]
    ChunkOver4GiB,
    /// The call is larger than the largest message the peer accepts (its
    /// Version Two transport properties).
    #[error("the call exceeds the largest message the peer accepts (its transport properties)")]
    PeerMaxMessage,
    /// The transport header alone (its chunk lists) does not fit the
    /// peer's inline threshold.
    #[error("the transport header alone exceeds the peer's inline threshold")]
    HeaderOverInline,
}

fn code_name(code: ErrCode) -> String {
    code.name()
        .map_or_else(|| format!("{}", code.0), ToString::to_string)
}

/// Misuse of the engine's API by its driver (never caused by the peer).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// A call with this XID is already outstanding.
    #[error("xid {0:#010x} is already in use by an outstanding call")]
    XidInUse(u32),
    /// The reply names a call this engine does not hold (already answered,
    /// or from an earlier connection).
    #[error("no received call matches this reply token")]
    UnknownCall,
    /// Too many calls are queued waiting for credits.
    #[error("{0} calls are already waiting for credits; retry later")]
    QueueFull(usize),
    /// The reverse direction is not enabled (RFC 8167 §6: the client must
    /// first say it is ready).
    #[error("the peer has not enabled reverse-direction calls on this connection")]
    BackchannelNotReady,
    /// The connection has failed.
    #[error("the connection has failed: {0}")]
    Failed(EngineError),
    /// An optional feature with this `rdma_opttype` is already registered.
    #[error("an RDMA2_OPTIONAL feature with rdma_opttype {0:#010x} is already registered; give each feature its own type")]
    FeatureRegistered(u32),
}

/// A condition that ends the connection. Sticky: once set, the engine does
/// no new work and reports it again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// A work request completed with an error status (RDMA operational
    /// errors are fatal, RFC 8166 §5.5.3).
    #[error("{opcode:?} work request failed with {status:?}")]
    WorkRequest {
        /// The operation.
        opcode: WcOpcode,
        /// Its status.
        status: WcStatus,
    },
    /// The provider refused to post a work request.
    #[error("posting a work request failed")]
    Post(#[from] PostError),
    /// A Version Two requester got no answer to its first message in time
    /// (draft-cel-01 §5.2: treat the responder as lacking Version Two).
    #[error("no answer to the first Version Two message; the responder is assumed to speak Version One only")]
    NegotiationTimeout,
    /// The responder speaks no version we do.
    #[error("the responder supports versions {low}..={high}, none of which this end accepts")]
    NoCommonVersion {
        /// `rdma_vers_low`.
        low: u32,
        /// `rdma_vers_high`.
        high: u32,
    },
    /// Every credit is held by calls the upper layer abandoned and whose
    /// replies never came; only a new connection frees them.
    #[error("all {0} credits are held by abandoned calls whose replies never arrived")]
    CreditsLost(u32),
    /// A memory region of ours could not be invalidated (deregistered): the
    /// peer may still reach its memory, so the connection is closed to
    /// fence it before the call it belonged to completes (RFC 8166 §5.5.4).
    #[error("memory region {key:#010x} could not be invalidated; the connection is closed to fence it from the peer")]
    InvalidationFailed {
        /// The region's key.
        key: u32,
        /// What the provider said (the source).
        #[source]
        error: DeregisterError,
    },
    /// Work stayed on the send queue without any completion for the
    /// stall timeout (`EngineConfig::stall_timeout`): the peer stopped
    /// answering our RDMA Reads or reading its end of the connection. The
    /// connection is closed so the memory it holds goes back.
    #[error("nothing on the send queue completed for {timeout:?}: the peer stopped answering RDMA Reads or reading the connection")]
    Stalled {
        /// The timeout.
        timeout: std::time::Duration,
    },
    /// The peer kept sending messages that must be answered with an
    /// `RDMA_ERROR` (RFC 8166 §5.5) while it drained none of our Sends:
    /// the answers waiting for the send queue passed `limit` work
    /// requests. Owed answers are never dropped; the connection is closed
    /// instead (spec note E27).
    #[error("the peer keeps sending messages that must be answered while our send queue backs up (more than {limit} work requests waiting); closing the connection")]
    AnswerBacklog {
        /// The backlog that was passed.
        limit: usize,
    },
    /// The connection was closed.
    #[error("connection closed")]
    Closed,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_post_failure_keeps_the_providers_error() {
        let e: EngineError = PostError::QueueFull {
            queue: "send",
            depth: 4,
        }
        .into();
        assert_eq!(
            e,
            EngineError::Post(PostError::QueueFull {
                queue: "send",
                depth: 4
            })
        );
        // The provider's error is the source, named once: not repeated in
        // the message.
        assert_eq!(e.to_string(), "posting a work request failed");
        let source = std::error::Error::source(&e).expect("the provider's error");
        assert!(source
            .to_string()
            .contains("send queue is full (4 work requests"));
    }
    #[test]
    fn each_cause_is_named_once() {
        use std::error::Error as _;
        let reg = CallError::Register(RegisterError::TooManyRegions { max: 3 });
        let inv = EngineError::InvalidationFailed {
            key: 7,
            error: DeregisterError::NotRegistered { key: 7 },
        };
        for (e, cause) in [
            (&reg as &dyn std::error::Error, "3 memory regions"),
            (&inv, "is not registered"),
        ] {
            assert!(!e.to_string().contains(cause), "{e}");
            assert!(e.source().expect("a source").to_string().contains(cause));
        }
        // A reason of our own is printed, and is no source.
        let bad = CallError::BadReply(ReplyFault::ReadList);
        assert_eq!(
            bad.to_string(),
            "malformed reply: a reply carries a Read list"
        );
        assert!(bad.source().is_none());
    }
}
