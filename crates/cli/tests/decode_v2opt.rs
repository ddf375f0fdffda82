//! Golden vectors of the Version Two transport properties feature
//! (`docs/v2-transport-properties.md`), decoded by `rpcrdma decode --json`.
//! The same bytes are what the engine sends
//! (`crates/engine/tests/v2_transport_properties.rs`,
//! `x2_offer_and_answer_are_byte_exact`).

use std::process::Command;

use rpcrdma_engine::{TransportProperties, TRANSPORT_PROPERTIES};

/// A client (8 KiB buffers and Sends, default limits) offers its
/// properties after its call 0x1234 settled Version Two.
const OFFER: &str = "80001234 00000002 00000080 00000005 00000000 80545001 00000018 00002000 00002000 00000040 00000010 00000040 01010000";
/// The server (16 KiB) answers with its own.
const ANSWER: &str = "80001234 00000002 00000040 00000005 00000001 80545001 00000018 00004000 00004000 00000040 00000010 00000040 01010000";
/// A server without the feature refuses the offer (its grant, 64, as
/// the credit value).
const REFUSAL: &str = "80001234 00000002 00000040 00000004 00000003";

fn decode(args: &[&str]) -> (i32, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_rpcrdma"))
        .arg("decode")
        .args(args)
        .output()
        .expect("run rpcrdma");
    let text = String::from_utf8_lossy(&out.stdout);
    let v = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("{e}: {text} {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), v)
}

fn accept() -> String {
    TRANSPORT_PROPERTIES.0.to_string()
}

fn props(optinfo_hex: &str) -> TransportProperties {
    let bytes = hex::decode(optinfo_hex).expect("optinfo hex");
    TransportProperties::from_optinfo(&bytes).expect("valid properties")
}

#[test]
fn offer_decodes_as_a_call_of_the_transport_properties_type() {
    let (code, v) = decode(&["--json", "--accept-option", &accept(), "--hex", OFFER]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v,
        serde_json::json!({
            "valid": true, "xid": 0x8000_1234u32, "vers": 2, "credits": 128,
            "proc": "RDMA2_OPTIONAL", "direction": "CALL",
            "reads": [], "writes": [], "reply": null,
            "header_len": 52, "payload_len": 0,
            "opttype": 0x8054_5001u32,
            "optinfo": "000020000000200000000040000000100000004001010000"
        })
    );
    // By hand against docs/v2-transport-properties.md: recv_size, send_size,
    // max_read_segs, max_write_chunks, max_chunk_segs, max_message.
    assert_eq!(
        props(v["optinfo"].as_str().unwrap()),
        TransportProperties {
            recv_size: 8192,
            send_size: 8192,
            max_read_segments: 64,
            max_write_chunks: 16,
            max_segments_per_chunk: 64,
            max_message: 16 * 1024 * 1024 + 64 * 1024,
        }
    );
}

#[test]
fn answer_decodes_as_a_reply_with_the_same_xid() {
    let (code, v) = decode(&["--json", "--accept-option", &accept(), "--hex", ANSWER]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["proc"], "RDMA2_OPTIONAL");
    assert_eq!(v["direction"], "REPLY");
    assert_eq!(v["xid"], 0x8000_1234u32);
    assert_eq!(v["credits"], 64);
    assert_eq!(v["payload_len"], 0);
    let p = props(v["optinfo"].as_str().unwrap());
    assert_eq!((p.recv_size, p.send_size), (16384, 16384));
}

#[test]
fn a_receiver_without_the_feature_answers_inval_option() {
    // rpcrdma decode without --accept-option is such a receiver; with the
    // server's grant as the credit value it prescribes the engine's bytes.
    let (code, v) = decode(&["--json", "--credits", "64", "--hex", OFFER]);
    assert_eq!(code, 1);
    assert_eq!(v["action"], "reply");
    assert_eq!(v["err"], "ERR_INVAL_OPTION");
    assert_eq!(v["reply_hex"], REFUSAL.replace(' ', ""));
    // And the refusal itself decodes as RDMA2_ERROR RDMA2_ERR_INVAL_OPTION.
    let (code, v) = decode(&["--json", "--hex", REFUSAL]);
    assert_eq!(code, 0);
    assert_eq!(v["proc"], "RDMA2_ERROR");
    assert_eq!(v["err"], "ERR_INVAL_OPTION");
    assert_eq!(v["xid"], 0x8000_1234u32);
}
