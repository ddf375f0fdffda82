//! Conformance fixes of issue 9 (items 1–7), each pinned byte for byte
//! through the two-engine [`Pair`] harness: what a demanding peer sends,
//! and what our engine must answer. The readings are recorded in
//! `docs/spec-notes.md` (E1, E13–E20, D3, W6, W9).

mod common;

use bytes::{Bytes, BytesMut};
use rpcrdma_engine::testing::{Pair, PairOptions};
use rpcrdma_engine::{CallError, Event, MessageForm, ReplyHints};
use rpcrdma_wire::ErrCode;
use rpcrdma_xdr::{Decoder, Payload, PayloadEncoder};

use common::{call, pattern, reply, words};

fn hex(s: &str) -> Vec<u8> {
    let clean: String = s.split_whitespace().collect();
    (0..clean.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&clean[i..i + 2], 16).expect("test hex"))
        .collect()
}

fn outcome(pair: &mut Pair, want: u32) -> Option<Event> {
    pair.client.take_event(
        |e| matches!(e, Event::Reply { xid, .. } | Event::CallFailed { xid, .. } if *xid == want),
    )
}

fn calls_delivered(pair: &Pair) -> usize {
    pair.server
        .events
        .iter()
        .filter(|e| matches!(e, Event::Call { .. }))
        .count()
}

// ----- item 1 ------------------------------------------------------------

/// A Version Two `RDMA2_NOMSG` CALL with only a Reply chunk carries no
/// call: the server answers `RDMA2_ERROR` `ERR_BAD_HEADER` and hands
/// nothing up.
#[test]
fn item1_v2_nomsg_call_without_position_zero_chunk_draws_bad_header() {
    let mut pair = Pair::new();
    pair.inject(
        false,
        &hex("00000011 00000002 00000001 00000001 00000000 00000000 00000000 00000001 00000001 00000001 00000400 00000000 00000000"),
    );
    pair.drive();
    assert_eq!(calls_delivered(&pair), 0);
    let (sent, _) = pair.server.sent.last().expect("an answer");
    assert_eq!(
        &sent[..],
        &hex("00000011 00000002 00000040 00000004 00000002")[..]
    );
    assert!(pair.server.engine.error().is_none());
}

// ----- item 6 ------------------------------------------------------------

/// Registers `data` at the client for remote read (the client's side of a
/// hand-made call) and returns its key and address.
fn client_source(pair: &Pair, data: Bytes) -> (u32, u64) {
    use rpcrdma_verbs::{Access, MemoryRegion, ProtectionDomain};
    let mr = pair
        .fabric
        .pd(1)
        .register_bytes(data, Access::REMOTE_READ)
        .expect("register");
    let r = (mr.rkey(), mr.addr());
    std::mem::forget(mr); // stays registered for the test's lifetime
    r
}

/// A Read segment: position, handle, length, offset.
fn read_seg(position: u32, handle: u32, length: u32, offset: u64) -> Vec<u32> {
    vec![
        1,
        position,
        handle,
        length,
        (offset >> 32) as u32,
        offset as u32,
    ]
}

/// The call of the server's first delivered `Event::Call`, answered with
/// a short reply.
fn take_call(pair: &mut Pair) -> Payload {
    let Some(Event::Call {
        token,
        xid,
        message,
        ..
    }) = pair.server.take_event(|e| matches!(e, Event::Call { .. }))
    else {
        panic!("no call delivered: {:?}", pair.server.events)
    };
    pair.server
        .engine
        .send_reply(token, reply(xid, &[], None))
        .unwrap();
    pair.drive();
    message
}

/// A Read chunk that carries its XDR padding (a 5-byte opaque sent as an
/// 8-byte chunk, RFC 8166 §4.4.5.1 lets a requester round it up) is
/// accepted: the upper layer gets the 5 bytes, not GARBAGE_ARGS.
#[test]
fn item6_read_chunk_with_its_xdr_padding_is_accepted() {
    let mut pair = Pair::with(PairOptions::v1());
    let (key, addr) = client_source(&pair, Bytes::from_static(b"hello\0\0\0"));
    // RDMA_MSG; Read list: one 8-byte segment at position 44 (after the
    // 40-byte call header and the opaque's length word 5).
    let mut m = vec![9u32, 1, 8, 0];
    m.extend(read_seg(44, key, 8, addr));
    m.extend([0, 0, 0]);
    m.extend([9, 0, 2, 0x2000_0099, 1, 3, 0, 0, 0, 0, 5]);
    pair.inject(false, &words(&m));
    pair.drive();
    let message = take_call(&mut pair);
    let mut d = Decoder::with_ddp(&message);
    d.skip(40).unwrap();
    assert_eq!(&d.get_opaque_ddp(100).unwrap()[..], b"hello");
    d.expect_end().unwrap();
    assert_eq!(message.items()[0].data.len(), 5);
    assert_eq!(message.flatten().len(), 40 + 4 + 8);
    assert_eq!(pair.server.engine.stats().bad_messages, 0);
}

