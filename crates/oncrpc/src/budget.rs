//! The memory a TCP client makes the server hold, counted against the
//! server's budget.
//!
//! A server's TCP connections charge the same [`MemoryAccount`] as its
//! RPC-over-RDMA connections ([`crate::ServerConfig::memory`]; one
//! `--max-memory` for all), each also within a limit of its own
//! ([`crate::ServerConfig::max_connection_memory`]). What is charged
//! (`docs/oncrpc.md`, "Memory"):
//!
//! * the connection's fixed cost ([`TCP_CONNECTION_COST`]), at accept: a
//!   connection whose cost does not fit, leaving half the headroom free,
//!   is closed at once with a warning;
//! * its receive buffers: partly read records and the pooled buffers of
//!   large ones, as they grow;
//! * each call handed up, until its reply is handed to the socket: its
//!   record and a reservation for its reply (the program's declared bound,
//!   [`crate::Version::reply_bound`], or [`DEFAULT_REPLY_RESERVE`]);
//! * each reply the socket has not taken yet, until it is written.
//!
//! **Intake**: the connection hands up no new call, and reads no more of
//! a record, while its charge is at its limit or the shared budget is
//! full (a connection that holds calls or replies may not take the last
//! eighth, kept for connections that hold none): a client that does not
//! read its replies is slowed, and one whose replies make no progress
//! for [`crate::ServerConfig::stall_timeout`] is dropped with a warning.
//! A reply larger than its call's reservation is charged in full when it
//! is produced (it cannot be refused once the call ran), so a program
//! that declares no bound can take a connection past its limit by the
//! replies of the calls already running, at most
//! [`crate::ServerConfig::max_in_flight_per_connection`] of them.

use std::fmt;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;

use rpcrdma_sync::{MemoryAccount, Signal};

/// Default [`crate::ServerConfig::memory`] limit when the server is given
/// no account: 512 MiB, as `rpcrdma serve --max-memory`.
pub const DEFAULT_MAX_MEMORY: u64 = 512 << 20;

/// Default [`crate::ServerConfig::max_connection_memory`]: 64 MiB, as
/// `--max-connection-memory`.
pub const DEFAULT_MAX_CONNECTION_MEMORY: u64 = 64 << 20;

/// What a call reserves for its reply when its program declares no bound:
/// 4 KiB.
pub const DEFAULT_REPLY_RESERVE: u64 = 4 << 10;

/// A TCP connection's fixed cost besides its receive buffer (tasks,
/// queues, bookkeeping): 16 KiB.
pub const TCP_CONNECTION_COST: u64 = 16 << 10;

/// The bound a program declares on a procedure's reply, from the call's
/// procedure number and arguments (XDR, after the call header); `None`:
/// the default reservation.
pub type ReplyBoundFn = dyn Fn(u32, &[u8]) -> Option<u64> + Send + Sync;

/// The reservation for a call's reply, from `(prog, vers, proc, args)`.
pub(crate) type ReserveFn = dyn Fn(u32, u32, u32, &[u8]) -> u64 + Send + Sync;

/// The step in which a connection takes memory from the shared account
/// and gives it back: small charges (a NULL call's record, a short reply)
/// come out of the part it already took, with no lock. A connection holds
/// at most two steps more than it uses.
const STEP: u64 = 32 << 10;

/// One connection's account: its own limit, drawing on the shared one.
pub(crate) struct ConnMemory {
    shared: Arc<dyn MemoryAccount>,
    limit: u64,
    /// Octets charged by this connection (fixed cost included).
    used: AtomicU64,
    /// Of those, the octets of calls in progress and replies not yet
    /// written: what the connection gives back without reading more.
    work: AtomicU64,
    /// Octets taken from the shared account besides the fixed cost (at
    /// least what is charged beyond it, in steps).
    taken: AtomicU64,
    /// The fixed cost (held for the connection's life).
    base: u64,
    reserve: Arc<ReserveFn>,
    /// The reader waits for room: local releases must wake it (they
    /// need not reach the shared account).
    blocked: AtomicBool,
    released: Signal,
}

