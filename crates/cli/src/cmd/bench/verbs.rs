//! `rpcrdma bench verbs`: the arguments of the verbs bench (a verbs
//! provider, software iWARP by default or `--provider rdma-core` on a
//! device, against raw TCP on loopback; `rpcrdma_bench::verbs`), and the
//! run. Each round's figures go to stderr; the result is a table, or one
//! JSON object with `--json`.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::bail;
use clap::Args;
use rpcrdma_bench::verbs::{self, VerbsMeasure, VerbsSettings};
use rpcrdma_bench::Progress;
use rpcrdma_verbs::Device;

use crate::cmd::provider::{ProviderOpts, ProviderParams, Setup, WithDevice};

/// Arguments of `rpcrdma bench verbs`.
#[derive(Debug, Args)]
pub(crate) struct VerbsArgs {
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Negotiate MPA CRC32c (off by default, as Linux siw).
    #[arg(long)]
    crc: bool,
    /// MiB moved per throughput round.
    #[arg(long, default_value_t = 512)]
    mib: usize,
    /// Round trips per ping-pong round.
    #[arg(long, default_value_t = 20_000)]
    round_trips: usize,
    /// Rounds; each round measures raw TCP and ours back to back (the
    /// ping-pongs in interleaved batches of 100 round trips). Figures and
    /// per-round ratios are reported as medians.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// 1 MiB operations kept in flight.
    #[arg(long, default_value_t = 8)]
    window: usize,
    /// Run only these measures (for quick iterations; the ratios of the
    /// others are then reported as null).
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Vec<Measure>,
    /// Address the verbs server side listens on (port chosen by the
    /// system); with `--provider rdma-core`, an address of the device's
    /// interface. Raw TCP always runs on 127.0.0.1.
    #[arg(long, default_value = "127.0.0.1")]
    listen_ip: std::net::IpAddr,
    #[command(flatten)]
    provider: ProviderOpts,
}

/// One of the measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Measure {
    /// RDMA Write throughput (and the raw TCP stream).
    Write,
    /// RDMA Read throughput (and the raw TCP stream).
    Read,
    /// Send/Recv ping-pong (and the raw TCP ping-pong).
    Pingpong,
}

impl VerbsArgs {
    /// What the bench library is to do.
    fn settings(&self) -> VerbsSettings {
        VerbsSettings {
            crc: self.crc,
            mib: self.mib,
            round_trips: self.round_trips,
            rounds: self.rounds,
            window: self.window,
            only: self
                .only
                .iter()
                .map(|m| match m {
                    Measure::Write => VerbsMeasure::Write,
                    Measure::Read => VerbsMeasure::Read,
                    Measure::Pingpong => VerbsMeasure::Pingpong,
                })
                .collect(),
            listen_ip: self.listen_ip,
        }
    }
}

/// Runs `rpcrdma bench verbs`.
pub(crate) fn run(a: VerbsArgs) -> anyhow::Result<ExitCode> {
    if a.mib == 0 || a.round_trips == 0 || a.rounds == 0 || a.window == 0 {
        bail!("--mib, --round-trips, --rounds and --window must be at least 1");
    }
    if a.crc && !a.provider.is_softiwarp() {
        bail!("--crc is a software iWARP option");
    }
    let params = ProviderParams {
        softiwarp: rpcrdma_softiwarp::Options {
            crc: a.crc,
            ..rpcrdma_softiwarp::Options::default()
        },
        recv_size: 1024,
    };
    let provider = a.provider.clone();
    crate::cmd::runtime(crate::cmd::Scheduler::CurrentThread)?
        .block_on(provider.run(params, Bench(a)))
}

struct Bench(VerbsArgs);

impl WithDevice for Bench {
    type Output = ExitCode;

    async fn run<D: Device + Clone + std::fmt::Debug>(
        self,
        dev: D,
        setup: Setup<D>,
    ) -> anyhow::Result<ExitCode> {
        let a = self.0;
        let report = verbs::measure(
            &a.settings(),
            dev,
            setup.options,
            setup.label,
            Arc::new(Notes),
        )?;
        if a.json {
            println!("{}", report.json());
        } else {
            print!("{}", report.text());
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// Each round's figures on stderr, as they come.
struct Notes;

impl Progress for Notes {
    fn start(&self, _what: &str) {}

    fn done(&self) {}

    fn note(&self, line: &str) {
        eprintln!("{line}");
    }
}
