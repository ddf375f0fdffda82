//! `rpcrdma bench --clients N[,N...]`: the arguments of the scaling run
//! (aggregate throughput of N connections against one multi-threaded
//! server, RPC-over-RDMA beside ONC RPC/TCP with the same N;
//! `rpcrdma_bench::scale`), and the run.

use std::process::ExitCode;

use anyhow::bail;
use clap::Args;
use rpcrdma_bench::rpc::RpcSettings;
use rpcrdma_bench::scale::{self, ScaleSettings, Scaling, MAX_CLIENTS};
use rpcrdma_bench::ProgressRef;
use rpcrdma_verbs::Device;

use super::output::progress_bar;
use super::rpc::RpcBenchArgs;
use crate::cmd::provider::{Setup, WithDevice};

/// Arguments of `rpcrdma bench --clients`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ScaleArgs {
    /// Scaling: N client connections (a list runs each N in turn, e.g.
    /// `--clients 1,2,4`) against one multi-threaded server, reporting
    /// aggregate NULL calls/s (credits full) and 1 MiB READ/WRITE
    /// throughput for RPC-over-RDMA and ONC RPC/TCP with the same N, and
    /// the CPU time used. Uses --outstanding, --json and the provider
    /// options.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "N[,N...]",
        conflicts_with = "sweep"
    )]
    pub(crate) clients: Vec<usize>,
    /// Seconds per measure of `--clients` (6 measures per N).
    #[arg(long, default_value_t = 1.0)]
    pub(crate) scale_secs: f64,
}

/// The scaling run's threads over one provider.
struct Threads {
    rpc: RpcSettings,
    sc: ScaleSettings,
    bar: ProgressRef,
}

impl WithDevice for Threads {
    type Output = Scaling;

    async fn run<D: Device + Clone + std::fmt::Debug>(
        self,
        dev: D,
        setup: Setup<D>,
    ) -> anyhow::Result<Scaling> {
        let Threads { rpc, sc, bar } = self;
        scale::measure(&rpc, &sc, dev, setup.options, setup.label, bar).await
    }
}

/// Runs `rpcrdma bench --clients ...`.
pub(crate) fn run(rpc: RpcBenchArgs, sc: ScaleArgs) -> anyhow::Result<ExitCode> {
    if sc.clients.iter().any(|&n| n == 0 || n > MAX_CLIENTS) {
        bail!("--clients: each N must be between 1 and {MAX_CLIENTS}");
    }
    if !(sc.scale_secs.is_finite() && sc.scale_secs > 0.0 && sc.scale_secs <= 60.0) {
        bail!("--scale-secs must be a number of seconds above 0 and at most 60");
    }
    rpc.rdma.check()?;
    let (bar, progress) = progress_bar(
        (sc.clients.len() * 6) as u64,
        "clients {bar:30} {pos}/{len} {msg}",
    );
    let provider = rpc.rdma.provider.clone();
    let scaling =
        crate::cmd::runtime(crate::cmd::Scheduler::CurrentThread)?.block_on(provider.run(
            rpc.rdma.params(),
            Threads {
                rpc: rpc.settings(),
                sc: ScaleSettings {
                    clients: sc.clients.clone(),
                    secs: sc.scale_secs,
                },
                bar: progress,
            },
        ));
    bar.finish_and_clear();
    let scaling = scaling?;
    if rpc.json {
        println!("{}", scaling.json());
    } else {
        print!("{}", scaling.text());
    }
    Ok(ExitCode::SUCCESS)
}
