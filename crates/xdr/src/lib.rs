//! XDR (RFC 4506) primitives for every codec in the RPC-over-RDMA stack.
//!
//! This crate is the bottom of the protocol stack: the RPC-over-RDMA
//! transport headers (`rpcrdma-wire`), ONC RPC messages (`rpcrdma-oncrpc`)
//! and every Upper Layer Protocol encode and decode through it.
//!
//! * [`Encoder`] appends XDR items to a caller-owned [`bytes::BytesMut`].
//! * [`Decoder`] is a zero-copy cursor over `&[u8]` (optionally backed by a
//!   [`bytes::Bytes`] so opaque data can be handed out without copying).
//!   **Every length read from the input is checked against what is left
//!   before it is used**, and counted items are checked against a caller
//!   supplied maximum, so hostile input yields an [`XdrError`] — never a
//!   panic and never an allocation the input did not pay for.
//! * [`Payload`] and [`PayloadEncoder`] model an RPC *Payload stream* that
//!   may carry DDP-eligible data items out of line (RFC 8166 §4.4): the
//!   inline (reduced) XDR stream plus a list of [`DdpItem`]s. Over TCP the
//!   pieces are written back to back (vectored, no copy); over RDMA the
//!   transport may move each item by RDMA Read or Write instead. A
//!   [`Decoder`] built with [`Decoder::with_ddp`] re-inserts received items
//!   where the Upper Layer asks for them with [`Decoder::get_opaque_ddp`].
//! * [`open_enum!`] defines an *open enumeration*, the type of every enum
//!   field a peer sends (XDR enums, `rdma_proc`, `accept_stat`, RDMAP
//!   opcodes): named constants, unknown values kept and reported.
//!
//! # Determinism contract
//!
//! Pure functions over byte buffers: no I/O, no clocks, no threads, no
//! global state.
//!
//! # Example
//!
//! ```
//! use bytes::BytesMut;
//! use rpcrdma_xdr::{Decoder, Encoder};
//!
//! let mut buf = BytesMut::new();
//! let mut enc = Encoder::new(&mut buf);
//! enc.put_u32(7);
//! enc.put_opaque(b"hello");
//! enc.put_bool(true);
//! assert_eq!(buf.len(), 4 + 4 + 8 + 4);
//!
//! let mut dec = Decoder::new(&buf);
//! assert_eq!(dec.get_u32()?, 7);
//! assert_eq!(dec.get_opaque(16)?, b"hello");
//! assert!(dec.get_bool()?);
//! dec.expect_end()?;
//! # Ok::<(), rpcrdma_xdr::XdrError>(())
//! ```
#![forbid(unsafe_code)]

mod decode;
mod encode;
mod error;
mod open_enum;
mod payload;

pub use decode::Decoder;
pub use encode::Encoder;
pub use error::{EncodeError, XdrError};
pub use payload::{DdpItem, Payload, PayloadEncoder};

/// Size in bytes of one XDR unit: every item is a multiple of this.
pub const UNIT: usize = 4;

/// Number of zero bytes XDR appends after `len` bytes of opaque data.
///
/// ```
/// assert_eq!(rpcrdma_xdr::pad_len(5), 3);
/// assert_eq!(rpcrdma_xdr::pad_len(8), 0);
/// ```
#[inline]
pub const fn pad_len(len: usize) -> usize {
    (UNIT - (len % UNIT)) % UNIT
}

/// `len` rounded up to the next multiple of four (the XDR "round-up").
///
/// Saturates instead of overflowing for lengths near `usize::MAX`.
///
/// ```
/// assert_eq!(rpcrdma_xdr::round_up(5), 8);
/// assert_eq!(rpcrdma_xdr::round_up(0), 0);
/// ```
#[inline]
pub const fn round_up(len: usize) -> usize {
    len.saturating_add(pad_len(len))
}

/// A type with an XDR encoding.
///
/// Implementors write [`Encode::encode`] and [`Encode::encoded_len`]; the
/// buffer-level methods come with the trait.
///
/// ```
/// use rpcrdma_xdr::Encode;
/// let v: u64 = 0x0102_0304_0506_0708;
/// assert_eq!(v.encoded_len(), 8);
/// assert_eq!(&v.to_bytes()[..], &[1, 2, 3, 4, 5, 6, 7, 8]);
/// ```
pub trait Encode {
    /// Appends the XDR encoding of `self`.
    fn encode(&self, enc: &mut Encoder<'_>);

    /// The exact number of bytes [`Encode::encode`] appends, known before
    /// encoding (for size decisions such as inline thresholds).
    fn encoded_len(&self) -> usize;

    /// Appends the encoding to `buf` (existing content is kept).
    fn encode_into(&self, buf: &mut bytes::BytesMut) {
        self.encode(&mut Encoder::new(buf));
    }

    /// The encoding as a fresh buffer of exactly
    /// [`Encode::encoded_len`] bytes.
    fn to_bytes(&self) -> bytes::Bytes {
        let mut buf = bytes::BytesMut::with_capacity(self.encoded_len());
        self.encode_into(&mut buf);
        buf.freeze()
    }
}

/// A type that can be decoded from XDR, possibly borrowing from the input.
pub trait Decode<'a>: Sized {
    /// Decodes one value, advancing the cursor past it.
    fn decode(dec: &mut Decoder<'a>) -> Result<Self, XdrError>;
}

impl Encode for u32 {
    fn encode(&self, enc: &mut Encoder<'_>) {
        enc.put_u32(*self);
    }
    fn encoded_len(&self) -> usize {
        4
    }
}

impl Decode<'_> for u32 {
    fn decode(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        dec.get_u32()
    }
}

impl Encode for u64 {
    fn encode(&self, enc: &mut Encoder<'_>) {
        enc.put_u64(*self);
    }
    fn encoded_len(&self) -> usize {
        8
    }
}

impl Decode<'_> for u64 {
    fn decode(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        dec.get_u64()
    }
}

impl Encode for bool {
    fn encode(&self, enc: &mut Encoder<'_>) {
        enc.put_bool(*self);
    }
    fn encoded_len(&self) -> usize {
        4
    }
}

impl Decode<'_> for bool {
    fn decode(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        dec.get_bool()
    }
}
