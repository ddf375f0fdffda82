//! `rpcrdma nfs`: an NFSv3 server exporting a directory, and an NFSv3
//! client, over RPC-over-RDMA or TCP.

use std::process::ExitCode;

use clap::{Args, Subcommand};

mod bench;
mod client;
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
    /// List a directory: HOST:/PATH (READDIRPLUS; -l for details).
    Ls(client::LsArgs),
    /// Copy a remote file to a local one: HOST:/PATH [LOCAL].
    Get(client::GetArgs),
    /// Copy a local file to the server: LOCAL HOST:/PATH (UNSTABLE WRITEs + COMMIT).
    Put(client::PutArgs),
    /// Show a file's attributes and handle: HOST:/PATH.
    Stat(client::StatArgs),
    /// 1 MiB READ/WRITE throughput and GETATTR round trip over
    /// RPC-over-RDMA against the same server over TCP, with ratios.
    Bench(bench::BenchArgs),
}

/// Runs `rpcrdma nfs ...`.
pub(crate) fn run(a: NfsArgs) -> anyhow::Result<ExitCode> {
    match a.command {
        NfsCommand::Serve(s) => serve::run(s),
        NfsCommand::Ls(s) => client::ls(s),
        NfsCommand::Get(s) => client::get(s),
        NfsCommand::Put(s) => client::put(s),
        NfsCommand::Stat(s) => client::stat(s),
        NfsCommand::Bench(s) => bench::run(s),
    }
}
