//! `rpcrdma bench null-loop`: a fixed number of sequential NULL round trips
//! over one of the three paths `rpcrdma bench` compares, and nothing else,
//! for instruction counting (`scripts/callgrind-null.sh`).
//!
//! Client and server run on two threads with one current-thread tokio
//! runtime each, exactly as in `rpcrdma bench`. Start-up and tear-down cost
//! the same whatever the count, so the difference between two runs with
//! different counts, divided by the difference of the counts, is the cost
//! of one round trip, both ends together.

use std::process::ExitCode;
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use clap::{Args, ValueEnum};
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{Client, ClientConfig};
use rpcrdma_transport::RdmaConnector;
use rpcrdma_verbs::Device;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use super::on_thread;
use super::rpc::{server, Addrs, RpcBenchArgs};
use crate::cmd::provider::{Setup, WithDevice};
use crate::cmd::rdma_opts::RdmaOpts;

/// Arguments of `rpcrdma bench null-loop`.
#[derive(Debug, Clone, Args)]
pub(crate) struct NullLoopArgs {
    /// Which round trip to repeat.
    #[arg(long, value_enum, default_value = "rdma")]
    pub(crate) path: LoopPath,
    /// Round trips after the warm-up.
    #[arg(long, default_value_t = 1000)]
    pub(crate) round_trips: usize,
    /// Round trips before counting starts (connection set-up, first-use
    /// allocations).
    #[arg(long, default_value_t = 100)]
    pub(crate) warm_up: usize,
    #[command(flatten)]
    pub(crate) rdma: RdmaOpts,
}

/// The round trips `rpcrdma bench` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LoopPath {
    /// RPC-over-RDMA NULL calls.
    Rdma,
    /// ONC RPC over TCP NULL calls.
    OncrpcTcp,
    /// Raw TCP 64-octet ping-pong.
    RawTcp,
}

struct LoopJob {
    args: NullLoopArgs,
}

impl WithDevice for LoopJob {
    type Output = Duration;

    async fn run<D: Device + Clone + std::fmt::Debug>(
        self,
        dev: D,
        setup: Setup<D>,
    ) -> anyhow::Result<Duration> {
        let args = self.args;
        let bench = RpcBenchArgs::for_loop(args.rdma.clone());
        let (atx, arx) = std_mpsc::channel();
        let (stop_tx, stop_rx) = oneshot::channel();
        let srv = on_thread(
            "bench-server",
            server(bench, dev.clone(), setup.options.clone(), atx, stop_rx),
        );
        let Ok(addrs) = arx.recv_timeout(Duration::from_secs(30)) else {
            return Err(match srv.join() {
                Ok(Err(e)) => e.context("the benchmark server did not start"),
                _ => anyhow!("the benchmark server did not start"),
            });
        };
        let cli = on_thread("bench-client", client(args, dev, setup.options, addrs));
        let res = cli.join().map_err(|_| anyhow!("client thread panicked"));
        let _ = stop_tx.send(());
        let _ = srv.join();
        res?
    }
}

async fn client<D: Device + Clone>(
    args: NullLoopArgs,
    dev: D,
    options: D::Options,
    a: Addrs,
) -> anyhow::Result<Duration> {
    let (n, warm) = (args.round_trips, args.warm_up);
    match args.path {
        LoopPath::RawTcp => {
            let mut s = TcpStream::connect(a.echo).await?;
            s.set_nodelay(true)?;
            let mut b = [7u8; 64];
            let mut t = Instant::now();
            for i in 0..warm + n {
                if i == warm {
                    t = Instant::now();
                }
                s.write_all(&b).await?;
                s.read_exact(&mut b).await?;
            }
            Ok(t.elapsed())
        }
        LoopPath::Rdma | LoopPath::OncrpcTcp => {
            let c = if args.path == LoopPath::Rdma {
                let connector = RdmaConnector::new(dev, a.rdma, args.rdma.client())
                    .options(options)
                    .caps(args.rdma.caps());
                Client::connect(connector, ClientConfig::default())
                    .await
                    .context("RPC-over-RDMA connect")?
            } else {
                Client::connect(TcpConnector::new(a.rpc_tcp), ClientConfig::default())
                    .await
                    .context("ONC RPC/TCP connect")?
            };
            let mut t = Instant::now();
            for i in 0..warm + n {
                if i == warm {
                    t = Instant::now();
                }
                c.null(rpcrdma_demoprog::PROGRAM, rpcrdma_demoprog::VERSION)
                    .await?;
            }
            Ok(t.elapsed())
        }
    }
}

/// Runs `rpcrdma bench null-loop`.
pub(crate) fn run(args: NullLoopArgs) -> anyhow::Result<ExitCode> {
    if args.round_trips == 0 {
        bail!("--round-trips must be at least 1");
    }
    args.rdma.check()?;
    let provider = args.rdma.provider.clone();
    let (n, path) = (args.round_trips, args.path);
    let took = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(provider.run(args.rdma.params(), LoopJob { args }))?;
    println!(
        "{} round trips ({}): {:.2} us each",
        n,
        path.to_possible_value()
            .map_or_else(|| "?".to_string(), |v| v.get_name().to_string()),
        took.as_secs_f64() * 1e6 / n as f64
    );
    Ok(ExitCode::SUCCESS)
}
