//! The three chunk lists of `RDMA_MSG` / `RDMA_NOMSG` (and their Version
//! Two counterparts): Read list, Write list, Reply chunk (RFC 8166 §3.5,
//! §5.3 of our spec text; draft-cel-01 §4.2 `rpcrdma2_chunk_lists`).

use rpcrdma_xdr::{Decoder, Encode, Encoder};

use crate::segment::{ReadSegment, Segment, WriteChunk, READ_SEGMENT_LEN, SEGMENT_LEN};
use crate::HeaderError;

/// Default [`Limits::max_read_segments`].
pub const MAX_READ_SEGMENTS: u32 = 64;
/// Default [`Limits::max_write_chunks`].
pub const MAX_WRITE_CHUNKS: u32 = 16;
/// Default [`Limits::max_segments_per_chunk`].
pub const MAX_SEGMENTS_PER_CHUNK: u32 = 64;

/// Upper bounds on what a received header may list.
///
/// XDR lets a peer announce any number of list entries; these limits cap
/// what the decoder will hold (and therefore allocate), and a header that
/// exceeds one is answered with `ERR_BADHEADER`. Counts are also checked
/// against the bytes actually present before any allocation.
///
/// The defaults are generous compared with the Linux kernel, which sends
/// at most a handful of segments per chunk and a few chunks per message:
///
/// | limit | default | bounds |
/// |---|---|---|
/// | [`max_read_segments`](Self::max_read_segments) | [`MAX_READ_SEGMENTS`] = 64 | Read segments in the Read list, over all Read chunks |
/// | [`max_write_chunks`](Self::max_write_chunks) | [`MAX_WRITE_CHUNKS`] = 16 | chunks in the Write list |
/// | [`max_segments_per_chunk`](Self::max_segments_per_chunk) | [`MAX_SEGMENTS_PER_CHUNK`] = 64 | segments in one Write chunk or in the Reply chunk |
///
/// With the defaults one header holds at most 64 × 20 + 16 × 64 × 16 +
/// 64 × 16 bytes of segments (about 18 KiB) however it is crafted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Most Read segments accepted in one Read list.
    pub max_read_segments: u32,
    /// Most Write chunks accepted in one Write list.
    pub max_write_chunks: u32,
    /// Most segments accepted in one Write chunk or Reply chunk.
    pub max_segments_per_chunk: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_read_segments: MAX_READ_SEGMENTS,
            max_write_chunks: MAX_WRITE_CHUNKS,
            max_segments_per_chunk: MAX_SEGMENTS_PER_CHUNK,
        }
    }
}

/// The Read list, Write list and Reply chunk of one header.
///
/// The Read list is kept as the flat list of [`ReadSegment`]s it is on the
/// wire (so a decoded header re-encodes byte for byte); [`ChunkLists::read_chunks`]
/// groups it into Read chunks.
///
/// ```
/// use rpcrdma_wire::{ChunkLists, ReadSegment, Segment, WriteChunk};
/// use rpcrdma_xdr::Encode;
///
/// // The §5.7 "frequently a requester does not provide any chunks" case:
/// // three zero words.
/// assert_eq!(ChunkLists::default().encoded_len(), 12);
///
/// let seg = Segment { handle: 1, length: 100, offset: 0 };
/// let lists = ChunkLists {
///     reads: vec![ReadSegment { position: 0, target: seg }],
///     writes: vec![],
///     reply: Some(WriteChunk::new(vec![seg])),
/// };
/// assert!(lists.has_position_zero());
/// // discriminator + read segment, end of list, end of Write list,
/// // discriminator + count + segment
/// assert_eq!(lists.encoded_len(), 4 + 20 + 4 + 4 + 4 + 4 + 16);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ChunkLists {
    /// The Read list, segment by segment (`rdma_reads`).
    pub reads: Vec<ReadSegment>,
    /// The Write list (`rdma_writes`).
    pub writes: Vec<WriteChunk>,
    /// The Reply chunk, if present (`rdma_reply`).
    pub reply: Option<WriteChunk>,
}

/// One Read chunk: the adjacent Read segments that share a Position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadChunk<'a> {
    /// Payload-stream position where the chunk's data belongs.
    pub position: u32,
    /// The segments whose contents, concatenated, form the chunk.
    pub segments: &'a [ReadSegment],
}

/// One Read chunk as the responder assembles it
/// ([`ChunkLists::read_chunks_by_position`]): every segment of the list at
/// one Position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PositionedChunk {
    /// Payload-stream position where the chunk's data belongs.
    pub position: u32,
    /// Its segments, in list order; their contents, concatenated, form the
    /// chunk.
    pub segments: Vec<Segment>,
}

