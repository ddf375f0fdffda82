//! The table of calls waiting for their replies on one connection, and
//! its deadline sweep: a waiting call has no timer of its own; the
//! connection's reader keeps one sweep timer at the earliest deadline
//! ([`Pending::armed`]) and ends the calls whose deadline passed
//! ([`Pending::sweep`]).

use tokio::sync::oneshot;
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

/// A call waiting for its reply.
struct Waiting {
    tx: oneshot::Sender<Outcome>,
    deadline: Instant,
}

/// The calls waiting for replies on one connection.
pub(crate) struct Pending {
    state: std::sync::Mutex<State>,
}

impl Pending {
    pub(crate) fn new() -> Self {
        Pending {
            state: std::sync::Mutex::new(State {
                alive: true,
                pending: IdMap::default(),
                armed: None,
            }),
        }
    }

    /// Starts waiting for the reply to `xid` until `deadline`; `None` if
    /// the connection is dead or `xid` is already waited for. The flag
    /// says the reader's sweep timer must be set earlier (to `deadline`).
    pub(crate) fn register(
        &self,
        xid: u32,
        deadline: Instant,
    ) -> Option<(oneshot::Receiver<Outcome>, bool)> {
        let mut st = lock(&self.state);
        if !st.alive || st.pending.contains_key(&xid) {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        st.pending.insert(xid, Waiting { tx, deadline });
        // With one timeout for every call, deadlines only grow: the sweep
        // timer already armed for an earlier one covers this call too.
        let rearm = st.armed.is_none_or(|a| deadline < a);
        if rearm {
            st.armed = Some(deadline);
        }
        Some((rx, rearm))
    }

    /// Stops waiting for `xid`.
    pub(crate) fn unregister(&self, xid: u32) {
        lock(&self.state).pending.remove(&xid);
    }

    /// Whether calls may still wait here.
    pub(crate) fn is_alive(&self) -> bool {
        lock(&self.state).alive
    }

    /// The connection is gone: every waiting call learns it (its receiver
    /// sees the sender dropped) and no new call may wait.
    pub(crate) fn fail_all(&self) {
        let drained: Vec<_> = {
            let mut st = lock(&self.state);
            st.alive = false;
            st.pending.drain().map(|(_, w)| w.tx).collect::<Vec<_>>()
        };
        if !drained.is_empty() {
            tracing::debug!(
                calls = drained.len(),
                "connection lost with calls outstanding"
            );
        }
        drop(drained);
    }

    /// The deadline the sweep timer should be set to.
    pub(crate) fn armed(&self) -> Option<Instant> {
        lock(&self.state).armed
    }

    /// Ends every call whose deadline has passed ([`Outcome::TimedOut`]);
    /// returns the earliest deadline left (the next time to sweep).
    pub(crate) fn sweep(&self, now: Instant) -> Option<Instant> {
        let mut expired = Vec::new();
        let next = {
            let mut st = lock(&self.state);
            let due: Vec<u32> = st
                .pending
                .iter()
                .filter(|(_, w)| w.deadline <= now)
                .map(|(xid, _)| *xid)
                .collect();
            for xid in due {
                if let Some(w) = st.pending.remove(&xid) {
                    expired.push(w.tx);
                }
            }
            let next = st.pending.values().map(|w| w.deadline).min();
            st.armed = next;
            next
        };
        for tx in expired {
            let _ = tx.send(Outcome::TimedOut);
        }
        next
    }

    /// Hands `outcome` to the call waiting for `xid`, if any.
    pub(crate) fn complete(&self, xid: u32, outcome: Outcome) {
        let w = lock(&self.state).pending.remove(&xid);
        match w {
            Some(w) => {
                let _ = w.tx.send(outcome);
            }
            None => tracing::debug!(
                xid = format_args!("{xid:#010x}"),
                "dropping a reply for an xid with no outstanding call"
            ),
        }
    }
}
