//! `rpcrdma bench --sweep`: throughput over message sizes and the NULL
//! round-trip distribution, for RPC-over-RDMA, ONC RPC/TCP and raw TCP in
//! one run; `--plot FILE.svg` draws them (`plot.rs`).
//!
//! * Throughput: for each size of [`sizes`] (1 KiB to 16 MiB, powers of
//!   4), demo READ and WRITE calls of that size over RPC-over-RDMA and ONC
//!   RPC/TCP (`--outstanding` calls in flight, fewer for the largest sizes
//!   so that at most [`MAX_BYTES_IN_FLIGHT`] are outstanding), and a raw
//!   TCP stream of writes of that size, each for `--sweep-secs` seconds.
//!   The five measures of a size run back to back (RPC-over-RDMA in the
//!   middle, the order flipped from size to size).
//! * Round trips: `--round-trips` NULL calls (64-octet ping-pongs for raw
//!   TCP) per path, each timed on its own, in interleaved batches of 100
//!   (the order flips from batch to batch); the report gives percentiles.
//!
//! Both RPC paths and the raw TCP ping-pong are served by the bench's
//! server thread; the raw TCP stream's receiver has a thread of its own.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use bytes::Bytes;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rpcrdma_demoprog::{
    pattern, procs, ulb, DemoClient, ReadArgs, ReadRes, ReadResok, WriteArgs, WriteRes, PROGRAM,
    VERSION,
};
use rpcrdma_oncrpc::Client;
use rpcrdma_verbs::Device;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use super::aligned::PageAligned;
use super::rpc::{negotiated_version, Addrs, BenchClients, BenchServer, RpcBenchArgs};
use super::wake::Seen;
use super::{num, on_thread};
use crate::cmd::provider::{AnyDevice, Setup};

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

/// Smallest message size of the sweep.
pub(crate) const SMALLEST: usize = KIB;
/// Largest message size of the sweep (the demo program's READ/WRITE limit).
pub(crate) const LARGEST: usize = 16 * MIB;
/// Most octets of calls kept in flight per path (the server's default
/// per-connection memory is 64 MiB): 16 MiB calls go 4 at a time.
pub(crate) const MAX_BYTES_IN_FLIGHT: usize = 64 * MIB;

/// Arguments of `rpcrdma bench --sweep`.
#[derive(Debug, Clone, Args)]
pub(crate) struct SweepArgs {
    /// Sweep message sizes: READ and WRITE throughput from 1 KiB to 16 MiB
    /// (powers of 4) over RPC-over-RDMA, ONC RPC/TCP and a raw TCP stream,
    /// and the NULL round-trip distribution (percentiles) of all three, in
    /// one run (about 25 s with the defaults). Uses --round-trips,
    /// --outstanding, --json and the provider options.
    #[arg(long)]
    pub(crate) sweep: bool,
    /// Draw the sweep into this SVG file: throughput against message size
    /// (log axes) and the round-trip percentiles.
    #[arg(long, value_name = "FILE.svg", requires = "sweep")]
    pub(crate) plot: Option<PathBuf>,
    /// Seconds per throughput measure of the sweep (5 measures per size).
    #[arg(long, default_value_t = 0.5, requires = "sweep")]
    pub(crate) sweep_secs: f64,
}

/// The message sizes of the sweep: 1 KiB to 16 MiB, powers of 4.
pub(crate) fn sizes() -> Vec<usize> {
    std::iter::successors(Some(SMALLEST), |s| Some(s * 4))
        .take_while(|&s| s <= LARGEST)
        .collect()
}

/// Calls of `size` octets kept in flight, `wanted` at most.
pub(crate) fn outstanding_for(size: usize, wanted: usize) -> usize {
    wanted.clamp(1, (MAX_BYTES_IN_FLIGHT / size.max(1)).max(1))
}

/// A human name for a size: "1 KiB", "16 MiB".
pub(crate) fn size_name(size: usize) -> String {
    if size >= MIB && size % MIB == 0 {
        format!("{} MiB", size / MIB)
    } else if size >= KIB && size % KIB == 0 {
        format!("{} KiB", size / KIB)
    } else {
        format!("{size} B")
    }
}

