//! The engine end to end over the in-memory fabric: every message form in
//! both directions, credits, versions, errors, adversarial peers, faults.

mod common;

use bytes::{BufMut, Bytes, BytesMut};
use proptest::prelude::*;
use rpcrdma_engine::testing::{Pair, PairOptions};
use rpcrdma_engine::{
    ApiError, CallError, EngineConfig, EngineError, Event, MessageForm, ReplyHints, VersionPolicy,
};
use rpcrdma_wire::{ErrCode, VersionRange};
use rpcrdma_xdr::{Decoder, Payload, PayloadEncoder};

use common::{call, pattern, reply};

fn take_reply(pair: &mut Pair, want: u32) -> (Payload, MessageForm, MessageForm) {
    match pair.client.take_event(
        |e| matches!(e, Event::Reply { xid, .. } | Event::CallFailed { xid, .. } if *xid == want),
    ) {
        Some(Event::Reply {
            message,
            call_form,
            reply_form,
            ..
        }) => (message, call_form, reply_form),
        other => panic!("expected a reply to {want:#x}, got {other:?}"),
    }
}

fn take_failure(pair: &mut Pair, want: u32) -> CallError {
    match pair.client.take_event(
        |e| matches!(e, Event::Reply { xid, .. } | Event::CallFailed { xid, .. } if *xid == want),
    ) {
        Some(Event::CallFailed { error, .. }) => error,
        other => panic!("expected a failure of {want:#x}, got {other:?}"),
    }
}

fn echo_server(pair: &mut Pair) {
    pair.serve(|xid, m| {
        let mut d = Decoder::with_ddp(m);
        d.skip(40).unwrap();
        let rest = Bytes::copy_from_slice(d.rest());
        reply(xid, &rest, None)
    });
}

#[test]
fn short_call_and_reply() {
    let mut pair = Pair::new();
    let c = call(1, 0, &[], None);
    pair.send_call(1, c, ReplyHints::default());
    echo_server(&mut pair);
    let (m, cf, rf) = take_reply(&mut pair, 1);
    assert_eq!((cf, rf), (MessageForm::Short, MessageForm::Short));
    assert_eq!(m.inline().len(), 24);
    // The first reply settled the version (both ends negotiate to 2).
    assert_eq!(pair.client.engine.info().version, Some(2));
    assert_eq!(pair.client.engine.info().credits_granted, 64);
    pair.assert_no_leaks();
}

#[test]
fn sends_nobody_waits_for_go_unsignaled_and_a_small_send_queue_still_drains() {
    for depth in [1u32, 2, 3, 4, 16, 128] {
        let mut o = PairOptions::default();
        o.caps.send_depth = depth;
        let mut pair = Pair::with(o);
        for xid in 1..=40u32 {
            pair.client
                .engine
                .send_call(
                    pair.now,
                    xid,
                    call(xid, 0, &[], None),
                    ReplyHints::default(),
                )
                .unwrap();
            echo_server(&mut pair);
            take_reply(&mut pair, xid);
        }
        // One Send in every depth / 2 asks for a completion, which tells
        // that the ones before it completed too.
        let every = u64::from((depth / 2).max(1));
        for (name, end) in [("client", &pair.client), ("server", &pair.server)] {
            let unsignaled = end.engine.stats().sends_unsignaled;
            let sends = end.sent.len() as u64;
            assert!(sends >= 40, "{name}: {sends} Sends");
            let signaled = sends - unsignaled;
            assert!(
                signaled >= sends / every && signaled <= sends / every + 2,
                "{name}, depth {depth}: {signaled} of {sends} Sends signaled"
            );
        }
        pair.assert_no_leaks();
    }
}

#[test]
fn a_failed_unsignaled_send_ends_the_connection() {
    let mut pair = Pair::new();
    pair.client
        .engine
        .send_call(pair.now, 1, call(1, 0, &[], None), ReplyHints::default())
        .unwrap();
    echo_server(&mut pair);
    take_reply(&mut pair, 1);
    assert!(pair.client.engine.stats().sends_unsignaled > 0);
    // Verbs reports an unsignaled work request only when it fails: its id
    // is in no table of ours.
    let failed = rpcrdma_verbs::WorkCompletion {
        wr_id: u64::MAX,
        opcode: rpcrdma_verbs::WcOpcode::Send,
        status: rpcrdma_verbs::WcStatus::RemoteAccess,
        byte_len: 0,
        invalidated_rkey: None,
        solicited: false,
        buf: None,
    };
    pair.client.engine.handle_completion(pair.now, failed);
    assert!(matches!(
        pair.client.engine.error(),
        Some(EngineError::WorkRequest { .. })
    ));
    pair.assert_no_leaks();
}

//= rfc5666bis-04#section-4.5.2
//# If DDP-eligible data items are present in a Payload stream, a sender MAY
//# reduce the Payload stream to enable the use of RDMA Read or Write
//# operations to move the reduced data items.
#[test]
fn write_1mib_travels_in_a_read_chunk() {
    let mut pair = Pair::new();
    let data = pattern(1 << 20, 3);
    let c = call(2, 3, &[], Some(data.clone()));
    pair.send_call(2, c, ReplyHints::default());
    pair.serve(|xid, m| {
        let mut d = Decoder::with_ddp(m);
        d.skip(40).unwrap();
        let got = d.get_opaque_ddp(2 << 20).unwrap();
        d.expect_end().unwrap();
        reply(xid, &(got.len() as u32).to_be_bytes(), None)
    });
    let (m, cf, rf) = take_reply(&mut pair, 2);
    assert_eq!((cf, rf), (MessageForm::Chunked, MessageForm::Short));
    assert_eq!(&m.inline()[24..28], &(1u32 << 20).to_be_bytes());
    // Every Send stayed within the 1024-byte threshold.
    assert!(pair.client.sent.iter().all(|(b, _)| b.len() <= 1024));
    assert!(pair.server.engine.stats().rdma_reads >= 1);
    pair.assert_no_leaks();
}

