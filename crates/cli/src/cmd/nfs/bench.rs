//! `rpcrdma nfs bench HOST:/DIR`: 1 MiB READ and WRITE throughput and the
//! GETATTR round trip over RPC-over-RDMA against the same server over TCP,
//! in one run, with ratios: NFSv4.1 on both by default (`--vers 4.1`;
//! NFSv3 with `--vers 3` or when the server does not serve NFSv4.1).
//!
//! Method: paired rounds. Each round measures both transports back to
//! back (the order flips every round) on a file of `--size` MiB created
//! in DIR: WRITE (UNSTABLE, 4 requests in flight, then COMMIT), READ (4 in
//! flight) and `--getattrs` sequential GETATTRs (median). Ratios are taken
//! within each round; the report gives the median of the per-round ratios
//! beside the median of each figure.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use bytes::Bytes;
use clap::Args;
use rpcrdma_nfs3::client::NfsClient;
use rpcrdma_nfs4::client::{Nfs4Client, OpenOptions};

use super::client::{open_any, parse_target, Opened, Remote, Vers};
use super::show::v4_report;
use super::workload::{self, concurrently, WorkloadArgs};
use crate::cmd::bench::{median, num};
use crate::cmd::connect::TransportKind;
use crate::cmd::connect::{connect, resolve};
use crate::cmd::{runtime, Scheduler};
use rpcrdma_demoprog::DemoClient;
use rpcrdma_nfs3::client::IN_FLIGHT;
use rpcrdma_oncrpc::ClientConfig;

/// Arguments of `rpcrdma nfs bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// HOST:/DIR where a scratch file is written, read and removed.
    target: String,
    /// NFS over TCP port of the same server.
    #[arg(long, default_value_t = 2049)]
    tcp_port: u16,
    /// MiB per READ/WRITE measure.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    size: u64,
    /// Paired rounds.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    rounds: u32,
    /// GETATTR calls per round trip measure.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    getattrs: u32,
    /// Print JSON (figures of every round too).
    #[arg(long)]
    json: bool,
    /// Also measure the demo program's 1 MiB READ and WRITE on the same
    /// server, ports and transports, in the same rounds, with the same
    /// window (the server runs `rpcrdma nfs serve --demo-program`): the
    /// transport's own speed beside NFS's, with NFS/demo ratios.
    #[arg(long, conflicts_with = "workloads")]
    demo: bool,
    #[command(flatten)]
    remote: Remote,
    #[command(flatten)]
    workloads: WorkloadArgs,
}

#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    write_mib_s: f64,
    read_mib_s: f64,
    getattr_us: f64,
    /// The demo program's, with `--demo` (NaN without).
    demo_write_mib_s: f64,
    demo_read_mib_s: f64,
}

/// The demo program's 1 MiB WRITEs and READs (as `rpcrdma bench` makes
/// them) of `size` octets, [`IN_FLIGHT`] outstanding as the NFS client keeps them:
/// (write, read) in MiB/s.
async fn measure_demo(d: &DemoClient, size: usize) -> anyhow::Result<(f64, f64)> {
    const MIB: usize = 1 << 20;
    let n = size.div_ceil(MIB);
    let data = pattern(MIB);
    let (d2, data2) = (d.clone(), data.clone());
    let t = Instant::now();
    concurrently(n, IN_FLIGHT, move |_| {
        let (d, data) = (d2.clone(), data2.clone());
        async move {
            d.write(data).await.context("demo WRITE")?;
            Ok(())
        }
    })
    .await?;
    let w = t.elapsed().as_secs_f64();
    // As `rpcrdma bench`: one seed (the server keeps that pattern made),
    // its every byte checked once, then READs whose length is checked.
    d.read_verified(1, MIB as u32).await.context("demo READ")?;
    let d2 = d.clone();
    let t = Instant::now();
    concurrently(n, IN_FLIGHT, move |_| {
        let d = d2.clone();
        async move {
            match d.read(1, MIB as u32).await.context("demo READ")? {
                rpcrdma_demoprog::ReadRes::DemoOk(ok) if ok.data.len() == MIB => Ok(()),
                rpcrdma_demoprog::ReadRes::DemoOk(ok) => {
                    anyhow::bail!("demo READ: {} octets, not 1 MiB", ok.data.len())
                }
                rpcrdma_demoprog::ReadRes::Default(s) => anyhow::bail!("demo READ: {s:?}"),
            }
        }
    })
    .await?;
    let r = t.elapsed().as_secs_f64();
    let mib = (n * MIB) as f64 / 1048576.0;
    Ok((mib / w.max(1e-9), mib / r.max(1e-9)))
}

