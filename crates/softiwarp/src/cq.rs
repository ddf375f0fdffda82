//! Completion queues.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};

use rpcrdma_verbs::{CompletionQueue, WorkCompletion};
use tokio::sync::Notify;

use crate::qp::QpInner;

#[derive(Debug)]
struct CqInner {
    q: Mutex<VecDeque<WorkCompletion>>,
    capacity: usize,
    notify: Notify,
    /// Queue pairs whose completions come here.
    owners: Mutex<Vec<Weak<QpInner>>>,
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
                q: Mutex::new(VecDeque::with_capacity(capacity.min(4096))),
                capacity: capacity.max(1),
                notify: Notify::new(),
                owners: Mutex::new(Vec::new()),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<WorkCompletion>> {
        self.inner.q.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds completions; wakes waiters once.
    pub(crate) fn push_all(&self, wcs: &mut Vec<WorkCompletion>) -> Result<(), Overrun> {
        if wcs.is_empty() {
            return Ok(());
        }
        let mut res = Ok(());
        {
            let mut q = self.lock();
            for wc in wcs.drain(..) {
                if q.len() >= self.inner.capacity {
                    tracing::error!(capacity = self.inner.capacity, "completion queue overrun");
                    res = Err(Overrun);
                    continue;
                }
                q.push_back(wc);
            }
        }
        self.inner.notify.notify_waiters();
        res
    }

    pub(crate) fn attach(&self, qp: &Arc<QpInner>) {
        let mut o = self.inner.owners.lock().unwrap_or_else(|p| p.into_inner());
        o.retain(|w| w.strong_count() > 0);
        if !o.iter().any(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(qp))) {
            o.push(Arc::downgrade(qp));
        }
    }

    /// The one live queue pair feeding this queue, if there is exactly one.
    fn sole_owner(&self) -> Option<Arc<QpInner>> {
        let mut o = self.inner.owners.lock().unwrap_or_else(|p| p.into_inner());
        o.retain(|w| w.strong_count() > 0);
        match &o[..] {
            [one] => one.upgrade(),
            _ => None,
        }
    }

    /// Completions waiting.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no completion is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl CompletionQueue for Cq {
    fn poll(&self, out: &mut Vec<WorkCompletion>, max: usize) -> usize {
        let mut q = self.lock();
        let n = q.len().min(max);
        out.extend(q.drain(..n));
        n
    }

    /// Waits for a completion. When one queue pair feeds this queue, the
    /// waiting task reads that queue pair's socket itself (its I/O task
    /// stands aside meanwhile): the completion is produced and consumed on
    /// one task, with no hop between tasks.
    async fn wait(&self) {
        loop {
            // The queue pair to read from ourselves, if any. The `Notified`
            // lives only in this block: it must not be registered while we
            // publish our own completions (that would wake this very task and
            // cost the runtime an extra turn).
            let reader = {
                let notified = self.inner.notify.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if !self.lock().is_empty() {
                    return;
                }
                match self.sole_owner() {
                    Some(qp) if qp.wants_read() => {
                        let consumer = Consumer::enter(&qp);
                        tokio::select! {
                            biased;
                            _ = &mut notified => None,
                            r = qp.readable() => r.ok().map(|()| consumer),
                        }
                    }
                    _ => {
                        notified.await;
                        None
                    }
                }
            };
            if let Some(consumer) = reader {
                consumer.0.read_ready();
            }
        }
    }

    fn capacity(&self) -> usize {
        self.inner.capacity
    }
}

/// Marks a task reading a queue pair's socket from a completion-queue wait;
/// on leaving, hands reading back to the I/O task.
struct Consumer(Arc<QpInner>);

impl Consumer {
    fn enter(qp: &Arc<QpInner>) -> Self {
        qp.consumers.fetch_add(1, Ordering::AcqRel);
        Consumer(qp.clone())
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        if self.0.consumers.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.wake_io();
        }
    }
}
