//! The seven deviations of issue 35 (D1–D7), each pinned as bytes on the
//! wire through the two-engine [`Pair`] harness (or one engine fed
//! hand-made messages), with the other scenarios of the same kind found
//! while fixing them. The readings are recorded in `docs/spec-notes.md`
//! (W14, E23–E29).

mod common;

use rpcrdma_engine::testing::{Pair, PairOptions};
use rpcrdma_engine::{CallError, EngineError, Event, FeatureState, ReplyHints, VersionPolicy};
use rpcrdma_verbs::QpCaps;
use rpcrdma_wire::{ErrCode, VersionRange};

use common::{call, reply, words};

fn hex(s: &str) -> Vec<u8> {
    let clean: String = s.split_whitespace().collect();
    (0..clean.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&clean[i..i + 2], 16).expect("test hex"))
        .collect()
}

/// Octets as space-separated big-endian words (the form the issue uses).
fn words_of(b: &[u8]) -> String {
    b.chunks(4)
        .map(|w| w.iter().map(|x| format!("{x:02x}")).collect::<String>())
        .collect::<Vec<_>>()
        .join(" ")
}

/// What one end sent after its first `from` Sends, as words.
fn sent_since(end: &rpcrdma_engine::testing::End, from: usize) -> Vec<String> {
    end.sent[from..].iter().map(|(b, _)| words_of(b)).collect()
}

/// The outcome event of one of the client's calls.
fn outcome(pair: &mut Pair, want: u32) -> Option<Event> {
    pair.client.take_event(
        |e| matches!(e, Event::Reply { xid, .. } | Event::CallFailed { xid, .. } if *xid == want),
    )
}

/// One round trip, so that the version is settled and the client holds the
/// server's grant.
fn settle(pair: &mut Pair, xid: u32) {
    pair.send_call(xid, call(xid, 0, &[], None), ReplyHints::default());
    pair.serve(|x, _| reply(x, &[], None));
    assert!(matches!(outcome(pair, xid), Some(Event::Reply { .. })));
}

/// A pair whose server may call back (both ends enabled), settled.
fn bidirectional(o: PairOptions) -> Pair {
    let mut pair = Pair::with(o);
    pair.client.engine.enable_backchannel().unwrap();
    settle(&mut pair, 1);
    pair.server.engine.peer_backchannel_ready(pair.now).unwrap();
    pair
}

// ----- D1 ------------------------------------------------------------------

/// D1: `ERR_VERS` in answer to a version we do not speak carries the
/// failing message's own `rdma_vers` (RFC 8166 §5.5, our -04 text: "The
/// rdma_vers field MUST contain the same version that was in the rdma_vers
/// field in the failing request"). The issue's bytes: version 3 used to be
/// answered with version 2; version 0 too.
#[test]
fn d1_err_vers_carries_the_failing_messages_version() {
    for vers in [3u32, 0, 7, 0xffff_ffff] {
        let mut pair = Pair::new();
        pair.inject(
            false,
            &hex(&format!(
                "00000009 {vers:08x} 00000020 00000000 00000000 00000000 00000000 00000009 00000000"
            )),
        );
        pair.drive();
        assert_eq!(
            sent_since(&pair.server, 0),
            vec![format!(
                "00000009 {vers:08x} 00000040 00000004 00000001 00000001 00000002"
            )],
            "version {vers}"
        );
        assert!(pair.server.engine.error().is_none());
    }
    // A Version One-only receiver: version 2 is answered in version 2
    // (spec note W1, what Linux's svcrdma sends, K1), its range 1..1.
    let mut o = PairOptions::v1();
    o.server.versions = VersionRange::V1_ONLY;
    let mut pair = Pair::with(o);
    pair.inject(
        false,
        &hex("0000000a 00000002 00000020 00000000 00000000 00000000 00000000 00000000 0000000a 00000000"),
    );
    pair.drive();
    assert_eq!(
        sent_since(&pair.server, 0),
        vec!["0000000a 00000002 00000040 00000004 00000001 00000001 00000001".to_owned()]
    );
}

/// D1 on the client side: a client answers a message of an unknown
/// version with the same words (the reply names the failing message, not
/// the connection's version), with its reverse-direction grant as the
/// credit value.
#[test]
fn d1_a_client_echoes_the_version_too() {
    let mut pair = Pair::new();
    settle(&mut pair, 1);
    let before = pair.client.sent.len();
    pair.inject(
        true,
        &hex("0000000b 00000005 00000001 00000000 00000000 00000000 00000000 0000000b 00000001"),
    );
    pair.drive();
    assert_eq!(
        sent_since(&pair.client, before),
        vec!["0000000b 00000005 00000008 00000004 00000001 00000001 00000002".to_owned()]
    );
}

