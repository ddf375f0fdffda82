//! `--metrics ADDR` of `rpcrdma serve` and `rpcrdma nfs serve`: the
//! server's counters in the Prometheus text format (version 0.0.4), served
//! over HTTP at `http://ADDR/metrics`, encoded by `prometheus-client` (the
//! Prometheus project's Rust client) at each scrape.
//!
//! What is counted, and where:
//!
//! * calls per program, version, procedure and RPC status, and their
//!   latency (dispatch to encoded reply) as a histogram: a
//!   [`CallObserver`] on the ONC RPC services ([`CallStats`]: one cell of
//!   atomics per procedure, chosen by a scan of the few programs served;
//!   no lock and no allocation per call). Without `--metrics` no observer
//!   is set and dispatch measures nothing;
//! * octets moved inline and by RDMA Read and RDMA Write, RDMA operations,
//!   transport errors, the credits granted now and the connections: the
//!   RPC-over-RDMA listener's counters ([`rpcrdma_transport::RdmaService::stats`],
//!   the engines' own, read at each scrape);
//! * open connections over every transport ([`Server::connection_count`]);
//! * the memory budget's use and limit;
//! * for `nfs serve`, the calls the exports refused.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use rpcrdma_engine::MemoryBudget;
use rpcrdma_oncrpc::{CallObserver, CallOutcome, Server};
use rpcrdma_transport::ListenerStats;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The `--metrics` option.
#[derive(Debug, Args)]
pub(crate) struct MetricsOpts {
    /// Serve metrics in the Prometheus text format at http://ADDR/metrics
    /// (e.g. 127.0.0.1:9469): calls per program and procedure with their
    /// status and latency, octets inline and by RDMA Read/Write, credits,
    /// connections, the memory budget. None by default.
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics: Option<String>,
}

/// Upper bounds of the latency histogram's buckets, in seconds.
const BUCKETS: [f64; 17] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0,
];
/// The same in nanoseconds.
const BUCKETS_NS: [u64; 17] = [
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];
/// Procedures counted one by one per program version; higher numbers
/// share one cell ("other").
const PROCS: usize = 32;

/// The counters of one procedure.
#[derive(Debug)]
struct Cell {
    outcomes: [AtomicU64; CallOutcome::ALL.len()],
    /// Per bucket, then one beyond the last bound (+Inf).
    buckets: [AtomicU64; BUCKETS.len() + 1],
    sum_ns: AtomicU64,
}

impl Cell {
    fn new() -> Self {
        Self {
            outcomes: std::array::from_fn(|_| AtomicU64::new(0)),
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_ns: AtomicU64::new(0),
        }
    }

    fn record(&self, outcome: CallOutcome, elapsed: Duration) {
        let ns = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        let b = BUCKETS_NS.partition_point(|&bound| bound < ns);
        self.outcomes[outcome.index()].fetch_add(1, Ordering::Relaxed);
        self.buckets[b].fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }
}

/// One program version served.
#[derive(Debug)]
struct Program {
    prog: u32,
    vers: u32,
    name: String,
    procs: Vec<Cell>,
}

/// The names of well-known programs and their procedures.
fn names(prog: u32, vers: u32) -> (String, &'static [&'static str]) {
    const NFS3: &[&str] = &[
        "null",
        "getattr",
        "setattr",
        "lookup",
        "access",
        "readlink",
        "read",
        "write",
        "create",
        "mkdir",
        "symlink",
        "mknod",
        "remove",
        "rmdir",
        "rename",
        "link",
        "readdir",
        "readdirplus",
        "fsstat",
        "fsinfo",
        "pathconf",
        "commit",
    ];
    const NFS4: &[&str] = &["null", "compound"];
    const MOUNT3: &[&str] = &["null", "mnt", "dump", "umnt", "umntall", "export"];
    const DEMO: &[&str] = &["null", "echo", "read", "write", "callbacks"];
    match (prog, vers) {
        (100_003, 3) => ("nfs".into(), NFS3),
        (100_003, 4) => ("nfs".into(), NFS4),
        (100_005, 3) => ("mount".into(), MOUNT3),
        (p, 1) if p == rpcrdma_demoprog::PROGRAM => ("demo".into(), DEMO),
        (p, _) => (p.to_string(), &[]),
    }
}

/// Calls per program, version and procedure: their RPC status and
/// latency. One cell of atomics per procedure, found by a scan of the
/// program versions served (a handful): no lock, no allocation per call.
#[derive(Debug)]
pub(crate) struct CallStats {
    programs: Vec<Program>,
    /// Calls to a program or version not served, and undecodable ones.
    other: Cell,
}

