//! Small async helpers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// Counts tasks in progress; [`Tracker::wait`] returns when none are left.
#[derive(Clone, Default)]
pub(crate) struct Tracker {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    count: AtomicUsize,
    idle: Notify,
}

/// Held by a task in progress.
pub(crate) struct Token {
    inner: Arc<Inner>,
}

impl Drop for Token {
    fn drop(&mut self) {
        if self.inner.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.inner.idle.notify_waiters();
        }
    }
}

impl Tracker {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn token(&self) -> Token {
        self.inner.count.fetch_add(1, Ordering::AcqRel);
        Token {
            inner: self.inner.clone(),
        }
    }

    pub(crate) fn count(&self) -> usize {
        self.inner.count.load(Ordering::Acquire)
    }

    pub(crate) async fn wait(&self) {
        loop {
            let notified = self.inner.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.count() == 0 {
                return;
            }
            notified.await;
        }
    }
}
