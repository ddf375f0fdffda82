//! `rpcrdma decode` on the messages of issue 9 (items 1 and 6), built by
//! hand as a demanding checker would, through the binary with `--hex`
//! (text and `--json`): the verdict, the exact error reply and the
//! description must agree with what the engine does with the same bytes
//! (`crates/engine/tests/conformance_scenarios.rs`).

use std::process::Command;

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rpcrdma"))
        .arg("decode")
        .args(args)
        .output()
        .expect("run rpcrdma");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// `--json --hex HEX`: exit code and the object.
fn json(hex: &str) -> (i32, serde_json::Value) {
    let (code, out) = run(&["--json", "--hex", hex]);
    let v = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    (code, v)
}

/// `--hex HEX` as text.
fn text(hex: &str) -> (i32, String) {
    run(&["--hex", hex])
}

fn w(ws: &[u32]) -> String {
    ws.iter().map(|x| format!("{x:08x}")).collect()
}

/// An `RDMA2_NOMSG` header with `direction` and the chunk-list words.
fn v2_nomsg(xid: u32, direction: u32, lists: &[u32]) -> String {
    w(&[&[xid, 2, 1, 1, direction][..], lists].concat())
}

const REPLY_CHUNK: [u32; 6] = [1, 1, 1, 0x400, 0, 0];
const PZ_READ: [u32; 6] = [1, 0, 2, 0x100, 0, 0];

/// Item 1: every Version Two `RDMA2_NOMSG` that does not hold its message
/// in the chunk its direction names is rejected. A CALL is answered
/// `RDMA2_ERROR` `RDMA2_ERR_BAD_HEADER` (xid copied, version 2, the echoed
/// credit), and the text says so in Version Two's words; a REPLY is never
/// answered (spec note W14, issue 35's D2): discarded silently.
#[test]
fn item1_v2_nomsg_without_the_chunk_of_its_direction() {
    let cases: Vec<(String, &str)> = vec![
        // The message: CALL, only a Reply chunk.
        (
            v2_nomsg(0x11, 0, &[&[0, 0][..], &REPLY_CHUNK].concat()),
            "CALL",
        ),
        // CALL, a Read chunk not at Position zero, and a Reply chunk.
        (
            v2_nomsg(
                0x11,
                0,
                &[&[1, 4, 2, 0x100, 0, 0, 0, 0][..], &REPLY_CHUNK].concat(),
            ),
            "CALL",
        ),
        // REPLY with only a Position-Zero Read chunk.
        (
            v2_nomsg(0x11, 1, &[&PZ_READ[..], &[0, 0, 0]].concat()),
            "REPLY",
        ),
        // REPLY with nothing.
        (v2_nomsg(0x11, 1, &[0, 0, 0]), "REPLY"),
        // CALL with nothing.
        (v2_nomsg(0x11, 0, &[0, 0, 0]), "CALL"),
    ];
    for (hex, direction) in cases {
        let (code, v) = json(&hex);
        assert_eq!(code, 1, "{hex}: {v}");
        assert_eq!(v["valid"], false, "{hex}");
        let reason = v["reason"].as_str().unwrap();
        assert!(reason.contains("RDMA2_NOMSG"), "{hex}: {reason}");
        if direction == "REPLY" {
            assert_eq!(v["action"], "discard", "{hex}");
            assert!(v["reply_hex"].is_null(), "{hex}");
            let (code, t) = text(&hex);
            assert_eq!(code, 1, "{t}");
            assert!(t.starts_with("INVALID: RDMA2_NOMSG"), "{t}");
            assert!(t.contains("discard silently (no reply)"), "{t}");
            continue;
        }
        assert_eq!(v["action"], "reply", "{hex}");
        assert_eq!(v["err"], "ERR_BADHEADER", "{hex}");
        assert_eq!(
            v["reply_hex"], "0000001100000002000000010000000400000002",
            "{hex}"
        );
        let (code, t) = text(&hex);
        assert_eq!(code, 1, "{t}");
        assert!(t.starts_with("INVALID: RDMA2_NOMSG"), "{t}");
        assert!(
            t.contains("reply RDMA2_ERROR RDMA2_ERR_BAD_HEADER"),
            "{direction}: {t}"
        );
        assert!(
            t.contains("0000001100000002000000010000000400000002"),
            "{t}"
        );
    }
    // --credits N puts the grant in the reply instead.
    let hex = v2_nomsg(0x11, 0, &[&[0, 0][..], &REPLY_CHUNK].concat());
    let (_, out) = run(&["--json", "--credits", "64", "--hex", &hex]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["reply_hex"], "0000001100000002000000400000000400000002");
}