// ----- D2 ------------------------------------------------------------------

/// A Version Two `RDMA2_MSG` REPLY with XID `xid` whose RPC XID differs
/// (`RDMA2_ERR_BAD_HEADER` if it were a call).
fn bad_v2_reply(xid: u32) -> Vec<u8> {
    words(&[xid, 2, 64, 0, 1, 0, 0, 0, xid + 1, 1, 0, 0, 0, 0, 0])
}

/// D2, the scenario: a malformed Version Two reply with XID 5
/// reaches the client while the server has its own reverse-direction call
/// 5 outstanding. The client used to answer `00000005 00000002 00000001
/// 00000004 00000002`, which ended the server's reverse call 5 with
/// `ERR_BADHEADER`. Now nothing is sent: the reverse call is still
/// answered normally, and the client's own call 5 (which the bad reply
/// answered) fails at once with its credit back, instead of timing out.
#[test]
fn d2_a_malformed_reply_is_never_answered() {
    let mut pair = bidirectional(PairOptions::default());
    // The client's call 5: the server never sees it.
    pair.send_call(5, call(5, 0, &[], None), ReplyHints::default());
    pair.drop_next_send(true);
    // The server's reverse call 5, received by the client, not answered yet.
    pair.server
        .engine
        .send_call(pair.now, 5, call(5, 0, &[], None), ReplyHints::default())
        .unwrap();
    pair.drive();
    let Some(Event::Call { token, .. }) = pair
        .client
        .take_event(|e| matches!(e, Event::Call { xid: 5, .. }))
    else {
        panic!("the reverse call did not arrive")
    };
    let before = pair.client.sent.len();
    pair.inject(true, &bad_v2_reply(5));
    pair.drive();
    assert_eq!(sent_since(&pair.client, before), Vec::<String>::new());
    assert!(matches!(
        outcome(&mut pair, 5),
        Some(Event::CallFailed {
            error: CallError::BadReply(_),
            ..
        })
    ));
    assert_eq!(pair.client.engine.info().calls_in_flight, 0);
    // The server's reverse call 5 was not touched: answered, it completes.
    assert!(pair
        .server
        .events
        .iter()
        .all(|e| !matches!(e, Event::CallFailed { .. })));
    pair.client
        .engine
        .send_reply(token, reply(5, &[], None))
        .unwrap();
    pair.drive();
    assert!(pair
        .server
        .take_event(|e| matches!(e, Event::Reply { xid: 5, .. }))
        .is_some());
    assert!(pair.client.engine.error().is_none() && pair.server.engine.error().is_none());
    pair.assert_no_leaks();
}

/// D2 on the responder side: a malformed reverse-direction reply reaching
/// the server is not answered either (the client's forward call with the
/// same XID is not touched) and ends the server's reverse call.
#[test]
fn d2_a_malformed_reverse_reply_is_never_answered() {
    let mut pair = bidirectional(PairOptions::default());
    // The client's forward call 6, received by the server, not answered.
    pair.send_call(6, call(6, 0, &[], None), ReplyHints::default());
    pair.drive();
    let Some(Event::Call { token, .. }) = pair
        .server
        .take_event(|e| matches!(e, Event::Call { xid: 6, .. }))
    else {
        panic!("the forward call did not arrive")
    };
    // The server's reverse call 6: the client never sees it.
    pair.server
        .engine
        .send_call(pair.now, 6, call(6, 0, &[], None), ReplyHints::default())
        .unwrap();
    pair.drop_next_send(false);
    pair.drive();
    let before = pair.server.sent.len();
    pair.inject(false, &bad_v2_reply(6));
    pair.drive();
    assert_eq!(sent_since(&pair.server, before), Vec::<String>::new());
    assert!(matches!(
        pair.server
            .take_event(|e| matches!(e, Event::CallFailed { xid: 6, .. })),
        Some(Event::CallFailed {
            error: CallError::BadReply(_),
            ..
        })
    ));
    // The client's forward call 6 is answered normally.
    pair.server
        .engine
        .send_reply(token, reply(6, &[], None))
        .unwrap();
    pair.drive();
    assert!(matches!(outcome(&mut pair, 6), Some(Event::Reply { .. })));
    pair.assert_no_leaks();
}

