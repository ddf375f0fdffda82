//! The transmit queue: encoded FPDUs in stream order, as octets encoded
//! in place (small FPDUs whole; the headers and trailers of larger ones)
//! and zero-copy payload slices of registered memory, with stream offsets
//! that complete work requests once written.
//!
//! Encoded octets go into one growing buffer (`inline`), so consecutive
//! small FPDUs are one slice to write, and a message that fits one FPDU
//! costs no queue entry at all: the octets after the last queued payload
//! slice are the "open tail", which follows every queued chunk. Once
//! everything encoded has been written, the buffer is reused from its
//! start (no allocation per message in the steady state).

use std::collections::VecDeque;
use std::io::IoSlice;

use bytes::{BufMut, Bytes, BytesMut};

use crate::ddp::{DdpHeader, UNTAGGED_HEADER_LEN};
use crate::fpdu::{crc_to_wire, pad_len, MPA_CRC_LEN, MPA_LEN_FIELD};

/// What happens when the stream has been written up to a mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    /// The send-queue entry with this sequence number is done.
    Sq(u64),
    /// One inbound RDMA Read is fully answered (frees an IRD slot).
    Irq,
}

/// A queued piece of the stream, before the open tail.
#[derive(Debug)]
enum Chunk {
    /// Encoded octets: `inline[start..end]`, where `start` is where the
    /// previous encoded chunk ended (or [`Tx::inline_head`] for the first).
    Inline(usize),
    /// A payload slice, not copied.
    Bytes(Bytes),
}

#[derive(Debug, Default)]
pub(crate) struct Tx {
    chunks: VecDeque<Chunk>,
    /// Octets of the front [`Chunk::Bytes`] already written.
    front_off: usize,
    /// Encoded octets (see the module documentation).
    inline: Vec<u8>,
    /// Index in `inline` of the first octet not yet written.
    inline_head: usize,
    /// End of the last [`Chunk::Inline`] queued: the open tail starts
    /// here (or at `inline_head`, once that is further).
    sealed: usize,
    /// Stream offset after the last queued octet.
    queued: u64,
    /// Stream offset after the last written octet.
    written: u64,
    /// Nothing at or after this stream offset may be written yet.
    gate: Option<u64>,
    pub(super) marks: VecDeque<(u64, Mark)>,
}

/// Written encoded octets are dropped from the front of the buffer (the
/// rest moved down) once at least this many have piled up and they are
/// most of it: the buffer stays bounded while payload chunks keep the
/// queue from ever emptying (a long run of large messages).
const COMPACT_MIN: usize = 64 * 1024;

impl Tx {
    /// Queues a payload slice (not copied).
    pub(crate) fn push(&mut self, b: Bytes) {
        if !b.is_empty() {
            self.seal();
            self.queued += b.len() as u64;
            self.chunks.push_back(Chunk::Bytes(b));
        }
    }

    /// Queues a copy of `b` (MPA set-up frames).
    pub(crate) fn push_copy(&mut self, b: &[u8]) {
        self.encode_start(b.len()).extend_from_slice(b);
        self.queued += b.len() as u64;
    }

    /// Ends the open tail: what is encoded next comes after the chunk
    /// queued next.
    fn seal(&mut self) {
        let end = self.inline.len();
        if end > self.sealed.max(self.inline_head) {
            self.chunks.push_back(Chunk::Inline(end));
            self.sealed = end;
        }
    }

    /// The buffer to append encoded octets to (room for `len` more); the
    /// caller counts what it appends in `queued`.
    fn encode_start(&mut self, len: usize) -> &mut Vec<u8> {
        if self.inline_head >= COMPACT_MIN && self.inline_head * 2 >= self.inline.len() {
            self.compact();
        }
        self.inline.reserve(len);
        &mut self.inline
    }

    /// Drops the written octets from the front of `inline`.
    fn compact(&mut self) {
        let head = self.inline_head;
        self.inline.drain(..head);
        for c in &mut self.chunks {
            if let Chunk::Inline(end) = c {
                *end -= head;
            }
        }
        self.sealed = self.sealed.saturating_sub(head);
        self.inline_head = 0;
    }

    pub(crate) fn mark(&mut self, m: Mark) {
        self.marks.push_back((self.queued, m));
    }

    /// Holds back everything queued from now on until [`Tx::open_gate`].
    pub(crate) fn close_gate(&mut self) {
        self.gate = Some(self.queued);
    }

    pub(crate) fn open_gate(&mut self) {
        self.gate = None;
    }

    pub(crate) fn gated(&self) -> bool {
        self.gate.is_some()
    }

    /// Octets queued and not yet written (including gated ones).
    pub(crate) fn pending(&self) -> u64 {
        self.queued - self.written
    }

    /// Octets that may be written now.
    pub(crate) fn writable(&self) -> u64 {
        let limit = self.gate.unwrap_or(self.queued);
        limit.saturating_sub(self.written)
    }

