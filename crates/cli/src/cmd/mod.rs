//! Subcommand implementations, one module each.

use std::process::ExitCode;

use crate::Command;

/// Runs one subcommand; the returned code is the process exit status.
pub(crate) fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {}
}