impl PositionedChunk {
    /// Sum of the segment lengths.
    pub fn data_len(&self) -> u64 {
        self.segments
            .iter()
            .fold(0u64, |n, s| n.saturating_add(u64::from(s.length)))
    }
}

impl ReadChunk<'_> {
    /// Sum of the segment lengths.
    pub fn data_len(&self) -> u64 {
        self.segments
            .iter()
            .fold(0u64, |n, s| n.saturating_add(u64::from(s.target.length)))
    }
}

impl ChunkLists {
    /// Whether all three lists are empty / absent.
    pub fn is_empty(&self) -> bool {
        self.reads.is_empty() && self.writes.is_empty() && self.reply.is_none()
    }

    /// Whether the Read list has a Position-Zero Read chunk (a Long Call).
    pub fn has_position_zero(&self) -> bool {
        self.reads.iter().any(|s| s.position == 0)
    }

    /// The Read list grouped into Read chunks: runs of adjacent segments
    /// with the same Position, in list order.
    ///
    /// ```
    /// use rpcrdma_wire::{ChunkLists, ReadSegment, Segment};
    /// let s = |position, length| ReadSegment { position, target: Segment { handle: 7, length, offset: 0 } };
    /// let lists = ChunkLists { reads: vec![s(0, 10), s(0, 20), s(8, 5)], ..Default::default() };
    /// let chunks: Vec<_> = lists.read_chunks().collect();
    /// assert_eq!(chunks.len(), 2);
    /// assert_eq!((chunks[0].position, chunks[0].data_len()), (0, 30));
    /// assert_eq!((chunks[1].position, chunks[1].segments.len()), (8, 1));
    /// ```
    pub fn read_chunks(&self) -> impl Iterator<Item = ReadChunk<'_>> + '_ {
        let mut rest: &[ReadSegment] = &self.reads;
        std::iter::from_fn(move || {
            let first = rest.first()?;
            let n = rest
                .iter()
                .take_while(|s| s.position == first.position)
                .count();
            let (segments, tail) = rest.split_at(n);
            rest = tail;
            Some(ReadChunk {
                position: first.position,
                segments,
            })
        })
    }

    /// The Read list as a responder rebuilds the Payload stream from it:
    /// segments grouped by Position (wherever they sit in the list), the
    /// groups in increasing Position order, each group's segments in list
    /// order. This is what Linux's server does; a requester normally sends
    /// the list in this order already (see `docs/spec-notes.md`, W9).
    ///
    /// ```
    /// use rpcrdma_wire::{ChunkLists, ReadSegment, Segment};
    /// let s = |position, handle| ReadSegment { position, target: Segment { handle, length: 4, offset: 0 } };
    /// let lists = ChunkLists { reads: vec![s(16, 1), s(8, 2), s(16, 3)], ..Default::default() };
    /// let chunks = lists.read_chunks_by_position();
    /// assert_eq!(chunks.len(), 2);
    /// assert_eq!((chunks[0].position, chunks[0].data_len()), (8, 4));
    /// assert_eq!(chunks[1].segments.iter().map(|s| s.handle).collect::<Vec<_>>(), vec![1, 3]);
    /// ```
    //= rfc5666bis-04#section-4.4.4
    //# Segments MAY divide a chunk on any boundary that is convenient to the
    //# requester.
    pub fn read_chunks_by_position(&self) -> Vec<PositionedChunk> {
        let mut order: Vec<&ReadSegment> = self.reads.iter().collect();
        // Stable: segments of one Position keep their list order.
        order.sort_by_key(|s| s.position);
        let mut out: Vec<PositionedChunk> = Vec::new();
        for s in order {
            match out.last_mut() {
                Some(c) if c.position == s.position => c.segments.push(s.target),
                _ => out.push(PositionedChunk {
                    position: s.position,
                    segments: vec![s.target],
                }),
            }
        }
        out
    }

    /// Decodes the three lists, enforcing `limits` and the per-list rules
    /// (Position alignment, non-empty chunks).
    /// The encoded length of chunk lists with `reads` Read segments and
    /// these Write and Reply chunks, without building them (the same as
    /// [`Encode::encoded_len`] of such a `ChunkLists`).
    ///
    /// ```
    /// use rpcrdma_wire::{ChunkLists, Segment, WriteChunk};
    /// use rpcrdma_xdr::Encode;
    /// let w = vec![WriteChunk::new(vec![Segment::default(); 2])];
    /// let lists = ChunkLists { writes: w.clone(), ..ChunkLists::default() };
    /// assert_eq!(ChunkLists::encoded_len_of(0, &w, None), lists.encoded_len());
    /// assert_eq!(ChunkLists::encoded_len_of(0, &[], None), 12);
    /// ```
    pub fn encoded_len_of(
        reads: usize,
        writes: &[WriteChunk],
        reply: Option<&WriteChunk>,
    ) -> usize {
        let reads = reads * (4 + READ_SEGMENT_LEN) + 4;
        let writes = writes.iter().map(|c| 4 + c.encoded_len()).sum::<usize>() + 4;
        let reply = 4 + reply.map_or(0, Encode::encoded_len);
        reads + writes + reply
    }

