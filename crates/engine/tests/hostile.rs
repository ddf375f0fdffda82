//! Hostile input into whole engines: arbitrary and half-valid messages
//! injected into both ends among legitimate traffic. Nothing may panic,
//! nothing may be leaked, and a connection that survives still works.
//!
//! The property is `rpcrdma_engine::testing::fuzz_pair`; the `engine`
//! target in `fuzz/` runs it for long coverage-guided campaigns, this is
//! its bounded, seeded form.

use proptest::prelude::*;
use rpcrdma_engine::testing::fuzz_pair;

/// A message: mostly a plausible header (so deep paths are reached) with
/// random words after it, sometimes pure noise.
fn message() -> impl Strategy<Value = Vec<u8>> {
    let words = proptest::collection::vec(
        prop_oneof![
            4 => 0u32..8,
            2 => any::<u32>(),
            1 => Just(0xffff_ffff),
            1 => 0u32..4096,
        ],
        0..40,
    );
    prop_oneof![
        3 => (any::<u32>(), 1u32..3, 0u32..300, 0u32..7, words.clone()).prop_map(|(xid, v, cr, p, w)| {
            let mut b: Vec<u8> = [xid, v, cr, p].iter().flat_map(|x| x.to_be_bytes()).collect();
            b.extend(w.iter().flat_map(|x| x.to_be_bytes()));
            b
        }),
        1 => proptest::collection::vec(any::<u8>(), 0..200),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn hostile_messages_never_panic_or_leak(
        msgs in proptest::collection::vec((any::<bool>(), message()), 1..12),
    ) {
        // The fuzz target's input format: direction byte, length byte, bytes.
        let mut data = Vec::new();
        for (to_client, m) in &msgs {
            let m = &m[..m.len().min(255)];
            data.push(u8::from(*to_client));
            data.push(m.len() as u8);
            data.extend_from_slice(m);
        }
        fuzz_pair(&data);
    }

    #[test]
    fn arbitrary_bytes_never_panic_or_leak(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        fuzz_pair(&data);
    }
}
