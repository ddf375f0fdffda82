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

mod align;
mod decode;
mod encode;
mod error;
mod open_enum;
mod payload;

pub use align::{pad_len, round_up, UNIT};
pub use decode::{Decode, Decoder};
pub use encode::{Encode, Encoder};
pub use error::{EncodeError, XdrError};
pub use payload::{DdpItem, Payload, PayloadEncoder};
