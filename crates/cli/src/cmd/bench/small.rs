//! `rpcrdma bench --small`: the arguments of the small-calls bench (NULL
//! and ECHO rates with many calls outstanding, on one connection and on
//! several, over RPC-over-RDMA, ONC RPC/TCP and a raw TCP exchange kept as
//! deep; `rpcrdma_bench::small`), and the run.

use std::process::ExitCode;

use anyhow::bail;
use clap::Args;
use rpcrdma_bench::rpc::{RpcSettings, MAX_ECHO};
use rpcrdma_bench::small::{self, Outcome, SmallReport, SmallSettings, MAX_CONNECTIONS, MAX_DEPTH};
use rpcrdma_bench::ProgressRef;
use rpcrdma_verbs::Device;

use super::output::progress_bar;
use super::rpc::RpcBenchArgs;
use crate::cmd::provider::{Setup, WithDevice};

/// Arguments of `rpcrdma bench --small`.
#[derive(Debug, Clone, Args)]
pub(crate) struct SmallArgs {
    /// Small calls: NULL and ECHO rates with --small-depths calls
    /// outstanding, on one connection and on --small-connections, over
    /// RPC-over-RDMA, ONC RPC/TCP and a raw TCP exchange of messages of
    /// the same sizes kept as many deep, with the ratios. Uses --json and
    /// the provider options.
    #[arg(long, conflicts_with_all = ["sweep", "clients"])]
    pub(crate) small: bool,
    /// Calls kept outstanding per connection, each depth measured in turn.
    #[arg(long, value_delimiter = ',', default_value = "1,8,32,128")]
    pub(crate) small_depths: Vec<usize>,
    /// The second connection count (the first is 1; 1 here measures only
    /// one connection).
    #[arg(long, default_value_t = 4)]
    pub(crate) small_connections: usize,
    /// Seconds per measure (three paths, two operations, two connection
    /// counts and every depth per round).
    #[arg(long, default_value_t = 0.3)]
    pub(crate) small_secs: f64,
    /// Rounds (the order of the paths flips every round).
    #[arg(long, default_value_t = 3)]
    pub(crate) small_rounds: usize,
    /// ECHO's octets each way (0: NULL only).
    #[arg(long, default_value_t = 4096)]
    pub(crate) small_echo_size: usize,
}

struct Job {
    args: RpcSettings,
    small: SmallSettings,
    bar: ProgressRef,
}

impl WithDevice for Job {
    type Output = (Outcome, String);

    async fn run<D: Device + Clone + std::fmt::Debug>(
        self,
        dev: D,
        setup: Setup<D>,
    ) -> anyhow::Result<(Outcome, String)> {
        let Job { args, small, bar } = self;
        let res = small::measure(&args, &small, dev, setup.options, bar);
        Ok((res?, setup.label))
    }
}

/// Runs `rpcrdma bench --small`.
pub(crate) fn run(args: RpcBenchArgs, small: SmallArgs) -> anyhow::Result<ExitCode> {
    if small.small_depths.is_empty() || small.small_depths.iter().any(|&d| d == 0 || d > MAX_DEPTH)
    {
        bail!("--small-depths: each depth between 1 and {MAX_DEPTH}");
    }
    if small.small_connections == 0 || small.small_connections > MAX_CONNECTIONS {
        bail!("--small-connections: between 1 and {MAX_CONNECTIONS}");
    }
    if small.small_echo_size > MAX_ECHO {
        bail!("--small-echo-size: at most {MAX_ECHO}");
    }
    if !(small.small_secs > 0.0 && small.small_secs <= 60.0) || small.small_rounds == 0 {
        bail!("--small-secs must be in (0, 60] and --small-rounds at least 1");
    }
    args.rdma.check()?;
    let settings = SmallSettings {
        depths: small.small_depths.clone(),
        connections: small.small_connections,
        secs: small.small_secs,
        rounds: small.small_rounds,
        echo_size: small.small_echo_size,
    };
    let (bar, progress) = progress_bar(settings.measures(), "{bar:30} {pos}/{len} {msg}");
    let provider = args.rdma.provider.clone();
    let done = crate::cmd::runtime(crate::cmd::Scheduler::CurrentThread)?.block_on(provider.run(
        args.rdma.params(),
        Job {
            args: args.settings(),
            small: settings.clone(),
            bar: progress,
        },
    ));
    bar.finish_and_clear();
    let (out, label) = done?;
    let report = SmallReport::new(out, settings, label);
    if args.json {
        println!("{}", report.json());
    } else {
        print!("{}", report.text());
    }
    Ok(ExitCode::SUCCESS)
}
