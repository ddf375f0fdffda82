//! `rpcrdma bench` (RPC level): the arguments of the comparison of
//! RPC-over-RDMA over the chosen verbs provider (software iWARP by
//! default), ONC RPC over TCP and raw TCP, which the other RPC benches
//! share, and the run. The measures, their method (paired rounds) and the
//! report are `rpcrdma_bench::rpc`'s.

use std::process::ExitCode;

use anyhow::bail;
use clap::Args;
use rpcrdma_bench::rpc::{self, RdmaSettings, ReadWindowShown, Results, RpcReport, RpcSettings};
use rpcrdma_bench::ProgressRef;
use rpcrdma_verbs::Device;

use super::output::progress_bar;
use crate::cmd::provider::{Setup, WithDevice};
use crate::cmd::rdma_opts::RdmaOpts;
use crate::cmd::read_window::ReadWindow;

/// Arguments of the RPC-level `rpcrdma bench`.
#[derive(Debug, Clone, Args)]
pub(crate) struct RpcBenchArgs {
    /// Print one JSON object (progress still goes to stderr).
    #[arg(long)]
    pub(crate) json: bool,
    /// Rounds. Each round measures every pair (theirs and ours) back to
    /// back, alternating which goes first; the report gives the median of
    /// the per-round ratios and the median of each raw figure.
    #[arg(long, default_value_t = 7)]
    pub(crate) rounds: usize,
    /// Round trips per side and round (in interleaved batches of 100).
    #[arg(long, default_value_t = 3000)]
    pub(crate) round_trips: usize,
    /// MiB moved per throughput measure.
    #[arg(long, default_value_t = 96)]
    pub(crate) mib: usize,
    /// Calls kept outstanding for the throughput and rate measures.
    #[arg(long, default_value_t = 8)]
    pub(crate) outstanding: usize,
    /// Run only these measures (for quick iterations; the figures and
    /// ratios of the others are then reported as null).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub(crate) only: Vec<Measure>,
    /// Address the RPC-over-RDMA server binds (port chosen by the
    /// system); with `--provider rdma-core`, an address of the device's
    /// interface.
    #[arg(long, default_value = "127.0.0.1")]
    pub(crate) listen_ip: std::net::IpAddr,
    /// How far the bench's RPC-over-RDMA server reads ahead, as `rpcrdma
    /// serve --read-window` (`auto`, or bytes, or a number with K, M, G):
    /// 1M pulls one 1 MiB WRITE's data at a time, 2M lets the next call's
    /// data follow without waiting for its Read Request; `auto` is 2M on
    /// several CPUs and 1M on one (`--pin`, `taskset -c 0`).
    /// docs/performance.md, "The read window, chosen by CPUs".
    #[arg(long, value_name = "auto|SIZE", default_value = "auto", value_parser = ReadWindow::parse)]
    pub(crate) read_window: ReadWindow,
    #[command(flatten)]
    pub(crate) rdma: RdmaOpts,
}

/// One group of measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Measure {
    /// NULL round trip (raw TCP ping-pong, RPC-over-RDMA, ONC RPC/TCP).
    Null,
    /// RPC-over-RDMA NULL rate with many calls outstanding.
    Rate,
    /// 1 MiB READ (raw TCP stream, RPC-over-RDMA, ONC RPC/TCP).
    Read,
    /// 1 MiB WRITE (raw TCP stream, RPC-over-RDMA, ONC RPC/TCP), each
    /// RPC path also without the demo procedure's checksum.
    Write,
}

impl From<Measure> for rpc::Measure {
    fn from(m: Measure) -> Self {
        match m {
            Measure::Null => rpc::Measure::Null,
            Measure::Rate => rpc::Measure::Rate,
            Measure::Read => rpc::Measure::Read,
            Measure::Write => rpc::Measure::Write,
        }
    }
}

impl RpcBenchArgs {
    /// What the bench library is to do.
    pub(crate) fn settings(&self) -> RpcSettings {
        RpcSettings {
            rounds: self.rounds,
            round_trips: self.round_trips,
            mib: self.mib,
            outstanding: self.outstanding,
            only: self.only.iter().map(|&m| m.into()).collect(),
            listen_ip: self.listen_ip,
            rdma: rdma_settings(&self.rdma, self.read_window),
        }
    }
}

/// The RPC-over-RDMA settings of a bench's connections: the engines and
/// queue pair sizes `--rdma-version`, `--inline`, `--credits` and the
/// rest give, the server reading ahead `read_window`.
pub(crate) fn rdma_settings(rdma: &RdmaOpts, read_window: ReadWindow) -> RdmaSettings {
    let mut server = rdma.server();
    // (The parser refuses 0.)
    server.read_window = read_window.resolve();
    RdmaSettings {
        client: rdma.client(),
        server,
        caps: rdma.caps(),
    }
}

/// Both sides, each on its own thread and runtime, over one provider.
struct Threads {
    settings: RpcSettings,
    bar: ProgressRef,
}

impl WithDevice for Threads {
    type Output = (Results, String);

    async fn run<D: Device + Clone + std::fmt::Debug>(
        self,
        dev: D,
        setup: Setup<D>,
    ) -> anyhow::Result<(Results, String)> {
        let Threads { settings, bar } = self;
        let r = rpc::measure(&settings, dev, setup.options, bar)?;
        Ok((r, setup.label))
    }
}

/// Runs the RPC-level benchmark.
pub(crate) fn run(args: RpcBenchArgs) -> anyhow::Result<ExitCode> {
    if args.rounds == 0 || args.round_trips == 0 || args.mib == 0 {
        bail!("--rounds, --round-trips and --mib must be at least 1");
    }
    let settings = args.settings();
    let (bar, progress) = progress_bar(
        settings.measures_per_round() * args.rounds as u64,
        "{bar:30} {pos}/{len} {msg}",
    );
    args.rdma.check()?;
    let provider = args.rdma.provider.clone();
    let done = crate::cmd::runtime(crate::cmd::Scheduler::CurrentThread)?.block_on(provider.run(
        args.rdma.params(),
        Threads {
            settings: settings.clone(),
            bar: progress,
        },
    ));
    bar.finish_and_clear();
    let (r, label) = done?;
    let read_window = ReadWindowShown {
        octets: args.read_window.resolve(),
        setting: args.read_window.to_string(),
        described: crate::cmd::read_window::describe(args.read_window),
    };
    let report = RpcReport::new(&r, &settings, label, read_window);
    if args.json {
        println!("{}", report.json());
    } else {
        print!("{}", report.text());
    }
    Ok(ExitCode::SUCCESS)
}
