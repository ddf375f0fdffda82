//! `rpcrdma nfs bench --workloads --compare` and `--demo`, end to end with
//! small sizes: the workloads run against one `rpcrdma nfs serve` over
//! RPC-over-RDMA and TCP and against a second one standing in for another
//! NFSv3 server over TCP; every measure reports a figure for each, the
//! ratios are there, and the scratch directories are gone afterwards.
//! `--demo` measures the demo program beside NFS on a server run with
//! `--demo-program`, and names that option when the server lacks it. No
//! figure is judged: timing belongs to benchmarks.

use std::process::Command;

mod common;
use common::{NfsServed as Served, BIN};

const MEASURES: [&str; 7] = [
    "seq_write_mib_s",
    "seq_read_mib_s",
    "rand_read_4k_ops_s",
    "rand_write_4k_ops_s",
    "create_setattr_remove_ops_s",
    "readdirplus_entries_s",
    "lookup_getattr_ops_s",
];

fn bench(s: &Served, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args([
            "nfs",
            "bench",
            "127.0.0.1:/",
            "--vers",
            "3",
            "--rounds",
            "1",
        ])
        .args(["--size", "2", "--json"])
        .args(["--port", &s.rdma.to_string()])
        .args(["--tcp-port", &s.tcp.to_string()])
        .args(["--mount-port", &s.mount.to_string()])
        .args(args)
        .output()
        .unwrap()
}

fn empty(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

#[test]
fn workloads_against_another_server() {
    let ours = Served::start("bench-ours", true, &["--no-root-squash"]);
    let other = Served::start(
        "bench-other",
        true,
        &["--no-root-squash", "--versions", "3"],
    );
    let (tcp, mount) = (other.tcp.to_string(), other.mount.to_string());
    let out = bench(
        &ours,
        &[
            "--workloads",
            "--ops",
            "40",
            "--depth",
            "4",
            "--files",
            "10",
            "--entries",
            "120",
            "--compare",
            "127.0.0.1:/",
            "--compare-port",
            &tcp,
            "--compare-mount-port",
            &mount,
            "--compare-name",
            "theirs",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["compare_name"], "theirs", "{v}");
    for server in ["rdma", "tcp", "other"] {
        for m in MEASURES {
            let x = v["median"][server][m].as_f64();
            assert!(x.is_some_and(|x| x > 0.0), "{server} {m}: {v}");
        }
    }
    for pair in ["rdma_over_tcp", "tcp_over_other", "rdma_over_other"] {
        for m in MEASURES {
            assert!(v["ratios"][pair][m].as_f64().is_some(), "{pair} {m}: {v}");
        }
    }
    // Every scratch directory was removed, on both servers.
    assert!(empty(&ours.dir.join("export")));
    assert!(empty(&other.dir.join("export")));

    // --compare needs --workloads.
    let out = bench(&ours, &["--compare", "127.0.0.1:/"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--workloads"));
}

#[test]
fn demo_beside_nfs() {
    let s = Served::start("bench-demo", true, &["--no-root-squash", "--demo-program"]);
    for vers in ["3", "4.1"] {
        let out = Command::new(BIN)
            .args([
                "nfs",
                "bench",
                "127.0.0.1:/",
                "--vers",
                vers,
                "--rounds",
                "2",
            ])
            .args(["--size", "2", "--getattrs", "5", "--json", "--demo"])
            .args(["--port", &s.rdma.to_string()])
            .args(["--tcp-port", &s.tcp.to_string()])
            .args(["--mount-port", &s.mount.to_string()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for side in ["rpc_over_rdma", "tcp"] {
            for k in ["write_mib_s", "read_mib_s"] {
                assert!(v["demo"][side][k].as_f64().is_some_and(|x| x > 0.0), "{v}");
            }
            for k in ["write_throughput", "read_throughput"] {
                assert!(
                    v["ratios_nfs_over_demo"][side][k]
                        .as_f64()
                        .is_some_and(|x| x > 0.0),
                    "{v}"
                );
            }
            assert!(
                v["per_round"][1][side]["demo_read_mib_s"]
                    .as_f64()
                    .is_some(),
                "{v}"
            );
        }
    }
    assert!(empty(&s.dir.join("export")));

    // A server without the demo program: the error names the option.
    let plain = Served::start("bench-plain", true, &["--no-root-squash"]);
    let out = bench(&plain, &["--demo"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--demo-program"), "{err}");
}
