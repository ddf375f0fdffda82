//! The run of the RPC-level bench: the bench server on one thread, the
//! client on another, and the client's paired rounds.

use anyhow::{anyhow, Context};
use rpcrdma_demoprog::{pattern, DemoClient};
use rpcrdma_verbs::Device;

use super::calls::{
    latency_triplet, negotiated_version, null_rate, rpc_throughput, BenchClients, Op,
};
use super::server::{Addrs, BenchServer};
use super::settings::{Measure, RpcSettings};
use crate::cpu::Moved;
use crate::progress::ProgressRef;
use crate::raw::{tcp_echo, tcp_stream};
use crate::stats::{PerRound, MIB};
use crate::threads::on_thread;

/// A throughput measure's figures, one per round ([`Moved`]).
#[derive(Debug, Default)]
pub(crate) struct Flow {
    /// Octets per second.
    pub(crate) bw: PerRound,
    /// CPU milliseconds (all threads) per MiB.
    pub(crate) cpu: PerRound,
    /// CPUs kept busy.
    pub(crate) busy: PerRound,
    /// Softirq threads' milliseconds per MiB (rounds where readable).
    pub(crate) softirqd: PerRound,
}

impl Flow {
    fn push(&mut self, m: Moved) {
        self.bw.0.push(m.bytes_per_s);
        self.cpu.0.push(m.cpu_ms_per_mib);
        self.busy.0.push(m.cpus_busy);
        if let Some(t) = m.softirqd_ms_per_mib {
            self.softirqd.0.push(t);
        }
    }
}

/// Every figure of every round of the RPC-level bench, and the per-round
/// ratios; `RpcReport::new` makes the report of them.
#[derive(Debug, Default)]
pub struct Results {
    pub(crate) tcp_rtt: PerRound,
    pub(crate) tcp_stream: Flow,
    /// The raw TCP stream read into `--outstanding` buffers in turn.
    pub(crate) tcp_stream_k: Flow,
    pub(crate) oncrpc_null_rtt: PerRound,
    pub(crate) oncrpc_read: Flow,
    pub(crate) oncrpc_write: Flow,
    pub(crate) rdma_null_rtt: PerRound,
    pub(crate) rdma_null_rate: PerRound,
    pub(crate) rdma_read: Flow,
    pub(crate) rdma_write: Flow,
    pub(crate) null_rtt_vs_tcp: PerRound,
    pub(crate) null_rtt_vs_oncrpc: PerRound,
    pub(crate) read_vs_tcp: PerRound,
    pub(crate) read_vs_tcp_k: PerRound,
    pub(crate) write_vs_tcp: PerRound,
    pub(crate) read_vs_oncrpc: PerRound,
    pub(crate) write_vs_oncrpc: PerRound,
    /// The WRITE measures repeated without the checksum (`BARE_WRITE`).
    pub(crate) oncrpc_bare_write: Flow,
    pub(crate) rdma_bare_write: Flow,
    pub(crate) bare_write_vs_tcp: PerRound,
    pub(crate) bare_write_vs_oncrpc: PerRound,
    /// Ours' CPU per MiB over the raw TCP stream's of the same round.
    pub(crate) read_cpu_vs_tcp: PerRound,
    pub(crate) write_cpu_vs_tcp: PerRound,
    pub(crate) bare_write_cpu_vs_tcp: PerRound,
    pub(crate) version: u32,
}

/// Runs the RPC-level bench over `dev`: the bench server and the client
/// each on a thread of its own (one current-thread runtime each), every
/// round of `settings`; reports each measure to `progress`.
pub fn measure<D: Device + Clone>(
    settings: &RpcSettings,
    dev: D,
    options: D::Options,
    progress: ProgressRef,
) -> anyhow::Result<Results> {
    let srv = BenchServer::start(
        &settings.rdma,
        settings.listen_ip,
        &dev,
        &options,
        on_thread,
    )?;
    let cli = on_thread(
        "bench-client",
        client(settings.clone(), dev, options, srv.addrs, progress),
    );
    let res = cli.join().map_err(|_| anyhow!("client thread panicked"))?;
    srv.stop();
    res
}