    pub(crate) fn decode(dec: &mut Decoder<'_>, limits: &Limits) -> Result<Self, HeaderError> {
        // The common case, three empty lists: three XDR `false` words (the
        // checks below would find exactly this).
        if dec.rest().get(..12) == Some(&[0u8; 12][..]) {
            dec.skip(12).map_err(HeaderError::xdr("rdma_reads"))?;
            return Ok(Self::default());
        }
        let reads = decode_read_list(dec, limits)?;
        let writes = decode_write_list(dec, limits)?;
        let reply = if dec.get_bool().map_err(HeaderError::xdr("rdma_reply"))? {
            let chunk = decode_write_chunk(dec, limits, "the Reply chunk", "rdma_reply")?;
            if chunk.segments.is_empty() {
                return Err(HeaderError::EmptyReplyChunk);
            }
            Some(chunk)
        } else {
            None
        };
        Ok(Self {
            reads,
            writes,
            reply,
        })
    }
}

fn decode_read_list(
    dec: &mut Decoder<'_>,
    limits: &Limits,
) -> Result<Vec<ReadSegment>, HeaderError> {
    let mut reads: Vec<ReadSegment> = Vec::new();
    while dec.get_bool().map_err(HeaderError::xdr("rdma_reads"))? {
        if reads.len() >= limits.max_read_segments as usize {
            return Err(HeaderError::TooManyReadSegments {
                max: limits.max_read_segments,
            });
        }
        let seg: ReadSegment = dec.get().map_err(HeaderError::xdr("rdma_reads"))?;
        let index = reads.len();
        //= rfc5666bis-04#section-4.4.5.1
        //# The value in this field MUST be a multiple of four.
        if seg.position % 4 != 0 {
            return Err(HeaderError::MisalignedPosition {
                index,
                position: seg.position,
            });
        }
        reads.push(seg);
    }
    Ok(reads)
}

fn decode_write_list(
    dec: &mut Decoder<'_>,
    limits: &Limits,
) -> Result<Vec<WriteChunk>, HeaderError> {
    let mut writes = Vec::new();
    while dec.get_bool().map_err(HeaderError::xdr("rdma_writes"))? {
        if writes.len() >= limits.max_write_chunks as usize {
            return Err(HeaderError::TooManyWriteChunks {
                max: limits.max_write_chunks,
            });
        }
        let chunk = decode_write_chunk(dec, limits, "the Write list", "rdma_writes")?;
        if chunk.segments.is_empty() {
            return Err(HeaderError::EmptyWriteChunk {
                index: writes.len(),
            });
        }
        writes.push(chunk);
    }
    Ok(writes)
}

fn decode_write_chunk(
    dec: &mut Decoder<'_>,
    limits: &Limits,
    list: &'static str,
    field: &'static str,
) -> Result<WriteChunk, HeaderError> {
    let count = dec.peek_u32().map_err(HeaderError::xdr(field))?;
    if count > limits.max_segments_per_chunk {
        return Err(HeaderError::TooManySegments {
            list,
            count,
            max: limits.max_segments_per_chunk,
        });
    }
    // The count is now within the limit and is checked against the bytes
    // left before anything is allocated.
    let n = dec
        .get_count(limits.max_segments_per_chunk, SEGMENT_LEN)
        .map_err(HeaderError::xdr(field))?;
    let mut segments = Vec::with_capacity(n as usize);
    for _ in 0..n {
        segments.push(dec.get::<Segment>().map_err(HeaderError::xdr(field))?);
    }
    Ok(WriteChunk { segments })
}

//= rfc5666bis-04#section-5.2.4
//# The Transport stream contains the four fixed fields, followed by the Read
//# and Write lists and the Reply chunk, though any or all three MAY be marked
//# as not present.
impl Encode for ChunkLists {
    fn encode(&self, enc: &mut Encoder<'_>) {
        for seg in &self.reads {
            enc.put_bool(true);
            seg.encode(enc);
        }
        enc.put_bool(false);
        for chunk in &self.writes {
            enc.put_bool(true);
            chunk.encode(enc);
        }
        enc.put_bool(false);
        enc.put_optional(self.reply.as_ref());
    }

    fn encoded_len(&self) -> usize {
        Self::encoded_len_of(self.reads.len(), &self.writes, self.reply.as_ref())
    }
}
