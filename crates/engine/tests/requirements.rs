//! Requirements of RFC 8166 (our -04 text), RFC 8167 and draft-cel-01 that
//! no other test checked on the wire: each test reads the transport
//! headers the engines sent through the two-engine [`Pair`] and quotes the
//! requirements it checks (the requirements matrix, docs/requirements.md;
//! `python3 scripts/reqtrace.py report`).

mod common;

use bytes::Bytes;
use rpcrdma_engine::testing::{Pair, PairOptions};
use rpcrdma_engine::{EngineConfig, EngineError, Event, ReplyHints, VersionPolicy};
use rpcrdma_wire::{decode, DecodeConfig, Message, Proc, VersionRange};
use rpcrdma_xdr::{Decoder, PayloadEncoder};

use common::{call, pattern, reply};

/// The first message sent from `from` on that carries `xid` in a header
/// the default decoder takes (Version Two optional messages are skipped).
fn sent_with_xid(sent: &[(Bytes, Option<u32>)], from: usize, xid: u32) -> Message {
    sent[from..]
        .iter()
        .filter_map(|(b, _)| decode(b, &DecodeConfig::default()).ok())
        .find(|m| m.header.xid() == xid)
        .unwrap_or_else(|| panic!("no message with XID {xid:#x}"))
}

fn word(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes(b[i * 4..i * 4 + 4].try_into().unwrap())
}

/// A pair whose server may call back (both ends enabled), settled by one
/// round trip.
fn bidirectional(o: PairOptions) -> Pair {
    let mut pair = Pair::with(o);
    pair.client.engine.enable_backchannel().unwrap();
    pair.send_call(1, call(1, 0, &[], None), ReplyHints::default());
    pair.serve(|x, _| reply(x, &[], None));
    assert!(pair
        .client
        .take_event(|e| matches!(e, Event::Reply { xid: 1, .. }))
        .is_some());
    pair.server.engine.peer_backchannel_ready(pair.now).unwrap();
    pair
}

