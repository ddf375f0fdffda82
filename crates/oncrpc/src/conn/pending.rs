//! The table of calls waiting for their replies on one connection, and
//! its deadline sweep: a waiting call has no timer of its own; the
//! connection's reader keeps one sweep timer at the earliest deadline
//! ([`Pending::armed`]) and ends the calls whose deadline passed
//! ([`Pending::sweep`]).
//!
//! The same lock also says who reads the transport for the waiting calls
//! ([`Lease`]): the connection's reader task, or a waiting call's own
//! future (the inline receive, `inline.rs`). A caller that reads the
//! reply itself saves the hop through the reader task: its future is
//! woken by the transport directly, not by another task.

use parking_lot::Mutex;
use std::collections::hash_map::Entry;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use tokio::time::Instant;

use crate::util::lock;
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
    /// Who reads the transport.
    lease: Lease,
}

/// Who reads the transport's receive side, for transports that can be
/// polled by any task (`Transport::polls_recv`): the wakers. Whether
/// someone reads now is [`Pending::held`], an atomic, so the reader task
/// takes and gives back the transport without this lock.
///
/// Every poll of the transport, by the reader task or by a waiting call,
/// registers the connection's one reader waker (`inline.rs`), so the
/// transport's wake-ups always come to [`Pending::reader_wake`], which
/// passes each to the waiting call that asked for them (`caller`) or else
/// to the reader task. Whoever is woken reads until the transport has
/// nothing more, which registers the reader waker again: a wake-up is
/// never lost, and at most one task reads at a time.
#[derive(Default)]
struct Lease {
    /// The waiting call the next wake-up goes to: its xid and waker.
    caller: Option<(u32, Waker)>,
    /// The call a wake-up went to, until it reads (if it stops waiting
    /// first, the reader task is woken in its place).
    handed: Option<u32>,
    /// The reader task's waker.
    task: Option<Waker>,
}

/// [`Pending::held`]: someone polls the transport now.
const HELD: u8 = 1;
/// [`Pending::held`]: the reader task found the transport held, or the
/// holder left something for it: wake it when the transport is given
/// back.
const TASK_WANTS: u8 = 2;
/// [`Pending::held`]: the last poll of the transport ended waiting (its
/// wake-ups are registered with the reader waker) and nothing woke the
/// reader waker since. A call that starts waiting then need not poll the
/// transport first: it only asks for the next wake-up
/// ([`Pending::poll_outcome_or_ask`]). Cleared by every wake-up before it
/// takes the lock, so a caller that sees it under the lock is woken.
const ARMED: u8 = 4;

/// A waker to wake once the lock is released.
#[derive(Default)]
#[must_use]
struct Wakes(Option<Waker>);

impl Wakes {
    fn wake(self) {
        if let Some(w) = self.0 {
            w.wake();
        }
    }
}

impl State {
    /// `xid` waits no more: it takes no more wake-ups of the transport,
    /// and one handed to it that it did not use goes to the reader task.
    fn stop_waiting(&mut self, xid: u32) -> Wakes {
        let l = &mut self.lease;
        if l.caller.as_ref().is_some_and(|(x, _)| *x == xid) {
            l.caller = None;
        }
        if l.handed == Some(xid) {
            l.handed = None;
            return Wakes(l.task.clone());
        }
        Wakes::default()
    }
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
    /// [`HELD`] and [`TASK_WANTS`] (see [`Lease`]).
    held: AtomicU8,
    /// `State::alive`, readable without the lock (every call looks before
    /// it picks the connection; it changes once, under the lock).
    alive: AtomicBool,
    /// Waiting calls whose outcome is in their slot, not yet taken by
    /// their task (changed under the lock): [`Pending::others_ready`].
    ready: AtomicUsize,
}

impl Pending {
    pub(crate) fn new() -> Self {
        Pending {
            state: Mutex::new(State {
                alive: true,
                pending: IdMap::default(),
                armed: None,
                lease: Lease::default(),
            }),
            held: AtomicU8::new(0),
            alive: AtomicBool::new(true),
            ready: AtomicUsize::new(0),
        }
    }

