//! Version Two optional features end to end over the in-memory fabric: the
//! extension registry and the experimental transport properties feature
//! (`docs/v2-transport-properties.md`, spec notes X1–X8).

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use rpcrdma_engine::testing::{Pair, PairOptions};
use rpcrdma_engine::{
    Adjustments, ApiError, CallError, EngineConfig, Event, FeatureContext, FeatureError,
    FeatureState, MessageForm, OptionalFeature, ReplyHints, SizeFault, TransportProperties,
    TransportPropertiesFeature, VersionPolicy, TRANSPORT_PROPERTIES,
};
use rpcrdma_wire::{
    ChunkLists, Direction, ErrCode, Limits, OptionType, Optional, V2Body, V2Header, VersionRange,
};
use rpcrdma_xdr::{Decoder, Encode, Payload, PayloadEncoder};

// ----- helpers ---------------------------------------------------------------

/// An RPC call (AUTH_NONE) for program 0x20000099 v1 `proc_`, then `args`
/// inline, then DDP-eligible opaques.
fn call(xid: u32, proc_: u32, args: &[u8], ddp: &[Bytes]) -> Payload {
    let mut pe = PayloadEncoder::new();
    let mut e = pe.encoder();
    for w in [xid, 0, 2, 0x2000_0099, 1, proc_, 0, 0, 0, 0] {
        e.put_u32(w);
    }
    e.put_fixed_opaque(args);
    for d in ddp {
        e.put_opaque_ddp(d.clone());
    }
    pe.finish()
}

/// An accepted SUCCESS reply carrying `body` inline.
fn reply(xid: u32, body: &[u8]) -> Payload {
    let mut pe = PayloadEncoder::new();
    let mut e = pe.encoder();
    for w in [xid, 1, 0, 0, 0, 0] {
        e.put_u32(w);
    }
    e.put_fixed_opaque(body);
    pe.finish()
}