impl CallStats {
    /// Cells for the program versions `served` (`Services::registrations`).
    pub(crate) fn new(served: &[(u32, u32)]) -> Arc<Self> {
        Arc::new(Self {
            programs: served
                .iter()
                .map(|&(prog, vers)| Program {
                    prog,
                    vers,
                    name: names(prog, vers).0,
                    procs: (0..=PROCS).map(|_| Cell::new()).collect(),
                })
                .collect(),
            other: Cell::new(),
        })
    }

    fn cell(&self, prog: u32, vers: u32, proc_: u32) -> &Cell {
        match self
            .programs
            .iter()
            .find(|p| p.prog == prog && p.vers == vers)
        {
            Some(p) => &p.procs[(proc_ as usize).min(PROCS)],
            None => &self.other,
        }
    }
}

impl CallObserver for CallStats {
    fn call_done(&self, prog: u32, vers: u32, proc_: u32, outcome: CallOutcome, elapsed: Duration) {
        self.cell(prog, vers, proc_).record(outcome, elapsed);
    }
}

/// Where the counters of a scrape come from.
pub(crate) struct Sources {
    pub(crate) calls: Arc<CallStats>,
    pub(crate) server: Server,
    pub(crate) rdma: Box<dyn Fn() -> ListenerStats + Send + Sync>,
    pub(crate) budget: MemoryBudget,
    /// Calls the exports refused (`nfs serve`).
    pub(crate) refused: Option<Box<dyn Fn() -> u64 + Send + Sync>>,
}

impl std::fmt::Debug for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sources").finish_non_exhaustive()
    }
}

fn counter(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: &[(&[(&str, &str)], u64)],
) -> std::fmt::Result {
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, v) in rows {
        if labels.is_empty() {
            m.encode_counter::<NoLabelSet, _, u64>(v, None)?;
        } else {
            m.encode_family(labels)?
                .encode_counter::<NoLabelSet, _, u64>(v, None)?;
        }
    }
    Ok(())
}

fn gauge(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: &[(&[(&str, &str)], u64)],
) -> std::fmt::Result {
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, v) in rows {
        if labels.is_empty() {
            m.encode_gauge(v)?;
        } else {
            m.encode_family(labels)?.encode_gauge(v)?;
        }
    }
    Ok(())
}

