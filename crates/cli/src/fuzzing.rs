//! The entry point shared by the coverage-guided fuzz harness
//! (`fuzz/fuzz_targets/decode_cli.rs`) and the bounded run inside
//! `cargo test` (`tests/decode_fuzz_bounded.rs`). Test support only: the
//! command never calls it.

use bytes::Bytes;
use rpcrdma_wire::{decode, DecodeConfig};

use crate::report;

/// The `rpcrdma decode` path: decodes `data` and renders it as text and as
/// JSON, as a message and as private data. Panics only when an invariant
/// breaks: the JSON must parse and agree with the decode result on
/// validity.
pub fn report_roundtrip(data: &[u8]) {
    let buf = Bytes::copy_from_slice(data);
    let result = decode(&buf, &DecodeConfig::default());
    let _ = report::message_text(&result);
    let json = report::message_json(&result);
    let v: serde_json::Value =
        serde_json::from_str(&json).expect("decode --json output must parse");
    assert_eq!(v["valid"].as_bool(), Some(result.is_ok()));
    let (ok, pd_json) = report::private_data_json(data);
    let pv: serde_json::Value =
        serde_json::from_str(&pd_json).expect("private data json must parse");
    assert_eq!(pv["valid"].as_bool(), Some(ok));
    let (text_ok, _) = report::private_data_text(data);
    assert_eq!(text_ok, ok, "text and JSON agree on private data");
}