/// The responder pulls the Read chunks of consecutive calls while the
/// earlier calls are still being processed (issue 13): calls that fit
/// the memory limit are admitted at once and their RDMA Reads queue
/// behind each other within ORD, so no call waits for an earlier reply
/// before its data moves. Here nothing is answered until every call's
/// data arrived, with ORD 1 (one Read in flight at a time) and with the
/// default ORD. The calls state their largest reply (64 bytes, inline):
/// one that states none offers a Reply chunk of `max_message`, and that
/// room is reserved at admission too (spec note E21), so only three such
/// calls fit the default 64 MiB at once.
#[test]
fn reads_of_consecutive_calls_are_pipelined() {
    for ord in [1u16, 16] {
        let mut o = PairOptions::default();
        o.caps.ord = ord;
        o.caps.ird = ord;
        let mut pair = Pair::with(o);
        // One round trip first: the client has the server's credit grant
        // (it starts with one credit).
        pair.send_call(100, call(100, 0, &[], None), ReplyHints::default());
        pair.serve(|xid, _| reply(xid, &[], None));
        take_reply(&mut pair, 100);
        let n = 4u32;
        assert!(pair.client.engine.info().credits_granted >= n);
        for xid in 1..=n {
            let c = call(xid, 3, &[], Some(pattern(64 << 10, xid as u8)));
            pair.send_call(xid, c, ReplyHints::at_most(64));
        }
        pair.drive();
        // Every call reached the upper layer, none of them answered yet.
        let mut tokens = Vec::new();
        for xid in 1..=n {
            match pair
                .server
                .take_event(|e| matches!(e, Event::Call { xid: x, .. } if *x == xid))
            {
                Some(Event::Call { token, message, .. }) => {
                    let mut d = Decoder::with_ddp(&message);
                    d.skip(40).unwrap();
                    let got = d.get_opaque_ddp(1 << 20).unwrap();
                    assert_eq!(got, pattern(64 << 10, xid as u8), "ord {ord}, xid {xid}");
                    tokens.push((xid, token));
                }
                other => panic!("ord {ord}: call {xid} not delivered before any reply: {other:?}"),
            }
        }
        assert!(pair.server.engine.stats().rdma_reads >= u64::from(n));
        for (xid, token) in tokens {
            pair.server
                .engine
                .send_reply(token, reply(xid, &[0, 0, 0, 1], None))
                .unwrap();
        }
        pair.drive();
        for xid in 1..=n {
            take_reply(&mut pair, xid);
        }
        pair.assert_no_leaks();
    }
}

//= rfc5666bis-04#section-5.3.2
//# * When a Write list is provided for the results of an RPC Call, the
//# responder MUST provide data corresponding to DDP-eligible XDR data items
//# via RDMA Write operations to the memory referenced in the Write list.
#[test]
fn read_1mib_travels_in_a_write_chunk() {
    let mut pair = Pair::new();
    let hints = ReplyHints::with_ddp(&[1 << 20], (1 << 20) + 64);
    let c = call(3, 2, &(1u32 << 20).to_be_bytes(), None);
    pair.send_call(3, c, hints);
    pair.serve(|xid, _| reply(xid, &[0, 0, 0, 9], Some(pattern(1 << 20, 7))));
    let (m, cf, rf) = take_reply(&mut pair, 3);
    assert_eq!((cf, rf), (MessageForm::Short, MessageForm::Chunked));
    let mut d = Decoder::with_ddp(&m);
    d.skip(24).unwrap();
    assert_eq!(d.get_u32().unwrap(), 9);
    assert_eq!(d.get_opaque_ddp(2 << 20).unwrap(), pattern(1 << 20, 7));
    d.expect_end().unwrap();
    pair.assert_no_leaks();
}

//= rfc5666bis-04#section-4.4.5.1
//# If the requester provides no actual round-up in a Read chunk, the
//# responder MUST be prepared to provide appropriate round-up in the
//# reconstructed call XDR stream The Position field in a read segment
//# indicates where the containing Read chunk starts in the Payload stream.
//= rfc5666bis-04#section-4.4.6.1
//# Thus when an XDR data item is moved from a reply Payload stream into a
//# Write chunk, the responder MUST remove XDR padding for that data item from
//# the reply Payload stream as well.
//= rfc5666bis-04#section-4.4.6.1
//# A responder MUST NOT write XDR pad bytes for a Write chunk.
#[test]
fn odd_length_items_lose_their_padding_in_chunks() {
    let mut pair = Pair::new();
    let hints = ReplyHints::with_ddp(&[5000], 6000);
    let c = call(4, 3, &[], Some(pattern(4999, 1)));
    pair.send_call(4, c, hints);
    pair.serve(|xid, m| {
        let mut d = Decoder::with_ddp(m);
        d.skip(40).unwrap();
        let got = d.get_opaque_ddp(10_000).unwrap();
        assert_eq!(got, pattern(4999, 1));
        d.expect_end().unwrap();
        let mut tail = BytesMut::new();
        tail.put_u32(0xfeed_f00d);
        let mut pe = PayloadEncoder::new();
        let mut e = pe.encoder();
        for w in [xid, 1, 0, 0, 0, 0] {
            e.put_u32(w);
        }
        e.put_opaque_ddp(pattern(4001, 2));
        e.put_u32(0xfeed_f00d);
        pe.finish()
    });
    let (m, _, rf) = take_reply(&mut pair, 4);
    assert_eq!(rf, MessageForm::Chunked);
    let mut d = Decoder::with_ddp(&m);
    d.skip(24).unwrap();
    assert_eq!(d.get_opaque_ddp(5000).unwrap(), pattern(4001, 2));
    // The word after the item is aligned: the responder wrote no pad into
    // the chunk and removed it from the inline stream.
    assert_eq!(d.get_u32().unwrap(), 0xfeed_f00d);
    pair.assert_no_leaks();
}

//= rfc5666bis-04#section-4.5.3
//# If there are no DDP-eligible data items in the Payload stream, or the
//# Payload stream is still too large after it has been reduced, the RDMA
//# transport MUST use RDMA Read or Write operations to convey the Payload
//# stream itself.
#[test]
fn long_call_goes_in_a_position_zero_read_chunk() {
    let mut pair = Pair::new();
    let args = pattern(3000, 5); // not DDP-eligible: must go as a Long call
    let c = call(5, 1, &args, None);
    pair.send_call(5, c, ReplyHints::default());
    pair.serve(|xid, m| {
        let flat = m.flatten();
        assert_eq!(&flat[40..], &pattern(3000, 5)[..]);
        reply(xid, &[], None)
    });
    let (_, cf, rf) = take_reply(&mut pair, 5);
    assert_eq!((cf, rf), (MessageForm::Long, MessageForm::Short));
    assert!(pair.client.sent.iter().all(|(b, _)| b.len() <= 1024));
    pair.assert_no_leaks();
}

//= rfc5666bis-04#section-4.5.3
//# If a Reply chunk was provided and the reduced Payload is larger than the
//# requester's inline threshold, the responder MUST use the provided Reply
//# chunk for the reply.
#[test]
fn long_reply_goes_in_the_reply_chunk() {
    let mut pair = Pair::new();
    let hints = ReplyHints::at_most(8192);
    pair.send_call(6, call(6, 1, &[], None), hints);
    pair.serve(|xid, _| reply(xid, &pattern(5000, 9), None));
    let (m, _, rf) = take_reply(&mut pair, 6);
    assert_eq!(rf, MessageForm::Long);
    assert_eq!(&m.inline()[24..], &pattern(5000, 9)[..]);
    assert!(pair.server.sent.iter().all(|(b, _)| b.len() <= 1024));
    pair.assert_no_leaks();
}