/// The percentiles a round-trip distribution is reported by.
pub(crate) const PERCENTILES: [f64; 5] = [50.0, 90.0, 99.0, 99.9, 100.0];

/// The nearest-rank percentile `q` (0 < q <= 100) of `sorted` (ascending):
/// the smallest sample at least q% of the samples do not exceed. NaN for
/// no samples.
pub(crate) fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A round-trip distribution: [`PERCENTILES`] of its samples (seconds).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Distribution {
    /// The path ("RPC-over-RDMA NULL", ...).
    pub(crate) name: &'static str,
    /// Samples taken.
    pub(crate) samples: usize,
    /// One value per entry of [`PERCENTILES`], seconds.
    pub(crate) values: Vec<f64>,
}

impl Distribution {
    /// The distribution of `samples` (seconds).
    pub(crate) fn of(name: &'static str, mut samples: Vec<f64>) -> Self {
        samples.retain(|x| x.is_finite());
        samples.sort_by(|a, b| a.total_cmp(b));
        Distribution {
            name,
            samples: samples.len(),
            values: PERCENTILES
                .iter()
                .map(|&q| percentile(&samples, q))
                .collect(),
        }
    }

    /// The median, seconds.
    pub(crate) fn p50(&self) -> f64 {
        self.values[0]
    }
}

/// The name of a percentile: "p50", "p99.9", "max".
pub(crate) fn percentile_name(q: f64) -> String {
    if q >= 100.0 {
        "max".into()
    } else {
        format!("p{q}")
    }
}

/// One throughput series: a figure (octets per second) per size.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Series {
    /// What moved ("RPC-over-RDMA READ", ...).
    pub(crate) name: &'static str,
    /// One figure per entry of [`Sweep::sizes`], octets per second.
    pub(crate) bytes_per_s: Vec<f64>,
}

/// Names of the throughput series, in the order of [`Sweep::throughput`].
pub(crate) const SERIES: [&str; 5] = [
    "RPC-over-RDMA READ",
    "RPC-over-RDMA WRITE",
    "ONC RPC/TCP READ",
    "ONC RPC/TCP WRITE",
    "raw TCP stream",
];

/// Names of the round-trip distributions, in the order of
/// [`Sweep::round_trips`].
pub(crate) const PATHS: [&str; 3] = ["RPC-over-RDMA NULL", "ONC RPC/TCP NULL", "raw TCP 64 B"];

/// Everything a sweep measured.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sweep {
    /// The provider's label.
    pub(crate) label: String,
    /// The RPC-over-RDMA version negotiated.
    pub(crate) version: u32,
    /// Message sizes, octets.
    pub(crate) sizes: Vec<usize>,
    /// One series per entry of [`SERIES`].
    pub(crate) throughput: Vec<Series>,
    /// One distribution per entry of [`PATHS`].
    pub(crate) round_trips: Vec<Distribution>,
}

impl Sweep {
    /// The wake-up state the raw TCP round trips say.
    pub(crate) fn seen(&self) -> Seen {
        let raw = self.round_trips.iter().find(|d| d.name == PATHS[2]);
        let rtts: Vec<f64> = raw.map(|d| d.p50() * 1e6).into_iter().collect();
        Seen::from_rtts(&rtts)
    }
}

/// The raw TCP stream receiver: counts octets until the sender shuts its
/// side down, then answers the count (8 octets, big-endian).
async fn stream_sink(listener: TcpListener, stop: oneshot::Receiver<()>) -> anyhow::Result<()> {
    let accept = async {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = PageAligned::zeroed(MIB);
                let mut got = 0u64;
                loop {
                    match s.read(buf.as_mut_slice()).await {
                        Ok(0) => break,
                        Ok(n) => got += n as u64,
                        Err(_) => return,
                    }
                }
                let _ = s.write_all(&got.to_be_bytes()).await;
            });
        }
    };
    tokio::select! {
        _ = accept => {}
        _ = stop => {}
    }
    Ok(())
}