fn filler(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

fn serve_empty(pair: &mut Pair) {
    pair.serve(|xid, _| reply(xid, &[]));
}

fn take_outcome(pair: &mut Pair, want: u32) -> Event {
    pair.client
        .take_event(
            |e| matches!(e, Event::Reply { xid, .. } | Event::CallFailed { xid, .. } if *xid == want),
        )
        .unwrap_or_else(|| panic!("no outcome for xid {want:#x}"))
}

fn forms(pair: &mut Pair, want: u32) -> (MessageForm, MessageForm) {
    match take_outcome(pair, want) {
        Event::Reply {
            call_form,
            reply_form,
            ..
        } => (call_form, reply_form),
        other => panic!("expected a reply to {want:#x}, got {other:?}"),
    }
}

fn send(pair: &mut Pair, xid: u32, payload: Payload, hints: ReplyHints) {
    pair.send_call(xid, payload, hints);
}

fn hex(b: &[u8]) -> String {
    b.chunks(4)
        .map(|c| c.iter().map(|x| format!("{x:02x}")).collect::<String>())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether a sent message is `RDMA2_OPTIONAL`.
fn is_optional(b: &[u8]) -> bool {
    b.get(4..8) == Some(&[0, 0, 0, 2][..]) && b.get(12..16) == Some(&[0, 0, 0, 5][..])
}

fn optionals(sent: &[(Bytes, Option<u32>)]) -> Vec<Bytes> {
    sent.iter()
        .filter(|(b, _)| is_optional(b))
        .map(|(b, _)| b.clone())
        .collect()
}

/// The bytes of a Version Two `RDMA2_OPTIONAL` message.
fn optional_msg(
    xid: u32,
    credits: u32,
    direction: Direction,
    opttype: u32,
    optinfo: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    let h = V2Header {
        xid,
        credits,
        body: V2Body::Optional(Optional {
            direction,
            opttype: OptionType(opttype),
            optinfo: Bytes::copy_from_slice(optinfo),
        }),
    };
    let mut b = BytesMut::new();
    h.encode_into(&mut b);
    b.extend_from_slice(payload);
    b.to_vec()
}

fn tp_state(pair_end: &rpcrdma_engine::Engine<rpcrdma_engine::testing::TestPd>) -> FeatureState {
    pair_end
        .info()
        .feature(TRANSPORT_PROPERTIES)
        .expect("transport properties registered")
        .state
        .clone()
}

/// Both ends prepared for 16 KiB inline messages but exchanging no RFC
/// 8797 private data: without transport properties Version Two's 4096
/// applies.
fn big_buffers_without_private_data() -> PairOptions {
    let mut o = PairOptions {
        private_data: false,
        ..PairOptions::default()
    };
    for c in [&mut o.client, &mut o.server] {
        c.inline_send = 16384;
        c.inline_recv = 16384;
    }
    o
}

// ----- both ends support it ------------------------------------------------

#[test]
fn both_ends_exchange_properties_and_long_messages_become_short() {
    let mut pair = Pair::with(big_buffers_without_private_data());
    // The probe, then a 10000-byte call that cannot be reduced, queued
    // before the version is settled.
    send(&mut pair, 1, call(1, 0, &[], &[]), ReplyHints::default());
    send(
        &mut pair,
        2,
        call(2, 1, &filler(10_000), &[]),
        ReplyHints::default(),
    );
    serve_empty(&mut pair);
    assert_eq!(
        forms(&mut pair, 1),
        (MessageForm::Short, MessageForm::Short)
    );
    // Call 2 left together with the offer, before the answer: Long under
    // Version Two's 4096-byte default.
    assert_eq!(forms(&mut pair, 2).0, MessageForm::Long);

    // The offer was the client's second Send, ahead of call 2 (X1).
    assert!(is_optional(&pair.client.sent[1].0));
    assert!(!is_optional(&pair.client.sent[2].0));
    // Both ends now know each other.
    for e in [&pair.client.engine, &pair.server.engine] {
        let info = e.info();
        let f = info.feature(TRANSPORT_PROPERTIES).unwrap();
        assert_eq!(f.state, FeatureState::Active);
        assert_eq!(f.adjustments.peer_recv_size, Some(16384));
        assert_eq!(f.adjustments.peer_send_size, Some(16384));
        assert_eq!(f.adjustments.peer_limits, Some(Limits::default()));
        let t = e.thresholds();
        assert_eq!((t.send, t.recv), (16384, 16384));
        assert_eq!(e.stats().options_sent, 1);
        assert_eq!(e.stats().options_received, 1);
    }
    assert!(pair.client.events.iter().any(|e| matches!(
        e,
        Event::Feature { opttype, state: FeatureState::Active, .. } if *opttype == TRANSPORT_PROPERTIES
    )));

    // The same call now goes Short; a 10000-byte reply comes back Short
    // too, with no Reply chunk provisioned for it.
    let hints = ReplyHints::at_most(10_100);
    send(
        &mut pair,
        3,
        call(3, 1, &filler(10_000), &[]),
        hints.clone(),
    );
    pair.serve(|xid, _| reply(xid, &filler(10_000)));
    assert_eq!(
        forms(&mut pair, 3),
        (MessageForm::Short, MessageForm::Short)
    );
    let last = pair.client.sent.last().unwrap().0.clone();
    let h = rpcrdma_wire::decode(&last, &Default::default())
        .unwrap()
        .header;
    assert!(h.chunks().unwrap().reply.is_none());

    // Without the feature on either end, the same exchange stays Long.
    let mut o = big_buffers_without_private_data();
    o.client.transport_properties = false;
    o.server.transport_properties = false;
    let mut plain = Pair::with(o);
    send(&mut plain, 1, call(1, 0, &[], &[]), ReplyHints::default());
    serve_empty(&mut plain);
    forms(&mut plain, 1);
    send(&mut plain, 3, call(3, 1, &filler(10_000), &[]), hints);
    plain.serve(|xid, _| reply(xid, &filler(10_000)));
    assert_eq!(forms(&mut plain, 3), (MessageForm::Long, MessageForm::Long));
    assert!(optionals(&plain.client.sent).is_empty());
    assert_eq!(plain.client.engine.info().features, vec![]);

    assert_eq!(pair.client.engine.info().calls_in_flight, 0);
    pair.assert_no_leaks();
    plain.assert_no_leaks();
}

// X2: the exact bytes of the offer, the answer, and a refusal (the golden
// vectors of `docs/v2-transport-properties.md`, decoded by
// `crates/cli/tests/decode_v2opt.rs`).
const GOLDEN_OFFER: &str = "80001234 00000002 00000080 00000005 00000000 80545001 00000018 00002000 00002000 00000040 00000010 00000040 01010000";
const GOLDEN_ANSWER: &str = "80001234 00000002 00000040 00000005 00000001 80545001 00000018 00004000 00004000 00000040 00000010 00000040 01010000";
const GOLDEN_INVAL_OPTION: &str = "80001234 00000002 00000040 00000004 00000003";

//= draft-cel-01#section-4.2.2
//# o When the rdma_proc field has the value RDMA2_OPTIONAL and no RPC message
//# payload is present, a Requester MUST set the value of the rdma_optdir
//# field to CALL, and a Responder MUST set the value of the rdma_optdir field
//# to REPLY.
//= draft-cel-01#section-3.1
//# The value in this field denotes an optional operation that MAY be
//# supported by the receiver.
#[test]
fn x2_offer_and_answer_are_byte_exact() {
    let mut o = PairOptions::default();
    o.client.inline_send = 8192;
    o.client.inline_recv = 8192;
    o.server.inline_send = 16384;
    o.server.inline_recv = 16384;
    let mut pair = Pair::with(o);
    send(
        &mut pair,
        0x1234,
        call(0x1234, 0, &[], &[]),
        ReplyHints::default(),
    );
    serve_empty(&mut pair);
    forms(&mut pair, 0x1234);
    let offers = optionals(&pair.client.sent);
    let answers = optionals(&pair.server.sent);
    assert_eq!(offers.len(), 1);
    assert_eq!(answers.len(), 1);
    assert_eq!(hex(&offers[0]), GOLDEN_OFFER);
    assert_eq!(hex(&answers[0]), GOLDEN_ANSWER);
    // What each end learned, and that RFC 8797's 1024-byte units no longer
    // decide: the client sends up to the server's 16384-byte buffers, but
    // no more than its own 8192-byte Send size.
    let t = pair.client.engine.thresholds();
    assert_eq!((t.send, t.recv), (8192, 8192));
    let t = pair.server.engine.thresholds();
    assert_eq!((t.send, t.recv), (8192, 8192));

    // A server without the feature answers the same offer like this.
    let mut o = PairOptions::default();
    o.server.transport_properties = false;
    let mut pair = Pair::with(o);
    let offer = hex_bytes(GOLDEN_OFFER);
    pair.inject(false, &offer);
    pair.drive();
    assert_eq!(
        hex(&pair.server.sent.last().unwrap().0),
        GOLDEN_INVAL_OPTION
    );
}

fn hex_bytes(s: &str) -> Vec<u8> {
    let digits: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).unwrap())
        .collect()
}