/// A Read list whose Positions are not sorted (and whose chunk at one
/// Position is split into non-adjacent segments) is accepted and rebuilt
/// as Linux's server does: grouped by Position, sorted, each Position's
/// segments in list order.
#[test]
fn item6_read_list_out_of_position_order_is_accepted() {
    let mut pair = Pair::with(PairOptions::v1());
    let (ka, aa) = client_source(&pair, Bytes::from_static(b"abcd"));
    let (kb, ab) = client_source(&pair, Bytes::from_static(b"efgh"));
    let (kc, ac) = client_source(&pair, Bytes::from_static(b"XYZ"));
    // Two DDP opaques: 8 bytes at position 44 (two 4-byte segments) and 3
    // bytes at position 56; the Read list says 44, 56, 44.
    let mut m = vec![10u32, 1, 8, 0];
    m.extend(read_seg(44, ka, 4, aa));
    m.extend(read_seg(56, kc, 3, ac));
    m.extend(read_seg(44, kb, 4, ab));
    m.extend([0, 0, 0]);
    m.extend([10, 0, 2, 0x2000_0099, 1, 3, 0, 0, 0, 0, 8, 3, 0x7777_7777]);
    pair.inject(false, &words(&m));
    pair.drive();
    let message = take_call(&mut pair);
    let mut d = Decoder::with_ddp(&message);
    d.skip(40).unwrap();
    assert_eq!(&d.get_opaque_ddp(100).unwrap()[..], b"abcdefgh");
    assert_eq!(&d.get_opaque_ddp(100).unwrap()[..], b"XYZ");
    assert_eq!(d.get_u32().unwrap(), 0x7777_7777);
    d.expect_end().unwrap();
    assert_eq!(pair.server.engine.stats().bad_messages, 0);
}

/// An `RDMA_ERROR` followed by pad bytes still ends its RPC at once
/// (rather than leaving it to time out).
#[test]
fn item6_rdma_error_with_pad_bytes_still_ends_its_call() {
    for (tail, want) in [
        (
            vec![2u32, 0],
            CallError::RdmaError {
                code: ErrCode::BADHEADER,
            },
        ),
        (
            vec![2, 0, 0, 0],
            CallError::RdmaError {
                code: ErrCode::BADHEADER,
            },
        ),
        (vec![1, 1, 1, 0], CallError::Version { low: 1, high: 1 }),
    ] {
        let mut pair = Pair::with(PairOptions::v1());
        pair.send_call(5, call(5, 0, &[], None), ReplyHints::default());
        pair.drop_next_send(true);
        pair.drive();
        let mut m = vec![5u32, 1, 1, 4];
        m.extend(&tail);
        pair.inject(true, &words(&m));
        match outcome(&mut pair, 5) {
            Some(Event::CallFailed { error, .. }) => assert_eq!(error, want, "{tail:?}"),
            other => panic!("{tail:?}: {other:?}"),
        }
        assert_eq!(pair.client.engine.info().calls_in_flight, 0);
        pair.assert_no_leaks();
    }
}

// ----- item 4 ------------------------------------------------------------

