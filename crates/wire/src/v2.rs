//! RPC-over-RDMA Version Two headers, exactly as draft-cel-nfsv4-rpcrdma-
//! version-two-01 §4.2 writes them (with the readings recorded in
//! `docs/spec-notes.md` where the draft contradicts itself).

use std::collections::BTreeSet;

use bytes::Bytes;
use rpcrdma_xdr::{Decoder, Encode, Encoder, XdrError};

use crate::prefix::{put_prefix, PREFIX_LEN};
use crate::{ChunkLists, ErrorBody, HeaderError, Limits, Proc};

/// The version number of RPC-over-RDMA Version Two.
pub const VERSION: u32 = 2;

/// Default inline threshold of Version Two, in bytes (draft-cel-01 §2.3).
pub const DEFAULT_INLINE_THRESHOLD: u32 = 4096;

/// `enum msg_type` (RFC 5531): the direction of a Version Two message
/// (`rdma_direction`, `rdma_optdir`). Values other than 0 and 1 are an XDR
/// error, so this enum is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// `CALL` (0): requester to responder.
    Call,
    /// `REPLY` (1): responder to requester.
    Reply,
}

impl Direction {
    /// The XDR value.
    pub fn value(self) -> u32 {
        match self {
            Self::Call => 0,
            Self::Reply => 1,
        }
    }

    /// `"CALL"` or `"REPLY"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Call => "CALL",
            Self::Reply => "REPLY",
        }
    }

    fn decode(dec: &mut Decoder<'_>, what: &'static str) -> Result<Self, HeaderError> {
        let offset = dec.position();
        match dec.get_u32().map_err(HeaderError::xdr(what))? {
            0 => Ok(Self::Call),
            1 => Ok(Self::Reply),
            value => Err(HeaderError::Xdr {
                field: what,
                error: XdrError::BadDiscriminant {
                    what: "msg_type",
                    offset,
                    value,
                },
            }),
        }
    }
}

rpcrdma_xdr::open_enum! {
    /// `rdma_opttype` of an `RDMA2_OPTIONAL` message: an open number space
    /// whose values other Standards Track documents define (draft §3.1);
    /// none is named yet.
    pub struct OptionType(u32) {}
}

/// The optional features (`rdma_opttype` values) a receiver supports.
///
/// No optional feature has been defined yet, so the default registry is
/// empty and every `RDMA2_OPTIONAL` message is answered with
/// `RDMA2_ERR_INVAL_OPTION` (draft §3.1). A registry with entries lets such
/// messages through to the caller, which interprets `rdma_optinfo`.
///
/// ```
/// use rpcrdma_wire::{OptionRegistry, OptionType};
/// let mut reg = OptionRegistry::default();
/// assert!(!reg.supports(OptionType(7)));
/// reg.insert(OptionType(7));
/// assert!(reg.supports(OptionType(7)));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OptionRegistry {
    types: BTreeSet<OptionType>,
}

impl OptionRegistry {
    /// Marks `t` as supported.
    pub fn insert(&mut self, t: OptionType) {
        self.types.insert(t);
    }

    /// Whether `t` is supported.
    pub fn supports(&self, t: OptionType) -> bool {
        self.types.contains(&t)
    }
}

/// The body of `RDMA2_OPTIONAL` (`rpcrdma2_optional`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Optional {
    /// `rdma_optdir`.
    pub direction: Direction,
    /// `rdma_opttype`.
    pub opttype: OptionType,
    /// `rdma_optinfo`, zero-copy from the receive buffer when decoded.
    pub optinfo: Bytes,
}

/// A Version Two transport header (`rpcrdma2_xprt_hdr`).
///
/// ```
/// use rpcrdma_wire::{ChunkLists, Direction, V2Body, V2Header};
/// use rpcrdma_xdr::Encode;
/// let hdr = V2Header {
///     xid: 5,
///     credits: 32,
///     body: V2Body::Msg { direction: Direction::Call, chunks: ChunkLists::default() },
/// };
/// // prefix (16) + rdma_direction (4) + three empty lists (12)
/// assert_eq!(hdr.encoded_len(), 32);
/// assert_eq!(&hdr.to_bytes()[4..8], &[0, 0, 0, 2]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct V2Header {
    /// `rdma_xid`.
    pub xid: u32,
    /// `rdma_credit`.
    pub credits: u32,
    /// The message type and its body.
    pub body: V2Body,
}