// ----- the peer lacks it ---------------------------------------------------

#[test]
fn x3_peer_without_the_feature_draws_inval_option_and_it_is_dropped() {
    let mut o = big_buffers_without_private_data();
    o.server.transport_properties = false;
    o.server.credits_grant = 4;
    let mut pair = Pair::with(o);
    for xid in 1..=12u32 {
        send(
            &mut pair,
            xid,
            call(xid, 0, &[], &[]),
            ReplyHints::default(),
        );
    }
    serve_empty(&mut pair);
    for xid in 1..=12u32 {
        forms(&mut pair, xid);
    }
    // One offer, answered RDMA2_ERROR RDMA2_ERR_INVAL_OPTION by the
    // server's decoder, with the offer's XID.
    let offers = optionals(&pair.client.sent);
    assert_eq!(offers.len(), 1);
    let err = pair
        .server
        .sent
        .iter()
        .find(|(b, _)| b.get(12..16) == Some(&[0, 0, 0, 4][..]))
        .expect("an RDMA2_ERROR")
        .0
        .clone();
    assert_eq!(&err[0..8], &offers[0][0..8]);
    assert_eq!(&err[16..20], &[0, 0, 0, 3]);
    assert_eq!(tp_state(&pair.client.engine), FeatureState::Unsupported);
    assert!(pair.client.events.iter().any(|e| matches!(
        e,
        Event::Feature {
            state: FeatureState::Unsupported,
            ..
        }
    )));
    // Nothing changed for the calls: thresholds are Version Two's default,
    // every credit came back, no call failed.
    let t = pair.client.engine.thresholds();
    assert_eq!((t.send, t.recv), (4096, 4096));
    assert_eq!(pair.client.engine.info().calls_in_flight, 0);
    assert_eq!(pair.client.engine.info().credits_granted, 4);
    assert!(!pair
        .client
        .events
        .iter()
        .any(|e| matches!(e, Event::CallFailed { .. } | Event::Fatal(_))));
    assert_eq!(pair.server.engine.stats().calls_received, 12);

    // Never resent, however many more calls go by.
    for xid in 100..120u32 {
        send(
            &mut pair,
            xid,
            call(xid, 1, &filler(6000), &[]),
            ReplyHints::default(),
        );
    }
    serve_empty(&mut pair);
    for xid in 100..120u32 {
        assert_eq!(forms(&mut pair, xid).0, MessageForm::Long);
    }
    assert_eq!(optionals(&pair.client.sent).len(), 1);
    assert_eq!(pair.client.engine.stats().options_sent, 1);
    pair.assert_no_leaks();
}

#[test]
fn x3_other_errors_also_drop_the_feature() {
    // The offer never reaches the server; an RDMA2_ERROR
    // RDMA2_ERR_BAD_HEADER comes back for its XID instead.
    let (mut pair, xid) = pair_with_intercepted_offer(PairOptions::default());
    assert_eq!(pair.client.engine.info().calls_in_flight, 1);
    let err: Vec<u8> = [xid, 2, 1, 4, 2]
        .iter()
        .flat_map(|w| w.to_be_bytes())
        .collect();
    pair.inject(true, &err);
    assert_eq!(
        tp_state(&pair.client.engine),
        FeatureState::Refused(ErrCode::BADHEADER)
    );
    assert_eq!(pair.client.engine.info().calls_in_flight, 0);
    // E6 reading: the error's credit value (1) is ignored.
    assert_eq!(pair.client.engine.info().credits_granted, 8);
}

// ----- Version One connections ----------------------------------------------

#[test]
fn x1_version_one_connections_never_send_it() {
    type Setup = fn(&mut PairOptions);
    let cases: [(&str, Setup); 3] = [
        ("v1 client", |o| o.client.client_version = VersionPolicy::V1),
        ("v2 client, v1-only server", |o| {
            o.server.versions = VersionRange::V1_ONLY;
        }),
        ("v1-only both", |o| {
            o.client.versions = VersionRange::V1_ONLY;
            o.client.client_version = VersionPolicy::V1;
            o.server.versions = VersionRange::V1_ONLY;
        }),
    ];
    for (name, setup) in cases {
        let mut o = PairOptions::default();
        setup(&mut o);
        let mut pair = Pair::with(o);
        for xid in 1..=5u32 {
            send(
                &mut pair,
                xid,
                call(xid, 0, &[], &[]),
                ReplyHints::default(),
            );
        }
        serve_empty(&mut pair);
        for xid in 1..=5u32 {
            forms(&mut pair, xid);
        }
        assert_eq!(pair.client.engine.info().version, Some(1), "{name}");
        for e in [&pair.client, &pair.server] {
            assert!(
                optionals(&e.sent).is_empty(),
                "{name}: an RDMA2_OPTIONAL was sent"
            );
            assert_eq!(e.engine.stats().options_sent, 0, "{name}");
            if let Some(f) = e.engine.info().feature(TRANSPORT_PROPERTIES) {
                assert_eq!(f.state, FeatureState::Idle, "{name}");
            }
        }
    }
}

// ----- malformed optinfo ----------------------------------------------------

fn good_props() -> TransportProperties {
    TransportProperties {
        recv_size: 8192,
        send_size: 8192,
        max_read_segments: 8,
        max_write_chunks: 4,
        max_segments_per_chunk: 8,
        max_message: 1 << 20,
    }
}