/// D2, the Version One reading (spec note W14): where the bytes say the
/// message is a REPLY — an `RDMA_MSG` whose header decodes and whose RPC
/// `msg_type` is REPLY, an `RDMA_NOMSG` carrying only a Reply chunk — RFC
/// 8166 §5.5 applies ("a Version One requester MUST silently discard the
/// message"): nothing is sent and the call it names fails. Where they do
/// not (the chunk lists themselves do not decode), the direction is
/// unknown and the -04 text's "an RDMA_ERROR procedure MUST be generated"
/// stands: `ERR_BADHEADER`.
#[test]
fn d2_version_one_replies_are_discarded_where_the_bytes_say_reply() {
    let mut pair = Pair::with(PairOptions::v1());
    settle(&mut pair, 1);
    // An RDMA_MSG reply to call 7 whose RPC XID is 8: discarded, call 7 fails.
    pair.send_call(7, call(7, 0, &[], None), ReplyHints::default());
    pair.drop_next_send(true);
    pair.drive();
    let before = pair.client.sent.len();
    pair.inject(true, &words(&[7, 1, 64, 0, 0, 0, 0, 8, 1, 0, 0, 0, 0, 0]));
    // An RDMA_NOMSG with a Reply chunk and bytes after its header: a
    // reply (it carries its message in the Reply chunk), discarded.
    pair.inject(true, &words(&[9, 1, 64, 1, 0, 0, 1, 1, 1, 100, 0, 0, 0, 0]));
    pair.drive();
    assert_eq!(sent_since(&pair.client, before), Vec::<String>::new());
    assert!(matches!(
        outcome(&mut pair, 7),
        Some(Event::CallFailed {
            error: CallError::BadReply(_),
            ..
        })
    ));
    // A Write list whose present-flag is 2: the header does not decode,
    // nothing says its direction: ERR_BADHEADER.
    pair.inject(true, &words(&[10, 1, 64, 0, 0, 2, 0, 10, 1]));
    pair.drive();
    assert_eq!(
        sent_since(&pair.client, before),
        vec!["0000000a 00000001 00000008 00000004 00000002".to_owned()]
    );
    assert!(pair.client.engine.error().is_none());
    pair.assert_no_leaks();
}

/// Of the same kind: a malformed answer to the Version Two probe used to
/// be answered with an error and leave the client negotiating until its
/// timeout failed the connection. It is the responder's reply, in Version
/// Two: the version settles on Two at once and the call fails.
#[test]
fn d2_a_malformed_reply_to_the_probe_settles_at_once() {
    let mut pair = Pair::new();
    pair.send_call(3, call(3, 0, &[], None), ReplyHints::default());
    pair.drop_next_send(true);
    pair.drive();
    pair.inject(true, &bad_v2_reply(3));
    pair.drive();
    assert_eq!(pair.client.engine.stats().rdma_errors_sent, 0);
    assert!(matches!(
        outcome(&mut pair, 3),
        Some(Event::CallFailed {
            error: CallError::BadReply(_),
            ..
        })
    ));
    assert_eq!(pair.client.engine.info().version, Some(2));
    assert_eq!(
        pair.client.engine.poll_timeout(),
        None,
        "no negotiation timer"
    );
    pair.advance(std::time::Duration::from_secs(60));
    assert!(pair.client.engine.error().is_none());
    settle(&mut pair, 4);
}

