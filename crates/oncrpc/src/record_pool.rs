//! Buffers for large incoming records, kept by a connection for the next
//! ones.
//!
//! A large record (64 KiB or more, one fragment) is read into a buffer of
//! its own, and handed up as [`Bytes`] that give the buffer back to the
//! connection's pool when the last handle is dropped. Without it every such
//! record took a fresh allocation of its size, and glibc, which hands a
//! freed block back to the kernel once the top of its heap holds more than
//! its trim threshold, made the kernel fault and zero that memory in again
//! for the next record: with eight 1 MiB READ replies outstanding over one
//! connection, half of the client's time went there
//! (`docs/performance.md`, "ONC RPC/TCP's large records").
//!
//! The pool keeps at most [`KEEP`] buffers of at most [`KEEP_CAPACITY`]
//! octets each, so a connection that has received large records holds at
//! most 8 MiB of them while idle; buffers beyond that are freed.
//!
//! On a server, each buffer carries its charge to the connection's memory
//! account (`budget.rs`), its capacity, wherever it is: being filled,
//! handed up as a record, or kept idle in the pool. The charge is given
//! back when the buffer is freed.

use std::sync::{Arc, Weak};

use bytes::Bytes;
use parking_lot::Mutex;

use crate::budget::{ConnMemory, Held};
use crate::util::lock;

/// Records at least this long (one fragment) are read into pooled buffers.
pub(crate) const LARGE_RECORD: usize = 64 * 1024;

/// Buffers a connection keeps for its next large records.
pub(crate) const KEEP: usize = 4;

/// The largest buffer kept: a 1 MiB payload with its RPC headers fits,
/// and the step a buffer grows by is 1 MiB.
pub(crate) const KEEP_CAPACITY: usize = 2 << 20;

/// A buffer and its charge (none on a client).
pub(crate) type Charged = (Vec<u8>, Option<Held>);

type Free = Mutex<Vec<Charged>>;

/// One connection's pool of large-record buffers.
#[derive(Default)]
pub(crate) struct RecordPool {
    free: Arc<Free>,
    memory: Option<Arc<ConnMemory>>,
}

impl RecordPool {
    /// A pool whose buffers are charged to `memory`.
    pub(crate) fn charged(memory: Arc<ConnMemory>) -> Self {
        Self {
            free: Arc::default(),
            memory: Some(memory),
        }
    }

    /// An empty buffer with room for at least `capacity` octets: the most
    /// recently returned one (its memory is the likeliest to be in the
    /// cache and mapped), or a new one; with its charge.
    pub(crate) fn take(&self, capacity: usize) -> Charged {
        let (mut v, mut held) = lock(&self.free)
            .pop()
            .unwrap_or_else(|| (Vec::new(), self.memory.as_ref().map(|m| m.charge(0))));
        v.clear();
        v.reserve_exact(capacity);
        if let Some(h) = held.as_mut() {
            h.resize(v.capacity() as u64);
        }
        (v, held)
    }

    /// `body` as a record: when the last handle to it is dropped, the
    /// buffer goes back to this pool (if the pool still exists and has
    /// room), its charge with it.
    pub(crate) fn record(&self, (body, held): Charged) -> Bytes {
        Bytes::from_owner(Pooled {
            body,
            held,
            home: Arc::downgrade(&self.free),
        })
    }

    /// Buffers kept now.
    #[cfg(test)]
    pub(crate) fn kept(&self) -> usize {
        lock(&self.free).len()
    }
}

/// A record's buffer, on its way back to the pool.
struct Pooled {
    body: Vec<u8>,
    held: Option<Held>,
    home: Weak<Free>,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.body
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        if self.body.capacity() > KEEP_CAPACITY {
            return;
        }
        if let Some(home) = self.home.upgrade() {
            let mut free = lock(&home);
            if free.len() < KEEP {
                free.push((std::mem::take(&mut self.body), self.held.take()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_record_gives_its_buffer_back_for_the_next() {
        let pool = RecordPool::default();
        let (mut v, held) = pool.take(100_000);
        v.extend_from_slice(&[7u8; 100_000]);
        let at = v.as_ptr();
        let rec = pool.record((v, held));
        assert_eq!(rec.len(), 100_000);
        assert!(rec.iter().all(|&b| b == 7));
        let part = rec.slice(10..20);
        drop(rec);
        assert_eq!(pool.kept(), 0, "a slice still holds the buffer");
        drop(part);
        assert_eq!(pool.kept(), 1);
        let (again, _) = pool.take(50_000);
        assert!(again.is_empty());
        assert_eq!(again.as_ptr(), at, "the same memory, reused");
        assert_eq!(pool.kept(), 0);
    }

    #[test]
    fn the_pool_keeps_few_buffers_and_none_too_large() {
        let pool = RecordPool::default();
        let recs: Vec<Bytes> = (0..KEEP + 2)
            .map(|_| {
                let mut v = pool.take(LARGE_RECORD);
                v.0.push(1);
                pool.record(v)
            })
            .collect();
        drop(recs);
        assert_eq!(pool.kept(), KEEP);
        let pool = RecordPool::default();
        let mut big = pool.take(KEEP_CAPACITY + 1);
        big.0.push(1);
        drop(pool.record(big));
        assert_eq!(
            pool.kept(),
            0,
            "a buffer larger than KEEP_CAPACITY is freed"
        );
    }

    #[test]
    fn buffers_carry_their_charge_wherever_they_are() {
        use rpcrdma_sync::{Budget, MemoryAccount};
        let shared = Arc::new(Budget::new(1 << 30));
        let reserve: Arc<crate::budget::ReserveFn> = Arc::new(|_, _, _, _: &[u8]| 0);
        let mem = ConnMemory::admit(shared.clone(), 1 << 30, reserve).unwrap();
        let base = mem.used();
        let pool = RecordPool::charged(mem.clone());
        let (mut v, held) = pool.take(LARGE_RECORD);
        let cap = v.capacity() as u64;
        assert_eq!(mem.used() - base, cap, "being filled");
        v.push(1);
        let rec = pool.record((v, held));
        assert_eq!(mem.used() - base, cap, "handed up");
        drop(rec);
        assert_eq!(pool.kept(), 1);
        assert_eq!(mem.used() - base, cap, "kept idle");
        // Taken again and grown: the charge follows the capacity.
        let (v, held) = pool.take(4 * LARGE_RECORD);
        assert_eq!(mem.used() - base, v.capacity() as u64);
        drop((v, held));
        assert_eq!(mem.used(), base, "freed");
        // Kept buffers are given back with the pool.
        let (mut v, held) = pool.take(LARGE_RECORD);
        v.push(1);
        drop(pool.record((v, held)));
        assert!(mem.used() > base);
        drop(pool);
        assert_eq!(mem.used(), base);
        drop(mem);
        assert_eq!(shared.in_use(), 0);
    }

    #[test]
    fn a_record_outliving_its_connection_frees_its_buffer() {
        let pool = RecordPool::default();
        let mut v = pool.take(LARGE_RECORD);
        v.0.push(1);
        let rec = pool.record(v);
        drop(pool);
        assert_eq!(&rec[..], &[1]);
        drop(rec);
    }
}