#[test]
fn x4_malformed_offers_are_answered_with_bad_header_and_change_nothing() {
    let mut pair = Pair::with(PairOptions::default().inline(1024));
    let tp = TRANSPORT_PROPERTIES.0;
    let good = good_props().to_optinfo();
    let short = &good[..20];
    let small = TransportProperties {
        recv_size: 1024,
        ..good_props()
    }
    .to_optinfo();
    let cases: [(u32, &[u8], &[u8]); 3] = [
        (0x51, short, &[]),
        (0x52, &small, &[]),
        (0x53, &good, &[0, 0, 0, 0x53, 0, 0, 0, 0]),
    ];
    for (xid, info, payload) in cases {
        pair.inject(
            false,
            &optional_msg(xid, 4, Direction::Call, tp, info, payload),
        );
        pair.drive();
        let last = pair.server.sent.last().unwrap().0.clone();
        // RDMA2_ERROR RDMA2_ERR_BAD_HEADER with the offer's XID and version.
        assert_eq!(
            hex(&last),
            format!("{xid:08x} 00000002 00000040 00000004 00000002"),
            "xid {xid:#x}"
        );
        assert!(matches!(
            tp_state(&pair.server.engine),
            FeatureState::Malformed(_)
        ));
        assert_eq!(pair.server.engine.thresholds().send, 1024);
    }
    assert_eq!(pair.server.engine.stats().bad_messages, 3);
    // A well-formed offer afterwards is answered and takes effect.
    pair.inject(
        false,
        &optional_msg(0x54, 4, Direction::Call, tp, &good, &[]),
    );
    pair.drive();
    let last = pair.server.sent.last().unwrap().0.clone();
    assert!(is_optional(&last));
    assert_eq!(&last[16..20], &[0, 0, 0, 1], "optdir REPLY");
    assert_eq!(tp_state(&pair.server.engine), FeatureState::Active);
    // The server's replies may now use the client's 8192-byte buffers, up
    // to its own 1024-byte Send size; the client may send up to the
    // server's 4096-byte receive buffers (what the server advertised).
    assert_eq!(pair.server.engine.thresholds().send, 1024);
    assert_eq!(pair.server.engine.thresholds().recv, 4096);
    let answer = rpcrdma_wire::decode(&last, &{
        let mut c = rpcrdma_wire::DecodeConfig::default();
        c.options.insert(TRANSPORT_PROPERTIES);
        c
    })
    .unwrap();
    let rpcrdma_wire::Header::V2(V2Header {
        body: V2Body::Optional(o),
        ..
    }) = answer.header
    else {
        panic!("not optional")
    };
    assert_eq!(
        TransportProperties::from_optinfo(&o.optinfo)
            .unwrap()
            .recv_size,
        4096
    );
}

/// Drives a default pair until the client has settled Version Two and
/// posted its offer, which is taken off the wire (the server never sees
/// it). Returns the pair and the offer's XID.
fn pair_with_intercepted_offer(o: PairOptions) -> (Pair, u32) {
    let mut pair = Pair::with(o);
    send(&mut pair, 1, call(1, 0, &[], &[]), ReplyHints::default());
    pair.drop_next_send(true);
    let mut m = BytesMut::new();
    V2Header {
        xid: 1,
        credits: 8,
        body: V2Body::Msg {
            direction: Direction::Reply,
            chunks: ChunkLists::default(),
        },
    }
    .encode_into(&mut m);
    m.extend_from_slice(&reply(1, &[]).flatten());
    pair.inject(true, &m);
    forms(&mut pair, 1);
    assert_eq!(tp_state(&pair.client.engine), FeatureState::Offered);
    let offer = pair.drop_next_send(true).expect("the offer");
    let rpcrdma_verbs::SendOp::Send { sges, .. } = &offer.op else {
        panic!("{offer:?}")
    };
    let Some(rpcrdma_verbs::Sge::Bytes(b)) = sges.first() else {
        panic!("{offer:?}")
    };
    assert!(is_optional(b));
    let xid = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    assert_eq!(
        xid, 0x8000_0001,
        "X1: half the XID space from the probe's XID"
    );
    (pair, xid)
}

#[test]
fn x4_malformed_answers_drop_the_feature_without_touching_calls() {
    let (mut pair, xid) = pair_with_intercepted_offer(PairOptions::default().inline(1024));
    let tp = TRANSPORT_PROPERTIES.0;
    // A REPLY for an XID we never offered: dropped, counted.
    pair.inject(
        true,
        &optional_msg(
            0x0bad,
            4,
            Direction::Reply,
            tp,
            &good_props().to_optinfo(),
            &[],
        ),
    );
    assert_eq!(pair.client.engine.stats().unmatched_replies, 1);
    assert_eq!(tp_state(&pair.client.engine), FeatureState::Offered);
    // The answer to our offer, with max_segments_per_chunk 0.
    let bad = TransportProperties {
        max_segments_per_chunk: 0,
        ..good_props()
    };
    pair.inject(
        true,
        &optional_msg(xid, 8, Direction::Reply, tp, &bad.to_optinfo(), &[]),
    );
    assert!(matches!(
        tp_state(&pair.client.engine),
        FeatureState::Malformed(FeatureError::Malformed(_))
    ));
    // No error is sent back for a REPLY; the credit returned; the peer's
    // values are not used.
    assert_eq!(pair.client.engine.stats().rdma_errors_sent, 0);
    assert_eq!(pair.client.engine.info().calls_in_flight, 0);
    assert_eq!(pair.client.engine.thresholds().send, 1024);
    // Calls carry on; the offer is never repeated.
    for x in 2..6u32 {
        send(&mut pair, x, call(x, 0, &[], &[]), ReplyHints::default());
    }
    serve_empty(&mut pair);
    for x in 2..6u32 {
        forms(&mut pair, x);
    }
    assert_eq!(pair.client.engine.stats().options_sent, 1);
    pair.assert_no_leaks();
}

