//! Small async helpers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// Counts tasks in progress; [`Tracker::wait`] returns when none are left.
#[derive(Clone, Default)]
pub(crate) struct Tracker {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    count: AtomicUsize,
    idle: Notify,
}

/// Held by a task in progress.
pub(crate) struct Token {
    inner: Arc<Inner>,
}

impl Drop for Token {
    fn drop(&mut self) {
        if self.inner.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.inner.idle.notify_waiters();
        }
    }
}

impl Tracker {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn token(&self) -> Token {
        self.inner.count.fetch_add(1, Ordering::AcqRel);
        Token {
            inner: self.inner.clone(),
        }
    }

    pub(crate) fn count(&self) -> usize {
        self.inner.count.load(Ordering::Acquire)
    }

    pub(crate) async fn wait(&self) {
        loop {
            let notified = self.inner.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.count() == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// A hasher for small integer keys the process chose itself (XIDs it
/// allocated): a multiply-rotate mix instead of SipHash. It gives no
/// protection against keys chosen to collide, so it is used only where
/// the peer cannot choose which keys get inserted.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

/// [`std::collections::HashMap`] keyed by our own ids, hashed with
/// [`IdHasher`].
pub(crate) type IdMap<K, V> =
    std::collections::HashMap<K, V, std::hash::BuildHasherDefault<IdHasher>>;
/// [`std::collections::HashSet`] of our own ids, hashed with [`IdHasher`].
pub(crate) type IdSet<K> = std::collections::HashSet<K, std::hash::BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_maps_spread_sequential_and_strided_keys() {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let b = BuildHasherDefault::<IdHasher>::default();
        // Sequential XIDs and XIDs that differ only in high bits land in
        // different buckets of a small table (top bits of the hash used by
        // hashbrown's control bytes, low bits for the bucket).
        let mut low = std::collections::HashSet::new();
        for k in 0u32..64 {
            low.insert(b.hash_one(k) & 63);
            low.insert(b.hash_one(k << 24) & 63);
        }
        assert!(low.len() > 40, "{}", low.len());
        let mut m: IdMap<u32, u32> = IdMap::default();
        for k in 0..1000 {
            m.insert(k * 7919, k);
        }
        assert!((0..1000).all(|k| m.get(&(k * 7919)) == Some(&k)));
    }
}
