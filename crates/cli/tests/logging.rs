//! Log lines carry no terminal colour codes when standard error is not a
//! terminal (a file, a pipe, the systemd journal).

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_rpcrdma");

#[test]
fn logs_into_a_pipe_have_no_escape_codes() {
    // The demo at `debug`: several log lines, into a pipe.
    let out = Command::new(BIN)
        .args(["--log", "debug", "demo"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("DEBUG"), "no log lines to look at: {err}");
    assert!(!err.contains('\u{1b}'), "escape codes in the log: {err:?}");
}
