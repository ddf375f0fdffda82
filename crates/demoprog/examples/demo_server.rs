//! Serves the demo program over TCP, optionally registered with rpcbind.
//!
//! ```text
//! cargo run -p rpcrdma-demoprog --example demo_server -- [--port N] [--rpcbind]
//! ```
//!
//! Prints `listening on ADDR` once ready, serves until SIGINT or SIGTERM,
//! then unregisters from rpcbind and shuts down gracefully. The rpcbind
//! interop script (`scripts/rpcbind-interop.sh`) drives it.

use std::net::SocketAddr;
use std::process::ExitCode;

use rpcrdma_demoprog::serve_demo;
use rpcrdma_oncrpc::rpcbind::Rpcbind;
use rpcrdma_oncrpc::{Server, ServerConfig, Services};

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let mut port = 0u16;
    let mut register = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" => match args.next().and_then(|p| p.parse().ok()) {
                Some(p) => port = p,
                None => return usage("--port needs a number"),
            },
            "--rpcbind" => register = true,
            other => return usage(&format!("unknown argument {other}")),
        }
    }
    let mut services = Services::new();
    serve_demo(&mut services);
    let programs = services.registrations();
    let server = Server::new(services, ServerConfig::default());
    let addr: SocketAddr = match server.serve_tcp(("127.0.0.1", port)).await {
        Ok(a) => a,
        Err(e) => {
            eprintln!("demo_server: cannot listen on port {port}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut netid = None;
    if register {
        let rpcbind = match Rpcbind::connect_local().await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("demo_server: {e}");
                return ExitCode::from(2);
            }
        };
        match rpcbind.register_all(&programs, "tcp", &addr).await {
            Ok(id) => netid = Some((rpcbind, id)),
            Err(e) => {
                eprintln!("demo_server: {e}");
                return ExitCode::from(2);
            }
        }
    }
    println!("listening on {addr}");
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("demo_server: cannot watch SIGTERM: {e}");
            return ExitCode::from(2);
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    if let Some((rpcbind, id)) = netid {
        if let Err(e) = rpcbind.unregister_all(&programs, &id).await {
            eprintln!("demo_server: unregistering: {e}");
        }
    }
    server.shutdown().await;
    ExitCode::SUCCESS
}

fn usage(msg: &str) -> ExitCode {
    eprintln!("demo_server: {msg}\nusage: demo_server [--port N] [--rpcbind]");
    ExitCode::from(2)
}