impl fmt::Debug for ConnMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnMemory")
            .field("limit", &self.limit)
            .field("used", &self.used())
            .finish_non_exhaustive()
    }
}

impl ConnMemory {
    /// Charges a new connection's fixed cost if it fits (leaving half the
    /// headroom free, as RDMA connections do); `None`: refuse it.
    pub(crate) fn admit(
        shared: Arc<dyn MemoryAccount>,
        limit: u64,
        reserve: Arc<ReserveFn>,
    ) -> Option<Arc<Self>> {
        let base = TCP_CONNECTION_COST;
        if !shared.charge_within(base, shared.headroom() / 2) {
            return None;
        }
        Some(Arc::new(Self {
            shared,
            limit,
            used: AtomicU64::new(base),
            work: AtomicU64::new(0),
            taken: AtomicU64::new(0),
            base,
            reserve,
            blocked: AtomicBool::new(false),
            released: Signal::new(),
        }))
    }

    /// Octets this connection holds.
    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// The reservation for the reply of the call in `record`.
    pub(crate) fn reply_reserve(&self, record: &[u8]) -> u64 {
        match call_head(record) {
            Some((prog, vers, proc_, args)) => (self.reserve)(prog, vers, proc_, &record[args..]),
            None => DEFAULT_REPLY_RESERVE,
        }
    }

    /// Charges `n` octets of buffers (already allocated, or about to be).
    pub(crate) fn charge(self: &Arc<Self>, n: u64) -> Held {
        self.adjust(0, n);
        Held {
            mem: self.clone(),
            n,
            work: false,
        }
    }

    /// Charges `n` octets of work: a call in progress (its record and its
    /// reply's reservation) or a reply not yet written.
    pub(crate) fn charge_work(self: &Arc<Self>, n: u64) -> Held {
        self.work.fetch_add(n, Ordering::Relaxed);
        self.adjust(0, n);
        Held {
            mem: self.clone(),
            n,
            work: true,
        }
    }

    /// Changes a standing charge to `to` octets (a buffer that grew or
    /// shrank).
    pub(crate) fn adjust(&self, from: u64, to: u64) {
        if to > from {
            let used = self.used.fetch_add(to - from, Ordering::Relaxed) + (to - from);
            self.cover(used);
        } else if from > to {
            self.give_back(from - to);
        }
    }

    fn give_back(&self, n: u64) {
        if n > 0 {
            let used = self.used.fetch_sub(n, Ordering::Relaxed) - n;
            self.trim(used);
            // Pairs with the fence in `wait_for_room`: either the waiter
            // sees this release, or this sees the waiter.
            fence(Ordering::SeqCst);
            if self.blocked.load(Ordering::Relaxed) {
                self.released.notify();
            }
        }
    }

    /// Takes steps from the shared account until what is charged beyond
    /// the fixed cost is covered.
    fn cover(&self, used: u64) {
        let need = used.saturating_sub(self.base);
        loop {
            let t = self.taken.load(Ordering::Acquire);
            if need <= t {
                return;
            }
            let more = (need - t).div_ceil(STEP) * STEP;
            if self
                .taken
                .compare_exchange(t, t + more, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                self.shared.charge_over(more);
                return;
            }
        }
    }

    /// Gives steps back to the shared account when more than two are
    /// spare.
    fn trim(&self, used: u64) {
        let need = used.saturating_sub(self.base);
        loop {
            let t = self.taken.load(Ordering::Acquire);
            if t <= need + 2 * STEP {
                return;
            }
            let keep = need.div_ceil(STEP) * STEP + STEP;
            if self
                .taken
                .compare_exchange(t, keep, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                self.shared.give_back(t - keep);
                return;
            }
        }
    }

