//! `rpcrdma bench loop`: a fixed number of NULL round trips (or READ or
//! WRITE calls) over one of the three paths `rpcrdma bench` compares, and
//! nothing else, for instruction counting (`scripts/callgrind-null.sh`)
//! and profiling (`perf record`).
//!
//! Client and server run on two threads with one current-thread tokio
//! runtime each, exactly as in `rpcrdma bench`. Start-up and tear-down cost
//! the same whatever the count, so the difference between two runs with
//! different counts, divided by the difference of the counts, is the cost
//! of one round trip, both ends together.
//!
//! It prints the wall-clock time per round trip (or the throughput) and
//! the CPU time of every thread of the process per round trip (or per
//! MiB) over the counted part, with the CPUs it kept busy (`cpu.rs`).

use std::process::ExitCode;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use clap::{Args, ValueEnum};
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{Client, ClientConfig};
use rpcrdma_transport::RdmaConnector;
use rpcrdma_verbs::Device;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use super::cpu::{Elapsed, Stopwatch};
use super::on_thread;
use super::rpc::{server, Addrs, RpcBenchArgs, BARE_PROG, BARE_WRITE};
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

struct LoopJob {
    args: LoopArgs,
}

impl WithDevice for LoopJob {
    type Output = Elapsed;

    async fn run<D: Device + Clone + std::fmt::Debug>(
        self,
        dev: D,
        setup: Setup<D>,
    ) -> anyhow::Result<Elapsed> {
        let args = self.args;
        let bench = RpcBenchArgs::for_loop(args.rdma.clone(), args.read_window);
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
        let cli = if args.client_task {
            on_thread("bench-client", async move {
                tokio::spawn(client(args, dev, setup.options, addrs))
                    .await
                    .map_err(|e| anyhow!("client task failed: {e}"))?
            })
        } else {
            on_thread("bench-client", client(args, dev, setup.options, addrs))
        };
        let res = cli.join().map_err(|_| anyhow!("client thread panicked"));
        let _ = stop_tx.send(());
        let _ = srv.join();
        res?
    }
}

async fn client<D: Device + Clone>(
    args: LoopArgs,
    dev: D,
    options: D::Options,
    a: Addrs,
) -> anyhow::Result<Elapsed> {
    let (n, warm) = (args.round_trips, args.warm_up);
    if args.path == LoopPath::RawTcp {
        if args.op != LoopOp::Null {
            let data = rpcrdma_demoprog::pattern(3, args.size);
            tcp_stream(a.sink, args.size, warm, &data).await?;
            let t = Stopwatch::start();
            tcp_stream(a.sink, args.size, n, &data).await?;
            return Ok(t.elapsed());
        }
        let k = args.outstanding.unwrap_or(1);
        if k > 1 {
            let mut s = TcpStream::connect(a.batch_echo).await?;
            s.set_nodelay(true)?;
            super::small::raw_exchange(&mut s, 64, k, warm).await?;
            let t = Stopwatch::start();
            super::small::raw_exchange(&mut s, 64, k, n).await?;
            return Ok(t.elapsed());
        }
        let mut s = TcpStream::connect(a.echo).await?;
        s.set_nodelay(true)?;
        let mut b = [7u8; 64];
        let mut t = Stopwatch::start();
        for i in 0..warm + n {
            if i == warm {
                t = Stopwatch::start();
            }
            s.write_all(&b).await?;
            s.read_exact(&mut b).await?;
        }
        return Ok(t.elapsed());
    }
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
    if args.op != LoopOp::Null {
        let data = rpcrdma_demoprog::pattern(3, args.size);
        let k = args.outstanding.unwrap_or(8);
        rpc_calls(&c, warm, k, args.op, &data).await?;
        let t = Stopwatch::start();
        rpc_calls(&c, n, k, args.op, &data).await?;
        return Ok(t.elapsed());
    }
    let k = args.outstanding.unwrap_or(1);
    if k > 1 {
        super::small::null_lanes(&c, warm, k).await?;
        let t = Stopwatch::start();
        super::small::null_lanes(&c, n, k).await?;
        return Ok(t.elapsed());
    }
    let mut t = Stopwatch::start();
    for i in 0..warm + n {
        if i == warm {
            t = Stopwatch::start();
        }
        c.null(rpcrdma_demoprog::PROGRAM, rpcrdma_demoprog::VERSION)
            .await?;
    }
    Ok(t.elapsed())
}