/// The body of a Version Two header (`rpcrdma2_body`), by message type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum V2Body {
    /// `RDMA2_MSG`: chunk lists (`rpcrdma2_chunk_lists`), then the Payload stream.
    Msg {
        /// `rdma_direction`.
        direction: Direction,
        /// The chunk lists.
        chunks: ChunkLists,
    },
    /// `RDMA2_NOMSG`: chunk lists only.
    NoMsg {
        /// `rdma_direction`.
        direction: Direction,
        /// The chunk lists.
        chunks: ChunkLists,
    },
    /// `RDMA2_ERROR` (`rpcrdma2_error`; no direction field, see spec notes).
    Error(ErrorBody),
    /// `RDMA2_OPTIONAL`.
    Optional(Optional),
}

impl V2Header {
    /// The `rdma_proc` value of this header.
    pub fn proc_(&self) -> Proc {
        match self.body {
            V2Body::Msg { .. } => Proc::MSG,
            V2Body::NoMsg { .. } => Proc::NOMSG,
            V2Body::Error(_) => Proc::ERROR,
            V2Body::Optional(_) => Proc::OPTIONAL,
        }
    }

    /// The direction of the message: `rdma_direction`, `rdma_optdir`, or
    /// REPLY for `RDMA2_ERROR` (draft §4.2.2).
    pub fn direction(&self) -> Direction {
        match &self.body {
            V2Body::Msg { direction, .. } | V2Body::NoMsg { direction, .. } => *direction,
            V2Body::Error(_) => Direction::Reply,
            V2Body::Optional(o) => o.direction,
        }
    }

    /// The chunk lists, for `RDMA2_MSG` and `RDMA2_NOMSG`.
    pub fn chunks(&self) -> Option<&ChunkLists> {
        match &self.body {
            V2Body::Msg { chunks, .. } | V2Body::NoMsg { chunks, .. } => Some(chunks),
            _ => None,
        }
    }

    /// Decodes the body that follows a Version Two prefix (XDR only; the
    /// option registry and payload rules are applied by the caller).
    pub(crate) fn decode_body(
        dec: &mut Decoder<'_>,
        backing: &Bytes,
        proc_: Proc,
        limits: &Limits,
    ) -> Result<V2Body, HeaderError> {
        match proc_ {
            Proc::MSG | Proc::NOMSG => {
                let direction = Direction::decode(dec, "rdma_direction")?;
                let chunks = ChunkLists::decode(dec, limits)?;
                Ok(if proc_ == Proc::MSG {
                    V2Body::Msg { direction, chunks }
                } else {
                    V2Body::NoMsg { direction, chunks }
                })
            }
            Proc::ERROR => ErrorBody::decode(dec, VERSION)
                .map(V2Body::Error)
                .map_err(HeaderError::UndecodableError),
            Proc::OPTIONAL => {
                let direction = Direction::decode(dec, "rdma_optdir")?;
                let opttype = OptionType(dec.get_u32().map_err(HeaderError::xdr("rdma_opttype"))?);
                // Zero-copy slice, bounded by the input itself.
                let info = dec
                    .get_opaque(u32::MAX)
                    .map_err(HeaderError::xdr("rdma_optinfo"))?;
                let optinfo = if info.is_empty() {
                    Bytes::new()
                } else {
                    backing.slice_ref(info)
                };
                Ok(V2Body::Optional(Optional {
                    direction,
                    opttype,
                    optinfo,
                }))
            }
            other => Err(HeaderError::UnknownProc {
                vers: VERSION,
                value: other.0,
            }),
        }
    }
}

impl Encode for V2Header {
    fn encode(&self, enc: &mut Encoder<'_>) {
        put_prefix(enc, self.xid, VERSION, self.credits, self.proc_());
        match &self.body {
            V2Body::Msg { direction, chunks } | V2Body::NoMsg { direction, chunks } => {
                enc.put_u32(direction.value());
                chunks.encode(enc);
            }
            V2Body::Error(e) => e.encode(enc),
            V2Body::Optional(o) => {
                enc.put_u32(o.direction.value());
                enc.put_u32(o.opttype.0);
                enc.put_opaque(&o.optinfo);
            }
        }
    }

    fn encoded_len(&self) -> usize {
        PREFIX_LEN
            + match &self.body {
                V2Body::Msg { chunks, .. } | V2Body::NoMsg { chunks, .. } => {
                    4 + chunks.encoded_len()
                }
                V2Body::Error(e) => e.encoded_len(),
                V2Body::Optional(o) => 12 + rpcrdma_xdr::round_up(o.optinfo.len()),
            }
    }
}
