//! The sweep (`rpcrdma bench --sweep`): throughput over message sizes and
//! the NULL round-trip distribution, for RPC-over-RDMA, ONC RPC/TCP and
//! raw TCP in one run (`measure.rs`); the report as JSON or tables
//! (`report.rs`) and as a picture (`plot.rs`).
//!
//! * Throughput: for each size of [`sizes`] (1 KiB to 16 MiB, powers of
//!   4), demo READ and WRITE calls of that size over RPC-over-RDMA and ONC
//!   RPC/TCP (`outstanding` calls in flight, fewer for the largest sizes
//!   so that at most [`MAX_BYTES_IN_FLIGHT`] are outstanding), and a raw
//!   TCP stream of writes of that size, each for `secs` seconds.
//!   The five measures of a size run back to back (RPC-over-RDMA in the
//!   middle, the order flipped from size to size).
//! * Round trips: `round_trips` NULL calls (64-octet ping-pongs for raw
//!   TCP) per path, each timed on its own, in interleaved batches of 100
//!   (the order flips from batch to batch); the report gives percentiles.
//!
//! Both RPC paths and the raw TCP ping-pong are served by the bench's
//! server thread; the raw TCP stream's receiver has a thread of its own.

mod figures;
mod measure;
pub mod plot;
mod report;

pub use figures::{
    outstanding_for, percentile_name, size_name, sizes, Distribution, Series, Sweep, SweepSettings,
    LARGEST, MAX_BYTES_IN_FLIGHT, PATHS, PERCENTILES, SERIES, SMALLEST,
};
pub use measure::{measure, one_call};
