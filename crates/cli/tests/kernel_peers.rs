//! Golden bytes captured from the Linux kernel NFS server (svcrdma, Debian
//! 6.1.192, over siw in the QEMU guest; `scripts/interop/nfsd-null.sh`),
//! decoded by `rpcrdma decode`. See docs/spec-notes.md, "Linux kernel
//! peers".

use std::process::Command;

fn decode(args: &[&str]) -> (i32, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_rpcrdma"))
        .arg("decode")
        .arg("--json")
        .args(args)
        .output()
        .expect("run rpcrdma");
    let s = String::from_utf8_lossy(&out.stdout);
    let v = serde_json::from_str(s.trim()).unwrap_or_else(|e| panic!("{e}: {s}"));
    (out.status.code().unwrap_or(-1), v)
}

/// Our Version Two first message (an NFSv3 NULL call), as captured.
const OUR_V2_PROBE: &str = concat!(
    "d31419d6 00000002 00000080 00000000 00000000 00000000 00000000 00000000 ",
    "d31419d6 00000000 00000002 000186a3 00000003 00000000 00000000 00000000 00000000 00000000"
);

/// The kernel's answer to it: RDMA_ERROR, ERR_VERS, versions 1 to 1, with
/// rdma_vers 2 copied from our message and its credit grant (64).
const KERNEL_ERR_VERS: &str = "d31419d6000000020000004000000004000000010000000100000001";

/// The RFC 8797 private data of svcrdma's MPA Reply (after the RFC 6581
/// IRD/ORD word): version 1, no remote invalidation, 4 KiB both ways.
const KERNEL_PRIVATE_DATA: &str = "f6ab0e1801000303";

#[test]
fn the_kernels_err_vers_decodes_as_err_vers_1_to_1_with_vers_2() {
    let (code, v) = decode(&["--hex", KERNEL_ERR_VERS]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["valid"], true);
    assert_eq!(v["vers"], 2);
    assert_eq!(v["credits"], 64);
    assert_eq!(v["err"], "ERR_VERS");
    assert_eq!(
        (v["vers_low"].as_u64(), v["vers_high"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(v["header_len"], 28);
    assert_eq!(v["payload_len"], 0);
}

#[test]
fn a_version_one_receiver_of_ours_answers_byte_for_byte_like_the_kernel() {
    let (code, v) = decode(&["--hex", OUR_V2_PROBE]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["proc"], "RDMA2_MSG");
    assert_eq!(v["direction"], "CALL");
    assert_eq!(v["credits"], 128);
    assert_eq!(v["payload_len"], 40);
    // A Version One-only receiver granting 64 credits, as svcrdma does.
    let (code, v) = decode(&["--versions", "1", "--credits", "64", "--hex", OUR_V2_PROBE]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["err"], "ERR_VERS");
    assert_eq!(v["reply_hex"], KERNEL_ERR_VERS);
}

#[test]
fn the_kernels_private_data() {
    let (code, v) = decode(&["--private-data", KERNEL_PRIVATE_DATA]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["version"], 1);
    assert_eq!(v["remote_invalidation"], false);
    assert_eq!(
        (v["send_size"].as_u64(), v["recv_size"].as_u64()),
        (Some(4096), Some(4096))
    );
}
