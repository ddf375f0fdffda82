//! Scaling (`rpcrdma bench --clients N[,N...]`): aggregate throughput of
//! N connections against one multi-threaded server, RPC-over-RDMA beside
//! ONC RPC/TCP with the same N, in one run.
//!
//! The server (the demo program over both transports, as `rpcrdma serve`)
//! runs on a multi-threaded tokio runtime with one worker per CPU. Each
//! client connection has a thread and a current-thread runtime of its own.
//! For every N of the list, and for each measure, the N client threads
//! start together (a barrier) and run for the measure's seconds:
//!
//! * NULL calls per second, each connection keeping its credits full (as
//!   many calls outstanding as the server grants credits; ONC RPC/TCP
//!   gets the same number);
//! * 1 MiB READ and 1 MiB WRITE octets per second, `outstanding` calls
//!   per connection.
//!
//! RPC-over-RDMA and ONC RPC/TCP run back to back per measure (the order
//! flips from measure to measure). The CPU time the whole process used
//! during each measure (`CLOCK_PROCESS_CPUTIME_ID`, `cpu.rs`) is reported
//! beside it: the aggregate grows with N until that reaches the number of
//! CPUs.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::anyhow;
use rpcrdma_demoprog::{pattern, PROGRAM, VERSION};
use rpcrdma_oncrpc::Client;
use rpcrdma_verbs::Device;
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::cpu::cpu_seconds;
use crate::progress::ProgressRef;
use crate::rpc::{BenchClients, BenchServer, RdmaSettings, RpcSettings};
use crate::stats::{median, MIB};
use crate::sweep::one_call;
use crate::threads::{on_all_cpus, on_thread};
use crate::wake::Seen;

/// Most connections a scaling run takes.
pub const MAX_CLIENTS: usize = 64;

/// What a scaling run is asked to do.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleSettings {
    /// The connection counts, each measured in turn.
    pub clients: Vec<usize>,
    /// Seconds per measure (6 measures per N).
    pub secs: f64,
}

/// What one measure moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// NULL calls, credits full.
    Null,
    /// 1 MiB READ calls.
    Read,
    /// 1 MiB WRITE calls.
    Write,
}

impl Kind {
    /// Every kind, in the order measured.
    pub const ALL: [Kind; 3] = [Kind::Null, Kind::Read, Kind::Write];

    /// The measure's name in the text report.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Null => "NULL",
            Kind::Read => "READ 1 MiB",
            Kind::Write => "WRITE 1 MiB",
        }
    }
}

/// One aggregate figure: what all N connections did together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Aggregate {
    /// Calls completed by all connections.
    pub calls: u64,
    /// Seconds from the common start to the last connection's end.
    pub secs: f64,
    /// CPU seconds the process used meanwhile (all threads, user + system).
    pub cpu_secs: f64,
}

impl Aggregate {
    /// Sums per-connection (calls, seconds) pairs: the time is the longest.
    pub fn of(per_connection: &[(u64, f64)], cpu_secs: f64) -> Self {
        Aggregate {
            calls: per_connection.iter().map(|(c, _)| c).sum(),
            secs: per_connection.iter().map(|(_, s)| *s).fold(0.0, f64::max),
            cpu_secs,
        }
    }

    /// Calls per second.
    pub fn rate(&self) -> f64 {
        if self.secs > 0.0 {
            self.calls as f64 / self.secs
        } else {
            f64::NAN
        }
    }

    /// CPUs kept busy on average (CPU seconds per second).
    pub fn cpus(&self) -> f64 {
        if self.secs > 0.0 {
            self.cpu_secs / self.secs
        } else {
            f64::NAN
        }
    }
}

/// The figures of one N.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Connections.
    pub clients: usize,
    /// Per [`Kind::ALL`]: (RPC-over-RDMA, ONC RPC/TCP).
    pub figures: Vec<(Kind, Aggregate, Aggregate)>,
    /// The median raw TCP round trip of one probe, microseconds.
    pub raw_tcp_rtt_us: f64,
}

/// Calls of `kind` on `c`, `k` outstanding, until `deadline`: (calls,
/// seconds from `start`).
async fn run_calls(
    c: &Client,
    kind: Kind,
    k: usize,
    start: Instant,
    deadline: Instant,
) -> anyhow::Result<(u64, f64)> {
    let data = pattern(5, MIB);
    let mut tasks = Vec::new();
    for _ in 0..k {
        let c = c.clone();
        let data = data.clone();
        tasks.push(tokio::spawn(async move {
            let mut calls = 0u64;
            while Instant::now() < deadline {
                match kind {
                    Kind::Null => c.null(PROGRAM, VERSION).await?,
                    Kind::Read => one_call(&c, MIB, false, &data).await?,
                    Kind::Write => one_call(&c, MIB, true, &data).await?,
                }
                calls += 1;
            }
            anyhow::Ok(calls)
        }));
    }
    let mut calls = 0;
    for t in tasks {
        calls += t.await??;
    }
    Ok((calls, start.elapsed().as_secs_f64()))
}

