//! The RPC-level bench (`rpcrdma bench`): RPC-over-RDMA over a verbs
//! provider, ONC RPC over TCP, and raw TCP, measured in one run between
//! the same two threads on loopback.
//!
//! Thread "server" runs the demo program over RPC-over-RDMA and over TCP
//! plus raw TCP echo and sink endpoints (`server.rs`, `raw.rs`); thread
//! "client" measures (`run.rs`, `calls.rs`). Each thread has its own
//! current-thread tokio runtime, so both sides of every measure run on
//! the same two threads.
//!
//! # Method: paired rounds
//!
//! The time a thread takes to wake up on a small virtual machine swings
//! between runs and within a run (a few microseconds when both threads
//! share a vCPU or the other vCPU is busy, tens when it went idle; the
//! state changes every few seconds), so figures taken apart are not
//! comparable. Each round therefore measures the three sides together:
//!
//! * round trips: raw TCP ping-pong, RPC-over-RDMA NULL and ONC RPC/TCP
//!   NULL in interleaved batches of 100 round trips over connections kept
//!   open (the order flips from batch to batch), so all three see the
//!   same mix of machine states;
//! * throughput: raw TCP stream, RPC-over-RDMA and ONC RPC/TCP READ (then
//!   WRITE) back to back, ours in the middle, the order flipped every
//!   round.
//!
//! A ratio is computed per round from that round's figures; the report
//! (`report.rs`) gives the median of the per-round ratios beside the
//! median of each raw figure. Ratios are never computed against stored
//! numbers.

mod calls;
mod report;
mod run;
mod server;
mod settings;

pub use calls::{negotiated_version, BenchClients};
pub use report::{ReadWindowShown, RpcReport, CPU_COST, PROCEDURE_WORK, READ_FOOTPRINT};
pub use run::{measure, Results};
pub use server::{server, Addrs, BenchServer, Opaque, BARE_ECHO, BARE_PROG, BARE_WRITE, MAX_ECHO};
pub use settings::{Measure, RdmaSettings, RpcSettings};