#[test]
fn reply_too_large_without_reply_chunk_draws_rdma_error() {
    let mut pair = Pair::new();
    // The Upper Layer says the reply is at most 200 bytes (so no Reply
    // chunk); the server's 5000-byte reply cannot be returned.
    let hints = ReplyHints::at_most(200);
    pair.send_call(7, call(7, 1, &[], None), hints);
    pair.serve(|xid, _| reply(xid, &pattern(5000, 9), None));
    let err = take_failure(&mut pair, 7);
    assert_eq!(
        err,
        CallError::RdmaError {
            code: ErrCode::BADHEADER
        }
    );
    assert!(pair.server.sent.iter().all(|(b, _)| b.len() <= 1024));
    pair.assert_no_leaks();
}

//= rfc5666bis-04#section-4.5.3
//# Because these special chunks contain a whole RPC message, any XDR data
//# item MAY appear in one of these special chunks without regard to its
//# DDP-eligibility.
//= rfc5666bis-04#section-8.1
//# Such data items MAY, however, be moved as part of a Position Zero Read
//# Chunk or a Reply chunk.
//= rfc5666bis-04#section-10.2.2.3
//# Therefore a sender MUST NOT reduce a Payload stream when RPCSEC_GSS
//# integrity or encryption services are in use.
#[test]
fn reduction_off_sends_long_call_and_reply_chunk() {
    let mut pair = Pair::new();
    let hints = ReplyHints::with_ddp(&[1 << 16], (1 << 16) + 100).unreduced();
    let c = call(8, 3, &[], Some(pattern(1 << 16, 4)));
    pair.send_call(8, c, hints);
    pair.serve(|xid, m| {
        // Nothing was reduced: the item arrives inside the stream.
        assert!(!m.has_items());
        reply(xid, &[], Some(pattern(1 << 16, 6)))
    });
    let (m, cf, rf) = take_reply(&mut pair, 8);
    assert_eq!((cf, rf), (MessageForm::Long, MessageForm::Long));
    let mut d = Decoder::with_ddp(&m);
    d.skip(24).unwrap();
    assert_eq!(d.get_opaque_ddp(1 << 20).unwrap(), pattern(1 << 16, 6));
    pair.assert_no_leaks();
}

//= rfc5666bis-04#section-4.3.1
//# The requester MUST NOT send unacknowledged requests in excess of this
//# granted responder credit limit.
//= rfc5666bis-04#section-5.2.3
//# RPC Calls SHOULD NOT be sent in excess of the currently granted limit.
//= rfc5666bis-04#section-4.3.3
//# A responder MAY exceed this basic level of configuration, but a requester
//# MUST NOT assume more than one credit is available, and MUST receive a
//# valid reply from the responder carrying the actual number of available
//# credits, prior to sending its next request.
//= draft-cel-01#section-5
//# As with RPC-over-RDMA Version One, a requester MUST assume the ability to
//# exchange only a single RPC-over-RDMA message at a time until it receives a
//# non-error RPC-over-RDMA message from the responder that reports the
//# responder's actual credit limit.
#[test]
fn credits_one_until_first_reply_then_never_above_grant() {
    let mut pair = Pair::with(PairOptions::default().grant(3));
    for x in 0..20u32 {
        pair.send_call(100 + x, call(100 + x, 0, &[], None), ReplyHints::default());
    }
    // Before any reply only one call may be out.
    pair.drive();
    assert_eq!(pair.client.engine.info().calls_in_flight, 1);
    let mut max_seen = 0;
    for _ in 0..100 {
        pair.drive();
        let mut pending = Vec::new();
        while let Some(Event::Call { token, xid, .. }) =
            pair.server.take_event(|e| matches!(e, Event::Call { .. }))
        {
            pending.push((token, xid));
        }
        max_seen = max_seen.max(pending.len());
        if pending.is_empty() {
            break;
        }
        for (token, xid) in pending {
            pair.server
                .engine
                .send_reply(token, reply(xid, &[], None))
                .unwrap();
        }
    }
    assert!(max_seen <= 3, "server saw {max_seen} concurrent calls");
    for x in 0..20u32 {
        take_reply(&mut pair, 100 + x);
    }
    assert_eq!(pair.server.engine.stats().credit_overruns, 0);
    pair.assert_no_leaks();
}

/// An RPC-over-RDMA v1 reply header with no chunks.
fn v1_reply_header(xid: u32, credits: u32) -> Vec<u8> {
    [xid, 1, credits, 0, 0, 0, 0]
        .iter()
        .flat_map(|w| w.to_be_bytes())
        .collect()
}

#[test]
fn zero_grant_counts_as_one_and_huge_grant_is_clamped() {
    let mut pair = Pair::with(PairOptions::v1());
    for xid in [1u32, 2] {
        pair.send_call(xid, call(xid, 0, &[], None), ReplyHints::default());
    }
    pair.drop_next_send(true); // the server never sees call 1
    pair.drive();
    let mut msg = v1_reply_header(1, 0);
    msg.extend_from_slice(&reply(1, &[], None).flatten());
    pair.inject(true, &msg);
    take_reply(&mut pair, 1);
    assert_eq!(pair.client.engine.info().credits_granted, 1);
    let mut msg = v1_reply_header(99, u32::MAX);
    msg.extend_from_slice(&reply(99, &[], None).flatten());
    pair.inject(true, &msg); // unmatched: dropped, and its credit ignored
    assert_eq!(pair.client.engine.stats().unmatched_replies, 1);
    assert_eq!(pair.client.engine.info().credits_granted, 1);
    echo_server(&mut pair);
    take_reply(&mut pair, 2);
    assert_eq!(pair.client.engine.info().credits_granted, 64);
}

//= rfc5666bis-04#section-4.3.1
//# If an RDMA layer error does not occur, the responder MAY handle excess
//# requests or return an RPC layer error to the requester.
#[test]
fn peer_exceeding_our_grant_gets_system_err_not_memory() {
    let mut o = PairOptions::default().grant(1);
    o.server.versions = VersionRange::V1_ONLY;
    o.client.client_version = VersionPolicy::V1;
    let mut pair = Pair::with(o);
    // Two calls sent by hand, ignoring the grant of 1.
    for xid in [10u32, 11] {
        let mut m: Vec<u8> = [xid, 1, 8, 0, 0, 0, 0]
            .iter()
            .flat_map(|w| w.to_be_bytes())
            .collect();
        m.extend_from_slice(&call(xid, 0, &[], None).flatten());
        pair.inject(false, &m);
    }
    assert_eq!(pair.server.engine.stats().credit_overruns, 1);
    pair.drive();
    // The second call was answered at once with an RPC SYSTEM_ERR reply
    // (xid 11, REPLY, MSG_ACCEPTED, AUTH_NONE, SYSTEM_ERR); the first one
    // was handed to the upper layer.
    assert_eq!(pair.server.engine.stats().replies_sent, 1);
    let (sent, _) = pair.server.sent.last().unwrap();
    let words: Vec<u32> = sent
        .chunks(4)
        .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    assert_eq!(&words[7..], &[11, 1, 0, 0, 0, 5]);
    assert_eq!(
        pair.server
            .events
            .iter()
            .filter(|e| matches!(e, Event::Call { .. }))
            .count(),
        1
    );
}