// ----- credits ----------------------------------------------------------------

#[test]
fn x5_the_offer_holds_a_credit_until_answered() {
    let mut pair = Pair::with(PairOptions::default().grant(2));
    for xid in 1..=8u32 {
        send(
            &mut pair,
            xid,
            call(xid, 0, &[], &[]),
            ReplyHints::default(),
        );
    }
    let mut peak_with_offer = 0;
    let mut done = Vec::new();
    for _ in 0..10_000 {
        let progressed = pair.step();
        let info = pair.client.engine.info();
        assert!(
            info.calls_in_flight <= info.credits_granted,
            "{} in flight with a grant of {}",
            info.calls_in_flight,
            info.credits_granted
        );
        if tp_state(&pair.client.engine) == FeatureState::Offered {
            peak_with_offer = peak_with_offer.max(info.calls_in_flight);
        }
        while let Some(Event::Call { token, xid, .. }) =
            pair.server.take_event(|e| matches!(e, Event::Call { .. }))
        {
            pair.server
                .engine
                .send_reply(token, reply(xid, &[]))
                .unwrap();
            done.push(xid);
        }
        if !progressed && done.len() == 8 {
            break;
        }
    }
    // While the offer was out it held one of the two credits.
    assert_eq!(peak_with_offer, 2);
    for xid in 1..=8u32 {
        forms(&mut pair, xid);
    }
    assert_eq!(tp_state(&pair.client.engine), FeatureState::Active);
    assert_eq!(pair.server.engine.stats().credit_overruns, 0);
    assert_eq!(pair.client.engine.info().calls_in_flight, 0);
}

