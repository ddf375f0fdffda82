//! One test per reading recorded in `docs/spec-notes.md` ("Wire codecs"
//! section); the test names carry the note numbers (W1, W2, ...).

use bytes::Bytes;
use rpcrdma_wire::{
    decode, ChunkLists, DecodeConfig, Direction, ErrorBody, ErrorCredits, HeaderError, InlineSize,
    InlineThresholds, PrivateData, V2Body, V2Header, Verdict, VersionRange,
};
use rpcrdma_xdr::Encode;

fn h(s: &str) -> Bytes {
    let clean: String = s.split_whitespace().collect();
    Bytes::from(hex::decode(clean).expect("test hex"))
}

fn reply_hex(buf: &str, cfg: &DecodeConfig) -> Option<String> {
    decode(&h(buf), cfg)
        .expect_err("rejected")
        .reply_bytes()
        .map(hex::encode)
}

//= rfc5666bis-04#section-5.5
//# To form an RDMA_ERROR procedure: The rdma_xid field MUST contain the same
//# XID that was in the rdma_xid field in the failing request; The rdma_vers
//# field MUST contain the same version that was in the rdma_vers field in the
//# failing request; The rdma_proc field MUST contain the value RDMA_ERROR;
//# The rdma_err field contains a value that reflects the type of error that
//# occurred, as described below.
#[test]
fn w1_error_reply_copies_xid_and_version_even_for_err_vers() {
    let cfg = DecodeConfig {
        versions: VersionRange::V1_ONLY,
        ..Default::default()
    };
    // A Version Two request to a Version One-only receiver: vers 2 copied,
    // range 1..1 (consistent with draft-cel-01 §5.2).
    assert_eq!(
        reply_hex("00000005 00000002 00000010 00000000 00000000 00000000 00000000 00000000 00000005 00000000", &cfg).unwrap(),
        "00000005000000020000001000000004000000010000000100000001"
    );
}

#[test]
fn w2_error_reply_credits_echo_or_grant() {
    let msg = "00000005 00000001 00000000 00000001 00000000 00000000 00000000";
    assert_eq!(
        reply_hex(msg, &DecodeConfig::default()).unwrap(),
        "0000000500000001000000010000000400000002"
    );
    let cfg = DecodeConfig {
        error_credits: ErrorCredits::Grant(128),
        ..Default::default()
    };
    assert_eq!(
        reply_hex(msg, &cfg).unwrap(),
        "0000000500000001000000800000000400000002"
    );
}

//= rfc5666bis-04#section-5.6.1
//# When receiving an RDMA_MSGP procedure, receivers SHOULD reply with an
//# RDMA_ERROR procedure, setting the rdma_err field to RDMA_ERR_BADHEADER.
//= rfc5666bis-04#section-5.6.2
//# When receiving an RDMA_DONE procedure, receivers SHOULD reply with an
//# RDMA_ERROR procedure, setting the rdma_err field to RDMA_ERR_BADHEADER.
#[test]
fn w3_msgp_and_done_get_badheader() {
    for p in ["00000002", "00000003"] {
        let r = reply_hex(
            &format!("00000005 00000001 00000001 {p} 00000000 00000000 00000000"),
            &DecodeConfig::default(),
        );
        assert_eq!(r.unwrap(), "0000000500000001000000010000000400000002");
    }
}

#[test]
fn w4_short_messages() {
    let cfg = DecodeConfig::default();
    assert_eq!(
        decode(&h("00000005 000000"), &cfg).unwrap_err().verdict,
        Verdict::Discard
    );
    assert_eq!(
        reply_hex("00000005 00000001 00000003", &cfg).unwrap(),
        "0000000500000001000000030000000400000002"
    );
    assert_eq!(
        reply_hex("00000005 00000009", &cfg).unwrap(),
        "00000005000000090000000100000004000000010000000100000002"
    );
}

#[test]
fn w5_error_in_unsupported_version_is_discarded() {
    let r = decode(
        &h("00000005 00000009 00000001 00000004 00000002"),
        &DecodeConfig::default(),
    )
    .unwrap_err();
    assert_eq!(r.verdict, Verdict::Discard);
}

