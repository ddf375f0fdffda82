//! The verbs bench (`rpcrdma bench verbs`): a verbs provider (software
//! iWARP, or an RDMA device through rdma-core) against raw TCP on loopback, both
//! run between the same two threads (one current-thread tokio runtime
//! each):
//!
//! * 1 MiB RDMA Write throughput vs a raw TCP stream of 1 MiB writes;
//! * 1 MiB RDMA Read throughput vs the same raw TCP stream;
//! * 64-byte Send/Recv ping-pong round trip vs a raw TCP ping-pong.
//!
//! Each figure is the median of several rounds, and each ratio the median
//! of per-round ratios. Within a round the throughput measures run back to
//! back, and the two ping-pongs run between the same two threads over
//! connections kept open, in interleaved batches of 100 round trips (the
//! order flips from batch to batch): a virtual machine's wake-up time
//! changes every few seconds, and interleaving makes both sides see the
//! same mix. No side busy-polls (unless the provider was opened to poll).
//! Each round's figures go to [`crate::Progress::note`]; the report is a table
//! or one JSON object.

use std::fmt::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use bytes::{Bytes, BytesMut};
use rpcrdma_verbs::{
    Access, CompletionQueue, ConnectRequest, Device, Listener, MemoryRegion, ProtectionDomain,
    QpCaps, QpParams, QueuePair, RecvWr, RemoteAddr, SendWr, Sge, WcStatus, WorkCompletion,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use serde::Serialize;

use crate::aligned::PageAligned;
use crate::progress::ProgressRef;
use crate::stats::median;
use crate::threads::{join, on_thread};
use crate::wake::Seen;

const MIB: usize = 1 << 20;

/// One of the verbs bench's measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerbsMeasure {
    /// RDMA Write throughput (and the raw TCP stream).
    Write,
    /// RDMA Read throughput (and the raw TCP stream).
    Read,
    /// Send/Recv ping-pong (and the raw TCP ping-pong).
    Pingpong,
}

/// What the verbs bench is asked to do.
#[derive(Debug, Clone, PartialEq)]
pub struct VerbsSettings {
    /// Whether MPA CRC32c was negotiated (said in the report).
    pub crc: bool,
    /// MiB moved per throughput round.
    pub mib: usize,
    /// Round trips per ping-pong round.
    pub round_trips: usize,
    /// Rounds; each measures raw TCP and ours back to back.
    pub rounds: usize,
    /// 1 MiB operations kept in flight.
    pub window: usize,
    /// Run only these measures (empty: all).
    pub only: Vec<VerbsMeasure>,
    /// Address the verbs server side listens on (raw TCP always runs on
    /// 127.0.0.1).
    pub listen_ip: IpAddr,
}

// ------------------------------------------------------------------ raw TCP

/// Raw TCP stream: thread A writes `mib` 1 MiB buffers, thread B reads
/// them; returns bytes per second as B sees them.
fn tcp_stream(mib: usize) -> anyhow::Result<f64> {
    let (addr_tx, addr_rx) = std_mpsc::channel::<SocketAddr>();
    let barrier = Arc::new(Barrier::new(2));
    let b2 = barrier.clone();
    let b = on_thread("bench-b", async move {
        let l = TcpListener::bind("127.0.0.1:0").await?;
        addr_tx.send(l.local_addr()?)?;
        let (mut s, _) = l.accept().await?;
        s.set_nodelay(true)?;
        let mut buf = PageAligned::zeroed(MIB);
        let total = mib * MIB;
        let mut got = 0;
        b2.wait();
        let t0 = Instant::now();
        while got < total {
            let n = s.read(buf.as_mut_slice()).await?;
            if n == 0 {
                bail!("TCP stream ended early");
            }
            got += n;
        }
        Ok(total as f64 / t0.elapsed().as_secs_f64())
    });
    let a = on_thread("bench-a", async move {
        let addr = addr_rx.recv()?;
        let mut s = TcpStream::connect(addr).await?;
        s.set_nodelay(true)?;
        let buf = vec![0x5au8; MIB];
        barrier.wait();
        for _ in 0..mib {
            s.write_all(&buf).await?;
        }
        s.flush().await?;
        Ok(())
    });
    join(a)?;
    join(b)
}