/// Of the same kind: an `RDMA2_OPTIONAL` REPLY of a type we do not know
/// is not answered `RDMA2_ERR_INVAL_OPTION` (draft-cel-01 §3.1 is read for
/// CALLs: an error is always a REPLY, §4.2.2, so it can only answer a
/// call); a CALL still is. A malformed REPLY to one of our offers drops
/// the feature without an answer (X4), its credit back.
#[test]
fn d2_optional_replies_are_never_answered() {
    let mut pair = Pair::new();
    settle(&mut pair, 1);
    let before = pair.server.sent.len();
    // opttype 77, REPLY, then CALL.
    pair.inject(false, &words(&[0x78, 2, 1, 5, 1, 77, 0]));
    pair.inject(false, &words(&[0x77, 2, 1, 5, 0, 77, 0]));
    pair.drive();
    assert_eq!(
        sent_since(&pair.server, before),
        vec!["00000077 00000002 00000040 00000004 00000003".to_owned()]
    );

    // The client's offer answered by a REPLY whose rdma_optinfo is cut
    // short: no answer, the feature is dropped.
    let mut pair = Pair::new();
    pair.send_call(1, call(1, 0, &[], None), ReplyHints::default());
    pair.drive();
    let Some(Event::Call { token, .. }) =
        pair.server.take_event(|e| matches!(e, Event::Call { .. }))
    else {
        panic!("no call")
    };
    // The offer follows the settling reply; take it before the server does.
    pair.hold_sends(true, true);
    pair.server
        .engine
        .send_reply(token, reply(1, &[], None))
        .unwrap();
    pair.drive();
    let offer = pair.drop_next_send(true).expect("an offer");
    pair.hold_sends(true, false);
    let rpcrdma_verbs::SendOp::Send { sges, .. } = &offer.op else {
        panic!("not a Send")
    };
    let rpcrdma_verbs::Sge::Bytes(head) = &sges[0] else {
        panic!("header not inline")
    };
    let (xid, opttype) = (&head[0..4], &head[20..24]);
    let xid = u32::from_be_bytes(xid.try_into().unwrap());
    let opttype = u32::from_be_bytes(opttype.try_into().unwrap());
    let before = pair.client.sent.len();
    pair.inject(true, &words(&[xid, 2, 64, 5, 1, opttype, 40, 0]));
    pair.drive();
    assert_eq!(sent_since(&pair.client, before), Vec::<String>::new());
    let info = pair.client.engine.info();
    assert!(info
        .features
        .iter()
        .any(|f| matches!(f.state, FeatureState::Malformed(_))));
    assert_eq!(info.calls_in_flight, 0, "the offer's credit came back");
}

// ----- D3 ------------------------------------------------------------------

/// D3: a reverse-direction call whose largest reply is not stated (an
/// Upper Layer without `max_results`, as NFSv4.1 callbacks are made) goes
/// inline with three empty chunk lists, as the Linux client requires of a
/// reverse call (`rpcrdma_is_bcall`), and expects its reply inline: it
/// used to offer a Reply chunk of `max_message` (16 MiB). A reply too
/// large for the back channel's inline threshold then ends the call at
/// once (`ERR_BADHEADER`, E4), not by a timeout.
#[test]
fn d3_a_reverse_call_without_a_stated_maximum_goes_inline() {
    for versions in [VersionPolicy::V1, VersionPolicy::Negotiate] {
        let mut o = PairOptions::default();
        o.client.client_version = versions;
        let mut pair = bidirectional(o);
        let vers = pair.server.engine.info().version.unwrap();
        let before = pair.server.sent.len();
        pair.server
            .engine
            .send_call(
                pair.now,
                0x40,
                call(0x40, 1, &[], None),
                ReplyHints::default(),
            )
            .unwrap();
        pair.drive();
        let sent = sent_since(&pair.server, before);
        assert_eq!(sent.len(), 1);
        let head = if vers == 1 {
            "00000040 00000001 00000008 00000000 00000000 00000000 00000000".to_owned()
        } else {
            "00000040 00000002 00000008 00000000 00000000 00000000 00000000 00000000".to_owned()
        };
        assert!(
            sent[0].starts_with(&format!("{head} 00000040 00000000")),
            "v{vers}: {}",
            sent[0]
        );
        assert_eq!(pair.server.engine.stats().registrations, 0, "v{vers}");
        // Answered within the threshold: an inline reply.
        let Some(Event::Call { token, .. }) = pair
            .client
            .take_event(|e| matches!(e, Event::Call { xid: 0x40, .. }))
        else {
            panic!("v{vers}: the reverse call did not arrive")
        };
        pair.client
            .engine
            .send_reply(token, reply(0x40, &[7; 100], None))
            .unwrap();
        pair.drive();
        assert!(pair
            .server
            .take_event(|e| matches!(e, Event::Reply { xid: 0x40, .. }))
            .is_some());
        // A reply larger than the inline threshold cannot come back: the
        // call fails at once.
        pair.server
            .engine
            .send_call(
                pair.now,
                0x41,
                call(0x41, 1, &[], None),
                ReplyHints::default(),
            )
            .unwrap();
        pair.drive();
        let Some(Event::Call { token, .. }) = pair
            .client
            .take_event(|e| matches!(e, Event::Call { xid: 0x41, .. }))
        else {
            panic!("v{vers}: the second reverse call did not arrive")
        };
        pair.client
            .engine
            .send_reply(token, reply(0x41, &[7; 8000], None))
            .unwrap();
        pair.drive();
        assert!(matches!(
            pair.server
                .take_event(|e| matches!(e, Event::CallFailed { xid: 0x41, .. })),
            Some(Event::CallFailed {
                error: CallError::RdmaError {
                    code: ErrCode::BADHEADER
                },
                ..
            })
        ));
        pair.assert_no_leaks();
    }
}

