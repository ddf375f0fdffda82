//! [`Waiters`]: the wakers of the tasks waiting for something, kept under
//! the lock of whatever they wait for.

use std::task::Waker;

/// Most distinct waiting tasks a [`Waiters`] remembers by default (see
/// [`Waiters::register`]).
pub const MAX_WAITERS: usize = 16;

/// The wakers of the tasks waiting for something, once per task.
///
/// A plain value: its owner keeps it under the lock that guards what the
/// tasks wait for (a queue, a flag, a counter), so that looking at the
/// state and registering happen together and no wake-up is lost. At most
/// `MAX` distinct tasks are remembered: when one more registers, all are
/// woken and forgotten first (a spurious wake-up only makes a waiter look
/// again and register anew), so tasks that stopped waiting cannot pile up.
/// Waking keeps the list's capacity: no allocation per wake-up.
///
/// ```
/// use std::task::Waker;
/// use rpcrdma_sync::Waiters;
///
/// let mut ws: Waiters = Waiters::new();
/// ws.register(Waker::noop());
/// ws.register(Waker::noop()); // the same task: remembered once
/// assert_eq!(ws.len(), 1);
/// ws.wake_all();
/// assert!(ws.is_empty());
/// ```
#[derive(Debug, Default)]
pub struct Waiters<const MAX: usize = MAX_WAITERS> {
    list: Vec<Waker>,
}

impl<const MAX: usize> Waiters<MAX> {
    /// No waiter.
    pub const fn new() -> Self {
        Waiters { list: Vec::new() }
    }

    /// Remembers `w` to be woken by the next wake-up, unless a waker that
    /// wakes the same task is there already; with `MAX` tasks remembered,
    /// wakes and forgets them all first.
    #[inline]
    pub fn register(&mut self, w: &Waker) {
        if self.list.iter().any(|x| x.will_wake(w)) {
            return;
        }
        if self.list.len() >= MAX {
            self.wake_all();
        }
        self.list.push(w.clone());
    }

    /// Forgets the task `w` wakes (it is about to look by itself).
    pub fn remove(&mut self, w: &Waker) {
        self.list.retain(|x| !x.will_wake(w));
    }

    /// Wakes every task and forgets them.
    #[inline]
    pub fn wake_all(&mut self) {
        for w in self.list.drain(..) {
            w.wake();
        }
    }

    /// Wakes every task but `me` and forgets them; `me` (a task that
    /// produced what the others wait for and looks at it itself right
    /// after) stays remembered: it would register again at once, so
    /// keeping its waker saves a clone and a drop, at the price of at most
    /// one spurious wake-up later.
    #[inline]
    pub fn wake_all_but(&mut self, me: Option<&Waker>) {
        match (&self.list[..], me) {
            ([], _) => {}
            // The usual case: the one waiting task is `me`.
            ([only], Some(m)) if m.will_wake(only) => {}
            (_, None) => self.wake_all(),
            (_, Some(m)) => self.list.retain(|w| {
                let mine = m.will_wake(w);
                if !mine {
                    w.wake_by_ref();
                }
                mine
            }),
        }
    }

    /// Takes the wakers out (to wake them after the lock is released),
    /// leaving none.
    pub fn take(&mut self) -> Self {
        Waiters {
            list: std::mem::take(&mut self.list),
        }
    }

    /// A waker of a task waiting now, if any.
    pub fn first(&self) -> Option<&Waker> {
        self.list.first()
    }

    /// How many tasks are remembered.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether no task is remembered.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

// The model's atomics work only inside `loom::model` (tests/loom.rs).
#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
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
    fn wake_all_but_me_spares_only_me() {
        let (mine, me) = counter();
        let (theirs, other) = counter();
        let mut ws: Waiters = Waiters::new();
        ws.register(&me);
        ws.wake_all_but(Some(&me));
        assert_eq!((mine.0.load(Ordering::SeqCst), ws.len()), (0, 1));
        ws.register(&other);
        ws.wake_all_but(Some(&me));
        assert_eq!(mine.0.load(Ordering::SeqCst), 0);
        assert_eq!(theirs.0.load(Ordering::SeqCst), 1);
        assert_eq!(ws.len(), 1, "me stays registered");
        ws.wake_all_but(None);
        assert_eq!((mine.0.load(Ordering::SeqCst), ws.len()), (1, 0));
    }

    #[test]
    fn too_many_tasks_are_all_woken_instead_of_piling_up() {
        let counters: Vec<_> = (0..=3).map(|_| counter()).collect();
        let mut ws: Waiters<3> = Waiters::new();
        for (_, w) in &counters {
            ws.register(w);
        }
        let woken: usize = counters
            .iter()
            .map(|(c, _)| c.0.load(Ordering::SeqCst))
            .sum();
        assert_eq!(woken, 3, "the first ones were woken to make room");
        assert_eq!(ws.len(), 1);
        let taken = ws.take();
        assert_eq!((taken.len(), ws.len()), (1, 0));
    }
}
