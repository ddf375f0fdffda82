//! `rpcrdma decode`: the command-line contract (JSON fields, exit codes).

use std::io::Write;
use std::process::{Command, Stdio};

fn run(args: &[&str], stdin: Option<&[u8]>) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rpcrdma"))
        .arg("decode")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run rpcrdma");
    {
        let mut si = child.stdin.take().expect("stdin");
        if let Some(data) = stdin {
            si.write_all(data).expect("write stdin");
        }
    }
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(args: &[&str]) -> (i32, serde_json::Value) {
    let (code, out, err) = run(args, None);
    let v = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    (code, v)
}

const MSG: &str =
    "0000002a 00000001 00000020 00000000 00000000 00000000 00000000 0000002a 00000000";

#[test]
fn valid_message_json_and_exit_zero() {
    let (code, v) = json(&["--json", "--hex", MSG]);
    assert_eq!(code, 0);
    assert_eq!(
        v,
        serde_json::json!({
            "valid": true, "xid": 42, "vers": 1, "credits": 32, "proc": "RDMA_MSG",
            "reads": [], "writes": [], "reply": null, "header_len": 28, "payload_len": 8
        })
    );
}

#[test]
fn chunk_lists_in_json() {
    let hex = concat!(
        "00000007 00000001 00000001 00000000 ",
        "00000001 00000008 00000011 00000100 0000000000001000 00000000 ",
        "00000001 00000001 00000022 00000200 0000000000002000 00000000 ",
        "00000001 00000001 00000033 00000300 0000000000003000 ",
        "00000007 00000000"
    );
    let (code, v) = json(&["--json", "--hex", hex]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["reads"],
        serde_json::json!([{"position": 8, "handle": 17, "length": 256, "offset": 4096}])
    );
    assert_eq!(
        v["writes"],
        serde_json::json!([[{"handle": 34, "length": 512, "offset": 8192}]])
    );
    assert_eq!(
        v["reply"],
        serde_json::json!([{"handle": 51, "length": 768, "offset": 12288}])
    );
}

#[test]
fn invalid_message_json_and_exit_one() {
    let (code, v) = json(&[
        "--json",
        "--hex",
        "0000002a 00000001 00000020 00000001 00000000 00000000 00000000",
    ]);
    assert_eq!(code, 1);
    assert_eq!(v["valid"], false);
    assert_eq!(v["action"], "reply");
    assert_eq!(v["err"], "ERR_BADHEADER");
    assert_eq!(v["reply_hex"], "0000002a00000001000000200000000400000002");
    assert!(v["reason"].as_str().unwrap().contains("RDMA_NOMSG"));
}

#[test]
fn version_range_option() {
    let v2 =
        "0000002a 00000002 00000020 00000000 00000000 00000000 00000000 00000000 0000002a 00000000";
    let (code, v) = json(&["--json", "--versions", "1", "--hex", v2]);
    assert_eq!(code, 1);
    assert_eq!(v["err"], "ERR_VERS");
    assert_eq!(
        v["reply_hex"],
        "0000002a00000002000000200000000400000001000000010000000100000001"[..56].to_string()
    );
    let (code, v) = json(&["--json", "--hex", v2]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["proc"], "RDMA2_MSG");
    assert_eq!(v["direction"], "CALL");
}

#[test]
fn discard_verdict() {
    let (code, v) = json(&[
        "--json",
        "--hex",
        "0000002a 00000001 00000020 00000004 00000009",
    ]);
    assert_eq!(code, 1);
    assert_eq!(v["action"], "discard");
    assert_eq!(v["err"], serde_json::Value::Null);
    assert_eq!(v["reply_hex"], serde_json::Value::Null);
}

#[test]
fn raw_bytes_from_stdin_and_hex_from_stdin() {
    let raw = hex::decode(MSG.replace(' ', "")).unwrap();
    let (code, out, _) = run(&["--json"], Some(&raw));
    assert_eq!(code, 0, "{out}");
    let (code, out, _) = run(&["--json", "--hex", "-"], Some(MSG.as_bytes()));
    assert_eq!(code, 0, "{out}");
    let (code, out, _) = run(&["--json", "-"], Some(&raw));
    assert_eq!(code, 0, "{out}");
}

