//! Completion queues.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rpcrdma_verbs::{CompletionQueue, WorkCompletion};
use tokio::sync::Notify;

#[derive(Debug)]
struct CqInner {
    q: Mutex<VecDeque<WorkCompletion>>,
    capacity: usize,
    notify: Notify,
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

    async fn wait(&self) {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !self.lock().is_empty() {
                return;
            }
            notified.await;
        }
    }

    fn capacity(&self) -> usize {
        self.inner.capacity
    }
}
