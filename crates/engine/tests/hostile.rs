//! Hostile input into whole engines: arbitrary and half-valid messages
//! injected into both ends among legitimate traffic. Nothing may panic,
//! nothing may be leaked, and a connection that survives still works.
//!
//! The same property runs in `fuzz/` (target `engine`) for long
//! coverage-guided runs; this is its bounded, seeded form.

use bytes::Bytes;
use proptest::prelude::*;
use rpcrdma_engine::testing::Pair;
use rpcrdma_engine::{Event, ReplyHints};
use rpcrdma_xdr::{Payload, PayloadEncoder};

fn call(xid: u32, ddp: Option<usize>) -> Payload {
    let mut pe = PayloadEncoder::new();
    let mut e = pe.encoder();
    for w in [xid, 0, 2, 0x2000_0099, 1, 3, 0, 0, 0, 0] {
        e.put_u32(w);
    }
    if let Some(n) = ddp {
        e.put_opaque_ddp(Bytes::from(vec![0x5a; n]));
    }
    pe.finish()
}

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
        let mut pair = Pair::new();
        // Legitimate traffic in flight: a chunked call and a reply chunk.
        pair.client.engine.send_call(pair.now, 1, call(1, Some(5000)), ReplyHints {
            ddp_results: vec![8192],
            max_reply: Some(9000),
            reduce: true,
        }).unwrap();
        for (to_client, m) in &msgs {
            let end = if *to_client { &pair.client } else { &pair.server };
            if end.engine.error().is_some() {
                continue;
            }
            pair.inject(*to_client, m);
            pair.drive_bounded(10_000);
            // Answer whatever calls reached the server's upper layer.
            while let Some(Event::Call { token, xid, .. }) =
                pair.server.take_event(|e| matches!(e, Event::Call { .. }))
            {
                let r: Vec<u8> = [xid, 1, 0, 0, 0, 0].iter().flat_map(|w| w.to_be_bytes()).collect();
                let _ = pair.server.engine.send_reply(token, Payload::inline_only(r.into()));
            }
            pair.drive_bounded(10_000);
        }
        // Whatever happened, a closed pair holds no registrations.
        pair.disconnect();
        prop_assert_eq!(pair.client.engine.stats().live_registrations(), 0);
        prop_assert_eq!(pair.server.engine.stats().live_registrations(), 0);
        prop_assert_eq!(pair.fabric.live_regions(1), 0);
        prop_assert_eq!(pair.fabric.live_regions(2), 0);
        // And the legitimate call ended at most once.
        let outcomes = pair.client.events.iter().filter(|e| matches!(e,
            Event::Reply { xid: 1, .. } | Event::CallFailed { xid: 1, .. })).count();
        prop_assert!(outcomes <= 1);
    }
}