#[test]
fn file_argument() {
    let dir = std::env::temp_dir().join(format!("rpcrdma-decode-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("msg.bin");
    std::fs::write(&path, hex::decode(MSG.replace(' ', "")).unwrap()).unwrap();
    let (code, out, _) = run(&[path.to_str().unwrap()], None);
    assert_eq!(code, 0);
    assert!(
        out.starts_with("RPC-over-RDMA Version One RDMA_MSG"),
        "{out}"
    );
    assert!(out.contains("RPC CALL xid 0x0000002a"), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn usage_errors_exit_two_with_a_fix() {
    let (code, _, err) = run(&["--hex", "0000002"], None);
    assert_eq!(code, 2);
    assert!(err.contains("odd number of digits"), "{err}");
    let (code, _, err) = run(&["--hex", "00zz"], None);
    assert_eq!(code, 2);
    assert!(err.contains("0-9 and a-f"), "{err}");
    let (code, _, err) = run(&["/nonexistent/file.bin"], None);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read"), "{err}");
    let (code, _, _) = run(&["--versions", "1-3", "--hex", MSG], None);
    assert_eq!(code, 2);
}

#[test]
fn private_data() {
    let (code, v) = json(&["--json", "--private-data", "00800000f6ab0e1801010303"]);
    assert_eq!(code, 0);
    assert_eq!(v["offset"], 4);
    assert_eq!(v["remote_invalidation"], true);
    assert_eq!(v["send_size"], 4096);
    let (code, v) = json(&["--json", "--private-data", "0080000000000000"]);
    assert_eq!(code, 1);
    assert_eq!(v["valid"], false);
    assert_eq!(v["assumed"]["send_size"], 1024);
    let (code, out, _) = run(&["--private-data", "f6ab0e1801000000"], None);
    assert_eq!(code, 0);
    assert!(out.contains("1024 bytes"), "{out}");
}

/// Issue 9, item 1: a Version Two `RDMA2_NOMSG` whose direction is CALL
/// but which carries only a Reply chunk holds no call: `ERR_BADHEADER`.
#[test]
fn v2_nomsg_call_without_position_zero_chunk_is_bad_header() {
    let hex = "00000011 00000002 00000001 00000001 00000000 00000000 00000000 00000001 00000001 00000001 00000400 00000000 00000000";
    let (code, v) = json(&["--json", "--hex", hex]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["valid"], false);
    assert_eq!(v["action"], "reply");
    assert_eq!(v["err"], "ERR_BADHEADER");
    assert_eq!(v["reply_hex"], "0000001100000002000000010000000400000002");
    let (code, text, _) = run(&["--hex", hex], None);
    assert_eq!(code, 1);
    assert!(text.contains("Position-Zero Read chunk"), "{text}");
}

/// `--json` names the error reply in the reply's own version (the
/// `"err"` field keeps its Version One terms, issue 2's contract):
/// `RDMA2_ERROR` / `RDMA2_ERR_BAD_HEADER` for the Version Two message of
/// issue 9 item 1, `RDMA_ERROR` / `ERR_BADHEADER` for a Version One
/// one, `RDMA2_ERR_VERS` for a Version Two message a Version One
/// receiver refuses, and nothing for a discard; a decoded error message
/// carries its version's name too.
#[test]
fn json_names_the_error_reply_in_its_version() {
    let hex = "00000011 00000002 00000001 00000001 00000000 00000000 00000000 00000001 00000001 00000001 00000400 00000000 00000000";
    let (_, v) = json(&["--json", "--hex", hex]);
    assert_eq!(v["err"], "ERR_BADHEADER");
    assert_eq!(v["reply_proc"], "RDMA2_ERROR", "{v}");
    assert_eq!(v["err_name"], "RDMA2_ERR_BAD_HEADER", "{v}");
    let (_, v) = json(&[
        "--json",
        "--hex",
        "0000002a 00000001 00000020 00000001 00000000 00000000 00000000",
    ]);
    assert_eq!(v["err"], "ERR_BADHEADER");
    assert_eq!(v["reply_proc"], "RDMA_ERROR", "{v}");
    assert_eq!(v["err_name"], "ERR_BADHEADER", "{v}");
    let v2 =
        "0000002a 00000002 00000020 00000000 00000000 00000000 00000000 00000000 0000002a 00000000";
    let (_, v) = json(&["--json", "--versions", "1", "--hex", v2]);
    assert_eq!(v["err"], "ERR_VERS");
    assert_eq!(
        (&v["reply_proc"], &v["err_name"]),
        (
            &serde_json::json!("RDMA2_ERROR"),
            &serde_json::json!("RDMA2_ERR_VERS")
        ),
        "{v}"
    );
    let (_, v) = json(&[
        "--json",
        "--hex",
        "0000002a 00000001 00000020 00000004 00000009",
    ]);
    assert_eq!(v["action"], "discard");
    assert_eq!(v["reply_proc"], serde_json::Value::Null);
    assert_eq!(v["err_name"], serde_json::Value::Null);
    // A received RDMA2_ERROR / RDMA_ERROR, decoded.
    let (code, v) = json(&[
        "--json",
        "--hex",
        "0000001100000002000000010000000400000002",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        (&v["err"], &v["err_name"]),
        (
            &serde_json::json!("ERR_BADHEADER"),
            &serde_json::json!("RDMA2_ERR_BAD_HEADER")
        ),
        "{v}"
    );
    let (_, v) = json(&[
        "--json",
        "--hex",
        "0000002a00000001000000200000000400000002",
    ]);
    assert_eq!(v["err_name"], "ERR_BADHEADER", "{v}");
}
