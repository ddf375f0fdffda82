//! Record marking (RFC 5531 §11): RPC messages over a byte stream.
//!
//! A record is one or more fragments; each fragment starts with a 4-byte
//! header whose top bit marks the last fragment and whose low 31 bits give
//! the fragment's length. [`Deframer`] reassembles records from bytes as
//! they arrive and enforces a maximum record size *before* buffering
//! anything; [`frame`] splits an outgoing message (given as the pieces of a
//! [`rpcrdma_xdr::Payload`]) into fragments without copying.
//!
//! Sans-IO: no sockets here; the TCP transport feeds bytes in and writes
//! the segments out.

use bytes::{Buf, Bytes, BytesMut};

use crate::error::RecordError;

/// Top bit of a fragment header: this is the record's last fragment.
pub const LAST_FRAGMENT: u32 = 0x8000_0000;

/// Largest fragment length a header can express (2^31 - 1).
pub const MAX_FRAGMENT_LEN: usize = 0x7fff_ffff;

/// Default maximum record size accepted by [`Deframer`]: 32 MiB, enough
/// for the demo program's 16 MiB READ/WRITE plus headers, small enough that
/// a hostile peer cannot make a connection buffer much.
pub const DEFAULT_MAX_RECORD: usize = 32 * 1024 * 1024;

/// The 4-byte header of a fragment of `len` bytes.
///
/// ```
/// use rpcrdma_oncrpc::record::fragment_header;
/// assert_eq!(fragment_header(5, true), [0x80, 0, 0, 5]);
/// assert_eq!(fragment_header(5, false), [0, 0, 0, 5]);
/// ```
///
/// # Panics
/// If `len` exceeds [`MAX_FRAGMENT_LEN`] (API misuse).
pub fn fragment_header(len: usize, last: bool) -> [u8; 4] {
    assert!(len <= MAX_FRAGMENT_LEN, "fragment longer than 2^31-1 bytes");
    let mut word = len as u32;
    if last {
        word |= LAST_FRAGMENT;
    }
    word.to_be_bytes()
}

/// One piece of an outgoing record: a fragment header or a run of data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment<'a> {
    /// A fragment header.
    Header([u8; 4]),
    /// Message bytes (borrowed from the payload, never copied).
    Data(&'a [u8]),
}

impl Segment<'_> {
    /// The bytes of this segment.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Segment::Header(h) => h,
            Segment::Data(d) => d,
        }
    }
}

/// Frames a message given as consecutive pieces into one record of
/// fragments of at most `max_fragment` bytes (clamped to
/// `1..=`[`MAX_FRAGMENT_LEN`]). An empty message becomes one empty last
/// fragment.
///
/// ```
/// use rpcrdma_oncrpc::record::{frame, Segment};
/// let segs = frame(&[b"abc", b"de"], 4);
/// assert_eq!(segs, vec![
///     Segment::Header([0, 0, 0, 4]), Segment::Data(b"abc"), Segment::Data(b"d"),
///     Segment::Header([0x80, 0, 0, 1]), Segment::Data(b"e"),
/// ]);
/// ```
pub fn frame<'a>(pieces: &[&'a [u8]], max_fragment: usize) -> Vec<Segment<'a>> {
    let max_fragment = max_fragment.clamp(1, MAX_FRAGMENT_LEN);
    let total: usize = pieces.iter().map(|p| p.len()).sum();
    let mut out = Vec::with_capacity(pieces.len() + 1 + total / max_fragment);
    let mut left = total;
    let mut room = 0usize;
    if total == 0 {
        out.push(Segment::Header(fragment_header(0, true)));
        return out;
    }
    for piece in pieces {
        let mut piece: &'a [u8] = piece;
        while !piece.is_empty() {
            if room == 0 {
                let len = left.min(max_fragment);
                out.push(Segment::Header(fragment_header(len, len == left)));
                room = len;
            }
            let n = room.min(piece.len());
            let (head, tail) = piece.split_at(n);
            out.push(Segment::Data(head));
            piece = tail;
            room -= n;
            left -= n;
        }
    }
    out
}

/// Reassembles records from a byte stream.
///
/// Feed it the connection's receive buffer: [`Deframer::decode`] consumes
/// complete fragments from the front and returns each finished record. A
/// single-fragment record stays in the buffer until all of it is there and
/// is then split off without copying (or the reader takes it whole itself,
/// [`Deframer::single_fragment_len`]); fragments of a multi-fragment record
/// are gathered into one buffer.
///
/// Each fragment header is checked against the maximum record size before
/// its bytes are buffered, so memory never grows beyond the limit; a
/// violation is sticky (the stream cannot be resynchronised) and the
/// connection must be closed.
///
/// ```
/// use bytes::BytesMut;
/// use rpcrdma_oncrpc::record::Deframer;
///
/// let mut d = Deframer::new(1024);
/// let mut buf = BytesMut::from(&[0, 0, 0, 2, b'h', b'i', 0x80, 0, 0, 1][..]);
/// assert_eq!(d.decode(&mut buf)?, None);           // last fragment incomplete
/// buf.extend_from_slice(b"!");
/// assert_eq!(d.decode(&mut buf)?.as_deref(), Some(&b"hi!"[..]));
/// # Ok::<(), rpcrdma_oncrpc::RecordError>(())
/// ```
#[derive(Debug)]
pub struct Deframer {
    max_record: usize,
    /// Header of the fragment being received: (bytes still to come, last?).
    fragment: Option<(usize, bool)>,
    /// Earlier fragments of the current record.
    partial: BytesMut,
    /// Length of the current record so far, counting whole fragments
    /// whose headers have been accepted.
    record_len: u64,
    failed: Option<RecordError>,
}