#[test]
fn w6_undecodable_errors_are_discarded_but_padding_is_accepted() {
    // An rdma_err with no arm in Version One: discarded.
    let m = "00000005 00000001 00000001 00000004 00000003";
    assert_eq!(
        decode(&h(m), &DecodeConfig::default()).unwrap_err().verdict,
        Verdict::Discard,
        "{m}"
    );
    // Pad bytes after a complete error body: the error still ends its RPC.
    for (m, pad) in [
        ("00000005 00000001 00000001 00000004 00000002 00000000", 4),
        (
            "00000005 00000001 00000001 00000004 00000001 00000001 00000002 0000000000000000",
            8,
        ),
        ("00000005 00000002 00000001 00000004 00000002 00", 1),
    ] {
        let msg = decode(&h(m), &DecodeConfig::default()).unwrap_or_else(|e| panic!("{m}: {e}"));
        assert!(msg.header.error().is_some(), "{m}");
        assert_eq!(msg.payload.len(), pad, "{m}");
    }
}

#[test]
fn w7_nomsg_needs_a_chunk_that_holds_the_payload() {
    let only_write = "00000005 00000001 00000001 00000001 00000000 00000001 00000001 00000001 00000100 0000000000000000 00000000 00000000";
    let e = decode(&h(only_write), &DecodeConfig::default())
        .unwrap_err()
        .error;
    assert!(matches!(e, HeaderError::NoMsgWithoutChunks { .. }), "{e}");
}

#[test]
fn w8_msg_with_position_zero_chunk_is_rejected() {
    let m = "00000005 00000001 00000001 00000000 00000001 00000000 00000001 00000100 0000000000000000 00000000 00000000 00000000 00000005 00000000";
    let e = decode(&h(m), &DecodeConfig::default()).unwrap_err().error;
    assert!(
        matches!(e, HeaderError::PositionZeroWithPayload { .. }),
        "{e}"
    );
}

//= rfc5666bis-04#section-4.4.4
//# Segments MAY divide a chunk on any boundary that is convenient to the
//# requester.
#[test]
fn w9_read_list_in_any_order_is_accepted_and_grouped_by_position() {
    use rpcrdma_wire::Segment;
    let seg =
        |p: u32, handle: u32| format!("00000001 {p:08x} {handle:08x} 00000004 0000000000000000 ");
    // In order: accepted, as before.
    let m = format!(
        "00000005 00000001 00000001 00000000 {}{}{}00000000 00000000 00000000 00000005 00000000",
        seg(8, 1),
        seg(8, 2),
        seg(12, 3)
    );
    assert!(decode(&h(&m), &DecodeConfig::default()).is_ok());
    // Out of order, one chunk split in two runs: accepted (Linux's server
    // sorts and merges); the responder's view groups by Position, sorted,
    // segments of one Position in list order.
    let m = format!(
        "00000005 00000001 00000001 00000000 {}{}{}00000000 00000000 00000000 00000005 00000000",
        seg(12, 1),
        seg(8, 2),
        seg(12, 3)
    );
    let msg = decode(&h(&m), &DecodeConfig::default()).expect("accepted");
    let c = msg.header.chunks().unwrap();
    // The wire order is kept (a decoded header re-encodes byte for byte).
    assert_eq!(
        c.reads.iter().map(|r| r.position).collect::<Vec<_>>(),
        vec![12, 8, 12]
    );
    let by_pos = c.read_chunks_by_position();
    let handles = |segs: &[Segment]| segs.iter().map(|s| s.handle).collect::<Vec<_>>();
    assert_eq!(by_pos.len(), 2);
    assert_eq!(
        (by_pos[0].position, handles(&by_pos[0].segments)),
        (8, vec![2])
    );
    assert_eq!(
        (by_pos[1].position, handles(&by_pos[1].segments)),
        (12, vec![1, 3])
    );
    // Misaligned positions are still refused.
    let m = format!(
        "00000005 00000001 00000001 00000000 {}00000000 00000000 00000000 00000005 00000000",
        seg(6, 1)
    );
    assert!(matches!(
        decode(&h(&m), &DecodeConfig::default()).unwrap_err().error,
        HeaderError::MisalignedPosition { .. }
    ));
}

