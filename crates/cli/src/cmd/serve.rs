//! `rpcrdma serve`: run the demo program over RPC-over-RDMA (and
//! optionally TCP) until interrupted.

use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use rpcrdma_demoprog::{serve_demo, PROGRAM, VERSION};
use rpcrdma_oncrpc::rpcbind::Rpcbind;
use rpcrdma_oncrpc::{Server, ServerConfig, Services};
use rpcrdma_softiwarp::SoftIwarp;
use rpcrdma_transport::{serve_rdma, ListenConfig};

use super::connect::resolve;
use super::rdma_opts::RdmaOpts;

/// Arguments of `rpcrdma serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// RPC-over-RDMA (software iWARP) listening address.
    #[arg(long, default_value = "127.0.0.1:20049")]
    listen: String,
    /// Also serve ONC RPC over TCP on this address.
    #[arg(long)]
    tcp: Option<String>,
    /// Register with the system's rpcbind (netid `rdma`/`rdma6`, and
    /// `tcp`/`tcp6` for --tcp); unregistered on exit.
    #[arg(long)]
    rpcbind: bool,
    /// Exit after this many seconds (default: run until Ctrl-C / SIGTERM).
    #[arg(long)]
    duration: Option<u64>,
    #[command(flatten)]
    rdma: RdmaOpts,
}

/// Runs `rpcrdma serve`.
pub(crate) fn run(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let listen = resolve(&a.listen)?;
    let tcp = a.tcp.as_deref().map(resolve).transpose()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(serve(a, listen, tcp))
}

async fn serve(
    a: ServeArgs,
    listen: SocketAddr,
    tcp: Option<SocketAddr>,
) -> anyhow::Result<ExitCode> {
    let mut services = Services::new();
    serve_demo(&mut services);
    let server = Server::new(services, ServerConfig::default());
    let cfg = ListenConfig {
        engine: a.rdma.server(),
        options: a.rdma.options(),
        caps: a.rdma.caps(),
    };
    let svc = serve_rdma(&server, SoftIwarp::new(), listen, cfg)
        .await
        .with_context(|| format!("cannot listen for RPC-over-RDMA on {listen}"))?;
    let rdma_addr = svc.local_addr();
    println!(
        "serving the demo program {PROGRAM:#x} v{VERSION} over RPC-over-RDMA (software iWARP) on {rdma_addr}"
    );
    let tcp_addr = match tcp {
        Some(t) => {
            let bound = server
                .serve_tcp(t)
                .await
                .with_context(|| format!("cannot listen for TCP on {t}"))?;
            println!("serving it over TCP on {bound}");
            Some(bound)
        }
        None => None,
    };

    let programs = [(PROGRAM, VERSION)];
    let mut registered = Vec::new();
    if a.rpcbind {
        let rpcb = Rpcbind::connect_local()
            .await
            .context("cannot reach rpcbind on 127.0.0.1:111 (install and start `rpcbind`, or drop --rpcbind)")?;
        let netid = rpcb
            .register_all(&programs, "rdma", &rdma_addr)
            .await
            .context("rpcbind registration (rdma) failed")?;
        println!("registered with rpcbind as netid {netid}");
        registered.push(netid);
        if let Some(t) = tcp_addr {
            let netid = rpcb
                .register_all(&programs, "tcp", &t)
                .await
                .context("rpcbind registration (tcp) failed")?;
            println!("registered with rpcbind as netid {netid}");
            registered.push(netid);
        }
    }

    super::stop_signal(a.duration).await;
    eprintln!("shutting down: finishing calls in progress");
    if !registered.is_empty() {
        if let Ok(rpcb) = Rpcbind::connect_local().await {
            for netid in &registered {
                let _ = rpcb.unregister_all(&programs, netid).await;
            }
        }
    }
    svc.stop().await;
    server.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
