//! The memory budget: how much memory the peers' calls may make us hold.
//!
//! A responder allocates memory on its peer's behalf: the sink of every
//! Read chunk it pulls (RFC 8166 §3.5.3), and it holds the reply data the
//! upper layer produced until the RDMA Writes and the Send that carry it
//! have completed. Without a bound, one client sending 64 calls with a
//! 16 MiB Read chunk on each of 8 connections makes a server reserve
//! 8 GiB. Two limits apply (spec note E21, `docs/engine.md`):
//!
//! * **per connection** ([`crate::EngineConfig::max_memory`], 64 MiB by
//!   default), kept by the engine itself;
//! * **shared** by every connection that holds the same [`MemoryBudget`]
//!   (a listener hands one to all the connections it accepts;
//!   [`crate::EngineConfig::max_shared_memory`], 512 MiB by default). The
//!   idle sink buffers kept for reuse (`pool.rs`) live here and count
//!   against it; they are dropped first when a call needs room.
//!
//! A connection that already holds memory may not take the last eighth of
//! the shared budget ([`MemoryBudget::headroom`]): that is kept for
//! connections holding none, so a few stalled connections cannot hold up
//! every other client until the stall timeout cuts them off.
//!
//! A received call is *admitted* only when its Read sinks and the room
//! its largest reply may take (its Write chunks and Reply chunk, at most
//! `max_message`) fit both limits; until then it waits in arrival order,
//! holding its credit (its RDMA Reads are posted, and it is handed up,
//! later). One that could never fit is refused with an RPC-level error.
//! At [`crate::Engine::send_reply`] the reply's reservation becomes its
//! real charge (the data its RDMA Writes carry), held until its Send
//! completes. A call without Write or Reply chunks replies inline, within
//! the inline threshold: that is the connection's fixed cost, and such a
//! call never takes this budget's lock.
//!
//! The accounts are a plain value (`ledger.rs`: the limit, the octets
//! charged, the idle buffers), with no lock and no waker: the engine holds
//! none. Sharing them between connections, and the drivers waiting for a
//! release, are `rpcrdma-sync`'s [`Shared`] (a lock, a release epoch and
//! the waiting tasks' wakers); no clock, no thread, no I/O. A driver whose
//! engine waits for memory released by another connection parks on
//! [`MemoryBudget::poll_released`].

use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};

mod ledger;

use ledger::Ledger;
use rpcrdma_sync::Shared;

/// Octets charged to a [`MemoryBudget`] for as long as this lives: a
/// connection's fixed cost, charged by a listener at accept
/// ([`MemoryBudget::try_charge`]) and handed to its engine
/// ([`crate::Engine::hold_charge`]), which gives it back when the
/// connection ends. Dropping it gives the octets back.
#[derive(Debug)]
#[must_use = "the octets are given back when it is dropped"]
pub struct Charge {
    budget: MemoryBudget,
    octets: u64,
}

impl Charge {
    /// The octets charged.
    pub fn octets(&self) -> u64 {
        self.octets
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.release(self.octets);
    }
}

/// A memory budget that one or several connections draw from.
///
/// Cheap to clone; clones share the budget.
///
/// ```
/// use rpcrdma_engine::MemoryBudget;
/// let server = MemoryBudget::new(512 << 20);
/// assert_eq!((server.limit(), server.in_use()), (512 << 20, 0));
/// let for_a_connection = server.clone(); // the same budget
/// assert_eq!(for_a_connection.limit(), server.limit());
/// ```
#[derive(Debug, Clone)]
pub struct MemoryBudget {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    limit: u64,
    ledger: Shared<Ledger>,
}

impl MemoryBudget {
    /// A budget of `limit` octets.
    pub fn new(limit: u64) -> Self {
        Self {
            inner: Arc::new(Inner {
                limit,
                ledger: Shared::new(Ledger::new(limit)),
            }),
        }
    }

    /// The limit in octets.
    pub fn limit(&self) -> u64 {
        self.inner.limit
    }

    /// Octets charged now (calls' sinks, reply reservations and reply data
    /// in flight, and idle buffers kept for reuse).
    pub fn in_use(&self) -> u64 {
        self.inner.ledger.with(|l| l.in_use())
    }

    /// Octets of idle buffers kept for reuse (part of [`Self::in_use`]).
    pub fn pooled(&self) -> u64 {
        self.inner.ledger.with(|l| l.pooled())
    }

