//! `rpcrdma bench --sweep`: the arguments of the sweep (throughput over
//! message sizes and the NULL round-trip distribution, for RPC-over-RDMA,
//! ONC RPC/TCP and raw TCP in one run; `rpcrdma_bench::sweep`), and the
//! run; `--plot FILE.svg` writes its picture.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use rpcrdma_bench::rpc::RpcSettings;
use rpcrdma_bench::sweep::{self, plot, sizes, Sweep, SweepSettings, SERIES};
use rpcrdma_bench::ProgressRef;
use rpcrdma_verbs::Device;

use super::output::progress_bar;
use super::rpc::RpcBenchArgs;
use crate::cmd::provider::{Setup, WithDevice};

/// Arguments of `rpcrdma bench --sweep`.
#[derive(Debug, Clone, Args)]
pub(crate) struct SweepArgs {
    /// Sweep message sizes: READ and WRITE throughput from 1 KiB to 16 MiB
    /// (powers of 4) over RPC-over-RDMA, ONC RPC/TCP and a raw TCP stream,
    /// and the NULL round-trip distribution (percentiles) of all three, in
    /// one run (about 25 s with the defaults). Uses --round-trips,
    /// --outstanding, --json and the provider options.
    #[arg(long)]
    pub(crate) sweep: bool,
    /// Draw the sweep into this SVG file: throughput against message size
    /// (log axes) and the round-trip percentiles.
    #[arg(long, value_name = "FILE.svg", requires = "sweep")]
    pub(crate) plot: Option<PathBuf>,
    /// Seconds per throughput measure of the sweep (5 measures per size).
    #[arg(long, default_value_t = 0.5, requires = "sweep")]
    pub(crate) sweep_secs: f64,
}

/// The sweep's threads over one provider.
struct Threads {
    rpc: RpcSettings,
    sw: SweepSettings,
    bar: ProgressRef,
}

impl WithDevice for Threads {
    type Output = Sweep;

    async fn run<D: Device + Clone + std::fmt::Debug>(
        self,
        dev: D,
        setup: Setup<D>,
    ) -> anyhow::Result<Sweep> {
        let Threads { rpc, sw, bar } = self;
        sweep::measure(&rpc, sw, dev, setup.options, setup.label, bar)
    }
}

/// Runs `rpcrdma bench --sweep`.
pub(crate) fn run(rpc: RpcBenchArgs, sw: SweepArgs) -> anyhow::Result<ExitCode> {
    if !(sw.sweep_secs.is_finite() && sw.sweep_secs > 0.0 && sw.sweep_secs <= 60.0) {
        bail!("--sweep-secs must be a number of seconds above 0 and at most 60");
    }
    if let Some(p) = &sw.plot {
        if p.extension().and_then(|e| e.to_str()) != Some("svg") {
            bail!(
                "--plot {}: the picture is SVG; name the file *.svg",
                p.display()
            );
        }
    }
    rpc.rdma.check()?;
    let steps = 1 + sizes().len() as u64 * SERIES.len() as u64;
    let (bar, progress) = progress_bar(steps, "sweep {bar:30} {pos}/{len} {msg}");
    let provider = rpc.rdma.provider.clone();
    let sweep = crate::cmd::runtime(crate::cmd::Scheduler::CurrentThread)?.block_on(provider.run(
        rpc.rdma.params(),
        Threads {
            rpc: rpc.settings(),
            sw: SweepSettings {
                secs: sw.sweep_secs,
                round_trips: rpc.round_trips,
                outstanding: rpc.outstanding,
            },
            bar: progress,
        },
    ));
    bar.finish_and_clear();
    let sweep = sweep?;
    if let Some(p) = &sw.plot {
        let svg = plot::svg(&sweep)?;
        std::fs::write(p, svg).with_context(|| format!("cannot write {}", p.display()))?;
        eprintln!("sweep: picture written to {}", p.display());
    }
    if rpc.json {
        println!("{}", sweep.json());
    } else {
        print!("{}", sweep.text());
    }
    Ok(ExitCode::SUCCESS)
}
