//! RDMA segments: the coordinates of registered memory (RFC 8166 §3.4.3,
//! draft §4.2 `rpcrdma2_segment`). Version One and Version Two share them.

use rpcrdma_xdr::{Decode, Decoder, Encode, Encoder, XdrError};

/// Encoded size of a [`Segment`]: handle, length and a 64-bit offset.
pub const SEGMENT_LEN: usize = 16;

/// Encoded size of a [`ReadSegment`]: a position word plus a [`Segment`].
pub const READ_SEGMENT_LEN: usize = 4 + SEGMENT_LEN;

/// A plain RDMA segment (`rpcrdma1_segment` / `rpcrdma2_segment`): one
/// contiguous piece of registered memory the peer may read or write.
///
/// ```
/// use bytes::BytesMut;
/// use rpcrdma_wire::Segment;
/// use rpcrdma_xdr::{Encode, Encoder};
///
/// let seg = Segment { handle: 0x1234, length: 4096, offset: 0xffff_0000_0000_1000 };
/// let mut buf = BytesMut::new();
/// seg.encode(&mut Encoder::new(&mut buf));
/// assert_eq!(buf.len(), seg.encoded_len());
/// assert_eq!(&buf[..8], &[0, 0, 0x12, 0x34, 0, 0, 0x10, 0]);
/// ```
//= rfc5666bis-04#section-3.2.2
//= type=implication
//# The RPC-over-RDMA Version One protocol assumes that each segment of
//# registered memory MUST be identified with a steering tag of no more than
//# 32 bits and memory addresses of up to 64 bits in length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Segment {
    /// Steering tag (STag, R_key) of the registered memory (`rdma_handle`).
    pub handle: u32,
    /// Length of the memory segment in octets (`rdma_length`).
    pub length: u32,
    /// Offset or address of the segment (`rdma_offset`).
    pub offset: u64,
}

impl Encode for Segment {
    fn encode(&self, enc: &mut Encoder<'_>) {
        enc.put_u32(self.handle);
        enc.put_u32(self.length);
        enc.put_u64(self.offset);
    }
    fn encoded_len(&self) -> usize {
        SEGMENT_LEN
    }
}

impl Decode<'_> for Segment {
    fn decode(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        Ok(Self {
            handle: dec.get_u32()?,
            length: dec.get_u32()?,
            offset: dec.get_u64()?,
        })
    }
}

/// A Read segment (`rpcrdma1_read_segment`): a [`Segment`] plus the
/// Position in the Payload stream where its chunk belongs (RFC 8166 §3.4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ReadSegment {
    /// Byte offset in the Payload stream where the chunk is re-inserted
    /// (`rdma_position`). Must be a multiple of four.
    pub position: u32,
    /// The memory holding (a piece of) the chunk (`rdma_target`).
    pub target: Segment,
}

impl Encode for ReadSegment {
    fn encode(&self, enc: &mut Encoder<'_>) {
        enc.put_u32(self.position);
        self.target.encode(enc);
    }
    fn encoded_len(&self) -> usize {
        READ_SEGMENT_LEN
    }
}

impl Decode<'_> for ReadSegment {
    fn decode(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        Ok(Self {
            position: dec.get_u32()?,
            target: dec.get()?,
        })
    }
}

/// A Write chunk (`rpcrdma1_write_chunk`): a counted array of segments the
/// responder fills in order. The Reply chunk has the same type.
///
/// In a reply, the responder rewrites each segment's length to the number of
/// bytes it actually wrote (RFC 8166 §3.4.6); [`WriteChunk::data_len`] sums
/// them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct WriteChunk {
    /// The chunk's segments, in array order.
    pub segments: Vec<Segment>,
}

impl WriteChunk {
    /// A chunk made of the given segments.
    pub fn new(segments: Vec<Segment>) -> Self {
        Self { segments }
    }

    /// Sum of the segment lengths (saturating at `u64::MAX`, which cannot
    /// be reached with `u32` lengths and the decoder's segment limit).
    pub fn data_len(&self) -> u64 {
        self.segments
            .iter()
            .fold(0u64, |n, s| n.saturating_add(u64::from(s.length)))
    }
}

impl Encode for WriteChunk {
    fn encode(&self, enc: &mut Encoder<'_>) {
        enc.put_array(&self.segments);
    }
    fn encoded_len(&self) -> usize {
        4 + SEGMENT_LEN * self.segments.len()
    }
}
