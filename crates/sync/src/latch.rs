//! [`Latch`]: a value set once, and the tasks waiting for it.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use crate::primitive::{AtomicBool, Mutex};
use crate::waiters::Waiters;

/// A value set once (the first [`Latch::set`] wins) and the wakers of the
/// tasks waiting for it: why a connection ended, for instance. Cheaper
/// than a watch channel for a `closed()` future polled on every message
/// of a reader's `select!` (no allocation once the waker is stored).
///
/// ```
/// use rpcrdma_sync::Latch;
///
/// let l = Latch::new();
/// assert!(!l.is_set());
/// assert!(l.set("reset"));
/// assert!(!l.set("eof"), "the first value stays");
/// assert_eq!(l.get(), Some("reset"));
/// ```
#[derive(Debug)]
pub struct Latch<T> {
    /// Whether the value is there (read without the lock).
    set: AtomicBool,
    state: Mutex<(Option<T>, Waiters)>,
}

impl<T> Default for Latch<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Latch<T> {
    /// A latch with no value and no waiter.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Latch {
            set: AtomicBool::new(false),
            state: Mutex::new((None, Waiters::new())),
        }
    }

    /// A latch with no value and no waiter.
    #[cfg(loom)]
    pub fn new() -> Self {
        Latch {
            set: AtomicBool::new(false),
            state: Mutex::new((None, Waiters::new())),
        }
    }

    /// Whether the value is set.
    #[inline]
    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// Sets the value unless one is there already, and wakes the waiting
    /// tasks; returns whether this call set it.
    pub fn set(&self, value: T) -> bool {
        let (first, mut waiters) = {
            let mut g = self.state.lock();
            let first = g.0.is_none();
            if first {
                g.0 = Some(value);
                self.set.store(true, Ordering::Release);
            }
            (first, g.1.take())
        };
        waiters.wake_all();
        first
    }
}

impl<T: Clone> Latch<T> {
    /// The value, if set.
    pub fn get(&self) -> Option<T> {
        self.state.lock().0.clone()
    }

    /// Ready with the value once it is set; otherwise registers the task.
    pub fn poll_wait(&self, cx: &mut Context<'_>) -> Poll<T> {
        let mut g = self.state.lock();
        if let Some(v) = &g.0 {
            return Poll::Ready(v.clone());
        }
        g.1.register(cx.waker());
        Poll::Pending
    }

    /// Waits for the value (see [`Latch::poll_wait`]).
    pub fn wait(&self) -> impl Future<Output = T> + Send + '_
    where
        T: Send,
    {
        std::future::poll_fn(move |cx| self.poll_wait(cx))
    }
}

// The model's atomics work only inside `loom::model` (tests/loom.rs).
#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool as Flag;
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    struct Woken(Flag);
    impl Wake for Woken {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_waiting_task_is_woken_by_the_first_value() {
        let woken = Arc::new(Woken(Flag::new(false)));
        let waker = Waker::from(woken.clone());
        let mut cx = Context::from_waker(&waker);
        let l = Latch::new();
        assert_eq!(l.poll_wait(&mut cx), Poll::Pending);
        assert!(l.set(1));
        assert!(woken.0.load(Ordering::SeqCst));
        assert!(!l.set(2));
        assert_eq!(l.poll_wait(&mut cx), Poll::Ready(1));
        assert!(l.is_set());
    }
}