    /// Whether the connection may take `n` more octets of work: below its
    /// own limit (unless it has no call or reply to give back: then
    /// waiting could not help, and what it reads is bounded by the
    /// largest record), and either already covered by what it took from
    /// the shared account or the shared account not full (a connection
    /// holding calls or replies must leave the headroom free).
    pub(crate) fn has_room(&self, n: u64) -> bool {
        let work = self.work.load(Ordering::Relaxed);
        let used = self.used();
        if work > 0 && used >= self.limit {
            return false;
        }
        if used.saturating_sub(self.base) + n <= self.taken.load(Ordering::Acquire) {
            return true;
        }
        let leave = if work > 0 { self.shared.headroom() } else { 0 };
        self.shared.in_use() < self.shared.limit().saturating_sub(leave)
    }

    /// Waits until [`Self::has_room`] for `n`, or `closed` resolves (then
    /// `false`).
    pub(crate) async fn wait_for_room(
        &self,
        n: u64,
        closed: impl std::future::Future<Output = ()>,
    ) -> bool {
        tokio::pin!(closed);
        self.blocked.store(true, Ordering::Relaxed);
        let out = loop {
            fence(Ordering::SeqCst);
            let seen = self.shared.epoch();
            self.released.take();
            if self.has_room(n) {
                break true;
            }
            let released = std::future::poll_fn(|cx| {
                if closed.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(false);
                }
                if self.released.poll_wait(cx).is_ready() {
                    return Poll::Ready(true);
                }
                self.shared.poll_released(seen, cx).map(|()| true)
            })
            .await;
            if !released {
                break false;
            }
        };
        self.blocked.store(false, Ordering::Relaxed);
        out
    }
}

impl Drop for ConnMemory {
    fn drop(&mut self) {
        // The fixed cost and what was taken, held for the connection's
        // life (every other charge holds the connection's account, so
        // this is the last).
        self.shared
            .give_back(self.base + self.taken.load(Ordering::Acquire));
    }
}

/// Octets charged to a connection for as long as this lives.
pub(crate) struct Held {
    mem: Arc<ConnMemory>,
    n: u64,
    work: bool,
}

impl Held {
    /// The octets held.
    pub(crate) fn octets(&self) -> u64 {
        self.n
    }

    /// Holds `to` octets instead (a buffer that grew or shrank).
    pub(crate) fn resize(&mut self, to: u64) {
        debug_assert!(!self.work, "work charges keep their size");
        self.mem.adjust(self.n, to);
        self.n = to;
    }
}

impl fmt::Debug for Held {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Held").field(&self.n).finish()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.work {
            self.mem.work.fetch_sub(self.n, Ordering::Relaxed);
        }
        self.mem.give_back(self.n);
    }
}

