//! `rpcrdma demo`: server and client in one process over the chosen verbs
//! provider (software iWARP on loopback by default; `--provider rdma-core`
//! over an RDMA device), exercising every message form.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use rpcrdma_demoprog::{
    checksum, pattern, pattern_mismatch, procs, serve_callbacks, serve_demo, ulb, DemoClient,
    ReadArgs, ReadRes, ReadResok, WriteArgs, WriteRes, PROGRAM, VERSION,
};
use rpcrdma_engine::CallError;
use rpcrdma_oncrpc::{Client, ClientConfig, Server, ServerConfig, Services};
use rpcrdma_transport::{serve_rdma, ListenConfig, RdmaConnector, RdmaTransport};
use rpcrdma_verbs::Device;

use super::provider::{AnyDevice, Setup};
use super::rdma_opts::RdmaOpts;
use crate::cmd::{runtime, Scheduler};

/// Arguments of `rpcrdma demo`.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Where the demo server listens (port 0: any free port). With
    /// `--provider rdma-core`, an address of the device's interface (e.g.
    /// the rxe or siw netdev's address).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Bytes moved by the READ and WRITE operations.
    #[arg(long, default_value_t = 1 << 20)]
    size: u32,
    #[command(flatten)]
    rdma: RdmaOpts,
}

struct Row {
    op: String,
    forms: String,
    bytes: u64,
    time: Duration,
}

fn forms<D: Device>(t: &RdmaTransport<D>) -> String {
    match t.last_forms() {
        Some(f) => format!("{} call / {} reply", f.call.name(), f.reply.name()),
        None => "-".into(),
    }
}

/// Runs `rpcrdma demo`.
pub(crate) fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let rt = runtime(Scheduler::CurrentThread)?;
    args.rdma.check()?;
    rt.block_on(async {
        let (dev, setup) = args.rdma.provider.open(args.rdma.params())?;
        demo(args, dev, setup).await
    })
}