/// The median of 200 raw TCP 64-octet round trips to `echo`, microseconds.
async fn raw_probe(echo: SocketAddr) -> anyhow::Result<f64> {
    let mut s = TcpStream::connect(echo).await?;
    s.set_nodelay(true)?;
    let mut b = [7u8; 64];
    let mut v = Vec::with_capacity(200);
    for _ in 0..200 {
        let t = Instant::now();
        s.write_all(&b).await?;
        s.read_exact(&mut b).await?;
        v.push(t.elapsed().as_secs_f64() * 1e6);
    }
    Ok(median(v))
}

/// One measure's plan, sent to every client thread.
#[derive(Debug, Clone, Copy)]
struct Plan {
    kind: Kind,
    rdma: bool,
    outstanding: usize,
}

/// A client thread: one connection per transport, then every planned
/// measure, each started with the others at the barrier.
#[allow(clippy::too_many_arguments)]
async fn client<D: Device + Clone>(
    rdma: RdmaSettings,
    dev: D,
    options: D::Options,
    rdma_addr: SocketAddr,
    tcp_addr: SocketAddr,
    plans: Vec<Plan>,
    secs: f64,
    barrier: Arc<Barrier>,
) -> anyhow::Result<Vec<(u64, f64)>> {
    let mut waited = 0;
    let r = async {
        let BenchClients { rdma, tcp, .. } =
            BenchClients::connect(&rdma, dev, options, rdma_addr, tcp_addr).await?;
        let mut out = Vec::new();
        for p in &plans {
            // Every thread is idle here; the barrier starts them together.
            barrier.wait();
            waited += 1;
            let start = Instant::now();
            let deadline = start + Duration::from_secs_f64(secs);
            let c = if p.rdma { &rdma } else { &tcp };
            out.push(run_calls(c, p.kind, p.outstanding, start, deadline).await?);
        }
        anyhow::Ok(out)
    }
    .await;
    if r.is_err() {
        // The others (and the coordinator) still meet at every barrier.
        for _ in waited..plans.len() {
            barrier.wait();
        }
    }
    r
}

/// The plans of one N: each kind, both transports, the order flipping.
fn plans(credits: usize, outstanding: usize) -> Vec<Plan> {
    let mut v = Vec::new();
    for (i, kind) in Kind::ALL.into_iter().enumerate() {
        let k = if kind == Kind::Null {
            credits
        } else {
            outstanding
        };
        for rdma in [i % 2 == 0, i % 2 == 1] {
            v.push(Plan {
                kind,
                rdma,
                outstanding: k,
            });
        }
    }
    v
}

/// The figures of a scaling run, and how its calls were kept outstanding.
#[derive(Debug, Clone, PartialEq)]
pub struct Scaling {
    /// One per connection count.
    pub steps: Vec<Step>,
    /// The provider's label.
    pub label: String,
    /// NULL calls outstanding per connection (the credits).
    pub credits: usize,
    /// 1 MiB calls outstanding per connection.
    pub outstanding: usize,
    /// CPUs this process may use.
    pub cpus: usize,
    /// Seconds per measure.
    pub secs: f64,
}