/// Item 1's valid counterparts: a CALL with a Position-Zero Read chunk and
/// a REPLY with a Reply chunk.
#[test]
fn item1_v2_nomsg_with_the_chunk_of_its_direction_is_valid() {
    let call = v2_nomsg(0x12, 0, &[&PZ_READ[..], &[0, 0], &REPLY_CHUNK].concat());
    let (code, v) = json(&call);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        (v["proc"].as_str(), v["direction"].as_str()),
        (Some("RDMA2_NOMSG"), Some("CALL"))
    );
    assert_eq!(v["reads"][0]["position"], 0);
    let reply = v2_nomsg(0x12, 1, &[&[0, 0][..], &REPLY_CHUNK].concat());
    let (code, v) = json(&reply);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["direction"], "REPLY");
    assert_eq!(v["reply"][0]["length"], 1024);
    let (_, t) = text(&call);
    assert!(t.contains("Position-Zero: the whole RPC message"), "{t}");
}

/// Item 6: `RDMA_ERROR` `ERR_VERS` and `ERR_CHUNK` (`ERR_BADHEADER`), in
/// both versions, followed by 3, 4, 8 or 100 pad bytes, are valid errors
/// (their RPC ends); the pad is reported as pad, never as an RPC message.
#[test]
fn item6_rdma_error_with_pad_bytes_is_valid_and_pad_is_not_rpc() {
    for vers in [1u32, 2] {
        for (body, err) in [(vec![1u32, 1, 2], "ERR_VERS"), (vec![2], "ERR_BADHEADER")] {
            for pad in [3usize, 4, 8, 100] {
                let hex = format!(
                    "{}{}",
                    w(&[&[5, vers, 1, 4][..], &body].concat()),
                    "00".repeat(pad)
                );
                let tag = format!("vers {vers} {err} pad {pad}");
                let (code, v) = json(&hex);
                assert_eq!(code, 0, "{tag}: {v}");
                assert_eq!(v["valid"], true, "{tag}");
                assert_eq!(v["err"], err, "{tag}");
                assert_eq!(v["header_len"], 16 + 4 * body.len(), "{tag}");
                assert_eq!(v["payload_len"], pad, "{tag}");
                if err == "ERR_VERS" {
                    assert_eq!(
                        (v["vers_low"].as_u64(), v["vers_high"].as_u64()),
                        (Some(1), Some(2))
                    );
                }
                let (code, t) = text(&hex);
                assert_eq!(code, 0, "{tag}: {t}");
                assert!(
                    t.contains(&format!(
                        "pad          {pad} bytes after the error body (ignored)"
                    )),
                    "{tag}: {t}"
                );
                assert!(
                    !t.contains("RPC CALL") && !t.contains("RPC REPLY"),
                    "{tag}: {t}"
                );
                let named = match (vers, err) {
                    (1, "ERR_VERS") => "error        ERR_VERS: sender supports versions 1 to 2",
                    (1, _) => "error        ERR_BADHEADER (ERR_CHUNK)",
                    (2, "ERR_VERS") => {
                        "error        RDMA2_ERR_VERS: sender supports versions 1 to 2"
                    }
                    _ => "error        RDMA2_ERR_BAD_HEADER",
                };
                assert!(t.contains(named), "{tag}: {t}");
            }
        }
    }
}

/// Item 6: a Read list whose Positions descend is a valid message; the
/// text shows the chunks grouped and sorted as a responder rebuilds them.
#[test]
fn item6_read_list_in_descending_position_order_is_valid() {
    let seg = |pos: u32, handle: u32, len: u32| vec![1, pos, handle, len, 0, 0];
    let hex = w(&[
        &[9u32, 1, 8, 0][..],
        &seg(64, 3, 9),
        &seg(56, 2, 4),
        &seg(44, 1, 5),
        &[0, 0, 0],
        &[9, 0, 2, 0x2000_0099, 1, 3, 0, 0, 0, 0, 5, 4, 9],
    ]
    .concat());
    let (code, v) = json(&hex);
    assert_eq!(code, 0, "{v}");
    let positions: Vec<u64> = v["reads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["position"].as_u64().unwrap())
        .collect();
    // The JSON keeps the wire order.
    assert_eq!(positions, [64, 56, 44]);
    let (_, t) = text(&hex);
    assert!(
        t.contains("3 segments in 3 chunks (listed out of Position order"),
        "{t}"
    );
    let at = |p: &str| t.find(p).unwrap_or_else(|| panic!("{p}: {t}"));
    assert!(at("chunk at position 44") < at("chunk at position 56"));
    assert!(at("chunk at position 56") < at("chunk at position 64"));
    assert!(
        t.contains("RPC CALL xid 0x00000009 prog 536871065 vers 1 proc 3"),
        "{t}"
    );
}

/// Item 6: a Read chunk that carries its XDR padding (a 5-byte opaque as
/// an 8-byte chunk) is a valid header; whether it fits the stream is the
/// responder's business (spec note W11), which accepts it (E18).
#[test]
fn item6_padded_read_chunk_is_a_valid_header() {
    let hex = w(&[
        9u32,
        1,
        8,
        0,
        1,
        44,
        1,
        8,
        0,
        0,
        0,
        0,
        0,
        9,
        0,
        2,
        0x2000_0099,
        1,
        3,
        0,
        0,
        0,
        0,
        5,
    ]);
    let (code, v) = json(&hex);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["reads"][0]["length"], 8);
    assert_eq!(v["payload_len"], 44);
}
