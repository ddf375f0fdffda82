//! Why a received message was rejected, split by cause, and the one
//! function ([`HeaderError::action`]) that maps each cause to what the
//! receiver must do.

use rpcrdma_xdr::XdrError;

use crate::Proc;

/// What the receiver of a bad message must do (RFC 8166 §5.5, §5.6;
/// draft-cel-01 §3.1, §4.2.3). [`HeaderError::action`] picks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Reply with `RDMA_ERROR` / `RDMA2_ERROR`, `ERR_VERS`, carrying the
    /// range of versions this receiver supports.
    ReplyVers,
    /// Reply with `RDMA_ERROR` / `RDMA2_ERROR`, `ERR_BADHEADER`
    /// (`RDMA2_ERR_BAD_HEADER`).
    ReplyBadHeader,
    /// Reply with `RDMA2_ERROR`, `RDMA2_ERR_INVAL_OPTION`.
    ReplyInvalOption,
    /// Drop the message silently (an `RDMA_ERROR` that cannot be decoded,
    /// or a message too short to hold the words a reply must copy).
    Discard,
}

/// Why an `RDMA_ERROR` / `RDMA2_ERROR` message could not be decoded. Such a
/// message is always discarded silently (RFC 8166 §5.5), never answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorMessageDefect {
    /// Its `rdma_vers` is not one this receiver supports.
    #[error("it carries rdma_vers {0}, which this receiver does not support")]
    UnsupportedVersion(u32),
    /// The error body is cut short.
    #[error("its body is truncated: {0}")]
    Truncated(XdrError),
    /// The `rdma_err` value has no arm in the error union of its version.
    #[error("rdma_err {0} is not defined for this version")]
    UnknownCode(u32),
}

/// Why a received RPC-over-RDMA message is not valid.
///
/// Each variant names the rule that was broken; [`HeaderError::action`]
/// says what the receiver does about it, and [`crate::decode`] packages both
/// (plus the exact reply bytes) into a [`crate::Rejection`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// Fewer than 8 bytes: no complete `rdma_xid` and `rdma_vers`, so no
    /// reply can be formed (it must copy both).
    #[error("message is {len} bytes, shorter than the 8 bytes of rdma_xid and rdma_vers; it cannot be answered and is dropped")]
    TooShort {
        /// Length of the message.
        len: usize,
    },
    /// `rdma_vers` is outside the range this receiver supports.
    #[error("rdma_vers {vers} is not supported; this receiver supports versions {low} to {high}, so the sender must use one of those")]
    UnsupportedVersion {
        /// The version in the message.
        vers: u32,
        /// Lowest supported version.
        low: u32,
        /// Highest supported version.
        high: u32,
    },
    /// A header field is missing or malformed (truncated input, an XDR
    /// boolean that is not 0 or 1, an enum value outside its definition).
    #[error("malformed {field}: {error}")]
    Xdr {
        /// The header item being decoded.
        field: &'static str,
        /// What the XDR decoder found (printed, so not a `source()`).
        error: XdrError,
    },
    /// `rdma_proc` has no meaning in this version.
    #[error("rdma_proc {value} is not a message type of RPC-over-RDMA version {vers}")]
    UnknownProc {
        /// The version in the message.
        vers: u32,
        /// The `rdma_proc` value.
        value: u32,
    },
    /// `RDMA_MSGP` (2) or `RDMA_DONE` (3): reserved, no longer supported
    /// (RFC 8166 §5.6, our spec text §5.6.1/§5.6.2).
    #[error("{} is no longer supported in RPC-over-RDMA Version One (senders must not send it)", .proc_.v1_name().unwrap_or("reserved rdma_proc"))]
    ObsoleteProc {
        /// The `rdma_proc` value (2 or 3).
        proc_: Proc,
    },
    /// More Read segments than [`crate::Limits::max_read_segments`].
    #[error("the Read list has more than {max} segments, the most this receiver accepts")]
    TooManyReadSegments {
        /// The limit.
        max: u32,
    },
    /// More Write chunks than [`crate::Limits::max_write_chunks`].
    #[error("the Write list has more than {max} chunks, the most this receiver accepts")]
    TooManyWriteChunks {
        /// The limit.
        max: u32,
    },
    /// A Write or Reply chunk with more segments than
    /// [`crate::Limits::max_segments_per_chunk`].
    #[error("{list} has a chunk of {count} segments; this receiver accepts at most {max}")]
    TooManySegments {
        /// "the Write list" or "the Reply chunk".
        list: &'static str,
        /// The segment count in the message.
        count: u32,
        /// The limit.
        max: u32,
    },
    /// A Read segment's Position is not a multiple of four (RFC 8166 §3.4.5.1).
    #[error("Read segment {index} has Position {position}, which is not a multiple of four")]
    MisalignedPosition {
        /// Index of the segment in the Read list.
        index: usize,
        /// Its Position.
        position: u32,
    },
    /// A Write chunk with no segments (a chunk is one or more segments,
    /// RFC 8166 §3.4.4).
    #[error("Write chunk {index} has no segments; a chunk consists of one or more RDMA segments")]
    EmptyWriteChunk {
        /// Index of the chunk in the Write list.
        index: usize,
    },
    /// A Reply chunk that is present but has no segments.
    #[error("the Reply chunk is present but has no segments; a chunk consists of one or more RDMA segments")]
    EmptyReplyChunk,
    /// `RDMA_MSG` with a Read chunk at Position zero: the Payload stream
    /// travels inline and begins with the RPC XID, so nothing can be placed
    /// before it; a Long Call uses `RDMA_NOMSG`.
    #[error("{proc_name} has a Read chunk at Position zero; a Position-Zero Read chunk carries the whole RPC message and goes with {nomsg_name}")]
    PositionZeroWithPayload {
        /// `RDMA_MSG` or `RDMA2_MSG`.
        proc_name: &'static str,
        /// `RDMA_NOMSG` or `RDMA2_NOMSG`.
        nomsg_name: &'static str,
    },
    /// `RDMA_NOMSG` whose chunk lists have nowhere to hold the Payload
    /// stream: no Position-Zero Read chunk and no Reply chunk.
    #[error("{proc_name} must carry its Payload stream in a Position-Zero Read chunk or a Reply chunk, and this one has neither")]
    NoMsgWithoutChunks {
        /// `RDMA_NOMSG` or `RDMA2_NOMSG`.
        proc_name: &'static str,
    },
    /// A Version Two `RDMA2_NOMSG` whose chunk lists cannot hold a Payload
    /// stream of its direction: a CALL needs a Position-Zero Read chunk
    /// (the Long call), a REPLY the Reply chunk (draft-cel-01 §4.2.2, with
    /// RFC 8166 §5.2.4's rule that the chunk holds the Payload stream).
    #[error("{proc_name} with rdma_direction {direction} must carry its Payload stream in {needs}, and this one has none")]
    NoMsgWrongChunk {
        /// `RDMA2_NOMSG`.
        proc_name: &'static str,
        /// "CALL" or "REPLY".
        direction: &'static str,
        /// "a Position-Zero Read chunk" or "the Reply chunk".
        needs: &'static str,
    },
    /// Bytes follow the header of a message type that has no Payload stream.
    #[error(
        "{len} bytes follow the {proc_name} header, but {proc_name} carries no Payload stream"
    )]
    UnexpectedPayload {
        /// The message type.
        proc_name: &'static str,
        /// Bytes after the header.
        len: usize,
    },
    /// `RDMA_MSG` with no Payload stream after the header.
    #[error("{proc_name} must be followed by a Payload stream (the RPC message), and nothing follows the header")]
    MissingPayload {
        /// `RDMA_MSG` or `RDMA2_MSG`.
        proc_name: &'static str,
    },
    /// The payload is too short to hold the RPC words that must be checked.
    #[error("the Payload stream is {len} bytes, too short to hold the RPC {what}")]
    PayloadTooShort {
        /// Payload length.
        len: usize,
        /// "XID" or "msg_type".
        what: &'static str,
    },
    /// The RPC XID (first payload word) differs from `rdma_xid` (RFC 8166 §5.2.1).
    #[error("rdma_xid {rdma_xid:#010x} differs from the XID {rpc_xid:#010x} of the RPC message it carries")]
    XidMismatch {
        /// XID in the transport header.
        rdma_xid: u32,
        /// XID in the RPC message.
        rpc_xid: u32,
    },
    /// Version Two `rdma_direction` / `rdma_optdir` differs from the RPC
    /// message's `msg_type` (draft-cel-01 §4.2.2).
    #[error("{field} is {direction} but the RPC message's msg_type is {msg_type}")]
    DirectionMismatch {
        /// "rdma_direction" or "rdma_optdir".
        field: &'static str,
        /// The header's direction value.
        direction: u32,
        /// The RPC message's msg_type.
        msg_type: u32,
    },
    /// `RDMA2_OPTIONAL` with an `rdma_opttype` this receiver does not support.
    #[error("rdma_opttype {opttype} is not an optional feature this receiver supports")]
    UnsupportedOption {
        /// The option type.
        opttype: u32,
    },
    /// An `RDMA_ERROR` / `RDMA2_ERROR` that cannot be decoded.
    #[error("undecodable RDMA_ERROR: {0}")]
    UndecodableError(ErrorMessageDefect),
}