#[test]
fn w10_chunks_have_at_least_one_segment() {
    let m = "00000005 00000001 00000001 00000001 00000000 00000000 00000001 00000000";
    assert_eq!(
        decode(&h(m), &DecodeConfig::default()).unwrap_err().error,
        HeaderError::EmptyReplyChunk
    );
}

#[test]
fn w11_chunk_contents_are_not_a_header_error() {
    // A Read chunk at a position beyond the inline payload, and a Write
    // chunk far larger than anything the reply could hold: both valid
    // headers here; the engine / ULP report such mismatches (GARBAGE_ARGS).
    let m = "00000005 00000001 00000001 00000000 00000001 00001000 00000001 00000004 0000000000000000 00000000 00000001 00000001 00000002 ffffffff 0000000000000000 00000000 00000000 00000005 00000000";
    assert!(decode(&h(m), &DecodeConfig::default()).is_ok());
}

#[test]
fn w12_limits_are_named_and_enforced() {
    assert_eq!(
        (
            rpcrdma_wire::MAX_READ_SEGMENTS,
            rpcrdma_wire::MAX_WRITE_CHUNKS,
            rpcrdma_wire::MAX_SEGMENTS_PER_CHUNK
        ),
        (64, 16, 64)
    );
}

/// W14: a message whose bytes say it is a REPLY is never answered (RFC
/// 8166 §5.5: "a Version One requester MUST silently discard the
/// message"; an error names only an XID, which its receiver matches
/// against its own calls, those of the other direction). Version Two says
/// the direction in the header; Version One in the RPC `msg_type` after a
/// header that decodes, or by the chunk an `RDMA_NOMSG` carries. Where the
/// bytes do not tell (the chunk lists do not decode, or header and RPC
/// message disagree), the -04 text's "an RDMA_ERROR procedure MUST be
/// generated" stands.
#[test]
fn w14_replies_are_never_answered() {
    let cfg = DecodeConfig::default();
    let verdict = |m: &str| {
        let r = decode(&h(m), &cfg).unwrap_err();
        (
            r.direction,
            r.reply_bytes().map(hex::encode).unwrap_or_default(),
        )
    };
    let discard = |d: Direction| (Some(d), String::new());
    // Version Two: RDMA2_MSG REPLY whose RPC XID differs (the issue's
    // bytes: answered "00000005 00000002 ... 00000004 00000002" before).
    assert_eq!(
        verdict("00000005 00000002 00000040 00000000 00000001 00000000 00000000 00000000 00000006 00000001"),
        discard(Direction::Reply)
    );
    // ... the same as a CALL is answered.
    assert_eq!(
        verdict("00000005 00000002 00000040 00000000 00000000 00000000 00000000 00000000 00000006 00000000"),
        (
            Some(Direction::Call),
            "0000000500000002000000400000000400000002".to_owned()
        )
    );
    // RDMA2_NOMSG REPLY without its Reply chunk; RDMA2_OPTIONAL REPLY of an
    // unsupported type (draft §3.1 answers CALLs: an error is a REPLY).
    assert_eq!(
        verdict("00000011 00000002 00000001 00000001 00000001 00000000 00000000 00000000"),
        discard(Direction::Reply)
    );
    assert_eq!(
        verdict("00000005 00000002 00000007 00000005 00000001 00000009 00000000"),
        discard(Direction::Reply)
    );
    // Header and RPC message disagree: unknown, answered.
    assert_eq!(
        verdict("00000005 00000002 00000001 00000000 00000001 00000000 00000000 00000000 00000005 00000000").1,
        "0000000500000002000000010000000400000002"
    );
    // Version One: RDMA_MSG whose RPC msg_type is REPLY.
    assert_eq!(
        verdict("00000007 00000001 00000040 00000000 00000000 00000000 00000000 00000008 00000001"),
        discard(Direction::Reply)
    );
    // A Write list whose present flag is 2: nothing tells, answered.
    assert_eq!(
        verdict("0000000a 00000001 00000040 00000000 00000000 00000002 00000000 0000000a 00000001"),
        (None, "0000000a00000001000000400000000400000002".to_owned())
    );
    // Unsupported versions are answered ERR_VERS whatever follows (W1).
    assert_eq!(
        verdict("00000009 00000003 00000020 00000000 00000000 00000000 00000000 00000009 00000001"),
        (
            None,
            "00000009000000030000002000000004000000010000000100000002".to_owned()
        )
    );
}

