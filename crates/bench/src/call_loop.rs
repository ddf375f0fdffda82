//! The loop (`rpcrdma bench loop`): a fixed number of NULL round trips (or READ or
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

use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use anyhow::{anyhow, Context};
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{Client, ClientConfig};
use rpcrdma_transport::RdmaConnector;
use rpcrdma_verbs::Device;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use crate::cpu::{Elapsed, Stopwatch};
use crate::raw::raw_exchange;
use crate::rpc::{server, Addrs, RdmaSettings, BARE_PROG, BARE_WRITE};
use crate::small::null_lanes;
use crate::threads::on_thread;

/// What the loop repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopOp {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopPath {
    /// RPC-over-RDMA.
    Rdma,
    /// ONC RPC over TCP.
    OncrpcTcp,
    /// Raw TCP.
    RawTcp,
}

impl LoopPath {
    /// The path's name in the report (as `--path` takes it).
    pub fn name(self) -> &'static str {
        match self {
            LoopPath::Rdma => "rdma",
            LoopPath::OncrpcTcp => "oncrpc-tcp",
            LoopPath::RawTcp => "raw-tcp",
        }
    }
}

/// What the loop is asked to do.
#[derive(Debug, Clone)]
pub struct LoopSettings {
    /// Which path to use.
    pub path: LoopPath,
    /// What to repeat.
    pub op: LoopOp,
    /// Octets per READ or WRITE.
    pub size: usize,
    /// Calls kept outstanding (default: 1 for NULL, 8 for READ and WRITE).
    pub outstanding: Option<usize>,
    /// Round trips (or calls) after the warm-up.
    pub round_trips: usize,
    /// Round trips before counting starts.
    pub warm_up: usize,
    /// Run the client's loop as a task spawned on its runtime instead of
    /// as the runtime's `block_on` future.
    pub client_task: bool,
    /// The RPC-over-RDMA settings of both ends.
    pub rdma: RdmaSettings,
}

impl LoopSettings {
    /// Calls kept outstanding: as given, or 1 for NULL and 8 for READ and
    /// WRITE.
    pub fn depth(&self) -> usize {
        self.outstanding
            .unwrap_or(if self.op == LoopOp::Null { 1 } else { 8 })
    }
}

/// Runs the loop over `dev`: the bench server and the client each on a
/// thread of its own; the time the counted part took.
pub fn measure<D: Device + Clone>(
    args: LoopSettings,
    dev: D,
    options: D::Options,
) -> anyhow::Result<Elapsed> {
    let (atx, arx) = std_mpsc::channel();
    let (stop_tx, stop_rx) = oneshot::channel();
    let srv = on_thread(
        "bench-server",
        server(
            args.rdma.clone(),
            std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            dev.clone(),
            options.clone(),
            atx,
            stop_rx,
        ),
    );
    let Ok(addrs) = arx.recv_timeout(Duration::from_secs(30)) else {
        return Err(match srv.join() {
            Ok(Err(e)) => e.context("the benchmark server did not start"),
            _ => anyhow!("the benchmark server did not start"),
        });
    };
    let cli = if args.client_task {
        on_thread("bench-client", async move {
            tokio::spawn(client(args, dev, options, addrs))
                .await
                .map_err(|e| anyhow!("client task failed: {e}"))?
        })
    } else {
        on_thread("bench-client", client(args, dev, options, addrs))
    };
    let res = cli.join().map_err(|_| anyhow!("client thread panicked"));
    let _ = stop_tx.send(());
    let _ = srv.join();
    res?
}

async fn client<D: Device + Clone>(
    args: LoopSettings,
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
            raw_exchange(&mut s, 64, k, warm).await?;
            let t = Stopwatch::start();
            raw_exchange(&mut s, 64, k, n).await?;
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
        let connector = RdmaConnector::new(dev, a.rdma, args.rdma.client.clone())
            .options(options)
            .caps(args.rdma.caps);
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
        null_lanes(&c, warm, k).await?;
        let t = Stopwatch::start();
        null_lanes(&c, n, k).await?;
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

/// The loop's report: one line of the time per round trip (or the
/// throughput) and the CPU time per round trip (or per MiB), with the CPUs
/// kept busy.
pub fn text(s: &LoopSettings, took: &Elapsed) -> String {
    let (n, path, op, size, k) = (s.round_trips, s.path.name(), s.op, s.size, s.depth());
    let (wall, cpu) = (took.wall.as_secs_f64(), took.cpu.as_secs_f64());
    if op == LoopOp::Null {
        if k > 1 {
            format!(
                "{n} round trips ({path}), {k} outstanding: {:.0} per second, {:.2} us of CPU each, {:.2} CPUs busy",
                n as f64 / wall,
                cpu * 1e6 / n as f64,
                took.cpus_busy()
            )
        } else {
            format!(
                "{n} round trips ({path}): {:.2} us each, {:.2} us of CPU each, {:.2} CPUs busy",
                wall * 1e6 / n as f64,
                cpu * 1e6 / n as f64,
                took.cpus_busy()
            )
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
        format!(
            "{n} {what} of {size} octets{how} ({path}): {:.0} MiB/s, {:.3} ms of CPU per MiB, {:.2} CPUs busy{softirqd}",
            mib / wall,
            cpu * 1e3 / mib,
            took.cpus_busy()
        )
    }
}
