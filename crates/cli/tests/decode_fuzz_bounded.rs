//! The `rpcrdma decode` renderings under the fuzz harness's entry point
//! (`rpcrdma_cli::fuzzing::report_roundtrip`, also fed by cargo-afl in
//! `fuzz/fuzz_targets/decode_cli.rs`), run bounded and with fixed seeds:
//! every seed file, random octets, and mutations of the seeds.

use std::path::PathBuf;

use bytes::Bytes;
use proptest::prelude::*;
use rpcrdma_cli::fuzzing::report_roundtrip;
use rpcrdma_cli::report;
use rpcrdma_testkit::rng::XorShift;
use rpcrdma_wire::{decode, DecodeConfig};

fn seeds(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/seeds")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("seed directory entry").path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let data = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, data)
        })
        .collect()
}

#[test]
fn kernel_messages_are_described_as_rpc_calls_and_replies() {
    let kernel: Vec<_> = seeds("decode_cli")
        .into_iter()
        .filter(|(p, _)| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("kernel-"))
        })
        .collect();
    assert!(kernel.len() >= 10, "only {} kernel seeds", kernel.len());
    for (path, data) in kernel {
        let result = decode(&Bytes::from(data), &DecodeConfig::default());
        assert!(result.is_ok(), "{}: {result:?}", path.display());
        let text = report::message_text(&result);
        assert!(
            text.contains(": RPC CALL xid ") || text.contains(": RPC REPLY xid "),
            "{}: {text}",
            path.display()
        );
    }
}

#[test]
fn bounded_fuzz_run() {
    let inputs: Vec<Vec<u8>> = ["decode_cli", "private_data"]
        .iter()
        .flat_map(|t| seeds(t))
        .map(|(_, d)| d)
        .collect();
    for (_, data) in seeds("decode_cli") {
        report_roundtrip(&data);
    }
    let words = [
        0u32,
        1,
        2,
        3,
        4,
        5,
        64,
        65,
        0xf6ab_0e18,
        0xffff_ffff,
        0x8000_0000,
    ];
    let mut rng = XorShift::new(0x5eed_dec0_de00_0001);
    for i in 0..6000 {
        let mut buf = if i % 5 == 0 {
            (0..rng.below(96)).map(|_| rng.next_u64() as u8).collect()
        } else {
            inputs[rng.below(inputs.len())].clone()
        };
        for _ in 0..1 + rng.below(3) {
            if buf.is_empty() {
                break;
            }
            match rng.below(4) {
                0 => {
                    let at = rng.below(buf.len());
                    buf[at] = rng.next_u64() as u8;
                }
                1 => {
                    let at = rng.below(buf.len()) & !3;
                    let w = words[rng.below(words.len())].to_be_bytes();
                    for (k, b) in w.iter().enumerate() {
                        if let Some(x) = buf.get_mut(at + k) {
                            *x = *b;
                        }
                    }
                }
                2 => {
                    let n = rng.below(buf.len() + 1);
                    buf.truncate(n);
                }
                _ => {
                    let at = (rng.below(buf.len() + 1) & !3).min(buf.len());
                    let w = words[rng.below(words.len())].to_be_bytes();
                    buf.splice(at..at, w);
                }
            }
        }
        report_roundtrip(&buf);
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..200)) {
        report_roundtrip(&data);
    }
}