/// Octets per second of a raw TCP stream of `size`-octet writes for `secs`
/// (until the receiver confirms the count).
async fn tcp_stream(addr: SocketAddr, size: usize, secs: f64) -> anyhow::Result<f64> {
    let mut s = TcpStream::connect(addr).await?;
    s.set_nodelay(true)?;
    let data = vec![0x5au8; size];
    let t = Instant::now();
    let deadline = t + Duration::from_secs_f64(secs);
    let mut sent = 0u64;
    while Instant::now() < deadline {
        s.write_all(&data).await?;
        sent += size as u64;
    }
    s.shutdown().await?;
    let mut count = [0u8; 8];
    s.read_exact(&mut count).await?;
    let got = u64::from_be_bytes(count);
    if got != sent {
        bail!("raw TCP stream: sent {sent} octets, the receiver counted {got}");
    }
    Ok(got as f64 / t.elapsed().as_secs_f64())
}

/// READ (`write == false`) or WRITE calls of `size` octets, `k` in flight,
/// for `secs`: octets per second.
async fn rpc_throughput(
    c: &Client,
    size: usize,
    k: usize,
    write: bool,
    secs: f64,
) -> anyhow::Result<f64> {
    let data = pattern(4, size);
    let t = Instant::now();
    let deadline = t + Duration::from_secs_f64(secs);
    let mut tasks = Vec::new();
    for _ in 0..k {
        let c = c.clone();
        let data = data.clone();
        tasks.push(tokio::spawn(async move {
            let mut calls = 0u64;
            while Instant::now() < deadline {
                one_call(&c, size, write, &data).await?;
                calls += 1;
            }
            anyhow::Ok(calls)
        }));
    }
    let mut calls = 0;
    for t in tasks {
        calls += t.await??;
    }
    Ok((calls * size as u64) as f64 / t.elapsed().as_secs_f64())
}

/// One demo READ or WRITE of `size` octets, checking the amount moved.
pub(crate) async fn one_call(
    c: &Client,
    size: usize,
    write: bool,
    data: &Bytes,
) -> anyhow::Result<()> {
    if write {
        let r: WriteRes = c
            .call(
                PROGRAM,
                VERSION,
                procs::WRITE,
                &WriteArgs { data: data.clone() },
                &ulb::write(),
            )
            .await?;
        if r.count as usize != size {
            bail!("WRITE of {size} octets: the server saw {}", r.count);
        }
    } else {
        let count = u32::try_from(size).context("READ size")?;
        let r: ReadRes = c
            .call(
                PROGRAM,
                VERSION,
                procs::READ,
                &ReadArgs { seed: 1, count },
                &ulb::read(count),
            )
            .await?;
        match r {
            ReadRes::DemoOk(ReadResok { data, .. }) if data.len() == size => {}
            _ => bail!("READ of {size} octets returned another amount"),
        }
    }
    Ok(())
}

/// Per-call round trips (seconds) of raw TCP ping-pongs, RPC-over-RDMA NULL
/// and ONC RPC/TCP NULL, `n` each, in interleaved batches of 100.
async fn round_trips(
    echo: SocketAddr,
    rdma: &Client,
    tcp: &Client,
    n: usize,
) -> anyhow::Result<[Vec<f64>; 3]> {
    let mut s = TcpStream::connect(echo).await?;
    s.set_nodelay(true)?;
    let mut out: [Vec<f64>; 3] = Default::default();
    let mut b = [7u8; 64];
    // Warm-up, not recorded.
    for _ in 0..100 {
        s.write_all(&b).await?;
        s.read_exact(&mut b).await?;
        rdma.null(PROGRAM, VERSION).await?;
        tcp.null(PROGRAM, VERSION).await?;
    }
    let batch = 100.min(n);
    for i in 0..n.div_ceil(batch) {
        let order: [usize; 3] = if i % 2 == 0 { [2, 0, 1] } else { [1, 0, 2] };
        for path in order {
            for _ in 0..batch {
                let t = Instant::now();
                match path {
                    0 => rdma.null(PROGRAM, VERSION).await?,
                    1 => tcp.null(PROGRAM, VERSION).await?,
                    _ => {
                        s.write_all(&b).await?;
                        s.read_exact(&mut b).await?;
                    }
                }
                out[path].push(t.elapsed().as_secs_f64());
            }
        }
    }
    Ok(out)
}

