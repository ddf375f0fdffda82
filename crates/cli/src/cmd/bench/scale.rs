//! `rpcrdma bench --clients N[,N...]`: aggregate throughput of N
//! connections against one multi-threaded server, RPC-over-RDMA beside ONC
//! RPC/TCP with the same N, in one run.
//!
//! The server (the demo program over both transports, as `rpcrdma serve`)
//! runs on a multi-threaded tokio runtime with one worker per CPU. Each
//! client connection has a thread and a current-thread runtime of its own.
//! For every N of the list, and for each measure, the N client threads
//! start together (a barrier) and run for `--scale-secs` seconds:
//!
//! * NULL calls per second, each connection keeping its credits full (as
//!   many calls outstanding as the server grants credits; ONC RPC/TCP
//!   gets the same number);
//! * 1 MiB READ and 1 MiB WRITE octets per second, `--outstanding` calls
//!   per connection.
//!
//! RPC-over-RDMA and ONC RPC/TCP run back to back per measure (the order
//! flips from measure to measure). The CPU time the whole process used
//! during each measure (`CLOCK_PROCESS_CPUTIME_ID`, `cpu.rs`) is reported
//! beside it: the aggregate grows with N until that reaches the number of
//! CPUs.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rpcrdma_demoprog::{pattern, PROGRAM, VERSION};
use rpcrdma_oncrpc::Client;
use rpcrdma_verbs::Device;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::cpu::cpu_seconds;
use super::rpc::{BenchClients, BenchServer, RpcBenchArgs};
use super::sweep::one_call;
use super::wake::Seen;
use super::{num, on_thread};
use crate::cmd::provider::{Setup, WithDevice};

const MIB: usize = 1 << 20;

/// Most connections `--clients` accepts.
pub(crate) const MAX_CLIENTS: usize = 64;

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

/// What one measure moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// NULL calls, credits full.
    Null,
    /// 1 MiB READ calls.
    Read,
    /// 1 MiB WRITE calls.
    Write,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Null, Kind::Read, Kind::Write];

    fn name(self) -> &'static str {
        match self {
            Kind::Null => "NULL",
            Kind::Read => "READ 1 MiB",
            Kind::Write => "WRITE 1 MiB",
        }
    }
}

/// One aggregate figure: what all N connections did together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Aggregate {
    /// Calls completed by all connections.
    pub(crate) calls: u64,
    /// Seconds from the common start to the last connection's end.
    pub(crate) secs: f64,
    /// CPU seconds the process used meanwhile (all threads, user + system).
    pub(crate) cpu_secs: f64,
}

impl Aggregate {
    /// Sums per-connection (calls, seconds) pairs: the time is the longest.
    pub(crate) fn of(per_connection: &[(u64, f64)], cpu_secs: f64) -> Self {
        Aggregate {
            calls: per_connection.iter().map(|(c, _)| c).sum(),
            secs: per_connection.iter().map(|(_, s)| *s).fold(0.0, f64::max),
            cpu_secs,
        }
    }

    /// Calls per second.
    pub(crate) fn rate(&self) -> f64 {
        if self.secs > 0.0 {
            self.calls as f64 / self.secs
        } else {
            f64::NAN
        }
    }

    /// CPUs kept busy on average (CPU seconds per second).
    pub(crate) fn cpus(&self) -> f64 {
        if self.secs > 0.0 {
            self.cpu_secs / self.secs
        } else {
            f64::NAN
        }
    }
}

/// The figures of one N.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Step {
    /// Connections.
    pub(crate) clients: usize,
    /// Per [`Kind::ALL`]: (RPC-over-RDMA, ONC RPC/TCP).
    pub(crate) figures: Vec<(Kind, Aggregate, Aggregate)>,
    /// The median raw TCP round trip of one probe, microseconds.
    pub(crate) raw_tcp_rtt_us: f64,
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
    Ok(super::median(v))
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
    rpc: RpcBenchArgs,
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
            BenchClients::connect(&rpc.rdma, dev, options, rdma_addr, tcp_addr).await?;
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

/// The scaling run's threads over one provider.
struct Threads {
    rpc: RpcBenchArgs,
    sc: ScaleArgs,
    bar: ProgressBar,
}

/// Runs `f` on a fresh multi-threaded runtime (one worker per CPU) in a
/// new OS thread.
fn on_all_cpus<T, F>(name: &str, f: F) -> std::thread::JoinHandle<anyhow::Result<T>>
where
    T: Send + 'static,
    F: std::future::Future<Output = anyhow::Result<T>> + Send + 'static,
{
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_name("bench-server-worker")
                .build()
                .context("tokio runtime")?
                .block_on(f)
        })
        .expect("spawn thread")
}

impl WithDevice for Threads {
    type Output = (Vec<Step>, String, usize);