/// A Chunked call as it goes on the wire: 20 octets of arguments that are
/// not DDP-eligible, then a DDP-eligible opaque of 4999 octets, which does
/// not fit the 4096-octet threshold and is reduced into a Read chunk.
//= rfc5666bis-04#section-4.4.5
//# The Position value MUST be computed from the beginning of the Payload
//# stream, which begins at Position zero.
//= rfc5666bis-04#section-4.4.5.1
//# The value in this field MUST be a multiple of four.
//= rfc5666bis-04#section-4.4.5.1
//# Thus when an XDR data item is moved from the Payload stream into a Read
//# chunk, the requester MUST remove XDR padding for that data item from the
//# Payload stream as well.
//= rfc5666bis-04#section-4.4.5.1
//# If this sum is not a multiple of four, the requester MAY choose to send a
//# Read chunk without any XDR padding.
//= rfc5666bis-04#section-4.4.4.1
//# If a chunk contains a counted array data type, the count of array elements
//# MUST remain in the Payload stream, while the array elements MUST be moved
//# to the chunk.
//= rfc5666bis-04#section-4.4.4.1
//# Any byte count left in the Payload stream MUST match the sum of the
//# lengths of the segments making up the chunk.
//= rfc5666bis-04#section-4.4.2
//# All other XDR data items MUST NOT be reduced.
//= rfc5666bis-04#section-8.1
//# Senders MUST NOT reduce data items that are not DDP-eligible.
//= rfc5666bis-04#section-4.5.3
//# DDP-eligible data items MAY be removed from these special chunks and
//# conveyed via normal chunks, but non-eligible data items MUST NOT appear in
//# normal chunks.
//= rfc5666bis-04#section-5.2.1
//# This XID MUST be the same as the XID in the RPC message.
//= rfc5666bis-04#section-5.2.2
//# For RPC-over-RDMA Version One, this field MUST contain the value one (1).
//= draft-cel-01#section-5.3
//# [I-D.ietf-nfsv4-rfc5666bis] REQUIRES that a responder MUST send Replies
//# with the same RPC-over-RDMA protocol version that the requester uses to
//# send its Calls.
#[test]
fn a_chunked_call_on_the_wire() {
    let mut pair = Pair::with(PairOptions::v1());
    let args = pattern(20, 1);
    pair.send_call(
        7,
        call(7, 3, &args, Some(pattern(4999, 2))),
        ReplyHints::at_most(200),
    );
    pair.drive();
    let m = sent_with_xid(&pair.client.sent, 0, 7);
    assert_eq!((m.header.xid(), m.header.vers()), (7, 1));
    assert_eq!(m.header.proc_(), Proc::MSG);
    let chunks = m.header.chunks().unwrap();
    assert!(chunks.writes.is_empty() && chunks.reply.is_none());
    // One Read chunk of one segment: the item alone, without its 1 pad
    // octet, at its offset in the whole (unreduced) Payload stream: the
    // 40-octet call header, the 20 octets of arguments and the item's
    // length word.
    assert_eq!(chunks.reads.len(), 1);
    let read = &chunks.reads[0];
    assert_eq!(read.position, 64);
    assert_eq!(read.position % 4, 0);
    assert_eq!(read.target.length, 4999);
    // The inline Payload stream: the RPC XID (the transport header's), the
    // arguments (not DDP-eligible: not reduced) and the length word, which
    // matches the chunk; neither the item nor its padding.
    let p = &m.payload;
    assert_eq!(p.len(), 64);
    assert_eq!(word(p, 0), 7);
    assert_eq!(&p[40..60], &args[..]);
    assert_eq!(word(p, 15), 4999);
    // And it arrives whole.
    pair.serve(|xid, m| {
        let mut d = Decoder::with_ddp(m);
        d.skip(60).unwrap();
        assert_eq!(d.get_opaque_ddp(5000).unwrap(), pattern(4999, 2));
        d.expect_end().unwrap();
        reply(xid, &[], None)
    });
    assert!(pair
        .client
        .take_event(|e| matches!(e, Event::Reply { xid: 7, .. }))
        .is_some());
    // The server, which speaks Version Two too, answered in the version of
    // the call.
    assert_eq!(sent_with_xid(&pair.server.sent, 0, 7).header.vers(), 1);

    // Two items: the second's Position counts the first item and its pad
    // (the unreduced stream), not just the inline bytes before it.
    let mut pe = PayloadEncoder::new();
    let mut e = pe.encoder();
    for w in [11u32, 0, 2, 0x2000_0099, 1, 3, 0, 0, 0, 0] {
        e.put_u32(w);
    }
    e.put_opaque_ddp(pattern(4999, 5));
    e.put_opaque_ddp(pattern(3001, 6));
    pair.send_call(11, pe.finish(), ReplyHints::at_most(200));
    pair.drive();
    let m = sent_with_xid(&pair.client.sent, 0, 11);
    let reads = &m.header.chunks().unwrap().reads;
    let got: Vec<(u32, u32)> = reads
        .iter()
        .map(|r| (r.position, r.target.length))
        .collect();
    assert_eq!(got, vec![(44, 4999), (44 + 5000 + 4, 3001)]);
    assert_eq!(m.payload.len(), 48);
    assert_eq!((word(&m.payload, 10), word(&m.payload, 11)), (4999, 3001));
    pair.serve(|xid, m| {
        let mut d = Decoder::with_ddp(m);
        d.skip(40).unwrap();
        assert_eq!(d.get_opaque_ddp(5000).unwrap(), pattern(4999, 5));
        assert_eq!(d.get_opaque_ddp(5000).unwrap(), pattern(3001, 6));
        d.expect_end().unwrap();
        reply(xid, &[], None)
    });
    assert!(pair
        .client
        .take_event(|e| matches!(e, Event::Reply { xid: 11, .. }))
        .is_some());
    pair.assert_no_leaks();
}

/// A Long call: arguments that are not DDP-eligible and exceed the
/// threshold travel in a Position-Zero Read chunk.
//= rfc5666bis-04#section-4.5.3
//# Every segment in this Read chunk MUST contain zero in its Position field.
#[test]
fn a_long_call_on_the_wire() {
    let mut pair = Pair::with(PairOptions::v1());
    pair.send_call(
        8,
        call(8, 1, &pattern(6000, 3), None),
        ReplyHints::at_most(200),
    );
    pair.drive();
    let m = sent_with_xid(&pair.client.sent, 0, 8);
    assert_eq!(m.header.proc_(), Proc::NOMSG);
    let chunks = m.header.chunks().unwrap();
    assert!(!chunks.reads.is_empty());
    assert!(chunks.reads.iter().all(|r| r.position == 0));
    let len: u32 = chunks.reads.iter().map(|r| r.target.length).sum();
    assert_eq!(len, 6040);
    assert!(m.payload.is_empty());
    pair.serve(|xid, _| reply(xid, &[], None));
    pair.assert_no_leaks();
}