/// D3's limit: a reverse-direction call that states its largest reply
/// (the Upper Layer's back-channel limit, NFSv4.1's `ca_maxresponsesize`)
/// gets what it states, a Reply chunk if that exceeds the threshold
/// (spec note B5).
#[test]
fn d3_a_stated_maximum_still_gets_its_reply_chunk() {
    let mut pair = bidirectional(PairOptions::default());
    pair.server
        .engine
        .send_call(
            pair.now,
            0x42,
            call(0x42, 1, &[], None),
            ReplyHints::at_most(20_000),
        )
        .unwrap();
    pair.drive();
    let Some(Event::Call { token, .. }) = pair
        .client
        .take_event(|e| matches!(e, Event::Call { xid: 0x42, .. }))
    else {
        panic!("the reverse call did not arrive")
    };
    pair.client
        .engine
        .send_reply(token, reply(0x42, &[7; 8000], None))
        .unwrap();
    pair.drive();
    assert!(pair
        .server
        .take_event(|e| matches!(e, Event::Reply { xid: 0x42, .. }))
        .is_some());
    assert_eq!(pair.server.engine.stats().replies_long, 1);
    pair.assert_no_leaks();
}

// ----- D4 ------------------------------------------------------------------

/// Intercepts the client's probe (the server never sees it) and answers it
/// with `RDMA2_ERROR` of `err`.
fn refuse_probe(pair: &mut Pair, xid: u32, err: u32) {
    pair.send_call(xid, call(xid, 0, &[], None), ReplyHints::default());
    let probe = pair.drop_next_send(true).expect("the probe");
    assert!(matches!(probe.op, rpcrdma_verbs::SendOp::Send { .. }));
    pair.inject(true, &words(&[xid, 2, 64, 4, err]));
}

/// D4: an `RDMA2_ERR_BAD_HEADER` in answer to the Version Two probe ends
/// negotiation at once: a negotiating client that speaks Version One
/// sends the same call again (same XID) in Version One, with no timer
/// left running. It used to fail the call and time out the connection 5 s
/// later (and the transport then took the responder for Version One only).
#[test]
fn d4_bad_header_to_the_probe_falls_back_at_once() {
    let mut pair = Pair::new();
    refuse_probe(&mut pair, 0x21, 2);
    assert_eq!(pair.client.engine.poll_timeout(), None);
    assert_eq!(pair.client.engine.stats().rdma_errors_sent, 0);
    assert!(matches!(
        pair.client
            .take_event(|e| matches!(e, Event::Negotiated { .. })),
        Some(Event::Negotiated {
            version: 1,
            fell_back: true,
            cause: Some(ErrCode::BADHEADER)
        })
    ));
    // The retry, in Version One, byte for byte.
    pair.step();
    let retry = &pair.client.sent[0].0;
    assert_eq!(
        words_of(&retry[..16]),
        "00000021 00000001 00000078 00000000"
    );
    pair.serve(|x, _| reply(x, &[], None));
    assert!(matches!(
        outcome(&mut pair, 0x21),
        Some(Event::Reply { .. })
    ));
    pair.advance(std::time::Duration::from_secs(60));
    assert!(pair.client.engine.error().is_none());
    assert_eq!(pair.client.engine.info().version, Some(1));
    pair.assert_no_leaks();
}

/// D4 for a client that speaks only Version Two: the error fails the call
/// at once and the version is settled; later calls go on the connection.
#[test]
fn d4_bad_header_to_a_version_two_only_client_fails_the_call_at_once() {
    let mut o = PairOptions::default();
    o.client.client_version = VersionPolicy::V2;
    let mut pair = Pair::with(o);
    refuse_probe(&mut pair, 0x22, 2);
    assert!(matches!(
        outcome(&mut pair, 0x22),
        Some(Event::CallFailed {
            error: CallError::RdmaError {
                code: ErrCode::BADHEADER
            },
            ..
        })
    ));
    assert_eq!(pair.client.engine.info().version, Some(2));
    // (Version Two settled: the transport properties offer goes out and
    // is answered; then no timer is left.)
    pair.drive();
    assert_eq!(pair.client.engine.poll_timeout(), None);
    pair.advance(std::time::Duration::from_secs(60));
    assert!(pair.client.engine.error().is_none());
    settle(&mut pair, 0x23);
}

