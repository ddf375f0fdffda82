//! Synchronisation primitives shared by the async drivers of the stack
//! (the ONC RPC connection reader, the RPC-over-RDMA transport, the
//! software iWARP provider), written once:
//!
//! * [`Signal`]: a flag and the wakers of the tasks waiting for it. One
//!   side sets the flag ([`Signal::notify`]); a waiting task resolves once
//!   per notification ([`Signal::wait`], [`Signal::poll_wait`]). Cheaper to
//!   poll on every message than a watch channel or a `tokio::sync::Notify`
//!   (no future state, no allocation once the waker is stored), and
//!   usable from synchronous code on either side.
//! * [`MemoryAccount`]: a memory limit that the connections of every
//!   transport of a server charge (what peers' requests make it hold),
//!   with [`Budget`], its plain implementation (`account.rs`).
//! * [`lock`]: locks a [`std::sync::Mutex`], ignoring poisoning. The state
//!   these locks guard is kept consistent at every step (no invariant is
//!   left half-updated across a call that could panic), so a panic in
//!   another thread holding the lock is no reason to fail every later user.
//!
//! # Example
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use std::sync::Arc;
//! use rpcrdma_sync::Signal;
//!
//! let s = Arc::new(Signal::new());
//! let waiter = tokio::spawn({
//!     let s = s.clone();
//!     async move { s.wait().await }
//! });
//! s.notify();
//! waiter.await.unwrap();
//! assert!(!s.is_set(), "the waiter consumed the notification");
//! # }
//! ```

mod account;

pub use account::{Budget, MemoryAccount};

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// Locks `m`, ignoring poisoning (see the [crate documentation](crate)).
///
/// ```
/// let m = std::sync::Mutex::new(1);
/// *rpcrdma_sync::lock(&m) += 1;
/// assert_eq!(*rpcrdma_sync::lock(&m), 2);
/// ```
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Most distinct waiting tasks remembered; when one more registers, all
/// are woken and forgotten (a spurious wake-up only makes a waiter look
/// again and register anew), so tasks that stopped waiting cannot pile up.
pub const MAX_WAITERS: usize = 16;

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
    /// `parking_lot`'s lock: registered on every wait, with no poisoning
    /// to check.
    wakers: parking_lot::Mutex<Vec<Waker>>,
}

impl Signal {
    /// A signal not set, with no waiter.
    pub const fn new() -> Self {
        Signal {
            set: AtomicBool::new(false),
            wakers: parking_lot::Mutex::new(Vec::new()),
        }
    }

    /// Sets the flag and wakes the waiting tasks.
    pub fn notify(&self) {
        self.set.store(true, Ordering::Release);
        let mut ws = self.wakers.lock();
        // Woken under the lock (a waker only schedules its task), so the
        // vector keeps its capacity: no allocation per notification.
        for w in ws.drain(..) {
            w.wake();
        }
    }

    /// Whether a notification is waiting to be consumed.
    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// Consumes a waiting notification; returns whether there was one.
    pub fn take(&self) -> bool {
        self.set.swap(false, Ordering::AcqRel)
    }

    /// Remembers `w` to be woken by the next notification (once per task:
    /// a waker that would wake the same task replaces nothing).
    pub fn register(&self, w: &Waker) {
        let mut ws = self.wakers.lock();
        if ws.iter().any(|x| x.will_wake(w)) {
            return;
        }
        if ws.len() >= MAX_WAITERS {
            for x in ws.drain(..) {
                x.wake();
            }
        }
        ws.push(w.clone());
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

#[cfg(test)]
mod tests {
    use super::*;
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

    #[test]
    fn lock_ignores_poisoning() {
        let m = Arc::new(Mutex::new(5));
        let m2 = m.clone();
        let _ = std::thread::spawn(move || {
            let _g = m2.lock().unwrap();
            panic!("poison it");
        })
        .join();
        assert!(m.is_poisoned());
        assert_eq!(*lock(&m), 5);
    }
}