/// The Write chunk a requester provides for a DDP-eligible result, and
/// what the responder returns in it, used and unused.
//= rfc5666bis-04#section-4.4.6
//# A requester does not know the actual length of the result data item to
//# be returned, thus it MUST register a Write chunk long enough to
//# accommodate the maximum possible size of the returned data item.
//= rfc5666bis-04#section-4.4.6.1
//# A requester SHOULD NOT provide extra length in a Write chunk to
//# accommodate XDR pad bytes.
//= rfc5666bis-04#section-4.4.6
//# The responder MUST NOT change the number of segments in the Write chunk.
//= rfc5666bis-04#section-4.4.6.1
//# Thus when an XDR data item is moved from a reply Payload stream into a
//# Write chunk, the responder MUST remove XDR padding for that data item
//# from the reply Payload stream as well.
//= rfc5666bis-04#section-4.4.6.1
//# A responder MUST NOT write XDR pad bytes for a Write chunk.
//= rfc5666bis-04#section-4.4.6.2
//# When forming an RPC-over-RDMA Reply message with an unused Write chunk,
//# the responder MUST set the length of all segments in the chunk to zero.
//= rfc5666bis-04#section-4.4.6
//# If a Write chunk segment is not filled by the responder, the updated
//# length of the segment SHOULD be zero.
//= rfc5666bis-04#section-4.3.1
//# The granted value MUST NOT be zero, since such a value would result in
//# deadlock.
#[test]
fn write_chunks_on_the_wire() {
    let mut pair = Pair::with(PairOptions::v1());
    let hints = || ReplyHints::with_ddp(&[5001], 5001 + 100);
    pair.send_call(9, call(9, 2, &[], None), hints());
    pair.drive();
    let m = sent_with_xid(&pair.client.sent, 0, 9);
    let chunks = m.header.chunks().unwrap();
    assert_eq!(chunks.writes.len(), 1);
    assert_eq!(chunks.writes[0].segments.len(), 1);
    // As long as the largest result, and no longer: no room for its pad.
    assert_eq!(chunks.writes[0].segments[0].length, 5001);

    // Used: 4001 octets written, no pad; the reply's Write list has the
    // same single segment, with the octets written.
    pair.serve(|xid, _| reply(xid, &[], Some(pattern(4001, 4))));
    let r = sent_with_xid(&pair.server.sent, 0, 9);
    assert_eq!(r.header.proc_(), Proc::MSG);
    assert!(r.header.credits() >= 1);
    let rc = r.header.chunks().unwrap();
    assert_eq!(rc.writes.len(), 1);
    assert_eq!(rc.writes[0].segments.len(), 1);
    assert_eq!(rc.writes[0].segments[0].length, 4001);
    // Inline: the 24-octet reply header and the item's length word only.
    assert_eq!(r.payload.len(), 28);
    assert_eq!(word(&r.payload, 6), 4001);
    let Some(Event::Reply { message: got, .. }) = pair
        .client
        .take_event(|e| matches!(e, Event::Reply { xid: 9, .. }))
    else {
        panic!("no reply to 9")
    };
    let mut d = Decoder::with_ddp(&got);
    d.skip(24).unwrap();
    assert_eq!(d.get_opaque_ddp(5001).unwrap(), pattern(4001, 4));
    d.expect_end().unwrap();

    // Unused (a result without the item): the chunk comes back with its
    // one segment, of length zero.
    pair.send_call(10, call(10, 2, &[], None), hints());
    pair.serve(|xid, _| reply(xid, &[1, 2, 3, 4], None));
    let r = sent_with_xid(&pair.server.sent, 0, 10);
    assert!(r.header.credits() >= 1);
    let rc = r.header.chunks().unwrap();
    assert_eq!(rc.writes.len(), 1);
    assert_eq!(rc.writes[0].segments.len(), 1);
    assert_eq!(rc.writes[0].segments[0].length, 0);
    assert!(pair
        .client
        .take_event(|e| matches!(e, Event::Reply { xid: 10, .. }))
        .is_some());
    pair.assert_no_leaks();
}

