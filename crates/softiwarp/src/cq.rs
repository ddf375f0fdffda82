//! Completion queues.

use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use rpcrdma_sync::Waiters;
use rpcrdma_verbs::{CompletionQueue, WorkCompletion};

use crate::qp::QpInner;

/// Most tasks remembered as waiting on one queue (see
/// [`Waiters::register`]): many, as any number of tasks may wait.
const MAX_CQ_WAITERS: usize = 1024;

#[derive(Debug, Default)]
struct CqState {
    q: VecDeque<WorkCompletion>,
    /// Tasks waiting for a completion (usually one). Kept under the same
    /// lock as the queue: one lock per push or poll, no separate notifier.
    waiters: Waiters<MAX_CQ_WAITERS>,
}

#[derive(Debug)]
struct CqInner {
    state: Mutex<CqState>,
    /// The queue's length, stored under the state lock whenever it
    /// changes: [`CompletionQueue::poll`] of an empty queue (the reader's
    /// last look before it waits, several times a round trip) returns
    /// without the lock. A completion pushed by another thread meanwhile
    /// is seen by the next poll, as with a hardware queue; a waiter
    /// always looks under the lock.
    queued: AtomicUsize,
    capacity: usize,
    /// Queue pairs whose completions come here.
    owners: Mutex<Vec<Weak<QpInner>>>,
    /// The queue pair whose socket the task polling
    /// [`CompletionQueue::poll_wait`] reads, while it does (until
    /// [`CompletionQueue::pause`]).
    poller: Mutex<Option<Weak<QpInner>>>,
}

/// A completion queue (a cheap handle; clones share the queue).
#[derive(Debug, Clone)]
pub struct Cq {
    inner: Arc<CqInner>,
}

/// The queue was full: the completion was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Overrun;

