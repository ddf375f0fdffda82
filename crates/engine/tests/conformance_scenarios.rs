//! Issue 9, items 1–7, tried the way a demanding peer would: hand-built
//! RPC-over-RDMA messages of both versions injected into the two-engine
//! [`Pair`] harness, with the variations around each rule (the other
//! direction, the other version, the boundaries), checked byte for byte
//! where the answer is fixed. `conformance.rs` holds the first test of each
//! item; the readings are in `docs/spec-notes.md` (D3, W6, W9, E1,
//! E13–E20).

mod common;

use bytes::{Bytes, BytesMut};
use rpcrdma_engine::testing::{Pair, PairOptions};
use rpcrdma_engine::{CallError, EngineError, Event, MessageForm, ReplyHints};
use rpcrdma_verbs::{Access, MemoryRegion, ProtectionDomain};
use rpcrdma_wire::ErrCode;
use rpcrdma_xdr::{Decoder, Payload, PayloadEncoder};

use common::{call, pattern, reply, words};

/// Program, version of the calls built by hand.
const PROG: u32 = 0x2000_0099;

fn word(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes(b[i * 4..i * 4 + 4].try_into().unwrap())
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

/// Registers `data` at the client for remote read; returns key and address.
fn client_source(pair: &Pair, data: Bytes) -> (u32, u64) {
    let mr = pair
        .fabric
        .pd(1)
        .register_bytes(data, Access::REMOTE_READ)
        .expect("register");
    let r = (mr.rkey(), mr.addr());
    std::mem::forget(mr); // stays registered for the test's lifetime
    r
}

/// Registers a `len`-byte sink at the client for remote write.
fn client_sink(pair: &Pair, len: usize) -> (u32, u64) {
    let mr = pair
        .fabric
        .pd(1)
        .register_mut(BytesMut::zeroed(len), Access::REMOTE_WRITE)
        .expect("register");
    let r = (mr.rkey(), mr.addr());
    std::mem::forget(mr);
    r
}

/// A present Read segment: position, handle, length, offset.
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

/// A present one-segment Write or Reply chunk.
fn one_segment_chunk(handle: u32, length: u32, offset: u64) -> Vec<u32> {
    vec![1, 1, handle, length, (offset >> 32) as u32, offset as u32]
}

/// The RPC call header (AUTH_NONE) of procedure `proc_`.
fn call_header(xid: u32, proc_: u32) -> Vec<u32> {
    vec![xid, 0, 2, PROG, 1, proc_, 0, 0, 0, 0]
}

/// Answers every call the server delivered with a short SUCCESS reply;
/// returns the calls' messages.
fn answer_all(pair: &mut Pair) -> Vec<Payload> {
    let mut out = Vec::new();
    while let Some(Event::Call {
        token,
        xid,
        message,
        ..
    }) = pair.server.take_event(|e| matches!(e, Event::Call { .. }))
    {
        pair.server
            .engine
            .send_reply(token, reply(xid, &[], None))
            .unwrap();
        out.push(message);
    }
    pair.drive();
    out
}

/// Sends `n` good calls and answers them; returns how many came back
/// SUCCESS (never more than the grant outstanding: the client's credits).
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

/// The server holds no registration and no memory (the client's regions
/// of hand-built calls stay registered: the test plays the client).
fn assert_server_holds_nothing(pair: &Pair) {
    assert_eq!(pair.server.engine.stats().live_registrations(), 0);
    assert_eq!(pair.fabric.live_regions(2), 0);
    assert_eq!(pair.server.engine.memory_in_use(), 0);
}

/// What one end sent in answer to an injected message: the Sends it
/// made since `before`.
fn sent_since(end: &rpcrdma_engine::testing::End, before: usize) -> Vec<Bytes> {
    end.sent[before..].iter().map(|(b, _)| b.clone()).collect()
}

/// `(xid, vers, proc, rdma_err)` of an error Send.
fn error_words(b: &[u8]) -> (u32, u32, u32, u32) {
    (word(b, 0), word(b, 1), word(b, 3), word(b, 4))
}

// ----- item 1 -------------------------------------------------------------

/// The exact message: `RDMA2_NOMSG`, direction CALL, only a
/// Reply chunk. Sent more times than the grant, each is answered
/// `RDMA2_ERROR` `RDMA2_ERR_BAD_HEADER` (its XID, version 2, our grant as
/// credit), none reaches the upper layer or holds a credit, and good
/// calls are served afterwards.
#[test]
fn item1_nomsg_call_with_only_a_reply_chunk_every_time() {
    let mut pair = Pair::with(PairOptions::default().grant(4));
    for n in 0..10u32 {
        let xid = 0x11 + n;
        let mut m = vec![xid, 2, 1, 1, 0, 0, 0];
        m.extend(one_segment_chunk(1, 0x400, 0));
        let before = pair.server.sent.len();
        pair.inject(false, &words(&m));
        pair.drive();
        let sent = sent_since(&pair.server, before);
        assert_eq!(sent.len(), 1, "xid {xid}");
        assert_eq!(&sent[0][..], &words(&[xid, 2, 4, 4, 2])[..], "xid {xid}");
    }
    assert_eq!(calls_delivered(&pair), 0);
    assert!(pair.server.engine.error().is_none());
    assert_eq!(good_calls_succeed(&mut pair, 1, 8), 8);
    assert_eq!(pair.server.engine.stats().credit_overruns, 0);
    pair.assert_no_leaks();
}

/// Other `RDMA2_NOMSG` CALLs that hold no call: a Read chunk, but not at
/// Position zero (with and without a Reply chunk); nothing at all.
#[test]
fn item1_nomsg_call_without_a_position_zero_chunk_in_other_shapes() {
    let mut pair = Pair::with(PairOptions::default().grant(2));
    let shapes: Vec<Vec<u32>> = vec![
        // Read chunk at position 4 and a Reply chunk.
        [
            read_seg(4, 7, 64, 0),
            vec![0, 0],
            one_segment_chunk(1, 0x400, 0),
        ]
        .concat(),
        // Read chunk at position 4 only.
        [read_seg(4, 7, 64, 0), vec![0, 0, 0]].concat(),
        // Nothing.
        vec![0, 0, 0],
        // A Write chunk only.
        [vec![0, 1], vec![1, 9, 64, 0, 0, 0], vec![0, 0]].concat(),
    ];
    for (i, lists) in shapes.iter().enumerate() {
        let xid = 0x100 + i as u32;
        let mut m = vec![xid, 2, 1, 1, 0];
        m.extend(lists);
        let before = pair.server.sent.len();
        pair.inject(false, &words(&m));
        pair.drive();
        let sent = sent_since(&pair.server, before);
        assert_eq!(sent.len(), 1, "shape {i}");
        assert_eq!(error_words(&sent[0]), (xid, 2, 4, 2), "shape {i}");
    }
    assert_eq!(calls_delivered(&pair), 0);
    assert_eq!(good_calls_succeed(&mut pair, 1, 4), 4);
}

/// The symmetric rule at the requester: an `RDMA2_NOMSG` REPLY must carry
/// its message in the Reply chunk. One with only a Position-Zero Read
/// chunk, or with nothing, is rejected; being a REPLY it is never answered
/// (spec note W14, issue 35's D2: an `RDMA2_ERROR` would name an XID of the
/// server's reverse-direction calls) and it ends the call it names at once
/// (E24) instead of leaving it to time out; good calls go on.
#[test]
fn item1_nomsg_reply_without_a_reply_chunk_at_the_requester() {
    let mut pair = Pair::new();
    // Settle Version Two first.
    assert_eq!(good_calls_succeed(&mut pair, 1, 1), 1);
    assert_eq!(pair.client.engine.info().version, Some(2));
    for (xid, lists) in [
        (7u32, [read_seg(0, 5, 64, 0), vec![0, 0, 0]].concat()),
        (8, vec![0, 0, 0]),
    ] {
        pair.send_call(xid, call(xid, 0, &[], None), ReplyHints::default());
        pair.drive();
        let Some(Event::Call { token, .. }) =
            pair.server.take_event(|e| matches!(e, Event::Call { .. }))
        else {
            panic!("no call")
        };
        let mut m = vec![xid, 2, 8, 1, 1];
        m.extend(&lists);
        let before = pair.client.sent.len();
        pair.inject(true, &words(&m));
        pair.drive();
        assert_eq!(
            sent_since(&pair.client, before),
            Vec::<Bytes>::new(),
            "{lists:?}"
        );
        assert!(
            matches!(
                outcome(&mut pair, xid),
                Some(Event::CallFailed {
                    error: CallError::BadReply(_),
                    ..
                })
            ),
            "{lists:?}"
        );
        // (The server's upper layer drops the call it has: the bad reply
        // was the one reply the client gets.)
        pair.server.engine.retire_call(token).unwrap();
        pair.drive();
        assert!(outcome(&mut pair, xid).is_none(), "{lists:?}");
    }
    assert!(pair.client.engine.error().is_none());
    assert_eq!(good_calls_succeed(&mut pair, 9, 2), 2);
    pair.assert_no_leaks();
}

/// The valid shapes still work when built by hand: an `RDMA2_NOMSG` CALL
/// whose Position-Zero Read chunk holds the call, answered through its
/// Reply chunk as an `RDMA2_NOMSG` REPLY.
//= rfc5666bis-04#section-4.5.3
//# Though the purpose of a Long Message is to handle large RPC messages,
//# requesters MAY use a Long Message at any time to convey an RPC Call.
#[test]
fn item1_a_hand_built_long_call_in_version_two_is_served() {
    let mut pair = Pair::with(PairOptions::default().inline(1024));
    let body = call_header(0x77, 1);
    let (key, addr) = client_source(&pair, Bytes::from(words(&body)));
    let (rkey, raddr) = client_sink(&pair, 4096);
    let mut m = vec![0x77u32, 2, 1, 1, 0];
    m.extend(read_seg(0, key, 40, addr));
    m.extend([0, 0]);
    m.extend(one_segment_chunk(rkey, 4096, raddr));
    pair.inject(false, &words(&m));
    pair.drive();
    let Some(Event::Call {
        token,
        xid,
        message,
        form,
    }) = pair.server.take_event(|e| matches!(e, Event::Call { .. }))
    else {
        panic!("not delivered: {:?}", pair.server.sent)
    };
    assert_eq!((xid, form), (0x77, MessageForm::Long));
    assert_eq!(message.flatten(), words(&body));
    let before = pair.server.sent.len();
    // Larger than the 1024-byte threshold the client's private data gave:
    // back through the Reply chunk.
    pair.server
        .engine
        .send_reply(token, reply(0x77, &pattern(2000, 1), None))
        .unwrap();
    pair.drive();
    let sent = sent_since(&pair.server, before);
    let h = rpcrdma_wire::decode(&sent[0], &Default::default()).expect("a valid reply");
    assert_eq!(h.header.proc_name(), "RDMA2_NOMSG");
    assert_eq!(
        h.header.direction(),
        Some(rpcrdma_wire::v2::Direction::Reply)
    );
    assert_eq!(
        h.header
            .chunks()
            .unwrap()
            .reply
            .as_ref()
            .unwrap()
            .data_len(),
        2024
    );
}

// ----- item 2 -------------------------------------------------------------

/// One unusable call and what the server must send for it: `None` for
/// nothing, `Some(Ok(stat))` for an RPC reply with that `accept_stat`,
/// `Some(Err(code))` for an `RDMA_ERROR`.
type Expect = Option<Result<u32, u32>>;

/// The answer in `sent` (one Send at most) as an [`Expect`].
fn answer_of(sent: &[Bytes], xid: u32, vers: u32) -> Expect {
    assert!(sent.len() <= 1, "more than one answer: {sent:?}");
    let b = sent.first()?;
    assert_eq!((word(b, 0), word(b, 1)), (xid, vers));
    match word(b, 3) {
        4 => Some(Err(word(b, 4))),
        0 => {
            // RDMA_MSG reply: the RPC reply follows the (empty) lists.
            let rpc = if vers == 1 { 7 } else { 8 };
            assert_eq!(word(b, rpc), xid);
            assert_eq!(word(b, rpc + 1), 1, "a REPLY");
            Some(Ok(word(b, rpc + 5)))
        }
        p => panic!("answered with rdma_proc {p}"),
    }
}

/// Calls the RPC layer could not use (empty, truncated, not a CALL, a
/// REPLY sent to the server), in both versions and in Long calls, many
/// times the grant: each is answered as RFC 5531 and RFC 8166 allow
/// (`GARBAGE_ARGS` once the XID and CALL are known, `RDMA_ERROR` where
/// the message holds no call, nothing for a REPLY), and the grant is
/// intact afterwards.
#[test]
fn item2_unusable_calls_of_every_kind_never_eat_the_grant() {
    for v2 in [false, true] {
        let grant = 3;
        let opts = if v2 {
            PairOptions::default()
        } else {
            PairOptions::v1()
        };
        let mut pair = Pair::with(opts.grant(grant));
        let vers = if v2 { 2 } else { 1 };
        // RDMA_MSG / RDMA2_MSG CALL with empty chunk lists, then `rpc`.
        let msg = |xid: u32, dir: u32, rpc: &[u32]| -> Vec<u32> {
            let mut m = vec![xid, vers, 8, 0];
            if v2 {
                m.push(dir);
            }
            m.extend([0, 0, 0]);
            m.extend(rpc);
            m
        };
        let mut cases: Vec<(Vec<u32>, Expect)> = vec![
            // XID and CALL only.
            (msg(1, 0, &[1, 0]), Some(Ok(4))),
            // Cut before the procedure.
            (msg(2, 0, &[2, 0, 2, PROG, 1]), Some(Ok(4))),
            // Credential body shorter than its length word.
            (msg(3, 0, &[3, 0, 2, PROG, 1, 0, 1, 8, 7]), Some(Ok(4))),
            // No verifier.
            (msg(4, 0, &[4, 0, 2, PROG, 1, 0, 0, 0]), Some(Ok(4))),
            // Verifier body cut short.
            (
                msg(5, 0, &[5, 0, 2, PROG, 1, 0, 0, 0, 0, 12, 1]),
                Some(Ok(4)),
            ),
        ];
        if v2 {
            // A REPLY to the server (direction and msg_type agree): no
            // call of ours has its XID; dropped.
            cases.push((msg(6, 1, &[6, 1, 0, 0, 0, 0]), None));
        } else {
            // XID only: no direction, no call.
            cases.push((msg(6, 0, &[6]), Some(Err(2))));
            // msg_type 7: neither CALL nor REPLY.
            cases.push((msg(7, 0, &[7, 7, 2, PROG, 1, 0, 0, 0, 0, 0]), Some(Err(2))));
            // A REPLY to the server: dropped.
            cases.push((msg(8, 0, &[8, 1, 0, 0, 0, 0]), None));
        }
        for round in 0..3 {
            for (m, want) in &cases {
                let xid = m[0];
                let before = pair.server.sent.len();
                pair.inject(false, &words(m));
                pair.drive();
                let got = answer_of(&sent_since(&pair.server, before), xid, vers);
                assert_eq!(got, *want, "v{vers} round {round} xid {xid}");
            }
        }
        // Long calls whose Position-Zero chunk holds no usable call.
        for (i, (body, want)) in [
            (vec![], Err(2)),
            (vec![0x40, 1, 0, 0, 0, 0], Err(2)),
            (vec![0x42, 0, 2, PROG], Ok(4)),
        ]
        .into_iter()
        .enumerate()
        {
            let xid = 0x40 + i as u32;
            let data = Bytes::from(words(&body));
            let len = data.len() as u32;
            let (key, addr) = if len == 0 {
                (0x1234, 0)
            } else {
                client_source(&pair, data)
            };
            let (rk, ra) = client_sink(&pair, 256);
            let mut m = vec![xid, vers, 8, 1];
            if v2 {
                m.push(0);
            }
            m.extend(read_seg(0, key, len, addr));
            m.extend([0, 0]);
            m.extend(one_segment_chunk(rk, 256, ra));
            let before = pair.server.sent.len();
            pair.inject(false, &words(&m));
            pair.drive();
            let got = answer_of(&sent_since(&pair.server, before), xid, vers);
            assert_eq!(got, Some(want), "v{vers} Long {i}");
        }
        assert_eq!(calls_delivered(&pair), 0, "v{vers}");
        assert_eq!(pair.server.engine.stats().credit_overruns, 0, "v{vers}");
        assert_eq!(good_calls_succeed(&mut pair, 100, 3 * grant), 3 * grant);
        assert_eq!(pair.server.engine.stats().credit_overruns, 0, "v{vers}");
        assert_server_holds_nothing(&pair);
    }
}

/// A call the upper layer retires gives its credit back at once, even
/// while other calls are outstanding and the grant is full: the next
/// call is served, not answered `SYSTEM_ERR`.
#[test]
fn item2_retiring_frees_a_credit_while_the_grant_is_full() {
    let mut pair = Pair::with(PairOptions::v1().grant(2));
    let mut tokens = Vec::new();
    for xid in [1u32, 2] {
        let mut m = vec![xid, 1, 8, 0, 0, 0, 0];
        m.extend(call_header(xid, 0));
        pair.inject(false, &words(&m));
        pair.drive();
        let Some(Event::Call { token, .. }) =
            pair.server.take_event(|e| matches!(e, Event::Call { .. }))
        else {
            panic!("call {xid}")
        };
        tokens.push(token);
    }
    // The grant is full: a third call is an overrun.
    let mut m = vec![3u32, 1, 8, 0, 0, 0, 0];
    m.extend(call_header(3, 0));
    let before = pair.server.sent.len();
    pair.inject(false, &words(&m));
    pair.drive();
    assert_eq!(
        answer_of(&sent_since(&pair.server, before), 3, 1),
        Some(Ok(5))
    );
    // Retire one: the next call is delivered.
    pair.server.engine.retire_call(tokens[0]).unwrap();
    let mut m = vec![4u32, 1, 8, 0, 0, 0, 0];
    m.extend(call_header(4, 0));
    pair.inject(false, &words(&m));
    pair.drive();
    assert!(pair
        .server
        .take_event(|e| matches!(e, Event::Call { xid: 4, .. }))
        .is_some());
    assert_eq!(pair.server.engine.stats().credit_overruns, 1);
}

// ----- item 3 -------------------------------------------------------------

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

/// The scenario (grant 8, 16 one-byte Write chunks per call)
/// in both versions and with send queues of 1, 2, 4 and 8: the server
/// never has fewer receives posted than it granted, nothing fails, and
/// every reply carries its 16 results.
#[test]
fn item3_receives_stay_posted_for_every_send_queue_depth_and_version() {
    for v2 in [false, true] {
        for depth in [1u32, 2, 4, 8] {
            let opts = if v2 {
                PairOptions::default()
            } else {
                PairOptions::v1()
            };
            let mut o = opts.grant(8);
            o.caps.send_depth = depth;
            let mut pair = Pair::with(o);
            let hints = ReplyHints::with_ddp(&[1; 16], 2000);
            let total = 24u32;
            for x in 1..=total {
                pair.send_call(x, call(x, 2, &[], None), hints.clone());
            }
            let mut min_posted = usize::MAX;
            for _ in 0..20_000 {
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
            let tag = format!("v2 {v2} depth {depth}");
            assert!(pair.server.engine.error().is_none(), "{tag}");
            assert!(pair.client.engine.error().is_none(), "{tag}");
            assert!(min_posted >= 8, "{tag}: receives fell to {min_posted}");
            for x in 1..=total {
                match outcome(&mut pair, x) {
                    Some(Event::Reply { message, .. }) => {
                        let mut d = Decoder::with_ddp(&message);
                        d.skip(24).unwrap();
                        for i in 0..16u8 {
                            assert_eq!(&d.get_opaque_ddp(1).unwrap()[..], &[i], "{tag}");
                        }
                    }
                    other => panic!("{tag} call {x}: {other:?}"),
                }
            }
            assert_eq!(pair.server.engine.stats().credit_overruns, 0, "{tag}");
            pair.assert_no_leaks();
        }
    }
}

// ----- item 4 -------------------------------------------------------------

/// Version Two without private data, at the boundary: a reply of exactly
/// 4096 bytes with its header comes back inline without a Reply chunk.
#[test]
fn item4_a_reply_of_exactly_4096_bytes_goes_inline() {
    let mut pair = Pair::with(PairOptions {
        private_data: false,
        ..PairOptions::default()
    });
    assert_eq!(good_calls_succeed(&mut pair, 1, 1), 1);
    // Version Two RDMA2_MSG reply header: 8 words. RPC reply header: 24.
    let body = 4096 - 32 - 24;
    pair.send_call(
        2,
        call(2, 1, &[], None),
        ReplyHints::at_most(24 + body as u32),
    );
    pair.drive();
    let (sent, _) = pair.client.sent.last().unwrap();
    let h = rpcrdma_wire::decode(sent, &Default::default()).unwrap();
    assert!(h.header.chunks().unwrap().is_empty(), "{:?}", h.header);
    pair.serve(|xid, _| reply(xid, &pattern(body, 3), None));
    match outcome(&mut pair, 2) {
        Some(Event::Reply { reply_form, .. }) => assert_eq!(reply_form, MessageForm::Short),
        other => panic!("{other:?}"),
    }
    let longest = pair.server.sent.iter().map(|(b, _)| b.len()).max();
    assert_eq!(longest, Some(4096));
}

// ----- item 5 -------------------------------------------------------------

/// `ddp_results [8192]`, `max_reply 9000`, in Version Two as in One: a
/// 2000-byte reply from the branch without the item comes back, and so
/// does the item through its Write chunk; with no maximum stated, a
/// 5000-byte reply comes back through a Reply chunk of the largest
/// message.
#[test]
fn item5_both_branches_and_no_maximum_in_version_two() {
    let mut pair = Pair::new();
    assert_eq!(good_calls_succeed(&mut pair, 1, 1), 1);
    assert_eq!(pair.client.engine.info().version, Some(2));
    let hints = ReplyHints::with_ddp(&[8192], 9000);
    pair.send_call(2, call(2, 2, &[], None), hints.clone());
    pair.serve(|xid, _| reply(xid, &pattern(2000, 5), None));
    match outcome(&mut pair, 2) {
        Some(Event::Reply { message, .. }) => {
            assert_eq!(&message.inline()[24..], &pattern(2000, 5)[..]);
        }
        other => panic!("{other:?}"),
    }
    pair.send_call(3, call(3, 2, &[], None), hints);
    pair.serve(|xid, _| reply(xid, &[0, 0, 0, 1], Some(pattern(8192, 6))));
    match outcome(&mut pair, 3) {
        Some(Event::Reply { message, .. }) => {
            let mut d = Decoder::with_ddp(&message);
            d.skip(28).unwrap();
            assert_eq!(d.get_opaque_ddp(8192).unwrap(), pattern(8192, 6));
        }
        other => panic!("{other:?}"),
    }
    pair.send_call(4, call(4, 1, &[], None), ReplyHints::default());
    pair.drive();
    let max = pair.client.engine.config().max_message;
    let (sent, _) = pair.client.sent.last().unwrap();
    let h = rpcrdma_wire::decode(sent, &Default::default()).unwrap();
    assert_eq!(
        h.header
            .chunks()
            .unwrap()
            .reply
            .as_ref()
            .map(|r| r.data_len()),
        Some(u64::from(max))
    );
    pair.serve(|xid, _| reply(xid, &pattern(5000, 9), None));
    match outcome(&mut pair, 4) {
        Some(Event::Reply { message, .. }) => {
            assert_eq!(&message.inline()[24..], &pattern(5000, 9)[..]);
        }
        other => panic!("{other:?}"),
    }
    pair.assert_no_leaks();
}

// ----- item 6 -------------------------------------------------------------

/// The upper layer's view of the server's first delivered call.
fn delivered(pair: &mut Pair) -> Payload {
    let calls = answer_all(pair);
    assert_eq!(
        calls.len(),
        1,
        "server sent {:?}",
        pair.server.sent.last().map(|(b, _)| b.clone())
    );
    calls.into_iter().next().unwrap()
}

/// Read chunks that carry their XDR padding, in both versions: a 5-byte
/// opaque as an 8-byte chunk, in an `RDMA_MSG` call and in a Long call
/// (Position-Zero Read chunk, the padded chunk at position 44 of the
/// stream it holds), next to an opaque of a length that needs no pad (its
/// chunk is delivered whole) and a 1-byte opaque as a 4-byte chunk.
#[test]
fn item6_padded_read_chunks_in_every_form() {
    for v2 in [false, true] {
        for long in [false, true] {
            let tag = format!("v2 {v2} long {long}");
            let opts = if v2 {
                PairOptions::default()
            } else {
                PairOptions::v1()
            };
            let mut pair = Pair::with(opts);
            let vers = if v2 { 2 } else { 1 };
            let xid = 0x55;
            let (k1, a1) = client_source(&pair, Bytes::from_static(b"hello\0\0\0"));
            let (k2, a2) = client_source(&pair, Bytes::from_static(b"12345678"));
            let (k3, a3) = client_source(&pair, Bytes::from_static(b"Z\0\0\0"));
            // Stream: header (40), len 5 @40, [chunk 44], len 8 @44,
            // [chunk 48], len 1 @48, [chunk 52], trailer word @52.
            let reduced = [call_header(xid, 3), vec![5, 8, 1, 0x0102_0304]].concat();
            let mut reads = Vec::new();
            let mut m = vec![xid, vers, 8, u32::from(long)];
            if v2 {
                m.push(0);
            }
            if long {
                let (kz, az) = client_source(&pair, Bytes::from(words(&reduced)));
                reads.extend(read_seg(0, kz, reduced.len() as u32 * 4, az));
            }
            // Positions in the whole stream: each chunk's padded length
            // counts for the chunks after it.
            reads.extend(read_seg(44, k1, 8, a1));
            reads.extend(read_seg(56, k2, 8, a2));
            reads.extend(read_seg(68, k3, 4, a3));
            m.extend(reads);
            m.extend([0, 0, 0]);
            if !long {
                m.extend(&reduced);
            }
            pair.inject(false, &words(&m));
            pair.drive();
            let message = delivered(&mut pair);
            let mut d = Decoder::with_ddp(&message);
            d.skip(40).unwrap();
            assert_eq!(&d.get_opaque_ddp(100).unwrap()[..], b"hello", "{tag}");
            assert_eq!(&d.get_opaque_ddp(100).unwrap()[..], b"12345678", "{tag}");
            assert_eq!(&d.get_opaque_ddp(100).unwrap()[..], b"Z", "{tag}");
            assert_eq!(d.get_u32().unwrap(), 0x0102_0304, "{tag}");
            d.expect_end().unwrap();
            assert_eq!(pair.server.engine.stats().bad_messages, 0, "{tag}");
            assert_server_holds_nothing(&pair);
        }
    }
}

/// A padded chunk is recognised only when its length is the round-up of
/// the opaque's length word: a 3-byte opaque in an 8-byte chunk is a
/// mismatch between the chunk and the stream (RFC 8166 §5.5.2), answered
/// `GARBAGE_ARGS` by the upper layer's decoder, and never silently cut.
#[test]
fn item6_a_chunk_longer_than_its_padding_is_not_cut() {
    let mut pair = Pair::with(PairOptions::v1());
    let (k, a) = client_source(&pair, Bytes::from_static(b"abcdefgh"));
    let xid = 0x56;
    let mut m = vec![xid, 1, 8, 0];
    m.extend(read_seg(44, k, 8, a));
    m.extend([0, 0, 0]);
    m.extend(call_header(xid, 3));
    m.push(3);
    pair.inject(false, &words(&m));
    pair.drive();
    let message = delivered(&mut pair);
    // The item is delivered as the requester sent it (8 bytes); the upper
    // layer's length check refuses it.
    assert_eq!(message.items()[0].data.len(), 8);
    let mut d = Decoder::with_ddp(&message);
    d.skip(40).unwrap();
    assert!(d.get_opaque_ddp(100).is_err());
}

/// Read lists in descending and shuffled Position order, in both
/// versions: accepted and rebuilt by Position.
#[test]
fn item6_read_list_positions_descending_and_shuffled() {
    for v2 in [false, true] {
        for order in [[2usize, 1, 0], [1, 2, 0], [2, 0, 1]] {
            let tag = format!("v2 {v2} order {order:?}");
            let opts = if v2 {
                PairOptions::default()
            } else {
                PairOptions::v1()
            };
            let mut pair = Pair::with(opts);
            let vers = if v2 { 2 } else { 1 };
            let xid = 0x57;
            let data: [&'static [u8]; 3] = [b"first", b"2nd!", b"the third"];
            // Stream: header 40, len 5 @40, chunk @44 (8 padded), len 4
            // @52, chunk @56 (4), len 9 @60, chunk @64.
            let positions = [44u32, 56, 64];
            let segs: Vec<Vec<u32>> = (0..3)
                .map(|i| {
                    let (k, a) = client_source(&pair, Bytes::from_static(data[i]));
                    read_seg(positions[i], k, data[i].len() as u32, a)
                })
                .collect();
            let mut m = vec![xid, vers, 8, 0];
            if v2 {
                m.push(0);
            }
            for &i in &order {
                m.extend(&segs[i]);
            }
            m.extend([0, 0, 0]);
            m.extend(call_header(xid, 3));
            m.extend([5, 4, 9]);
            pair.inject(false, &words(&m));
            pair.drive();
            let message = delivered(&mut pair);
            let mut d = Decoder::with_ddp(&message);
            d.skip(40).unwrap();
            for want in data {
                assert_eq!(&d.get_opaque_ddp(100).unwrap()[..], want, "{tag}");
            }
            d.expect_end().unwrap();
            assert_eq!(pair.server.engine.stats().bad_messages, 0, "{tag}");
        }
    }
}

/// `RDMA_ERROR` `ERR_VERS` and `ERR_CHUNK` (`ERR_BADHEADER`), in both
/// versions, followed by 0, 3, 4, 8 and 100 pad bytes: the call they name
/// fails at once with the error's code, its credit comes back, nothing
/// is answered.
#[test]
fn item6_rdma_errors_with_pad_bytes_end_their_calls() {
    for v2 in [false, true] {
        for (body, want) in [
            (vec![1u32, 1, 1], CallError::Version { low: 1, high: 1 }),
            (
                vec![2],
                CallError::RdmaError {
                    code: ErrCode::BADHEADER,
                },
            ),
        ] {
            for pad in [0usize, 3, 4, 8, 100] {
                let tag = format!("v2 {v2} body {body:?} pad {pad}");
                let mut pair = if v2 {
                    Pair::new()
                } else {
                    Pair::with(PairOptions::v1())
                };
                // Settle the version first (an ERR_VERS for the first call
                // of a connection is a failed negotiation instead).
                assert_eq!(good_calls_succeed(&mut pair, 1, 1), 1);
                let vers = if v2 { 2 } else { 1 };
                pair.send_call(5, call(5, 0, &[], None), ReplyHints::default());
                pair.drop_next_send(true);
                pair.drive();
                let mut m = words(&[5, vers, 1, 4]);
                m.extend(words(&body));
                m.extend(std::iter::repeat_n(0u8, pad));
                let before = pair.client.sent.len();
                pair.inject(true, &m);
                match outcome(&mut pair, 5) {
                    Some(Event::CallFailed { error, .. }) => assert_eq!(error, want, "{tag}"),
                    other => panic!("{tag}: {other:?}"),
                }
                pair.drive();
                assert_eq!(pair.client.sent.len(), before, "{tag}: answered");
                assert_eq!(pair.client.engine.info().calls_in_flight, 0, "{tag}");
                assert!(pair.client.engine.error().is_none(), "{tag}");
                pair.assert_no_leaks();
            }
        }
    }
}

// ----- item 7 -------------------------------------------------------------

/// The responder's own Read sinks: if one cannot be invalidated after its
/// RDMA Reads, the server's connection closes and the call is not handed
/// up (RFC 8166 §5.5.4 fences the memory before the RPC completes).
#[test]
fn item7_a_read_sink_that_cannot_be_invalidated_closes_the_server() {
    let mut pair = Pair::with(PairOptions::v1());
    pair.send_call(
        1,
        call(1, 3, &[], Some(pattern(8192, 1))),
        ReplyHints::at_most(64),
    );
    // Let the call and the server's Read go, not the Read's completion.
    pair.hold_sends(false, true);
    pair.drive();
    pair.fabric.fail_next_deregistrations(1);
    pair.hold_sends(false, false);
    pair.drive();
    assert!(
        matches!(
            pair.server.engine.error(),
            Some(EngineError::InvalidationFailed { .. })
        ),
        "{:?}",
        pair.server.engine.error()
    );
    assert_eq!(calls_delivered(&pair), 0);
}

/// A Long reply's Reply chunk that cannot be invalidated: the client
/// closes the connection and never reports the reply.
#[test]
fn item7_a_reply_chunk_that_cannot_be_invalidated_closes_the_client() {
    let mut pair = Pair::with(PairOptions::v1());
    pair.send_call(1, call(1, 1, &[], None), ReplyHints::at_most(8000));
    pair.drive();
    let Some(Event::Call { token, .. }) =
        pair.server.take_event(|e| matches!(e, Event::Call { .. }))
    else {
        panic!("no call")
    };
    pair.fabric.fail_next_deregistrations(1);
    pair.server
        .engine
        .send_reply(token, reply(1, &pattern(5000, 2), None))
        .unwrap();
    pair.drive();
    assert!(matches!(
        pair.client.engine.error(),
        Some(EngineError::InvalidationFailed { .. })
    ));
    assert!(pair
        .client
        .events
        .iter()
        .all(|e| !matches!(e, Event::Reply { .. } | Event::CallFailed { .. })));
}