#[test]
fn lying_write_chunk_length_fails_the_call() {
    let mut pair = Pair::with(PairOptions::v1());
    let hints = ReplyHints::with_ddp(&[4096], 8192);
    pair.send_call(20, call(20, 2, &[], None), hints);
    pair.drive();
    // The Write chunk the client provided, from its call header.
    let (call_bytes, _) = pair.client.sent[0].clone();
    let msg = rpcrdma_wire::decode(&call_bytes, &Default::default()).unwrap();
    let w = msg.header.chunks().unwrap().writes[0].segments[0];
    assert_eq!(w.length, 4096);
    // The "server" answers claiming it wrote more than was provided.
    let mut m: Vec<u8> = [20u32, 1, 64, 0, 0, 1, 1, w.handle, 4097]
        .iter()
        .flat_map(|x| x.to_be_bytes())
        .collect();
    m.extend_from_slice(&w.offset.to_be_bytes());
    m.extend_from_slice(&[0; 8]);
    m.extend_from_slice(&reply(20, &[], None).flatten()[..]);
    pair.inject(true, &m);
    let err = take_failure(&mut pair, 20);
    assert!(matches!(err, CallError::BadReply(_)), "{err:?}");
    pair.drive();
    assert_eq!(pair.client.engine.stats().live_registrations(), 0);
}

//= rfc5666bis-04#section-5.5.2
//# When a responder receives a valid RPC-over-RDMA header but the responder's
//# Upper Layer Protocol implementation cannot parse the RPC arguments in the
//# RPC Call message, the responder SHOULD return a RPC_GARBAGEARGS reply,
//# using an RDMA_MSG procedure.
#[test]
fn read_chunk_position_beyond_the_payload_gets_garbage_args() {
    let mut pair = Pair::with(PairOptions::v1());
    // RDMA_MSG with a read chunk at position 4096 of a 40-byte call.
    let c = call(30, 3, &[], None).flatten();
    let mut m: Vec<u8> = [30u32, 1, 8, 0, 1, 4096, 0x1234, 16, 0, 0x5000, 0, 0, 0]
        .iter()
        .flat_map(|w| w.to_be_bytes())
        .collect();
    m.extend_from_slice(&c);
    pair.inject(false, &m);
    pair.drive();
    assert_eq!(pair.server.engine.stats().bad_messages, 1);
    // GARBAGE_ARGS went back as an RPC reply, not an RDMA_ERROR.
    assert_eq!(pair.server.engine.stats().replies_sent, 1);
    assert_eq!(pair.server.engine.stats().rdma_errors_sent, 0);
    assert!(pair
        .server
        .events
        .iter()
        .all(|e| !matches!(e, Event::Call { .. })));
}

#[test]
fn bad_header_draws_err_badheader_and_engine_survives() {
    let mut pair = Pair::with(PairOptions::v1());
    // Unknown rdma_proc 9.
    let m: Vec<u8> = [40u32, 1, 8, 9]
        .iter()
        .flat_map(|w| w.to_be_bytes())
        .collect();
    pair.inject(false, &m);
    // XID mismatch between header and RPC call.
    let mut m: Vec<u8> = [41u32, 1, 8, 0, 0, 0, 0]
        .iter()
        .flat_map(|w| w.to_be_bytes())
        .collect();
    m.extend_from_slice(&call(42, 0, &[], None).flatten());
    pair.inject(false, &m);
    pair.drive();
    assert_eq!(pair.server.engine.stats().rdma_errors_sent, 2);
    assert!(pair.server.engine.error().is_none());
    // The connection still works.
    pair.send_call(43, call(43, 0, &[], None), ReplyHints::default());
    echo_server(&mut pair);
    take_reply(&mut pair, 43);
}

#[test]
fn v2_client_falls_back_to_v1_server() {
    let mut o = PairOptions::default();
    o.server.versions = VersionRange::V1_ONLY;
    let mut pair = Pair::with(o);
    pair.send_call(50, call(50, 0, &[], None), ReplyHints::default());
    echo_server(&mut pair);
    take_reply(&mut pair, 50);
    let neg = pair
        .client
        .take_event(|e| matches!(e, Event::Negotiated { .. }));
    assert!(matches!(
        neg,
        Some(Event::Negotiated {
            version: 1,
            fell_back: true,
            cause: Some(ErrCode::VERS)
        })
    ));
    assert_eq!(pair.client.engine.info().version, Some(1));
    // The first Send was a Version Two message of at most 1024 bytes.
    assert!(pair.client.sent[0].0.len() <= 1024);
    assert_eq!(&pair.client.sent[0].0[4..8], &[0, 0, 0, 2]);
    pair.assert_no_leaks();
}

#[test]
fn v2_both_ways_settles_on_2() {
    let mut pair = Pair::new();
    pair.send_call(51, call(51, 0, &[], None), ReplyHints::default());
    echo_server(&mut pair);
    take_reply(&mut pair, 51);
    assert_eq!(pair.client.engine.info().version, Some(2));
    assert_eq!(pair.server.engine.info().version, Some(2));
}

#[test]
fn v1_client_with_v2_server() {
    let mut pair = Pair::with(PairOptions::v1());
    pair.send_call(52, call(52, 0, &[], None), ReplyHints::default());
    echo_server(&mut pair);
    take_reply(&mut pair, 52);
    assert_eq!(pair.server.engine.info().version, Some(1));
}

#[test]
fn lost_v2_probe_fails_the_connection_after_the_timeout() {
    let mut pair = Pair::new();
    pair.send_call(53, call(53, 0, &[], None), ReplyHints::default());
    pair.drop_next_send(true);
    pair.drive();
    assert!(pair.client.engine.poll_timeout().is_some());
    pair.advance(std::time::Duration::from_secs(6));
    assert!(matches!(
        pair.client.engine.error(),
        Some(EngineError::NegotiationTimeout)
    ));
    pair.assert_no_leaks();
}