    /// Whether two handles share one budget.
    pub fn same(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// A counter that changes whenever memory is released (for
    /// [`Self::poll_released`]).
    pub fn epoch(&self) -> u64 {
        self.inner.ledger.epoch()
    }

    /// Ready once memory has been released since [`Self::epoch`] returned
    /// `seen`; otherwise registers the task to be woken then.
    pub fn poll_released(&self, seen: u64, cx: &mut Context<'_>) -> Poll<()> {
        self.inner.ledger.poll_released(seen, cx)
    }

    /// The part of the budget a connection that already holds memory may
    /// not take: kept for connections that hold none, so that a few
    /// connections filling the budget (peers that never answer our RDMA
    /// Reads, say) cannot hold up every other client's calls until the
    /// stall timeout frees their memory. An eighth of the limit.
    pub fn headroom(&self) -> u64 {
        self.inner.limit / 8
    }

    /// Charges `n` octets (a connection's fixed cost, see
    /// [`crate::EngineConfig::connection_cost`]) for as long as the
    /// returned [`Charge`] lives, if they fit with [`Self::connection_reserve`]
    /// (half the headroom) still free. A new connection may take the other
    /// half of the headroom, which connections holding call memory may
    /// not: a client connecting while others fill the budget still gets
    /// in, and its calls the rest. Idle pooled buffers are dropped first if
    /// that makes room. `None`: it does not fit (a listener refuses the
    /// connection).
    ///
    /// ```
    /// use rpcrdma_engine::MemoryBudget;
    /// let b = MemoryBudget::new(8 << 20); // headroom 1 MiB, reserve 512 KiB
    /// let first = b.try_charge(7 << 20).expect("fits");
    /// assert!(b.try_charge(1 << 20).is_none()); // would take the reserve
    /// drop(first);
    /// assert_eq!(b.in_use(), 0);
    /// ```
    pub fn try_charge(&self, n: u64) -> Option<Charge> {
        self.try_reserve(n, self.connection_reserve())
            .then(|| Charge {
                budget: self.clone(),
                octets: n,
            })
    }

    /// The part of the budget connections' fixed costs may not take (half
    /// the headroom, a sixteenth of the limit): kept for calls, so that
    /// connections that only connect can never starve every call.
    pub fn connection_reserve(&self) -> u64 {
        self.headroom() / 2
    }

    /// Charges `n` octets if they fit with `leave` octets still free,
    /// dropping idle pooled buffers first if that makes room. Returns
    /// whether it did.
    pub(crate) fn try_reserve(&self, n: u64, leave: u64) -> bool {
        self.inner.ledger.with(|l| l.try_reserve(n, leave))
    }

    /// Gives `n` charged octets back and wakes the drivers waiting.
    pub(crate) fn release(&self, n: u64) {
        if n == 0 {
            return;
        }
        self.inner.ledger.release_with(|l| l.release(n));
    }

    /// Takes an idle pooled buffer of at least `len` octets (whole: see
    /// `BufPool::take`). Its octets stay charged: the caller now owns the
    /// charge.
    pub(crate) fn take_pooled(&self, len: usize) -> Option<BytesMut> {
        self.inner.ledger.with(|l| l.take_pooled(len))
    }

    /// Returns a buffer taken with [`Self::take_pooled`] unused (its charge
    /// goes back to the pool).
    pub(crate) fn put_back(&self, buf: BytesMut) {
        self.inner.ledger.with(|l| l.put_back(buf));
    }

    /// Keeps `buf` (a sink buffer whose charge the caller has already
    /// released, or an uncharged one) for reuse if the budget and the pool
    /// have room; otherwise it is simply dropped.
    pub(crate) fn keep(&self, buf: Bytes) {
        self.inner.ledger.with(|l| l.keep(buf));
    }
}

/// The engine's budget is the server-wide account that other transports
/// (ONC RPC over TCP) charge too: one `--max-memory` for every
/// connection. Their charges may drop idle pooled buffers to make room,
/// as the engine's own do.
impl rpcrdma_sync::MemoryAccount for MemoryBudget {
    fn limit(&self) -> u64 {
        self.inner.limit
    }

    fn in_use(&self) -> u64 {
        MemoryBudget::in_use(self)
    }

    fn charge_within(&self, n: u64, leave: u64) -> bool {
        self.try_reserve(n, leave)
    }

    fn charge_over(&self, n: u64) {
        self.inner.ledger.with(|l| l.charge_over(n));
    }

    fn give_back(&self, n: u64) {
        self.release(n);
    }

    fn epoch(&self) -> u64 {
        MemoryBudget::epoch(self)
    }

    fn poll_released(&self, seen: u64, cx: &mut Context<'_>) -> Poll<()> {
        MemoryBudget::poll_released(self, seen, cx)
    }

    fn headroom(&self) -> u64 {
        MemoryBudget::headroom(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_a_shared_account_other_transports_charge_it_too() {
        use rpcrdma_sync::MemoryAccount;
        let b = MemoryBudget::new(1000);
        b.keep(Bytes::from(vec![0u8; 200]));
        let acct: &dyn MemoryAccount = &b;
        // A TCP charge may drop the idle buffer to make room.
        assert!(acct.charge_within(900, 0));
        assert_eq!((b.in_use(), b.pooled()), (900, 0));
        acct.charge_over(200);
        assert_eq!(acct.in_use(), 1100);
        assert!(!b.try_reserve(1, 0));
        let e = acct.epoch();
        acct.give_back(1100);
        assert_ne!(acct.epoch(), e);
        assert_eq!(b.in_use(), 0);
        assert_eq!(acct.headroom(), 125);
    }

    #[test]
    fn reserve_within_the_limit_and_release() {
        let b = MemoryBudget::new(100);
        assert!(b.try_reserve(60, 0));
        assert!(!b.try_reserve(41, 0));
        assert!(!b.try_reserve(40, 1));
        assert!(b.try_reserve(40, 0));
        let e = b.epoch();
        b.release(50);
        assert_ne!(b.epoch(), e);
        assert_eq!(b.in_use(), 50);
        assert!(b.try_reserve(50, 0));
        assert!(!b.try_reserve(1, 0));
    }

    #[test]
    fn a_release_wakes_a_waiting_driver() {
        use std::sync::atomic::{AtomicBool, Ordering};
        struct Flag(AtomicBool);
        impl std::task::Wake for Flag {
            fn wake(self: Arc<Self>) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = std::task::Waker::from(flag.clone());
        let mut cx = Context::from_waker(&waker);
        let b = MemoryBudget::new(10);
        assert!(b.try_reserve(10, 0));
        let seen = b.epoch();
        assert!(b.poll_released(seen, &mut cx).is_pending());
        b.release(5);
        assert!(flag.0.load(Ordering::SeqCst));
        assert!(b.poll_released(seen, &mut cx).is_ready());
    }
}
