//! `rpcrdma bench`: measurements. Without a target it measures RPC-over-RDMA
//! against ONC RPC over TCP and raw TCP (`rpc.rs`); `bench verbs` measures
//! the software iWARP provider against raw TCP (`verbs.rs`).

pub(crate) mod rpc;
pub(crate) mod verbs;

use std::process::ExitCode;

use clap::{Args, Subcommand};

/// Arguments of `rpcrdma bench`.
#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_long_help = "Method: paired rounds. Thread wake-up times on small virtual machines swing \
between runs and within a run, so figures taken apart are not comparable. In each round the \
round trips of raw TCP, RPC-over-RDMA and ONC RPC/TCP are measured in interleaved batches of \
100 over connections kept open, and the throughput measures back to back (RPC-over-RDMA in \
the middle, the order flipped every round); each ratio is computed within a round, and the \
report gives the median of the per-round ratios beside the median of each raw figure \
(--json: also every round's figures). No side spins or busy-polls: every measure waits in \
epoll like the raw TCP baseline."
)]
pub(crate) struct BenchArgs {
    #[command(subcommand)]
    target: Option<BenchTarget>,
    #[command(flatten)]
    rpc: rpc::RpcBenchArgs,
}

/// What to measure (default: the RPC-level comparison).
#[derive(Debug, Subcommand)]
enum BenchTarget {
    /// The software iWARP verbs provider against raw TCP on loopback,
    /// between the same two threads: 1 MiB RDMA Write and RDMA Read
    /// throughput, 64-byte Send/Recv ping-pong round trip.
    Verbs(verbs::VerbsArgs),
}

/// Runs `rpcrdma bench ...`.
pub(crate) fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    match args.target {
        Some(BenchTarget::Verbs(a)) => verbs::run(a),
        None => rpc::run(args.rpc),
    }
}
