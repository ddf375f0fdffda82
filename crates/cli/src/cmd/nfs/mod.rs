//! `rpcrdma nfs`: an NFS server exporting a directory (NFSv3, NFSv4.1,
//! NFSv4.2), and an NFS client (NFSv4.1, or NFSv3 with `--vers 3`), over
//! RPC-over-RDMA or TCP.

use std::process::ExitCode;

use clap::{Args, Subcommand};

mod bench;
mod client;
mod serve;
mod show;
mod workload;

/// Arguments of `rpcrdma nfs`.
#[derive(Debug, Args)]
pub(crate) struct NfsArgs {
    #[command(subcommand)]
    command: NfsCommand,
}

#[derive(Debug, Subcommand)]
enum NfsCommand {
    /// Export DIR over NFSv3 (and MOUNT v3), NFSv4.1 and NFSv4.2
    /// (RPC-over-RDMA, and TCP with --tcp).
    Serve(serve::ServeArgs),
    /// List a directory: HOST:/PATH (NFSv4.1 READDIR, NFSv3 READDIRPLUS;
    /// -l for details).
    Ls(client::LsArgs),
    /// Copy a remote file to a local one: HOST:/PATH [LOCAL].
    Get(client::GetArgs),
    /// Copy a local file to the server: LOCAL HOST:/PATH (UNSTABLE WRITEs + COMMIT).
    Put(client::PutArgs),
    /// Show a file's attributes and handle: HOST:/PATH.
    Stat(client::StatArgs),
    /// 1 MiB READ/WRITE throughput and GETATTR round trip over
    /// RPC-over-RDMA against the same server over TCP (NFSv4.1, or NFSv3
    /// with --vers 3), with ratios.
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