/// The message's first word, if it is a plain Send of bytes.
fn posted_xid(wr: &rpcrdma_verbs::SendWr) -> u32 {
    let rpcrdma_verbs::SendOp::Send { sges, .. } = &wr.op else {
        panic!("{wr:?}")
    };
    let Some(rpcrdma_verbs::Sge::Bytes(b)) = sges.first() else {
        panic!("{wr:?}")
    };
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

#[test]
fn x5_with_a_grant_of_two_the_offer_leaves_room_for_one_call() {
    let mut pair = Pair::new();
    for xid in 1..=5u32 {
        send(
            &mut pair,
            xid,
            call(xid, 0, &[], &[]),
            ReplyHints::default(),
        );
    }
    assert_eq!(pair.drop_next_send(true).map(|w| posted_xid(&w)), Some(1));
    let mut m = BytesMut::new();
    V2Header {
        xid: 1,
        credits: 2,
        body: V2Body::Msg {
            direction: Direction::Reply,
            chunks: ChunkLists::default(),
        },
    }
    .encode_into(&mut m);
    m.extend_from_slice(&reply(1, &[]).flatten());
    pair.inject(true, &m);
    forms(&mut pair, 1);
    // Exactly the offer and call 2 go out; call 3 waits for a credit.
    let first = pair.drop_next_send(true).expect("the offer");
    assert_eq!(posted_xid(&first), 0x8000_0001);
    let second = pair.drop_next_send(true).expect("call 2");
    assert_eq!(posted_xid(&second), 2);
    assert!(pair.drop_next_send(true).is_none(), "call 3 must wait");
    assert_eq!(pair.client.engine.info().calls_in_flight, 2);
    // The answer frees the offer's credit: call 3 goes.
    pair.inject(
        true,
        &optional_msg(
            0x8000_0001,
            2,
            Direction::Reply,
            TRANSPORT_PROPERTIES.0,
            &good_props().to_optinfo(),
            &[],
        ),
    );
    assert_eq!(tp_state(&pair.client.engine), FeatureState::Active);
    assert_eq!(pair.drop_next_send(true).map(|w| posted_xid(&w)), Some(3));
    assert!(pair.drop_next_send(true).is_none());
}

#[test]
fn x8_an_unanswered_offer_is_dropped_and_keeps_its_credit() {
    let o = PairOptions::default().grant(2).inline(1024);
    let (mut pair, xid) = pair_with_intercepted_offer(o);
    // pair_with_intercepted_offer's injected reply granted 8; the server
    // itself grants 2 from its next reply on.
    assert!(pair.client.engine.poll_timeout().is_some());
    pair.advance(std::time::Duration::from_secs(6));
    assert_eq!(tp_state(&pair.client.engine), FeatureState::NoAnswer);
    assert_eq!(pair.client.engine.poll_timeout(), None);
    // The responder may still count it: the credit stays held.
    assert_eq!(pair.client.engine.info().calls_in_flight, 1);
    send(&mut pair, 2, call(2, 0, &[], &[]), ReplyHints::default());
    serve_empty(&mut pair);
    forms(&mut pair, 2);
    assert_eq!(pair.client.engine.info().credits_granted, 2);
    assert_eq!(pair.client.engine.info().calls_in_flight, 1);
    // A late answer returns the credit and changes nothing else.
    pair.inject(
        true,
        &optional_msg(
            xid,
            2,
            Direction::Reply,
            TRANSPORT_PROPERTIES.0,
            &good_props().to_optinfo(),
            &[],
        ),
    );
    assert_eq!(pair.client.engine.info().calls_in_flight, 0);
    assert_eq!(tp_state(&pair.client.engine), FeatureState::NoAnswer);
    assert_eq!(pair.client.engine.thresholds().send, 1024);
    assert_eq!(pair.client.engine.stats().options_sent, 1);
}

#[test]
fn x8_abandoned_offer_counts_towards_lost_credits() {
    let o = PairOptions::default().grant(1);
    let (mut pair, _) = pair_with_intercepted_offer(o);
    send(&mut pair, 2, call(2, 0, &[], &[]), ReplyHints::default());
    serve_empty(&mut pair);
    forms(&mut pair, 2); // grant is now 1, held by the offer from here on
    send(&mut pair, 3, call(3, 0, &[], &[]), ReplyHints::default());
    pair.drive();
    assert!(pair.client.engine.error().is_none());
    pair.advance(std::time::Duration::from_secs(6));
    assert!(matches!(
        pair.client.engine.error(),
        Some(rpcrdma_engine::EngineError::CreditsLost(1))
    ));
}

#[test]
fn x6_a_call_reusing_an_offers_xid_waits_for_its_answer() {
    let (mut pair, xid) = pair_with_intercepted_offer(PairOptions::default());
    send(
        &mut pair,
        xid,
        call(xid, 0, &[], &[]),
        ReplyHints::default(),
    );
    pair.drive();
    assert_eq!(
        pair.server.engine.stats().calls_received,
        0,
        "the call waited"
    );
    let answer = optional_msg(
        xid,
        8,
        Direction::Reply,
        TRANSPORT_PROPERTIES.0,
        &good_props().to_optinfo(),
        &[],
    );
    pair.inject(true, &answer);
    assert_eq!(tp_state(&pair.client.engine), FeatureState::Active);
    serve_empty(&mut pair);
    forms(&mut pair, xid);
}

// ----- chunk limits -------------------------------------------------------------

#[test]
fn x7_calls_respect_the_peers_chunk_limits() {
    let mut o = PairOptions::default().inline(1024);
    o.server.limits = Limits {
        max_read_segments: 2,
        max_write_chunks: 1,
        max_segments_per_chunk: 64,
    };
    o.server.max_message = 256 * 1024;
    let run = |o: PairOptions| {
        let mut pair = Pair::with(o);
        send(&mut pair, 1, call(1, 0, &[], &[]), ReplyHints::default());
        serve_empty(&mut pair);
        forms(&mut pair, 1);
        // Three DDP-eligible items of 8 KiB: three Read segments when
        // reduced.
        let items: Vec<Bytes> = (0..3u8).map(|i| Bytes::from(vec![i; 8192])).collect();
        send(&mut pair, 2, call(2, 3, &[], &items), ReplyHints::default());
        // Two DDP-eligible results: two Write chunks when provisioned.
        let hints = ReplyHints::with_ddp(&[8192, 8192], 2 * 8192 + 64);
        send(&mut pair, 3, call(3, 2, &[], &[]), hints);
        // 300 KiB: more than the server accepts through chunks.
        send(
            &mut pair,
            4,
            call(4, 3, &[], &[Bytes::from(vec![7u8; 300 * 1024])]),
            ReplyHints::default(),
        );
        // 2000 bytes of arguments and two DDP-eligible items: too big for
        // a Chunked call, so Long, whose Position-Zero chunk makes a third
        // Read segment when reduced.
        let items: Vec<Bytes> = (0..2u8).map(|i| Bytes::from(vec![i; 8192])).collect();
        send(
            &mut pair,
            5,
            call(5, 3, &filler(2000), &items),
            ReplyHints::default(),
        );
        pair.serve(|xid, m| {
            let mut d = Decoder::with_ddp(m);
            d.skip(40).unwrap();
            if xid == 5 {
                d.skip(2000).unwrap();
            }
            if xid == 3 {
                let mut pe = PayloadEncoder::new();
                let mut e = pe.encoder();
                for w in [xid, 1, 0, 0, 0, 0] {
                    e.put_u32(w);
                }
                e.put_opaque_ddp(Bytes::from(vec![3u8; 8192]));
                e.put_opaque_ddp(Bytes::from(vec![3u8; 8192]));
                return pe.finish();
            }
            let mut n = 0u32;
            while let Ok(item) = d.get_opaque_ddp(1 << 20) {
                n += item.len() as u32;
            }
            reply(xid, &n.to_be_bytes())
        });
        let outcomes: Vec<Event> = (2..=5).map(|x| take_outcome(&mut pair, x)).collect();
        (pair, outcomes)
    };

    // Without the feature, the server's decoder refuses the first two.
    let mut plain = o.clone();
    plain.client.transport_properties = false;
    let (_, out) = run(plain);
    for e in [&out[0], &out[1], &out[3]] {
        assert!(
            matches!(e, Event::CallFailed { error: CallError::RdmaError { code }, .. } if *code == ErrCode::BADHEADER),
            "{e:?}"
        );
    }

    // With it, the client stays within the limits and everything works.
    let (pair, out) = run(o);
    let Event::Reply {
        call_form, message, ..
    } = &out[0]
    else {
        panic!("{:?}", out[0])
    };
    assert_eq!(*call_form, MessageForm::Long, "unreduced: one Read segment");
    assert_eq!(&message.inline()[24..28], &(3 * 8192u32).to_be_bytes());
    let Event::Reply {
        reply_form,
        message,
        ..
    } = &out[1]
    else {
        panic!("{:?}", out[1])
    };
    assert_eq!(
        *reply_form,
        MessageForm::Long,
        "no Write chunks: the Reply chunk"
    );
    assert_eq!(message.stream_len(), 24 + 2 * (4 + 8192));
    assert!(matches!(
        &out[2],
        Event::CallFailed {
            error: CallError::TooLarge(SizeFault::PeerMaxMessage),
            ..
        }
    ));
    let Event::Reply {
        call_form, message, ..
    } = &out[3]
    else {
        panic!("{:?}", out[3])
    };
    assert_eq!(*call_form, MessageForm::Long, "unreduced: one Read segment");
    assert_eq!(&message.inline()[24..28], &(2 * 8192u32).to_be_bytes());
    assert_eq!(pair.server.engine.stats().bad_messages, 0);
    pair.assert_no_leaks();
}

// ----- the registry -----------------------------------------------------------

/// A second feature, to show the registry carries several: answers a
/// CALL with its own bytes reversed.
#[derive(Debug, Default)]
struct Mirror {
    heard: Option<Bytes>,
}

const MIRROR: OptionType = OptionType(0x8000_4d52);

impl OptionalFeature for Mirror {
    fn opttype(&self) -> OptionType {
        MIRROR
    }
    fn name(&self) -> &'static str {
        "mirror"
    }
    fn offer(&mut self, _: &FeatureContext) -> Option<Bytes> {
        Some(Bytes::from_static(b"abc"))
    }
    fn on_call(
        &mut self,
        _: &FeatureContext,
        info: &Bytes,
        _: &Bytes,
    ) -> Result<Bytes, FeatureError> {
        self.heard = Some(info.clone());
        Ok(info.iter().rev().copied().collect::<Vec<u8>>().into())
    }
    fn on_reply(
        &mut self,
        _: &FeatureContext,
        info: &Bytes,
        _: &Bytes,
    ) -> Result<(), FeatureError> {
        if &info[..] == b"cba" {
            self.heard = Some(info.clone());
            Ok(())
        } else {
            Err(FeatureError::Malformed("not our bytes reversed"))
        }
    }
    fn adjustments(&self) -> Adjustments {
        Adjustments::default()
    }
}