#[test]
fn v2_only_client_against_v1_server_fails_cleanly() {
    let mut o = PairOptions::default();
    o.server.versions = VersionRange::V1_ONLY;
    o.client.client_version = VersionPolicy::V2;
    let mut pair = Pair::with(o);
    pair.send_call(54, call(54, 0, &[], None), ReplyHints::default());
    pair.drive();
    assert!(matches!(
        take_failure(&mut pair, 54),
        CallError::Version { low: 1, high: 1 }
    ));
    assert!(matches!(
        pair.client.engine.error(),
        Some(EngineError::NoCommonVersion { .. })
    ));
}

#[test]
fn released_call_gives_back_memory_at_once_and_late_reply_is_dropped() {
    let mut pair = Pair::with(PairOptions::v1());
    let hints = ReplyHints::with_ddp(&[1 << 16], (1 << 16) + 100);
    pair.send_call(60, call(60, 2, &[], None), hints);
    pair.drive();
    assert!(pair.fabric.live_regions(1) > 0);
    pair.client.engine.release(60);
    assert_eq!(pair.fabric.live_regions(1), 0);
    // The server's late attempt to write into the dead chunk fails the
    // connection at the RDMA layer: the requester's memory is safe.
    pair.serve(|xid, _| reply(xid, &[], Some(pattern(100, 1))));
    pair.drive();
    assert!(pair
        .client
        .events
        .iter()
        .all(|e| !matches!(e, Event::Reply { .. })));
    pair.assert_no_leaks();
}

#[test]
fn remote_invalidation_only_when_both_set_r() {
    let hints = || ReplyHints::with_ddp(&[4096], 8192);
    let mut pair = Pair::new();
    pair.send_call(70, call(70, 2, &[], None), hints());
    pair.serve(|xid, _| reply(xid, &[], Some(pattern(4000, 1))));
    take_reply(&mut pair, 70);
    assert!(pair.server.sent.iter().any(|(_, inv)| inv.is_some()));
    assert_eq!(pair.client.engine.stats().remote_invalidations, 1);
    pair.assert_no_leaks();

    let mut o = PairOptions::default();
    o.client.remote_invalidate = false;
    let mut pair = Pair::with(o);
    pair.send_call(71, call(71, 2, &[], None), hints());
    pair.serve(|xid, _| reply(xid, &[], Some(pattern(4000, 1))));
    take_reply(&mut pair, 71);
    assert!(pair.server.sent.iter().all(|(_, inv)| inv.is_none()));
    pair.assert_no_leaks();
}

#[test]
fn disconnect_at_every_step_leaks_nothing_and_completes_at_most_once() {
    /// Runs the exchange, cutting the connection once `cut` work requests
    /// have been executed (`None`: never). Returns the pair, whether the
    /// server answered, and the steps taken.
    fn run(name: &str, hints: &ReplyHints, c: &Payload, cut: Option<u64>) -> (Pair, bool, u64) {
        let mut pair = Pair::new();
        pair.send_call(80, c.clone(), hints.clone());
        let mut replied = false;
        while cut.is_none_or(|cut| pair.steps < cut) && pair.step() {
            if let Some(Event::Call { token, xid, .. }) =
                pair.server.take_event(|e| matches!(e, Event::Call { .. }))
            {
                let r = if name == "long" {
                    reply(xid, &pattern(5000, 3), None)
                } else {
                    reply(xid, &[], Some(pattern(1 << 15, 4)))
                };
                pair.server.engine.send_reply(token, r).unwrap();
                replied = true;
            }
        }
        let steps = pair.steps;
        if cut.is_some() {
            pair.disconnect();
        }
        (pair, replied, steps)
    }
    let outcomes = |pair: &Pair| {
        pair.client
            .events
            .iter()
            .filter(|e| matches!(e, Event::Reply { .. } | Event::CallFailed { .. }))
            .count()
    };
    let got_reply = |pair: &Pair| {
        pair.client
            .events
            .iter()
            .any(|e| matches!(e, Event::Reply { xid: 80, .. }))
    };
    for (name, hints, c) in [
        (
            "chunked",
            ReplyHints::with_ddp(&[1 << 16], (1 << 16) + 100),
            call(80, 3, &[], Some(pattern(1 << 16, 1))),
        ),
        (
            "long",
            ReplyHints::at_most(9000),
            call(80, 1, &pattern(3000, 2), None),
        ),
    ] {
        // The whole exchange, uncut: how many steps the cuts must cover.
        let (pair, replied, total) = run(name, &hints, &c, None);
        assert!(
            replied && got_reply(&pair),
            "{name}: the uncut exchange completes"
        );
        assert!(total > 4, "{name}: {total} steps");
        for cut in 0..=total {
            let (pair, replied, _) = run(name, &hints, &c, Some(cut));
            let n = outcomes(&pair);
            assert!(n <= 1, "{name} cut at {cut}: {n} outcomes");
            // A reply can only have arrived if the server sent one.
            assert!(replied || !got_reply(&pair), "{name} cut at {cut}");
            if cut == total {
                // The last cut comes after the whole exchange.
                assert!(
                    got_reply(&pair),
                    "{name}: cut at {cut} (the end) lost the reply"
                );
            }
            pair.assert_no_leaks();
        }
    }
}

//= rfc5666bis-04#section-7.3.1
//# An Upper Layer Protocol consumer MUST NOT perform backward direction ONC
//# RPC operations unless the peer consumer has indicated it is prepared to
//# handle them.
//= rfc8167#section-6
//# Therefore, a ULP MUST NOT perform reverse-direction ONC RPC operations
//# until the peer has indicated it is prepared to handle them.
//= rfc5666bis-04#section-5
//# Both endpoints of a connection MAY send any RPC-over-RDMA message header
//# type at any time (subject to credit limits).
#[test]
fn reverse_direction_needs_readiness_and_flows_past_exhausted_forward_credits() {
    let mut pair = Pair::with(PairOptions::default().grant(1));
    // Not ready: the server may not call.
    assert!(matches!(
        pair.server
            .engine
            .send_call(pair.now, 1, call(1, 0, &[], None), ReplyHints::default()),
        Err(ApiError::BackchannelNotReady)
    ));
    // Forward: one call outstanding, never answered, holds the only credit.
    pair.send_call(90, call(90, 0, &[], None), ReplyHints::default());
    pair.send_call(91, call(91, 0, &[], None), ReplyHints::default());
    pair.drive();
    let Some(Event::Call { token: held, .. }) = pair
        .server
        .take_event(|e| matches!(e, Event::Call { xid: 90, .. }))
    else {
        panic!("no forward call")
    };
    // Enable the reverse direction on both ends; the server calls back.
    pair.client.engine.enable_backchannel().unwrap();
    pair.server.engine.peer_backchannel_ready(pair.now).unwrap();
    for x in 0..4u32 {
        pair.server
            .engine
            .send_call(
                pair.now,
                500 + x,
                call(500 + x, 0, &[], None),
                ReplyHints::default(),
            )
            .unwrap();
    }
    for _ in 0..10 {
        pair.drive();
        while let Some(Event::Call { token, xid, .. }) =
            pair.client.take_event(|e| matches!(e, Event::Call { .. }))
        {
            pair.client
                .engine
                .send_reply(token, reply(xid, &[], None))
                .unwrap();
        }
    }
    for x in 0..4u32 {
        assert!(
            pair.server
                .take_event(|e| matches!(e, Event::Reply { xid, .. } if *xid == 500 + x))
                .is_some(),
            "reverse call {x} not answered"
        );
    }
    // Forward call 91 is still waiting for the credit held by call 90.
    assert_eq!(pair.client.engine.info().calls_in_flight, 1);
    pair.server
        .engine
        .send_reply(held, reply(90, &[], None))
        .unwrap();
    echo_server(&mut pair);
    take_reply(&mut pair, 90);
    take_reply(&mut pair, 91);
    pair.assert_no_leaks();
}

