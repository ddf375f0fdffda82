//! `nfs-fsx`: a file-system exerciser in the manner of `fsx`, for checking
//! an NFS server through a client's mount (the Linux kernel NFS client in
//! the interop guest: `scripts/interop/nfs-fsx-guest.sh`, run by
//! `nfs-kernel-client.sh`).
//!
//! ```text
//! nfs-fsx run DIR [--seed N] [--ops N] [--procs N] [--max-size BYTES]
//!                 [--small-size BYTES] [--verify-every N]
//!                 [--drop-caches auto|yes|no] [--no-mmap] [--no-direct]
//!                 [--manifest FILE] [--corrupt-at N] [--pause-at N] [--owner-rw]
//! nfs-fsx manifest DIR
//! ```
//!
//! `run` starts `--procs` workers (processes), each in its own directory
//! `DIR/pN`, and each runs `--ops` seeded random operations on a small
//! name space and checks every result against an in-memory model of what
//! the directory must hold: writes at random offsets and lengths (across
//! 1 MiB boundaries, unaligned, past the end), reads compared with the
//! model, truncates up and down, appends, writes and reads through `mmap`
//! and with `O_DIRECT`, `copy_file_range` between files, writes and reads
//! far out in a sparse scratch file (around 2 GiB, 4 GiB, 1 TiB and
//! 4 TiB), `fsync`/`fdatasync`,
//! closing and reopening, exclusive creates, renames (over files, of directories, into a directory's own
//! subtree), hard links, unlinks, `mkdir`/`rmdir` (of a non-empty directory
//! too), symbolic links and `readlink`, FIFOs (`mknod`), `lchown` (as root),
//! `chmod`, `utimensat`, `stat` and directory listings. Every `--verify-every` operations it closes its
//! files, syncs, drops the page cache (`/proc/sys/vm/drop_caches`) and
//! compares the whole tree, every byte, with the model. An operation that
//! must fail is checked to fail with the right `errno`.
//!
//! The model's final state goes to `--manifest` (one line per name: type,
//! mode, link count, size and a 64-bit FNV-1a hash of the contents, or the
//! link target); `manifest DIR` prints the same lines for a real directory,
//! so the server's own copy can be compared with what the client was told.
//!
//! File modes are any of 0000..0777 for root, and keep the owner's read
//! and write bits otherwise or with `--owner-rw` (for a root squashed to
//! another user by the server).
//!
//! `--pause-at N` lets the server restart under the mount: after
//! operation N each worker, its files still open, creates `DIR/pause-pW`
//! and waits (up to ten minutes) until `DIR/resume` exists, then goes on
//! with the same descriptors and handles.
//!
//! `--corrupt-at N` checks the checker: at operation N each worker changes
//! one byte of a file behind the model's back and checks the whole tree,
//! which must fail.
//!
//! Output: `FSX-OK ...` per worker on success; on a failure `FSX-FAIL ...`
//! with the operation, the seed and the operations that led to it (a run
//! with the same seed repeats it). Exit status 0 only if every worker
//! passed.
//!
//! # Files
//!
//! `main.rs` dispatches the two commands; `opts.rs` parses `run`'s
//! options; `supervisor.rs` is the parent process of `run` (workers
//! started and awaited, manifests merged and compared); `worker/` is one
//! worker process and its operations; `model.rs` the in-memory model it
//! checks against; `manifest.rs` the manifest lines; `rng.rs` the seeded
//! generator; `mapped.rs` reads and writes through `mmap` (the binary's
//! only `unsafe`).

mod manifest;
#[allow(unsafe_code)]
mod mapped;
mod model;
mod opts;
mod rng;
mod supervisor;
mod worker;

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use manifest::manifest_of;
use opts::{parse_opts, USAGE};
use supervisor::run;
use worker::worker_main;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("manifest") if args.len() == 2 => match manifest_of(Path::new(&args[1])) {
            Ok(lines) => {
                let mut out = io::stdout().lock();
                for l in lines {
                    let _ = writeln!(out, "{l}");
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("nfs-fsx manifest {}: {e}", args[1]);
                ExitCode::FAILURE
            }
        },
        Some("run") => match parse_opts(&args[1..]) {
            Ok((dir, o, Some(w))) => worker_main(&dir, &o, w),
            Ok((dir, o, None)) => run(&dir, &o),
            Err(e) => {
                eprintln!("nfs-fsx: {e}");
                ExitCode::from(2)
            }
        },
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}
