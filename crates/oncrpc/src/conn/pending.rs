//! The table of calls waiting for their replies on one connection, and
//! its deadline sweep: a waiting call has no timer of its own; the
//! connection's reader keeps one sweep timer at the earliest deadline
//! ([`Pending::armed`]) and ends the calls whose deadline passed
//! ([`Pending::sweep`]).

use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

use tokio::time::Instant;

use rpcrdma_sync::lock;
use rpcrdma_xdr::Payload;

use crate::error::TransportError;
use crate::util::IdMap;

/// How a call waiting on a connection ends.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// The reply.
    Reply(Payload),
    /// The transport failed the call.
    Failed(TransportError),
    /// The call's deadline passed (the connection's reader sweeps
    /// deadlines, so a waiting call needs no timer of its own).
    TimedOut,
}

struct State {
    alive: bool,
    pending: IdMap<u32, Waiting>,
    /// The deadline the reader's sweep timer is set to, if any. Never later
    /// than the earliest deadline in `pending`.
    armed: Option<Instant>,
}

/// A call waiting for its reply: the outcome once known, and the waker of
/// the task waiting for it (no channel, no allocation per call).
struct Waiting {
    deadline: Instant,
    outcome: Option<Outcome>,
    waker: Option<Waker>,
}

/// The calls waiting for replies on one connection.
///
/// A call [`Pending::register`]s before it is sent, then polls
/// [`Pending::poll_outcome`] until the reader [`Pending::complete`]s it,
/// the sweep ends it at its deadline, or the connection is lost
/// ([`Pending::fail_all`]); the poll that returns the outcome removes the
/// entry, and [`Pending::unregister`] removes one whose wait was
/// abandoned.
pub(crate) struct Pending {
    state: Mutex<State>,
}

impl Pending {
    pub(crate) fn new() -> Self {
        Pending {
            state: Mutex::new(State {
                alive: true,
                pending: IdMap::default(),
                armed: None,
            }),
        }
    }

    /// Starts waiting for the reply to `xid` until `deadline`; `None` if
    /// the connection is dead or `xid` is already waited for, otherwise
    /// whether the reader's sweep timer must be set earlier (to
    /// `deadline`).
    pub(crate) fn register(&self, xid: u32, deadline: Instant) -> Option<bool> {
        let mut st = lock(&self.state);
        if !st.alive || st.pending.contains_key(&xid) {
            return None;
        }
        st.pending.insert(
            xid,
            Waiting {
                deadline,
                outcome: None,
                waker: None,
            },
        );
        // With one timeout for every call, deadlines only grow: the sweep
        // timer already armed for an earlier one covers this call too.
        let rearm = st.armed.is_none_or(|a| deadline < a);
        if rearm {
            st.armed = Some(deadline);
        }
        Some(rearm)
    }

