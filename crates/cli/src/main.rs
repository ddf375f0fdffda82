//! `rpcrdma`: the command line of the RPC-over-RDMA stack.
//!
//! Each subcommand lives in its own module under `cmd/`; this file only
//! parses arguments, sets up logging and dispatches.

use clap::{CommandFactory, Parser, Subcommand};

mod cmd;
mod docs;

/// RPC-over-RDMA (RFC 8166, RFC 8167, RFC 8797, Version Two) in Rust.
#[derive(Debug, Parser)]
#[command(name = "rpcrdma", version, about, long_about = None)]
struct Cli {
    /// Log filter (tracing `EnvFilter` syntax), e.g. `debug` or
    /// `rpcrdma_engine=trace`. Defaults to `warn`, or `RUST_LOG` if set.
    #[arg(long, global = true)]
    log: Option<String>,

    #[command(subcommand)]
    command: Top,
}

/// The subcommands: those that work ([`Command`], run by `cmd::run`) and
/// those that describe the command line itself.
// Parsed once per run: its size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Top {
    #[command(flatten)]
    Run(Command),
    /// Print a shell completion script (bash, zsh, fish, elvish,
    /// powershell), generated from this command line.
    Completions(docs::CompletionsArgs),
    /// Print the manual page (roff; `rpcrdma man | man -l -`), or write
    /// one per subcommand with --dir.
    Man(docs::ManArgs),
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Server and client in one process (software iWARP on loopback, or a
    /// device with --provider rdma-core): every message form, verified byte
    /// for byte, with timings.
    Demo(cmd::demo::DemoArgs),
    /// Serve the demo program over RPC-over-RDMA (and optionally TCP).
    Serve(cmd::serve::ServeArgs),
    /// Call a procedure on a server (raw XDR, or the demo program's operations).
    Call(cmd::call::CallArgs),
    /// Connect to an RPC-over-RDMA server and report its private data,
    /// version, inline thresholds, remote invalidation and credits.
    Probe(cmd::probe::ProbeArgs),
    Decode(cmd::decode::DecodeArgs),
    /// rdma-core's rping (client or server): Send/Recv, RDMA Read and RDMA
    /// Write, verified; talks to the real rping on siw.
    Rping(cmd::rping::RpingArgs),
    /// Benchmarks: RPC-over-RDMA vs ONC RPC/TCP vs raw TCP (default), or
    /// `bench verbs`: a verbs provider against raw TCP.
    Bench(cmd::bench::BenchArgs),
    /// NFSv3 over RPC-over-RDMA and TCP: `nfs serve DIR` exports a
    /// directory (NFSv3 + MOUNT v3); `nfs ls|get|put|stat|bench
    /// HOST:/PATH` is a client.
    Nfs(cmd::nfs::NfsArgs),
    Xdrgen(cmd::xdrgen::XdrgenArgs),
}

fn init_logging(filter: Option<&str>) {
    use tracing_subscriber::EnvFilter;
    let filter = match filter {
        Some(f) => EnvFilter::new(f),
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
    };
    // Colours only for a person at a terminal: not into a file, a pipe or
    // the systemd journal.
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// Restores the default action of SIGPIPE, so that `rpcrdma decode ... |
/// head` ends quietly instead of failing on a broken pipe (Rust ignores
/// SIGPIPE). Only for the commands that talk to no network peer: a socket
/// written with `writev` (the software iWARP provider, ONC RPC over TCP)
/// raises SIGPIPE too when its peer has reset it, and with the default
/// action one hostile client would end `rpcrdma serve`.
#[cfg(unix)]
#[allow(unsafe_code)]
fn default_sigpipe() {
    // SAFETY: called once at start-up before any thread exists; `signal`
    // with SIG_DFL for SIGPIPE has no preconditions and touches no memory
    // of ours.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(not(unix))]
fn default_sigpipe() {}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Top::Run(Command::Decode(_) | Command::Xdrgen(_)) | Top::Completions(_) | Top::Man(_)
    ) {
        default_sigpipe();
    }
    init_logging(cli.log.as_deref());
    let command = match cli.command {
        Top::Run(command) => command,
        Top::Completions(args) => return docs::completions(args, Cli::command()),
        Top::Man(args) => {
            return docs::man(args, Cli::command()).unwrap_or_else(|e| {
                eprintln!("rpcrdma: error: {}", cmd::error_text::Causes(&e));
                std::process::ExitCode::from(2)
            })
        }
    };
    match cmd::run(command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rpcrdma: error: {}", cmd::error_text::Causes(&e));
            std::process::ExitCode::from(2)
        }
    }
}
