//! `rpcrdma bench` (RPC level): RPC-over-RDMA over the software iWARP
//! provider, ONC RPC over TCP, and raw TCP, measured in one run between
//! the same two threads on loopback.
//!
//! Thread "server" runs the demo program over RPC-over-RDMA and over TCP
//! plus raw TCP echo and sink endpoints; thread "client" measures. Each
//! thread has its own current-thread tokio runtime, so both sides of every
//! measure run on the same two threads. Each measure is repeated
//! `--rounds` times and the median is reported; ratios are computed from
//! figures taken in this same run (never against stored numbers).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use bytes::Bytes;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rpcrdma_demoprog::{
    pattern, procs, serve_demo, ulb, DemoClient, ReadArgs, ReadRes, WriteArgs, WriteRes, PROGRAM,
    VERSION,
};
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{Client, ClientConfig, Server, ServerConfig, Services};
use rpcrdma_softiwarp::SoftIwarp;
use rpcrdma_transport::{serve_rdma, ListenConfig, RdmaConnector};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use crate::cmd::rdma_opts::RdmaOpts;

const MIB: usize = 1 << 20;

/// Arguments of the RPC-level `rpcrdma bench`.
#[derive(Debug, Clone, Args)]
pub(crate) struct RpcBenchArgs {
    /// Print one JSON object (progress still goes to stderr).
    #[arg(long)]
    pub(crate) json: bool,
    /// Rounds per measure (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub(crate) rounds: usize,
    /// Round trips per latency round.
    #[arg(long, default_value_t = 4000)]
    pub(crate) round_trips: usize,
    /// MiB moved per throughput round.
    #[arg(long, default_value_t = 128)]
    pub(crate) mib: usize,
    /// Calls kept outstanding for the throughput and rate measures.
    #[arg(long, default_value_t = 8)]
    pub(crate) outstanding: usize,
    #[command(flatten)]
    pub(crate) rdma: RdmaOpts,
}

struct Addrs {
    rdma: SocketAddr,
    rpc_tcp: SocketAddr,
    echo: SocketAddr,
    sink: SocketAddr,
}