/// The client thread: every measure of the sweep.
async fn client<D: Device + Clone>(
    rpc: RpcBenchArgs,
    sw: SweepArgs,
    dev: D,
    options: D::Options,
    a: Addrs,
    stream: SocketAddr,
    bar: ProgressBar,
) -> anyhow::Result<(Vec<Series>, Vec<Distribution>, u32)> {
    let BenchClients { rdma, tcp, handle } =
        BenchClients::connect(&rpc.rdma, dev, options, a.rdma, a.rpc_tcp).await?;
    for c in [&rdma, &tcp] {
        DemoClient::new(c.clone())
            .write_verified(pattern(2, MIB))
            .await?;
    }
    bar.set_message("NULL round trips (RPC-over-RDMA, ONC RPC/TCP, raw TCP, interleaved)");
    let [r, o, t] = round_trips(a.echo, &rdma, &tcp, rpc.round_trips.max(1))
        .await
        .context("round trips")?;
    bar.inc(1);
    let dists = vec![
        Distribution::of(PATHS[0], r),
        Distribution::of(PATHS[1], o),
        Distribution::of(PATHS[2], t),
    ];
    let mut series: Vec<Series> = SERIES
        .iter()
        .map(|&name| Series {
            name,
            bytes_per_s: Vec::new(),
        })
        .collect();
    let secs = sw.sweep_secs;
    for (i, size) in sizes().into_iter().enumerate() {
        let k = outstanding_for(size, rpc.outstanding);
        let mut order: Vec<usize> = vec![4, 0, 1, 2, 3];
        if i % 2 == 1 {
            order = vec![2, 3, 0, 1, 4];
        }
        for which in order {
            bar.set_message(format!("{}: {}", size_name(size), SERIES[which]));
            let v = match which {
                0 => rpc_throughput(&rdma, size, k, false, secs).await,
                1 => rpc_throughput(&rdma, size, k, true, secs).await,
                2 => rpc_throughput(&tcp, size, k, false, secs).await,
                3 => rpc_throughput(&tcp, size, k, true, secs).await,
                _ => tcp_stream(stream, size, secs).await,
            }
            .with_context(|| format!("{} of {}", SERIES[which], size_name(size)))?;
            series[which].bytes_per_s.push(v);
            bar.inc(1);
        }
    }
    Ok((series, dists, negotiated_version(&handle)))
}

/// The sweep's threads over one provider.
struct Threads {
    rpc: RpcBenchArgs,
    sw: SweepArgs,
    bar: ProgressBar,
}

impl Threads {
    async fn run(self, dev: AnyDevice, setup: Setup) -> anyhow::Result<Sweep> {
        let Threads { rpc, sw, bar } = self;
        let srv = BenchServer::start(&rpc, &dev, &setup.options, on_thread)?;
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let stream = listener.local_addr()?;
        let (sink_stop_tx, sink_stop_rx) = oneshot::channel();
        let sink = on_thread("bench-stream-sink", async move {
            stream_sink(TcpListener::from_std(listener)?, sink_stop_rx).await
        });
        let cli = on_thread(
            "bench-client",
            client(rpc, sw, dev, setup.options, srv.addrs, stream, bar.clone()),
        );
        let res = cli.join().map_err(|_| anyhow!("client thread panicked"))?;
        srv.stop();
        let _ = sink_stop_tx.send(());
        let _ = sink.join();
        bar.finish_and_clear();
        let (throughput, round_trips, version) = res?;
        Ok(Sweep {
            label: setup.label,
            version,
            sizes: sizes(),
            throughput,
            round_trips,
        })
    }
}