    /// Stream offset after the last written octet.
    pub(crate) fn written(&self) -> u64 {
        self.written
    }

    /// Records that everything queued was written, when only encoded
    /// octets were ([`Tx::advance`] of all of them).
    pub(crate) fn advance_all(&mut self) {
        debug_assert!(self.chunks.is_empty() && self.gate.is_none());
        self.written = self.queued;
        self.inline.clear();
        self.inline_head = 0;
        self.sealed = 0;
    }

    /// The unwritten encoded octets when no payload chunk is queued (the
    /// open tail: all that is queued then).
    pub(crate) fn unwritten_encoded(&self) -> &[u8] {
        debug_assert!(self.chunks.is_empty());
        &self.inline[self.inline_head..]
    }

    /// Drops everything not yet written (abortive close).
    pub(crate) fn clear(&mut self) {
        self.chunks.clear();
        self.front_off = 0;
        self.inline.clear();
        self.inline_head = 0;
        self.sealed = 0;
        self.queued = self.written;
        self.marks.clear();
        self.gate = None;
    }

    /// An upper bound of the slices [`Tx::iovecs`] fills.
    pub(crate) fn slices(&self) -> usize {
        self.chunks.len() + 1
    }

    /// Calls `f` with every queued piece in stream order (the front one
    /// without its written part), at most `limit` octets in all, until it
    /// returns false.
    fn pieces<'a>(&'a self, mut limit: u64, mut f: impl FnMut(&'a [u8]) -> bool) {
        let mut istart = self.inline_head;
        for (i, c) in self.chunks.iter().enumerate() {
            if limit == 0 {
                return;
            }
            let s = match c {
                Chunk::Inline(end) => {
                    let s = &self.inline[istart..*end];
                    istart = *end;
                    s
                }
                Chunk::Bytes(b) if i == 0 => &b[self.front_off..],
                Chunk::Bytes(b) => &b[..],
            };
            let take = (s.len() as u64).min(limit) as usize;
            limit -= take as u64;
            if !f(&s[..take]) {
                return;
            }
        }
        let tail = &self.inline[istart..];
        let take = (tail.len() as u64).min(limit) as usize;
        if take > 0 {
            f(&tail[..take]);
        }
    }

    /// Fills `out` with the octets that may be written now, in order;
    /// returns how many slices were filled.
    pub(crate) fn iovecs<'a>(&'a self, out: &mut [IoSlice<'a>]) -> usize {
        if self.chunks.is_empty() {
            // Only encoded octets (small messages): one slice.
            let w = self.writable() as usize;
            if w == 0 || out.is_empty() {
                return 0;
            }
            out[0] = IoSlice::new(&self.inline[self.inline_head..self.inline_head + w]);
            return 1;
        }
        let mut n = 0;
        self.pieces(self.writable(), |s| {
            if n == out.len() {
                return false;
            }
            if !s.is_empty() {
                out[n] = IoSlice::new(s);
                n += 1;
            }
            true
        });
        n
    }

    /// Copies every writable octet into `out`; returns how many.
    pub(crate) fn copy_out(&self, out: &mut BytesMut) -> usize {
        let start = out.len();
        self.pieces(self.writable(), |s| {
            out.put_slice(s);
            true
        });
        out.len() - start
    }

    /// Records that `n` octets were written (marks are the caller's to
    /// take from [`Tx::marks`]).
    ///
    /// # Panics
    /// If `n` exceeds what [`Tx::writable`] allowed (driver bug).
    pub(crate) fn advance(&mut self, n: usize) {
        assert!(
            n as u64 <= self.writable(),
            "driver reported {n} octets written but only {} were offered",
            self.writable()
        );
        self.written += n as u64;
        if self.chunks.is_empty() {
            // Only encoded octets queued (small messages).
            self.inline_head += n;
            if self.inline_head == self.inline.len() {
                self.inline.clear();
                self.inline_head = 0;
                self.sealed = 0;
            }
            return;
        }
        let mut n = n;
        while n > 0 {
            match self.chunks.front() {
                Some(Chunk::Inline(end)) => {
                    let rest = end - self.inline_head;
                    if n >= rest {
                        n -= rest;
                        self.inline_head = *end;
                        self.chunks.pop_front();
                    } else {
                        self.inline_head += n;
                        n = 0;
                    }
                }
                Some(Chunk::Bytes(b)) => {
                    let rest = b.len() - self.front_off;
                    if n >= rest {
                        n -= rest;
                        self.chunks.pop_front();
                        self.front_off = 0;
                    } else {
                        self.front_off += n;
                        n = 0;
                    }
                }
                None => {
                    // The open tail (n <= writable, so it is there).
                    self.inline_head += n;
                    n = 0;
                }
            }
        }
        if self.chunks.is_empty() && self.inline_head == self.inline.len() {
            // Everything encoded is written: reuse the buffer from its start.
            self.inline.clear();
            self.inline_head = 0;
            self.sealed = 0;
        }
    }
}