/// `n` writes of `data` to the raw TCP sink; returns the octets sent.
async fn tcp_stream(
    addr: std::net::SocketAddr,
    size: usize,
    n: usize,
    data: &bytes::Bytes,
) -> anyhow::Result<usize> {
    let mut s = TcpStream::connect(addr).await?;
    s.set_nodelay(true)?;
    let total = size * n;
    s.write_all(&(total as u64).to_be_bytes()).await?;
    for _ in 0..n {
        s.write_all(data).await?;
    }
    let mut ack = [0u8; 1];
    s.read_exact(&mut ack).await?;
    Ok(total)
}

/// `n` READ or WRITE calls (`op`) of `data.len()` octets, `k`
/// outstanding.
async fn rpc_calls(
    c: &Client,
    n: usize,
    k: usize,
    op: LoopOp,
    data: &bytes::Bytes,
) -> anyhow::Result<()> {
    let k = k.max(1);
    let mut tasks = Vec::new();
    for w in 0..k {
        let (c, data) = (c.clone(), data.clone());
        let count = n / k + usize::from(w < n % k);
        tasks.push(tokio::spawn(async move {
            let d = rpcrdma_demoprog::DemoClient::new(c.clone());
            for _ in 0..count {
                match op {
                    LoopOp::Write | LoopOp::BareWrite => {
                        let r = if op == LoopOp::Write {
                            d.write(data.clone()).await?
                        } else {
                            let args = rpcrdma_demoprog::WriteArgs { data: data.clone() };
                            let ulb = rpcrdma_demoprog::ulb::write();
                            c.call::<_, rpcrdma_demoprog::WriteRes>(
                                BARE_PROG, 1, BARE_WRITE, &args, &ulb,
                            )
                            .await?
                        };
                        anyhow::ensure!(r.count as usize == data.len(), "WRITE: short count");
                    }
                    LoopOp::Read | LoopOp::Null => match d.read(1, data.len() as u32).await? {
                        rpcrdma_demoprog::ReadRes::DemoOk(r) if r.data.len() == data.len() => {}
                        _ => anyhow::bail!("READ: wrong amount of data"),
                    },
                }
            }
            Ok::<_, anyhow::Error>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
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
    let (n, path, op, size) = (args.round_trips, args.path, args.op, args.size);
    let k = args
        .outstanding
        .unwrap_or(if op == LoopOp::Null { 1 } else { 8 });
    let took = crate::cmd::runtime(crate::cmd::Scheduler::CurrentThread)?
        .block_on(provider.run(args.rdma.params(), LoopJob { args }))?;
    let path = path
        .to_possible_value()
        .map_or_else(|| "?".to_string(), |v| v.get_name().to_string());
    let (wall, cpu) = (took.wall.as_secs_f64(), took.cpu.as_secs_f64());
    if op == LoopOp::Null {
        if k > 1 {
            println!(
                "{n} round trips ({path}), {k} outstanding: {:.0} per second, {:.2} us of CPU each, {:.2} CPUs busy",
                n as f64 / wall,
                cpu * 1e6 / n as f64,
                took.cpus_busy()
            );
        } else {
            println!(
                "{n} round trips ({path}): {:.2} us each, {:.2} us of CPU each, {:.2} CPUs busy",
                wall * 1e6 / n as f64,
                cpu * 1e6 / n as f64,
                took.cpus_busy()
            );
        }
    } else {
        let mib = (n * size) as f64 / (1 << 20) as f64;
        let (what, how) = match op {
            LoopOp::Write => ("WRITEs", ""),
            LoopOp::BareWrite => ("WRITEs", " without the checksum"),
            _ => ("READs", ""),
        };
        let softirqd = took.softirqd.map_or_else(String::new, |t| {
            format!(
                ", {:.3} ms of ksoftirqd per MiB",
                t.as_secs_f64() * 1e3 / mib
            )
        });
        println!(
            "{n} {what} of {size} octets{how} ({path}): {:.0} MiB/s, {:.3} ms of CPU per MiB, {:.2} CPUs busy{softirqd}",
            mib / wall,
            cpu * 1e3 / mib,
            took.cpus_busy()
        );
    }
    Ok(ExitCode::SUCCESS)
}