impl Collector for Sources {
    fn encode(&self, mut enc: DescriptorEncoder) -> std::fmt::Result {
        // Calls.
        let mut cells: Vec<(String, String, String, &Cell)> = Vec::new();
        for p in &self.calls.programs {
            let (_, procs) = names(p.prog, p.vers);
            for (i, c) in p.procs.iter().enumerate() {
                let proc_ = if i == PROCS {
                    "other".to_owned()
                } else {
                    procs
                        .get(i)
                        .map_or_else(|| i.to_string(), |n| (*n).to_owned())
                };
                cells.push((p.name.clone(), p.vers.to_string(), proc_, c));
            }
        }
        cells.push(("other".into(), "".into(), "".into(), &self.calls.other));
        {
            let mut m = enc.encode_descriptor(
                "rpc_calls",
                "ONC RPC calls answered (or dropped), by program, version, procedure and RPC status",
                None,
                MetricType::Counter,
            )?;
            for (prog, vers, proc_, c) in &cells {
                for o in CallOutcome::ALL {
                    let n = c.outcomes[o.index()].load(Ordering::Relaxed);
                    if n == 0 {
                        continue;
                    }
                    let labels = [
                        ("program", prog.as_str()),
                        ("version", vers.as_str()),
                        ("procedure", proc_.as_str()),
                        ("status", o.name()),
                    ];
                    m.encode_family(&labels)?
                        .encode_counter::<NoLabelSet, _, u64>(&n, None)?;
                }
            }
        }
        {
            let mut m = enc.encode_descriptor(
                "rpc_call_duration_seconds",
                "Time from a call's dispatch to its encoded reply, by program, version and procedure",
                None,
                MetricType::Histogram,
            )?;
            for (prog, vers, proc_, c) in &cells {
                let counts: Vec<u64> = c
                    .buckets
                    .iter()
                    .map(|b| b.load(Ordering::Relaxed))
                    .collect();
                let count: u64 = counts.iter().sum();
                if count == 0 {
                    continue;
                }
                let mut buckets: Vec<(f64, u64)> = BUCKETS
                    .iter()
                    .copied()
                    .zip(counts.iter().copied())
                    .collect();
                buckets.push((f64::INFINITY, counts[BUCKETS.len()]));
                let sum = c.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
                let labels = [
                    ("program", prog.as_str()),
                    ("version", vers.as_str()),
                    ("procedure", proc_.as_str()),
                ];
                m.encode_family(&labels)?
                    .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
            }
        }
        // RPC-over-RDMA.
        let r = (self.rdma)();
        let e = &r.engine;
        counter(
            &mut enc,
            "rdma_inline_bytes",
            "Octets sent and received inline over RPC-over-RDMA (Sends and receives: transport headers and inline messages)",
            &[
                (&[("direction", "sent")], e.inline_sent_bytes),
                (&[("direction", "received")], e.inline_received_bytes),
            ],
        )?;
        counter(
            &mut enc,
            "rdma_read_bytes",
            "Octets pulled from clients by RDMA Read (Read chunks)",
            &[(&[], e.rdma_read_bytes)],
        )?;
        counter(
            &mut enc,
            "rdma_write_bytes",
            "Octets pushed to clients by RDMA Write (Write and Reply chunks)",
            &[(&[], e.rdma_write_bytes)],
        )?;
        counter(
            &mut enc,
            "rdma_operations",
            "RDMA Read and RDMA Write operations posted",
            &[
                (&[("op", "read")], e.rdma_reads),
                (&[("op", "write")], e.rdma_writes),
            ],
        )?;
        counter(
            &mut enc,
            "rdma_messages",
            "RPC-over-RDMA calls received and replies sent",
            &[
                (&[("kind", "call_received")], e.calls_received),
                (&[("kind", "reply_sent")], e.replies_sent),
            ],
        )?;
        counter(
            &mut enc,
            "rdma_errors",
            "RPC-over-RDMA errors: RDMA_ERROR sent and received, messages rejected, calls beyond the grant, calls refused for memory or size",
            &[
                (&[("kind", "rdma_error_sent")], e.rdma_errors_sent),
                (&[("kind", "rdma_error_received")], e.rdma_errors_received),
                (&[("kind", "bad_message")], e.bad_messages),
                (&[("kind", "credit_overrun")], e.credit_overruns),
                (&[("kind", "refused_for_memory")], e.calls_refused_for_memory),
                (&[("kind", "refused_too_large")], e.calls_refused_too_large),
            ],
        )?;
        gauge(
            &mut enc,
            "rdma_credits_granted",
            "Credits the open RPC-over-RDMA connections grant their clients now",
            &[(&[], r.credits_granted)],
        )?;
        counter(
            &mut enc,
            "rdma_connections_accepted",
            "RPC-over-RDMA connections accepted",
            &[(&[], r.accepted)],
        )?;
        let all = self.server.connection_count() as u64;
        let rdma = r.open as u64;
        gauge(
            &mut enc,
            "connections",
            "Connections open now, by transport",
            &[
                (&[("transport", "rdma")], rdma),
                (&[("transport", "tcp")], all.saturating_sub(rdma)),
            ],
        )?;
        gauge(
            &mut enc,
            "memory_in_use_bytes",
            "Octets of the memory budget (--max-memory) held now by connections and calls",
            &[(&[], self.budget.in_use())],
        )?;
        gauge(
            &mut enc,
            "memory_limit_bytes",
            "The memory budget (--max-memory)",
            &[(&[], self.budget.limit())],
        )?;
        if let Some(refused) = &self.refused {
            counter(
                &mut enc,
                "nfs_access_refused",
                "NFS and MOUNT calls refused because the exports do not list the client for the export",
                &[(&[], refused())],
            )?;
        }
        Ok(())
    }
}

/// The response to one HTTP request.
fn respond(request_line: &str, registry: &Registry) -> (String, &'static str, String) {
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    match (method, path) {
        ("GET", "/metrics") => {
            let mut body = String::new();
            match prometheus_client::encoding::prometheus_text::encode(&mut body, registry) {
                Ok(()) => (
                    "200 OK".into(),
                    prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
                    body,
                ),
                Err(_) => (
                    "500 Internal Server Error".into(),
                    "text/plain",
                    "encoding failed\n".into(),
                ),
            }
        }
        ("GET", "/") => (
            "200 OK".into(),
            "text/plain; charset=utf-8",
            "rpcrdma: metrics at /metrics\n".into(),
        ),
        ("GET", _) => (
            "404 Not Found".into(),
            "text/plain",
            "not found: try /metrics\n".into(),
        ),
        _ => (
            "405 Method Not Allowed".into(),
            "text/plain",
            "only GET\n".into(),
        ),
    }
}

/// Longest request head read.
const MAX_HEAD: usize = 8192;

/// Answers one HTTP/1.x connection: one request, then close.
async fn answer(mut s: tokio::net::TcpStream, registry: Arc<Registry>) {
    let mut head = Vec::with_capacity(512);
    let read = async {
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
            let n = s.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        Ok::<_, std::io::Error>(())
    };
    if tokio::time::timeout(Duration::from_secs(5), read)
        .await
        .is_err()
    {
        return;
    }
    let text = String::from_utf8_lossy(&head);
    let line = text.lines().next().unwrap_or("");
    let (status, kind, body) = respond(line, &registry);
    let mut out = String::new();
    let _ = write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(5), s.write_all(out.as_bytes())).await;
    let _ = s.shutdown().await;
}

