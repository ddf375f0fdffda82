//! `rpcrdma bench --small`: small calls by the million. NULL and ECHO
//! (`--small-echo-size` octets each way, 4 KiB by default) rates with 1,
//! 8, 32 and 128 calls outstanding (`--small-depths`), on one connection
//! and on `--small-connections` connections, over RPC-over-RDMA, ONC
//! RPC/TCP and a raw TCP exchange of messages of the same sizes kept as
//! many deep, in one run, with the ratios.
//!
//! The threads are those of `rpcrdma bench`: the bench server on one
//! thread (one current-thread runtime), every client connection on
//! another. With N connections each keeps the depth outstanding (N times
//! as many calls in flight). A call outstanding is a task that calls in
//! turn, so k tasks per connection keep k calls in flight.
//!
//! The raw TCP exchange is what a program that batches perfectly does
//! with the same messages: the client keeps k messages of the size in
//! flight, and each side reads what has arrived (up to 64 KiB at a time)
//! and answers every whole message in it with one write. A NULL's raw
//! message is 64 octets (an ONC RPC/TCP NULL call is 44, its reply 28;
//! over RPC-over-RDMA 128 and 104 with the MPA, DDP and RPC-over-RDMA
//! headers).
//!
//! # Method
//!
//! Every measure (path, operation, connections, depth) runs for
//! `--small-secs` and counts the calls that completed; the three paths of
//! a measure run back to back, RPC-over-RDMA in the middle, the order
//! flipped every round, and each ratio is taken within a round. The
//! report gives the median over `--small-rounds` rounds of every figure
//! and ratio, and the CPU time per call (every thread of the process,
//! both ends and the kernel's work in their system calls).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use bytes::Bytes;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{CallHints, Client, ClientConfig, RpcError};
use rpcrdma_transport::RdmaConnector;
use rpcrdma_verbs::Device;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::cpu::Stopwatch;
use super::rpc::{pgo_line, Addrs, BenchServer, RpcBenchArgs, BARE_ECHO, BARE_PROG};
use super::wake::Seen;
use super::{median, num, on_thread};
use crate::cmd::provider::{Setup, WithDevice};

/// Largest `--small-echo-size`.
pub(crate) const MAX_ECHO: usize = 64 * 1024;
/// Octets of a raw NULL message.
const RAW_NULL: usize = 64;
/// Most a raw exchange reads at once.
const RAW_READ: usize = 64 * 1024;
/// Most connections `--small-connections` takes.
const MAX_CONNECTIONS: usize = 16;
/// Most calls outstanding per connection.
const MAX_DEPTH: usize = 1024;

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

/// The operation of a measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Null,
    Echo,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Null => "null",
            Op::Echo => "echo",
        }
    }
}

/// One path's figures of one measure, one per round.
#[derive(Default, Clone)]
struct PathFigures {
    per_s: Vec<f64>,
    cpu_us_per_call: Vec<f64>,
}

impl PathFigures {
    fn push(&mut self, m: Rate) {
        self.per_s.push(m.per_s);
        self.cpu_us_per_call.push(m.cpu_us_per_call);
    }
}

/// One measure: an operation, a connection count, a depth.
#[derive(Clone)]
struct Measure {
    op: Op,
    connections: usize,
    depth: usize,
    rdma: PathFigures,
    oncrpc: PathFigures,
    raw: PathFigures,
    vs_oncrpc: Vec<f64>,
    vs_raw: Vec<f64>,
}

/// Calls per second and CPU per call of one measure.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rate {
    per_s: f64,
    cpu_us_per_call: f64,
}

fn rate(calls: usize, t: Stopwatch) -> Rate {
    let e = t.elapsed();
    let calls = calls.max(1) as f64;
    Rate {
        per_s: calls / e.wall.as_secs_f64().max(1e-9),
        cpu_us_per_call: e.cpu.as_secs_f64() * 1e6 / calls,
    }
}

