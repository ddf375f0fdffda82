//! `nfs-fsx` (the exerciser the interop guest runs through the Linux
//! kernel NFS client, `scripts/interop/nfs-fsx-guest.sh`) on a local
//! directory: its model agrees with a real file system over a seeded run
//! of several processes, its manifest is the one `nfs-fsx manifest` reads
//! from the directory, and a byte changed behind its back fails the run.
//! (`O_DIRECT` is left out: local file systems want it aligned, NFS does
//! not.)

use std::path::PathBuf;
use std::process::Command;

const FSX: &str = env!("CARGO_BIN_EXE_nfs-fsx");

struct Tmp(PathBuf);
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tmp(name: &str) -> Tmp {
    let d = std::env::temp_dir().join(format!("rpcrdma-nfs-fsx-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Tmp(d)
}

fn run(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    Command::new(FSX)
        .arg("run")
        .arg(dir.join("t"))
        .args([
            "--procs",
            "2",
            "--ops",
            "400",
            "--seed",
            "11",
            "--verify-every",
            "50",
        ])
        .args([
            "--max-size",
            "1536K",
            "--drop-caches",
            "no",
            "--no-direct",
            "--manifest",
        ])
        .arg(dir.join("manifest"))
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn the_model_matches_a_local_file_system() {
    let t = tmp("ok");
    let out = run(&t.0, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success()
            && stdout.contains("FSX-DONE 2 workers x 400 ops, seed 11: all passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.matches("FSX-OK p").count(), 2, "{stdout}");
    let model = std::fs::read_to_string(t.0.join("manifest")).unwrap();
    let seen = Command::new(FSX)
        .arg("manifest")
        .arg(t.0.join("t"))
        .output()
        .unwrap();
    assert!(seen.status.success());
    assert_eq!(String::from_utf8_lossy(&seen.stdout), model);
    // Both workers' trees, with files, directories and links in them.
    for kind in [" file ", " dir ", " symlink ", " fifo "] {
        assert!(
            model.lines().filter(|l| l.contains(kind)).count() > 1,
            "{kind}: {model}"
        );
    }
    assert!(
        model.lines().any(|l| l.starts_with("p0/")) && model.lines().any(|l| l.starts_with("p1/"))
    );
}

#[test]
fn a_byte_changed_behind_its_back_fails_the_run() {
    let t = tmp("corrupt");
    let out = run(&t.0, &["--corrupt-at", "120"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.contains("FSX-DONE 2 failed"), "{stdout}");
    for w in ["p0", "p1"] {
        assert!(stdout.contains(&format!("FSX-FAIL {w} op ")), "{stdout}");
    }
    assert!(
        stderr.contains("bytes differ, the first at offset"),
        "{stderr}"
    );
    assert!(
        stderr.contains("corrupt "),
        "the operations before it are shown: {stderr}"
    );
}

#[test]
fn workers_pause_for_a_server_restart_and_go_on() {
    let t = tmp("pause");
    let mut child = Command::new(FSX)
        .arg("run")
        .arg(t.0.join("t"))
        .args([
            "--procs",
            "2",
            "--ops",
            "200",
            "--seed",
            "5",
            "--pause-at",
            "100",
        ])
        .args(["--max-size", "1536K", "--drop-caches", "no", "--no-direct"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let paused = |w: usize| t.0.join("t").join(format!("pause-p{w}")).exists();
    let mut waited = 0;
    while !(paused(0) && paused(1)) {
        assert!(waited < 600, "both workers pause within a minute");
        std::thread::sleep(std::time::Duration::from_millis(100));
        waited += 1;
    }
    // Paused: nobody has finished.
    assert!(child.try_wait().unwrap().is_none());
    std::fs::write(t.0.join("t").join("resume"), b"").unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert_eq!(stdout.matches("FSX-RESUME p").count(), 2, "{stdout}");
    // The markers are gone; only the workers' trees are left.
    let mut names: Vec<_> = std::fs::read_dir(t.0.join("t"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["p0", "p1"]);
}
