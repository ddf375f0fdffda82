//! `rpcrdma nfs`: an NFSv3 server exporting a directory, and an NFSv3
//! client, over RPC-over-RDMA or TCP.

use std::process::ExitCode;

use clap::{Args, Subcommand};

mod serve;

/// Arguments of `rpcrdma nfs`.
#[derive(Debug, Args)]
pub(crate) struct NfsArgs {
    #[command(subcommand)]
    command: NfsCommand,
}

#[derive(Debug, Subcommand)]
enum NfsCommand {
    /// Export DIR over NFSv3 and MOUNT v3 (RPC-over-RDMA, and TCP with --tcp).
    Serve(serve::ServeArgs),
}

/// Runs `rpcrdma nfs ...`.
pub(crate) fn run(a: NfsArgs) -> anyhow::Result<ExitCode> {
    match a.command {
        NfsCommand::Serve(s) => serve::run(s),
    }
}