/// `n` NULL calls on `c`, `k` outstanding (`k` tasks calling in turn).
pub(crate) async fn null_lanes(c: &Client, n: usize, k: usize) -> anyhow::Result<()> {
    let k = k.clamp(1, n.max(1));
    let mut tasks = Vec::with_capacity(k);
    for w in 0..k {
        let c = c.clone();
        let count = n / k + usize::from(w < n % k);
        tasks.push(tokio::spawn(async move {
            for _ in 0..count {
                c.null(rpcrdma_demoprog::PROGRAM, rpcrdma_demoprog::VERSION)
                    .await?;
            }
            Ok::<_, RpcError>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

/// The bench's ECHO argument and result: variable-length opaque data,
/// inline (not DDP-eligible), at most [`MAX_ECHO`] octets.
#[derive(Debug, Clone)]
pub(crate) struct Opaque(pub(crate) Bytes);

impl rpcrdma_oncrpc::Marshal for Opaque {
    fn marshal(&self, enc: &mut rpcrdma_xdr::Encoder<'_>) {
        enc.put_opaque(&self.0);
    }
}

impl rpcrdma_oncrpc::Unmarshal for Opaque {
    fn unmarshal(dec: &mut rpcrdma_xdr::Decoder<'_>) -> Result<Self, rpcrdma_xdr::XdrError> {
        dec.get_opaque_bytes(MAX_ECHO as u32).map(Opaque)
    }
}

/// The hints of the bench's ECHO: its results are at most as large as its
/// arguments.
fn echo_hints(size: usize) -> CallHints {
    CallHints::new().max_results(u32::try_from(size + 4).unwrap_or(u32::MAX))
}

/// Calls on every client of `clients`, `k` outstanding on each, until
/// `secs` have passed; the number that completed.
async fn rpc_lanes(
    clients: &[Client],
    op: Op,
    k: usize,
    secs: f64,
    data: &Bytes,
) -> anyhow::Result<usize> {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let hints = Arc::new(echo_hints(data.len()));
    let data = Opaque(data.clone());
    let mut tasks = Vec::with_capacity(k * clients.len());
    for c in clients {
        for _ in 0..k {
            let (c, data, hints) = (c.clone(), data.clone(), hints.clone());
            tasks.push(tokio::spawn(async move {
                let mut done = 0usize;
                while Instant::now() < end {
                    match op {
                        Op::Null => {
                            c.null(rpcrdma_demoprog::PROGRAM, rpcrdma_demoprog::VERSION)
                                .await?
                        }
                        Op::Echo => {
                            let r: Opaque = c.call(BARE_PROG, 1, BARE_ECHO, &data, &hints).await?;
                            anyhow::ensure!(r.0.len() == data.0.len(), "ECHO: wrong length");
                        }
                    }
                    done += 1;
                }
                Ok::<_, anyhow::Error>(done)
            }));
        }
    }
    let mut done = 0;
    for t in tasks {
        done += t.await??;
    }
    Ok(done)
}

/// The raw TCP exchange on `s`: `n` messages of `size` octets answered,
/// `k` kept in flight (see the module docs); the batch echo endpoint
/// answers them.
pub(crate) async fn raw_exchange(
    s: &mut TcpStream,
    size: usize,
    k: usize,
    n: usize,
) -> anyhow::Result<()> {
    raw_until(s, size, k, Some(n), None).await.map(|_| ())
}

/// [`raw_exchange`] until `n` messages were answered or `end` passed (the
/// messages in flight then are drained); the number answered.
async fn raw_until(
    s: &mut TcpStream,
    size: usize,
    k: usize,
    n: Option<usize>,
    end: Option<Instant>,
) -> anyhow::Result<usize> {
    let size = size.max(1);
    let out = vec![7u8; size * k.max(1)];
    let mut buf = vec![0u8; RAW_READ.max(size)];
    let (mut sent, mut got, mut partial) = (0usize, 0usize, 0usize);
    let more = |sent: usize| n.is_none_or(|n| sent < n) && end.is_none_or(|e| Instant::now() < e);
    let first = n.map_or(k, |n| k.min(n)).max(1);
    s.write_all(&out[..first * size]).await?;
    sent += first;
    while got < sent {
        let r = s.read(&mut buf).await?;
        if r == 0 {
            bail!("raw TCP exchange: the echo endpoint closed");
        }
        partial += r;
        let whole = partial / size;
        partial %= size;
        got += whole;
        if whole > 0 && more(sent) {
            let m = n.map_or(whole, |n| whole.min(n - sent));
            s.write_all(&out[..m * size]).await?;
            sent += m;
        }
    }
    Ok(got)
}

/// The batch echo endpoint's work on one connection: reads what has
/// arrived and writes it back with one write.
pub(crate) async fn batch_echo(mut s: TcpStream) {
    let mut buf = vec![0u8; RAW_READ];
    loop {
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if s.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Raw exchanges on every stream of `streams`, `k` deep each, for `secs`;
/// the messages answered.
async fn raw_lanes(
    streams: &mut Vec<TcpStream>,
    size: usize,
    k: usize,
    secs: f64,
) -> anyhow::Result<usize> {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut tasks = Vec::with_capacity(streams.len());
    for mut s in streams.drain(..) {
        tasks.push(tokio::spawn(async move {
            let r = raw_until(&mut s, size, k, None, Some(end)).await;
            (s, r)
        }));
    }
    let mut done = 0;
    let mut err = None;
    for t in tasks {
        let (s, r) = t.await?;
        streams.push(s);
        match r {
            Ok(d) => done += d,
            Err(e) => err = Some(e),
        }
    }
    match err {
        Some(e) => Err(e),
        None => Ok(done),
    }
}

/// The connections of one connection count, over the three paths.
struct Paths {
    rdma: Vec<Client>,
    oncrpc: Vec<Client>,
    raw: Vec<TcpStream>,
}

async fn connect<D: Device + Clone>(
    args: &RpcBenchArgs,
    dev: &D,
    options: &D::Options,
    a: &Addrs,
    n: usize,
) -> anyhow::Result<Paths> {
    let mut cfg = ClientConfig::default();
    cfg.max_in_flight = MAX_DEPTH;
    let mut p = Paths {
        rdma: Vec::new(),
        oncrpc: Vec::new(),
        raw: Vec::new(),
    };
    for _ in 0..n {
        let connector = RdmaConnector::new(dev.clone(), a.rdma, args.rdma.client())
            .options(options.clone())
            .caps(args.rdma.caps());
        p.rdma.push(
            Client::connect(connector, cfg.clone())
                .await
                .context("RPC-over-RDMA connect")?,
        );
        p.oncrpc.push(
            Client::connect(TcpConnector::new(a.rpc_tcp), cfg.clone())
                .await
                .context("ONC RPC/TCP connect")?,
        );
        let s = TcpStream::connect(a.batch_echo)
            .await
            .context("raw TCP connect")?;
        s.set_nodelay(true)?;
        p.raw.push(s);
    }
    Ok(p)
}

/// Mean raw TCP 64-octet round trip over 200 sequential exchanges, in
/// microseconds (the wake-up state of the round).
async fn raw_rtt_us(s: &mut TcpStream) -> anyhow::Result<f64> {
    let t = Instant::now();
    raw_exchange(s, RAW_NULL, 1, 200).await?;
    Ok(t.elapsed().as_secs_f64() * 1e6 / 200.0)
}

struct Job {
    args: RpcBenchArgs,
    small: SmallArgs,
    bar: ProgressBar,
}

struct Outcome {
    measures: Vec<Measure>,
    rtts_us: Vec<f64>,
}

impl WithDevice for Job {
    type Output = (Outcome, String);

    async fn run<D: Device + Clone + std::fmt::Debug>(
        self,
        dev: D,
        setup: Setup<D>,
    ) -> anyhow::Result<(Outcome, String)> {
        let Job { args, small, bar } = self;
        let srv = BenchServer::start(&args, &dev, &setup.options, on_thread)?;
        let addrs = srv.addrs;
        let options = setup.options.clone();
        let cli = on_thread("bench-client", async move {
            client(args, small, dev, options, addrs, bar).await
        });
        let res = cli
            .join()
            .map_err(|_| anyhow::anyhow!("client thread panicked"))?;
        srv.stop();
        Ok((res?, setup.label))
    }
}

async fn client<D: Device + Clone>(
    args: RpcBenchArgs,
    small: SmallArgs,
    dev: D,
    options: D::Options,
    a: Addrs,
    bar: ProgressBar,
) -> anyhow::Result<Outcome> {
    let counts: Vec<usize> = if small.small_connections > 1 {
        vec![1, small.small_connections]
    } else {
        vec![1]
    };
    let mut paths = Vec::new();
    for &n in &counts {
        paths.push(connect(&args, &dev, &options, &a, n).await?);
    }
    let ops: Vec<Op> = if small.small_echo_size > 0 {
        vec![Op::Null, Op::Echo]
    } else {
        vec![Op::Null]
    };
    let data = rpcrdma_demoprog::pattern(5, small.small_echo_size);
    let mut measures = Vec::new();
    for &op in &ops {
        for &n in &counts {
            for &depth in &small.small_depths {
                measures.push(Measure {
                    op,
                    connections: n,
                    depth,
                    rdma: PathFigures::default(),
                    oncrpc: PathFigures::default(),
                    raw: PathFigures::default(),
                    vs_oncrpc: Vec::new(),
                    vs_raw: Vec::new(),
                });
            }
        }
    }
    let secs = small.small_secs;
    let mut rtts_us = Vec::new();
    for round in 0..small.small_rounds {
        rtts_us.push(raw_rtt_us(&mut paths[0].raw[0]).await?);
        for m in &mut measures {
            let p = &mut paths[counts.iter().position(|&c| c == m.connections).unwrap_or(0)];
            bar.set_message(format!(
                "round {}/{}: {} x{} on {} connection(s)",
                round + 1,
                small.small_rounds,
                m.op.name(),
                m.depth,
                m.connections
            ));
            let size = match m.op {
                Op::Null => RAW_NULL,
                Op::Echo => data.len(),
            };
            let (k, op) = (m.depth, m.op);
            let (raw, rdma, oncrpc) = if round % 2 == 0 {
                let raw = measure_raw(&mut p.raw, size, k, secs)
                    .await
                    .context("raw TCP")?;
                let rdma = measure_rpc(&p.rdma, op, k, secs, &data)
                    .await
                    .context("RPC-over-RDMA")?;
                let oncrpc = measure_rpc(&p.oncrpc, op, k, secs, &data)
                    .await
                    .context("ONC RPC/TCP")?;
                (raw, rdma, oncrpc)
            } else {
                let oncrpc = measure_rpc(&p.oncrpc, op, k, secs, &data)
                    .await
                    .context("ONC RPC/TCP")?;
                let rdma = measure_rpc(&p.rdma, op, k, secs, &data)
                    .await
                    .context("RPC-over-RDMA")?;
                let raw = measure_raw(&mut p.raw, size, k, secs)
                    .await
                    .context("raw TCP")?;
                (raw, rdma, oncrpc)
            };
            m.vs_oncrpc.push(rdma.per_s / oncrpc.per_s);
            m.vs_raw.push(rdma.per_s / raw.per_s);
            m.rdma.push(rdma);
            m.oncrpc.push(oncrpc);
            m.raw.push(raw);
            bar.inc(1);
        }
    }
    Ok(Outcome { measures, rtts_us })
}

async fn measure_raw(
    raw: &mut Vec<TcpStream>,
    size: usize,
    k: usize,
    secs: f64,
) -> anyhow::Result<Rate> {
    let t = Stopwatch::start();
    let done = raw_lanes(raw, size, k, secs).await?;
    Ok(rate(done, t))
}

async fn measure_rpc(
    clients: &[Client],
    op: Op,
    k: usize,
    secs: f64,
    data: &Bytes,
) -> anyhow::Result<Rate> {
    let t = Stopwatch::start();
    let done = rpc_lanes(clients, op, k, secs, data).await?;
    Ok(rate(done, t))
}

/// The goals of issue 36 for NULL at 32 outstanding on one connection.
const GOAL_RATE: f64 = 1_000_000.0;
const GOAL_VS_ONCRPC: f64 = 2.0;
const GOAL_VS_RAW: f64 = 0.7;

/// How to read the report (said in every text report and in the JSON).
const NOTE: &str =
    "Each measure keeps DEPTH calls outstanding per connection (DEPTH tasks calling in \
turn) for --small-secs; with N connections, N times as many. The three paths of a measure run back \
to back (RPC-over-RDMA in the middle, the order flipped every round); the ratios are medians of \
per-round ratios. raw TCP: messages of the same size (NULL: 64 octets) kept DEPTH deep, each side \
reading what has arrived and answering it with one write. ECHO over RPC-over-RDMA with the default \
4096-octet inline thresholds: a 4 KiB ECHO's call and reply do not fit inline (Long messages, an \
RDMA Read and an RDMA Write per call). CPU per call: every thread of this process (both ends, \
with the kernel's work in their system calls) over the calls made.";

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
    let ops = if small.small_echo_size > 0 { 2 } else { 1 };
    let counts = if small.small_connections > 1 { 2 } else { 1 };
    let bar =
        ProgressBar::new((ops * counts * small.small_depths.len() * small.small_rounds) as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let provider = args.rdma.provider.clone();
    let (out, label) =
        crate::cmd::runtime(crate::cmd::Scheduler::CurrentThread)?.block_on(provider.run(
            args.rdma.params(),
            Job {
                args: args.clone(),
                small: small.clone(),
                bar: bar.clone(),
            },
        ))?;
    bar.finish_and_clear();
    let seen = Seen::from_rtts(&out.rtts_us);
    let goal = out
        .measures
        .iter()
        .find(|m| m.op == Op::Null && m.connections == 1 && m.depth == 32);
    if args.json {
        let fig = |f: &PathFigures| {
            serde_json::json!({
                "calls_per_s": num(median(f.per_s.clone())),
                "cpu_us_per_call": num(median(f.cpu_us_per_call.clone())),
                "per_round_calls_per_s": f.per_s.iter().map(|&x| num(x)).collect::<Vec<_>>(),
            })
        };
        let measures: Vec<serde_json::Value> = out
            .measures
            .iter()
            .map(|m| {
                serde_json::json!({
                    "op": m.op.name(),
                    "connections": m.connections,
                    "depth": m.depth,
                    "rpcrdma": fig(&m.rdma),
                    "oncrpc_tcp": fig(&m.oncrpc),
                    "raw_tcp": fig(&m.raw),
                    "rpcrdma_vs_oncrpc_tcp": num(median(m.vs_oncrpc.clone())),
                    "rpcrdma_vs_raw_tcp": num(median(m.vs_raw.clone())),
                    "per_round_rpcrdma_vs_oncrpc_tcp": m.vs_oncrpc.iter().map(|&x| num(x)).collect::<Vec<_>>(),
                    "per_round_rpcrdma_vs_raw_tcp": m.vs_raw.iter().map(|&x| num(x)).collect::<Vec<_>>(),
                })
            })
            .collect();
        let v = serde_json::json!({
            "bench": "small",
            "provider": label,
            "setup": "loopback; the bench server on one thread, every client connection on another, one current-thread tokio runtime each",
            "rounds": small.small_rounds,
            "secs_per_measure": small.small_secs,
            "depths": small.small_depths,
            "connections": small.small_connections,
            "echo_size": small.small_echo_size,
            "measures": measures,
            "goals": {
                "null_depth32_one_connection_calls_per_s": format!(">= {GOAL_RATE}"),
                "null_depth32_one_connection_vs_oncrpc_tcp": format!(">= {GOAL_VS_ONCRPC}"),
                "null_depth32_one_connection_vs_raw_tcp": format!(">= {GOAL_VS_RAW}"),
            },
            "goal_figures": goal.map(|m| serde_json::json!({
                "calls_per_s": num(median(m.rdma.per_s.clone())),
                "vs_oncrpc_tcp": num(median(m.vs_oncrpc.clone())),
                "vs_raw_tcp": num(median(m.vs_raw.clone())),
            })),
            "note": NOTE,
            "wake_state": seen.json(),
            "pgo_build": super::rpc::PGO_BUILD,
        });
        println!("{v}");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "Small calls ({label}): calls/s (median of {} rounds of {} s per measure) and CPU per call",
        small.small_rounds, small.small_secs
    );
    println!(
        "{:<5} {:>5} {:>5} {:>11} {:>11} {:>11} {:>9} {:>9} {:>22}",
        "op",
        "conns",
        "depth",
        "RPC/RDMA",
        "ONC/TCP",
        "raw TCP",
        "vs ONC",
        "vs raw",
        "CPU us/call (R/O/raw)"
    );
    for m in &out.measures {
        let cpu = |f: &PathFigures| median(f.cpu_us_per_call.clone());
        println!(
            "{:<5} {:>5} {:>5} {:>11.0} {:>11.0} {:>11.0} {:>9.2} {:>9.2} {:>22}",
            m.op.name(),
            m.connections,
            m.depth,
            median(m.rdma.per_s.clone()),
            median(m.oncrpc.per_s.clone()),
            median(m.raw.per_s.clone()),
            median(m.vs_oncrpc.clone()),
            median(m.vs_raw.clone()),
            format!(
                "{:.2}/{:.2}/{:.2}",
                cpu(&m.rdma),
                cpu(&m.oncrpc),
                cpu(&m.raw)
            ),
        );
    }
    if let Some(m) = goal {
        println!(
            "goals, NULL at 32 outstanding on one connection: {:.0} calls/s (goal >= {GOAL_RATE:.0}), {:.2} x ONC RPC/TCP (>= {GOAL_VS_ONCRPC}), {:.2} x raw TCP (>= {GOAL_VS_RAW})",
            median(m.rdma.per_s.clone()),
            median(m.vs_oncrpc.clone()),
            median(m.vs_raw.clone())
        );
    }
    println!("{NOTE}");
    println!("{}", seen.line());
    println!("{}", pgo_line());
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    #[tokio::test]
    async fn the_raw_exchange_answers_every_message_it_sent() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((s, _)) = l.accept().await {
                tokio::spawn(batch_echo(s));
            }
        });
        let mut s = TcpStream::connect(addr).await.unwrap();
        // Fewer messages than the depth, a count that is not a multiple
        // of it, and messages larger than one read.
        for (size, k, n) in [(64, 32, 5), (64, 8, 1001), (100_000, 3, 7)] {
            assert_eq!(raw_until(&mut s, size, k, Some(n), None).await.unwrap(), n);
        }
        // Until a time: whatever was sent is drained.
        let end = Instant::now() + Duration::from_millis(20);
        let got = raw_until(&mut s, 64, 16, None, Some(end)).await.unwrap();
        assert!(got >= 16);
        // Nothing is left over on the stream.
        assert_eq!(raw_until(&mut s, 64, 1, Some(1), None).await.unwrap(), 1);
    }

    #[test]
    fn echo_hints_cover_the_results() {
        assert_eq!(echo_hints(4096).results_limit(), Some(4100));
    }
}
