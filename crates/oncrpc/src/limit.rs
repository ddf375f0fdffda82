//! [`Limit`]: a count of things in progress with a fixed maximum (calls a
//! client has outstanding, calls a server runs at once).
//!
//! Cheaper on the per-call path than `tokio::sync::Semaphore`, whose
//! release takes its waiters' lock every time: here taking and giving back
//! a slot is one atomic operation each while nobody waits; the lock is
//! taken only when slots run out.

use parking_lot::Mutex;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use crate::util::lock;

/// At most `max` slots taken at once; a task that finds none waits
/// ([`Limit::take`]) and is woken when one is given back.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use rpcrdma_oncrpc::Limit;
///
/// let limit = Arc::new(Limit::new(1));
/// let first = limit.try_take().expect("one slot");
/// assert!(limit.try_take().is_none());
/// drop(first);
/// let _second = limit.take().await;
/// assert_eq!(limit.available(), 0);
/// # }
/// ```
#[derive(Debug)]
pub struct Limit {
    free: AtomicUsize,
    /// Tasks waiting for a slot, in order (with the id of their wait).
    waiters: Mutex<Vec<(u64, Waker)>>,
    /// How many entries `waiters` has (read without the lock).
    waiting: AtomicUsize,
    next_id: AtomicU64,
}

/// A taken slot of a [`Limit`], given back when dropped.
#[derive(Debug)]
#[must_use = "the slot is given back when dropped"]
pub struct Slot<'a>(&'a Limit);

/// A taken slot of a shared [`Limit`], given back when dropped.
#[derive(Debug)]
#[must_use = "the slot is given back when dropped"]
pub struct OwnedSlot(Arc<Limit>);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.give();
    }
}

impl Drop for OwnedSlot {
    fn drop(&mut self) {
        self.0.give();
    }
}

impl Limit {
    /// A limit of `max` slots (at least one).
    pub fn new(max: usize) -> Self {
        Limit {
            free: AtomicUsize::new(max.max(1)),
            waiters: Mutex::new(Vec::new()),
            waiting: AtomicUsize::new(0),
            next_id: AtomicU64::new(0),
        }
    }

    /// Slots free now.
    pub fn available(&self) -> usize {
        self.free.load(Ordering::Acquire)
    }

    fn try_dec(&self) -> bool {
        self.free
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |f| f.checked_sub(1))
            .is_ok()
    }

    /// A slot if one is free now.
    pub fn try_take(&self) -> Option<Slot<'_>> {
        self.try_dec().then(|| Slot(self))
    }

    /// A slot of a shared limit if one is free now.
    pub fn try_take_owned(self: &Arc<Self>) -> Option<OwnedSlot> {
        self.try_dec().then(|| OwnedSlot(self.clone()))
    }

    /// A slot, waiting for one to be given back if none is free.
    pub async fn take(&self) -> Slot<'_> {
        Take {
            limit: self,
            id: None,
        }
        .await;
        Slot(self)
    }

    /// A slot of a shared limit, waiting if none is free.
    pub async fn take_owned(self: Arc<Self>) -> OwnedSlot {
        Take {
            limit: &self,
            id: None,
        }
        .await;
        OwnedSlot(self)
    }

    fn give(&self) {
        self.free.fetch_add(1, Ordering::AcqRel);
        if self.waiting.load(Ordering::Acquire) > 0 {
            self.wake_one();
        }
    }

    /// Wakes the longest waiting task (it takes the slot when it runs, or
    /// passes the wake-up on if it no longer waits).
    fn wake_one(&self) {
        let w = {
            let mut ws = lock(&self.waiters);
            if ws.is_empty() {
                return;
            }
            let (_, w) = ws.remove(0);
            self.waiting.store(ws.len(), Ordering::Release);
            w
        };
        w.wake();
    }
}

/// Waits for a slot (the decrement is done when it resolves).
struct Take<'a> {
    limit: &'a Limit,
    /// Our entry in the waiters, once registered.
    id: Option<u64>,
}

