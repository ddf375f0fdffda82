//! `rpcrdma completions SHELL` and `rpcrdma man` generate from the command
//! line's definition: every subcommand and its options are in them.

use std::process::Command;

fn rpcrdma(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rpcrdma"))
        .args(args)
        .output()
        .expect("run rpcrdma");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const SUBCOMMANDS: &[&str] = &[
    "demo",
    "serve",
    "call",
    "probe",
    "decode",
    "rping",
    "bench",
    "nfs",
    "xdrgen",
    "completions",
    "man",
];

#[test]
fn completion_scripts_for_every_shell() {
    for (shell, marker) in [
        ("bash", "complete -F _rpcrdma"),
        ("zsh", "#compdef rpcrdma"),
        ("fish", "complete -c rpcrdma"),
        ("elvish", "edit:completion:arg-completer[rpcrdma]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let (ok, script, err) = rpcrdma(&["completions", shell]);
        assert!(ok, "{shell}: {err}");
        assert!(script.contains(marker), "{shell}: no {marker:?}");
        for sub in SUBCOMMANDS {
            assert!(script.contains(sub), "{shell}: no subcommand {sub}");
        }
    }
    // Options of nested subcommands are there (nfs get --transport, serve
    // --max-memory), with their values where they are an enumeration.
    let (_, bash, _) = rpcrdma(&["completions", "bash"]);
    for word in [
        "--transport",
        "--max-memory",
        "--provider",
        "softiwarp",
        "rdma-core",
    ] {
        assert!(bash.contains(word), "bash: no {word}");
    }
}

#[test]
fn an_unknown_shell_is_refused_with_the_choices() {
    let (ok, _, err) = rpcrdma(&["completions", "csh"]);
    assert!(!ok);
    assert!(err.contains("bash") && err.contains("zsh"), "{err}");
}

#[test]
fn the_manual_page_is_roff_with_every_subcommand() {
    let (ok, page, err) = rpcrdma(&["man"]);
    assert!(ok, "{err}");
    assert!(page.contains(".TH rpcrdma 1"), "{page}");
    assert!(page.contains(".SH NAME") && page.contains(".SH SYNOPSIS"));
    assert!(page.contains("\\-\\-log"), "the global option");
    for sub in SUBCOMMANDS {
        assert!(
            page.contains(&format!("rpcrdma\\-{sub}(1)")),
            "no {sub} in the page"
        );
    }
}

#[test]
fn man_dir_writes_a_page_per_subcommand() {
    let dir = std::env::temp_dir().join(format!("rpcrdma-man-{}", std::process::id()));
    let (ok, out, err) = rpcrdma(&["man", "--dir", dir.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.contains(dir.to_str().unwrap()));
    for page in [
        "rpcrdma.1",
        "rpcrdma-serve.1",
        "rpcrdma-nfs.1",
        "rpcrdma-nfs-serve.1",
        "rpcrdma-bench-verbs.1",
        "rpcrdma-completions.1",
    ] {
        let text =
            std::fs::read_to_string(dir.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.contains(".TH "), "{page} is no manual page");
    }
    let serve = std::fs::read_to_string(dir.join("rpcrdma-nfs-serve.1")).unwrap();
    assert!(serve.contains("\\-\\-read\\-only"), "nfs serve's options");
    std::fs::remove_dir_all(&dir).unwrap();
}