/// A reverse-direction call and its reply as they go on the wire, in
/// Version One and in Version Two.
//= rfc5666bis-04#section-7.3.4
//# The rdma_vers field MUST contain the value one.
//= rfc5666bis-04#section-7.3.4
//# The ONC RPC Call header MUST follow immediately, starting with the same
//# XID value that is present in the RPC-over-RDMA header.
//= rfc5666bis-04#section-7.3.4
//# The Call header's msg_type field MUST contain the value CALL.
//= rfc5666bis-04#section-7.3.5
//# The rdma_vers field MUST contain the value one.
//= rfc5666bis-04#section-7.3.5
//# The ONC RPC Reply header MUST follow immediately, starting with the same
//# XID value that is present in the RPC-over-RDMA header.
//= rfc5666bis-04#section-7.3.5
//# The Reply header's msg_type field MUST contain the value REPLY.
//= rfc5666bis-04#section-7.2.1
//# The rdma_credit field in a backward direction RPC-over-RDMA message MUST
//# NOT contain the value zero.
//= rfc8167#section-5.1
//# The rdma_vers field MUST contain the same value in reverse- and
//# forward-direction Call messages on the same connection.
//= rfc8167#section-5.1
//# Whether presented inline or as a separate chunk, the ONC RPC Call header
//# MUST start with the same XID value that is present in the RPC-over-RDMA
//# header, and the RPC header's msg_type field MUST contain the value CALL.
//= rfc8167#section-5.2
//# The rdma_vers field MUST contain the same value in a reverse-direction
//# Reply message as in the matching Call message.
//= rfc8167#section-5.2
//# Whether presented inline or as a separate chunk, the ONC RPC Reply header
//# MUST start with the same XID value that is present in the RPC-over-RDMA
//# header, and the RPC header's msg_type field MUST contain the value REPLY.
//= draft-cel-01#section-4.2.2
//# Implementations of RPC-over-RDMA Version Two are REQUIRED to support
//# backwards direction operation as described in
//# [I-D.ietf-nfsv4-rpcrdma-bidirection].
#[test]
fn a_reverse_call_and_reply_on_the_wire() {
    for (policy, vers) in [(VersionPolicy::V1, 1), (VersionPolicy::Negotiate, 2)] {
        let mut o = PairOptions::default();
        o.client.client_version = policy;
        let mut pair = bidirectional(o);
        // The version the forward direction settled on.
        assert_eq!(pair.client.engine.info().version, Some(vers));
        let (c0, s0) = (pair.client.sent.len(), pair.server.sent.len());
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
        let c = sent_with_xid(&pair.server.sent, s0, 0x40);
        assert_eq!((c.header.xid(), c.header.vers()), (0x40, vers));
        assert_eq!(c.header.proc_(), Proc::MSG);
        assert!(c.header.credits() >= 1);
        assert!(c.header.chunks().unwrap().is_empty());
        assert_eq!((word(&c.payload, 0), word(&c.payload, 1)), (0x40, 0));
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
        let r = sent_with_xid(&pair.client.sent, c0, 0x40);
        assert_eq!((r.header.xid(), r.header.vers()), (0x40, vers));
        assert_eq!(r.header.proc_(), Proc::MSG);
        assert!(r.header.credits() >= 1);
        assert!(r.header.chunks().unwrap().is_empty());
        assert_eq!((word(&r.payload, 0), word(&r.payload, 1)), (0x40, 1));
        assert!(pair
            .server
            .take_event(|e| matches!(e, Event::Reply { xid: 0x40, .. }))
            .is_some());
        pair.assert_no_leaks();
    }
}

/// Receive buffers: never smaller than the Version One default threshold,
/// nor than the Version Two default when Version Two is accepted.
//= rfc5666bis-04#section-4.3.3
//# Receiver implementations MUST support an inline threshold of 1024 bytes,
//# but MAY support larger inline thresholds values.
//= draft-cel-01#section-2.3
//# RPC-over-RDMA Version Two receiver implementations MUST support an inline
//# threshold of 4096 bytes, but MAY support larger inline threshold values.
#[test]
fn receive_buffers_hold_the_default_thresholds() {
    let mut c = EngineConfig::server();
    c.inline_recv = 1023;
    assert!(c.validate().is_err());
    c.inline_recv = 1024;
    c.versions = VersionRange::V1_ONLY;
    c.validate().unwrap();
    assert_eq!(c.recv_buffer_size(), 1024);
    c.versions = VersionRange::new(1, 2).unwrap();
    assert_eq!(c.recv_buffer_size(), 4096);
    c.inline_recv = 65536;
    assert_eq!(c.recv_buffer_size(), 65536);
}

