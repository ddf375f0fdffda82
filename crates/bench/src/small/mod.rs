//! Small calls by the million (`rpcrdma bench --small`). NULL and ECHO
//! (`echo_size` octets each way, 4 KiB in `rpcrdma bench --small`) rates with 1,
//! 8, 32 and 128 calls outstanding (`depths`), on one connection
//! and on `connections` connections, over RPC-over-RDMA, ONC
//! RPC/TCP and a raw TCP exchange of messages of the same sizes kept as
//! many deep, in one run, with the ratios.
//!
//! The threads are those of `rpcrdma bench`: the bench server on one
//! thread (one current-thread runtime), every client connection on
//! another. With N connections each keeps the depth outstanding (N times
//! as many calls in flight). A call outstanding is a task that calls in
//! turn, so k tasks per connection keep k calls in flight.
//!
//! The raw TCP exchange is what a program that batches perfectly does
//! with the same messages: the client keeps k messages of the size in
//! flight, and each side reads what has arrived (up to 64 KiB at a time)
//! and answers every whole message in it with one write. A NULL's raw
//! message is 64 octets (an ONC RPC/TCP NULL call is 44, its reply 28;
//! over RPC-over-RDMA 128 and 104 with the MPA, DDP and RPC-over-RDMA
//! headers).
//!
//! # Method
//!
//! Every measure (path, operation, connections, depth) runs for
//! `secs` and counts the calls that completed; the three paths of
//! a measure run back to back, RPC-over-RDMA in the middle, the order
//! flipped every round, and each ratio is taken within a round. The
//! report gives the median over `rounds` rounds of every figure
//! and ratio, and the CPU time per call (every thread of the process,
//! both ends and the kernel's work in their system calls).
//!
//! `lanes.rs` keeps the calls and messages in flight, `run.rs` runs the
//! rounds, `report.rs` makes the report.

mod lanes;
mod report;
mod run;

pub use lanes::null_lanes;
pub use report::{SmallReport, GOAL_RATE, GOAL_VS_ONCRPC, GOAL_VS_RAW, NOTE};
pub use run::{measure, Outcome, SmallSettings, MAX_CONNECTIONS, MAX_DEPTH};