/// Runs `rpcrdma bench --sweep`.
pub(crate) fn run(rpc: RpcBenchArgs, sw: SweepArgs) -> anyhow::Result<ExitCode> {
    if !(sw.sweep_secs.is_finite() && sw.sweep_secs > 0.0 && sw.sweep_secs <= 60.0) {
        bail!("--sweep-secs must be a number of seconds above 0 and at most 60");
    }
    if let Some(p) = &sw.plot {
        if p.extension().and_then(|e| e.to_str()) != Some("svg") {
            bail!(
                "--plot {}: the picture is SVG; name the file *.svg",
                p.display()
            );
        }
    }
    rpc.rdma.check()?;
    let steps = 1 + sizes().len() as u64 * SERIES.len() as u64;
    let bar = ProgressBar::new(steps);
    bar.set_style(
        ProgressStyle::with_template("sweep {bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let provider = rpc.rdma.provider.clone();
    let sweep = crate::cmd::runtime(crate::cmd::Scheduler::CurrentThread)?.block_on(async {
        let (dev, setup) = provider.open(rpc.rdma.params())?;
        let threads = Threads {
            rpc: rpc.clone(),
            sw: sw.clone(),
            bar,
        };
        threads.run(dev, setup).await
    })?;
    if let Some(p) = &sw.plot {
        let svg = super::plot::svg(&sweep)?;
        std::fs::write(p, svg).with_context(|| format!("cannot write {}", p.display()))?;
        eprintln!("sweep: picture written to {}", p.display());
    }
    if rpc.json {
        println!("{}", json(&sweep, &rpc, &sw));
    } else {
        print!("{}", text(&sweep));
    }
    Ok(ExitCode::SUCCESS)
}

/// The sweep as one JSON object.
pub(crate) fn json(s: &Sweep, rpc: &RpcBenchArgs, sw: &SweepArgs) -> serde_json::Value {
    let mib = |x: &f64| num(x / MIB as f64);
    let mut tp = serde_json::Map::new();
    for series in &s.throughput {
        tp.insert(
            series.name.into(),
            series.bytes_per_s.iter().map(mib).collect(),
        );
    }
    let mut rt = serde_json::Map::new();
    for d in &s.round_trips {
        let mut m = serde_json::Map::new();
        for (q, v) in PERCENTILES.iter().zip(&d.values) {
            m.insert(percentile_name(*q), num(v * 1e6));
        }
        m.insert("samples".into(), d.samples.into());
        rt.insert(d.name.into(), m.into());
    }
    serde_json::json!({
        "bench": "sweep",
        "provider": s.label,
        "rpcrdma_version": s.version,
        "setup": "loopback; client and server on two threads (the raw TCP stream's receiver on a third), one current-thread tokio runtime each",
        "seconds_per_measure": sw.sweep_secs,
        "outstanding": rpc.outstanding,
        "max_bytes_in_flight": MAX_BYTES_IN_FLIGHT,
        "sizes": s.sizes,
        "throughput_mib_per_s": tp,
        "null_rtt_us": rt,
        "wake_state": s.seen().json(),
    })
}

/// The sweep as tables.
pub(crate) fn text(s: &Sweep) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "sweep: RPC-over-RDMA v{} ({}) vs ONC RPC/TCP vs raw TCP, loopback",
        s.version, s.label
    );
    let _ = write!(o, "{:<10}", "size");
    for series in &s.throughput {
        let _ = write!(o, " {:>20}", series.name);
    }
    let _ = writeln!(o, "   (MiB/s)");
    for (i, size) in s.sizes.iter().enumerate() {
        let _ = write!(o, "{:<10}", size_name(*size));
        for series in &s.throughput {
            let v = series.bytes_per_s.get(i).copied().unwrap_or(f64::NAN);
            let _ = write!(o, " {:>20.0}", v / MIB as f64);
        }
        let _ = writeln!(o);
    }
    let _ = writeln!(o);
    let _ = write!(o, "{:<20}", "round trip (us)");
    for q in PERCENTILES {
        let _ = write!(o, " {:>8}", percentile_name(q));
    }
    let _ = writeln!(o, " {:>8}", "samples");
    for d in &s.round_trips {
        let _ = write!(o, "{:<20}", d.name);
        for v in &d.values {
            let _ = write!(o, " {:>8.1}", v * 1e6);
        }
        let _ = writeln!(o, " {:>8}", d.samples);
    }
    let _ = writeln!(o, "{}", s.seen().line());
    o
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A sweep with made-up figures, for the output and picture tests.
    pub(crate) fn sample() -> Sweep {
        let sizes = sizes();
        Sweep {
            label: "soft-iWARP".into(),
            version: 2,
            throughput: SERIES
                .iter()
                .enumerate()
                .map(|(j, &name)| Series {
                    name,
                    bytes_per_s: (0..sizes.len())
                        .map(|i| ((i + 1) * (j + 1) * 40 * MIB) as f64)
                        .collect(),
                })
                .collect(),
            sizes,
            round_trips: PATHS
                .iter()
                .enumerate()
                .map(|(j, &name)| {
                    Distribution::of(name, (1..=1000).map(|i| (i + j) as f64 * 1e-7).collect())
                })
                .collect(),
        }
    }

    #[test]
    fn sizes_are_powers_of_four_from_1_kib_to_16_mib() {
        assert_eq!(
            sizes(),
            vec![
                KIB,
                4 * KIB,
                16 * KIB,
                64 * KIB,
                256 * KIB,
                MIB,
                4 * MIB,
                16 * MIB
            ]
        );
        assert_eq!(size_name(KIB), "1 KiB");
        assert_eq!(size_name(256 * KIB), "256 KiB");
        assert_eq!(size_name(16 * MIB), "16 MiB");
        assert_eq!(size_name(100), "100 B");
    }

    #[test]
    fn outstanding_keeps_in_flight_octets_bounded() {
        assert_eq!(outstanding_for(KIB, 8), 8);
        assert_eq!(outstanding_for(4 * MIB, 8), 8);
        assert_eq!(outstanding_for(16 * MIB, 8), 4);
        assert_eq!(outstanding_for(16 * MIB, 0), 1);
        assert_eq!(outstanding_for(usize::MAX, 8), 1);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 90.0), 90.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&v, 99.9), 100.0);
        assert_eq!(percentile(&v, 100.0), 100.0);
        assert_eq!(percentile(&v, 0.0), 1.0);
        assert_eq!(percentile(&[7.0], 50.0), 7.0);
        assert!(percentile(&[], 50.0).is_nan());
        // Unsorted input with a NaN: sorted, the NaN dropped.
        let d = Distribution::of("x", vec![3.0, f64::NAN, 1.0, 2.0]);
        assert_eq!(d.samples, 3);
        assert_eq!(d.values, vec![2.0, 3.0, 3.0, 3.0, 3.0]);
        assert_eq!(percentile_name(99.9), "p99.9");
        assert_eq!(percentile_name(100.0), "max");
    }

    #[test]
    fn text_and_json_name_every_series_and_path() {
        let s = sample();
        let t = text(&s);
        for name in SERIES.iter().chain(PATHS.iter()) {
            assert!(t.contains(name), "{name} missing from\n{t}");
        }
        assert!(t.contains("16 MiB"));
        assert!(t.contains("wake-up state:"));
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            rpc: RpcBenchArgs,
        }
        let rpc = <Cli as clap::Parser>::parse_from(["bench"]).rpc;
        let sw = SweepArgs {
            sweep: true,
            plot: None,
            sweep_secs: 0.5,
        };
        let j = json(&s, &rpc, &sw);
        assert_eq!(j["sizes"].as_array().map(Vec::len), Some(8));
        assert_eq!(j["throughput_mib_per_s"]["raw TCP stream"][0], 200.0);
        assert_eq!(j["null_rtt_us"]["raw TCP 64 B"]["samples"], 1000);
        assert!(j["null_rtt_us"]["RPC-over-RDMA NULL"]["p99.9"].is_number());
        assert_eq!(j["wake_state"]["state"], "slow");
    }
}