/// Program, version, procedure and the offset of the arguments of a call
/// record, if its header is well formed enough to tell.
fn call_head(r: &[u8]) -> Option<(u32, u32, u32, usize)> {
    let word = |at: usize| -> Option<u32> {
        let b = r.get(at..at.checked_add(4)?)?;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (prog, vers, proc_) = (word(12)?, word(16)?, word(20)?);
    // Credential, then verifier: flavor, length, body padded to 4.
    let mut at = 24usize;
    for _ in 0..2 {
        let len = word(at + 4)? as usize;
        if len > crate::msg::MAX_AUTH_BYTES {
            return None;
        }
        at = at + 8 + len.div_ceil(4) * 4;
    }
    (at <= r.len()).then_some((prog, vers, proc_, at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcrdma_sync::Budget;

    fn words(ws: &[u32]) -> Vec<u8> {
        ws.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    fn conn(shared: &Arc<Budget>, limit: u64) -> Arc<ConnMemory> {
        let reserve: Arc<ReserveFn> = Arc::new(|prog, _, proc_, args: &[u8]| {
            if prog == 7 && proc_ == 6 {
                u64::from(u32::from_be_bytes(args[..4].try_into().unwrap()))
            } else {
                DEFAULT_REPLY_RESERVE
            }
        });
        ConnMemory::admit(shared.clone(), limit, reserve).expect("admitted")
    }

    #[test]
    fn the_call_head_finds_the_arguments_past_both_auth_bodies() {
        // xid, CALL, 2, prog 7, vers 1, proc 6, AUTH_SYS of 5 bytes
        // (padded to 8), AUTH_NONE verifier, then the arguments.
        let mut r = words(&[1, 0, 2, 7, 1, 6, 1, 5]);
        r.extend_from_slice(&[9; 8]);
        r.extend(words(&[0, 0, 4096]));
        assert_eq!(call_head(&r), Some((7, 1, 6, 48)));
        let shared = Arc::new(Budget::new(1 << 20));
        assert_eq!(conn(&shared, 1 << 20).reply_reserve(&r), 4096);
        // Cut anywhere in the header: the default reservation.
        for cut in 0..48 {
            assert_eq!(call_head(&r[..cut]), None, "cut at {cut}");
        }
        // An auth body longer than RFC 5531 allows.
        let bad = words(&[1, 0, 2, 7, 1, 6, 1, 401]);
        assert_eq!(call_head(&bad), None);
        assert_eq!(
            conn(&shared, 1 << 20).reply_reserve(&bad),
            DEFAULT_REPLY_RESERVE
        );
    }

    #[test]
    fn charges_count_on_both_accounts_until_dropped() {
        let shared = Arc::new(Budget::new(1000 << 10));
        let c = conn(&shared, 100 << 10);
        assert_eq!(shared.in_use(), TCP_CONNECTION_COST);
        assert!(c.has_room(0));
        let b = c.charge(90 << 10);
        // Taken from the shared account in steps of 32 KiB.
        assert_eq!(shared.in_use(), TCP_CONNECTION_COST + (96 << 10));
        assert!(c.has_room(0), "buffers alone: waiting could not help");
        let h = c.charge_work(1);
        assert_eq!(c.used(), TCP_CONNECTION_COST + (90 << 10) + 1);
        assert!(!c.has_room(0), "at its own limit");
        drop((h, b));
        assert!(c.has_room(0));
        // Given back, but for a step kept for the next charges.
        assert!(shared.in_use() <= TCP_CONNECTION_COST + (64 << 10));
        c.adjust(0, 10);
        c.adjust(10, 4);
        assert_eq!(c.used(), TCP_CONNECTION_COST + 4);
        c.adjust(4, 0);
        drop(c);
        assert_eq!(shared.in_use(), 0, "everything goes with the connection");
    }

    #[test]
    fn a_connection_holding_memory_leaves_the_headroom_to_others() {
        let shared = Arc::new(Budget::new(800 << 10)); // headroom 100 KiB
        let busy = conn(&shared, 800 << 10);
        let honest = conn(&shared, 800 << 10);
        // 672 KiB (21 steps): the shared account then holds 704 KiB.
        let _h = busy.charge_work(672 << 10);
        assert_eq!(shared.in_use(), 704 << 10);
        assert!(busy.has_room(0), "what it took still covers it");
        assert!(!busy.has_room(1), "the last eighth is not for it");
        assert!(
            honest.has_room(1 << 10),
            "a connection holding nothing gets in"
        );
        let _g = honest.charge_work(96 << 10);
        assert!(!honest.has_room(1));
        // A connection whose cost would take the reserve is refused.
        let reserve: Arc<ReserveFn> = Arc::new(|_, _, _, _: &[u8]| 0);
        assert!(ConnMemory::admit(shared.clone(), 1 << 20, reserve).is_none());
    }

    #[tokio::test]
    async fn waiting_for_room_ends_on_a_release_or_a_close() {
        let shared = Arc::new(Budget::new(100 << 10));
        let c = conn(&shared, 50 << 10);
        let h = c.charge_work(50 << 10);
        let waiter = {
            let c = c.clone();
            tokio::spawn(async move { c.wait_for_room(1, std::future::pending()).await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(h);
        assert!(waiter.await.unwrap());
        let _h = c.charge_work(50 << 10);
        assert!(!c.wait_for_room(1, async {}).await, "closed while waiting");
    }
}