/// Messages up to this size are copied into their FPDU (one buffer, one
/// slice to write); larger payloads are referenced, never copied.
pub(crate) const INLINE_COPY_MAX: usize = 512;

/// An FPDU's ULPDU_Length field and DDP header, and their length.
#[inline]
pub(crate) fn fpdu_prefix(
    ulpdu: usize,
    header: &DdpHeader,
) -> ([u8; MPA_LEN_FIELD + UNTAGGED_HEADER_LEN], usize) {
    let mut pre = [0u8; MPA_LEN_FIELD + UNTAGGED_HEADER_LEN];
    // Callers keep ulpdu within max_ulpdu <= 65535 (Config::validate).
    pre[..MPA_LEN_FIELD].copy_from_slice(&(ulpdu as u16).to_be_bytes());
    let hdr: &mut [u8; UNTAGGED_HEADER_LEN] = (&mut pre[MPA_LEN_FIELD..])
        .try_into()
        .expect("room for the longest header");
    let n = header.encode_into(hdr);
    (pre, MPA_LEN_FIELD + n)
}

/// Queues a message that fits one FPDU as contiguous encoded octets:
/// length, header, payload (copied from `pieces`), pad and CRC.
pub(crate) fn push_small(
    tx: &mut Tx,
    crc: bool,
    header: &DdpHeader,
    pieces: &[&[u8]],
    total: usize,
) {
    let ulpdu = header.buffer_len() + total;
    let (pre, pre_len) = fpdu_prefix(ulpdu, header);
    push_small_prefixed(tx, crc, &pre[..pre_len], pieces);
}

/// [`push_small`] with the length field and header already encoded
/// (`prefix`), the payload the concatenation of `pieces`.
pub(crate) fn push_small_prefixed(tx: &mut Tx, crc: bool, prefix: &[u8], pieces: &[&[u8]]) {
    let total: usize = pieces.iter().map(|p| p.len()).sum();
    let body = prefix.len() + total;
    let pad = pad_len(body - MPA_LEN_FIELD);
    let len = body + pad + MPA_CRC_LEN;
    let v = tx.encode_start(len);
    let start = v.len();
    v.extend_from_slice(prefix);
    for p in pieces {
        v.extend_from_slice(p);
    }
    // Pad and CRC in one copy.
    let mut tail = [0u8; 3 + MPA_CRC_LEN];
    if crc {
        let c = crc32c::crc32c_append(crc32c::crc32c(&v[start..]), &tail[..pad]);
        tail[pad..pad + MPA_CRC_LEN].copy_from_slice(&crc_to_wire(c));
    }
    v.extend_from_slice(&tail[..pad + MPA_CRC_LEN]);
    tx.queued += len as u64;
}

