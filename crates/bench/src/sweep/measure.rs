//! The sweep's measures: its own raw TCP stream (counted until the
//! sender shuts its side down), READ and WRITE calls of each size, the
//! per-call round trips, and the run on the bench's threads.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use bytes::Bytes;
use rpcrdma_demoprog::{
    pattern, procs, ulb, DemoClient, ReadArgs, ReadRes, ReadResok, WriteArgs, WriteRes, PROGRAM,
    VERSION,
};
use rpcrdma_oncrpc::Client;
use rpcrdma_verbs::Device;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use super::figures::{
    outstanding_for, size_name, sizes, Distribution, Series, Sweep, SweepSettings, PATHS, SERIES,
};
use crate::aligned::PageAligned;
use crate::progress::ProgressRef;
use crate::rpc::{negotiated_version, Addrs, BenchClients, BenchServer, RpcSettings};
use crate::stats::MIB;
use crate::threads::on_thread;

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

/// One demo READ or WRITE of `size` octets (a WRITE sends `data`),
/// checking the amount moved.
pub async fn one_call(c: &Client, size: usize, write: bool, data: &Bytes) -> anyhow::Result<()> {
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
    rpc: RpcSettings,
    sw: SweepSettings,
    dev: D,
    options: D::Options,
    a: Addrs,
    stream: SocketAddr,
    bar: ProgressRef,
) -> anyhow::Result<(Vec<Series>, Vec<Distribution>, u32)> {
    let BenchClients { rdma, tcp, handle } =
        BenchClients::connect(&rpc.rdma, dev, options, a.rdma, a.rpc_tcp).await?;
    for c in [&rdma, &tcp] {
        DemoClient::new(c.clone())
            .write_verified(pattern(2, MIB))
            .await?;
    }
    bar.start("NULL round trips (RPC-over-RDMA, ONC RPC/TCP, raw TCP, interleaved)");
    let [r, o, t] = round_trips(a.echo, &rdma, &tcp, sw.round_trips.max(1))
        .await
        .context("round trips")?;
    bar.done();
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
    let secs = sw.secs;
    for (i, size) in sizes().into_iter().enumerate() {
        let k = outstanding_for(size, sw.outstanding);
        let mut order: Vec<usize> = vec![4, 0, 1, 2, 3];
        if i % 2 == 1 {
            order = vec![2, 3, 0, 1, 4];
        }
        for which in order {
            bar.start(&format!("{}: {}", size_name(size), SERIES[which]));
            let v = match which {
                0 => rpc_throughput(&rdma, size, k, false, secs).await,
                1 => rpc_throughput(&rdma, size, k, true, secs).await,
                2 => rpc_throughput(&tcp, size, k, false, secs).await,
                3 => rpc_throughput(&tcp, size, k, true, secs).await,
                _ => tcp_stream(stream, size, secs).await,
            }
            .with_context(|| format!("{} of {}", SERIES[which], size_name(size)))?;
            series[which].bytes_per_s.push(v);
            bar.done();
        }
    }
    Ok((series, dists, negotiated_version(&handle)))
}

/// Runs the sweep over `dev`: the bench server (started with `rpc`), the
/// raw TCP stream's receiver and the client each on a thread of its own;
/// `label` names the provider in the result.
pub fn measure<D: Device + Clone>(
    rpc: &RpcSettings,
    sw: SweepSettings,
    dev: D,
    options: D::Options,
    label: String,
    bar: ProgressRef,
) -> anyhow::Result<Sweep> {
    let srv = BenchServer::start(&rpc.rdma, rpc.listen_ip, &dev, &options, on_thread)?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let stream = listener.local_addr()?;
    let (sink_stop_tx, sink_stop_rx) = oneshot::channel();
    let sink = on_thread("bench-stream-sink", async move {
        stream_sink(TcpListener::from_std(listener)?, sink_stop_rx).await
    });
    let cli = on_thread(
        "bench-client",
        client(rpc.clone(), sw, dev, options, srv.addrs, stream, bar),
    );
    let res = cli.join().map_err(|_| anyhow!("client thread panicked"))?;
    srv.stop();
    let _ = sink_stop_tx.send(());
    let _ = sink.join();
    let (throughput, round_trips, version) = res?;
    Ok(Sweep {
        label,
        version,
        settings: sw,
        sizes: sizes(),
        throughput,
        round_trips,
    })
}
