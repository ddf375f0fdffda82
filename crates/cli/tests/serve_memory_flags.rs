//! `rpcrdma serve` and `rpcrdma nfs serve`: the memory budget's flags
//! (issue 9, item 8) are documented with their defaults, and a budget too
//! small to take a call is refused at start with a message that names the
//! flag, the problem and the fix (nothing is listened on).

use std::process::Command;

fn rpcrdma(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rpcrdma"))
        .args(args)
        .output()
        .expect("run rpcrdma");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn help_documents_both_limits_and_their_defaults() {
    for cmd in [&["serve", "--help"][..], &["nfs", "serve", "--help"]] {
        let (code, out, _) = rpcrdma(cmd);
        assert_eq!(code, 0, "{cmd:?}");
        let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
        for want in [
            "--max-memory <SIZE>",
            "[default: 512M]",
            "--max-connection-memory <SIZE>",
            "[default: 64M]",
            "--max-connections <N>",
            "[default: 1024]",
            "--read-window <auto|SIZE>",
            "[default: auto]",
            "608 KiB with the defaults",
        ] {
            assert!(flat.contains(want), "{cmd:?}: no {want:?} in {out}");
        }
    }
}

#[test]
fn a_budget_too_small_for_any_call_is_refused_with_a_clear_message() {
    for (flag, value) in [
        ("--max-memory", "1"),
        ("--max-memory", "1K"),
        ("--max-connection-memory", "2K"),
    ] {
        for cmd in [&["serve"][..], &["nfs", "serve", "/tmp"]] {
            let mut args = cmd.to_vec();
            args.extend(["--listen", "127.0.0.1:0", "--duration", "1", flag, value]);
            let (code, _, err) = rpcrdma(&args);
            assert_eq!(code, 2, "{args:?}: {err}");
            assert!(
                err.contains(&format!("{flag} {value} is too small")),
                "{err}"
            );
            assert!(err.contains("at least 4K"), "{err}");
        }
    }
    // Zero is refused by the parser.
    let (code, _, err) = rpcrdma(&["serve", "--max-memory", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("more than zero"), "{err}");
}

#[test]
fn a_sane_small_budget_starts_and_says_what_it_means() {
    let (code, out, err) = rpcrdma(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--duration",
        "1",
        "--max-memory",
        "8M",
        "--max-connection-memory",
        "16M",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("memory for clients' calls: at most 8 MiB in all, 8 MiB per connection"),
        "{out}"
    );
    // The read window `auto` chose, and why (1 MiB on one CPU, 2 MiB on
    // several).
    assert!(
        out.contains(", read window 1 MiB (auto, 1 CPU)")
            || out.contains(", read window 2 MiB (auto, "),
        "{out}"
    );
    // Larger calls are refused, and the operator is told.
    assert!(err.contains("are refused with SYSTEM_ERR"), "{err}");
    assert!(
        err.contains("--max-connection-memory 16M is more than --max-memory 8M"),
        "{err}"
    );
}

/// `nfs serve` says what its memory options came to as `serve` does, the
/// read window included.
#[test]
fn nfs_serve_prints_its_memory_and_read_window() {
    let dir = std::env::temp_dir().join(format!("rpcrdma-nfs-window-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("export")).unwrap();
    let export = dir.join("export");
    let state = dir.join("state");
    let (code, out, err) = rpcrdma(&[
        "nfs",
        "serve",
        export.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--mount-port",
        "0",
        "--state-dir",
        state.to_str().unwrap(),
        "--duration",
        "1",
        "--read-window",
        "3M",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("memory for clients' calls: at most 512 MiB in all, 64 MiB per connection, read window 3 MiB\n"),
        "{out}"
    );
}

/// A budget that holds calls but not one connection's fixed cost (608 KiB
/// with the defaults, and a sixteenth kept for calls) is refused at start,
/// naming the flag and the least it takes.
#[test]
fn a_budget_too_small_for_one_connection_is_refused() {
    for cmd in [&["serve"][..], &["nfs", "serve", "/tmp"]] {
        let mut args = cmd.to_vec();
        args.extend([
            "--listen",
            "127.0.0.1:0",
            "--duration",
            "1",
            "--max-memory",
            "500K",
        ]);
        let (code, _, err) = rpcrdma(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("--max-memory 500K is too small"), "{err}");
        assert!(err.contains("holds 608 KiB"), "{err}");
        assert!(err.contains("give at least 649K"), "{err}");
    }
    let (code, out, err) = rpcrdma(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--duration",
        "1",
        "--max-memory",
        "649K",
        "--max-connection-memory",
        "64K",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("at most 1 connections at once"), "{out}");
}