impl Future for Take<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let limit = self.limit;
        if limit.try_dec() {
            if let Some(id) = self.id.take() {
                let mut ws = lock(&limit.waiters);
                ws.retain(|(i, _)| *i != id);
                limit.waiting.store(ws.len(), Ordering::Release);
            }
            return Poll::Ready(());
        }
        {
            let mut ws = lock(&limit.waiters);
            let id = *self
                .id
                .get_or_insert_with(|| limit.next_id.fetch_add(1, Ordering::Relaxed));
            match ws.iter_mut().find(|(i, _)| *i == id) {
                Some((_, w)) => {
                    if !w.will_wake(cx.waker()) {
                        *w = cx.waker().clone();
                    }
                }
                None => ws.push((id, cx.waker().clone())),
            }
            limit.waiting.store(ws.len(), Ordering::Release);
        }
        // A slot given back between the first look and the registration
        // saw nobody waiting: look again.
        if limit.try_dec() {
            let id = self.id.take();
            let mut ws = lock(&limit.waiters);
            ws.retain(|(i, _)| Some(*i) != id);
            limit.waiting.store(ws.len(), Ordering::Release);
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

impl Drop for Take<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id else {
            return;
        };
        let limit = self.limit;
        let registered = {
            let mut ws = lock(&limit.waiters);
            let before = ws.len();
            ws.retain(|(i, _)| *i != id);
            limit.waiting.store(ws.len(), Ordering::Release);
            ws.len() != before
        };
        // Not in the list any more: a give woke this wait, which gives up
        // now; the next waiter takes the wake-up.
        if !registered && limit.available() > 0 {
            limit.wake_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    #[derive(Default)]
    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn poll(t: &mut Pin<Box<Take<'_>>>, w: &Waker) -> Poll<()> {
        t.as_mut().poll(&mut Context::from_waker(w))
    }

    #[test]
    fn slots_are_counted_and_given_back() {
        let l = Limit::new(2);
        let a = l.try_take().unwrap();
        let b = l.try_take().unwrap();
        assert!(l.try_take().is_none());
        drop(a);
        assert_eq!(l.available(), 1);
        drop(b);
        assert_eq!(l.available(), 2);
        assert_eq!(Limit::new(0).available(), 1, "at least one slot");
    }

    #[test]
    fn a_waiter_is_woken_by_a_give_and_takes_the_slot() {
        let l = Limit::new(1);
        let held = l.try_take().unwrap();
        let c = Arc::new(Count::default());
        let w = Waker::from(c.clone());
        let mut t = Box::pin(Take {
            limit: &l,
            id: None,
        });
        assert!(poll(&mut t, &w).is_pending());
        assert!(poll(&mut t, &w).is_pending(), "registered once");
        assert_eq!(l.waiting.load(Ordering::SeqCst), 1);
        drop(held);
        assert_eq!(c.0.load(Ordering::SeqCst), 1);
        assert!(poll(&mut t, &w).is_ready());
        assert_eq!(l.available(), 0);
        assert_eq!(l.waiting.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_woken_waiter_that_gives_up_passes_the_wake_up_on() {
        let l = Limit::new(1);
        let held = l.try_take().unwrap();
        let (c1, c2) = (Arc::new(Count::default()), Arc::new(Count::default()));
        let (w1, w2) = (Waker::from(c1.clone()), Waker::from(c2.clone()));
        let mut t1 = Box::pin(Take {
            limit: &l,
            id: None,
        });
        let mut t2 = Box::pin(Take {
            limit: &l,
            id: None,
        });
        assert!(poll(&mut t1, &w1).is_pending());
        assert!(poll(&mut t2, &w2).is_pending());
        drop(held);
        assert_eq!(c1.0.load(Ordering::SeqCst), 1, "the first waiter");
        drop(t1);
        assert_eq!(c2.0.load(Ordering::SeqCst), 1, "passed on");
        assert!(poll(&mut t2, &w2).is_ready());
    }

    #[tokio::test]
    async fn many_tasks_share_few_slots() {
        let l = Arc::new(Limit::new(3));
        let peak = Arc::new(AtomicUsize::new(0));
        let now = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..50 {
            let (l, peak, now) = (l.clone(), peak.clone(), now.clone());
            tasks.push(tokio::spawn(async move {
                let _s = l.take_owned().await;
                let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(n, Ordering::SeqCst);
                tokio::task::yield_now().await;
                now.fetch_sub(1, Ordering::SeqCst);
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(peak.load(Ordering::SeqCst), 3);
        assert_eq!(l.available(), 3);
    }
}
