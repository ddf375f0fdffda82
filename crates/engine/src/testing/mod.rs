//! Deterministic test support: an in-memory RDMA fabric and a two-engine
//! [`Pair`] harness (STYLE-ANCHORS §1, quinn's `Pair`), and the whole-engine
//! fuzz property driven through them.
//!
//! * [`Fabric`] (`fabric.rs`): every registered region in one table keyed by
//!   STag, and the RDMA operations on it, checked the way RFC 5040 and RFC
//!   8166 §3.2.2 describe (key, owning connection, bounds, access rights;
//!   Send With Invalidate kills the named key at the receiver).
//! * [`Pair`] (`pair.rs`): two engines connected through a fabric and
//!   stepped on a virtual clock: a Send consumes the peer's oldest posted
//!   receive (too small: a length error; none posted: a fatal error), each
//!   queue completes in order; fault injection (dropped sends, held send
//!   queues, cut connections, injected bytes, failing deregistrations).
//! * [`fuzz_pair`] (`fuzz.rs`): hostile messages injected into a pair with a
//!   call in flight; the `engine` target in `fuzz/` and `tests/hostile.rs`.
//!
//! It exists to test the engine and the layers above it without sockets;
//! the real providers are tested end to end elsewhere.

mod fabric;
mod fuzz;
mod pair;

pub use fabric::{Fabric, TestMr, TestPd};
pub use fuzz::fuzz_pair;
pub use pair::{End, Pair, PairOptions};
