//! The inline receive: a call waiting for its reply reads the transport
//! itself when no other task does.
//!
//! Over a transport whose receive is a poll any task may make
//! ([`Transport::polls_recv`], RPC-over-RDMA), the reply need not go
//! through the connection's reader task: the waiting call's future polls
//! the transport, routes what comes (its own reply and any other call's)
//! and keeps the transport's next wake-up for itself. Its future is then
//! woken by the transport directly, not by another task, which under tokio
//! saves a task poll and, for a `block_on` future, a look at the I/O
//! driver per call.
//!
//! Every poll of the transport, by a caller or by the reader task, is made
//! with the connection's one reader waker, whose wake-ups
//! [`super::pending::Pending::reader_wake`] passes to the waiting call that
//! asked for them or else to the reader task; at most one of them polls at
//! a time (the lease, `pending.rs`). What a caller cannot handle (a call
//! from the peer, the end of the connection) it leaves in the connection's
//! one-message stash for the reader task, and stops reading until the task
//! has taken it.

use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use crate::util::lock;

use super::pending::Outcome;
use super::state::{Conn, Next};
use crate::transport::{Received, Transport};

impl<T: Transport> Conn<T> {
    /// A waiting call's poll for its outcome, reading the transport itself
    /// when nobody else does (see the module docs).
    pub(super) fn poll_outcome_inline(
        &self,
        xid: u32,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Outcome>> {
        if !self.inline {
            return self.pending.poll_outcome(xid, cx);
        }
        if let Ok(p) = self.pending.poll_outcome_or_ask(xid, cx) {
            return p;
        }
        if self.stashed.load(Ordering::Acquire) || !self.pending.lease_for_caller() {
            // The reader task (or another caller) reads, and hands this
            // call its outcome.
            return Poll::Pending;
        }
        let mut rcx = Context::from_waker(&self.reader_waker);
        let mut for_task = false;
        // This call's own outcome, kept here rather than in its slot (the
        // slot is emptied when the transport is given back).
        let mut mine: Option<Outcome> = None;
        loop {
            let (x, outcome) = match self.transport.poll_recv(&mut rcx) {
                Poll::Pending => break,
                Poll::Ready(Ok(Received::Reply { xid: x, message })) => {
                    (x, Outcome::Reply(message))
                }
                Poll::Ready(Ok(Received::CallFailed { xid: x, error })) => {
                    (x, Outcome::Failed(error))
                }
                Poll::Ready(other) => {
                    // A call from the peer, or the end of the connection:
                    // the reader task's work. Reading stops until it took
                    // this (so the stash holds one message at most).
                    *lock(&self.stash) = Some(other);
                    self.stashed.store(true, Ordering::Release);
                    for_task = true;
                    break;
                }
            };
            if x == xid && mine.is_none() {
                mine = Some(outcome);
            } else {
                // Another call's (or a duplicate of this one's, which the
                // slot drops as it drops any second outcome).
                self.pending.complete_from(x, outcome, Some(cx.waker()));
            }
        }
        self.pending
            .release_by_caller(xid, cx.waker(), for_task, mine)
    }

    /// The reader task's poll of the transport (when
    /// [`Transport::polls_recv`]): what a caller left for it first, then
    /// the transport, unless a caller reads it now (the task is woken when
    /// it is given back).
    pub(super) fn poll_next_inline(&self) -> Poll<Next<T::CallContext>> {
        if self.stashed.load(Ordering::Acquire) {
            let next = lock(&self.stash).take();
            self.stashed.store(false, Ordering::Release);
            if let Some(n) = next {
                return Poll::Ready(n);
            }
        }
        if !self.pending.lease_for_task() {
            return Poll::Pending;
        }
        let mut rcx = Context::from_waker(&self.reader_waker);
        let r = self.transport.poll_recv(&mut rcx);
        self.pending.release_by_task(r.is_pending());
        r
    }
}
