//! Memory accounts: how much memory peers' requests may make a server
//! hold, shared by every transport of the server.
//!
//! [`MemoryAccount`] is what a transport driver charges: the RPC-over-RDMA
//! engine's `MemoryBudget` implements it, and so does [`Budget`], a plain
//! counter for servers without RDMA. One account handed to every listener
//! of a server (RDMA and TCP) makes one server-wide limit.

use std::fmt;
use std::task::{Context, Poll};

use crate::shared::Shared;

/// A memory limit that connections of any transport draw from.
///
/// Charges are counted in octets. A connection that already holds memory
/// should leave [`MemoryAccount::headroom`] free (pass it as `leave`), so
/// that connections holding none, an honest client's new calls, can
/// always get in while others fill the budget.
pub trait MemoryAccount: Send + Sync + fmt::Debug {
    /// The limit in octets.
    fn limit(&self) -> u64;

    /// Octets charged now.
    fn in_use(&self) -> u64;

    /// Charges `n` octets if they fit with `leave` octets still free;
    /// returns whether it did.
    fn charge_within(&self, n: u64, leave: u64) -> bool;

    /// Charges `n` octets even beyond the limit: memory already allocated
    /// that cannot be refused (a reply produced for a call that was
    /// admitted). The caller stops taking new work until it is given back.
    fn charge_over(&self, n: u64);

    /// Gives `n` charged octets back and wakes the tasks waiting for room.
    fn give_back(&self, n: u64);

    /// A counter that changes whenever memory is given back (for
    /// [`MemoryAccount::poll_released`]).
    fn epoch(&self) -> u64;

    /// Ready once memory has been given back since [`MemoryAccount::epoch`]
    /// returned `seen`; otherwise registers the task to be woken then.
    fn poll_released(&self, seen: u64, cx: &mut Context<'_>) -> Poll<()>;

    /// The part of the limit a connection that already holds memory may
    /// not take: an eighth.
    fn headroom(&self) -> u64 {
        self.limit() / 8
    }
}

/// A plain [`MemoryAccount`]: a counter, [`Shared`] with the tasks
/// waiting for room.
///
/// ```
/// use rpcrdma_sync::{Budget, MemoryAccount};
/// let b = Budget::new(1000);
/// assert!(b.charge_within(800, 0));
/// assert!(!b.charge_within(100, b.headroom())); // would take the last eighth
/// b.charge_over(300); // already allocated: counted anyway
/// assert_eq!(b.in_use(), 1100);
/// b.give_back(1100);
/// assert_eq!(b.in_use(), 0);
/// ```
pub struct Budget {
    limit: u64,
    /// Octets charged.
    used: Shared<u64>,
}

impl Budget {
    /// A budget of `limit` octets.
    pub fn new(limit: u64) -> Self {
        Self {
            limit,
            used: Shared::new(0),
        }
    }
}

impl fmt::Debug for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Budget")
            .field("limit", &self.limit)
            .field("in_use", &self.in_use())
            .finish()
    }
}

impl MemoryAccount for Budget {
    fn limit(&self) -> u64 {
        self.limit
    }

    fn in_use(&self) -> u64 {
        self.used.with(|u| *u)
    }

    fn charge_within(&self, n: u64, leave: u64) -> bool {
        self.used.with(|u| {
            if u.saturating_add(n) > self.limit.saturating_sub(leave) {
                return false;
            }
            *u += n;
            true
        })
    }

    fn charge_over(&self, n: u64) {
        self.used.with(|u| *u = u.saturating_add(n));
    }

    fn give_back(&self, n: u64) {
        if n == 0 {
            return;
        }
        self.used.release_with(|u| *u = u.saturating_sub(n));
    }

    fn epoch(&self) -> u64 {
        self.used.epoch()
    }

    fn poll_released(&self, seen: u64, cx: &mut Context<'_>) -> Poll<()> {
        self.used.poll_released(seen, cx)
    }
}

// The model's atomics work only inside `loom::model` (tests/loom.rs).
#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::task::Waker;

    struct Flag(AtomicBool);
    impl std::task::Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn charges_within_the_limit_and_over_it() {
        let b = Budget::new(100);
        assert!(b.charge_within(60, 0));
        assert!(!b.charge_within(41, 0));
        assert!(!b.charge_within(40, 1));
        assert!(b.charge_within(40, 0));
        b.charge_over(5);
        assert_eq!(b.in_use(), 105);
        assert!(!b.charge_within(1, 0), "over the limit: nothing fits");
        b.give_back(105);
        assert_eq!(b.in_use(), 0);
        // Giving back more than was charged never wraps.
        b.give_back(7);
        assert_eq!(b.in_use(), 0);
    }

    #[test]
    fn a_give_back_wakes_a_waiting_task() {
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(flag.clone());
        let mut cx = Context::from_waker(&waker);
        let b = Budget::new(10);
        assert!(b.charge_within(10, 0));
        let seen = b.epoch();
        assert!(b.poll_released(seen, &mut cx).is_pending());
        b.give_back(5);
        assert!(flag.0.load(Ordering::SeqCst));
        assert!(b.poll_released(seen, &mut cx).is_ready());
    }
}
