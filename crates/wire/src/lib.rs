//! RPC-over-RDMA transport header codecs: Version One (RFC 8166), Version
//! Two (draft-cel-nfsv4-rpcrdma-version-two-01) and the RFC 8797 CM private
//! data message.
//!
//! This is the layer between the XDR primitives (`rpcrdma-xdr`) and the
//! connection engine. It knows the byte layout and the validity rules of
//! every header, and nothing about connections, credits in flight or
//! memory registration.
//!
//! # Entry points
//!
//! * **Receive**: [`decode`]`(&Bytes, &DecodeConfig) -> Result<`[`Message`]`, `[`Rejection`]`>`.
//!   A [`Message`] is a typed [`Header`] ([`V1Header`] or [`V2Header`])
//!   plus the payload that follows it, as a zero-copy slice of the receive
//!   buffer. A [`Rejection`] carries the broken rule ([`HeaderError`]) and
//!   the [`Verdict`]: the exact [`ErrorReply`] to send (`ERR_VERS` with the
//!   configured [`VersionRange`], `ERR_BADHEADER`, `RDMA2_ERR_INVAL_OPTION`)
//!   or [`Verdict::Discard`]. [`decode_owned`] does the same with the
//!   buffer taken by value (the payload is the buffer itself, advanced).
//! * **Send**: build a [`V1Header`] / [`V2Header`]; its
//!   [`rpcrdma_xdr::Encode`] implementation gives the
//!   [`encoded_len`](rpcrdma_xdr::Encode::encoded_len) (for inline-threshold
//!   decisions) and [`encode_into`](rpcrdma_xdr::Encode::encode_into) a
//!   `BytesMut` (or [`to_bytes`](rpcrdma_xdr::Encode::to_bytes)). The payload is
//!   never copied next to it: send it as a second gather element.
//! * **Connection setup**: [`PrivateData`] encodes and finds the RFC 8797
//!   message; [`InlineThresholds::derive`] and
//!   [`private_data::remote_invalidation_allowed`] turn both sides'
//!   advertisements into the connection's settings.
//! * **Peeking**: [`prefix::Packet`] reads the four fixed words without
//!   decoding the rest.
//!
//! Version One and Version Two headers are distinct types that share
//! [`Segment`], [`ReadSegment`], [`WriteChunk`] and [`ChunkLists`].
//! Wire enums are open ([`Proc`], [`ErrCode`], [`OptionType`]), so unknown
//! values are reported, not lost.
//!
//! ```
//! use bytes::{Bytes, BytesMut};
//! use rpcrdma_wire::{decode, ChunkLists, DecodeConfig, Segment, V1Body, V1Header, WriteChunk};
//! use rpcrdma_xdr::Encode;
//!
//! // A call that offers a Reply chunk, then its payload in a second buffer.
//! let hdr = V1Header {
//!     xid: 7,
//!     credits: 32,
//!     body: V1Body::Msg(ChunkLists {
//!         reply: Some(WriteChunk::new(vec![Segment { handle: 0xabc, length: 4096, offset: 0x1000 }])),
//!         ..ChunkLists::default()
//!     }),
//! };
//! let mut send = BytesMut::with_capacity(hdr.encoded_len());
//! hdr.encode_into(&mut send);
//! let rpc_call = [0, 0, 0, 7, 0, 0, 0, 0];
//!
//! // What the peer receives: both pieces back to back.
//! let mut recv = send.clone();
//! recv.extend_from_slice(&rpc_call);
//! let m = decode(&recv.freeze(), &DecodeConfig::default()).unwrap();
//! assert_eq!(m.header.chunks().unwrap().reply.as_ref().unwrap().data_len(), 4096);
//! assert_eq!(&m.payload[..], &rpc_call);
//! ```
//!
//! # Limits
//!
//! Every count read from the wire is checked against the bytes left and
//! against a named [`Limits`] value ([`MAX_READ_SEGMENTS`],
//! [`MAX_WRITE_CHUNKS`], [`MAX_SEGMENTS_PER_CHUNK`]) before anything is
//! allocated. No input can make the decoder panic.
//!
//! # Determinism contract
//!
//! Pure functions over byte buffers: no I/O, no sockets, no clocks, no
//! threads, no global state, no randomness. The same bytes and the same
//! [`DecodeConfig`] always give the same result.
//!
//! Where the specifications are ambiguous or inconsistent, the reading
//! this crate implements is recorded in `docs/spec-notes.md` and pinned by
//! a test (`tests/spec_notes.rs`).
//!
//! The `fuzzing` feature adds the module `fuzzing`: the entry points of the
//! cargo-afl harnesses (`fuzz/`) and of the bounded runs in this crate's
//! tests. It is test support; the codecs never need it.
#![forbid(unsafe_code)]

mod chunks;
mod decode;
mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod prefix;
pub mod private_data;
mod rdma_error;
mod segment;
pub mod v1;
pub mod v2;

pub use chunks::{
    ChunkLists, Limits, PositionedChunk, ReadChunk, MAX_READ_SEGMENTS, MAX_SEGMENTS_PER_CHUNK,
    MAX_WRITE_CHUNKS,
};
pub use decode::{
    decode, decode_owned, decode_plain, DecodeConfig, ErrorCredits, Header, Message, PlainMsg,
    Rejection, Verdict, VersionRange,
};
pub use error::{Action, ConfigError, ErrorMessageDefect, HeaderError};
pub use prefix::Proc;
pub use private_data::{InlineSize, InlineThresholds, PrivateData, PrivateDataError};
pub use rdma_error::{ErrCode, ErrorBody, ErrorReply};
pub use segment::{ReadSegment, Segment, WriteChunk, READ_SEGMENT_LEN, SEGMENT_LEN};
pub use v1::{V1Body, V1Header};
pub use v2::{Direction, OptionRegistry, OptionType, Optional, V2Body, V2Header};