/// Version Two without RFC 8797 private data: both ends use 4096 bytes
/// for both directions (draft-cel-01 §2.3, §5.1), whatever their own
/// 1024-byte `inline_send` says, so a 3000-byte reply comes back inline
/// without a Reply chunk and a 3000-byte call goes inline. With and
/// without the transport properties feature, and with the call queued
/// before the version (and the properties) settled.
//= draft-cel-01#section-2.3
//# RPC-over-RDMA Version Two receiver implementations MUST support an inline
//# threshold of 4096 bytes, but MAY support larger inline threshold values.
//= draft-cel-01#section-2.3
//# In the absense of such a mechanism, senders MUST assume a receiver's
//# inline threshold is 4096 bytes.
#[test]
fn item4_version_two_without_private_data_uses_4096_both_ways() {
    for (props, early) in [(true, false), (true, true), (false, false), (false, true)] {
        let mut o = PairOptions {
            private_data: false,
            ..PairOptions::default()
        };
        o.client.transport_properties = props;
        o.server.transport_properties = props;
        let mut pair = Pair::with(o);
        let hints = ReplyHints::at_most(3000);
        pair.send_call(1, call(1, 0, &[], None), ReplyHints::default());
        let big = call(2, 1, &pattern(3000, 1), None);
        if early {
            pair.send_call(2, big.clone(), hints.clone());
        }
        pair.serve(|xid, _| {
            if xid == 2 {
                reply(xid, &pattern(2970, 2), None)
            } else {
                reply(xid, &[], None)
            }
        });
        assert!(matches!(outcome(&mut pair, 1), Some(Event::Reply { .. })));
        for end in [&pair.client, &pair.server] {
            let t = end.engine.thresholds();
            assert_eq!(
                (t.send, t.recv),
                (4096, 4096),
                "{:?} props {props}",
                end.engine.info().role
            );
        }
        if !early {
            pair.send_call(2, big, hints);
            pair.drive();
            // No Reply chunk (3000 fits 4096), and the call went inline.
            let (sent, _) = pair.client.sent.last().unwrap();
            let h =
                rpcrdma_wire::decode(&Bytes::copy_from_slice(sent), &Default::default()).unwrap();
            assert!(h.header.chunks().unwrap().is_empty(), "{:?}", h.header);
            pair.serve(|xid, _| reply(xid, &pattern(2970, 2), None));
        }
        match outcome(&mut pair, 2) {
            Some(Event::Reply {
                message,
                call_form,
                reply_form,
                ..
            }) => {
                assert_eq!(
                    (call_form, reply_form),
                    (MessageForm::Short, MessageForm::Short),
                    "props {props} early {early}"
                );
                assert_eq!(message.inline().len(), 24 + 2972);
            }
            other => panic!("props {props} early {early}: {other:?}"),
        }
        assert!(pair.server.sent.iter().all(|(b, _)| b.len() <= 4096));
        pair.assert_no_leaks();
    }
}

// ----- item 5 ------------------------------------------------------------

/// The chunk lists of the client's last call.
fn last_call_chunks(pair: &Pair) -> rpcrdma_wire::ChunkLists {
    let (sent, _) = pair
        .client
        .sent
        .iter()
        .rev()
        .find(|(b, _)| b.get(12..16) != Some(&[0, 0, 0, 5][..]))
        .unwrap();
    rpcrdma_wire::decode(&Bytes::copy_from_slice(sent), &Default::default())
        .unwrap()
        .header
        .chunks()
        .cloned()
        .unwrap()
}

/// The largest reply may come from a branch of the result union without
/// the DDP item: with `ddp_results [8192]` and `max_reply 9000` on Version
/// One, a 2000-byte reply without the item must still come back (through
/// the Reply chunk the requester must provide, RFC 8166 §5.3.3).
#[test]
fn item5_largest_reply_from_a_branch_without_the_ddp_item() {
    let mut pair = Pair::with(PairOptions::v1());
    let hints = ReplyHints::with_ddp(&[8192], 9000);
    pair.send_call(1, call(1, 2, &[], None), hints.clone());
    pair.drive();
    let c = last_call_chunks(&pair);
    assert_eq!(c.writes.len(), 1);
    assert!(
        c.reply.as_ref().is_some_and(|r| r.data_len() >= 9000),
        "{c:?}"
    );
    pair.serve(|xid, _| reply(xid, &pattern(2000, 5), None));
    match outcome(&mut pair, 1) {
        Some(Event::Reply { message, .. }) => {
            assert_eq!(&message.inline()[24..], &pattern(2000, 5)[..]);
        }
        other => panic!("{other:?}"),
    }
    // The other branch (the item, reduced into the Write chunk) still works.
    pair.send_call(2, call(2, 2, &[], None), hints);
    pair.serve(|xid, _| reply(xid, &[0, 0, 0, 1], Some(pattern(8192, 6))));
    match outcome(&mut pair, 2) {
        Some(Event::Reply {
            message,
            reply_form,
            ..
        }) => {
            assert_eq!(reply_form, MessageForm::Chunked);
            let mut d = Decoder::with_ddp(&message);
            d.skip(28).unwrap();
            assert_eq!(d.get_opaque_ddp(8192).unwrap(), pattern(8192, 6));
        }
        other => panic!("{other:?}"),
    }
    pair.assert_no_leaks();
}