async fn client<D: Device + Clone>(
    args: RpcSettings,
    dev: D,
    options: D::Options,
    a: Addrs,
    bar: ProgressRef,
) -> anyhow::Result<Results> {
    let BenchClients { rdma, tcp, handle } =
        BenchClients::connect(&args.rdma, dev, options, a.rdma, a.rpc_tcp).await?;
    for c in [&rdma, &tcp] {
        DemoClient::new(c.clone())
            .write_verified(pattern(2, MIB))
            .await?;
    }
    let data = pattern(3, MIB);
    let (n, mib, k, rounds) = (
        args.round_trips,
        args.mib,
        args.outstanding.max(1),
        args.rounds.max(1),
    );
    let mut echo = tcp_echo(a.echo).await.context("raw TCP echo connect")?;
    let mut r = Results::default();
    for round in 1..=rounds {
        macro_rules! step {
            ($name:expr, $e:expr) => {{
                bar.start(&format!("round {round}/{rounds}: {}", $name));
                let v = $e.await.with_context(|| $name)?;
                bar.done();
                v
            }};
        }
        // Each triplet puts ours between raw TCP and ONC RPC/TCP, so it is
        // measured right next to both; the order flips every round.
        macro_rules! triplet {
            ($tcp:expr, $ours:expr, $oncrpc:expr) => {{
                if round % 2 == 1 {
                    let t = $tcp;
                    let o = $ours;
                    let c = $oncrpc;
                    (t, o, c)
                } else {
                    let c = $oncrpc;
                    let o = $ours;
                    let t = $tcp;
                    (t, o, c)
                }
            }};
        }
        if args.wants(Measure::Null) {
            let (tcp_rtt, rdma_null, oncrpc_null) = step!(
                "NULL round trips (raw TCP, RPC-over-RDMA, ONC RPC/TCP, interleaved)",
                latency_triplet(&mut echo, &rdma, &tcp, n, round % 2 == 0)
            );
            r.tcp_rtt.0.push(tcp_rtt);
            r.oncrpc_null_rtt.0.push(oncrpc_null);
            r.rdma_null_rtt.0.push(rdma_null);
            r.null_rtt_vs_tcp.0.push(rdma_null / tcp_rtt);
            r.null_rtt_vs_oncrpc.0.push(rdma_null / oncrpc_null);
        }
        if args.wants(Measure::Rate) {
            let rate = step!("RPC-over-RDMA NULL rate", null_rate(&rdma, n * 4, 32));
            r.rdma_null_rate.0.push(rate);
        }
        if args.wants(Measure::Read) {
            let ((tcp_bw, tcp_k_bw), rdma_read, oncrpc_read) = triplet!(
                (
                    step!("raw TCP stream", tcp_stream(a.sink, mib, &data, 1)),
                    step!(
                        "raw TCP stream into as many buffers as READs outstanding",
                        tcp_stream(a.sink, mib, &data, k)
                    )
                ),
                step!(
                    "RPC-over-RDMA READ 1 MiB",
                    rpc_throughput(&rdma, mib, k, Op::Read, &data)
                ),
                step!(
                    "ONC RPC/TCP READ 1 MiB",
                    rpc_throughput(&tcp, mib, k, Op::Read, &data)
                )
            );
            r.read_vs_tcp
                .0
                .push(rdma_read.bytes_per_s / tcp_bw.bytes_per_s);
            r.read_vs_tcp_k
                .0
                .push(rdma_read.bytes_per_s / tcp_k_bw.bytes_per_s);
            r.read_vs_oncrpc
                .0
                .push(rdma_read.bytes_per_s / oncrpc_read.bytes_per_s);
            r.read_cpu_vs_tcp
                .0
                .push(rdma_read.cpu_ms_per_mib / tcp_bw.cpu_ms_per_mib);
            r.tcp_stream.push(tcp_bw);
            r.oncrpc_read.push(oncrpc_read);
            r.rdma_read.push(rdma_read);
            r.tcp_stream_k.push(tcp_k_bw);
        }
        if args.wants(Measure::Write) {
            let (tcp_bw, (rdma_write, rdma_bare), (oncrpc_write, oncrpc_bare)) = triplet!(
                step!("raw TCP stream", tcp_stream(a.sink, mib, &data, 1)),
                (
                    step!(
                        "RPC-over-RDMA WRITE 1 MiB",
                        rpc_throughput(&rdma, mib, k, Op::Write, &data)
                    ),
                    step!(
                        "RPC-over-RDMA WRITE 1 MiB, no checksum",
                        rpc_throughput(&rdma, mib, k, Op::BareWrite, &data)
                    )
                ),
                (
                    step!(
                        "ONC RPC/TCP WRITE 1 MiB",
                        rpc_throughput(&tcp, mib, k, Op::Write, &data)
                    ),
                    step!(
                        "ONC RPC/TCP WRITE 1 MiB, no checksum",
                        rpc_throughput(&tcp, mib, k, Op::BareWrite, &data)
                    )
                )
            );
            let bw = |m: Moved| m.bytes_per_s;
            let cpu = |m: Moved| m.cpu_ms_per_mib;
            r.write_vs_tcp.0.push(bw(rdma_write) / bw(tcp_bw));
            r.write_vs_oncrpc.0.push(bw(rdma_write) / bw(oncrpc_write));
            r.bare_write_vs_tcp.0.push(bw(rdma_bare) / bw(tcp_bw));
            r.bare_write_vs_oncrpc
                .0
                .push(bw(rdma_bare) / bw(oncrpc_bare));
            r.write_cpu_vs_tcp.0.push(cpu(rdma_write) / cpu(tcp_bw));
            r.bare_write_cpu_vs_tcp.0.push(cpu(rdma_bare) / cpu(tcp_bw));
            r.tcp_stream.push(tcp_bw);
            r.oncrpc_write.push(oncrpc_write);
            r.rdma_write.push(rdma_write);
            r.oncrpc_bare_write.push(oncrpc_bare);
            r.rdma_bare_write.push(rdma_bare);
        }
    }
    r.version = negotiated_version(&handle);
    Ok(r)
}
