//! `rpcrdma bench`: measurements, one target per subcommand.

pub(crate) mod verbs;

use std::process::ExitCode;

use clap::{Args, Subcommand};

/// Arguments of `rpcrdma bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    #[command(subcommand)]
    target: BenchTarget,
}

/// What to measure.
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
        BenchTarget::Verbs(a) => verbs::run(a),
    }
}
