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
//! octets are data this end received earlier: on this connection, or on
//! another one that shares its memory budget (a listener's connections
//! share one pool, `budget/`); the peer can read none of them.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};

/// A fresh buffer of `len` zeroed octets, for the engine to hand out and
/// take back: made shared now, once per buffer, so that every later
/// `freeze`, clone of the frozen view (the pool keeps one while the upper
/// layer holds another) and `try_into_mut` when the pool hands it out
/// again costs a reference count, not an allocation. (A buffer fresh from
/// its vector would allocate its shared state at the first clone of each
/// use, and free it again when taken back.)
pub(crate) fn shared_zeroed(len: usize) -> BytesMut {
    BytesMut::zeroed(len).split_to(len)
}

/// Buffers handed out and possibly returned.
#[derive(Debug)]
pub(crate) struct BufPool {
    spare: VecDeque<Bytes>,
    /// Most buffers remembered.
    max_count: usize,
    /// Most octets remembered (sum of lengths).
    max_bytes: usize,
    bytes: usize,
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
        }
    }

    /// Octets remembered (the sum of the buffers' lengths).
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether `len` more octets fit the pool's own limits after evicting
    /// old buffers (a buffer larger than the whole pool never does).
    pub(crate) fn could_keep(&self, len: usize) -> bool {
        len <= self.max_bytes && self.max_count > 0
    }

    /// Remembers `buf` (the whole buffer, as allocated) so that it can be
    /// reused once nobody else refers to it. The oldest buffers are
    /// forgotten first when the pool is full; returns the octets forgotten
    /// (0 if `buf` itself could not be kept: see [`BufPool::could_keep`]).
    pub(crate) fn keep(&mut self, buf: Bytes) -> usize {
        let len = buf.len();
        if !self.could_keep(len) {
            return 0;
        }
        let mut evicted = 0;
        while self.spare.len() >= self.max_count || self.bytes + len > self.max_bytes {
            match self.spare.pop_front() {
                Some(old) => {
                    self.bytes -= old.len();
                    evicted += old.len();
                }
                None => break,
            }
        }
        self.bytes += len;
        self.spare.push_back(buf);
        evicted
    }

    /// Forgets the oldest buffer; returns its length (`None`: empty).
    pub(crate) fn evict_oldest(&mut self) -> Option<usize> {
        let old = self.spare.pop_front()?;
        self.bytes -= old.len();
        Some(old.len())
    }

    /// A whole remembered buffer of at least `len` octets that nobody else
    /// refers to, if one is free (and not much larger: at most twice `len`
    /// plus 64 KiB, so a large buffer is not tied up by a small message).
    /// It is returned untruncated, so its full length stays accounted for:
    /// the caller uses its first `len` octets. Its contents are stale (see
    /// the module documentation).
    pub(crate) fn take(&mut self, len: usize) -> Option<BytesMut> {
        let most = len.saturating_mul(2).saturating_add(64 * 1024);
        // The smallest that fits, and of those the most recently kept: its
        // octets are the likeliest to be in the CPU's caches still (the
        // buffers in use stay few).
        let mut best: Option<(usize, usize)> = None;
        for (i, b) in self.spare.iter().enumerate().rev() {
            let blen = b.len();
            if blen < len || blen > most || !b.is_unique() {
                continue;
            }
            if best.is_none_or(|(_, l)| blen < l) {
                best = Some((i, blen));
            }
        }
        let (i, blen) = best?;
        let b = self.spare.remove(i)?;
        match b.try_into_mut() {
            Ok(m) => {
                self.bytes -= blen;
                Some(m)
            }
            Err(still_used) => {
                self.spare.insert(i, still_used);
                None
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
    fn a_shared_buffer_goes_round_the_pool_in_the_same_memory() {
        // As the requester uses a sink: taken, written, frozen, a clone
        // kept by the pool, the view handed up and dropped. (That the
        // rounds after the first allocate nothing, the point of
        // `shared_zeroed`, is measured with `valgrind --tool=dhat`:
        // docs/performance.md, "A sink's shared state, allocated once".)
        let mut p = BufPool::new(4, 1 << 20);
        let mut m = shared_zeroed(4096);
        assert_eq!(m.len(), 4096);
        assert!(m.iter().all(|&x| x == 0));
        let at = m.as_ptr();
        for round in 1..5u8 {
            m[0] = round;
            let frozen = m.freeze();
            p.keep(frozen.clone());
            assert_eq!((frozen.as_ptr(), frozen[0]), (at, round));
            assert!(p.take(4096).is_none(), "round {round}: handed up, not free");
            drop(frozen);
            m = p.take(4096).expect("the kept buffer, free again");
            assert_eq!((m.as_ptr(), m.len(), m[0]), (at, 4096, round));
        }
    }

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
        // Whole, with its contents kept (not cleared).
        assert_eq!(m.len(), 100);
        assert!(m.iter().all(|&b| b == 7));
        assert_eq!((p.len(), p.bytes()), (0, 0));
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
        assert_eq!(p.take(512 * 1024).map(|m| m.len()), Some(1 << 20));
    }

    #[test]
    fn bounded_by_count_and_bytes() {
        let mut p = BufPool::new(2, 100);
        for _ in 0..5 {
            p.keep(Bytes::from(vec![0u8; 10]));
        }
        assert_eq!(p.len(), 2);
        assert_eq!(p.keep(Bytes::from(vec![0u8; 95])), 20);
        assert_eq!((p.len(), p.bytes()), (1, 95));
        // Larger than the whole budget: not kept.
        assert_eq!(p.keep(Bytes::from(vec![0u8; 101])), 0);
        assert_eq!(p.len(), 1);
        assert_eq!(p.evict_oldest(), Some(95));
        assert_eq!(p.evict_oldest(), None);
        let mut z = BufPool::new(0, 100);
        z.keep(Bytes::from(vec![0u8; 1]));
        assert!(z.take(1).is_none());
    }
}
