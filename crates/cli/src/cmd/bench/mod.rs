//! `rpcrdma bench`: measurements, made by the `rpcrdma-bench` library;
//! these files parse the arguments, open the provider and print the
//! reports. Without a target it measures RPC-over-RDMA against ONC RPC
//! over TCP and raw TCP (`rpc.rs`), over message sizes with `--sweep`
//! (`sweep.rs`, drawn with `--plot`), or with N connections against a
//! multi-threaded server with `--clients` (`scale.rs`), small calls' rates
//! at several depths with `--small` (`small.rs`); `bench verbs` measures a
//! verbs provider (software iWARP, or an RDMA device with `--provider
//! rdma-core`) against raw TCP (`verbs.rs`); `bench loop` repeats one call
//! (`call_loop.rs`). Every bench reports the wake-up state its raw TCP
//! round trips saw, and `--pin` runs it on one CPU.

pub(crate) mod call_loop;
mod output;
pub(crate) mod rpc;
pub(crate) mod scale;
pub(crate) mod small;
pub(crate) mod sweep;
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
epoll like the raw TCP baseline.

Every bench reports the wake-up state it saw, from its raw TCP round trips: fast (< 15 us: \
threads share a CPU or the machine is busy; CPU cost dominates), slow (> 40 us: an idle CPU \
is woken per round trip) or mixed, and the system's TCP congestion control (bbr paces bursts \
even on loopback). --pin runs everything on one CPU (as taskset -c 0).

--sweep measures READ/WRITE throughput from 1 KiB to 16 MiB and NULL round-trip percentiles \
instead (--plot FILE.svg draws them); --clients 1,2,4 measures the aggregate of N connections \
against a multi-threaded server instead; --small measures NULL and 4 KiB ECHO rates with 1, 8, \
32 and 128 calls outstanding on one and on several connections, against a raw TCP exchange kept as \
many deep, instead. See docs/performance.md."
)]
pub(crate) struct BenchArgs {
    /// Run on one CPU only (the first this process may use), every thread
    /// of the bench sharing it, as with `taskset -c 0`: the single-CPU
    /// variant (on an otherwise quiet machine wake-ups are fast there and
    /// CPU cost dominates; the report says which state it saw).
    #[arg(long, global = true)]
    pin: bool,
    #[command(subcommand)]
    target: Option<BenchTarget>,
    #[command(flatten)]
    rpc: rpc::RpcBenchArgs,
    #[command(flatten)]
    sweep: sweep::SweepArgs,
    #[command(flatten)]
    scale: scale::ScaleArgs,
    #[command(flatten)]
    small: small::SmallArgs,
}

/// What to measure (default: the RPC-level comparison).
#[derive(Debug, Subcommand)]
enum BenchTarget {
    /// A verbs provider (software iWARP on loopback, or an RDMA device
    /// with --provider rdma-core) against raw TCP on loopback, between the
    /// same two threads: 1 MiB RDMA Write and RDMA Read throughput, 64-byte
    /// Send/Recv ping-pong round trip.
    Verbs(verbs::VerbsArgs),
    /// A fixed number of NULL round trips (or READ or WRITE calls) over
    /// one path (RPC-over-RDMA, ONC RPC/TCP or raw TCP) and nothing else:
    /// the workload `scripts/callgrind-null.sh` counts instructions of,
    /// and one to profile.
    Loop(call_loop::LoopArgs),
}

/// Runs `rpcrdma bench ...`.
pub(crate) fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    if args.pin {
        let cpu = rpcrdma_bench::wake::pin_to_one_cpu()?;
        eprintln!("bench: pinned to CPU {cpu} (--pin): every thread shares it");
    }
    match args.target {
        Some(BenchTarget::Verbs(a)) => verbs::run(a),
        Some(BenchTarget::Loop(a)) => call_loop::run(a),
        None if args.sweep.sweep => sweep::run(args.rpc, args.sweep),
        None if !args.scale.clients.is_empty() => scale::run(args.rpc, args.scale),
        None if args.small.small => small::run(args.rpc, args.small),
        None => rpc::run(args.rpc),
    }
}

pub(crate) use output::num;
/// The median of a series (`rpcrdma nfs bench` takes it from here).
pub(crate) use rpcrdma_bench::median;