impl HeaderError {
    /// What the receiver must do about this error: the single place where
    /// causes map to replies.
    ///
    /// ```
    /// use rpcrdma_wire::{Action, HeaderError};
    /// let e = HeaderError::XidMismatch { rdma_xid: 1, rpc_xid: 2 };
    /// assert_eq!(e.action(), Action::ReplyBadHeader);
    /// ```
    pub fn action(&self) -> Action {
        match self {
            Self::TooShort { .. } | Self::UndecodableError(_) => Action::Discard,
            Self::UnsupportedVersion { .. } => Action::ReplyVers,
            Self::UnsupportedOption { .. } => Action::ReplyInvalOption,
            Self::Xdr { .. }
            | Self::UnknownProc { .. }
            | Self::ObsoleteProc { .. }
            | Self::TooManyReadSegments { .. }
            | Self::TooManyWriteChunks { .. }
            | Self::TooManySegments { .. }
            | Self::MisalignedPosition { .. }
            | Self::EmptyWriteChunk { .. }
            | Self::EmptyReplyChunk
            | Self::PositionZeroWithPayload { .. }
            | Self::NoMsgWithoutChunks { .. }
            | Self::NoMsgWrongChunk { .. }
            | Self::UnexpectedPayload { .. }
            | Self::MissingPayload { .. }
            | Self::PayloadTooShort { .. }
            | Self::XidMismatch { .. }
            | Self::DirectionMismatch { .. } => Action::ReplyBadHeader,
        }
    }

    pub(crate) fn xdr(field: &'static str) -> impl FnOnce(XdrError) -> Self {
        move |error| Self::Xdr { field, error }
    }
}

/// A configuration value outside what this crate implements.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A version range that is empty or includes versions other than 1 and 2.
    #[error("version range {low}..={high} is invalid: this implementation supports versions 1 and 2, so use 1..=1, 1..=2 or 2..=2")]
    BadVersionRange {
        /// Requested low end.
        low: u32,
        /// Requested high end.
        high: u32,
    },
}