async fn demo(args: DemoArgs, dev: AnyDevice, setup: Setup) -> anyhow::Result<ExitCode> {
    let mut services = Services::new();
    serve_demo(&mut services);
    let server = Server::new(services, ServerConfig::default());
    let listen = ListenConfig {
        engine: args.rdma.server(),
        options: setup.options.clone(),
        caps: args.rdma.caps(),
        max_connections: rpcrdma_transport::DEFAULT_MAX_CONNECTIONS,
        budget: None,
    };
    let svc = serve_rdma(&server, dev.clone(), args.listen, listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = svc.local_addr();
    eprintln!("rpcrdma demo: server listening on {addr} ({})", setup.label);

    let connector = RdmaConnector::new(dev, addr, args.rdma.client())
        .options(setup.options.clone())
        .caps(args.rdma.caps());
    let handle = connector.handle();
    // The client serves the demo's callback program, so it takes
    // reverse-direction calls on its connection (RFC 8167 §6).
    let mut callbacks = Services::new();
    let served = serve_callbacks(&mut callbacks);
    let mut client_config = ClientConfig::default();
    client_config.services = Arc::new(callbacks);
    let client = Client::connect(connector, client_config)
        .await
        .context("cannot connect to the demo server")?;
    let demo = DemoClient::new(client.clone());
    let transport = handle
        .transport()
        .context("the connector made no connection")?;

    let mut rows = Vec::new();
    let size = args.size;

    // NULL (also settles the version: the first call is the probe).
    let t = Instant::now();
    demo.null().await.context("NULL failed")?;
    rows.push(Row {
        op: "NULL".into(),
        forms: forms(&transport),
        bytes: 0,
        time: t.elapsed(),
    });

    // ECHO, small and inline.
    let data = pattern(1, 200);
    let t = Instant::now();
    let back = demo.echo(data.clone()).await.context("ECHO failed")?;
    if back != data {
        bail!("ECHO returned different bytes");
    }
    rows.push(Row {
        op: "ECHO 200 B".into(),
        forms: forms(&transport),
        bytes: 200,
        time: t.elapsed(),
    });

    // READ: the data comes back in a Write chunk.
    let t = Instant::now();
    let got = demo.read_verified(42, size).await.context("READ failed")?;
    rows.push(Row {
        op: format!("READ {}", human(size as u64)),
        forms: forms(&transport),
        bytes: got.len() as u64,
        time: t.elapsed(),
    });

    // WRITE: the data goes in a Read chunk.
    let data = pattern(43, size as usize);
    let t = Instant::now();
    demo.write_verified(data).await.context("WRITE failed")?;
    rows.push(Row {
        op: format!("WRITE {}", human(size as u64)),
        forms: forms(&transport),
        bytes: size as u64,
        time: t.elapsed(),
    });

    // A Long call: WRITE with reduction off (as RPCSEC_GSS integrity
    // would need) travels whole in a Position-Zero Read chunk.
    let n = 8192u32;
    let data = pattern(44, n as usize);
    let want = checksum(&data);
    let t = Instant::now();
    let r: WriteRes = client
        .call(
            PROGRAM,
            VERSION,
            procs::WRITE,
            &WriteArgs { data },
            &ulb::write().no_reduce(),
        )
        .await
        .context("Long call (WRITE, reduction off) failed")?;
    if r.count != n || r.crc32c != want {
        bail!("Long call: the server saw different bytes");
    }
    rows.push(Row {
        op: format!("Long call: WRITE {}, no reduction", human(n as u64)),
        forms: forms(&transport),
        bytes: n as u64,
        time: t.elapsed(),
    });

    // A Long reply: READ with reduction off comes back in the Reply chunk.
    let t = Instant::now();
    let r: ReadRes = client
        .call(
            PROGRAM,
            VERSION,
            procs::READ,
            &ReadArgs { seed: 45, count: n },
            &ulb::read(n).no_reduce(),
        )
        .await
        .context("Long reply (READ, reduction off) failed")?;
    match r {
        ReadRes::DemoOk(ReadResok { data, crc32c })
            if data.len() == n as usize
                && pattern_mismatch(45, &data).is_none()
                && checksum(&data) == crc32c => {}
        _ => bail!("Long reply: wrong data"),
    }
    rows.push(Row {
        op: format!("Long reply: READ {}, no reduction", human(n as u64)),
        forms: forms(&transport),
        bytes: n as u64,
        time: t.elapsed(),
    });

    // Reverse direction (RFC 8167): CALLBACKS declares the client ready
    // (like NFSv4.1 CREATE_SESSION) and the server calls it back on the
    // same connection while the forward call is outstanding.
    let (n, len) = (8u32, 200u32);
    let t = Instant::now();
    let ok = demo
        .callbacks(1, n, len)
        .await
        .context("CALLBACKS (reverse-direction calls) failed")?;
    if ok != n || served.get() != u64::from(n) {
        bail!(
            "reverse-direction calls: {ok} of {n} answered correctly, {} served",
            served.get()
        );
    }
    let server_forms = svc.connections().first().map_or_else(|| "-".into(), forms);
    rows.push(Row {
        op: format!("reverse: {n} x CB_ECHO {}", human(len.into())),
        forms: server_forms,
        bytes: u64::from(n * len),
        time: t.elapsed(),
    });

    // RDMA_ERROR round trip: an undefined rdma_proc draws ERR_BADHEADER.
    let t = Instant::now();
    let err = transport
        .error_round_trip()
        .await
        .context("RDMA_ERROR round trip failed")?;
    if !matches!(err, CallError::RdmaError { .. }) {
        bail!("expected RDMA_ERROR, got: {err}");
    }
    rows.push(Row {
        op: "bad header -> RDMA_ERROR".into(),
        forms: "RDMA_ERROR ERR_BADHEADER".into(),
        bytes: 0,
        time: t.elapsed(),
    });

    let info = transport.info();
    let (version, fell_back) = transport.negotiated().unwrap_or((0, false));
    let stats = transport.stats();
    let server_stats = svc
        .connections()
        .first()
        .map(RdmaTransport::stats)
        .unwrap_or_default();
    let props = info
        .feature(rpcrdma_engine::TRANSPORT_PROPERTIES)
        .map_or("not registered", |f| f.state.name());
    println!("provider: {}", setup.label);
    println!(
        "RPC-over-RDMA version {version}{} | inline thresholds: send {} B, receive {} B | remote invalidation: {} | credits granted: {} | v2 transport properties: {props}",
        if fell_back { " (fell back from 2)" } else { "" },
        info.thresholds.send,
        info.thresholds.recv,
        if info.remote_invalidation { "on" } else { "off" },
        info.credits_granted,
    );
    println!();
    println!(
        "{:<38} {:<30} {:>10} {:>11}",
        "operation", "message form", "bytes", "time"
    );
    println!("{}", "-".repeat(92));
    for r in &rows {
        println!(
            "{:<38} {:<30} {:>10} {:>11}",
            r.op,
            r.forms,
            r.bytes,
            format!("{:.3} ms", r.time.as_secs_f64() * 1e3)
        );
    }
    println!();
    println!(
        "all {} operations verified byte for byte | client registrations: {} made, {} live | server: {} RDMA Reads, {} RDMA Writes, {} registrations live",
        rows.len(),
        stats.registrations,
        stats.live_registrations(),
        server_stats.rdma_reads,
        server_stats.rdma_writes,
        server_stats.live_registrations(),
    );

    drop(demo);
    drop(client);
    server.shutdown().await;
    svc.stop().await;
    Ok(ExitCode::SUCCESS)
}

fn human(n: u64) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1024 && n % 1024 == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} B")
    }
}