/// A responder whose reply's Send fails closes the connection.
//= rfc5666bis-04#section-5.5.4
//# If a responder is unable to construct and transmit a Reply or error
//# message, the responder MUST close the connection to signal to the
//# requester that a reply was lost.
#[test]
fn a_responder_whose_reply_send_fails_closes_the_connection() {
    let mut pair = Pair::new();
    pair.send_call(1, call(1, 0, &[], None), ReplyHints::default());
    pair.drive();
    let Some(Event::Call { token, .. }) = pair
        .server
        .take_event(|e| matches!(e, Event::Call { xid: 1, .. }))
    else {
        panic!("the call did not arrive")
    };
    pair.server
        .engine
        .send_reply(token, reply(1, &[], None))
        .unwrap();
    // The reply's Send fails (verbs reports an unsignaled work request
    // only when it fails: its id is in no table of the engine's).
    let failed = rpcrdma_verbs::WorkCompletion {
        wr_id: u64::MAX,
        opcode: rpcrdma_verbs::WcOpcode::Send,
        status: rpcrdma_verbs::WcStatus::RemoteAccess,
        byte_len: 0,
        invalidated_rkey: None,
        solicited: false,
        buf: None,
    };
    pair.server.engine.handle_completion(pair.now, failed);
    assert!(matches!(
        pair.server.engine.error(),
        Some(EngineError::WorkRequest { .. })
    ));
}

/// Remote invalidation (RFC 8797 §4.1): a reply goes by Send With
/// Invalidate only when both ends set R, and then names a key of the call
/// it answers, with two calls outstanding.
//= rfc8797#section-4.1
//# When both connection peers have set this bit flag in their CM Private
//# Data, the responder MAY use RDMA Send With Invalidate when transmitting
//# RPC Replies.
//= rfc8797#section-4.1
//# Each RDMA Send With Invalidate MUST invalidate an STag associated only
//# with the XID in the rdma_xid field of the RPC-over-RDMA Transport Header
//# it carries.
//= rfc8797#section-4.1
//# When either peer on a connection clears this flag, the responder MUST use
//# only RDMA Send when transmitting RPC Replies.
#[test]
fn send_with_invalidate_names_a_key_of_the_call_it_answers() {
    let hints = || ReplyHints::with_ddp(&[4096], 8192);
    for (client_r, server_r) in [(true, true), (false, true), (true, false)] {
        let mut o = PairOptions::default();
        o.client.remote_invalidate = client_r;
        o.server.remote_invalidate = server_r;
        let mut pair = Pair::with(o);
        pair.send_call(1, call(1, 0, &[], None), ReplyHints::default());
        pair.serve(|x, _| reply(x, &[], None));
        for xid in [70, 71] {
            pair.send_call(xid, call(xid, 2, &[], None), hints());
        }
        pair.drive();
        let mut keys = Vec::new();
        for xid in [70u32, 71] {
            let m = sent_with_xid(&pair.client.sent, 0, xid);
            let c = m.header.chunks().unwrap();
            let k: Vec<u32> = c
                .writes
                .iter()
                .chain(c.reply.as_ref())
                .flat_map(|w| w.segments.iter().map(|s| s.handle))
                .collect();
            keys.push((xid, k));
        }
        let before = pair.server.sent.len();
        pair.serve(|xid, _| reply(xid, &[], Some(pattern(4000, 1))));
        let mut invalidated = 0;
        for (b, inv) in &pair.server.sent[before..] {
            if let Some(key) = inv {
                invalidated += 1;
                let xid = decode(b, &DecodeConfig::default()).unwrap().header.xid();
                let (_, ks) = keys.iter().find(|(x, _)| *x == xid).unwrap();
                assert!(ks.contains(key), "key {key:#x} of another call than {xid}");
            }
        }
        let both = client_r && server_r;
        assert_eq!(
            invalidated,
            if both { 2 } else { 0 },
            "R bits {client_r} {server_r}"
        );
        for xid in [70, 71] {
            assert!(pair
                .client
                .take_event(|e| matches!(e, Event::Reply { xid: x, .. } if *x == xid))
                .is_some());
        }
        pair.assert_no_leaks();
    }
}