/// Of the same kind: an `ERR_VERS` answering a probe the upper layer had
/// already released (its RPC timed out first) still settles the version:
/// the next call goes in Version One instead of the connection timing out.
#[test]
fn d4_err_vers_to_a_released_probe_still_settles() {
    let mut pair = Pair::new();
    pair.send_call(0x24, call(0x24, 0, &[], None), ReplyHints::default());
    pair.drop_next_send(true).expect("the probe");
    pair.client.engine.release(0x24);
    pair.inject(true, &words(&[0x24, 2, 64, 4, 1, 1, 1]));
    assert_eq!(pair.client.engine.info().version, Some(1));
    assert_eq!(pair.client.engine.poll_timeout(), None);
    assert_eq!(outcome(&mut pair, 0x24).map(|_| ()), None);
    settle(&mut pair, 0x25);
    pair.advance(std::time::Duration::from_secs(60));
    assert!(pair.client.engine.error().is_none());
}

// ----- D5 ------------------------------------------------------------------

/// A Version One call whose RPC XID differs from `rdma_xid`: `ERR_BADHEADER`.
fn bad_v1_call(xid: u32) -> Vec<u8> {
    words(&[
        xid,
        1,
        8,
        0,
        0,
        0,
        0,
        xid + 1,
        0,
        2,
        0x2000_0099,
        1,
        0,
        0,
        0,
        0,
        0,
    ])
}

/// D5: error answers are owed: while our send queue is backed up (the
/// peer drains nothing) every bad message still gets its `ERR_BADHEADER`,
/// where they used to be dropped past the overload mark.
#[test]
fn d5_owed_errors_are_sent_under_backlog() {
    let mut o = PairOptions::v1().grant(4);
    o.caps.send_depth = 4;
    let mut pair = Pair::with(o);
    pair.hold_sends(false, true);
    let n = 40u32;
    for x in 0..n {
        pair.inject(false, &bad_v1_call(0x100 + x));
    }
    assert!(pair.server.engine.error().is_none());
    pair.hold_sends(false, false);
    pair.drive();
    let sent = sent_since(&pair.server, 0);
    let want: Vec<String> = (0..n)
        .map(|x| format!("{:08x} 00000001 00000004 00000004 00000002", 0x100 + x))
        .collect();
    assert_eq!(sent, want);
    assert_eq!(pair.server.engine.stats().answers_dropped, 0);
}

/// D5's bound: a peer that keeps sending bad messages while it drains
/// none of our Sends loses the connection once the answers waiting pass
/// the bound (the overload mark plus one per receive posted), instead of
/// growing our backlog for ever or being left unanswered.
#[test]
fn d5_a_peer_flooding_bad_messages_is_cut_off() {
    let mut o = PairOptions::v1().grant(4);
    o.caps.send_depth = 4;
    let mut pair = Pair::with(o);
    pair.hold_sends(false, true);
    for x in 0..200u32 {
        if pair.server.engine.error().is_some() {
            break;
        }
        pair.inject(false, &bad_v1_call(0x200 + x));
    }
    // 4 posted, 16 + 12 for the overload mark, 12 more: 45th answer.
    assert_eq!(
        pair.server.engine.error(),
        Some(&EngineError::AnswerBacklog { limit: 40 })
    );
    assert_eq!(pair.server.engine.stats().rdma_errors_sent, 45);
}

// ----- D6 ------------------------------------------------------------------

/// The RPC `SYSTEM_ERR` reply to `xid` (MSG_ACCEPTED, AUTH_NONE), after a
/// Version One `RDMA_MSG` header with empty lists and grant `grant`.
fn system_err(xid: u32, grant: u32) -> String {
    format!(
        "{xid:08x} 00000001 {grant:08x} 00000000 00000000 00000000 00000000 {xid:08x} 00000001 00000000 00000000 00000000 00000005"
    )
}

