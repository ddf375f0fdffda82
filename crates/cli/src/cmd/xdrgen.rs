//! `rpcrdma xdrgen`: rpcgen for Rust — print the code `rpcrdma-xdrgen`
//! generates from an RPC language (`.x`) file.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

/// Generate Rust from an RPC language definition (`.x`, RFC 4506 §6 and
/// RFC 5531 §12): types, XDR codecs, async client stubs, a server trait per
/// program version, and the RPC-over-RDMA Upper-Layer Binding from
/// `/* @ddp */` pragmas.
///
/// The code goes to standard output (or `--output`). Errors name
/// FILE:LINE:COLUMN and what was expected; the exit status is then 1.
/// With `--check` nothing is printed: the file is only checked.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  rpcrdma xdrgen crates/xdrgen/xdr/nfs3.x > nfs3.rs\n  rpcrdma xdrgen --check demo.x\n  rpcrdma xdrgen --strings-as-bytes -o mount3.rs crates/xdrgen/xdr/mount3.x\n\nIn a build script: rpcrdma_xdrgen::Builder::new(\"demo.x\").generate_to_out_dir() (docs/xdrgen.md)."
)]
pub(crate) struct XdrgenArgs {
    /// The `.x` file.
    #[arg(value_name = "FILE.x")]
    file: PathBuf,

    /// Map `string` to `bytes::Bytes` (no UTF-8 check) instead of `String`.
    #[arg(long)]
    strings_as_bytes: bool,

    /// Deepest nesting of recursive types the decoders accept.
    #[arg(long, value_name = "N", default_value_t = 64)]
    max_depth: u32,

    /// Most nodes of a linked list the decoders accept.
    #[arg(long, value_name = "N", default_value_t = 1 << 20)]
    max_list_len: u32,

    /// Name only this crate in the generated code, which re-exports
    /// `oncrpc`, `xdr` and `bytes` (`::rpcrdma`, the facade), instead of
    /// `rpcrdma-oncrpc`, `rpcrdma-xdr` and `bytes`.
    #[arg(long, value_name = "PATH")]
    runtime: Option<String>,

    /// Write the code to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,

    /// Only check the file; print nothing on success.
    #[arg(long)]
    check: bool,
}

pub(crate) fn run(args: XdrgenArgs) -> anyhow::Result<ExitCode> {
    let mut builder = rpcrdma_xdrgen::Builder::new(&args.file)
        .strings_as_bytes(args.strings_as_bytes)
        .max_depth(args.max_depth)
        .max_list_len(args.max_list_len);
    if let Some(path) = args.runtime {
        builder = builder.runtime(path);
    }
    let code = match builder.generate() {
        Ok(c) => c,
        Err(e @ rpcrdma_xdrgen::Error::Source(_)) => {
            eprintln!("{e}");
            let n = e.diagnostics().len();
            eprintln!(
                "rpcrdma xdrgen: {n} error{} in {}",
                if n == 1 { "" } else { "s" },
                args.file.display()
            );
            return Ok(ExitCode::from(1));
        }
        Err(e) => return Err(e).context("rpcrdma xdrgen"),
    };
    if args.check {
        return Ok(ExitCode::SUCCESS);
    }
    match &args.output {
        Some(path) => std::fs::write(path, &code)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => std::io::stdout()
            .lock()
            .write_all(code.as_bytes())
            .context("cannot write to standard output")?,
    }
    Ok(ExitCode::SUCCESS)
}
