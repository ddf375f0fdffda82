//! Reuse of memory the engine hands to the upper layer.
//!
//! Received data reaches the upper layer as [`Bytes`] views of buffers the
//! engine allocated: receive buffers, RDMA Read sinks (a call's Read
//! chunks) and Write or Reply chunk sinks (a reply's data). Allocating and
//! zeroing a fresh buffer for every message costs more than moving the
//! data (a 1 MiB sink is a 1 MiB `memset`, or 256 page faults when the
//! allocator maps it fresh). A [`BufPool`] keeps a handle on each such
//! buffer and hands it out again once every view of it has been dropped,
//! without clearing it.
//!
//! Stale contents are never exposed: a reused receive buffer is reported
//! only up to the completion's `byte_len`; a Read sink is delivered only
//! after RDMA Reads have filled every octet of it; a Write or Reply chunk
//! sink is delivered only up to the length the responder says it wrote,
//! and a responder that claims more than it wrote sees nothing either way
//! (the region grants it remote write, never remote read). The stale
//! octets are always data this connection received earlier.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};

/// Buffers handed out and possibly returned.
#[derive(Debug)]
pub(crate) struct BufPool {
    spare: VecDeque<Bytes>,
    /// Most buffers remembered.
    max_count: usize,
    /// Most octets remembered (sum of lengths).
    max_bytes: usize,
    bytes: usize,
    /// Buffers allocated by [`BufPool::take_or_alloc`].
    pub(crate) allocated: u64,
    /// Buffers reused by [`BufPool::take_or_alloc`].
    pub(crate) reused: u64,
}

impl BufPool {
    /// A pool remembering at most `max_count` buffers of at most
    /// `max_bytes` octets in total.
    pub(crate) fn new(max_count: usize, max_bytes: usize) -> Self {
        Self {
            spare: VecDeque::new(),
            max_count,
            max_bytes,
            bytes: 0,
            allocated: 0,
            reused: 0,
        }
    }

    /// Remembers `buf` (the whole buffer, as allocated) so that it can be
    /// reused once nobody else refers to it. The oldest buffers are
    /// forgotten first when the pool is full.
    pub(crate) fn keep(&mut self, buf: Bytes) {
        let len = buf.len();
        if len > self.max_bytes || self.max_count == 0 {
            return;
        }
        while self.spare.len() >= self.max_count || self.bytes + len > self.max_bytes {
            match self.spare.pop_front() {
                Some(old) => self.bytes -= old.len(),
                None => break,
            }
        }
        self.bytes += len;
        self.spare.push_back(buf);
    }

    /// A buffer of exactly `len` octets that nobody else refers to, if one
    /// of the remembered buffers is free and large enough (but not much
    /// larger: at most twice `len` plus 64 KiB, so a large buffer is not
    /// tied up by a small message). Its contents are stale (see the module
    /// documentation).
    pub(crate) fn take(&mut self, len: usize) -> Option<BytesMut> {
        let most = len.saturating_mul(2).saturating_add(64 * 1024);
        for _ in 0..self.spare.len() {
            let b = self.spare.pop_front()?;
            let blen = b.len();
            if blen < len || blen > most {
                self.spare.push_back(b);
                continue;
            }
            match b.try_into_mut() {
                Ok(mut m) => {
                    self.bytes -= blen;
                    m.truncate(len);
                    return Some(m);
                }
                Err(still_used) => self.spare.push_back(still_used),
            }
        }
        None
    }

    /// A free remembered buffer of `len` octets (stale contents), or a new
    /// zeroed one.
    pub(crate) fn take_or_alloc(&mut self, len: usize) -> BytesMut {
        match self.take(len) {
            Some(b) => {
                self.reused += 1;
                b
            }
            None => {
                self.allocated += 1;
                BytesMut::zeroed(len)
            }
        }
    }

    /// Number of buffers remembered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.spare.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_only_unreferenced_buffers() {
        let mut p = BufPool::new(4, 1 << 20);
        let a = Bytes::from(vec![7u8; 100]);
        let view = a.slice(10..20);
        p.keep(a);
        // Still referenced by `view`.
        assert!(p.take(50).is_none());
        drop(view);
        let m = p.take(50).expect("free now");
        assert_eq!(m.len(), 50);
        // Contents are kept (not cleared).
        assert!(m.iter().all(|&b| b == 7));
        assert_eq!(p.len(), 0);
    }

    #[test]
    fn too_small_buffers_are_skipped_and_kept() {
        let mut p = BufPool::new(4, 1 << 20);
        p.keep(Bytes::from(vec![0u8; 10]));
        assert!(p.take(11).is_none());
        assert_eq!(p.len(), 1);
        assert_eq!(p.take(10).map(|m| m.len()), Some(10));
    }

    #[test]
    fn much_larger_buffers_are_not_used_for_small_messages() {
        let mut p = BufPool::new(4, 1 << 30);
        p.keep(Bytes::from(vec![0u8; 1 << 20]));
        assert!(p.take(100).is_none());
        assert_eq!(p.take(512 * 1024).map(|m| m.len()), Some(512 * 1024));
    }

    #[test]
    fn bounded_by_count_and_bytes() {
        let mut p = BufPool::new(2, 100);
        for _ in 0..5 {
            p.keep(Bytes::from(vec![0u8; 10]));
        }
        assert_eq!(p.len(), 2);
        p.keep(Bytes::from(vec![0u8; 95]));
        assert_eq!(p.len(), 1);
        // Larger than the whole budget: not kept.
        p.keep(Bytes::from(vec![0u8; 101]));
        assert_eq!(p.len(), 1);
        let mut z = BufPool::new(0, 100);
        z.keep(Bytes::from(vec![0u8; 1]));
        assert!(z.take(1).is_none());
    }
}
