//! The RPC sides of the measures: the two clients every RPC bench
//! compares, and what the RPC-level bench times with them (NULL round
//! trips interleaved with raw TCP ping-pongs, the NULL rate, 1 MiB READ
//! and WRITE throughput).

use std::net::SocketAddr;
use std::time::Instant;

use anyhow::{bail, Context};
use bytes::Bytes;
use rpcrdma_demoprog::{
    procs, ulb, DemoClient, ReadArgs, ReadRes, ReadResok, WriteArgs, WriteRes, PROGRAM, VERSION,
};
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{Client, ClientConfig};
use rpcrdma_transport::{ConnectorHandle, RdmaConnector};
use rpcrdma_verbs::Device;
use tokio::net::TcpStream;

use super::server::{BARE_PROG, BARE_WRITE};
use super::settings::RdmaSettings;
use crate::cpu::{Moved, Stopwatch};
use crate::raw::tcp_batch;
use crate::stats::MIB;

/// What a throughput measure repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// The demo READ.
    Read,
    /// The demo WRITE (the server checksums the data).
    Write,
    /// [`BARE_WRITE`]: the same call, no checksum.
    BareWrite,
}

/// Round trips per batch of the interleaved latency measure.
const LATENCY_BATCH: usize = 100;

/// The two clients every RPC bench compares, RPC-over-RDMA and ONC
/// RPC/TCP to the bench server, each having read 1 MiB verified (so both
/// paths are known to move the right bytes before anything is timed).
pub struct BenchClients<D: Device> {
    /// The RPC-over-RDMA client.
    pub rdma: Client,
    /// The ONC RPC/TCP client.
    pub tcp: Client,
    /// The RDMA connection's version, once connected.
    pub handle: ConnectorHandle<D>,
}

impl<D: Device + Clone> BenchClients<D> {
    /// Connects both clients (256 calls in flight at most) to the bench
    /// server's `rdma_addr` and `tcp_addr`, and reads 1 MiB verified on
    /// each.
    pub async fn connect(
        rdma: &RdmaSettings,
        dev: D,
        options: D::Options,
        rdma_addr: SocketAddr,
        tcp_addr: SocketAddr,
    ) -> anyhow::Result<Self> {
        let mut cfg = ClientConfig::default();
        cfg.max_in_flight = 256;
        let connector = RdmaConnector::new(dev, rdma_addr, rdma.client.clone())
            .options(options)
            .caps(rdma.caps);
        let handle = connector.handle();
        let rdma = Client::connect(connector, cfg.clone())
            .await
            .context("RPC-over-RDMA connect")?;
        let tcp = Client::connect(TcpConnector::new(tcp_addr), cfg)
            .await
            .context("ONC RPC/TCP connect")?;
        for c in [&rdma, &tcp] {
            DemoClient::new(c.clone())
                .read_verified(1, MIB as u32)
                .await?;
        }
        Ok(Self { rdma, tcp, handle })
    }
}

/// The RPC-over-RDMA version a connector's connection negotiated (0 if
/// it has none).
pub fn negotiated_version<D: Device>(handle: &ConnectorHandle<D>) -> u32 {
    handle
        .transport()
        .and_then(|t| t.negotiated())
        .map_or(0, |(v, _)| v)
}

/// Seconds taken by `n` sequential NULL calls.
async fn null_batch(c: &Client, n: usize) -> anyhow::Result<f64> {
    let t = Instant::now();
    for _ in 0..n {
        c.null(PROGRAM, VERSION).await?;
    }
    Ok(t.elapsed().as_secs_f64())
}

/// Mean round trips of raw TCP, RPC-over-RDMA NULL and ONC RPC/TCP NULL,
/// `n` each, measured in interleaved batches of [`LATENCY_BATCH`] (the
/// order flips from batch to batch), so that all three see the same mix of
/// machine states even when thread wake-up times change within a round.
pub(crate) async fn latency_triplet(
    echo: &mut TcpStream,
    rdma: &Client,
    tcp: &Client,
    n: usize,
    flip: bool,
) -> anyhow::Result<(f64, f64, f64)> {
    for c in [rdma, tcp] {
        null_batch(c, 100).await?;
    }
    let batch = LATENCY_BATCH.min(n);
    let batches = n.div_ceil(batch);
    let (mut t_raw, mut t_rdma, mut t_onc) = (0.0, 0.0, 0.0);
    for b in 0..batches {
        if (b % 2 == 0) != flip {
            t_raw += tcp_batch(echo, batch).await?;
            t_rdma += null_batch(rdma, batch).await?;
            t_onc += null_batch(tcp, batch).await?;
        } else {
            t_onc += null_batch(tcp, batch).await?;
            t_rdma += null_batch(rdma, batch).await?;
            t_raw += tcp_batch(echo, batch).await?;
        }
    }
    let total = (batches * batch) as f64;
    Ok((t_raw / total, t_rdma / total, t_onc / total))
}

/// NULL calls per second with `k` outstanding.
pub(crate) async fn null_rate(c: &Client, n: usize, k: usize) -> anyhow::Result<f64> {
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

/// READ, WRITE or bare WRITE throughput of `mib` 1 MiB calls with `k`
/// outstanding, in bytes per second.
pub(crate) async fn rpc_throughput(
    c: &Client,
    mib: usize,
    k: usize,
    op: Op,
    data: &Bytes,
) -> anyhow::Result<Moved> {
    let per = mib.div_ceil(k);
    let t = Stopwatch::start();
    let mut tasks = Vec::new();
    for _ in 0..k {
        let c = c.clone();
        let data = data.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..per {
                let (prog, vers, proc_) = match op {
                    Op::Read => {
                        let r: ReadRes = c
                            .call(
                                PROGRAM,
                                VERSION,
                                procs::READ,
                                &ReadArgs {
                                    seed: 1,
                                    count: MIB as u32,
                                },
                                &ulb::read(MIB as u32),
                            )
                            .await?;
                        match r {
                            ReadRes::DemoOk(ReadResok { data, .. }) if data.len() == MIB => {}
                            _ => bail!("READ returned the wrong amount of data"),
                        }
                        continue;
                    }
                    Op::Write => (PROGRAM, VERSION, procs::WRITE),
                    Op::BareWrite => (BARE_PROG, 1, BARE_WRITE),
                };
                let r: WriteRes = c
                    .call(
                        prog,
                        vers,
                        proc_,
                        &WriteArgs { data: data.clone() },
                        &ulb::write(),
                    )
                    .await?;
                if r.count as usize != MIB {
                    bail!("WRITE: server saw {} bytes", r.count);
                }
            }
            Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(t.stop(per * k * MIB))
}
