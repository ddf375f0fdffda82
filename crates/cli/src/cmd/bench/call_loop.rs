//! `rpcrdma bench loop`: the arguments of the loop (a fixed number of
//! NULL round trips, or READ or WRITE calls, over one of the three paths
//! `rpcrdma bench` compares, and nothing else, for instruction counting,
//! `scripts/callgrind-null.sh`, and profiling; `rpcrdma_bench::call_loop`),
//! and the run.

use std::process::ExitCode;

use anyhow::bail;
use clap::{Args, ValueEnum};
use rpcrdma_bench::call_loop::{self, LoopSettings};
use rpcrdma_bench::cpu::Elapsed;
use rpcrdma_verbs::Device;

use super::rpc::rdma_settings;
use crate::cmd::provider::{Setup, WithDevice};
use crate::cmd::rdma_opts::RdmaOpts;
use crate::cmd::read_window::ReadWindow;

/// Arguments of `rpcrdma bench loop`.
#[derive(Debug, Clone, Args)]
pub(crate) struct LoopArgs {
    /// Which path to use.
    #[arg(long, value_enum, default_value = "rdma")]
    pub(crate) path: LoopPath,
    /// What to repeat: NULL round trips, or READ or WRITE calls of
    /// `--size` octets, or WRITE calls without the demo's checksum (raw
    /// TCP: a stream of writes of that size).
    #[arg(long, value_enum, default_value = "null")]
    pub(crate) op: LoopOp,
    /// Octets per READ or WRITE.
    #[arg(long, default_value_t = 1 << 20)]
    pub(crate) size: usize,
    /// Calls kept outstanding (default: 1 for NULL, whose sequential round
    /// trips `scripts/callgrind-null.sh` counts, 8 for READ and WRITE).
    /// With NULL and more than one, the client runs that many tasks that
    /// each call in turn, so that many calls are always in flight (raw
    /// TCP: that many 64-octet messages kept in flight, each side reading
    /// what has arrived and answering it with one write).
    #[arg(long)]
    pub(crate) outstanding: Option<usize>,
    /// Round trips (or calls) after the warm-up.
    #[arg(long, default_value_t = 1000)]
    pub(crate) round_trips: usize,
    /// Round trips before counting starts (connection set-up, first-use
    /// allocations).
    #[arg(long, default_value_t = 100)]
    pub(crate) warm_up: usize,
    /// Run the client's loop as a task spawned on its runtime instead of
    /// as the runtime's `block_on` future. A `block_on` future woken by
    /// another task (here the connection's reader, which receives the
    /// reply) costs tokio a zero-timeout `epoll_wait` before it is polled
    /// again; a spawned task is polled straight from the run queue. This
    /// shows what the RPC path costs without that step (`rpcrdma bench`
    /// runs its clients as `block_on` futures, as most programs do).
    #[arg(long)]
    pub(crate) client_task: bool,
    /// How far the server reads ahead, as `rpcrdma bench --read-window`.
    #[arg(long, value_name = "auto|SIZE", default_value = "auto", value_parser = ReadWindow::parse)]
    pub(crate) read_window: ReadWindow,
    #[command(flatten)]
    pub(crate) rdma: RdmaOpts,
}

/// What `rpcrdma bench loop` repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LoopOp {
    /// NULL round trips (raw TCP: 64-octet ping-pongs).
    Null,
    /// READ calls (raw TCP: the stream).
    Read,
    /// WRITE calls (raw TCP: the stream).
    Write,
    /// WRITE calls to the bench-only procedure that computes no checksum
    /// (`rpcrdma bench`'s "WRITE, no checksum"): the transport's own
    /// cost (raw TCP: the stream).
    BareWrite,
}

/// The paths `rpcrdma bench` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LoopPath {
    /// RPC-over-RDMA NULL calls.
    Rdma,
    /// ONC RPC over TCP NULL calls.
    OncrpcTcp,
    /// Raw TCP 64-octet ping-pong.
    RawTcp,
}

impl LoopArgs {
    /// What the bench library is to do.
    fn settings(&self) -> LoopSettings {
        LoopSettings {
            path: match self.path {
                LoopPath::Rdma => call_loop::LoopPath::Rdma,
                LoopPath::OncrpcTcp => call_loop::LoopPath::OncrpcTcp,
                LoopPath::RawTcp => call_loop::LoopPath::RawTcp,
            },
            op: match self.op {
                LoopOp::Null => call_loop::LoopOp::Null,
                LoopOp::Read => call_loop::LoopOp::Read,
                LoopOp::Write => call_loop::LoopOp::Write,
                LoopOp::BareWrite => call_loop::LoopOp::BareWrite,
            },
            size: self.size,
            outstanding: self.outstanding,
            round_trips: self.round_trips,
            warm_up: self.warm_up,
            client_task: self.client_task,
            rdma: rdma_settings(&self.rdma, self.read_window),
        }
    }
}

struct LoopJob {
    args: LoopSettings,
}

impl WithDevice for LoopJob {
    type Output = Elapsed;

    async fn run<D: Device + Clone + std::fmt::Debug>(
        self,
        dev: D,
        setup: Setup<D>,
    ) -> anyhow::Result<Elapsed> {
        call_loop::measure(self.args, dev, setup.options)
    }
}

/// Runs `rpcrdma bench loop`.
pub(crate) fn run(args: LoopArgs) -> anyhow::Result<ExitCode> {
    if args.round_trips == 0 {
        bail!("--round-trips must be at least 1");
    }
    if args.op != LoopOp::Null && args.size == 0 {
        bail!("--size must be at least 1");
    }
    args.rdma.check()?;
    let provider = args.rdma.provider.clone();
    let settings = args.settings();
    let took =
        crate::cmd::runtime(crate::cmd::Scheduler::CurrentThread)?.block_on(provider.run(
            args.rdma.params(),
            LoopJob {
                args: settings.clone(),
            },
        ))?;
    println!("{}", call_loop::text(&settings, &took));
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_names_each_path_as_the_option_does() {
        for path in LoopPath::value_variants() {
            let args = LoopArgs {
                path: *path,
                ..<Cli as clap::Parser>::parse_from(["loop"]).args
            };
            let name = path.to_possible_value().map(|v| v.get_name().to_string());
            assert_eq!(name.as_deref(), Some(args.settings().path.name()));
        }
    }

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: LoopArgs,
    }
}