/// The server thread: every endpoint the client measures against.
async fn server(
    args: RpcBenchArgs,
    tx: std_mpsc::Sender<Addrs>,
    stop: oneshot::Receiver<()>,
) -> anyhow::Result<()> {
    let mut services = Services::new();
    serve_demo(&mut services);
    let server = Server::new(services, ServerConfig::default());
    let listen = ListenConfig {
        engine: args.rdma.server(),
        options: args.rdma.options(),
        caps: args.rdma.caps(),
    };
    let svc = serve_rdma(&server, SoftIwarp::new(), "127.0.0.1:0".parse()?, listen).await?;
    let rpc_tcp = server.serve_tcp("127.0.0.1:0").await?;
    let echo = TcpListener::bind("127.0.0.1:0").await?;
    let sink = TcpListener::bind("127.0.0.1:0").await?;
    tx.send(Addrs {
        rdma: svc.local_addr(),
        rpc_tcp,
        echo: echo.local_addr()?,
        sink: sink.local_addr()?,
    })?;
    tokio::spawn(async move {
        while let Ok((mut s, _)) = echo.accept().await {
            let _ = s.set_nodelay(true);
            tokio::spawn(async move {
                let mut b = [0u8; 64];
                while s.read_exact(&mut b).await.is_ok() {
                    if s.write_all(&b).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    tokio::spawn(async move {
        while let Ok((mut s, _)) = sink.accept().await {
            tokio::spawn(async move {
                let mut len = [0u8; 8];
                if s.read_exact(&mut len).await.is_err() {
                    return;
                }
                let total = u64::from_be_bytes(len) as usize;
                let mut buf = vec![0u8; MIB];
                let mut got = 0;
                while got < total {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got += n,
                    }
                }
                let _ = s.write_all(&[1]).await;
            });
        }
    });
    let _ = stop.await;
    svc.stop().await;
    server.shutdown().await;
    Ok(())
}

/// Mean round-trip time of `n` 64-byte TCP ping-pongs.
async fn tcp_pingpong(addr: SocketAddr, n: usize) -> anyhow::Result<f64> {
    let mut s = TcpStream::connect(addr).await?;
    s.set_nodelay(true)?;
    let mut b = [7u8; 64];
    for _ in 0..100 {
        s.write_all(&b).await?;
        s.read_exact(&mut b).await?;
    }
    let t = Instant::now();
    for _ in 0..n {
        s.write_all(&b).await?;
        s.read_exact(&mut b).await?;
    }
    Ok(t.elapsed().as_secs_f64() / n as f64)
}

/// Bytes per second of a raw TCP stream of `mib` 1 MiB writes (until the
/// receiver confirms it read everything).
async fn tcp_stream(addr: SocketAddr, mib: usize, data: &Bytes) -> anyhow::Result<f64> {
    let mut s = TcpStream::connect(addr).await?;
    s.set_nodelay(true)?;
    let total = mib * MIB;
    let t = Instant::now();
    s.write_all(&(total as u64).to_be_bytes()).await?;
    for _ in 0..mib {
        s.write_all(data).await?;
    }
    let mut ack = [0u8; 1];
    s.read_exact(&mut ack).await?;
    Ok(total as f64 / t.elapsed().as_secs_f64())
}

/// Mean round-trip time of `n` sequential NULL calls.
async fn null_rtt(c: &Client, n: usize) -> anyhow::Result<f64> {
    for _ in 0..100 {
        c.null(PROGRAM, VERSION).await?;
    }
    let t = Instant::now();
    for _ in 0..n {
        c.null(PROGRAM, VERSION).await?;
    }
    Ok(t.elapsed().as_secs_f64() / n as f64)
}

/// NULL calls per second with `k` outstanding.
async fn null_rate(c: &Client, n: usize, k: usize) -> anyhow::Result<f64> {
    let per = n.div_ceil(k);
    let t = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..k {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..per {
                c.null(PROGRAM, VERSION).await?;
            }
            Ok::<_, rpcrdma_oncrpc::RpcError>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok((per * k) as f64 / t.elapsed().as_secs_f64())
}

/// READ (`write == false`) or WRITE throughput of `mib` 1 MiB calls with
/// `k` outstanding, in bytes per second.
async fn rpc_throughput(
    c: &Client,
    mib: usize,
    k: usize,
    write: bool,
    data: &Bytes,
) -> anyhow::Result<f64> {
    let per = mib.div_ceil(k);
    let t = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..k {
        let c = c.clone();
        let data = data.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..per {
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
                    if r.count as usize != MIB {
                        bail!("WRITE: server saw {} bytes", r.count);
                    }
                } else {
                    let hints = ulb::read(MIB as u32);
                    let r: ReadRes = c
                        .call(
                            PROGRAM,
                            VERSION,
                            procs::READ,
                            &ReadArgs {
                                seed: 1,
                                count: MIB as u32,
                            },
                            &hints,
                        )
                        .await?;
                    match r {
                        ReadRes::Ok { data, .. } if data.len() == MIB => {}
                        _ => bail!("READ returned the wrong amount of data"),
                    }
                }
            }
            Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok((per * k * MIB) as f64 / t.elapsed().as_secs_f64())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

struct Results {
    tcp_rtt: f64,
    tcp_stream: f64,
    oncrpc_null_rtt: f64,
    oncrpc_read: f64,
    oncrpc_write: f64,
    rdma_null_rtt: f64,
    rdma_null_rate: f64,
    rdma_read: f64,
    rdma_write: f64,
    version: u32,
}

async fn client(args: RpcBenchArgs, a: Addrs, bar: ProgressBar) -> anyhow::Result<Results> {
    let mut cfg = ClientConfig::default();
    cfg.max_in_flight = 256;
    let connector = RdmaConnector::new(SoftIwarp::new(), a.rdma, args.rdma.client())
        .options(args.rdma.options())
        .caps(args.rdma.caps());
    let handle = connector.handle();
    let rdma = Client::connect(connector, cfg.clone())
        .await
        .context("RPC-over-RDMA connect")?;
    let tcp = Client::connect(TcpConnector::new(a.rpc_tcp), cfg)
        .await
        .context("ONC RPC/TCP connect")?;
    // Verify both paths move the right bytes before timing anything.
    for c in [&rdma, &tcp] {
        let d = DemoClient::new(c.clone());
        d.read_verified(1, MIB as u32).await?;
        d.write_verified(pattern(2, MIB)).await?;
    }
    let data = pattern(3, MIB);
    let (n, mib, k, rounds) = (
        args.round_trips,
        args.mib,
        args.outstanding.max(1),
        args.rounds.max(1),
    );
    let measure = |name: &str| {
        bar.set_message(name.to_string());
        name.to_string()
    };
    macro_rules! med {
        ($name:expr, $e:expr) => {{
            let label = measure($name);
            let mut v = Vec::with_capacity(rounds);
            for _ in 0..rounds {
                v.push($e.await.with_context(|| label.clone())?);
                bar.inc(1);
            }
            median(v)
        }};
    }
    let tcp_rtt = med!("raw TCP 64 B ping-pong", tcp_pingpong(a.echo, n));
    let tcp_stream_bw = med!("raw TCP stream", tcp_stream(a.sink, mib, &data));
    let oncrpc_null_rtt = med!("ONC RPC/TCP NULL round trip", null_rtt(&tcp, n));
    let oncrpc_read = med!(
        "ONC RPC/TCP READ 1 MiB",
        rpc_throughput(&tcp, mib, k, false, &data)
    );
    let oncrpc_write = med!(
        "ONC RPC/TCP WRITE 1 MiB",
        rpc_throughput(&tcp, mib, k, true, &data)
    );
    let rdma_null_rtt = med!("RPC-over-RDMA NULL round trip", null_rtt(&rdma, n));
    let rdma_null_rate = med!("RPC-over-RDMA NULL rate", null_rate(&rdma, n * 4, 32));
    let rdma_read = med!(
        "RPC-over-RDMA READ 1 MiB",
        rpc_throughput(&rdma, mib, k, false, &data)
    );
    let rdma_write = med!(
        "RPC-over-RDMA WRITE 1 MiB",
        rpc_throughput(&rdma, mib, k, true, &data)
    );
    let version = handle
        .transport()
        .and_then(|t| t.negotiated())
        .map_or(0, |(v, _)| v);
    Ok(Results {
        tcp_rtt,
        tcp_stream: tcp_stream_bw,
        oncrpc_null_rtt,
        oncrpc_read,
        oncrpc_write,
        rdma_null_rtt,
        rdma_null_rate,
        rdma_read,
        rdma_write,
        version,
    })
}

fn on_thread<T, F>(name: &str, f: F) -> std::thread::JoinHandle<anyhow::Result<T>>
where
    T: Send + 'static,
    F: std::future::Future<Output = anyhow::Result<T>> + Send + 'static,
{
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("tokio runtime")?
                .block_on(f)
        })
        .expect("spawn thread")
}

fn num(x: f64) -> serde_json::Value {
    serde_json::Number::from_f64(x).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// Runs the RPC-level benchmark.
pub(crate) fn run(args: RpcBenchArgs) -> anyhow::Result<ExitCode> {
    if args.rounds == 0 || args.round_trips == 0 || args.mib == 0 {
        bail!("--rounds, --round-trips and --mib must be at least 1");
    }
    let measures = 9u64;
    let bar = ProgressBar::new(measures * args.rounds as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let (atx, arx) = std_mpsc::channel();
    let (stop_tx, stop_rx) = oneshot::channel();
    let srv = on_thread("bench-server", server(args.clone(), atx, stop_rx));
    let addrs = arx
        .recv_timeout(Duration::from_secs(30))
        .map_err(|_| anyhow!("the benchmark server did not start"))?;
    let cli = on_thread("bench-client", client(args.clone(), addrs, bar.clone()));
    let res = cli.join().map_err(|_| anyhow!("client thread panicked"))?;
    let _ = stop_tx.send(());
    let _ = srv.join();
    bar.finish_and_clear();
    let r = res?;

    let null_rtt_vs_tcp = r.rdma_null_rtt / r.tcp_rtt;
    let read_vs_tcp = r.rdma_read / r.tcp_stream;
    let write_vs_tcp = r.rdma_write / r.tcp_stream;
    let read_vs_oncrpc = r.rdma_read / r.oncrpc_read;
    let write_vs_oncrpc = r.rdma_write / r.oncrpc_write;
    let mibs = |x: f64| x / MIB as f64;
    if args.json {
        let v = serde_json::json!({
            "bench": "rpc",
            "provider": "softiwarp",
            "setup": "loopback; client and server on two threads, one current-thread tokio runtime each",
            "rpcrdma_version": r.version,
            "rounds": args.rounds,
            "outstanding": args.outstanding,
            "raw_tcp_pingpong_rtt_us": num(r.tcp_rtt * 1e6),
            "raw_tcp_stream_mib_per_s": num(mibs(r.tcp_stream)),
            "oncrpc_tcp_null_rtt_us": num(r.oncrpc_null_rtt * 1e6),
            "oncrpc_tcp_read_1mib_mib_per_s": num(mibs(r.oncrpc_read)),
            "oncrpc_tcp_write_1mib_mib_per_s": num(mibs(r.oncrpc_write)),
            "rpcrdma_null_rtt_us": num(r.rdma_null_rtt * 1e6),
            "rpcrdma_null_rate_per_s": num(r.rdma_null_rate),
            "rpcrdma_read_1mib_mib_per_s": num(mibs(r.rdma_read)),
            "rpcrdma_write_1mib_mib_per_s": num(mibs(r.rdma_write)),
            "ratios": {
                "null_rtt_vs_tcp": num(null_rtt_vs_tcp),
                "read_1mib_vs_tcp": num(read_vs_tcp),
                "write_1mib_vs_tcp": num(write_vs_tcp),
                "read_1mib_vs_oncrpc_tcp": num(read_vs_oncrpc),
                "write_1mib_vs_oncrpc_tcp": num(write_vs_oncrpc),
            },
            "goals": {
                "null_rtt_vs_tcp": "<= 1.3",
                "read_1mib_vs_tcp": ">= 0.85",
                "write_1mib_vs_tcp": ">= 0.85",
                "read_1mib_vs_oncrpc_tcp": ">= 1.0",
                "write_1mib_vs_oncrpc_tcp": ">= 1.0",
            },
        });
        println!("{v}");
    } else {
        println!(
            "RPC-over-RDMA v{} (software iWARP) vs ONC RPC/TCP vs raw TCP, loopback, median of {} rounds",
            r.version, args.rounds
        );
        println!("{:<34} {:>16}", "measure", "result");
        let us = |x: f64| format!("{:.1} us", x * 1e6);
        let bw = |x: f64| format!("{:.0} MiB/s", mibs(x));
        for (name, v) in [
            ("raw TCP 64 B ping-pong RTT", us(r.tcp_rtt)),
            ("raw TCP stream", bw(r.tcp_stream)),
            ("ONC RPC/TCP NULL RTT", us(r.oncrpc_null_rtt)),
            ("ONC RPC/TCP READ 1 MiB", bw(r.oncrpc_read)),
            ("ONC RPC/TCP WRITE 1 MiB", bw(r.oncrpc_write)),
            ("RPC-over-RDMA NULL RTT", us(r.rdma_null_rtt)),
            (
                "RPC-over-RDMA NULL rate (32 out)",
                format!("{:.0} /s", r.rdma_null_rate),
            ),
            ("RPC-over-RDMA READ 1 MiB", bw(r.rdma_read)),
            ("RPC-over-RDMA WRITE 1 MiB", bw(r.rdma_write)),
        ] {
            println!("{name:<34} {v:>16}");
        }
        println!();
        println!(
            "{:<34} {:>8} {:>8}",
            "ratio (ours / theirs)", "value", "goal"
        );
        for (name, v, goal) in [
            ("NULL RTT vs raw TCP ping-pong", null_rtt_vs_tcp, "<= 1.3"),
            ("READ 1 MiB vs raw TCP stream", read_vs_tcp, ">= 0.85"),
            ("WRITE 1 MiB vs raw TCP stream", write_vs_tcp, ">= 0.85"),
            ("READ 1 MiB vs ONC RPC/TCP", read_vs_oncrpc, ">= 1.0"),
            ("WRITE 1 MiB vs ONC RPC/TCP", write_vs_oncrpc, ">= 1.0"),
        ] {
            println!("{name:<34} {v:>8.3} {goal:>8}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
