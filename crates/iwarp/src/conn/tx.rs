//! The transmit queue: encoded FPDUs as a list of `Bytes` chunks (headers
//! and trailers from an arena, payloads as zero-copy slices of registered
//! memory), with stream offsets that complete work requests once written.

use std::collections::VecDeque;
use std::io::IoSlice;

use bytes::{BufMut, Bytes, BytesMut};

use crate::ddp::DdpHeader;
use crate::fpdu::{crc_to_wire, pad_len, MPA_CRC_LEN, MPA_LEN_FIELD};

/// What happens when the stream has been written up to a mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    /// The send-queue entry with this sequence number is done.
    Sq(u64),
    /// One inbound RDMA Read is fully answered (frees an IRD slot).
    Irq,
}

#[derive(Debug, Default)]
pub(crate) struct Tx {
    chunks: VecDeque<Bytes>,
    /// Octets of the front chunk already written.
    front_off: usize,
    /// Stream offset after the last queued octet.
    queued: u64,
    /// Stream offset after the last written octet.
    written: u64,
    /// Nothing at or after this stream offset may be written yet.
    gate: Option<u64>,
    marks: VecDeque<(u64, Mark)>,
    /// Where FPDU headers, trailers and small FPDUs are encoded: queued
    /// chunks are views of it, and once they are written and dropped its
    /// memory is reused (no allocation per message in the steady state).
    arena: BytesMut,
}

/// Capacity of each block of the encoding arena.
const ARENA_BLOCK: usize = 8 * 1024;

impl Tx {
    pub(crate) fn push(&mut self, b: Bytes) {
        if !b.is_empty() {
            self.queued += b.len() as u64;
            self.chunks.push_back(b);
        }
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

    /// Drops everything not yet written (abortive close).
    pub(crate) fn clear(&mut self) {
        self.chunks.clear();
        self.front_off = 0;
        self.queued = self.written;
        self.marks.clear();
        self.gate = None;
    }

    /// Fills `out` with the octets that may be written now, in order;
    /// returns how many slices were filled.
    /// An upper bound of the slices [`Tx::iovecs`] fills.
    pub(crate) fn slices(&self) -> usize {
        self.chunks.len()
    }

    pub(crate) fn iovecs<'a>(&'a self, out: &mut [IoSlice<'a>]) -> usize {
        let mut left = self.writable();
        let mut n = 0;
        for (i, c) in self.chunks.iter().enumerate() {
            if n == out.len() || left == 0 {
                break;
            }
            let c = if i == 0 { &c[self.front_off..] } else { &c[..] };
            let take = (c.len() as u64).min(left) as usize;
            out[n] = IoSlice::new(&c[..take]);
            n += 1;
            left -= take as u64;
        }
        n
    }

    /// Copies every writable octet into `out`; returns how many.
    pub(crate) fn copy_out(&self, out: &mut BytesMut) -> usize {
        let mut left = self.writable();
        let start = out.len();
        for (i, c) in self.chunks.iter().enumerate() {
            if left == 0 {
                break;
            }
            let c = if i == 0 { &c[self.front_off..] } else { &c[..] };
            let take = (c.len() as u64).min(left) as usize;
            out.put_slice(&c[..take]);
            left -= take as u64;
        }
        out.len() - start
    }

    /// Records that `n` octets were written; returns the marks passed.
    ///
    /// # Panics
    /// If `n` exceeds what [`Tx::writable`] allowed (driver bug).
    pub(crate) fn advance(&mut self, n: usize, passed: &mut Vec<Mark>) {
        assert!(
            n as u64 <= self.writable(),
            "driver reported {n} octets written but only {} were offered",
            self.writable()
        );
        self.written += n as u64;
        let mut n = n;
        while n > 0 {
            let Some(front) = self.chunks.front() else {
                break;
            };
            let rest = front.len() - self.front_off;
            if n >= rest {
                n -= rest;
                self.chunks.pop_front();
                self.front_off = 0;
            } else {
                self.front_off += n;
                n = 0;
            }
        }
        while let Some(&(at, m)) = self.marks.front() {
            if at > self.written {
                break;
            }
            self.marks.pop_front();
            passed.push(m);
        }
    }
}

/// Messages up to this size are copied into their FPDU (one buffer, one
/// slice to write); larger payloads are referenced, never copied.
pub(crate) const INLINE_COPY_MAX: usize = 512;

impl Tx {
    /// The encoding arena, with room for `len` more octets (reusing its
    /// memory when every chunk cut from it has been dropped).
    fn arena(&mut self, len: usize) -> &mut BytesMut {
        if self.arena.capacity() < len {
            self.arena.reserve(len.max(ARENA_BLOCK));
        }
        &mut self.arena
    }
}

/// Queues a message that fits one FPDU as one contiguous buffer: header,
/// payload (copied from `pieces`), pad and CRC.
pub(crate) fn push_small(
    tx: &mut Tx,
    crc: bool,
    header: &DdpHeader,
    pieces: &[&[u8]],
    total: usize,
) {
    let hdr_len = header.buffer_len();
    let ulpdu = hdr_len + total;
    let pad = pad_len(ulpdu);
    let v = tx.arena(MPA_LEN_FIELD + ulpdu + pad + MPA_CRC_LEN);
    // ulpdu <= hdr_len + INLINE_COPY_MAX < 65535.
    v.put_u16(ulpdu as u16);
    header.emit(v);
    for p in pieces {
        v.put_slice(p);
    }
    v.put_bytes(0, pad);
    let c = if crc { crc32c::crc32c(v) } else { 0 };
    v.put_slice(&crc_to_wire(c));
    let b = v.split().freeze();
    tx.push(b);
}

/// Splits a message (`pieces`, `total` octets) into FPDUs of at most
/// `max_ulpdu` octets of ULPDU and queues them. `header(offset, last)`
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
    let mut arena = std::mem::take(tx.arena(nseg * (MPA_LEN_FIELD + hdr_len + 3 + MPA_CRC_LEN)));
    let (mut piece, mut piece_off) = (0usize, 0usize);
    let mut offset = 0usize;
    loop {
        let seg = max_payload.min(total - offset);
        let last = offset + seg == total;
        let h = header(offset, last);
        debug_assert_eq!(h.buffer_len(), hdr_len);
        let ulpdu = hdr_len + seg;
        // ulpdu <= max_ulpdu <= 65535 (checked in Config::validate).
        arena.put_u16(ulpdu as u16);
        h.emit(&mut arena);
        let head = arena.split().freeze();
        let mut c = if crc { crc32c::crc32c(&head) } else { 0 };
        tx.push(head);
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
        arena.put_bytes(0, pad);
        if crc && pad > 0 {
            c = crc32c::crc32c_append(c, &[0u8; 3][..pad]);
        }
        arena.put_slice(&crc_to_wire(c));
        tx.push(arena.split().freeze());
        offset += seg;
        if last {
            break;
        }
    }
    tx.arena = arena;
}