/// An Upper Layer that states no maximum reply size: the requester
/// provides for the connection's maximum message size, so a 5000-byte
/// reply comes back (through the Reply chunk) instead of `ERR_BADHEADER`.
#[test]
fn item5_no_maximum_means_the_largest_message() {
    let mut pair = Pair::with(PairOptions::v1());
    pair.send_call(1, call(1, 1, &[], None), ReplyHints::default());
    pair.drive();
    let max = pair.client.engine.config().max_message;
    let c = last_call_chunks(&pair);
    assert_eq!(
        c.reply.as_ref().map(|r| r.data_len()),
        Some(u64::from(max)),
        "{c:?}"
    );
    pair.serve(|xid, _| reply(xid, &pattern(5000, 9), None));
    match outcome(&mut pair, 1) {
        Some(Event::Reply {
            message,
            reply_form,
            ..
        }) => {
            assert_eq!(reply_form, MessageForm::Long);
            assert_eq!(&message.inline()[24..], &pattern(5000, 9)[..]);
        }
        other => panic!("{other:?}"),
    }
    pair.assert_no_leaks();
}

// ----- item 2 ------------------------------------------------------------

/// Sends `n` good calls from the client and answers every call the server
/// delivers; returns how many came back as SUCCESS replies.
fn good_calls_succeed(pair: &mut Pair, first: u32, n: u32) -> u32 {
    for x in first..first + n {
        pair.send_call(x, call(x, 0, &[], None), ReplyHints::default());
    }
    pair.serve(|xid, _| reply(xid, &[], None));
    let mut ok = 0;
    for x in first..first + n {
        match outcome(pair, x) {
            // accept_stat is the sixth word: 0 SUCCESS, 5 SYSTEM_ERR.
            Some(Event::Reply { message, .. }) if message.inline()[20..24] == [0; 4] => ok += 1,
            other => panic!("call {x}: {other:?}"),
        }
    }
    ok
}

/// The RPC `accept_stat` of the server's last Send (an RDMA_MSG reply
/// with empty chunk lists).
fn last_accept_stat(pair: &Pair) -> (u32, u32) {
    let (sent, _) = pair.server.sent.last().unwrap();
    let w = |i: usize| u32::from_be_bytes(sent[i * 4..i * 4 + 4].try_into().unwrap());
    (w(7), w(12)) // RPC xid, accept_stat
}

/// Calls whose RPC header the upper layer could not use (empty,
/// truncated, not a CALL) never hold a credit of the grant: the engine
/// answers them itself (GARBAGE_ARGS where the XID and CALL are known,
/// `RDMA_ERROR` where there is no RPC call at all) and later good calls
/// are served, not answered SYSTEM_ERR.
#[test]
fn item2_unusable_calls_do_not_eat_the_grant() {
    let mut pair = Pair::with(PairOptions::v1().grant(4));
    let hdr = |xid: u32| vec![xid, 1, 8, 0, 0, 0, 0];
    let bad: Vec<Vec<u32>> = vec![
        // RDMA_MSG carrying only the XID and CALL.
        [hdr(100), vec![100, 0]].concat(),
        // Truncated before the procedure number.
        [hdr(101), vec![101, 0, 2, 0x2000_0099, 1]].concat(),
        // Credential body shorter than its length says.
        [hdr(102), vec![102, 0, 2, 0x2000_0099, 1, 0, 1, 8, 7]].concat(),
        // Verifier missing.
        [hdr(103), vec![103, 0, 2, 0x2000_0099, 1, 0, 0, 0]].concat(),
        // More than the grant of them.
        [hdr(104), vec![104, 0, 2]].concat(),
    ];
    for m in &bad {
        pair.inject(false, &words(m));
        pair.drive();
        let xid = m[0];
        // GARBAGE_ARGS (4).
        assert_eq!(last_accept_stat(&pair), (xid, 4), "xid {xid}");
    }
    assert_eq!(calls_delivered(&pair), 0);
    assert_eq!(pair.server.engine.stats().credit_overruns, 0);
    // The grant is intact: eight good calls (never more than four
    // outstanding) all succeed.
    assert_eq!(good_calls_succeed(&mut pair, 1, 8), 8);
    assert_eq!(pair.server.engine.stats().credit_overruns, 0);
}