/// A demo program client on the NFS server's port over `kind`.
async fn demo_client(
    remote: &Remote,
    kind: TransportKind,
    host: &str,
    port: u16,
) -> anyhow::Result<DemoClient> {
    let at = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let mut cfg = ClientConfig::default();
    cfg.timeout = std::time::Duration::from_secs(remote.timeout.max(1));
    let c = connect(resolve(&at)?, kind, &remote.rdma, cfg).await?;
    let d = DemoClient::new(c.client);
    d.null().await.with_context(|| {
        format!("the demo program does not answer on {at} (start the server with --demo-program)")
    })?;
    Ok(d)
}

fn pattern(size: usize) -> Bytes {
    Bytes::from(
        (0..size)
            .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0])
            .collect::<Vec<u8>>(),
    )
}

async fn measure(c: &Opened, path: &[u8], size: usize, getattrs: u32) -> anyhow::Result<Figures> {
    match c {
        Opened::V3(c, rest) => measure_v3(c, rest, size, getattrs).await,
        Opened::V4(c) => measure_v4(c, path, size, getattrs).await,
    }
}

async fn measure_v3(
    c: &NfsClient,
    dir_rest: &[u8],
    size: usize,
    getattrs: u32,
) -> anyhow::Result<Figures> {
    let (dir, _) = c.lookup_path(dir_rest).await?;
    let name = format!(".rpcrdma-nfs-bench-{}", std::process::id());
    let fh = c.create(&dir, name.as_bytes(), 0o600).await?;
    let data = pattern(size);
    let t = Instant::now();
    c.write_file(&fh, &data).await?;
    let w = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut same = true;
    let mut at = 0usize;
    let n = c
        .read_file(&fh, size as u64, |chunk| {
            same &= data.get(at..at + chunk.len()) == Some(chunk);
            at += chunk.len();
            Ok(())
        })
        .await?;
    let r = t.elapsed().as_secs_f64();
    anyhow::ensure!(
        same && n as usize == size,
        "the data read back differs from what was written"
    );
    let mut rtt = Vec::with_capacity(getattrs as usize);
    for _ in 0..getattrs {
        let t = Instant::now();
        c.getattr(&fh).await?;
        rtt.push(t.elapsed().as_secs_f64() * 1e6);
    }
    c.remove(&dir, name.as_bytes()).await?;
    let mib = size as f64 / 1048576.0;
    Ok(Figures {
        write_mib_s: mib / w.max(1e-9),
        read_mib_s: mib / r.max(1e-9),
        getattr_us: median(rtt),
        ..Figures::default()
    })
}

/// The same over NFSv4.1: OPEN (create, read and write), WRITEs and
/// COMMIT, READs, GETATTRs (each a COMPOUND with SEQUENCE), CLOSE, REMOVE.
async fn measure_v4(
    c: &Nfs4Client,
    path: &[u8],
    size: usize,
    getattrs: u32,
) -> anyhow::Result<Figures> {
    let (dir, _, _) = c.resolve(path, true).await?;
    let name = format!(".rpcrdma-nfs-bench-{}", std::process::id());
    let f = c
        .open(
            &dir,
            name.as_bytes(),
            OpenOptions::read_write().create(0o600).truncate(),
        )
        .await?;
    let data = pattern(size);
    let t = Instant::now();
    f.write_file(&data).await?;
    let w = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut same = true;
    let mut at = 0usize;
    let n = f
        .read_to(size as u64, |chunk| {
            same &= data.get(at..at + chunk.len()) == Some(chunk);
            at += chunk.len();
            Ok(())
        })
        .await?;
    let r = t.elapsed().as_secs_f64();
    anyhow::ensure!(
        same && n as usize == size,
        "the data read back differs from what was written"
    );
    let mut rtt = Vec::with_capacity(getattrs as usize);
    for _ in 0..getattrs {
        let t = Instant::now();
        c.getattr(f.fh()).await?;
        rtt.push(t.elapsed().as_secs_f64() * 1e6);
    }
    f.close().await?;
    c.remove(&dir, name.as_bytes()).await?;
    let mib = size as f64 / 1048576.0;
    Ok(Figures {
        write_mib_s: mib / w.max(1e-9),
        read_mib_s: mib / r.max(1e-9),
        getattr_us: median(rtt),
        ..Figures::default()
    })
}

