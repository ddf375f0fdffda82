//! A plain value shared between connections, and the tasks waiting for
//! it to give something back: the only synchronisation of the budget,
//! kept apart from its accounts ([`super::ledger`]) and generic over
//! them. The waiting is `rpcrdma-sync`'s: the wakers of the tasks waiting
//! for a release are kept by its plain [`Budget`], charged nothing, which
//! a release gives back to (and so wakes them); a release that finds
//! nobody waiting takes no second lock.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll};

use rpcrdma_sync::{lock, Budget, MemoryAccount};

/// A value behind a lock, with an epoch that changes at every release
/// and the tasks waiting for one.
#[derive(Debug)]
pub(crate) struct Shared<T> {
    value: Mutex<T>,
    /// Bumped by every release.
    epoch: AtomicU64,
    /// Whether some task registered since the last release woke them
    /// (a release wakes nobody, and takes no second lock, otherwise).
    waiting: AtomicBool,
    /// The waiting tasks' wakers: an account charged nothing, given back
    /// to (one octet, which only wakes them) by a release.
    wakers: Budget,
}

impl<T> Shared<T> {
    pub(crate) fn new(value: T) -> Self {
        Self {
            value: Mutex::new(value),
            epoch: AtomicU64::new(0),
            waiting: AtomicBool::new(false),
            wakers: Budget::new(0),
        }
    }

    /// The value, locked.
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        lock(&self.value)
    }

    /// Runs `f` on the value as a release: the epoch changes and the
    /// waiting tasks are woken.
    pub(crate) fn release_with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let r = f(&mut self.lock());
        self.epoch.fetch_add(1, Ordering::SeqCst);
        if self.waiting.swap(false, Ordering::SeqCst) {
            self.wakers.give_back(1);
        }
        r
    }

    /// A counter that changes at every release.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// Ready once a release happened since [`Self::epoch`] returned `seen`;
    /// otherwise registers the task to be woken then.
    pub(crate) fn poll_released(&self, seen: u64, cx: &mut Context<'_>) -> Poll<()> {
        if self.epoch() != seen {
            return Poll::Ready(());
        }
        // Registered, then announced, then the epoch looked at again: a
        // release after that look finds `waiting` set (by this task, or
        // cleared by a release that came after the announcement and so
        // woke the registered task), and one before it is seen.
        let w = self.wakers.epoch();
        if self.wakers.poll_released(w, cx).is_ready() {
            return Poll::Ready(());
        }
        self.waiting.store(true, Ordering::SeqCst);
        if self.epoch() != seen {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::task::Waker;

    struct Flag(AtomicBool);
    impl std::task::Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_release_wakes_a_waiting_task_once() {
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(flag.clone());
        let mut cx = Context::from_waker(&waker);
        let s = Shared::new(0u32);
        let seen = s.epoch();
        assert!(s.poll_released(seen, &mut cx).is_pending());
        s.release_with(|v| *v += 1);
        assert!(flag.0.swap(false, Ordering::SeqCst));
        assert!(s.poll_released(seen, &mut cx).is_ready());
        // Nobody waits now: the next release wakes nobody.
        s.release_with(|v| *v += 1);
        assert!(!flag.0.load(Ordering::SeqCst));
        assert_eq!(*s.lock(), 2);
    }
}