/// A call whose RPC header is complete but still unusable for the upper
/// layer (its own reasons): [`Engine::retire_call`] gives the credit back
/// and sends nothing.
#[test]
fn item2_the_upper_layer_retires_a_call_it_drops() {
    let mut pair = Pair::with(PairOptions::v1().grant(1));
    for x in 0..3u32 {
        let xid = 200 + x;
        let mut m = vec![xid, 1, 8, 0, 0, 0, 0];
        m.extend([xid, 0, 2, 0x2000_0099, 1, 0, 0, 0, 0, 0]);
        pair.inject(false, &words(&m));
        pair.drive();
        let Some(Event::Call { token, .. }) =
            pair.server.take_event(|e| matches!(e, Event::Call { .. }))
        else {
            panic!("call {xid} not delivered (overrun?)")
        };
        let sent = pair.server.sent.len();
        pair.server.engine.retire_call(token).unwrap();
        pair.drive();
        assert_eq!(pair.server.sent.len(), sent, "retiring sends nothing");
        assert!(pair.server.engine.retire_call(token).is_err());
    }
    assert_eq!(pair.server.engine.stats().credit_overruns, 0);
    assert_eq!(good_calls_succeed(&mut pair, 1, 3), 3);
}

/// Long calls (`RDMA_NOMSG`, the message in a Position-Zero Read chunk)
/// whose chunk holds no RPC call (empty, a REPLY) draw `ERR_BADHEADER`, a
/// truncated call header `GARBAGE_ARGS`; none holds a credit.
#[test]
fn item2_long_calls_without_a_usable_rpc_call() {
    let mut pair = Pair::with(PairOptions::v1().grant(2));
    let cases: [(u32, Vec<u32>, bool); 4] = [
        (300, vec![], false),
        (301, vec![301, 1, 0, 0, 0, 0], false),
        (302, vec![302, 0, 2, 0x2000_0099], true),
        (303, vec![303, 0, 2, 0x2000_0099, 1, 0, 0, 0, 0], true),
    ];
    for (xid, body, garbage) in cases {
        let data = Bytes::from(words(&body));
        let len = data.len() as u32;
        // A zero-length region cannot be registered; its key is unused.
        let (key, addr) = if len == 0 {
            (0x1234, 0)
        } else {
            client_source(&pair, data)
        };
        let mut m = vec![xid, 1, 8, 1];
        m.extend(read_seg(0, key, len, addr));
        // A Reply chunk for the answer.
        let sink = {
            use rpcrdma_verbs::{Access, MemoryRegion, ProtectionDomain};
            let mr = pair
                .fabric
                .pd(1)
                .register_mut(BytesMut::zeroed(256), Access::REMOTE_WRITE)
                .unwrap();
            let r = (mr.rkey(), mr.addr());
            std::mem::forget(mr);
            r
        };
        m.extend([
            0,
            0,
            1,
            1,
            sink.0,
            256,
            (sink.1 >> 32) as u32,
            sink.1 as u32,
        ]);
        let sent = pair.server.sent.len();
        pair.inject(false, &words(&m));
        pair.drive();
        assert_eq!(pair.server.sent.len(), sent + 1, "xid {xid}: one answer");
        let (last, _) = pair.server.sent.last().unwrap();
        let proc_ = u32::from_be_bytes(last[12..16].try_into().unwrap());
        if garbage {
            // A reply (inline, 6 words of RPC after the header).
            assert_eq!(proc_, 0, "xid {xid}");
            assert_eq!(&last[last.len() - 4..], &[0, 0, 0, 4], "xid {xid}");
        } else {
            assert_eq!((proc_, &last[16..20]), (4, &[0, 0, 0, 2][..]), "xid {xid}");
        }
    }
    assert_eq!(calls_delivered(&pair), 0);
    assert_eq!(good_calls_succeed(&mut pair, 1, 4), 4);
}

// ----- item 7 ------------------------------------------------------------