// ------------------------------------------------------------------ verbs

struct Side<D: Device> {
    pd: D::Pd,
    scq: D::Cq,
    rcq: D::Cq,
    qp: D::Qp,
}

/// The provider, its options and where to listen: what each thread needs.
struct Prov<D: Device> {
    dev: D,
    options: D::Options,
    ip: IpAddr,
}

impl<D: Device + Clone> Clone for Prov<D> {
    fn clone(&self) -> Self {
        Prov {
            dev: self.dev.clone(),
            options: self.options.clone(),
            ip: self.ip,
        }
    }
}

/// What thread A tells thread B (and back) outside the data path.
enum Ctl {
    Addr(SocketAddr),
    Region(RemoteAddr),
}

fn caps() -> QpCaps {
    QpCaps {
        send_depth: 256,
        recv_depth: 256,
        ird: 32,
        ord: 32,
    }
}

async fn server_side<D: Device>(
    p: &Prov<D>,
    to_a: std_mpsc::Sender<Ctl>,
) -> anyhow::Result<Side<D>> {
    let dev = &p.dev;
    let l = dev
        .listen(SocketAddr::new(p.ip, 0), p.options.clone())
        .await?;
    to_a.send(Ctl::Addr(l.local_addr()))?;
    let (pd, scq, rcq) = (dev.alloc_pd()?, dev.create_cq(1024)?, dev.create_cq(1024)?);
    let req = l.accept().await?;
    let qp = req
        .accept(
            QpParams {
                pd: &pd,
                send_cq: &scq,
                recv_cq: &rcq,
                caps: caps(),
                options: p.options.clone(),
            },
            Bytes::new(),
        )
        .await?;
    Ok(Side { pd, scq, rcq, qp })
}

async fn client_side<D: Device>(p: &Prov<D>, addr: SocketAddr) -> anyhow::Result<Side<D>> {
    let dev = &p.dev;
    let (pd, scq, rcq) = (dev.alloc_pd()?, dev.create_cq(1024)?, dev.create_cq(1024)?);
    let (qp, _) = dev
        .connect(
            addr,
            QpParams {
                pd: &pd,
                send_cq: &scq,
                recv_cq: &rcq,
                caps: caps(),
                options: p.options.clone(),
            },
            Bytes::new(),
        )
        .await?;
    Ok(Side { pd, scq, rcq, qp })
}