#[test]
fn reverse_call_to_a_client_without_backchannel_is_refused() {
    let mut pair = Pair::with(PairOptions::v1());
    pair.send_call(1, call(1, 0, &[], None), ReplyHints::default());
    echo_server(&mut pair);
    take_reply(&mut pair, 1);
    // A reverse call arrives although the client never enabled it.
    let mut m: Vec<u8> = [7u32, 1, 1, 0, 0, 0, 0]
        .iter()
        .flat_map(|w| w.to_be_bytes())
        .collect();
    m.extend_from_slice(&call(7, 0, &[], None).flatten());
    pair.inject(true, &m);
    assert_eq!(pair.client.engine.stats().rdma_errors_sent, 1);
    assert!(pair
        .client
        .events
        .iter()
        .all(|e| !matches!(e, Event::Call { .. })));
}

//= rfc5666bis-04#section-4.3.1
//# The granted value MUST NOT be zero, since such a value would result in
//# deadlock.
#[test]
fn config_rejects_zero_grant() {
    let mut c = EngineConfig::server();
    c.credits_grant = 0;
    assert!(c.validate().is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Whatever the sizes, no Send exceeds the receiver's threshold and every
    /// byte arrives.
    //= rfc5666bis-04#section-5.2.4
    //# However, the total length of the gathered send buffers MUST NOT exceed
    //# the peer receiver's inline threshold.
    #[test]
    fn never_sends_more_than_the_threshold(
        args in 0usize..6000,
        ddp in proptest::option::of(0usize..20_000),
        result in 0usize..6000,
        ddp_result in proptest::option::of(0usize..20_000),
        reduce in any::<bool>(),
        v1 in any::<bool>(),
        small_inline in any::<bool>(),
    ) {
        // Both ends advertise the same size in their private data: the
        // Version One default or ours (4096).
        let t_c = if small_inline { 1024 } else { rpcrdma_engine::DEFAULT_INLINE as usize };
        let mut o = PairOptions::default().inline(t_c as u32);
        if v1 { o.client.client_version = VersionPolicy::V1; }
        let mut pair = Pair::with(o);
        let max = (result + ddp_result.unwrap_or(0) + 200) as u32;
        let hints = ReplyHints {
            ddp_results: ddp_result.iter().map(|&d| d as u32).collect(),
            max_reply: Some(max),
            reduce,
            max_reply_reduced: None,
        };
        let c = call(1, 3, &pattern(args, 1), ddp.map(|d| pattern(d, 2)));
        let want = c.flatten();
        pair.send_call(1, c, hints);
        pair.serve(|xid, m| {
            assert_eq!(m.flatten(), want.clone());
            reply(xid, &pattern(result, 3), ddp_result.map(|d| pattern(d, 4)))
        });
        let (m, _, _) = take_reply(&mut pair, 1);
        let expect = reply(1, &pattern(result, 3), ddp_result.map(|d| pattern(d, 4)));
        let mut d = Decoder::with_ddp(&m);
        d.skip(24 + result.div_ceil(4) * 4).unwrap();
        if let Some(n) = ddp_result {
            prop_assert_eq!(d.get_opaque_ddp(1 << 20).unwrap(), pattern(n, 4));
        }
        d.expect_end().unwrap();
        prop_assert_eq!(m.stream_len(), expect.stream_len());
        prop_assert!(pair.client.sent.iter().all(|(b, _)| b.len() <= t_c));
        prop_assert!(pair.server.sent.iter().all(|(b, _)| b.len() <= t_c));
        pair.assert_no_leaks();
    }
}

#[test]
fn bad_header_round_trip_for_diagnostics() {
    let mut pair = Pair::new();
    pair.send_call(1, call(1, 0, &[], None), ReplyHints::default());
    echo_server(&mut pair);
    take_reply(&mut pair, 1);
    pair.client.engine.send_bad_header(0xbad).unwrap();
    pair.drive();
    assert_eq!(
        take_failure(&mut pair, 0xbad),
        CallError::RdmaError {
            code: ErrCode::BADHEADER
        }
    );
    assert_eq!(pair.server.engine.stats().rdma_errors_sent, 1);
    assert_eq!(pair.client.engine.info().calls_in_flight, 0);
}

// ----- readings recorded in docs/spec-notes.md ("Engine", E1–E12) --------
// (E13–E20: tests/conformance.rs; E21, E22: tests/budget.rs)

/// The header of the client's `i`-th call (its Version Two optional
/// offers, `RDMA2_OPTIONAL`, are not counted).
fn call_header(pair: &Pair, i: usize) -> rpcrdma_wire::Header {
    let sent = pair
        .client
        .sent
        .iter()
        .filter(|(b, _)| b.get(12..16) != Some(&[0, 0, 0, 5][..]))
        .nth(i)
        .unwrap();
    rpcrdma_wire::decode(&sent.0, &Default::default())
        .unwrap()
        .header
}

/// E1, E2: Write chunks only when the largest reply might not fit inline;
/// a Reply chunk whenever the largest reply, unreduced, might not fit (it
/// may come from a branch without the DDP item).
//= rfc5666bis-04#section-5.3.3
//# A requester MUST provide a Reply chunk whenever the maximum possible size
//# of the reply is larger than its own inline threshold.
//= rfc5666bis-04#section-5.3.3
//# The Reply chunk MUST be large enough to contain a Payload stream (RPC
//# message) of this maximum size.
//= rfc5666bis-04#section-5.3.3
//# If the actual reply Payload stream is smaller than the requester's inline
//# threshold, the responder MAY return it as a Short message rather than
//# using the Reply chunk.
#[test]
fn spec_e1_e2_reply_resources_follow_the_largest_reply() {
    let mut pair = Pair::new();
    // 1 MiB READ: a Write chunk, and a Reply chunk for the largest reply.
    let hints = ReplyHints::with_ddp(&[1 << 20], (1 << 20) + 64);
    pair.send_call(1, call(1, 2, &[], None), hints);
    pair.drive();
    let h = call_header(&pair, 0);
    let c = h.chunks().unwrap();
    assert_eq!(c.writes.len(), 1);
    assert_eq!(c.reply.as_ref().map(|r| r.data_len()), Some((1 << 20) + 64));
    pair.serve(|xid, _| reply(xid, &[], Some(pattern(1 << 20, 1))));
    let (_, _, rf) = take_reply(&mut pair, 1);
    // The data came back in the Write chunk; the Reply chunk went unused.
    assert_eq!(rf, MessageForm::Chunked);
    // 100-byte READ: the whole reply fits inline, so no chunk at all.
    let hints = ReplyHints::with_ddp(&[100], 100 + 64);
    pair.send_call(2, call(2, 2, &[], None), hints);
    pair.drive();
    let h = call_header(&pair, 1);
    assert!(h.chunks().unwrap().is_empty());
    pair.serve(|xid, _| reply(xid, &[], Some(pattern(100, 1))));
    let (m, _, rf) = take_reply(&mut pair, 2);
    assert_eq!(rf, MessageForm::Short);
    let mut d = Decoder::with_ddp(&m);
    d.skip(24).unwrap();
    assert_eq!(d.get_opaque_ddp(1000).unwrap(), pattern(100, 1));
    pair.assert_no_leaks();
}

/// N13 (docs/spec-notes.md, NFS): with the largest reply stated with its
/// DDP items reduced, a 1 MiB READ gets its Write chunk and no Reply chunk
/// (as the Linux client sends it), and the reply comes back through the
/// Write chunk.
#[test]
fn spec_n13_reduced_maximum_needs_no_reply_chunk() {
    let mut pair = Pair::with(PairOptions::default().inline(1024));
    let mut hints = ReplyHints::with_ddp(&[1 << 20], (1 << 20) + 128);
    hints.max_reply_reduced = Some(128);
    pair.send_call(1, call(1, 2, &[], None), hints);
    pair.drive();
    let h = call_header(&pair, 0);
    let c = h.chunks().unwrap();
    assert_eq!(c.writes.len(), 1);
    assert!(c.reply.is_none(), "no Reply chunk");
    pair.serve(|xid, _| reply(xid, &[], Some(pattern(1 << 20, 1))));
    let (m, _, rf) = take_reply(&mut pair, 1);
    assert_eq!(rf, MessageForm::Chunked);
    let mut d = Decoder::with_ddp(&m);
    d.skip(24).unwrap();
    assert_eq!(d.get_opaque_ddp(1 << 21).unwrap(), pattern(1 << 20, 1));
    // A reduced maximum that itself exceeds the threshold still gets one.
    let mut hints = ReplyHints::with_ddp(&[1 << 20], (1 << 20) + 4000);
    hints.max_reply_reduced = Some(4000);
    pair.send_call(2, call(2, 2, &[], None), hints);
    pair.drive();
    let h = call_header(&pair, 1);
    assert!(h.chunks().unwrap().reply.is_some());
    pair.serve(|xid, _| reply(xid, &[], Some(pattern(10, 1))));
    take_reply(&mut pair, 2);
    pair.assert_no_leaks();
}

/// E6: the credit value of a Version One RDMA_ERROR is ignored.
//= rfc8167#section-4.1
//# In such cases, the receiver MUST ignore the header's credit value.
#[test]
fn spec_e6_rdma_error_credit_value_is_ignored() {
    let mut pair = Pair::with(PairOptions::v1());
    pair.send_call(1, call(1, 0, &[], None), ReplyHints::default());
    echo_server(&mut pair);
    take_reply(&mut pair, 1);
    assert_eq!(pair.client.engine.info().credits_granted, 64);
    pair.send_call(2, call(2, 0, &[], None), ReplyHints::default());
    pair.drop_next_send(true);
    pair.drive();
    // RDMA_ERROR ERR_BADHEADER for xid 2 with credits 1.
    let m: Vec<u8> = [2u32, 1, 1, 4, 2]
        .iter()
        .flat_map(|w| w.to_be_bytes())
        .collect();
    pair.inject(true, &m);
    assert!(matches!(
        take_failure(&mut pair, 2),
        CallError::RdmaError { .. }
    ));
    assert_eq!(pair.client.engine.info().credits_granted, 64);
}

/// E9: RFC 8797 sizes win over the Version Two default; without private
/// data, Version Two raises both thresholds to 4096.
//= rfc5666bis-04#section-4.3.3
//# In the absence of such a mechanism, senders MUST assume a receiver's
//# inline threshold is 1024 bytes.
//= draft-cel-01#section-2.3
//# In the absense of such a mechanism, senders MUST assume a receiver's
//# inline threshold is 4096 bytes.
//= draft-cel-01#section-5.2
//# To permit inline threshold values to change during negotiation of protocol
//# version, RPC-over-RDMA Version Two implementations MUST allow inline
//# threshold values to change without triggering a connection loss.
//= rfc8797#section-4
//# An implementation of the extension described in this document MUST be
//# prepared for the settings to change upon a reconnection.
#[test]
fn spec_e9_thresholds_by_private_data_and_version() {
    let mut pair = Pair::with(PairOptions::default().inline(1024));
    pair.send_call(1, call(1, 0, &[], None), ReplyHints::default());
    echo_server(&mut pair);
    take_reply(&mut pair, 1);
    assert_eq!(pair.client.engine.info().version, Some(2));
    assert_eq!(pair.client.engine.thresholds().send, 1024);

    // Both ends prepared for 4096 but exchanging no private data: the
    // Version Two default applies once the version is settled.
    let mut o = PairOptions {
        private_data: false,
        ..PairOptions::default()
    };
    for c in [&mut o.client, &mut o.server] {
        c.inline_send = 4096;
        c.inline_recv = 4096;
    }
    let mut pair = Pair::with(o);
    // During the probe at most 1024 bytes go out.
    assert_eq!(pair.client.engine.thresholds().send, 1024);
    pair.send_call(1, call(1, 0, &[], None), ReplyHints::default());
    echo_server(&mut pair);
    take_reply(&mut pair, 1);
    let t = pair.client.engine.thresholds();
    assert_eq!((t.send, t.recv), (4096, 4096));
    // A 3000-byte call now goes inline.
    pair.send_call(
        2,
        call(2, 1, &pattern(3000, 1), None),
        ReplyHints::default(),
    );
    echo_server(&mut pair);
    let (_, cf, _) = take_reply(&mut pair, 2);
    assert_eq!(cf, MessageForm::Short);
    // Without private data and in Version One, 1024.
    let mut o = PairOptions::v1();
    o.private_data = false;
    let pair = Pair::with(o);
    assert_eq!(pair.client.engine.thresholds().send, 1024);
}

/// E9: by default both ends advertise 4096 in their private data (as the
/// Linux client and server do), so a 1 KiB READ-like call offers no Write
/// chunk and its reply comes back inline; a Version One peer that sends no
/// private data still gets 1024.
#[test]
fn spec_e9_default_inline_sizes_are_linux_s_4096() {
    let mut pair = Pair::new();
    let pd = EngineConfig::client().private_data();
    assert_eq!((pd.send_size.bytes(), pd.recv_size.bytes()), (4096, 4096));
    // The Version Two probe itself stays within 1024 (E9).
    pair.send_call(1, call(1, 0, &[], None), ReplyHints::default());
    echo_server(&mut pair);
    take_reply(&mut pair, 1);
    let t = pair.client.engine.thresholds();
    assert_eq!((t.send, t.recv), (4096, 4096));
    let hints = ReplyHints::with_ddp(&[1024], 1024 + 64);
    pair.send_call(2, call(2, 2, &[], None), hints);
    pair.drive();
    assert!(
        call_header(&pair, 1).chunks().unwrap().is_empty(),
        "no chunks"
    );
    pair.serve(|xid, _| reply(xid, &[], Some(pattern(1024, 1))));
    let (m, cf, rf) = take_reply(&mut pair, 2);
    assert_eq!((cf, rf), (MessageForm::Short, MessageForm::Short));
    let mut d = Decoder::with_ddp(&m);
    d.skip(24).unwrap();
    assert_eq!(d.get_opaque_ddp(4096).unwrap(), pattern(1024, 1));
    pair.assert_no_leaks();
    // A Version One client without private data: 1024, whatever we have.
    let mut o = PairOptions::v1();
    o.private_data = false;
    let pair = Pair::with(o);
    let t = pair.client.engine.thresholds();
    assert_eq!((t.send, t.recv), (1024, 1024));
}

/// E11: abandoned calls keep their credits; when they hold them all and a
/// call is waiting, the connection is failed (a reconnect frees them).
#[test]
fn spec_e11_credits_held_by_abandoned_calls_fail_the_connection() {
    let mut pair = Pair::with(PairOptions::v1().grant(2));
    pair.send_call(1, call(1, 0, &[], None), ReplyHints::default());
    echo_server(&mut pair);
    take_reply(&mut pair, 1);
    for xid in [10u32, 11] {
        pair.send_call(xid, call(xid, 0, &[], None), ReplyHints::default());
    }
    pair.drive(); // the server holds both, never answers
    pair.client.engine.release(10);
    pair.send_call(12, call(12, 0, &[], None), ReplyHints::default());
    assert!(
        pair.client.engine.error().is_none(),
        "one live call still holds a credit"
    );
    pair.client.engine.release(11);
    pair.client
        .engine
        .send_call(pair.now, 13, call(13, 0, &[], None), ReplyHints::default())
        .unwrap_or(());
    pair.drive();
    assert!(matches!(
        pair.client.engine.error(),
        Some(EngineError::CreditsLost(2))
    ));
    pair.assert_no_leaks();
}

/// Receive buffers are reused once the upper layer has dropped the message
/// they carried; while it still holds one, that buffer is not touched.
#[test]
fn receive_buffers_are_reused_not_reallocated() {
    let mut pair = Pair::new();
    let initial = pair.client.engine.stats().recv_buffers_allocated;
    let mut held = None;
    for xid in 1..=50u32 {
        pair.send_call(xid, call(xid, 0, &[], None), ReplyHints::default());
        echo_server(&mut pair);
        let (m, _, _) = take_reply(&mut pair, xid);
        if xid == 3 {
            held = Some(m); // the upper layer keeps this reply
        }
    }
    let s = pair.client.engine.stats();
    // Once warmed up, every repost took a buffer whose message was dropped.
    assert!(s.recv_buffers_reused >= 45, "{s:?}");
    assert!(s.recv_buffers_allocated <= initial + 2, "{s:?}");
    // The held reply is intact: its buffer was never reposted.
    let held = held.unwrap();
    assert_eq!(&held.inline()[0..8], &[0, 0, 0, 3, 0, 0, 0, 1]);
}

/// Sink buffers (the Write chunk of a READ-like reply at the client, the
/// Read chunk sink of a WRITE-like call at the server) are reused once the
/// upper layer has dropped the data; while it holds the data, its buffer
/// stays untouched and a new one is allocated.
#[test]
fn sink_buffers_are_reused_once_dropped() {
    let mut pair = Pair::new();
    let hints = ReplyHints::with_ddp(&[64 * 1024], 64 * 1024 + 64);
    let mut held = None;
    for xid in 1..=6u32 {
        // READ-like: the reply's data comes back in our Write chunk.
        let c = call(xid, 2, &[], None);
        pair.send_call(xid, c, hints.clone());
        pair.serve(|xid, _| reply(xid, &[], Some(pattern(64 * 1024, xid as u8))));
        let (m, _, rf) = take_reply(&mut pair, xid);
        assert_eq!(rf, MessageForm::Chunked);
        let mut d = Decoder::with_ddp(&m);
        d.skip(24).unwrap();
        assert_eq!(
            d.get_opaque_ddp(1 << 20).unwrap(),
            pattern(64 * 1024, xid as u8)
        );
        if xid == 2 {
            held = Some(m);
        }
        // WRITE-like: the server pulls our Read chunk into its sink.
        let wx = 100 + xid;
        let c = call(wx, 3, &[], Some(pattern(64 * 1024, wx as u8)));
        let small = ReplyHints::at_most(64);
        pair.send_call(wx, c, small);
        pair.serve(|xid, m| {
            let mut d = Decoder::with_ddp(m);
            d.skip(40).unwrap();
            let got = d.get_opaque_ddp(1 << 20).unwrap();
            assert_eq!(got, pattern(64 * 1024, xid as u8));
            reply(xid, &[], None)
        });
        let _ = take_reply(&mut pair, wx);
    }
    let c = pair.client.engine.stats();
    // Each READ-like call provides two sinks (its Write chunk and the Reply
    // chunk for the largest reply, E1). Call 1 allocated both; the buffer
    // of call 2's Write chunk was held, so call 3 allocated one more; every
    // later sink reused a dropped one.
    assert_eq!(
        (c.sink_buffers_allocated, c.sink_buffers_reused),
        (3, 9),
        "{c:?}"
    );
    let s = pair.server.engine.stats();
    assert_eq!(
        (s.sink_buffers_allocated, s.sink_buffers_reused),
        (1, 5),
        "{s:?}"
    );
    // The held reply is intact.
    let held = held.unwrap();
    let mut d = Decoder::with_ddp(&held);
    d.skip(24).unwrap();
    assert_eq!(d.get_opaque_ddp(1 << 20).unwrap(), pattern(64 * 1024, 2));
    pair.assert_no_leaks();
}