/// Runs the scaling measures over `dev`: the bench server (started with
/// `rpc`) on a runtime with a worker per CPU, every N of `sc` with that
/// many client threads; `label` names the provider in the result.
pub async fn measure<D: Device + Clone>(
    rpc: &RpcSettings,
    sc: &ScaleSettings,
    dev: D,
    options: D::Options,
    label: String,
    bar: ProgressRef,
) -> anyhow::Result<Scaling> {
    let srv = BenchServer::start(&rpc.rdma, rpc.listen_ip, &dev, &options, on_all_cpus)?;
    let a = srv.addrs;
    let credits = rpc
        .rdma
        .client
        .credits_request
        .min(rpc.rdma.server.credits_grant)
        .max(1) as usize;
    let plan = plans(credits, rpc.outstanding.max(1));
    let mut steps = Vec::new();
    let result = async {
        for &n in &sc.clients {
            bar.start(&format!("{n} clients: raw TCP probe"));
            let raw = on_thread("bench-probe", raw_probe(a.echo))
                .join()
                .map_err(|_| anyhow!("probe thread panicked"))??;
            let barrier = Arc::new(Barrier::new(n + 1));
            let threads: Vec<_> = (0..n)
                .map(|i| {
                    on_thread(
                        &format!("bench-client-{i}"),
                        client(
                            rpc.rdma.clone(),
                            dev.clone(),
                            options.clone(),
                            a.rdma,
                            a.rpc_tcp,
                            plan.clone(),
                            sc.secs,
                            barrier.clone(),
                        ),
                    )
                })
                .collect();
            let mut cpu = Vec::new();
            for p in &plan {
                bar.start(&format!(
                    "{n} clients: {} {}",
                    if p.rdma {
                        "RPC-over-RDMA"
                    } else {
                        "ONC RPC/TCP"
                    },
                    p.kind.name()
                ));
                // Waits until every client connected (first plan) or
                // finished the previous measure.
                let b = barrier.clone();
                tokio::task::spawn_blocking(move || b.wait()).await?;
                let before = cpu_seconds();
                cpu.push(before);
                bar.done();
            }
            let mut per_thread = Vec::new();
            for t in threads {
                per_thread.push(t.join().map_err(|_| anyhow!("client thread panicked"))??);
            }
            let end = cpu_seconds();
            // CPU time of measure j: from its start to the next's.
            let mut figures = Vec::new();
            for (j, pair) in plan.chunks(2).enumerate() {
                let agg = |idx: usize| {
                    let runs: Vec<(u64, f64)> = per_thread.iter().map(|r| r[idx]).collect();
                    let next = cpu.get(idx + 1).copied().unwrap_or(end);
                    Aggregate::of(&runs, next - cpu[idx])
                };
                let (x, y) = (agg(2 * j), agg(2 * j + 1));
                let (ours, theirs) = if pair[0].rdma { (x, y) } else { (y, x) };
                figures.push((pair[0].kind, ours, theirs));
            }
            steps.push(Step {
                clients: n,
                figures,
                raw_tcp_rtt_us: raw,
            });
        }
        anyhow::Ok(())
    }
    .await;
    srv.stop();
    result?;
    Ok(Scaling {
        steps,
        label,
        credits,
        outstanding: rpc.outstanding,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        secs: sc.secs,
    })
}

/// The figure of `a`: calls/s, which for the 1 MiB calls is MiB/s.
fn figure(_kind: Kind, a: &Aggregate) -> f64 {
    a.rate()
}

/// One measure of one N in the JSON: both transports' figures, their
/// ratio and the CPUs each kept busy.
#[derive(Serialize)]
struct PairJson {
    rpcrdma: f64,
    oncrpc_tcp: f64,
    ratio: f64,
    rpcrdma_cpus_busy: f64,
    oncrpc_tcp_cpus_busy: f64,
}

/// One N in the JSON: every measure under its name.
#[derive(Serialize)]
struct StepJson {
    clients: usize,
    #[serde(flatten)]
    figures: BTreeMap<&'static str, PairJson>,
    raw_tcp_rtt_us: f64,
}

/// The scaling run's JSON object.
#[derive(Serialize)]
struct ScalingJson<'a> {
    bench: &'static str,
    provider: &'a str,
    setup: &'static str,
    cpus: usize,
    seconds_per_measure: f64,
    null_outstanding_per_connection: usize,
    io_outstanding_per_connection: usize,
    steps: Vec<StepJson>,
    wake_state: Seen,
}

impl Scaling {
    /// The wake-up state the raw TCP probes of every N say.
    pub fn seen(&self) -> Seen {
        let v: Vec<f64> = self.steps.iter().map(|s| s.raw_tcp_rtt_us).collect();
        Seen::from_rtts(&v)
    }

    /// The scaling run as one JSON object.
    pub fn json(&self) -> serde_json::Value {
        let key = |k: Kind| match k {
            Kind::Null => "null_calls_per_s",
            Kind::Read => "read_1mib_mib_per_s",
            Kind::Write => "write_1mib_mib_per_s",
        };
        let steps = self
            .steps
            .iter()
            .map(|s| StepJson {
                clients: s.clients,
                figures: s
                    .figures
                    .iter()
                    .map(|(k, ours, theirs)| {
                        let pair = PairJson {
                            rpcrdma: figure(*k, ours),
                            oncrpc_tcp: figure(*k, theirs),
                            ratio: figure(*k, ours) / figure(*k, theirs),
                            rpcrdma_cpus_busy: ours.cpus(),
                            oncrpc_tcp_cpus_busy: theirs.cpus(),
                        };
                        (key(*k), pair)
                    })
                    .collect(),
                raw_tcp_rtt_us: s.raw_tcp_rtt_us,
            })
            .collect();
        let v = ScalingJson {
            bench: "clients",
            provider: &self.label,
            setup: "loopback; the server on a multi-threaded tokio runtime (one worker per CPU), each client connection on a thread and current-thread runtime of its own; measures start together",
            cpus: self.cpus,
            seconds_per_measure: self.secs,
            null_outstanding_per_connection: self.credits,
            io_outstanding_per_connection: self.outstanding,
            steps,
            wake_state: self.seen(),
        };
        serde_json::to_value(v).expect("a report serializes")
    }

