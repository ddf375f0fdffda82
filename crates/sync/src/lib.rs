//! Synchronisation primitives shared by the async drivers of the stack
//! (the ONC RPC connection reader, the RPC-over-RDMA transport, the
//! software iWARP provider), written once:
//!
//! * [`Signal`]: a flag and the wakers of the tasks waiting for it. One
//!   side sets the flag ([`Signal::notify`]); a waiting task resolves once
//!   per notification ([`Signal::wait`], [`Signal::poll_wait`]). Cheaper to
//!   poll on every message than a watch channel or a `tokio::sync::Notify`
//!   (no future state, no allocation once the waker is stored), and
//!   usable from synchronous code on either side.
//! * [`Latch`]: a value set once (why a connection ended) and the tasks
//!   waiting for it.
//! * [`Waiters`]: the wakers of the tasks waiting for something, a plain
//!   value kept under the lock of what they wait for (a completion queue,
//!   a memory account); [`Signal`], [`Latch`] and [`Shared`] are built on
//!   it.
//! * [`Shared`]: a plain value under a lock, shared by tasks some of which
//!   wait for the others to give something back ([`Shared::release_with`]
//!   moves its epoch and wakes them; [`Shared::poll_released`] waits for
//!   it). The RPC-over-RDMA engine's memory budget is its accounts, a
//!   plain value, in one of these.
//! * [`MemoryAccount`]: a memory limit that the connections of every
//!   transport of a server charge (what peers' requests make it hold),
//!   with [`Budget`], its plain implementation (`account.rs`: a counter
//!   in a [`Shared`]).
//! * [`lock`]: locks a [`std::sync::Mutex`], ignoring poisoning. The state
//!   these locks guard is kept consistent at every step (no invariant is
//!   left half-updated across a call that could panic), so a panic in
//!   another thread holding the lock is no reason to fail every later user.
//!
//! Built with `--cfg loom`, the primitives use `loom`'s atomics and lock,
//! and `tests/loom.rs` checks their races under the model checker:
//! `RUSTFLAGS="--cfg loom" cargo test -p rpcrdma-sync --release --test loom`
//! (only there: loom's primitives work only inside a model, so the unit
//! tests and the examples run in the ordinary build).
//!
//! # Example
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use std::sync::Arc;
//! use rpcrdma_sync::Signal;
//!
//! let s = Arc::new(Signal::new());
//! let waiter = tokio::spawn({
//!     let s = s.clone();
//!     async move { s.wait().await }
//! });
//! s.notify();
//! waiter.await.unwrap();
//! assert!(!s.is_set(), "the waiter consumed the notification");
//! # }
//! ```

mod account;
mod latch;
mod primitive;
mod shared;
mod signal;
mod waiters;

pub use account::{Budget, MemoryAccount};
pub use latch::Latch;
pub use shared::Shared;
pub use signal::Signal;
pub use waiters::{Waiters, MAX_WAITERS};

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, ignoring poisoning (see the [crate documentation](crate)).
///
/// ```
/// let m = std::sync::Mutex::new(1);
/// *rpcrdma_sync::lock(&m) += 1;
/// assert_eq!(*rpcrdma_sync::lock(&m), 2);
/// ```
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

// The model's atomics work only inside `loom::model` (tests/loom.rs).
#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn lock_ignores_poisoning() {
        let m = Arc::new(Mutex::new(5));
        let m2 = m.clone();
        let _ = std::thread::spawn(move || {
            let _g = m2.lock().unwrap();
            panic!("poison it");
        })
        .join();
        assert!(m.is_poisoned());
        assert_eq!(*lock(&m), 5);
    }
}