/// Splits a message (`pieces`, `total` octets) into FPDUs of at most
/// `max_ulpdu` octets of ULPDU and queues them: length fields, headers,
/// pads and CRCs encoded, payload referenced. `header(offset, last)`
/// builds each segment's DDP header, all of length `hdr_len`.
pub(crate) fn push_message(
    tx: &mut Tx,
    crc: bool,
    max_ulpdu: usize,
    hdr_len: usize,
    pieces: &[Bytes],
    total: usize,
    mut header: impl FnMut(usize, bool) -> DdpHeader,
) {
    let max_payload = max_ulpdu - hdr_len;
    let nseg = total.div_ceil(max_payload).max(1);
    tx.encode_start(nseg * (MPA_LEN_FIELD + hdr_len + 3 + MPA_CRC_LEN));
    let (mut piece, mut piece_off) = (0usize, 0usize);
    let mut offset = 0usize;
    loop {
        let seg = max_payload.min(total - offset);
        let last = offset + seg == total;
        let h = header(offset, last);
        debug_assert_eq!(h.buffer_len(), hdr_len);
        let ulpdu = hdr_len + seg;
        let (pre, pre_len) = fpdu_prefix(ulpdu, &h);
        tx.inline.extend_from_slice(&pre[..pre_len]);
        let mut c = if crc {
            crc32c::crc32c(&pre[..pre_len])
        } else {
            0
        };
        tx.queued += (MPA_LEN_FIELD + hdr_len) as u64;
        let mut need = seg;
        while need > 0 {
            let Some(p) = pieces.get(piece) else { break };
            let avail = p.len() - piece_off;
            if avail == 0 {
                piece += 1;
                piece_off = 0;
                continue;
            }
            let take = avail.min(need);
            let s = p.slice(piece_off..piece_off + take);
            if crc {
                c = crc32c::crc32c_append(c, &s);
            }
            tx.push(s);
            piece_off += take;
            need -= take;
        }
        let pad = pad_len(ulpdu);
        if crc && pad > 0 {
            c = crc32c::crc32c_append(c, &[0u8; 3][..pad]);
        }
        let v = &mut tx.inline;
        v.resize(v.len() + pad, 0);
        v.extend_from_slice(&crc_to_wire(c));
        tx.queued += (pad + MPA_CRC_LEN) as u64;
        offset += seg;
        if last {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(tx: &Tx) -> Vec<u8> {
        let mut b = BytesMut::new();
        tx.copy_out(&mut b);
        b.to_vec()
    }

    fn write_all_in_steps(tx: &mut Tx, step: usize) -> Vec<u8> {
        let mut out = Vec::new();
        while tx.writable() > 0 {
            let mut iov = [IoSlice::new(&[]); 3];
            let n = tx.iovecs(&mut iov);
            let mut got = 0;
            for s in &iov[..n] {
                let take = s.len().min(step - got);
                out.extend_from_slice(&s[..take]);
                got += take;
                if got == step {
                    break;
                }
            }
            tx.advance(got);
        }
        out
    }

    #[test]
    fn encoded_and_payload_pieces_keep_stream_order() {
        let mut tx = Tx::default();
        tx.push_copy(b"ab");
        tx.push(Bytes::from_static(b"CDE"));
        tx.push_copy(b"fg");
        tx.push_copy(b"h");
        tx.push(Bytes::from_static(b"IJ"));
        assert_eq!(all(&tx), b"abCDEfghIJ");
        assert_eq!(tx.pending(), 10);
        // fg and h are one piece.
        let mut iov = [IoSlice::new(&[]); 8];
        assert_eq!(tx.iovecs(&mut iov), 4);
        for step in 1..=11 {
            let mut t = Tx::default();
            t.push_copy(b"ab");
            t.push(Bytes::from_static(b"CDE"));
            t.push_copy(b"fg");
            t.push_copy(b"h");
            t.push(Bytes::from_static(b"IJ"));
            assert_eq!(
                write_all_in_steps(&mut t, step),
                b"abCDEfghIJ",
                "step {step}"
            );
            assert_eq!(t.pending(), 0);
            // Everything written: the buffer starts over.
            assert_eq!((t.inline.len(), t.inline_head, t.sealed), (0, 0, 0));
        }
    }

    #[test]
    fn partial_writes_of_the_open_tail_and_later_appends() {
        let mut tx = Tx::default();
        tx.push_copy(b"hello");
        tx.advance(2);
        tx.push_copy(b"!");
        assert_eq!(all(&tx), b"llo!");
        tx.push(Bytes::from_static(b"XY"));
        tx.push_copy(b"z");
        assert_eq!(all(&tx), b"llo!XYz");
        tx.advance(5);
        assert_eq!(all(&tx), b"Yz");
        tx.advance(2);
        assert_eq!(tx.pending(), 0);
    }

    #[test]
    fn the_gate_and_marks_count_stream_offsets() {
        let mut tx = Tx::default();
        tx.push_copy(b"abc");
        tx.mark(Mark::Sq(1));
        tx.close_gate();
        tx.push_copy(b"de");
        tx.mark(Mark::Sq(2));
        assert_eq!(tx.writable(), 3);
        assert_eq!(all(&tx), b"abc");
        tx.advance(3);
        assert_eq!(tx.marks.front(), Some(&(3, Mark::Sq(1))));
        assert_eq!(tx.writable(), 0);
        tx.open_gate();
        assert_eq!(all(&tx), b"de");
        assert_eq!(tx.marks.back(), Some(&(5, Mark::Sq(2))));
    }

    #[test]
    fn the_encoding_buffer_stays_bounded_behind_payload() {
        let mut tx = Tx::default();
        let payload = Bytes::from(vec![7u8; 100]);
        let mut expect = Vec::new();
        let mut got = Vec::new();
        // A queue that never empties: a payload chunk always remains.
        tx.push(payload.clone());
        expect.extend_from_slice(&payload);
        for i in 0..40_000u32 {
            let enc = i.to_be_bytes();
            tx.push_copy(&enc);
            expect.extend_from_slice(&enc);
            tx.push(payload.clone());
            expect.extend_from_slice(&payload);
            // Write all but the last payload chunk.
            let n = (tx.pending() - 100) as usize;
            let mut b = BytesMut::new();
            tx.copy_out(&mut b);
            got.extend_from_slice(&b[..n]);
            tx.advance(n);
            assert!(
                tx.inline.len() <= 2 * COMPACT_MIN + 8,
                "{}",
                tx.inline.len()
            );
        }
        let mut b = BytesMut::new();
        tx.copy_out(&mut b);
        got.extend_from_slice(&b);
        assert_eq!(got, expect);
    }
}