    async fn run<D: Device + Clone + std::fmt::Debug>(
        self,
        dev: D,
        setup: Setup<D>,
    ) -> anyhow::Result<(Vec<Step>, String, usize)> {
        let Threads { rpc, sc, bar } = self;
        let srv = BenchServer::start(&rpc, &dev, &setup.options, on_all_cpus)?;
        let a = srv.addrs;
        let credits = rpc
            .rdma
            .client()
            .credits_request
            .min(rpc.rdma.server().credits_grant)
            .max(1) as usize;
        let plan = plans(credits, rpc.outstanding.max(1));
        let mut steps = Vec::new();
        let result = async {
            for &n in &sc.clients {
                bar.set_message(format!("{n} clients: raw TCP probe"));
                let raw = on_thread("bench-probe", raw_probe(a.echo))
                    .join()
                    .map_err(|_| anyhow!("probe thread panicked"))??;
                let barrier = Arc::new(Barrier::new(n + 1));
                let threads: Vec<_> = (0..n)
                    .map(|i| {
                        on_thread(
                            &format!("bench-client-{i}"),
                            client(
                                rpc.clone(),
                                dev.clone(),
                                setup.options.clone(),
                                a.rdma,
                                a.rpc_tcp,
                                plan.clone(),
                                sc.scale_secs,
                                barrier.clone(),
                            ),
                        )
                    })
                    .collect();
                let mut cpu = Vec::new();
                for p in &plan {
                    bar.set_message(format!(
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
                    bar.inc(1);
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
        bar.finish_and_clear();
        result?;
        Ok((steps, setup.label, credits))
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
    let bar = ProgressBar::new((sc.clients.len() * 6) as u64);
    bar.set_style(
        ProgressStyle::with_template("clients {bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let provider = rpc.rdma.provider.clone();
    let (steps, label, credits) = crate::cmd::runtime(crate::cmd::Scheduler::CurrentThread)?
        .block_on(provider.run(
            rpc.rdma.params(),
            Threads {
                rpc: rpc.clone(),
                sc: sc.clone(),
                bar,
            },
        ))?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if rpc.json {
        println!(
            "{}",
            json(&steps, &label, credits, rpc.outstanding, cpus, &sc)
        );
    } else {
        print!("{}", text(&steps, &label, credits, rpc.outstanding, cpus));
    }
    Ok(ExitCode::SUCCESS)
}

/// The figure of `a`: calls/s, which for the 1 MiB calls is MiB/s.
fn figure(_kind: Kind, a: &Aggregate) -> f64 {
    a.rate()
}

fn seen(steps: &[Step]) -> Seen {
    let v: Vec<f64> = steps.iter().map(|s| s.raw_tcp_rtt_us).collect();
    Seen::from_rtts(&v)
}

/// The scaling run as one JSON object.
pub(crate) fn json(
    steps: &[Step],
    label: &str,
    credits: usize,
    outstanding: usize,
    cpus: usize,
    sc: &ScaleArgs,
) -> serde_json::Value {
    let key = |k: Kind| match k {
        Kind::Null => "null_calls_per_s",
        Kind::Read => "read_1mib_mib_per_s",
        Kind::Write => "write_1mib_mib_per_s",
    };
    let rows: Vec<serde_json::Value> = steps
        .iter()
        .map(|s| {
            let mut m = serde_json::Map::new();
            m.insert("clients".into(), s.clients.into());
            for (k, ours, theirs) in &s.figures {
                m.insert(
                    key(*k).into(),
                    serde_json::json!({
                        "rpcrdma": num(figure(*k, ours)),
                        "oncrpc_tcp": num(figure(*k, theirs)),
                        "ratio": num(figure(*k, ours) / figure(*k, theirs)),
                        "rpcrdma_cpus_busy": num(ours.cpus()),
                        "oncrpc_tcp_cpus_busy": num(theirs.cpus()),
                    }),
                );
            }
            m.insert("raw_tcp_rtt_us".into(), num(s.raw_tcp_rtt_us));
            m.into()
        })
        .collect();
    serde_json::json!({
        "bench": "clients",
        "provider": label,
        "setup": "loopback; the server on a multi-threaded tokio runtime (one worker per CPU), each client connection on a thread and current-thread runtime of its own; measures start together",
        "cpus": cpus,
        "seconds_per_measure": sc.scale_secs,
        "null_outstanding_per_connection": credits,
        "io_outstanding_per_connection": outstanding,
        "steps": rows,
        "wake_state": seen(steps).json(),
    })
}

/// The scaling run as a table.
pub(crate) fn text(
    steps: &[Step],
    label: &str,
    credits: usize,
    outstanding: usize,
    cpus: usize,
) -> String {
    use std::fmt::Write;
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
    for s in steps {
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
    let _ = writeln!(o, "{}", seen(steps).line());
    o
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
        let t = text(&steps, "software iWARP", 64, 8, 2);
        assert!(t.contains("  2 NULL"), "{t}");
        assert!(t.contains("20000 /s"), "{t}");
        assert!(t.contains("1.5 / 1.5"), "{t}");
        assert!(t.contains("wake-up state: fast"), "{t}");
        let sc = ScaleArgs {
            clients: vec![1, 2],
            scale_secs: 2.0,
        };
        let j = json(&steps, "software iWARP", 64, 8, 2, &sc);
        assert_eq!(j["steps"][1]["clients"], 2);
        assert_eq!(j["steps"][1]["null_calls_per_s"]["rpcrdma"], 20_000.0);
        assert_eq!(j["steps"][1]["null_calls_per_s"]["ratio"], 2.0);
        assert_eq!(j["steps"][0]["write_1mib_mib_per_s"]["ratio"], 0.8);
        assert_eq!(j["null_outstanding_per_connection"], 64);
        assert_eq!(j["wake_state"]["state"], "fast");
    }
}
