//! Subcommand implementations, one module each.

pub(crate) mod bench;
pub(crate) mod call;
pub(crate) mod connect;
pub(crate) mod decode;
pub(crate) mod demo;
pub(crate) mod error_text;
pub(crate) mod metrics;
pub(crate) mod nfs;
pub(crate) mod probe;
pub(crate) mod provider;
pub(crate) mod rdma_opts;
pub(crate) mod read_window;
pub(crate) mod rping;
mod rt;
pub(crate) mod serve;
pub(crate) mod xdrgen;

use std::process::ExitCode;

pub(crate) use self::rt::{runtime, stop_signal, Scheduler};
use crate::Command;

/// Runs one subcommand; the returned code is the process exit status.
pub(crate) fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Decode(args) => decode::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Rping(args) => rping::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Call(args) => call::run(args),
        Command::Probe(args) => probe::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Nfs(args) => nfs::run(args),
        Command::Xdrgen(args) => xdrgen::run(args),
    }
}
