//! RPC Payload streams whose DDP-eligible items may travel out of line.
//!
//! RFC 8166 §4.4 lets a sender *reduce* a Payload stream: the contents of a
//! DDP-eligible data item (never its length word) are removed from the
//! stream, together with their XDR padding, and moved by RDMA Read or Write.
//! A [`Payload`] is that picture in memory: the reduced inline stream plus
//! the removed items, each remembering where it belongs.

use bytes::{BufMut, Bytes, BytesMut};

use crate::align::{pad_len, round_up};
use crate::encode::Encoder;
use crate::error::XdrError;

/// A data item carried outside the inline XDR stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DdpItem {
    /// Offset in the inline (reduced) stream where the item's data belongs,
    /// i.e. just after its length word. `None` for an item whose place is
    /// only known to the Upper Layer: a Write chunk in a reply, which the
    /// decoder hands to the next [`crate::Decoder::get_opaque_ddp`].
    pub inline_offset: Option<usize>,
    /// The item's bytes, without XDR padding.
    pub data: Bytes,
}

/// An RPC message's Payload stream: the inline XDR bytes plus any
/// DDP-eligible items carried out of line.
///
/// A payload without items is just its inline bytes. With items, the full
/// XDR stream is obtained by inserting each item's data and padding at its
/// inline offset ([`Payload::flatten`], [`Payload::pieces`]).
///
/// ```
/// use bytes::Bytes;
/// use rpcrdma_xdr::{Decoder, PayloadEncoder};
///
/// let mut pe = PayloadEncoder::new();
/// let mut enc = pe.encoder();
/// enc.put_u32(1);
/// enc.put_opaque_ddp(Bytes::from_static(b"bulk!"));
/// enc.put_u32(2);
/// let payload = pe.finish();
/// assert_eq!(payload.inline().len(), 12);          // two words and the length
/// assert_eq!(payload.stream_len(), 12 + 8);        // plus "bulk!" and 3 pad bytes
///
/// let mut dec = Decoder::with_ddp(&payload);
/// assert_eq!(dec.get_u32()?, 1);
/// assert_eq!(&dec.get_opaque_ddp(64)?[..], b"bulk!");
/// assert_eq!(dec.get_u32()?, 2);
/// dec.expect_end()?;
/// # Ok::<(), rpcrdma_xdr::XdrError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Payload {
    inline: Bytes,
    items: Vec<DdpItem>,
}

impl Payload {
    /// A payload with no out-of-line items.
    pub fn inline_only(inline: Bytes) -> Self {
        Self {
            inline,
            items: Vec::new(),
        }
    }

    /// A received payload whose out-of-line items arrived in Read chunks at
    /// the given Payload-stream positions (RFC 8166 §4.4.5).
    ///
    /// Positions count from the start of the reconstructed stream, so each
    /// earlier item's padded length is subtracted to find its inline
    /// offset. Positions must be multiples of four, strictly increasing
    /// (after accounting for earlier items) and inside the inline stream.
    pub fn from_read_chunks(
        inline: Bytes,
        chunks: impl IntoIterator<Item = (u32, Bytes)>,
    ) -> Result<Self, XdrError> {
        let mut items = Vec::new();
        let mut placed = 0usize;
        let mut last_end = 0usize;
        for (position, data) in chunks {
            let pos = position as usize;
            let bad = XdrError::DdpMisplaced { position: pos };
            if pos % 4 != 0 || pos < last_end {
                return Err(bad);
            }
            let off = pos - placed;
            if off > inline.len() {
                return Err(bad);
            }
            //= rfc5666bis-04#section-4.4.5.1
            //# If the requester provides no actual round-up in a Read chunk,
            //# the responder MUST be prepared to provide appropriate round-up
            //# in the reconstructed call XDR stream The Position field in a
            //# read segment indicates where the containing Read chunk starts
            //# in the Payload stream.
            placed = placed.saturating_add(round_up(data.len()));
            last_end = pos.saturating_add(round_up(data.len()));
            items.push(DdpItem {
                inline_offset: Some(off),
                data,
            });
        }
        Ok(Self { inline, items })
    }

    /// A received reply payload whose DDP-eligible results arrived in Write
    /// chunks (RFC 8166 §4.4.6), in Write-list order. A chunk the responder
    /// did not use is empty.
    pub fn from_write_chunks(inline: Bytes, chunks: impl IntoIterator<Item = Bytes>) -> Self {
        Self {
            inline,
            items: chunks
                .into_iter()
                .map(|data| DdpItem {
                    inline_offset: None,
                    data,
                })
                .collect(),
        }
    }

    /// The inline (reduced) XDR stream.
    pub fn inline(&self) -> &Bytes {
        &self.inline
    }

    /// The out-of-line items, in stream order.
    pub fn items(&self) -> &[DdpItem] {
        &self.items
    }

    /// Splits the payload into its inline stream and its items.
    pub fn into_parts(self) -> (Bytes, Vec<DdpItem>) {
        (self.inline, self.items)
    }