    /// The outcome of `xid`'s wait once there is one (the entry is then
    /// removed); `Ready(None)` if the connection was lost first.
    pub(crate) fn poll_outcome(&self, xid: u32, cx: &mut Context<'_>) -> Poll<Option<Outcome>> {
        let mut st = lock(&self.state);
        let Some(w) = st.pending.get_mut(&xid) else {
            return Poll::Ready(None);
        };
        if w.outcome.is_some() {
            let outcome = st.pending.remove(&xid).and_then(|w| w.outcome);
            return Poll::Ready(outcome);
        }
        match &w.waker {
            Some(old) if old.will_wake(cx.waker()) => {}
            _ => w.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// Stops waiting for `xid` (a wait given up; harmless once the
    /// outcome was taken).
    pub(crate) fn unregister(&self, xid: u32) {
        lock(&self.state).pending.remove(&xid);
    }

    /// Whether calls may still wait here.
    pub(crate) fn is_alive(&self) -> bool {
        lock(&self.state).alive
    }

    /// The connection is gone: every call still waiting learns it
    /// ([`Pending::poll_outcome`] gives `None`; one whose outcome arrived
    /// before keeps it) and no new call may wait.
    pub(crate) fn fail_all(&self) {
        let mut wakers: Vec<Waker> = Vec::new();
        {
            let mut st = lock(&self.state);
            st.alive = false;
            st.pending.retain(|_, w| {
                if w.outcome.is_some() {
                    return true;
                }
                wakers.extend(w.waker.take());
                false
            });
        }
        if !wakers.is_empty() {
            tracing::debug!(
                calls = wakers.len(),
                "connection lost with calls outstanding"
            );
        }
        for w in wakers {
            w.wake();
        }
    }

    /// The deadline the sweep timer should be set to.
    pub(crate) fn armed(&self) -> Option<Instant> {
        lock(&self.state).armed
    }

    /// Ends every call whose deadline has passed ([`Outcome::TimedOut`]);
    /// returns the earliest deadline left (the next time to sweep).
    pub(crate) fn sweep(&self, now: Instant) -> Option<Instant> {
        let mut woken = Vec::new();
        let next = {
            let mut st = lock(&self.state);
            let mut next: Option<Instant> = None;
            for w in st.pending.values_mut() {
                if w.outcome.is_some() {
                    continue;
                }
                if w.deadline <= now {
                    w.outcome = Some(Outcome::TimedOut);
                    woken.extend(w.waker.take());
                } else {
                    next = Some(next.map_or(w.deadline, |n| n.min(w.deadline)));
                }
            }
            st.armed = next;
            next
        };
        for w in woken {
            w.wake();
        }
        next
    }

    /// Hands `outcome` to the call waiting for `xid`, if any.
    pub(crate) fn complete(&self, xid: u32, outcome: Outcome) {
        let waker = {
            let mut st = lock(&self.state);
            match st.pending.get_mut(&xid) {
                Some(w) if w.outcome.is_none() => {
                    w.outcome = Some(outcome);
                    w.waker.take()
                }
                _ => {
                    drop(st);
                    tracing::debug!(
                        xid = format_args!("{xid:#010x}"),
                        "dropping a reply for an xid with no outstanding call"
                    );
                    return;
                }
            }
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn poll(p: &Pending, xid: u32) -> Poll<Option<Outcome>> {
        p.poll_outcome(xid, &mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn an_outcome_that_arrived_before_the_connection_was_lost_is_kept() {
        let p = Pending::new();
        let t = Instant::now() + Duration::from_secs(30);
        assert_eq!(p.register(1, t), Some(true));
        assert_eq!(p.register(2, t), Some(false), "later deadline: no re-arm");
        assert_eq!(p.register(1, t), None, "xid already waited for");
        assert!(poll(&p, 1).is_pending());
        p.complete(1, Outcome::TimedOut);
        p.fail_all();
        assert!(matches!(poll(&p, 1), Poll::Ready(Some(Outcome::TimedOut))));
        assert!(matches!(poll(&p, 2), Poll::Ready(None)), "lost");
        assert_eq!(p.register(3, t), None, "dead connection");
    }

    #[test]
    fn the_sweep_ends_due_calls_and_returns_the_next_deadline() {
        let p = Pending::new();
        let now = Instant::now();
        let (a, b) = (now + Duration::from_secs(1), now + Duration::from_secs(5));
        p.register(1, a);
        p.register(2, b);
        assert_eq!(p.sweep(now), Some(a));
        assert_eq!(p.sweep(a), Some(b));
        assert!(matches!(poll(&p, 1), Poll::Ready(Some(Outcome::TimedOut))));
        assert!(poll(&p, 2).is_pending());
        p.complete(2, Outcome::TimedOut);
        p.complete(2, Outcome::TimedOut); // a duplicate is dropped
        assert_eq!(p.sweep(b), None, "nothing left to time out");
        assert!(matches!(poll(&p, 2), Poll::Ready(Some(_))));
        assert!(matches!(poll(&p, 2), Poll::Ready(None)), "taken once");
    }
}