/// D6: a resource refusal is answered at the RPC level (`SYSTEM_ERR`), as
/// every call that can never fit is: an `RDMA_NOMSG` call beyond the grant
/// (it used to get `ERR_BADHEADER`; the reply needs only the XID, which
/// the transport header carries) and a call whose Read chunks exceed
/// `max_message` (it used to get `ERR_BADHEADER` too).
#[test]
fn d6_resource_refusals_are_answered_system_err() {
    let mut o = PairOptions::v1().grant(1);
    o.server.max_message = 1 << 20;
    let mut pair = Pair::with(o);
    // One call holds the only credit.
    pair.inject(
        false,
        &[
            words(&[1, 1, 8, 0, 0, 0, 0]),
            call(1, 0, &[], None).flatten().to_vec(),
        ]
        .concat(),
    );
    pair.drive();
    assert!(pair
        .server
        .take_event(|e| matches!(e, Event::Call { xid: 1, .. }))
        .is_some());
    // An RDMA_NOMSG call beyond the grant: a Position-Zero Read chunk.
    pair.inject(false, &words(&[2, 1, 8, 1, 1, 0, 0x77, 100, 0, 0, 0, 0, 0]));
    pair.drive();
    assert_eq!(sent_since(&pair.server, 0), vec![system_err(2, 1)]);
    assert_eq!(pair.server.engine.stats().credit_overruns, 1);

    let mut o = PairOptions::v1();
    o.server.max_message = 1 << 20;
    let mut pair = Pair::with(o);
    // An RDMA_MSG call with a 2 MiB Read chunk at position 40.
    let mut m = words(&[3, 1, 8, 0, 1, 40, 0x77, 2 << 20, 0, 0, 0, 0, 0]);
    m.extend_from_slice(&words(&[3, 0, 2, 0x2000_0099, 1, 0, 0, 0, 0, 0]));
    pair.inject(false, &m);
    pair.drive();
    assert_eq!(sent_since(&pair.server, 0), vec![system_err(3, 64)]);
    assert_eq!(pair.server.engine.stats().calls_refused_too_large, 1);
    assert_eq!(pair.server.engine.stats().rdma_reads, 0);
    assert!(pair.server.engine.error().is_none());
}

/// D6's limit: where the spec names the transport error, it stays: a reply
/// that cannot be returned is `ERR_BADHEADER` (RFC 8166 §5.5.3, E4).
#[test]
fn d6_a_reply_that_cannot_be_returned_is_still_err_badheader() {
    let mut pair = Pair::with(PairOptions::v1());
    settle(&mut pair, 1);
    pair.send_call(2, call(2, 0, &[], None), ReplyHints::at_most(100));
    pair.serve(|x, _| reply(x, &[1; 8000], None));
    assert!(matches!(
        outcome(&mut pair, 2),
        Some(Event::CallFailed {
            error: CallError::RdmaError {
                code: ErrCode::BADHEADER
            },
            ..
        })
    ));
}

// ----- D7 ------------------------------------------------------------------

/// D7: with the default queue sizes the numbers agree: the client asks for
/// as many credits as it posts receives for replies, and keeps the
/// documented 8 for reverse-direction calls (RFC 8167 §4.3.1: those are
/// the minimum, each forward call takes one more). It used to ask for 128
/// while posting 127 receives for replies and granting 1.
#[test]
fn d7_credit_numbers_agree_with_the_default_queue() {
    let mut pair = Pair::new();
    assert_eq!(QpCaps::default().recv_depth, 128);
    assert_eq!(pair.client.engine.info().credits_we_grant, 8);
    assert_eq!(pair.client.posted_receives(), 128);
    pair.send_call(1, call(1, 0, &[], None), ReplyHints::default());
    pair.step();
    // The probe asks for the 120 credits it has receives for.
    assert_eq!(
        words_of(&pair.client.sent[0].0[..16]),
        "00000001 00000002 00000078 00000000"
    );

    // With room for both (the transport's default connector, 136), the
    // client asks for the configured 128 and grants 8.
    let mut o = PairOptions::default();
    o.caps.recv_depth = 136;
    let mut pair = Pair::with(o);
    assert_eq!(pair.client.engine.info().credits_we_grant, 8);
    assert_eq!(pair.client.posted_receives(), 136);
    pair.send_call(1, call(1, 0, &[], None), ReplyHints::default());
    pair.step();
    assert_eq!(
        words_of(&pair.client.sent[0].0[..16]),
        "00000001 00000002 00000080 00000000"
    );
    pair.serve(|x, _| reply(x, &[], None));
    assert!(matches!(outcome(&mut pair, 1), Some(Event::Reply { .. })));

    // The server's reverse-direction calls ask for what it posts
    // receives for (8).
    let mut pair = bidirectional(PairOptions::default());
    let before = pair.server.sent.len();
    pair.server
        .engine
        .send_call(pair.now, 9, call(9, 0, &[], None), ReplyHints::default())
        .unwrap();
    pair.drive();
    assert!(sent_since(&pair.server, before)[0].starts_with("00000009 00000002 00000008 00000000"));
}

