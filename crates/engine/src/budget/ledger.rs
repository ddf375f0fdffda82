//! The budget's accounts as a plain value: the limit, the octets charged
//! and the idle sink buffers kept for reuse. No lock, no waker: the
//! [`super::MemoryBudget`] handle shares it between connections, and lets
//! drivers wait for releases, in an `rpcrdma_sync::Shared`.

use bytes::{Bytes, BytesMut};

use crate::pool::BufPool;

/// Most idle sink buffers a budget keeps for reuse.
const POOL_COUNT: usize = 32;
/// Most octets of idle sink buffers a budget keeps for reuse (and never
/// more than a quarter of its limit).
const POOL_BYTES: usize = 32 << 20;

/// What a memory budget holds: charges and idle pooled buffers within a
/// limit.
#[derive(Debug)]
pub(crate) struct Ledger {
    limit: u64,
    /// Octets charged: connections' charges plus idle pooled buffers.
    used: u64,
    /// Idle sink buffers kept for reuse.
    pool: BufPool,
}

impl Ledger {
    /// Accounts for a budget of `limit` octets.
    pub(crate) fn new(limit: u64) -> Self {
        let pool_bytes = usize::try_from(limit / 4)
            .unwrap_or(usize::MAX)
            .min(POOL_BYTES);
        Self {
            limit,
            used: 0,
            pool: BufPool::new(POOL_COUNT, pool_bytes),
        }
    }

    /// Octets charged now (idle pooled buffers included).
    pub(crate) fn in_use(&self) -> u64 {
        self.used
    }

    /// Octets of idle buffers kept for reuse (part of [`Self::in_use`]).
    pub(crate) fn pooled(&self) -> u64 {
        self.pool.bytes() as u64
    }

    /// Charges `n` octets if they fit with `leave` octets still free,
    /// dropping idle pooled buffers first if that makes room. Returns
    /// whether it did.
    pub(crate) fn try_reserve(&mut self, n: u64, leave: u64) -> bool {
        let limit = self.limit.saturating_sub(leave);
        while self.used.saturating_add(n) > limit {
            match self.pool.evict_oldest() {
                Some(len) => self.used -= len as u64,
                None => return false,
            }
        }
        self.used += n;
        true
    }

    /// Charges `n` octets even beyond the limit.
    pub(crate) fn charge_over(&mut self, n: u64) {
        self.used = self.used.saturating_add(n);
    }

    /// Gives `n` charged octets back.
    pub(crate) fn release(&mut self, n: u64) {
        self.used = self.used.saturating_sub(n);
    }

    /// Takes an idle pooled buffer of at least `len` octets (whole: see
    /// `BufPool::take`). Its octets stay charged: the caller now owns the
    /// charge.
    pub(crate) fn take_pooled(&mut self, len: usize) -> Option<BytesMut> {
        self.pool.take(len)
    }

    /// Returns a buffer taken with [`Self::take_pooled`] unused (its charge
    /// goes back to the pool).
    pub(crate) fn put_back(&mut self, buf: BytesMut) {
        let len = buf.len();
        if !self.pool.could_keep(len) {
            self.used = self.used.saturating_sub(len as u64);
            return;
        }
        let evicted = self.pool.keep(buf.freeze()) as u64;
        self.used = self.used.saturating_sub(evicted);
    }

    /// Keeps `buf` (a sink buffer whose charge the caller has already
    /// released, or an uncharged one) for reuse if the budget and the pool
    /// have room; otherwise it is simply dropped.
    pub(crate) fn keep(&mut self, buf: Bytes) {
        let len = buf.len() as u64;
        if !self.pool.could_keep(buf.len()) || self.used.saturating_add(len) > self.limit {
            return;
        }
        let evicted = self.pool.keep(buf) as u64;
        self.used = self.used + len - evicted;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_within_the_limit_and_release() {
        let mut l = Ledger::new(100);
        assert!(l.try_reserve(60, 0));
        assert!(!l.try_reserve(41, 0));
        assert!(!l.try_reserve(40, 1));
        assert!(l.try_reserve(40, 0));
        l.release(50);
        assert_eq!(l.in_use(), 50);
        assert!(l.try_reserve(50, 0));
        assert!(!l.try_reserve(1, 0));
        l.charge_over(5);
        assert_eq!(l.in_use(), 105);
        // Giving back more than was charged never wraps.
        l.release(200);
        assert_eq!(l.in_use(), 0);
    }

    #[test]
    fn pooled_buffers_count_and_make_room_when_needed() {
        let mut l = Ledger::new(1000);
        l.keep(Bytes::from(vec![0u8; 200]));
        assert_eq!((l.in_use(), l.pooled()), (200, 200));
        // 900 fits only once the idle buffer is dropped.
        assert!(l.try_reserve(900, 0));
        assert_eq!((l.in_use(), l.pooled()), (900, 0));
        // No room left: a buffer is not kept.
        l.keep(Bytes::from(vec![0u8; 200]));
        assert_eq!(l.pooled(), 0);
        l.release(900);
        l.keep(Bytes::from(vec![0u8; 200]));
        let m = l.take_pooled(150).expect("pooled");
        assert_eq!(m.len(), 200);
        // Its charge stays while it is out.
        assert_eq!((l.in_use(), l.pooled()), (200, 0));
        l.put_back(m);
        assert_eq!((l.in_use(), l.pooled()), (200, 200));
    }

    #[test]
    fn the_pool_is_at_most_a_quarter_of_the_limit() {
        let mut l = Ledger::new(1000);
        l.keep(Bytes::from(vec![0u8; 251]));
        assert_eq!(l.in_use(), 0);
        l.keep(Bytes::from(vec![0u8; 250]));
        assert_eq!(l.in_use(), 250);
        // Buffers kept one after another never add up to more: the oldest
        // make room.
        for len in [100, 100, 100, 30, 250, 1] {
            l.keep(Bytes::from(vec![0u8; len]));
            assert!(l.pooled() <= 250, "{} pooled", l.pooled());
            assert_eq!(l.in_use(), l.pooled());
        }
        // The last one displaced the 250-octet buffer before it.
        assert_eq!(l.pooled(), 1);
    }
}