impl Deframer {
    /// A deframer accepting records of at most `max_record` bytes.
    pub fn new(max_record: usize) -> Self {
        Self {
            max_record,
            fragment: None,
            partial: BytesMut::new(),
            record_len: 0,
            failed: None,
        }
    }

    /// The configured maximum record size.
    pub fn max_record(&self) -> usize {
        self.max_record
    }

    /// Whether a record has started but not finished.
    pub fn in_record(&self) -> bool {
        self.fragment.is_some() || self.record_len > 0
    }

    /// How many more bytes `buf` must hold before [`Deframer::decode`] can
    /// make progress. Never more than the limit allows; a reader should
    /// still cap what it reserves at once, so that a peer which announces a
    /// large fragment and stalls does not pin that much memory.
    pub fn wanted(&self, buf: &BytesMut) -> usize {
        match self.fragment {
            Some((left, _)) => left.saturating_sub(buf.len()).max(1),
            None => 4usize.saturating_sub(buf.len()).max(1),
        }
    }

    /// Consumes complete fragments from the front of `buf` and returns the
    /// next complete record, or `Ok(None)` if more bytes are needed.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Bytes>, RecordError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        loop {
            let (left, last) = match self.fragment {
                Some(f) => f,
                None => {
                    if buf.len() < 4 {
                        return Ok(None);
                    }
                    let word = buf.get_u32();
                    let len = (word & !LAST_FRAGMENT) as usize;
                    let last = word & LAST_FRAGMENT != 0;
                    let total = self.record_len + len as u64;
                    if total > self.max_record as u64 {
                        let e = RecordError::TooLarge {
                            len: total,
                            max: self.max_record,
                        };
                        self.failed = Some(e.clone());
                        return Err(e);
                    }
                    self.record_len = total;
                    self.fragment = Some((len, last));
                    (len, last)
                }
            };
            if last && self.partial.is_empty() {
                if buf.len() < left {
                    // The record is one fragment, still arriving: its
                    // bytes stay in `buf` until all of them are there
                    // (`wanted` says how many more), and no copy is made.
                    return Ok(None);
                }
                // The whole record is one fragment that is fully here:
                // hand it out without copying.
                let record = buf.split_to(left).freeze();
                self.fragment = None;
                self.record_len = 0;
                return Ok(Some(record));
            }
            let n = left.min(buf.len());
            if n > 0 {
                self.partial.extend_from_slice(&buf.split_to(n));
            }
            if n < left {
                self.fragment = Some((left - n, last));
                return Ok(None);
            }
            self.fragment = None;
            if last {
                self.record_len = 0;
                return Ok(Some(std::mem::take(&mut self.partial).freeze()));
            }
        }
    }

    /// The length of the record in progress if it is one fragment whose
    /// header has been read and whose bytes [`Deframer::decode`] leaves in
    /// the caller's buffer until they are all there (counting those the
    /// buffer already holds). A reader may instead take those bytes and
    /// the rest of the fragment from its stream itself, into memory of its
    /// choosing, and then tell the deframer with
    /// [`Deframer::fragment_taken`].
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use rpcrdma_oncrpc::record::{fragment_header, Deframer};
    ///
    /// let mut d = Deframer::new(1 << 20);
    /// let mut buf = BytesMut::from(&fragment_header(6, true)[..]);
    /// buf.extend_from_slice(b"abc");
    /// assert_eq!(d.decode(&mut buf)?, None);
    /// assert_eq!(d.single_fragment_len(), Some(6));
    /// let mut body = buf.split().to_vec();   // "abc", and the rest from the stream:
    /// body.extend_from_slice(b"def");
    /// d.fragment_taken();
    /// buf.extend_from_slice(&fragment_header(1, true));
    /// buf.extend_from_slice(b"!");
    /// assert_eq!(d.decode(&mut buf)?.as_deref(), Some(&b"!"[..]));
    /// # Ok::<(), rpcrdma_oncrpc::RecordError>(())
    /// ```
    pub fn single_fragment_len(&self) -> Option<usize> {
        match self.fragment {
            Some((left, true)) if self.partial.is_empty() && self.failed.is_none() => Some(left),
            _ => None,
        }
    }

    /// Ends the record of [`Deframer::single_fragment_len`], whose bytes
    /// the reader took itself: the next bytes start a new record.
    ///
    /// # Panics
    /// If no such record is in progress (API misuse).
    pub fn fragment_taken(&mut self) {
        assert!(
            self.single_fragment_len().is_some(),
            "fragment_taken without a single-fragment record in progress"
        );
        self.fragment = None;
        self.record_len = 0;
    }

    /// Checks the state at end of stream: an unfinished record is an error.
    pub fn finish(&self, buf: &BytesMut) -> Result<(), RecordError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if self.in_record() || !buf.is_empty() {
            return Err(RecordError::Truncated {
                buffered: self.partial.len() + buf.len(),
            });
        }
        Ok(())
    }
}
