//! Small async helpers.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// An error and its causes (`source()`), joined by ": ", for logs: an
/// error prints its cause or returns it from `source()`, not both.
pub(crate) struct Chain<'a>(pub(crate) &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(c) = cause {
            write!(f, ": {c}")?;
            cause = c.source();
        }
        Ok(())
    }
}

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

/// [`std::collections::HashMap`] keyed by ids the process chose itself
/// (XIDs it allocated), hashed with `rustc-hash`'s Fx hasher instead of
/// SipHash. It gives no protection against keys chosen to collide, so it
/// is used only where the peer cannot choose which keys get inserted.
pub(crate) type IdMap<K, V> = std::collections::HashMap<K, V, rustc_hash::FxBuildHasher>;
/// [`std::collections::HashSet`] of our own ids (see [`IdMap`]).
pub(crate) type IdSet<K> = std::collections::HashSet<K, rustc_hash::FxBuildHasher>;

/// Locks `m`. The crate's locks are `parking_lot`'s: no poisoning to
/// check on every lock and unlock (the state they guard is kept
/// consistent at every step, as `rpcrdma_sync::lock` assumes of the
/// standard library's), and cheaper to take and release uncontended,
/// which the per-message locks of a round trip are.
#[inline]
pub(crate) fn lock<T: ?Sized>(m: &parking_lot::Mutex<T>) -> parking_lot::MutexGuard<'_, T> {
    m.lock()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_maps_spread_sequential_and_strided_keys() {
        use std::hash::BuildHasher;
        let mut m: IdMap<u32, u32> = IdMap::default();
        for k in 0..1000 {
            m.insert(k * 7919, k);
        }
        assert!((0..1000).all(|k| m.get(&(k * 7919)) == Some(&k)));
        // The table's bucket comes from the hash's low bits and its control
        // tag from the top seven: both must vary for sequential XIDs and
        // strided ones, as an identity hash would not.
        for stride in [1u32, 4, 7919, 1 << 16] {
            let hashes: Vec<u64> = (0..1000u32)
                .map(|k| m.hasher().hash_one(k.wrapping_mul(stride)))
                .collect();
            let distinct = |f: &dyn Fn(u64) -> u64| {
                let mut v: Vec<u64> = hashes.iter().map(|&h| f(h)).collect();
                v.sort_unstable();
                v.dedup();
                v.len()
            };
            let buckets = distinct(&|h| h & 1023);
            let tags = distinct(&|h| h >> 57);
            assert!(buckets >= 400, "stride {stride}: {buckets} of 1024 buckets");
            assert!(tags >= 32, "stride {stride}: {tags} of 128 tags");
        }
    }
}