/// Of the same kind (draft-cel-01 §5.2: a requester may assume the
/// responder lacks Version Two "if the initial negotiation message is lost
/// or dropped"): a probe left unanswered when the connection ends is
/// reported (`Engine::probe_unanswered`), so that the transport's
/// `VersionMemory` starts the next connection in Version One instead of
/// probing a responder that drops the connection on every probe. Any
/// answer clears it.
#[test]
fn d4_a_probe_lost_with_its_connection_is_reported() {
    let mut pair = Pair::new();
    assert!(!pair.client.engine.probe_unanswered());
    pair.send_call(0x26, call(0x26, 0, &[], None), ReplyHints::default());
    assert!(pair.client.engine.probe_unanswered());
    pair.drop_next_send(true).expect("the probe");
    pair.client
        .engine
        .close(EngineError::Protocol("the peer left"));
    assert!(pair.client.engine.probe_unanswered());

    // Answered (a reply, an ERR_VERS, any other error): not lost.
    let mut pair = Pair::new();
    settle(&mut pair, 1);
    assert!(!pair.client.engine.probe_unanswered());
    for err in [vec![4u32, 1, 1, 1], vec![4, 2]] {
        let mut pair = Pair::new();
        pair.send_call(0x27, call(0x27, 0, &[], None), ReplyHints::default());
        pair.drop_next_send(true).expect("the probe");
        pair.inject(true, &words(&[&[0x27u32, 2, 64][..], &err].concat()));
        assert!(!pair.client.engine.probe_unanswered(), "{err:?}");
    }
    // A Version One client sends no probe.
    let mut pair = Pair::with(PairOptions::v1());
    pair.send_call(0x28, call(0x28, 0, &[], None), ReplyHints::default());
    assert!(!pair.client.engine.probe_unanswered());
}

/// Of the same kind as D6: a Read chunk whose Position lies outside the
/// Payload stream is a mismatch between chunk offsets and the stream, for
/// which §5.5.2 says a responder "SHOULD return a RPC_GARBAGEARGS reply";
/// an `RDMA_NOMSG` (Long) call gets it too — the reply needs only the XID,
/// which the transport header carries — where it used to get
/// `ERR_BADHEADER` (spec note E7).
#[test]
fn d6_a_long_call_with_a_misplaced_chunk_gets_garbage_args() {
    let mut pair = Pair::with(PairOptions::v1());
    // RDMA_NOMSG: a 100-byte Position-Zero chunk, and a chunk at 4096.
    pair.inject(
        false,
        &words(&[
            0x31, 1, 8, 1, 1, 0, 0x77, 100, 0, 0, 1, 4096, 0x78, 16, 0, 0, 0, 0, 0,
        ]),
    );
    pair.drive();
    assert_eq!(
        sent_since(&pair.server, 0),
        vec![
            "00000031 00000001 00000040 00000000 00000000 00000000 00000000 00000031 00000001 00000000 00000000 00000000 00000004"
                .to_owned()
        ]
    );
    assert_eq!(pair.server.engine.stats().rdma_reads, 0);
}

/// W14/E24's limit: a rejected `RDMA2_OPTIONAL` REPLY can answer only an
/// offer. One that names the XID of a forward call (an unknown type here)
/// is dropped without touching that call, which then completes normally.
#[test]
fn d2_a_rejected_optional_reply_never_ends_a_call() {
    let mut pair = Pair::new();
    settle(&mut pair, 1);
    pair.send_call(0x50, call(0x50, 0, &[], None), ReplyHints::default());
    pair.drive();
    let Some(Event::Call { token, .. }) = pair
        .server
        .take_event(|e| matches!(e, Event::Call { xid: 0x50, .. }))
    else {
        panic!("no call")
    };
    let before = pair.client.sent.len();
    pair.inject(true, &words(&[0x50, 2, 64, 5, 1, 77, 0]));
    pair.drive();
    assert_eq!(sent_since(&pair.client, before), Vec::<String>::new());
    assert!(outcome(&mut pair, 0x50).is_none());
    pair.server
        .engine
        .send_reply(token, reply(0x50, &[], None))
        .unwrap();
    pair.drive();
    assert!(matches!(
        outcome(&mut pair, 0x50),
        Some(Event::Reply { .. })
    ));
}