#[test]
fn d1_v2_body_uses_chunk_lists_with_direction() {
    // `rpcrdma2_chunks` is undefined; `rpcrdma2_chunk_lists` begins with rdma_direction.
    let hdr = V2Header {
        xid: 5,
        credits: 1,
        body: V2Body::Msg {
            direction: Direction::Reply,
            chunks: ChunkLists::default(),
        },
    };
    assert_eq!(
        hex::encode(hdr.to_bytes()),
        "0000000500000002000000010000000000000001000000000000000000000000"
    );
}

#[test]
fn d2_v2_error_has_no_direction_field() {
    let hdr = V2Header {
        xid: 5,
        credits: 1,
        body: V2Body::Error(ErrorBody::BadHeader),
    };
    assert_eq!(
        hex::encode(hdr.to_bytes()),
        "0000000500000002000000010000000400000002"
    );
    assert_eq!(hdr.to_bytes().len(), 20);
    // A sender that put a direction word (REPLY = 1) first produces
    // "ERR_VERS" with a truncated range: undecodable, discarded.
    let with_dir = "00000005 00000002 00000001 00000004 00000001 00000002";
    assert_eq!(
        decode(&h(with_dir), &DecodeConfig::default())
            .unwrap_err()
            .verdict,
        Verdict::Discard
    );
}

#[test]
fn d3_v2_nomsg_has_no_payload() {
    let m = "00000005 00000002 00000001 00000001 00000000 00000000 00000000 00000001 00000001 00000001 00000100 0000000000000000 00000005";
    assert!(matches!(
        decode(&h(m), &DecodeConfig::default()).unwrap_err().error,
        HeaderError::UnexpectedPayload { .. }
    ));
}

/// D3: the Payload stream of an `RDMA2_NOMSG` must be where its direction
/// puts it: a CALL in a Position-Zero Read chunk, a REPLY in the Reply
/// chunk (a CALL with only a Reply chunk carries no call at all).
#[test]
fn d3_v2_nomsg_holds_its_payload_where_its_direction_says() {
    // Direction CALL, only a Reply chunk (the message of issue 9, item 1).
    let m = "00000011 00000002 00000001 00000001 00000000 00000000 00000000 00000001 00000001 00000001 00000400 00000000 00000000";
    let rej = decode(&h(m), &DecodeConfig::default()).unwrap_err();
    assert!(
        matches!(rej.error, HeaderError::NoMsgWrongChunk { .. }),
        "{}",
        rej.error
    );
    assert_eq!(
        hex::encode(rej.reply_bytes().unwrap()),
        "0000001100000002000000010000000400000002"
    );
    // Direction REPLY with only a Position-Zero Read chunk.
    let m = "00000011 00000002 00000001 00000001 00000001 00000001 00000000 00000001 00000400 0000000000000000 00000000 00000000 00000000";
    assert!(matches!(
        decode(&h(m), &DecodeConfig::default()).unwrap_err().error,
        HeaderError::NoMsgWrongChunk { .. }
    ));
    // The right chunk for each direction is accepted (a Long call may also
    // provide a Reply chunk).
    let call = "00000011 00000002 00000001 00000001 00000000 00000001 00000000 00000001 00000400 0000000000000000 00000000 00000000 00000001 00000001 00000002 00000400 0000000000000000";
    assert!(decode(&h(call), &DecodeConfig::default()).is_ok());
    let reply = "00000011 00000002 00000001 00000001 00000001 00000000 00000000 00000001 00000001 00000001 00000400 00000000 00000000";
    assert!(decode(&h(reply), &DecodeConfig::default()).is_ok());
}

