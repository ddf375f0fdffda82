//! `rpcrdma completions SHELL` and `rpcrdma man`: shell completion
//! scripts and manual pages generated from the command line's own clap
//! definition, so they cannot drift from it.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use clap_complete::Shell;

/// Print a shell completion script for rpcrdma.
#[derive(Debug, Args)]
#[command(after_help = "Install, for example:\n  \
    rpcrdma completions bash > ~/.local/share/bash-completion/completions/rpcrdma\n  \
    rpcrdma completions zsh > ~/.zfunc/_rpcrdma    (with fpath+=~/.zfunc before compinit)\n  \
    rpcrdma completions fish > ~/.config/fish/completions/rpcrdma.fish\n  \
    rpcrdma completions powershell >> $PROFILE")]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: Shell,
}

/// Print rpcrdma's manual page (roff), or write one page per command.
#[derive(Debug, Args)]
#[command(after_help = "Read it with: rpcrdma man | man -l -\n\
    Install: rpcrdma man --dir /usr/local/share/man/man1 (rpcrdma.1, rpcrdma-serve.1, \
    rpcrdma-nfs-serve.1, ...)")]
pub(crate) struct ManArgs {
    /// Write rpcrdma.1 and a page for every subcommand
    /// (rpcrdma-SUBCOMMAND.1, rpcrdma-nfs-serve.1, ...) into DIR instead of
    /// printing rpcrdma.1.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Writes the completion script of `cmd` for `args.shell` to standard
/// output.
pub(crate) fn completions(args: CompletionsArgs, mut cmd: clap::Command) -> ExitCode {
    let name = cmd.get_name().to_string();
    clap_complete::generate(args.shell, &mut cmd, name, &mut std::io::stdout());
    ExitCode::SUCCESS
}

/// Writes the manual page of `cmd` to standard output, or the pages of
/// it and every subcommand to `args.dir`.
pub(crate) fn man(args: ManArgs, cmd: clap::Command) -> anyhow::Result<ExitCode> {
    match args.dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(cmd, &dir)
                .with_context(|| format!("cannot write the manual pages into {}", dir.display()))?;
            println!("wrote the manual pages into {}", dir.display());
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut page)
                .context("cannot render the manual page")?;
            std::io::stdout()
                .write_all(&page)
                .context("cannot write the manual page")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