async fn wait_one<C: CompletionQueue>(
    cq: &C,
    out: &mut Vec<WorkCompletion>,
) -> anyhow::Result<WorkCompletion> {
    loop {
        if let Some(wc) = out.pop() {
            if wc.status != WcStatus::Success {
                bail!("work request {} failed: {:?}", wc.wr_id, wc.status);
            }
            return Ok(wc);
        }
        // No timer here: a dead peer flushes every request, which wakes us.
        if cq.poll(out, 64) == 0 {
            cq.wait().await;
        } else {
            out.reverse();
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Write,
    Read,
}

/// 1 MiB RDMA Writes (A -> B, then a Send) or Reads (A <- B), `window` in
/// flight; returns bytes per second.
fn verbs_throughput<D: Device + Clone>(
    p: &Prov<D>,
    op: Op,
    mib: usize,
    window: usize,
) -> anyhow::Result<f64> {
    let (pa, pb) = (p.clone(), p.clone());
    let (to_a, from_b) = std_mpsc::channel::<Ctl>();
    let (to_b, from_a) = std_mpsc::channel::<()>();
    let barrier = Arc::new(Barrier::new(2));
    let b2 = barrier.clone();
    let b = on_thread("bench-b", async move {
        let s = server_side(&pb, to_a.clone()).await?;
        // A sink for Writes or a source for Reads.
        let mr = match op {
            Op::Write => {
                s.pd.register_mut(BytesMut::zeroed(MIB), Access::REMOTE_WRITE)?
            }
            Op::Read => {
                s.pd.register_bytes(Bytes::from(vec![0xa5u8; MIB]), Access::REMOTE_READ)?
            }
        };
        s.qp.post_recv(RecvWr {
            wr_id: 1,
            buf: BytesMut::zeroed(64),
        })?;
        to_a.send(Ctl::Region(mr.remote(0)))?;
        let _ = tokio::task::spawn_blocking(move || b2.wait()).await;
        let t0 = Instant::now();
        let mut wcs = Vec::new();
        // Writes end with a Send; Reads end when A says so. Either way B's
        // I/O task does the work.
        wait_one(&s.rcq, &mut wcs).await?;
        let secs = t0.elapsed().as_secs_f64();
        let _ = from_a.recv();
        drop(mr);
        Ok(secs)
    });
    let a = on_thread("bench-a", async move {
        let Ctl::Addr(addr) = from_b.recv()? else {
            bail!("expected the server address")
        };
        let s = client_side(&pa, addr).await?;
        let Ctl::Region(remote) = from_b.recv()? else {
            bail!("expected the remote region")
        };
        let local = match op {
            Op::Write => {
                s.pd.register_bytes(Bytes::from(vec![0x3cu8; MIB]), Access::LOCAL_READ)?
            }
            Op::Read => {
                s.pd.register_mut(BytesMut::zeroed(MIB), Access::LOCAL_WRITE)?
            }
        };
        let _ = tokio::task::spawn_blocking(move || barrier.wait()).await;
        let t0 = Instant::now();
        let mut wcs = Vec::new();
        let (mut posted, mut done) = (0usize, 0usize);
        while done < mib {
            while posted < mib && posted - done < window {
                let wr = match op {
                    Op::Write => {
                        SendWr::write(posted as u64, vec![Sge::Region(local.sge(0, MIB))], remote)
                    }
                    Op::Read => SendWr::read(posted as u64, local.sge(0, MIB), remote),
                };
                s.qp.post_send(wr)?;
                posted += 1;
            }
            wait_one(&s.scq, &mut wcs).await?;
            done += 1;
        }
        let secs = t0.elapsed().as_secs_f64();
        // Tell B we are done (Writes: B measures until this Send arrives).
        s.qp.post_send(SendWr::send(
            u64::MAX,
            vec![Sge::Bytes(Bytes::from_static(b"done"))],
        ))?;
        wait_one(&s.scq, &mut wcs).await?;
        let _ = to_b.send(());
        tokio::time::sleep(Duration::from_millis(10)).await;
        s.qp.disconnect().await;
        Ok(secs)
    });
    let a_secs = join(a)?;
    let b_secs = join(b)?;
    let secs = match op {
        // Write throughput as the target sees it (data placed, Send seen).
        Op::Write => b_secs,
        // Read throughput as the reader sees it (data placed, completed).
        Op::Read => a_secs,
    };
    Ok((mib * MIB) as f64 / secs)
}

/// Round trips per batch of the interleaved ping-pong measure.
const PINGPONG_BATCH: usize = 100;

/// Echoes `total` 64-byte Sends back on `s` (thread B's side).
async fn qp_echo<D: Device>(s: &Side<D>, total: usize) -> anyhow::Result<()> {
    let msg = Bytes::from(vec![1u8; 64]);
    for i in 0..16 {
        s.qp.post_recv(RecvWr {
            wr_id: i,
            buf: BytesMut::zeroed(64),
        })?;
    }
    let mut wcs = Vec::new();
    for _ in 0..total {
        let wc = wait_one(&s.rcq, &mut wcs).await?;
        let buf = wc.buf.unwrap_or_else(|| BytesMut::zeroed(64));
        s.qp.post_recv(RecvWr {
            wr_id: wc.wr_id,
            buf,
        })?;
        let mut wr = SendWr::send(0, vec![Sge::Bytes(msg.clone())]);
        wr.signaled = false;
        s.qp.post_send(wr)?;
    }
    Ok(())
}

/// Echoes `total` 64-byte messages back on `s`.
async fn tcp_echo(mut s: TcpStream, total: usize) -> anyhow::Result<()> {
    let mut m = [0u8; 64];
    for _ in 0..total {
        s.read_exact(&mut m).await?;
        s.write_all(&m).await?;
    }
    Ok(())
}

/// Seconds taken by `n` Send/Recv round trips (thread A's side).
async fn qp_batch<D: Device>(
    s: &Side<D>,
    wcs: &mut Vec<WorkCompletion>,
    n: usize,
) -> anyhow::Result<f64> {
    let msg = Bytes::from(vec![2u8; 64]);
    let t0 = Instant::now();
    for _ in 0..n {
        let mut wr = SendWr::send(0, vec![Sge::Bytes(msg.clone())]);
        wr.signaled = false;
        s.qp.post_send(wr)?;
        let wc = wait_one(&s.rcq, wcs).await?;
        let buf = wc.buf.unwrap_or_else(|| BytesMut::zeroed(64));
        s.qp.post_recv(RecvWr {
            wr_id: wc.wr_id,
            buf,
        })?;
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// Seconds taken by `n` raw TCP round trips.
async fn tcp_batch(s: &mut TcpStream, n: usize) -> anyhow::Result<f64> {
    let mut m = [7u8; 64];
    let t0 = Instant::now();
    for _ in 0..n {
        s.write_all(&m).await?;
        s.read_exact(&mut m).await?;
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// 64-byte ping-pong over raw TCP and over Send/Recv between the same two
/// threads, measured in interleaved batches of [`PINGPONG_BATCH`] round
/// trips (the order flips from batch to batch and between rounds), so both
/// see the same mix of machine states; returns the mean round trips
/// (raw TCP, ours) in seconds.
fn pingpong_pair<D: Device + Clone>(
    p: &Prov<D>,
    iters: usize,
    flip: bool,
) -> anyhow::Result<(f64, f64)> {
    let (pa, pb) = (p.clone(), p.clone());
    let (to_a, from_b) = std_mpsc::channel::<Ctl>();
    let warm = iters / 10;
    let batch = PINGPONG_BATCH.min(iters);
    let batches = iters.div_ceil(batch);
    let total = warm + batches * batch;
    let b = on_thread("bench-b", async move {
        let l = TcpListener::bind("127.0.0.1:0").await?;
        to_a.send(Ctl::Addr(l.local_addr()?))?;
        let (t, _) = l.accept().await?;
        t.set_nodelay(true)?;
        let tcp = tokio::spawn(tcp_echo(t, total));
        let s = server_side(&pb, to_a).await?;
        qp_echo(&s, total).await?;
        tcp.await??;
        s.qp.closed().await;
        drop(s.scq);
        Ok(())
    });
    let a = on_thread("bench-a", async move {
        let Ctl::Addr(tcp_addr) = from_b.recv()? else {
            bail!("expected the TCP address")
        };
        let mut t = TcpStream::connect(tcp_addr).await?;
        t.set_nodelay(true)?;
        let Ctl::Addr(addr) = from_b.recv()? else {
            bail!("expected the server address")
        };
        let s = client_side(&pa, addr).await?;
        for i in 0..16 {
            s.qp.post_recv(RecvWr {
                wr_id: i,
                buf: BytesMut::zeroed(64),
            })?;
        }
        let mut wcs = Vec::new();
        tcp_batch(&mut t, warm).await?;
        qp_batch(&s, &mut wcs, warm).await?;
        let (mut t_tcp, mut t_qp) = (0.0, 0.0);
        for i in 0..batches {
            if (i % 2 == 0) != flip {
                t_tcp += tcp_batch(&mut t, batch).await?;
                t_qp += qp_batch(&s, &mut wcs, batch).await?;
            } else {
                t_qp += qp_batch(&s, &mut wcs, batch).await?;
                t_tcp += tcp_batch(&mut t, batch).await?;
            }
        }
        s.qp.disconnect().await;
        let n = (batches * batch) as f64;
        Ok((t_tcp / n, t_qp / n))
    });
    let rtts = join(a)?;
    join(b)?;
    Ok(rtts)
}

// ------------------------------------------------------------------ report

/// Median figures and the median of per-round ratios (each ratio compares
/// two measurements taken back to back, under the same machine load).
#[derive(Default)]
struct Series {
    tcp: Vec<f64>,
    ours: Vec<f64>,
    ratio: Vec<f64>,
}

impl Series {
    fn push(&mut self, tcp: f64, ours: f64, ratio: f64) {
        self.tcp.push(tcp);
        self.ours.push(ours);
        self.ratio.push(ratio);
    }

    fn medians(&self) -> (f64, f64, f64) {
        if self.ratio.is_empty() {
            return (f64::NAN, f64::NAN, f64::NAN);
        }
        (
            median(self.tcp.clone()),
            median(self.ours.clone()),
            median(self.ratio.clone()),
        )
    }
}

/// The verbs bench's ratios, and their goals (as text).
#[derive(Debug, Clone, Serialize)]
struct VerbsRatios<T> {
    write_1mib_vs_tcp: T,
    read_1mib_vs_tcp: T,
    send64_rtt_vs_tcp: T,
}

/// The report of the verbs bench (`rpcrdma bench verbs`):
/// [`VerbsReport::json`] or [`VerbsReport::text`]. Figures not measured
/// are NaN (null in the JSON).
#[derive(Debug, Clone, Serialize)]
pub struct VerbsReport {
    bench: &'static str,
    provider: String,
    transport: &'static str,
    method: &'static str,
    crc: bool,
    rounds: usize,
    mib_per_round: usize,
    round_trips_per_round: usize,
    window: usize,
    tcp_stream_mib_per_s: f64,
    write_1mib_mib_per_s: f64,
    read_1mib_mib_per_s: f64,
    tcp_pingpong_rtt_us: f64,
    send64_pingpong_rtt_us: f64,
    ratios: VerbsRatios<f64>,
    goals: VerbsRatios<&'static str>,
    wake_state: Seen,
}

/// Runs the verbs bench over `dev` (opened with `options`; `label` names
/// it in the report): every round of `a`, each round's figures noted to
/// `progress`.
pub fn measure<D: Device + Clone>(
    a: &VerbsSettings,
    dev: D,
    options: D::Options,
    label: String,
    progress: ProgressRef,
) -> anyhow::Result<VerbsReport> {
    let p = &Prov {
        dev,
        options,
        ip: a.listen_ip,
    };
    let n = a.rounds;
    let note = |what: &str, round: usize, x: f64| {
        progress.note(&format!("bench verbs: round {round}/{n}: {what}: {x:.6e}"));
    };
    let want = |m: VerbsMeasure| a.only.is_empty() || a.only.contains(&m);
    let (mut write, mut read, mut ping) = (Series::default(), Series::default(), Series::default());
    for r in 1..=n {
        if want(VerbsMeasure::Write) || want(VerbsMeasure::Read) {
            let tcp = tcp_stream(a.mib).context("raw TCP stream")?;
            note("raw TCP stream (B/s)", r, tcp);
            if want(VerbsMeasure::Write) {
                let w = verbs_throughput(p, Op::Write, a.mib, a.window).context("RDMA Write")?;
                note("RDMA Write 1 MiB (B/s)", r, w);
                write.push(tcp, w, w / tcp);
            }
            if want(VerbsMeasure::Read) {
                let x = verbs_throughput(p, Op::Read, a.mib, a.window).context("RDMA Read")?;
                note("RDMA Read 1 MiB (B/s)", r, x);
                read.push(tcp, x, x / tcp);
            }
        }
        if want(VerbsMeasure::Pingpong) {
            let (tcp, ours) = pingpong_pair(p, a.round_trips, r % 2 == 0).context("ping-pong")?;
            note("raw TCP 64 B ping-pong RTT (s)", r, tcp);
            note("Send/Recv 64 B ping-pong RTT (s)", r, ours);
            ping.push(tcp, ours, ours / tcp);
        }
    }
    let (_, write_bw, r_w) = write.medians();
    let (_, read_bw, r_r) = read.medians();
    // Both throughput series pair with the same TCP rounds.
    let tcp_rounds = if write.tcp.is_empty() {
        &read.tcp
    } else {
        &write.tcp
    };
    let tcp_bw = if tcp_rounds.is_empty() {
        f64::NAN
    } else {
        median(tcp_rounds.clone())
    };
    let (tcp_rtt, send_rtt, r_p) = ping.medians();
    let rtts_us: Vec<f64> = ping.tcp.iter().map(|x| x * 1e6).collect();
    Ok(VerbsReport {
        bench: "verbs",
        provider: label,
        transport: "loopback, two threads, one current-thread tokio runtime each",
        method: "paired rounds: throughput measures back to back; ping-pongs between the same two threads in interleaved batches of 100 round trips; ratios are medians of per-round ratios; no busy polling",
        crc: a.crc,
        rounds: n,
        mib_per_round: a.mib,
        round_trips_per_round: a.round_trips,
        window: a.window,
        tcp_stream_mib_per_s: tcp_bw / MIB as f64,
        write_1mib_mib_per_s: write_bw / MIB as f64,
        read_1mib_mib_per_s: read_bw / MIB as f64,
        tcp_pingpong_rtt_us: tcp_rtt * 1e6,
        send64_pingpong_rtt_us: send_rtt * 1e6,
        ratios: VerbsRatios {
            write_1mib_vs_tcp: r_w,
            read_1mib_vs_tcp: r_r,
            send64_rtt_vs_tcp: r_p,
        },
        goals: VerbsRatios {
            write_1mib_vs_tcp: ">= 0.9",
            read_1mib_vs_tcp: ">= 0.85",
            send64_rtt_vs_tcp: "<= 1.2",
        },
        wake_state: Seen::from_rtts(&rtts_us),
    })
}

impl VerbsReport {
    /// The report as one JSON object.
    pub fn json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a report serializes")
    }

    /// The report as a table.
    pub fn text(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{} vs raw TCP on loopback (medians of {} paired rounds, CRC {})",
            self.provider,
            self.rounds,
            if self.crc { "on" } else { "off" }
        );
        let _ = writeln!(
            o,
            "{:<28} {:>14} {:>14} {:>8} {:>8}",
            "measure", "ours", "raw TCP", "ratio", "goal"
        );
        let mbs = |x: f64| format!("{x:.0} MiB/s");
        let us = |x: f64| format!("{x:.1} us");
        let _ = writeln!(
            o,
            "{:<28} {:>14} {:>14} {:>8.3} {:>8}",
            "RDMA Write 1 MiB",
            mbs(self.write_1mib_mib_per_s),
            mbs(self.tcp_stream_mib_per_s),
            self.ratios.write_1mib_vs_tcp,
            ">=0.9"
        );
        let _ = writeln!(
            o,
            "{:<28} {:>14} {:>14} {:>8.3} {:>8}",
            "RDMA Read 1 MiB",
            mbs(self.read_1mib_mib_per_s),
            mbs(self.tcp_stream_mib_per_s),
            self.ratios.read_1mib_vs_tcp,
            ">=0.85"
        );
        let _ = writeln!(
            o,
            "{:<28} {:>14} {:>14} {:>8.3} {:>8}",
            "Send/Recv 64 B RTT",
            us(self.send64_pingpong_rtt_us),
            us(self.tcp_pingpong_rtt_us),
            self.ratios.send64_rtt_vs_tcp,
            "<=1.2"
        );
        let _ = writeln!(o, "{}", self.wake_state.line());
        o
    }
}
