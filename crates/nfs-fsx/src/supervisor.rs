//! The parent process of `run`: starts the workers, waits for them, merges
//! their manifests and compares the tree with them.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::{Command, ExitCode};

use crate::manifest::{manifest_dir, manifest_of};
use crate::opts::Opts;

/// The parent: one worker process per `--procs`, then the merged manifest.
pub(crate) fn run(dir: &Path, o: &Opts) -> ExitCode {
    if let Err(e) = fs::create_dir_all(dir) {
        eprintln!("nfs-fsx: cannot make {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("nfs-fsx: cannot find my own program to start the workers: {e}");
            return ExitCode::FAILURE;
        }
    };
    let tmp = std::env::temp_dir();
    let mut children = Vec::new();
    for w in 0..o.procs {
        let part = tmp.join(format!("nfs-fsx-{}-{w}.manifest", std::process::id()));
        let mut cmd = Command::new(&exe);
        cmd.arg("run")
            .arg(dir)
            .args(o.to_args())
            .arg("--worker")
            .arg(w.to_string())
            .arg("--manifest")
            .arg(&part);
        match cmd.spawn() {
            Ok(c) => children.push((w, c, part)),
            Err(e) => {
                eprintln!("nfs-fsx: cannot start worker {w}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let mut failed = 0;
    let mut lines = Vec::new();
    for (w, mut c, part) in children {
        match c.wait() {
            Ok(s) if s.success() => {}
            Ok(s) => {
                eprintln!("FSX-FAIL worker {w} exited with {s}");
                failed += 1;
            }
            Err(e) => {
                eprintln!("FSX-FAIL worker {w}: {e}");
                failed += 1;
            }
        }
        lines.push(manifest_dir(&format!("p{w}"), 0o755));
        if let Ok(text) = fs::read_to_string(&part) {
            lines.extend(text.lines().map(|l| format!("p{w}/{l}")));
        }
        let _ = fs::remove_file(&part);
    }
    lines.sort();
    if o.pause_at.is_some() {
        // The pause markers are not the workers'.
        for e in fs::read_dir(dir).into_iter().flatten().flatten() {
            let n = e.file_name();
            if n == "resume" || n.to_string_lossy().starts_with("pause-p") {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    if failed == 0 {
        // What the client sees now, after every worker's last check.
        match manifest_of(dir) {
            Ok(seen) if seen == lines => {}
            Ok(seen) => {
                eprintln!(
                    "FSX-FAIL the tree differs from the workers' models:\n{}",
                    diff(&lines, &seen)
                );
                failed += 1;
            }
            Err(e) => {
                eprintln!("FSX-FAIL listing {}: {e}", dir.display());
                failed += 1;
            }
        }
    }
    if let Some(m) = &o.manifest {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        if let Err(e) = fs::write(m, text) {
            eprintln!("FSX-FAIL writing the manifest {}: {e}", m.display());
            failed += 1;
        }
    }
    if failed == 0 {
        println!(
            "FSX-DONE {} workers x {} ops, seed {}: all passed, {} names",
            o.procs,
            o.ops,
            o.seed,
            lines.len()
        );
        ExitCode::SUCCESS
    } else {
        println!("FSX-DONE {failed} failed");
        ExitCode::FAILURE
    }
}

/// Lines only in `want` (-) and only in `got` (+).
pub(crate) fn diff(want: &[String], got: &[String]) -> String {
    let w: BTreeSet<_> = want.iter().collect();
    let g: BTreeSet<_> = got.iter().collect();
    let mut s = String::new();
    for l in w.difference(&g) {
        let _ = writeln!(s, "  - {l}");
    }
    for l in g.difference(&w) {
        let _ = writeln!(s, "  + {l}");
    }
    s
}