    /// Starts waiting for the reply to `xid` until `deadline`; `None` if
    /// the connection is dead or `xid` is already waited for, otherwise
    /// whether the reader's sweep timer must be set earlier (to
    /// `deadline`).
    pub(crate) fn register(&self, xid: u32, deadline: Instant) -> Option<bool> {
        let mut st = lock(&self.state);
        if !st.alive {
            return None;
        }
        // One look-up for the check and the insert.
        match st.pending.entry(xid) {
            Entry::Occupied(_) => return None,
            Entry::Vacant(v) => {
                v.insert(Waiting {
                    deadline,
                    outcome: None,
                    waker: None,
                });
            }
        }
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
        let Entry::Occupied(mut e) = st.pending.entry(xid) else {
            let wakes = st.stop_waiting(xid);
            drop(st);
            wakes.wake();
            return Poll::Ready(None);
        };
        if e.get().outcome.is_some() {
            let outcome = e.remove().outcome;
            self.taken();
            let wakes = st.stop_waiting(xid);
            drop(st);
            wakes.wake();
            return Poll::Ready(outcome);
        }
        let w = e.get_mut();
        match &w.waker {
            Some(old) if old.will_wake(cx.waker()) => {}
            _ => w.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// [`Pending::poll_outcome`] for a call that reads the transport
    /// itself when needed: `Ok` if it need not read now (its outcome, or a
    /// wait for the next wake-up of a transport whose wake-ups are
    /// registered and did not come yet: [`ARMED`]), `Err(())` if it must
    /// poll the transport (the outcome slot keeps its waker either way).
    pub(crate) fn poll_outcome_or_ask(
        &self,
        xid: u32,
        cx: &mut Context<'_>,
    ) -> Result<Poll<Option<Outcome>>, ()> {
        let mut guard = lock(&self.state);
        let st = &mut *guard;
        match st.pending.entry(xid) {
            Entry::Occupied(mut e) if e.get().outcome.is_none() => {
                let w = e.get_mut();
                match &w.waker {
                    Some(old) if old.will_wake(cx.waker()) => {}
                    _ => w.waker = Some(cx.waker().clone()),
                }
                if self.held.load(Ordering::Acquire) != ARMED {
                    return Err(());
                }
                match &st.lease.caller {
                    Some((x, o)) if *x == xid && o.will_wake(cx.waker()) => {}
                    _ => st.lease.caller = Some((xid, cx.waker().clone())),
                }
                Ok(Poll::Pending)
            }
            e => {
                let outcome = match e {
                    Entry::Occupied(e) => {
                        self.taken();
                        e.remove().outcome
                    }
                    Entry::Vacant(_) => None,
                };
                let wakes = st.stop_waiting(xid);
                drop(guard);
                wakes.wake();
                Ok(Poll::Ready(outcome))
            }
        }
    }

    /// Stops waiting for `xid` (a wait given up; harmless once the
    /// outcome was taken).
    pub(crate) fn unregister(&self, xid: u32) {
        let mut st = lock(&self.state);
        if st.pending.remove(&xid).is_some_and(|w| w.outcome.is_some()) {
            self.taken();
        }
        let wakes = st.stop_waiting(xid);
        drop(st);
        wakes.wake();
    }

    /// Takes the transport for a waiting call (see [`Lease`]); false if
    /// someone else reads it now (that one hands the call its outcome).
    pub(crate) fn lease_for_caller(&self) -> bool {
        self.held
            .fetch_update(Ordering::Acquire, Ordering::Relaxed, |c| {
                (c & HELD == 0).then_some(HELD | (c & TASK_WANTS))
            })
            .is_ok()
    }

    /// Records the reader task's waker (when it changed).
    pub(crate) fn set_task_waker(&self, waker: &Waker) {
        lock(&self.state).lease.task = Some(waker.clone());
    }

    /// Takes the transport for the reader task; false (and the task is
    /// woken when it is given back) if a caller reads it now.
    pub(crate) fn lease_for_task(&self) -> bool {
        let mut cur = self.held.load(Ordering::Relaxed);
        loop {
            let (next, got) = if cur & HELD != 0 {
                (cur | TASK_WANTS, false)
            } else {
                (HELD, true)
            };
            match self
                .held
                .compare_exchange_weak(cur, next, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return got,
                Err(c) => cur = c,
            }
        }
    }

    /// The reader task gives the transport back; `waiting`: its poll
    /// ended waiting ([`ARMED`]).
    pub(crate) fn release_by_task(&self, waiting: bool) {
        self.held
            .store(if waiting { ARMED } else { 0 }, Ordering::Release);
    }

    /// A waiting call gives the transport back. `xid` and `waker`: the
    /// caller that read it, which still waits for its outcome unless that
    /// is there already (then returned, as by [`Pending::poll_outcome`]),
    /// and takes the next wake-up of the transport. `for_task`: the caller
    /// left something for the reader task (else its last poll ended
    /// waiting: [`ARMED`]). `mine`: the outcome the caller read for
    /// itself, if it did; one already in its slot (a deadline that passed
    /// first) comes first, as it would had `mine` been put in the slot.
    pub(crate) fn release_by_caller(
        &self,
        xid: u32,
        waker: &Waker,
        for_task: bool,
        mine: Option<Outcome>,
    ) -> Poll<Option<Outcome>> {
        let mut st = lock(&self.state);
        let prev = self
            .held
            .swap(if for_task { 0 } else { ARMED }, Ordering::AcqRel);
        // This caller read until the transport had nothing more: a
        // wake-up handed to another caller is used up.
        st.lease.handed = None;
        let res = match st.pending.entry(xid) {
            // The connection was lost: an outcome read before is kept, as
            // `fail_all` keeps the ones in their slots.
            Entry::Vacant(_) => Poll::Ready(mine),
            Entry::Occupied(e) if e.get().outcome.is_some() || mine.is_some() => {
                let stored = e.remove().outcome;
                if stored.is_some() {
                    self.taken();
                }
                Poll::Ready(stored.or(mine))
            }
            Entry::Occupied(mut e) => {
                let w = e.get_mut();
                if !w.waker.as_ref().is_some_and(|o| o.will_wake(waker)) {
                    w.waker = Some(waker.clone());
                }
                match &st.lease.caller {
                    Some((x, o)) if *x == xid && o.will_wake(waker) => {}
                    _ => st.lease.caller = Some((xid, waker.clone())),
                }
                Poll::Pending
            }
        };
        if res.is_ready() && st.lease.caller.as_ref().is_some_and(|(x, _)| *x == xid) {
            st.lease.caller = None;
        }
        let task = if for_task || prev & TASK_WANTS != 0 {
            st.lease.task.clone()
        } else {
            None
        };
        drop(st);
        if let Some(t) = task {
            t.wake();
        }
        res
    }

    /// A wake-up from the transport (the reader waker): to the waiting
    /// call that asked for it, or else to the reader task.
    pub(crate) fn reader_wake(&self) {
        self.held.fetch_and(!ARMED, Ordering::AcqRel);
        let w = {
            let mut st = lock(&self.state);
            let l = &mut st.lease;
            match l.caller.take() {
                Some((xid, w)) => {
                    l.handed = Some(xid);
                    Some(w)
                }
                None => l.task.clone(),
            }
        };
        if let Some(w) = w {
            w.wake();
        }
    }

    /// An outcome was taken from its slot (under the lock).
    fn taken(&self) {
        self.ready.fetch_sub(1, Ordering::Relaxed);
    }

    /// Whether some waiting call's outcome is in its slot and its task,
    /// woken, has not taken it yet: that task runs soon, and a call sent
    /// now may wait for the one it sends next (the transport writes them
    /// together, `Transport::try_send_call_batched`). A hint, read
    /// without the lock.
    pub(crate) fn others_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed) > 0
    }