impl Cq {
    pub(crate) fn new(capacity: usize) -> Self {
        Cq {
            inner: Arc::new(CqInner {
                state: Mutex::new(CqState {
                    q: VecDeque::with_capacity(capacity.min(4096)),
                    waiters: Waiters::new(),
                }),
                queued: AtomicUsize::new(0),
                capacity: capacity.max(1),
                owners: Mutex::new(Vec::new()),
                poller: Mutex::new(None),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, CqState> {
        self.inner.state.lock()
    }

    /// Adds completions; wakes the waiters (except `me`, the task that is
    /// reading them in itself and looks at the queue right after).
    pub(crate) fn push_all(
        &self,
        wcs: &mut Vec<WorkCompletion>,
        me: Option<&Waker>,
    ) -> Result<(), Overrun> {
        if wcs.is_empty() {
            return Ok(());
        }
        let mut res = Ok(());
        let mut st = self.lock();
        for wc in wcs.drain(..) {
            if st.q.len() >= self.inner.capacity {
                tracing::error!(capacity = self.inner.capacity, "completion queue overrun");
                res = Err(Overrun);
                continue;
            }
            st.q.push_back(wc);
        }
        self.inner.queued.store(st.q.len(), Ordering::Release);
        // Under the queue's lock (a waker only schedules its task), so
        // the list keeps its capacity: no allocation per completion. `me`
        // (the task that publishes completions it then looks at itself)
        // stays registered (see `Waiters::wake_all_but`).
        st.waiters.wake_all_but(me);
        res
    }

    /// Adds the completions `next` yields, under one lock; wakes the
    /// waiters (except `me`, as [`Cq::push_all`]).
    pub(crate) fn push_from(
        &self,
        mut next: impl FnMut() -> Option<WorkCompletion>,
        me: Option<&Waker>,
    ) -> Result<(), Overrun> {
        let mut res = Ok(());
        let mut st = self.lock();
        while let Some(wc) = next() {
            if st.q.len() >= self.inner.capacity {
                tracing::error!(capacity = self.inner.capacity, "completion queue overrun");
                res = Err(Overrun);
                continue;
            }
            st.q.push_back(wc);
        }
        self.inner.queued.store(st.q.len(), Ordering::Release);
        // Under the queue's lock (a waker only schedules its task), so
        // the list keeps its capacity: no allocation per completion. `me`
        // (the task that publishes completions it then looks at itself)
        // stays registered (see `Waiters::wake_all_but`).
        st.waiters.wake_all_but(me);
        res
    }

    /// [`CompletionQueue::poll`] of a queue that had completions.
    fn poll_queued(&self, out: &mut Vec<WorkCompletion>, max: usize) -> usize {
        let mut st = self.lock();
        self.take_locked(&mut st, out, max)
    }

    /// Moves up to `max` queued completions into `out`, under the lock.
    fn take_locked(&self, st: &mut CqState, out: &mut Vec<WorkCompletion>, max: usize) -> usize {
        let n = st.q.len().min(max);
        out.reserve(n);
        for _ in 0..n {
            if let Some(wc) = st.q.pop_front() {
                out.push(wc);
            }
        }
        self.inner.queued.store(st.q.len(), Ordering::Release);
        n
    }

    /// Whether `other` is a handle of this same queue.
    pub(crate) fn same_queue(&self, other: &Cq) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Whether a completion is waiting (as last stored; a waiter looks
    /// under the lock).
    pub(crate) fn has_queued(&self) -> bool {
        self.inner.queued.load(Ordering::Acquire) > 0
    }

    pub(crate) fn attach(&self, qp: &Arc<QpInner>) {
        let mut o = self.inner.owners.lock();
        o.retain(|w| w.strong_count() > 0);
        if !o.iter().any(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(qp))) {
            o.push(Arc::downgrade(qp));
        }
    }

    /// The one live queue pair feeding this queue, if there is exactly one.
    fn sole_owner(&self) -> Option<Arc<QpInner>> {
        let mut o = self.inner.owners.lock();
        if o.len() > 1 {
            o.retain(|w| w.strong_count() > 0);
        }
        match &o[..] {
            [one] => one.upgrade(),
            _ => None,
        }
    }

    /// Waits until a completion is pushed (or one is already there).
    async fn wait_push(&self) {
        poll_fn(|cx| {
            let mut st = self.lock();
            if st.q.is_empty() {
                st.waiters.register(cx.waker());
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        })
        .await
    }

    /// Completions waiting.
    pub fn len(&self) -> usize {
        self.lock().q.len()
    }

    /// Whether no completion is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl CompletionQueue for Cq {
    #[inline]
    fn poll(&self, out: &mut Vec<WorkCompletion>, max: usize) -> usize {
        if self.inner.queued.load(Ordering::Acquire) == 0 {
            return 0;
        }
        self.poll_queued(out, max)
    }

    /// Waits for a completion. When one queue pair feeds this queue, the
    /// waiting task reads that queue pair's socket itself (its I/O task
    /// stands aside meanwhile): the completion is produced and consumed on
    /// one task, with no hop between tasks.
    async fn wait(&self) {
        let Some(qp) = self.sole_owner() else {
            return self.wait_push().await;
        };
        qp.start_io();
        let consumer = Consumer::enter(&qp);
        loop {
            if !qp.wants_read() {
                drop(consumer);
                return self.wait_push().await;
            }
            let mut readable = pin!(qp.readable());
            let socket_ready = poll_fn(|cx| {
                let mut st = self.lock();
                if !st.q.is_empty() {
                    return Poll::Ready(false);
                }
                if readable.as_mut().poll(cx).is_ready() {
                    // We are about to publish completions ourselves: do not
                    // stay registered, or we would wake this very task.
                    st.waiters.remove(cx.waker());
                    return Poll::Ready(true);
                }
                st.waiters.register(cx.waker());
                Poll::Pending
            })
            .await;
            if !socket_ready {
                return;
            }
            qp.read_ready(None);
            if !self.lock().q.is_empty() {
                return;
            }
        }
    }

    /// Like `wait`, for the task that keeps polling: it reads the sole
    /// queue pair's socket itself (the I/O task stands aside) from its
    /// first poll until [`CompletionQueue::pause`], so no task is entered
    /// or left per completion.
    fn poll_wait(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.has_queued() {
            return Poll::Ready(());
        }
        if let Some(qp) = self.poller() {
            // Whether the connection takes input is learnt from the read
            // itself (under the lock it takes anyway): while it does not,
            // readiness only leads here again, to the waiters' list.
            while qp.poll_read_ready(cx).is_ready() {
                let read = qp.read_ready(Some(cx.waker()));
                // Published on this thread: the stored length is current.
                if self.has_queued() {
                    return Poll::Ready(());
                }
                if !read.wants_read {
                    break;
                }
            }
        }
        let mut st = self.lock();
        if st.q.is_empty() {
            st.waiters.register(cx.waker());
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }

    /// [`CompletionQueue::poll_wait`] and [`CompletionQueue::poll`] in
    /// one: what the poller's own read of the socket produces goes straight
    /// into `out` when nothing is queued before it (not through the queue,
    /// its lock and the waiters), the rest through the queue as usual.
    fn poll_next_batch(
        &self,
        out: &mut Vec<WorkCompletion>,
        max: usize,
        cx: &mut Context<'_>,
    ) -> Poll<usize> {
        if self.has_queued() {
            let n = self.poll_queued(out, max);
            if n > 0 {
                return Poll::Ready(n);
            }
        }
        let before = out.len();
        if let Some(qp) = self.poller() {
            while qp.poll_read_ready(cx).is_ready() {
                let read = qp.read_ready_into(Some(cx.waker()), Some((&mut *out, before + max)));
                if out.len() > before {
                    return Poll::Ready(out.len() - before);
                }
                // Published on this thread: the stored length is current.
                if self.has_queued() {
                    let n = self.poll_queued(out, max);
                    if n > 0 {
                        return Poll::Ready(n);
                    }
                }
                if !read.wants_read {
                    break;
                }
            }
        }
        let mut st = self.lock();
        if st.q.is_empty() {
            st.waiters.register(cx.waker());
            Poll::Pending
        } else {
            Poll::Ready(self.take_locked(&mut st, out, max))
        }
    }

    /// Hands the socket back to the I/O task.
    fn pause(&self) {
        let qp = self.inner.poller.lock().take().and_then(|w| w.upgrade());
        if let Some(qp) = qp {
            if qp.consumers.fetch_sub(1, Ordering::AcqRel) == 1 {
                qp.hand_back_read();
            }
        }
    }

    fn capacity(&self) -> usize {
        self.inner.capacity
    }
}

impl Cq {
    /// The queue pair whose socket the polling task reads (see
    /// [`CompletionQueue::poll_wait`]): the sole one feeding this queue,
    /// started and muted for its I/O task on the first poll.
    fn poller(&self) -> Option<Arc<QpInner>> {
        let mut p = self.inner.poller.lock();
        match p.as_ref().and_then(Weak::upgrade) {
            Some(qp) => Some(qp),
            None => {
                let qp = self.sole_owner();
                if let Some(qp) = &qp {
                    qp.start_io();
                    qp.consumers.fetch_add(1, Ordering::AcqRel);
                    *p = Some(Arc::downgrade(qp));
                }
                qp
            }
        }
    }
}

/// Marks a task reading a queue pair's socket from a completion-queue wait;
/// on leaving, hands reading back to the I/O task.
struct Consumer(Arc<QpInner>);

impl Consumer {
    fn enter(qp: &Arc<QpInner>) -> Self {
        if qp.consumers.fetch_add(1, Ordering::AcqRel) == 0 {
            qp.mute_io_read();
        }
        Consumer(qp.clone())
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        if self.0.consumers.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.hand_back_read();
        }
    }
}
