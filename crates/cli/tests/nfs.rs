//! `rpcrdma nfs serve` and the client commands, as a user runs them: the
//! server on free ports (RPC-over-RDMA over software iWARP, MOUNT and NFS
//! over TCP), then put/get/ls/stat/bench through the binary over both
//! transports, checked byte for byte, and a clean exit on SIGTERM. The
//! client commands run with `--vers 3` (the NFSv4.1 client, the default,
//! has tests/nfs4_client.rs); one error is checked under both versions.

use std::process::Command;

mod common;
use common::{NfsServed as Served, BIN};

fn serve(extra: &[&str]) -> Served {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Served::start(&format!("nfs-{n}"), true, extra)
}

fn nfs(s: &Served, tcp: bool, args: &[&str]) -> std::process::Output {
    let mut c = Command::new(BIN);
    c.arg("nfs").args(args);
    c.args(["--vers", "3", "--mount-port", &s.mount.to_string()]);
    if tcp {
        c.args(["--transport", "tcp", "--port", &s.tcp.to_string()]);
    } else {
        c.args(["--port", &s.rdma.to_string()]);
    }
    c.output().unwrap()
}

/// `get` and `put` with standard error not a terminal (a pipe here): no
/// progress bar, not one escape code, and the summary line with the bytes,
/// seconds and MiB/s.
fn assert_quiet_summary(out: &std::process::Output, bytes: usize) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains('\x1b') && !err.contains('\r'), "{err:?}");
    assert!(
        err.lines()
            .any(|l| l.starts_with(&format!("{bytes} bytes in "))
                && l.contains(" s (")
                && l.contains(" MiB/s) -> ")),
        "{err}"
    );
}

#[test]
fn serve_put_get_ls_stat_bench() {
    let s = serve(&["--no-root-squash"]);
    let local = s.dir.join("in.bin");
    let data: Vec<u8> = (0..(3 << 20) + 123)
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&local, &data).unwrap();
    for tcp in [false, true] {
        let name = if tcp { "tcp.bin" } else { "rdma.bin" };
        let out = nfs(
            &s,
            tcp,
            &[
                "put",
                local.to_str().unwrap(),
                &format!("127.0.0.1:/{name}"),
            ],
        );
        assert_quiet_summary(&out, data.len());
        assert_eq!(
            std::fs::read(s.dir.join("export").join(name)).unwrap(),
            data
        );
        let back = s.dir.join(format!("back-{name}"));
        let out = nfs(
            &s,
            tcp,
            &["get", &format!("127.0.0.1:/{name}"), back.to_str().unwrap()],
        );
        assert_quiet_summary(&out, data.len());
        assert_eq!(std::fs::read(&back).unwrap(), data);
    }
    // The same under NFSv4.1 (the default version).
    for (verb, a, b) in [
        (
            "put",
            local.to_str().unwrap().to_owned(),
            "127.0.0.1:/v4.bin".to_owned(),
        ),
        (
            "get",
            "127.0.0.1:/v4.bin".to_owned(),
            s.dir.join("back-v4.bin").to_str().unwrap().to_owned(),
        ),
    ] {
        let out = Command::new(BIN)
            .args(["nfs", verb, &a, &b, "--port", &s.rdma.to_string()])
            .output()
            .unwrap();
        assert_quiet_summary(&out, data.len());
    }
    assert_eq!(std::fs::read(s.dir.join("back-v4.bin")).unwrap(), data);
    std::fs::create_dir(s.dir.join("export/many")).unwrap();
    for i in 0..1500 {
        std::fs::write(s.dir.join(format!("export/many/entry-{i}")), b"").unwrap();
    }
    let out = nfs(&s, false, &["ls", "127.0.0.1:/many"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1500);
    let out = nfs(&s, true, &["ls", "-l", "127.0.0.1:/"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with('d') && l.ends_with(" many")),
        "{text}"
    );
    let out = nfs(&s, false, &["stat", "127.0.0.1:/rdma.bin"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("size: {}", data.len())), "{text}");
    // Errors name the problem.
    let out = nfs(&s, false, &["get", "127.0.0.1:/nope", "-"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("NFS3ERR_NOENT"));
    let out = Command::new(BIN)
        .args(["nfs", "get", "127.0.0.1:/nope", "-", "--port"])
        .arg(s.rdma.to_string())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("NFS4ERR_NOENT"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(BIN)
        .args(["nfs", "ls", "no-colon-path"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("HOST:/PATH"));
    // bench --json over both transports.
    let out = Command::new(BIN)
        .args([
            "nfs",
            "bench",
            "127.0.0.1:/",
            "--size",
            "2",
            "--rounds",
            "1",
            "--getattrs",
            "20",
            "--json",
            "--vers",
            "3",
        ])
        .args([
            "--port",
            &s.rdma.to_string(),
            "--tcp-port",
            &s.tcp.to_string(),
            "--mount-port",
            &s.mount.to_string(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for k in ["write_throughput", "read_throughput", "getattr_rtt"] {
        assert!(v["ratios_rdma_over_tcp"][k].as_f64().unwrap() > 0.0, "{v}");
    }
    // SIGTERM: a clean exit.
    let mut s = s;
    let _ = Command::new("kill")
        .args(["-TERM", &s.child.id().to_string()])
        .status();
    let status = s.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

#[test]
fn read_only_and_bad_export() {
    let s = serve(&["--read-only"]);
    let local = s.dir.join("x");
    std::fs::write(&local, b"x").unwrap();
    let out = nfs(&s, false, &["put", local.to_str().unwrap(), "127.0.0.1:/x"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("NFS3ERR_ROFS"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(BIN)
        .args([
            "nfs",
            "serve",
            "/nonexistent/dir",
            "--listen",
            "127.0.0.1:0",
            "--mount-port",
            "0",
            "--state-dir",
        ])
        .arg(s.dir.join("state2"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open the export directory"));
}