//= draft-cel-01#section-4.2.1
//# o When the rdma_proc field has the value RDMA2_ERROR, an RPC Payload
//# Stream MUST NOT follow the Transport Header Stream.
#[test]
fn d4_inval_option_reply_copies_version_two() {
    let m = "00000005 00000002 00000007 00000005 00000000 00000009 00000000";
    assert_eq!(
        reply_hex(m, &DecodeConfig::default()).unwrap(),
        "0000000500000002000000070000000400000003"
    );
}

//= draft-cel-01#section-4.2.2
//# o When the rdma_proc field has the value RDMA2_MSG or RDMA2_NOMSG, the
//# value of the rdma_direction field MUST be the same as the value of the
//# associated RPC message's msg_type field.
#[test]
fn d5_v2_direction_must_match_msg_type() {
    let m =
        "00000005 00000002 00000001 00000000 00000001 00000000 00000000 00000000 00000005 00000000";
    assert!(matches!(
        decode(&h(m), &DecodeConfig::default()).unwrap_err().error,
        HeaderError::DirectionMismatch { .. }
    ));
}

//= rfc8797#section-4
//# Senders MUST set these bits to zero and receivers MUST ignore their value.
#[test]
fn p1_r_bit_is_the_low_bit_of_the_flags_byte() {
    assert!(PrivateData::decode(&h("f6ab0e18 01 01 00 00"))
        .unwrap()
        .remote_invalidation());
    assert!(!PrivateData::decode(&h("f6ab0e18 01 fe 00 00"))
        .unwrap()
        .remote_invalidation());
}

#[test]
fn p2_first_valid_identifier_wins() {
    // A false match (version byte 0xf6) at offset 0, the real message at 4.
    let (off, pd) = PrivateData::find(&h("f6ab0e18 f6ab0e18 01 01 07 0f")).unwrap();
    assert_eq!(off, 4);
    assert_eq!((pd.send_size.bytes(), pd.recv_size.bytes()), (8192, 16384));
}

//= rfc8797#section-5.1
//# In other words, the peer MUST behave as if a Private Data message was
//# received in which bit 15 of the Flags field is zero, and both Size fields
//# contain the value zero.
//= rfc8797#section-5.2
//# If the RPC-over-RDMA version 1 CM Private Data Format Identifier is not
//# present, an RPC-over-RDMA version 1 receiver MUST behave as if no
//# RPC-over-RDMA version 1 CM Private Data has been provided.
#[test]
fn p3_unusable_private_data_means_defaults() {
    for buf in ["", "00112233", "f6ab0e18 02 01 03 03", "f6ab0e18 01 01 03"] {
        assert_eq!(
            PrivateData::from_peer(Some(&h(buf))),
            PrivateData::DEFAULT,
            "{buf}"
        );
    }
}

#[test]
fn p4_sizes_round_down_and_clamp() {
    assert_eq!(InlineSize::from_bytes(2047), InlineSize(0));
    assert_eq!(InlineSize::from_bytes(262_144), InlineSize(255));
    assert_eq!(InlineSize::from_bytes(u32::MAX), InlineSize(255));
    assert_eq!(InlineSize(255).bytes(), 262_144);
}

//= rfc8797#section-1
//# To enable current RPC-over-RDMA version 1 implementations to interoperate
//# with implementations that support the private message format described in
//# this document, implementation of the private data message is OPTIONAL.
#[test]
fn p5_thresholds_from_either_end() {
    let client = PrivateData::new(4096, 8192, true);
    let server = PrivateData::new(16384, 2048, true);
    let c = InlineThresholds::derive(&client, &server);
    let s = InlineThresholds::derive(&server, &client);
    // client-to-server = min(client send, server recv); server-to-client =
    // min(server send, client recv); each end's send is the other's recv.
    assert_eq!((c.send, c.recv), (2048, 8192));
    assert_eq!((s.send, s.recv), (c.recv, c.send));
}