/// A requester that cannot invalidate a region after the reply arrived
/// closes the connection (RFC 8166 §5.5.4) before the RPC completes: the
/// reply is not reported, the connection fails with the reason.
//= rfc5666bis-04#section-5.5.4
//# After a requester has received a reply, if it is unable to invalidate a
//# memory region due to an unrecoverable problem, the requester MUST close
//# the connection to fence that memory from the responder before the
//# associated RPC transaction is complete.
#[test]
fn item7_a_failed_invalidation_closes_the_connection() {
    use rpcrdma_engine::EngineError;
    let mut pair = Pair::with(PairOptions::v1());
    let hints = ReplyHints::with_ddp(&[4096], 4096 + 64);
    pair.send_call(1, call(1, 2, &[], None), hints.clone());
    pair.drive();
    let Some(Event::Call { token, .. }) =
        pair.server.take_event(|e| matches!(e, Event::Call { .. }))
    else {
        panic!("no call")
    };
    pair.fabric.fail_next_deregistrations(1);
    pair.server
        .engine
        .send_reply(token, reply(1, &[], Some(pattern(4096, 3))))
        .unwrap();
    pair.drive();
    assert!(
        matches!(
            pair.client.engine.error(),
            Some(EngineError::InvalidationFailed { .. })
        ),
        "{:?}",
        pair.client.engine.error()
    );
    assert!(pair
        .client
        .events
        .iter()
        .all(|e| !matches!(e, Event::Reply { .. } | Event::CallFailed { .. })));
    assert!(pair
        .client
        .events
        .iter()
        .any(|e| matches!(e, Event::Fatal(EngineError::InvalidationFailed { .. }))));

    // The same for a call the upper layer releases early.
    let mut pair = Pair::with(PairOptions::v1());
    pair.send_call(2, call(2, 2, &[], None), hints);
    pair.drive();
    pair.fabric.fail_next_deregistrations(1);
    pair.client.engine.release(2);
    assert!(matches!(
        pair.client.engine.error(),
        Some(EngineError::InvalidationFailed { .. })
    ));
}

// ----- item 3 ------------------------------------------------------------

/// A reply with `n` one-byte DDP-eligible results.
fn reply_with_items(xid: u32, n: usize) -> Payload {
    let mut pe = PayloadEncoder::new();
    let mut e = pe.encoder();
    for w in [xid, 1, 0, 0, 0, 0] {
        e.put_u32(w);
    }
    for i in 0..n {
        e.put_opaque_ddp(Bytes::from(vec![i as u8]));
    }
    pe.finish()
}

/// Grant 8, a send queue of 4, and calls that each offer 16 one-byte
/// Write chunks (legal under the default limits) all filled by the reply:
/// a requester that never has more than 8 calls outstanding always finds
/// a receive posted, whatever the responder's send backlog (RFC 8166
/// §3.3.1, RFC 8167 §4.3.2).
#[test]
fn item3_receives_never_fall_below_the_grant() {
    let mut o = PairOptions::v1().grant(8);
    o.caps.send_depth = 4;
    let mut pair = Pair::with(o);
    let hints = ReplyHints::with_ddp(&[1; 16], 2000);
    let total = 40u32;
    for x in 1..=total {
        pair.send_call(x, call(x, 2, &[], None), hints.clone());
    }
    let mut min_posted = usize::MAX;
    for _ in 0..10_000 {
        let moved = pair.step();
        min_posted = min_posted.min(pair.server.posted_receives());
        let mut answered = false;
        while let Some(Event::Call { token, xid, .. }) =
            pair.server.take_event(|e| matches!(e, Event::Call { .. }))
        {
            pair.server
                .engine
                .send_reply(token, reply_with_items(xid, 16))
                .unwrap();
            answered = true;
        }
        if !moved && !answered {
            break;
        }
    }
    assert!(
        pair.server.engine.error().is_none(),
        "{:?}",
        pair.server.engine.error()
    );
    assert!(
        pair.client.engine.error().is_none(),
        "{:?}",
        pair.client.engine.error()
    );
    assert!(
        min_posted >= 8,
        "the server's receives fell to {min_posted}"
    );
    for x in 1..=total {
        match outcome(&mut pair, x) {
            Some(Event::Reply { message, .. }) => {
                let mut d = Decoder::with_ddp(&message);
                d.skip(24).unwrap();
                for i in 0..16u8 {
                    assert_eq!(&d.get_opaque_ddp(1).unwrap()[..], &[i]);
                }
            }
            other => panic!("call {x}: {other:?}"),
        }
    }
    assert_eq!(pair.server.engine.stats().credit_overruns, 0);
    pair.assert_no_leaks();
}