#[test]
fn registry_carries_several_features_and_refuses_unknown_types() {
    let mut pair = Pair::new();
    pair.client
        .engine
        .register_feature(Box::new(Mirror::default()))
        .unwrap();
    pair.server
        .engine
        .register_feature(Box::new(Mirror::default()))
        .unwrap();
    assert_eq!(
        pair.client
            .engine
            .register_feature(Box::new(TransportPropertiesFeature::new())),
        Err(ApiError::FeatureRegistered(TRANSPORT_PROPERTIES.0))
    );
    send(&mut pair, 1, call(1, 0, &[], &[]), ReplyHints::default());
    serve_empty(&mut pair);
    forms(&mut pair, 1);
    for e in [&pair.client.engine, &pair.server.engine] {
        let info = e.info();
        assert_eq!(info.features.len(), 2);
        assert!(info
            .features
            .iter()
            .all(|f| f.state == FeatureState::Active));
    }
    let offers = optionals(&pair.client.sent);
    assert_eq!(offers.len(), 2);
    // Distinct XIDs from the call XID space.
    assert_ne!(&offers[0][0..4], &offers[1][0..4]);

    // An unknown type is answered RDMA2_ERR_INVAL_OPTION by the decoder
    // (§3.1) when it is a CALL, and reaches no feature. A REPLY is never
    // answered (spec note W14: an error answers a call, §4.2.2).
    for (xid, dir) in [(0x77u32, Direction::Call), (0x78, Direction::Reply)] {
        let before = pair.server.sent.len();
        pair.inject(false, &optional_msg(xid, 3, dir, 77, b"x", &[]));
        pair.drive();
        let sent: Vec<String> = pair.server.sent[before..]
            .iter()
            .map(|(b, _)| hex(b))
            .collect();
        let want = match dir {
            Direction::Call => vec![format!("{xid:08x} 00000002 00000040 00000004 00000003")],
            Direction::Reply => vec![],
        };
        assert_eq!(sent, want);
    }
    assert_eq!(pair.server.engine.stats().options_received, 2);

    // A feature only the client has: the server refuses it; the other
    // feature is unaffected.
    let mut pair = Pair::new();
    pair.client
        .engine
        .register_feature(Box::new(Mirror::default()))
        .unwrap();
    send(&mut pair, 1, call(1, 0, &[], &[]), ReplyHints::default());
    serve_empty(&mut pair);
    forms(&mut pair, 1);
    let info = pair.client.engine.info();
    assert_eq!(
        info.feature(MIRROR).unwrap().state,
        FeatureState::Unsupported
    );
    assert_eq!(
        info.feature(TRANSPORT_PROPERTIES).unwrap().state,
        FeatureState::Active
    );
    assert_eq!(info.calls_in_flight, 0);
}

#[test]
fn a_client_answers_an_offer_from_the_server_too() {
    let mut pair = Pair::new();
    send(&mut pair, 1, call(1, 0, &[], &[]), ReplyHints::default());
    serve_empty(&mut pair);
    forms(&mut pair, 1);
    let info = good_props().to_optinfo();
    pair.inject(
        true,
        &optional_msg(
            0x4444,
            2,
            Direction::Call,
            TRANSPORT_PROPERTIES.0,
            &info,
            &[],
        ),
    );
    pair.drive();
    let last = pair.client.sent.last().unwrap().0.clone();
    assert!(is_optional(&last));
    assert_eq!(&last[0..4], &0x4444u32.to_be_bytes());
    assert_eq!(&last[16..20], &[0, 0, 0, 1]);
}