    /// The scaling run as a table.
    pub fn text(&self) -> String {
        let (label, cpus, credits, outstanding) =
            (&self.label, self.cpus, self.credits, self.outstanding);
        let mut o = String::new();
        let _ = writeln!(
            o,
            "scaling: RPC-over-RDMA ({label}) vs ONC RPC/TCP, N connections, server on {cpus} CPUs; NULL with {credits} outstanding per connection (credits full), 1 MiB with {outstanding}"
        );
        let _ = writeln!(
            o,
            "{:>3} {:<12} {:>14} {:>14} {:>7}   {:>10}",
            "N", "measure", "RPC-over-RDMA", "ONC RPC/TCP", "ratio", "CPUs busy"
        );
        for s in &self.steps {
            for (k, ours, theirs) in &s.figures {
                let unit = if *k == Kind::Null { "/s" } else { "MiB/s" };
                let (a, b) = (figure(*k, ours), figure(*k, theirs));
                let _ = writeln!(
                    o,
                    "{:>3} {:<12} {:>14} {:>14} {:>7.2}   {:>4.1} / {:<4.1}",
                    s.clients,
                    k.name(),
                    format!("{a:.0} {unit}"),
                    format!("{b:.0} {unit}"),
                    a / b,
                    ours.cpus(),
                    theirs.cpus()
                );
            }
        }
        let _ = writeln!(o, "{}", self.seen().line());
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregate_sums_calls_over_the_longest_time() {
        let a = Aggregate::of(&[(100, 1.0), (300, 2.0)], 3.0);
        assert_eq!(a.calls, 400);
        assert_eq!(a.secs, 2.0);
        assert_eq!(a.rate(), 200.0);
        assert_eq!(a.cpus(), 1.5);
        assert!(Aggregate::of(&[], 0.0).rate().is_nan());
    }

    #[test]
    fn plans_cover_each_kind_on_both_transports_alternating() {
        let p = plans(64, 8);
        assert_eq!(p.len(), 6);
        let order: Vec<(Kind, bool, usize)> =
            p.iter().map(|p| (p.kind, p.rdma, p.outstanding)).collect();
        assert_eq!(
            order,
            vec![
                (Kind::Null, true, 64),
                (Kind::Null, false, 64),
                (Kind::Read, false, 8),
                (Kind::Read, true, 8),
                (Kind::Write, true, 8),
                (Kind::Write, false, 8),
            ]
        );
    }

    #[test]
    fn text_and_json_report_every_n() {
        let agg = |calls| Aggregate {
            calls,
            secs: 2.0,
            cpu_secs: 3.0,
        };
        let steps: Vec<Step> = [1, 2]
            .into_iter()
            .map(|n| Step {
                clients: n,
                figures: vec![
                    (Kind::Null, agg(20_000 * n as u64), agg(10_000 * n as u64)),
                    (Kind::Read, agg(100), agg(50)),
                    (Kind::Write, agg(80), agg(100)),
                ],
                raw_tcp_rtt_us: 6.0,
            })
            .collect();
        let run = Scaling {
            steps,
            label: "software iWARP".into(),
            credits: 64,
            outstanding: 8,
            cpus: 2,
            secs: 2.0,
        };
        let t = run.text();
        assert!(t.contains("  2 NULL"), "{t}");
        assert!(t.contains("20000 /s"), "{t}");
        assert!(t.contains("1.5 / 1.5"), "{t}");
        assert!(t.contains("wake-up state: fast"), "{t}");
        let j = run.json();
        assert_eq!(j["steps"][1]["clients"], 2);
        assert_eq!(j["steps"][1]["null_calls_per_s"]["rpcrdma"], 20_000.0);
        assert_eq!(j["steps"][1]["null_calls_per_s"]["ratio"], 2.0);
        assert_eq!(j["steps"][0]["write_1mib_mib_per_s"]["ratio"], 0.8);
        assert_eq!(j["null_outstanding_per_connection"], 64);
        assert_eq!(j["wake_state"]["state"], "fast");
    }
}
