//! [`Shared`]: a plain value under a lock, a counter of its releases, and
//! the tasks waiting for the next one.

use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use crate::primitive::{AtomicU64, Mutex};
use crate::waiters::{Waiters, MAX_WAITERS};

/// Most tasks a [`Shared`] remembers as waiting for a release (the drivers
/// of every connection sharing one value may wait at once; see
/// [`Waiters::register`]).
const MAX_SHARED_WAITERS: usize = MAX_WAITERS * 64;

/// A plain value shared between tasks, some of which wait for the others
/// to give something back to it: a memory account shared by a server's
/// connections, say.
///
/// The value itself knows nothing of locks or wakers; [`Shared::with`]
/// runs a closure on it under the lock. A change that may let a waiting
/// task proceed is made with [`Shared::release_with`]: it moves the
/// *epoch* (a counter of releases, read without the lock by
/// [`Shared::epoch`]) and wakes the tasks waiting. A task that found the
/// value wanting waits with [`Shared::poll_released`], passing the epoch
/// it read *before* it looked: a release between that read and the wait
/// is seen, so no wake-up is lost.
///
/// The waiters are kept under the value's lock (a [`Waiters`], bounded:
/// with too many, all are woken and forget), so a release takes that one
/// lock and nothing else, and wakes them after letting it go. A lookup
/// ([`Shared::with`]) never touches the epoch or the waiters.
///
/// ```
/// # use std::task::{Context, Waker};
/// use rpcrdma_sync::Shared;
///
/// let free = Shared::new(0u64);
/// let mut cx = Context::from_waker(Waker::noop());
/// let seen = free.epoch();
/// // Nothing free: wait for a release.
/// assert!(free.with(|n| *n == 0));
/// assert!(free.poll_released(seen, &mut cx).is_pending());
/// free.release_with(|n| *n += 10);
/// assert!(free.poll_released(seen, &mut cx).is_ready());
/// assert_eq!(free.with(|n| *n), 10);
/// ```
#[derive(Debug)]
pub struct Shared<T> {
    state: Mutex<State<T>>,
    /// Moved by every release, under the lock; read without it.
    epoch: AtomicU64,
}

#[derive(Debug)]
struct State<T> {
    value: T,
    /// The tasks waiting for the next release.
    waiters: Waiters<MAX_SHARED_WAITERS>,
}

impl<T: Default> Default for Shared<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> Shared<T> {
    /// `value`, shared, at epoch 0 with no task waiting.
    pub fn new(value: T) -> Self {
        Shared {
            state: Mutex::new(State {
                value,
                waiters: Waiters::new(),
            }),
            epoch: AtomicU64::new(0),
        }
    }

    /// Runs `f` on the value under the lock (a lookup, or a change that
    /// lets no waiting task proceed: a charge).
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.state.lock().value)
    }

    /// Runs `f` on the value under the lock as a release (a change that
    /// may let a waiting task proceed: memory given back): the epoch moves
    /// and the tasks waiting are woken, once the lock is let go.
    pub fn release_with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let (r, mut woken) = {
            let mut s = self.state.lock();
            let r = f(&mut s.value);
            // Under the lock: a waiter that looks at the epoch under it
            // (`poll_released`) either sees this release or registered
            // before it, and is taken below.
            self.epoch.fetch_add(1, Ordering::Release);
            (r, s.waiters.take())
        };
        woken.wake_all();
        r
    }

    /// A counter that moves at every [`Shared::release_with`]. Read it
    /// before looking at the value, and pass it to
    /// [`Shared::poll_released`] if the value was wanting.
    #[inline]
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Ready once a release happened since [`Shared::epoch`] returned
    /// `seen`; otherwise registers the task to be woken by the next one.
    pub fn poll_released(&self, seen: u64, cx: &mut Context<'_>) -> Poll<()> {
        if self.epoch() != seen {
            return Poll::Ready(());
        }
        let mut s = self.state.lock();
        // Looked at again under the lock, where releases move it: a
        // release before this look is seen, one after it finds the task
        // registered.
        if self.epoch.load(Ordering::Relaxed) != seen {
            return Poll::Ready(());
        }
        s.waiters.register(cx.waker());
        Poll::Pending
    }
}

// The model's atomics work only inside `loom::model` (tests/loom.rs).
#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_release_wakes_a_waiting_task_once() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        let s = Shared::new(0u32);
        let seen = s.epoch();
        assert!(s.poll_released(seen, &mut cx).is_pending());
        assert!(s.poll_released(seen, &mut cx).is_pending(), "once per task");
        assert_eq!(s.release_with(|v| std::mem::replace(v, 1)), 0);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(s.poll_released(seen, &mut cx).is_ready());
        // Nobody waits now: the next release wakes nobody.
        s.release_with(|v| *v += 1);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(s.with(|v| *v), 2);
        assert_eq!(s.epoch(), seen + 2);
    }

    #[test]
    fn a_lookup_moves_nothing_and_wakes_nobody() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        let s = Shared::new(5u32);
        let seen = s.epoch();
        assert!(s.poll_released(seen, &mut cx).is_pending());
        s.with(|v| *v -= 1);
        assert_eq!((s.epoch(), count.0.load(Ordering::SeqCst)), (seen, 0));
    }
}