pub(crate) fn run(a: BenchArgs) -> anyhow::Result<ExitCode> {
    let rt = runtime(Scheduler::MultiThread)?;
    rt.block_on(async {
        if a.workloads.workloads {
            workload::run(
                &a.workloads,
                &a.remote,
                &a.target,
                a.tcp_port,
                a.size,
                a.rounds,
                a.json,
            )
            .await?;
            return Ok(ExitCode::SUCCESS);
        }
        let (host, path) = parse_target(&a.target)?;
        let size = (a.size as usize) << 20;
        let rdma_port = a.remote.port;
        let rdma = open_any(&a.remote, TransportKind::Rdma, rdma_port, &host, &path).await?;
        // The same version over TCP as the RDMA client settled on.
        let mut remote = a.remote.clone();
        remote.vers = Some(match &rdma {
            Opened::V3(..) => Vers::V3,
            Opened::V4(_) => Vers::V41,
        });
        let tcp = open_any(&remote, TransportKind::Tcp, Some(a.tcp_port), &host, &path).await?;
        let demo = if a.demo {
            let r = demo_client(&a.remote, TransportKind::Rdma, &host, rdma_port.unwrap_or(20049)).await?;
            let t = demo_client(&a.remote, TransportKind::Tcp, &host, a.tcp_port).await?;
            Some((r, t))
        } else {
            None
        };
        let version = match &rdma {
            Opened::V3(..) => "NFSv3",
            Opened::V4(_) => "NFSv4.1",
        };
        let mut rounds = Vec::new();
        for round in 0..a.rounds {
            let (mut r, mut t) = if round % 2 == 0 {
                let r = measure(&rdma, &path, size, a.getattrs).await.context("over RPC-over-RDMA")?;
                let t = measure(&tcp, &path, size, a.getattrs).await.context("over TCP")?;
                (r, t)
            } else {
                let t = measure(&tcp, &path, size, a.getattrs).await.context("over TCP")?;
                let r = measure(&rdma, &path, size, a.getattrs).await.context("over RPC-over-RDMA")?;
                (r, t)
            };
            (r.demo_write_mib_s, r.demo_read_mib_s) = (f64::NAN, f64::NAN);
            (t.demo_write_mib_s, t.demo_read_mib_s) = (f64::NAN, f64::NAN);
            if let Some((dr, dt)) = &demo {
                let order: [(&DemoClient, &mut Figures, &str); 2] = if round % 2 == 0 {
                    [(dr, &mut r, "RPC-over-RDMA"), (dt, &mut t, "TCP")]
                } else {
                    [(dt, &mut t, "TCP"), (dr, &mut r, "RPC-over-RDMA")]
                };
                for (d, f, over) in order {
                    (f.demo_write_mib_s, f.demo_read_mib_s) = measure_demo(d, size)
                        .await
                        .with_context(|| format!("the demo program over {over}"))?;
                }
            }
            if !a.json {
                eprintln!(
                    "round {}: RDMA write {:.1} read {:.1} MiB/s getattr {:.1} us | TCP write {:.1} read {:.1} MiB/s getattr {:.1} us",
                    round + 1, r.write_mib_s, r.read_mib_s, r.getattr_us, t.write_mib_s, t.read_mib_s, t.getattr_us
                );
            }
            rounds.push((r, t));
        }
        let med = |f: &dyn Fn(&(Figures, Figures)) -> f64| median(rounds.iter().map(f).collect());
        let rw = med(&|x| x.0.write_mib_s);
        let rr = med(&|x| x.0.read_mib_s);
        let rg = med(&|x| x.0.getattr_us);
        let tw = med(&|x| x.1.write_mib_s);
        let tr = med(&|x| x.1.read_mib_s);
        let tg = med(&|x| x.1.getattr_us);
        let write_ratio = med(&|x| x.0.write_mib_s / x.1.write_mib_s);
        let read_ratio = med(&|x| x.0.read_mib_s / x.1.read_mib_s);
        let getattr_ratio = med(&|x| x.0.getattr_us / x.1.getattr_us);
        // With --demo: the demo program's figures and NFS/demo per round.
        let (drw, drr, dtw, dtr) = (
            med(&|x| x.0.demo_write_mib_s),
            med(&|x| x.0.demo_read_mib_s),
            med(&|x| x.1.demo_write_mib_s),
            med(&|x| x.1.demo_read_mib_s),
        );
        let (nd_rw, nd_rr, nd_tw, nd_tr) = (
            med(&|x| x.0.write_mib_s / x.0.demo_write_mib_s),
            med(&|x| x.0.read_mib_s / x.0.demo_read_mib_s),
            med(&|x| x.1.write_mib_s / x.1.demo_write_mib_s),
            med(&|x| x.1.read_mib_s / x.1.demo_read_mib_s),
        );
        if a.json {
            let fig = |f: &Figures| {
                let mut v = serde_json::json!({
                    "write_mib_s": num(f.write_mib_s),
                    "read_mib_s": num(f.read_mib_s),
                    "getattr_rtt_us": num(f.getattr_us),
                });
                if a.demo {
                    v["demo_write_mib_s"] = num(f.demo_write_mib_s);
                    v["demo_read_mib_s"] = num(f.demo_read_mib_s);
                }
                v
            };
            let v = serde_json::json!({
                "target": a.target,
                "version": version,
                "size_mib": a.size,
                "rounds": a.rounds,
                "getattrs": a.getattrs,
                "rpc_over_rdma": { "write_mib_s": num(rw), "read_mib_s": num(rr), "getattr_rtt_us": num(rg) },
                "tcp": { "write_mib_s": num(tw), "read_mib_s": num(tr), "getattr_rtt_us": num(tg) },
                "ratios_rdma_over_tcp": {
                    "write_throughput": num(write_ratio),
                    "read_throughput": num(read_ratio),
                    "getattr_rtt": num(getattr_ratio),
                },
                "demo": a.demo.then(|| serde_json::json!({
                    "rpc_over_rdma": { "write_mib_s": num(drw), "read_mib_s": num(drr) },
                    "tcp": { "write_mib_s": num(dtw), "read_mib_s": num(dtr) },
                })),
                "ratios_nfs_over_demo": a.demo.then(|| serde_json::json!({
                    "rpc_over_rdma": { "write_throughput": num(nd_rw), "read_throughput": num(nd_rr) },
                    "tcp": { "write_throughput": num(nd_tw), "read_throughput": num(nd_tr) },
                })),
                "per_round": rounds.iter().map(|(r, t)| serde_json::json!({"rpc_over_rdma": fig(r), "tcp": fig(t)})).collect::<Vec<_>>(),
            });
            println!("{}", serde_json::to_string_pretty(&v)?);
        } else {
            println!("{version} bench on {} ({} MiB, {} rounds, median):", a.target, a.size, a.rounds);
            println!("                     RPC-over-RDMA         TCP   ratio (RDMA/TCP)");
            println!("  WRITE 1 MiB       {rw:>10.1} MiB/s {tw:>8.1} MiB/s   {write_ratio:.2}");
            println!("  READ 1 MiB        {rr:>10.1} MiB/s {tr:>8.1} MiB/s   {read_ratio:.2}");
            println!("  GETATTR round trip {rg:>9.1} us    {tg:>8.1} us      {getattr_ratio:.2}");
            if a.demo {
                println!("  demo WRITE 1 MiB  {drw:>10.1} MiB/s {dtw:>8.1} MiB/s   {:.2}", med(&|x| x.0.demo_write_mib_s / x.1.demo_write_mib_s));
                println!("  demo READ 1 MiB   {drr:>10.1} MiB/s {dtr:>8.1} MiB/s   {:.2}", med(&|x| x.0.demo_read_mib_s / x.1.demo_read_mib_s));
                println!("  NFS/demo WRITE    {nd_rw:>10.2}       {nd_tw:>8.2}");
                println!("  NFS/demo READ     {nd_rr:>10.2}       {nd_tr:>8.2}");
            }
        }
        for c in [&rdma, &tcp] {
            if let Opened::V4(c) = c {
                if !a.json {
                    eprintln!("{}", v4_report(c));
                }
                let _ = c.close().await;
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}
