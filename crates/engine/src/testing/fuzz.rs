//! The whole-engine fuzz property, driven through a [`Pair`].

use bytes::{Bytes, BytesMut};

use super::pair::Pair;
use crate::Event;

/// The whole-engine fuzz property (the `engine` target in `fuzz/`, and a
/// bounded seeded run in `tests/hostile.rs`): `data` is split into
/// messages (a direction byte, a length byte, that many bytes) injected
/// into a connected pair that has a chunked call in flight; calls that
/// reach the server are answered. Panics only if an invariant breaks:
/// registrations leaked after the pair is closed, or the legitimate call
/// completed more than once.
pub fn fuzz_pair(data: &[u8]) {
    use crate::ReplyHints;
    use rpcrdma_xdr::{Payload, PayloadEncoder};

    let mut pair = Pair::new();
    let mut pe = PayloadEncoder::new();
    let mut e = pe.encoder();
    for w in [1u32, 0, 2, 0x2000_0099, 1, 3, 0, 0, 0, 0] {
        e.put_u32(w);
    }
    e.put_opaque_ddp(Bytes::from(vec![0x5a; 5000]));
    let hints = ReplyHints::with_ddp(&[8192], 9000);
    pair.client
        .engine
        .send_call(pair.now, 1, pe.finish(), hints)
        .expect("first call");
    let mut rest = data;
    while let [dir, len, tail @ ..] = rest {
        let n = (*len as usize).min(tail.len());
        let (msg, next) = tail.split_at(n);
        rest = next;
        let to_client = dir & 1 == 1;
        let end = if to_client {
            &pair.client
        } else {
            &pair.server
        };
        if end.engine.error().is_some() {
            continue;
        }
        if end.posted_receives() == 0 {
            pair.collect();
            let end = if to_client {
                &pair.client
            } else {
                &pair.server
            };
            if end.posted_receives() == 0 {
                continue;
            }
        }
        pair.inject(to_client, msg);
        let _ = pair.drive_until_idle(10_000);
        while let Some(Event::Call { token, xid, .. }) =
            pair.server.take_event(|e| matches!(e, Event::Call { .. }))
        {
            let mut r = BytesMut::new();
            for w in [xid, 1, 0, 0, 0, 0] {
                r.extend_from_slice(&w.to_be_bytes());
            }
            let _ = pair
                .server
                .engine
                .send_reply(token, Payload::inline_only(r.freeze()));
        }
        let _ = pair.drive_until_idle(10_000);
    }
    pair.disconnect();
    pair.assert_no_leaks();
    for end in [&pair.client, &pair.server] {
        // Every octet charged to the connection came back; the budget
        // holds only idle buffers kept for reuse.
        assert_eq!(end.engine.memory_in_use(), 0, "memory not returned");
        let b = end.engine.memory_budget();
        assert_eq!(b.in_use(), b.pooled(), "budget not returned");
    }
    let outcomes = pair
        .client
        .events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::Reply { xid: 1, .. } | Event::CallFailed { xid: 1, .. }
            )
        })
        .count();
    assert!(outcomes <= 1, "the call completed {outcomes} times");
}