/// Serves `sources` at `http://addr/metrics` on a task of its own, until
/// the process ends; returns the address bound.
pub(crate) async fn serve(addr: &str, sources: Sources) -> anyhow::Result<SocketAddr> {
    let at = super::connect::resolve(addr)?;
    let listener = tokio::net::TcpListener::bind(at)
        .await
        .with_context(|| format!("cannot listen for metrics on {at} (--metrics)"))?;
    let bound = listener.local_addr()?;
    let mut registry = Registry::with_prefix("rpcrdma");
    registry.register_collector(Box::new(sources));
    let registry = Arc::new(registry);
    tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((s, _)) => {
                    tokio::spawn(answer(s, registry.clone()));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "metrics: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    });
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_land_in_their_procedure_and_bucket() {
        let s = CallStats::new(&[(100_003, 3), (100_005, 3)]);
        s.call_done(
            100_003,
            3,
            6,
            CallOutcome::Success,
            Duration::from_micros(70),
        );
        s.call_done(
            100_003,
            3,
            6,
            CallOutcome::Success,
            Duration::from_millis(3),
        );
        s.call_done(
            100_003,
            3,
            999,
            CallOutcome::ProcUnavail,
            Duration::from_secs(20),
        );
        s.call_done(7, 1, 0, CallOutcome::ProgUnavail, Duration::ZERO);
        let read = s.cell(100_003, 3, 6);
        assert_eq!(
            read.outcomes[CallOutcome::Success.index()].load(Ordering::Relaxed),
            2
        );
        // 70 µs is in the 100 µs bucket, 3 ms in the 5 ms one.
        assert_eq!(read.buckets[1].load(Ordering::Relaxed), 1);
        assert_eq!(read.buckets[6].load(Ordering::Relaxed), 1);
        assert_eq!(read.sum_ns.load(Ordering::Relaxed), 3_070_000);
        let other = s.cell(100_003, 3, 40);
        assert_eq!(
            other.buckets[BUCKETS.len()].load(Ordering::Relaxed),
            1,
            "past 10 s: +Inf"
        );
        assert_eq!(
            s.other.outcomes[CallOutcome::ProgUnavail.index()].load(Ordering::Relaxed),
            1
        );
    }

    #[test]
    fn the_exposition_names_programs_procedures_and_statuses() {
        let calls = CallStats::new(&[(100_003, 3)]);
        calls.call_done(
            100_003,
            3,
            6,
            CallOutcome::Success,
            Duration::from_micros(70),
        );
        calls.call_done(
            100_003,
            3,
            1,
            CallOutcome::GarbageArgs,
            Duration::from_micros(7),
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _g = rt.enter();
        let sources = Sources {
            calls,
            server: Server::new(rpcrdma_oncrpc::Services::new(), Default::default()),
            rdma: Box::new(|| {
                let mut s = ListenerStats::default();
                s.engine.rdma_read_bytes = 1 << 20;
                s.credits_granted = 64;
                s
            }),
            budget: MemoryBudget::new(1 << 20),
            refused: Some(Box::new(|| 3)),
        };
        let mut registry = Registry::with_prefix("rpcrdma");
        registry.register_collector(Box::new(sources));
        let (status, kind, text) = respond("GET /metrics HTTP/1.1", &registry);
        assert_eq!(status, "200 OK");
        assert!(kind.starts_with("text/plain; version=0.0.4"));
        for want in [
            "# TYPE rpcrdma_rpc_calls_total counter",
            r#"rpcrdma_rpc_calls_total{program="nfs",version="3",procedure="read",status="success"} 1"#,
            r#"rpcrdma_rpc_calls_total{program="nfs",version="3",procedure="getattr",status="garbage_args"} 1"#,
            r#"rpcrdma_rpc_call_duration_seconds_bucket{program="nfs",version="3",procedure="read",le="0.0001"} 1"#,
            r#"rpcrdma_rpc_call_duration_seconds_count{program="nfs",version="3",procedure="read"} 1"#,
            "rpcrdma_rdma_read_bytes_total 1048576",
            "rpcrdma_rdma_credits_granted 64",
            "rpcrdma_memory_limit_bytes 1048576",
            "rpcrdma_nfs_access_refused_total 3",
            r#"rpcrdma_connections{transport="tcp"} 0"#,
        ] {
            assert!(text.lines().any(|l| l == want), "{want}\n{text}");
        }
        assert_eq!(respond("GET /nope HTTP/1.1", &registry).0, "404 Not Found");
        assert_eq!(
            respond("POST /metrics HTTP/1.1", &registry).0,
            "405 Method Not Allowed"
        );
    }
}