    /// Whether calls may still wait here.
    pub(crate) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// The connection is gone: every call still waiting learns it
    /// ([`Pending::poll_outcome`] gives `None`; one whose outcome arrived
    /// before keeps it) and no new call may wait.
    pub(crate) fn fail_all(&self) {
        let mut wakers: Vec<Waker> = Vec::new();
        {
            let mut st = lock(&self.state);
            st.alive = false;
            self.alive.store(false, Ordering::Release);
            st.pending.retain(|_, w| {
                if w.outcome.is_some() {
                    return true;
                }
                wakers.extend(w.waker.take());
                false
            });
            st.lease.caller = None;
            st.lease.handed = None;
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
                    self.ready.fetch_add(1, Ordering::Relaxed);
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
        self.complete_from(xid, outcome, None);
    }

    /// [`Pending::complete`] by a waiting call reading the transport
    /// itself (`me`: its waker, not woken: it looks right after).
    pub(crate) fn complete_from(&self, xid: u32, outcome: Outcome, me: Option<&Waker>) {
        let waker = {
            let mut st = lock(&self.state);
            match st.pending.get_mut(&xid) {
                Some(w) if w.outcome.is_none() => {
                    w.outcome = Some(outcome);
                    self.ready.fetch_add(1, Ordering::Relaxed);
                    w.waker
                        .take()
                        .filter(|w| !me.is_some_and(|m| m.will_wake(w)))
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

/// The connection's reader waker (`inline.rs`): every poll of a transport
/// that [`Transport::polls_recv`](crate::Transport::polls_recv) is made
/// with it.
impl Wake for Pending {
    fn wake(self: Arc<Self>) {
        self.reader_wake();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.reader_wake();
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
    fn others_ready_counts_outcomes_not_yet_taken() {
        let p = Pending::new();
        let now = Instant::now();
        let t = now + Duration::from_secs(30);
        for x in 1..=5 {
            p.register(x, if x == 5 { now } else { t });
        }
        assert!(!p.others_ready());
        p.complete(1, Outcome::TimedOut);
        p.complete(1, Outcome::TimedOut); // a duplicate counts once
        p.complete(2, Outcome::TimedOut);
        p.complete(9, Outcome::TimedOut); // nobody waits for it
        assert_eq!(p.sweep(now), Some(t), "5 timed out");
        assert_eq!(p.ready.load(Ordering::Relaxed), 3);
        // Taken by a poll, given up with its outcome, taken by the caller
        // that read the transport: each once.
        assert!(matches!(poll(&p, 1), Poll::Ready(Some(_))));
        p.unregister(2);
        p.unregister(2);
        assert!(p.others_ready());
        assert!(p.lease_for_caller());
        assert!(p
            .release_by_caller(5, Waker::noop(), false, None)
            .is_ready());
        assert!(!p.others_ready());
        // Kept across a lost connection until taken.
        p.complete(3, Outcome::TimedOut);
        p.fail_all();
        assert!(p.others_ready());
        assert!(matches!(poll(&p, 3), Poll::Ready(Some(_))));
        assert!(matches!(poll(&p, 4), Poll::Ready(None)));
        assert!(!p.others_ready());
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

    /// Counts its wake-ups.
    #[derive(Default)]
    struct Count(std::sync::atomic::AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counter() -> (Arc<Count>, Waker) {
        let c = Arc::new(Count::default());
        (c.clone(), Waker::from(c))
    }

    fn n(c: &Count) -> usize {
        c.0.load(Ordering::SeqCst)
    }

    #[test]
    fn the_transport_wakes_the_waiting_caller_then_the_task_once_it_stops_waiting() {
        let p = Pending::new();
        let t = Instant::now() + Duration::from_secs(30);
        let (task, task_w) = counter();
        let (caller, caller_w) = counter();
        p.set_task_waker(&task_w);
        p.register(1, t);
        assert!(p.lease_for_caller());
        assert!(!p.lease_for_caller(), "one reader at a time");
        assert!(!p.lease_for_task(), "held by the caller");
        assert!(p.release_by_caller(1, &caller_w, false, None).is_pending());
        assert_eq!(n(&task), 1, "the task asked while the caller read");
        p.reader_wake();
        assert_eq!((n(&caller), n(&task)), (1, 1), "the waiting caller");
        // The caller was handed the wake-up but stops waiting before it
        // reads: the task must read in its place.
        p.unregister(1);
        assert_eq!((n(&caller), n(&task)), (1, 2));
        p.reader_wake();
        assert_eq!((n(&caller), n(&task)), (1, 3), "nobody waits: the task");
    }

    #[test]
    fn a_caller_that_stops_waiting_takes_no_more_wake_ups() {
        let p = Pending::new();
        let t = Instant::now() + Duration::from_secs(30);
        let (task, task_w) = counter();
        let (caller, caller_w) = counter();
        p.set_task_waker(&task_w);
        p.register(1, t);
        assert!(p.lease_for_caller());
        assert!(p.release_by_caller(1, &caller_w, false, None).is_pending());
        p.unregister(1);
        p.reader_wake();
        assert_eq!((n(&caller), n(&task)), (0, 1));
        // Same when the outcome arrives through the task first.
        p.register(2, t);
        assert!(p.lease_for_caller());
        assert!(p.release_by_caller(2, &caller_w, false, None).is_pending());
        assert_eq!(n(&caller), 0);
        p.complete(2, Outcome::TimedOut);
        assert_eq!(n(&caller), 1, "woken through its slot");
        assert!(matches!(
            p.poll_outcome(2, &mut Context::from_waker(&caller_w)),
            Poll::Ready(Some(_))
        ));
        p.reader_wake();
        assert_eq!((n(&caller), n(&task)), (1, 2), "the task, not the caller");
    }

    #[test]
    fn a_reader_completing_its_own_call_does_not_wake_itself() {
        let p = Pending::new();
        let t = Instant::now() + Duration::from_secs(30);
        let (caller, caller_w) = counter();
        let (other, other_w) = counter();
        p.register(1, t);
        p.register(2, t);
        let _ = p.poll_outcome(1, &mut Context::from_waker(&caller_w));
        let _ = p.poll_outcome(2, &mut Context::from_waker(&other_w));
        assert!(p.lease_for_caller());
        p.complete_from(1, Outcome::TimedOut, Some(&caller_w));
        p.complete_from(2, Outcome::TimedOut, Some(&caller_w));
        assert_eq!((n(&caller), n(&other)), (0, 1));
        assert!(matches!(
            p.release_by_caller(1, &caller_w, false, None),
            Poll::Ready(Some(Outcome::TimedOut))
        ));
        // Something left for the task wakes it when the transport is
        // given back.
        let (task, task_w) = counter();
        p.set_task_waker(&task_w);
        assert!(p.lease_for_caller());
        let _ = p.release_by_caller(2, &caller_w, true, None);
        assert_eq!(n(&task), 1);
        assert!(p.lease_for_task());
        p.release_by_task(false);
    }

    #[test]
    fn an_outcome_the_caller_read_itself_is_returned_unless_one_came_first() {
        let p = Pending::new();
        let t = Instant::now() + Duration::from_secs(30);
        let (_, w) = counter();
        p.register(1, t);
        assert!(p.lease_for_caller());
        assert!(matches!(
            p.release_by_caller(1, &w, false, Some(Outcome::Failed(TransportError::Closed))),
            Poll::Ready(Some(Outcome::Failed(_)))
        ));
        assert!(matches!(poll(&p, 1), Poll::Ready(None)), "taken once");
        // A deadline that passed first wins, as when the slot held it.
        p.register(2, t);
        p.complete(2, Outcome::TimedOut);
        assert!(p.lease_for_caller());
        assert!(matches!(
            p.release_by_caller(2, &w, false, Some(Outcome::Failed(TransportError::Closed))),
            Poll::Ready(Some(Outcome::TimedOut))
        ));
        // Read before the connection was lost: kept.
        p.register(3, t);
        p.fail_all();
        assert!(p.lease_for_caller());
        assert!(matches!(
            p.release_by_caller(3, &w, false, Some(Outcome::TimedOut)),
            Poll::Ready(Some(Outcome::TimedOut))
        ));
    }

    #[test]
    fn a_new_wait_asks_for_the_next_wake_up_only_while_the_transport_is_armed() {
        let p = Pending::new();
        let t = Instant::now() + Duration::from_secs(30);
        let (caller, caller_w) = counter();
        let mut cx = Context::from_waker(&caller_w);
        p.register(1, t);
        assert!(
            p.poll_outcome_or_ask(1, &mut cx).is_err(),
            "never polled: read"
        );
        assert!(p.lease_for_caller());
        // The caller's last poll ended waiting: armed.
        assert!(p.release_by_caller(1, &caller_w, false, None).is_pending());
        p.register(2, t);
        assert!(matches!(
            p.poll_outcome_or_ask(2, &mut cx),
            Ok(Poll::Pending)
        ));
        p.reader_wake();
        assert_eq!(n(&caller), 1);
        assert!(
            p.poll_outcome_or_ask(2, &mut cx).is_err(),
            "woken: the transport must be read"
        );
        // A poll that did not end waiting (something left for the task)
        // leaves the transport unarmed.
        assert!(p.lease_for_caller());
        let _ = p.release_by_caller(2, &caller_w, true, None);
        assert!(p.poll_outcome_or_ask(2, &mut cx).is_err());
        assert!(p.lease_for_task());
        p.release_by_task(true);
        assert!(matches!(
            p.poll_outcome_or_ask(2, &mut cx),
            Ok(Poll::Pending)
        ));
        p.complete(2, Outcome::TimedOut);
        assert!(matches!(
            p.poll_outcome_or_ask(2, &mut cx),
            Ok(Poll::Ready(Some(Outcome::TimedOut)))
        ));
    }
}