    /// Whether any data travels out of line.
    pub fn has_items(&self) -> bool {
        !self.items.is_empty()
    }

    /// Length of the full XDR stream: inline bytes plus every item rounded up.
    pub fn stream_len(&self) -> usize {
        self.items.iter().fold(self.inline.len(), |n, i| {
            n.saturating_add(round_up(i.data.len()))
        })
    }

    /// Each positioned item with its position in the full stream.
    //= rfc5666bis-04#section-4.4.5
    //# The Position value MUST be computed from the beginning of the Payload
    //# stream, which begins at Position zero.
    pub fn item_positions(&self) -> impl Iterator<Item = (usize, &DdpItem)> + '_ {
        let mut placed = 0usize;
        self.items.iter().filter_map(move |item| {
            let off = item.inline_offset?;
            let pos = off + placed;
            placed += round_up(item.data.len());
            Some((pos, item))
        })
    }

    /// The full XDR stream as consecutive slices (inline runs, item data,
    /// item padding), ready for a vectored write. Unpositioned items are
    /// not part of it.
    pub fn pieces(&self) -> Vec<&[u8]> {
        const PAD: [u8; 4] = [0; 4];
        let mut out = Vec::with_capacity(1 + 3 * self.items.len());
        let mut at = 0usize;
        for item in &self.items {
            let Some(off) = item.inline_offset else {
                continue;
            };
            let off = off.clamp(at, self.inline.len());
            if off > at {
                out.push(&self.inline[at..off]);
            }
            out.push(&item.data[..]);
            let pad = pad_len(item.data.len());
            if pad > 0 {
                out.push(&PAD[..pad]);
            }
            at = off;
        }
        if at < self.inline.len() {
            out.push(&self.inline[at..]);
        }
        out
    }

    /// The full XDR stream in one buffer. Free when there are no items;
    /// otherwise copies.
    pub fn flatten(&self) -> Bytes {
        if self.items.iter().all(|i| i.inline_offset.is_none()) {
            return self.inline.clone();
        }
        let mut b = BytesMut::with_capacity(self.stream_len());
        for piece in self.pieces() {
            b.put_slice(piece);
        }
        b.freeze()
    }
}

/// Builds a [`Payload`]: an [`Encoder`] that records DDP-eligible items
/// ([`Encoder::put_opaque_ddp`]) out of line instead of copying them.
#[derive(Debug, Default)]
pub struct PayloadEncoder {
    buf: BytesMut,
    items: Vec<DdpItem>,
}

impl PayloadEncoder {
    /// An empty payload.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty payload with room for `capacity` inline bytes.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            buf: BytesMut::with_capacity(capacity),
            items: Vec::new(),
        }
    }

    /// An encoder appending to this payload.
    pub fn encoder(&mut self) -> Encoder<'_> {
        Encoder::with_ddp(&mut self.buf, &mut self.items)
    }

    /// Inline bytes so far.
    pub fn inline_len(&self) -> usize {
        self.buf.len()
    }

    /// The finished payload.
    pub fn finish(self) -> Payload {
        Payload {
            inline: self.buf.freeze(),
            items: self.items,
        }
    }

    /// An empty payload encoded into the free space of `arena`, a buffer
    /// kept for reuse: [`PayloadEncoder::finish_into`] gives it back.
    /// Encoding many small messages this way allocates nothing once the
    /// arena's block is shared (see [`BytesMut::split`]): each message is a
    /// view of the block, cloned by a reference count, and the block is
    /// reused once every view of it is gone.
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use rpcrdma_xdr::PayloadEncoder;
    ///
    /// let mut arena = BytesMut::new();
    /// for i in 0..3u32 {
    ///     let mut pe = PayloadEncoder::in_arena(&mut arena, 64);
    ///     pe.encoder().put_u32(i);
    ///     let p = pe.finish_into(&mut arena);
    ///     assert_eq!(&p.inline()[..], &i.to_be_bytes());
    /// }
    /// ```
    pub fn in_arena(arena: &mut BytesMut, capacity: usize) -> Self {
        let mut buf = std::mem::take(arena);
        buf.clear();
        if buf.capacity() < capacity {
            buf.reserve(capacity.max(ARENA_BLOCK));
        }
        Self {
            buf,
            items: Vec::new(),
        }
    }

    /// The finished payload of an encoder made by
    /// [`PayloadEncoder::in_arena`]; the rest of the block goes back to
    /// `arena`.
    pub fn finish_into(mut self, arena: &mut BytesMut) -> Payload {
        let inline = self.buf.split().freeze();
        // A block that grew for a large message is not kept (the message
        // alone holds it, until it is dropped).
        if self.buf.capacity() <= ARENA_KEEP {
            *arena = self.buf;
        }
        Payload {
            inline,
            items: self.items,
        }
    }
}

/// Capacity of a fresh arena block ([`PayloadEncoder::in_arena`]).
const ARENA_BLOCK: usize = 8 * 1024;
/// Most free space an arena keeps after a message.
const ARENA_KEEP: usize = 4 * ARENA_BLOCK;
