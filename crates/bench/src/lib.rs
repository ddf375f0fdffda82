//! The rpcrdma benchmarks: what `rpcrdma bench` measures, the statistics
//! it reports and the reports themselves (JSON through serde, tables,
//! and a picture of the sweep).
//!
//! Every bench runs both ends in one process on loopback, each side of a
//! measure on an OS thread of its own with a current-thread tokio runtime
//! ([`on_thread`]), and compares RPC-over-RDMA with what a program would
//! otherwise use, measured in the same run:
//!
//! * [`rpc`]: RPC-over-RDMA (over any verbs provider) against ONC RPC over
//!   TCP and raw TCP: NULL round trips, the NULL rate, 1 MiB READ and
//!   WRITE throughput with their CPU cost, in paired rounds, each ratio
//!   taken within a round (thread wake-up times on small virtual machines
//!   swing between runs, so figures taken apart are not comparable);
//! * [`sweep`]: READ and WRITE throughput from 1 KiB to 16 MiB and the
//!   NULL round-trip percentiles of the three paths, drawn by
//!   [`sweep::plot`];
//! * [`scale`]: the aggregate of N connections against a multi-threaded
//!   server;
//! * [`small`]: small calls' rates with many calls outstanding, against a
//!   raw TCP exchange kept as deep;
//! * [`verbs`]: a verbs provider's RDMA Write, RDMA Read and Send/Recv
//!   against raw TCP;
//! * [`call_loop`]: a fixed number of calls over one path and nothing
//!   else, for instruction counting and profiling.
//!
//! Each report says which wake-up state the raw TCP round trips saw
//! ([`wake`]); throughput measures carry the CPU time of the whole process
//! per MiB moved ([`cpu`]). The measures are generic over
//! `rpcrdma_verbs::Device`: the program opens the provider and passes the
//! device in. Argument parsing and printing are the program's (the
//! `rpcrdma` command line); progress goes to a [`Progress`] it gives.

mod aligned;
mod build_info;
pub mod call_loop;
pub mod cpu;
mod progress;
mod raw;
pub mod rpc;
pub mod scale;
pub mod small;
mod stats;
pub mod sweep;
mod threads;
pub mod verbs;
pub mod wake;

pub use build_info::{pgo_line, PGO_BUILD};
pub use progress::{Progress, ProgressRef};
pub use stats::{median, percentile, spread, PerRound};
pub use threads::{on_all_cpus, on_thread, Spawn};
