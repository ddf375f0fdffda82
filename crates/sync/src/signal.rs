//! [`Signal`]: a flag and the wakers of the tasks waiting for it.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};

use crate::primitive::{AtomicBool, Mutex};
use crate::waiters::Waiters;

/// A flag and the wakers of the tasks waiting for it.
///
/// A notification is kept until a waiter consumes it: a task that polls
/// after [`Signal::notify`] resolves at once, and one notification
/// resolves one wait (several notifications before a wait resolve one).
/// Meant for one waiting task (a connection's reader); several are
/// allowed, each notification waking all of them and the first to look
/// consuming it.
#[derive(Debug, Default)]
pub struct Signal {
    set: AtomicBool,
    /// Registered on every wait; a lock without poisoning to check.
    wakers: Mutex<Waiters>,
}

impl Signal {
    /// A signal not set, with no waiter.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Signal {
            set: AtomicBool::new(false),
            wakers: Mutex::new(Waiters::new()),
        }
    }

    /// A signal not set, with no waiter.
    #[cfg(loom)]
    pub fn new() -> Self {
        Signal {
            set: AtomicBool::new(false),
            wakers: Mutex::new(Waiters::new()),
        }
    }

    /// Sets the flag and wakes the waiting tasks.
    #[inline]
    pub fn notify(&self) {
        // A swap, not a store: with two notifiers, the waiter's `take` may
        // read the other's write, and only a read-modify-write keeps this
        // notifier's release sequence going through it, so that what was
        // written before this call is seen once the wait resolves (the
        // loom test `signal_concurrent_notifies_wake_the_waiter` finds the
        // lost update a plain store allows).
        if self.set.swap(true, Ordering::Release) {
            // Set already and not consumed: the notifier that set it wakes
            // the tasks registered before it, and a task registering later
            // finds the flag when it looks again (`poll_wait`).
            return;
        }
        // Woken under the lock (a waker only schedules its task), so the
        // list keeps its capacity: no allocation per notification.
        self.wakers.lock().wake_all();
    }

    /// Whether a notification is waiting to be consumed.
    #[inline]
    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// Consumes a waiting notification; returns whether there was one.
    #[inline]
    pub fn take(&self) -> bool {
        self.set.swap(false, Ordering::AcqRel)
    }

    /// Remembers `w` to be woken by the next notification (once per task:
    /// a waker that would wake the same task replaces nothing; see
    /// [`Waiters::register`] for the bound).
    #[inline]
    pub fn register(&self, w: &Waker) {
        self.wakers.lock().register(w);
    }

    /// A waker of a task waiting now, if any (without removing it).
    pub fn waiter(&self) -> Option<Waker> {
        self.wakers.lock().first().cloned()
    }

    /// Resolves (consuming the notification) once [`Signal::notify`] was
    /// called since the last resolution; otherwise registers the task.
    pub fn poll_wait(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.take() {
            return Poll::Ready(());
        }
        self.register(cx.waker());
        // A notification between the first look and the registration
        // found no waker to wake: look again.
        if self.take() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// Waits for a notification (see [`Signal::poll_wait`]).
    pub fn wait(&self) -> impl Future<Output = ()> + Send + '_ {
        std::future::poll_fn(move |cx| self.poll_wait(cx))
    }
}

// The model's atomics work only inside `loom::model` (tests/loom.rs).
#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use crate::MAX_WAITERS;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counter() -> (Arc<Count>, Waker) {
        let c = Arc::new(Count(AtomicUsize::new(0)));
        (c.clone(), Waker::from(c))
    }

    #[test]
    fn a_notification_before_the_wait_resolves_it_once() {
        let s = Signal::new();
        let (_, w) = counter();
        let mut cx = Context::from_waker(&w);
        s.notify();
        s.notify();
        assert_eq!(s.poll_wait(&mut cx), Poll::Ready(()));
        assert_eq!(s.poll_wait(&mut cx), Poll::Pending);
    }

    #[test]
    fn notify_wakes_the_registered_task_once_and_forgets_it() {
        let s = Signal::new();
        let (c, w) = counter();
        let mut cx = Context::from_waker(&w);
        assert_eq!(s.poll_wait(&mut cx), Poll::Pending);
        assert_eq!(s.poll_wait(&mut cx), Poll::Pending, "registered once");
        s.notify();
        assert_eq!(c.0.load(Ordering::SeqCst), 1);
        s.notify();
        assert_eq!(c.0.load(Ordering::SeqCst), 1, "woken only while waiting");
        assert_eq!(s.poll_wait(&mut cx), Poll::Ready(()));
    }

    #[test]
    fn too_many_waiters_are_all_woken_instead_of_piling_up() {
        let s = Signal::new();
        let counters: Vec<_> = (0..=MAX_WAITERS).map(|_| counter()).collect();
        for (_, w) in &counters {
            s.register(w);
        }
        let woken: usize = counters
            .iter()
            .map(|(c, _)| c.0.load(Ordering::SeqCst))
            .sum();
        assert_eq!(woken, MAX_WAITERS, "the first ones were woken to make room");
        assert!(s.waiter().is_some());
        s.notify();
        assert!(s.waiter().is_none());
    }
}
