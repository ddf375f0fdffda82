//! `rpcrdma serve`: run the demo program over RPC-over-RDMA (and
//! optionally TCP) until interrupted.

use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use rpcrdma_demoprog::{serve_demo, PROGRAM, VERSION};
use rpcrdma_oncrpc::rpcbind::Rpcbind;
use rpcrdma_oncrpc::{Server, ServerConfig, Services};
use rpcrdma_transport::{serve_rdma, ListenConfig};
use rpcrdma_verbs::Device;

use super::connect::resolve;
use super::provider::{Setup, WithDevice};
use super::rdma_opts::RdmaOpts;

/// Arguments of `rpcrdma serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// RPC-over-RDMA listening address (with `--provider rdma-core`, an
    /// address of the device's interface, or 0.0.0.0).
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
    a.rdma.check()?;
    let params = a.rdma.params();
    let provider = a.rdma.provider.clone();
    rt.block_on(provider.run(params, Serve { a, listen, tcp }))
}

struct Serve {
    a: ServeArgs,
    listen: SocketAddr,
    tcp: Option<SocketAddr>,
}

impl WithDevice for Serve {
    type Output = ExitCode;

    async fn run<D: Device + Clone + std::fmt::Debug>(
        self,
        dev: D,
        setup: Setup<D>,
    ) -> anyhow::Result<ExitCode> {
        serve(self.a, self.listen, self.tcp, dev, setup).await
    }
}

async fn serve<D: Device + Clone>(
    a: ServeArgs,
    listen: SocketAddr,
    tcp: Option<SocketAddr>,
    dev: D,
    setup: Setup<D>,
) -> anyhow::Result<ExitCode> {
    let mut services = Services::new();
    serve_demo(&mut services);
    let server = Server::new(services, ServerConfig::default());
    let cfg = ListenConfig {
        engine: a.rdma.server(),
        options: setup.options.clone(),
        caps: a.rdma.caps(),
    };
    let svc = serve_rdma(&server, dev, listen, cfg)
        .await
        .with_context(|| format!("cannot listen for RPC-over-RDMA on {listen}"))?;
    let rdma_addr = svc.local_addr();
    println!(
        "serving the demo program {PROGRAM:#x} v{VERSION} over RPC-over-RDMA ({}) on {rdma_addr}",
        setup.label
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

    let stop = async {
        let deadline = async {
            match a.duration {
                Some(s) => tokio::time::sleep(std::time::Duration::from_secs(s)).await,
                None => std::future::pending().await,
            }
        };
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let mut term = signal(SignalKind::terminate()).ok();
            let term = async {
                match term.as_mut() {
                    Some(t) => {
                        t.recv().await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = deadline => {}
                _ = tokio::signal::ctrl_c() => {}
                () = term => {}
            }
        }
        #[cfg(not(unix))]
        {
            tokio::select! {
                () = deadline => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
    };
    stop.await;
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
