//! The run of a small-calls bench: the bench server on one thread, the
//! client with all its connections on another, and the rounds.

use std::time::Instant;

use anyhow::{anyhow, Context};
use bytes::Bytes;
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{Client, ClientConfig};
use rpcrdma_transport::RdmaConnector;
use rpcrdma_verbs::Device;
use tokio::net::TcpStream;

use super::lanes::{rate, raw_lanes, rpc_lanes, Op, Rate};
use crate::cpu::Stopwatch;
use crate::progress::ProgressRef;
use crate::raw::raw_exchange;
use crate::rpc::{Addrs, BenchServer, RdmaSettings, RpcSettings};
use crate::threads::on_thread;

/// Octets of a raw NULL message.
const RAW_NULL: usize = 64;
/// Most connections a small-calls run takes.
pub const MAX_CONNECTIONS: usize = 16;
/// Most calls outstanding per connection.
pub const MAX_DEPTH: usize = 1024;

/// What a small-calls run is asked to do.
#[derive(Debug, Clone, PartialEq)]
pub struct SmallSettings {
    /// Calls kept outstanding per connection, each depth measured in turn.
    pub depths: Vec<usize>,
    /// The second connection count (the first is 1; 1 measures only one
    /// connection).
    pub connections: usize,
    /// Seconds per measure.
    pub secs: f64,
    /// Rounds (the order of the paths flips every round).
    pub rounds: usize,
    /// ECHO's octets each way (0: NULL only; at most
    /// [`crate::rpc::MAX_ECHO`]).
    pub echo_size: usize,
}

impl SmallSettings {
    /// Measures per run (for a progress bar).
    pub fn measures(&self) -> u64 {
        let ops = if self.echo_size > 0 { 2 } else { 1 };
        let counts = if self.connections > 1 { 2 } else { 1 };
        (ops * counts * self.depths.len() * self.rounds) as u64
    }
}

/// Runs the small-calls bench over `dev`: the bench server (started with
/// `rpc`) and the client each on a thread of its own.
pub fn measure<D: Device + Clone>(
    rpc: &RpcSettings,
    small: &SmallSettings,
    dev: D,
    options: D::Options,
    bar: ProgressRef,
) -> anyhow::Result<Outcome> {
    let srv = BenchServer::start(&rpc.rdma, rpc.listen_ip, &dev, &options, on_thread)?;
    let addrs = srv.addrs;
    let (rdma, small) = (rpc.rdma.clone(), small.clone());
    let cli = on_thread("bench-client", async move {
        client(rdma, small, dev, options, addrs, bar).await
    });
    let res = cli.join().map_err(|_| anyhow!("client thread panicked"))?;
    srv.stop();
    res
}

/// One path's figures of one measure, one per round.
#[derive(Debug, Default, Clone)]
pub(crate) struct PathFigures {
    pub(crate) per_s: Vec<f64>,
    pub(crate) cpu_us_per_call: Vec<f64>,
}

impl PathFigures {
    fn push(&mut self, m: Rate) {
        self.per_s.push(m.per_s);
        self.cpu_us_per_call.push(m.cpu_us_per_call);
    }
}

/// One measure: an operation, a connection count, a depth.
#[derive(Debug, Clone)]
pub(crate) struct Measure {
    pub(crate) op: Op,
    pub(crate) connections: usize,
    pub(crate) depth: usize,
    pub(crate) rdma: PathFigures,
    pub(crate) oncrpc: PathFigures,
    pub(crate) raw: PathFigures,
    pub(crate) vs_oncrpc: Vec<f64>,
    pub(crate) vs_raw: Vec<f64>,
}

/// What a small-calls run measured: every measure's figures of every
/// round, and each round's raw TCP round trip (microseconds);
/// `SmallReport::new` makes the report of it.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub(crate) measures: Vec<Measure>,
    pub(crate) rtts_us: Vec<f64>,
}

/// The connections of one connection count, over the three paths.
struct Paths {
    rdma: Vec<Client>,
    oncrpc: Vec<Client>,
    raw: Vec<TcpStream>,
}

async fn connect<D: Device + Clone>(
    rdma: &RdmaSettings,
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
        let connector = RdmaConnector::new(dev.clone(), a.rdma, rdma.client.clone())
            .options(options.clone())
            .caps(rdma.caps);
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

async fn client<D: Device + Clone>(
    rdma: RdmaSettings,
    small: SmallSettings,
    dev: D,
    options: D::Options,
    a: Addrs,
    bar: ProgressRef,
) -> anyhow::Result<Outcome> {
    let counts: Vec<usize> = if small.connections > 1 {
        vec![1, small.connections]
    } else {
        vec![1]
    };
    let mut paths = Vec::new();
    for &n in &counts {
        paths.push(connect(&rdma, &dev, &options, &a, n).await?);
    }
    let ops: Vec<Op> = if small.echo_size > 0 {
        vec![Op::Null, Op::Echo]
    } else {
        vec![Op::Null]
    };
    let data = rpcrdma_demoprog::pattern(5, small.echo_size);
    let mut measures = Vec::new();
    for &op in &ops {
        for &n in &counts {
            for &depth in &small.depths {
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
    let secs = small.secs;
    let mut rtts_us = Vec::new();
    for round in 0..small.rounds {
        rtts_us.push(raw_rtt_us(&mut paths[0].raw[0]).await?);
        for m in &mut measures {
            let p = &mut paths[counts.iter().position(|&c| c == m.connections).unwrap_or(0)];
            bar.start(&format!(
                "round {}/{}: {} x{} on {} connection(s)",
                round + 1,
                small.rounds,
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
            bar.done();
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