#[test]
fn a_client_with_the_feature_off_neither_sends_nor_accepts_it() {
    let mut o = PairOptions::default();
    o.client.transport_properties = false;
    let mut pair = Pair::with(o);
    send(&mut pair, 1, call(1, 0, &[], &[]), ReplyHints::default());
    serve_empty(&mut pair);
    forms(&mut pair, 1);
    assert!(optionals(&pair.client.sent).is_empty());
    assert_eq!(tp_state(&pair.server.engine), FeatureState::Idle);
    let info = good_props().to_optinfo();
    pair.inject(
        true,
        &optional_msg(
            0x4444,
            2,
            Direction::Call,
            TRANSPORT_PROPERTIES.0,
            &info,
            &[],
        ),
    );
    pair.drive();
    let last = pair.client.sent.last().unwrap().0.clone();
    assert_eq!(&last[0..4], &0x4444u32.to_be_bytes());
    assert_eq!(&last[12..20], &[0, 0, 0, 4, 0, 0, 0, 3]);
}

#[test]
fn config_rejects_zero_limits() {
    let mut c = EngineConfig::client();
    c.limits.max_read_segments = 0;
    assert!(c
        .validate()
        .unwrap_err()
        .to_string()
        .contains("max_read_segments"));
    let mut c = EngineConfig::client();
    c.limits.max_segments_per_chunk = 0;
    assert!(c.validate().is_err());
}

proptest! {
    #[test]
    fn properties_round_trip(
        recv in 4096u32.., send in 1024u32.., reads in 1u32.., writes: u32, segs in 1u32.., max: u32,
    ) {
        let p = TransportProperties {
            recv_size: recv,
            send_size: send,
            max_read_segments: reads,
            max_write_chunks: writes,
            max_segments_per_chunk: segs,
            max_message: max,
        };
        prop_assert_eq!(TransportProperties::from_optinfo(&p.to_optinfo()), Ok(p));
    }

    #[test]
    fn arbitrary_optinfo_never_panics_and_is_checked(info in proptest::collection::vec(any::<u8>(), 0..64)) {
        if let Ok(p) = TransportProperties::from_optinfo(&info) {
            prop_assert_eq!(info.len(), 24);
            prop_assert_eq!(&p.to_optinfo()[..], &info[..]);
            prop_assert!(p.check().is_ok());
        }
    }

    /// Whatever a peer puts in an offer, the server answers it (REPLY or
    /// RDMA2_ERROR with the same XID) and survives.
    #[test]
    fn any_offer_is_answered(info in proptest::collection::vec(any::<u8>(), 0..40), xid: u32) {
        let mut pair = Pair::new();
        pair.inject(false, &optional_msg(xid, 1, Direction::Call, TRANSPORT_PROPERTIES.0, &info, &[]));
        pair.drive();
        let last = pair.server.sent.last().unwrap().0.clone();
        prop_assert_eq!(&last[0..8], &[&xid.to_be_bytes()[..], &[0, 0, 0, 2]].concat()[..]);
        prop_assert!(pair.server.engine.error().is_none());
    }
}

// ----- the specification document ---------------------------------------------

/// The draft's extraction script (§4), applied to `text`:
/// `grep '^ *///' | sed 's?^ /// ??' | sed 's?^ *///$??'`.
fn extract_xdr(text: &str) -> String {
    text.lines()
        .filter(|l| l.trim_start().starts_with("///"))
        .map(|l| {
            let l = l.strip_prefix(" /// ").unwrap_or(l);
            if l.trim_start() == "///" {
                ""
            } else {
                l
            }
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn docs_xdr_matches_the_code() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/v2-transport-properties.md"
    );
    let doc = std::fs::read_to_string(path).expect("docs/v2-transport-properties.md");
    let xdr = extract_xdr(&doc);
    assert!(
        !xdr.contains("///"),
        "every XDR line starts with exactly ' /// ': {xdr}"
    );
    assert!(xdr.contains(&format!(
        "const RPCRDMA2_OPT_XPRT_PROPS = {:#010x};",
        TRANSPORT_PROPERTIES.0
    )));
    let body = xdr
        .split("struct rpcrdma2_xprt_props {")
        .nth(1)
        .and_then(|s| s.split("};").next())
        .expect("the struct");
    let fields: Vec<&str> = body
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(
        fields,
        [
            "uint32 rdma_xp_recv_size;",
            "uint32 rdma_xp_send_size;",
            "uint32 rdma_xp_max_read_segs;",
            "uint32 rdma_xp_max_write_chunks;",
            "uint32 rdma_xp_max_chunk_segs;",
            "uint32 rdma_xp_max_message;",
        ]
    );
    assert_eq!(fields.len() * 4, rpcrdma_engine::TRANSPORT_PROPERTIES_LEN);
    // The order of the fields is the order of the encoding.
    let p = TransportProperties {
        recv_size: 1,
        send_size: 2,
        max_read_segments: 3,
        max_write_chunks: 4,
        max_segments_per_chunk: 5,
        max_message: 6,
    };
    assert_eq!(
        hex(&p.to_optinfo()),
        "00000001 00000002 00000003 00000004 00000005 00000006"
    );
    // The golden vectors printed in the document are the ones pinned here.
    let flat: String = doc.chars().filter(|c| !c.is_whitespace()).collect();
    for v in [GOLDEN_OFFER, GOLDEN_ANSWER, GOLDEN_INVAL_OPTION] {
        assert!(
            flat.contains(&v.replace(' ', "")),
            "{v} not in the document"
        );
    }
}
