//! Version One: the §5.7 XDR examples as golden vectors, and every verdict
//! path of §5.5/§5.6.

use bytes::Bytes;
use rpcrdma_wire::{
    decode, Action, ChunkLists, DecodeConfig, Direction, ErrorBody, ErrorCredits,
    ErrorMessageDefect, Header, HeaderError, Limits, ReadSegment, Segment, V1Body, V1Header,
    Verdict, VersionRange, WriteChunk,
};
use rpcrdma_xdr::Encode;

/// Hex with any whitespace.
fn h(s: &str) -> Bytes {
    let clean: String = s.split_whitespace().collect();
    Bytes::from(hex::decode(clean).expect("test hex"))
}

fn w(v: u32) -> String {
    format!("{v:08x} ")
}

/// The §5.7 notation: a segment "HLOO" with handle H, length L, offset OO.
fn hloo(hd: u32, len: u32, off: u64) -> String {
    format!("{hd:08x} {len:08x} {off:016x} ")
}

fn seg(handle: u32, length: u32, offset: u64) -> Segment {
    Segment {
        handle,
        length,
        offset,
    }
}

fn prefix(xid: u32, vers: u32, credits: u32, proc_: u32) -> String {
    format!("{} {} {} {}", w(xid), w(vers), w(credits), w(proc_))
}

fn ok(buf: &Bytes) -> rpcrdma_wire::Message {
    decode(buf, &DecodeConfig::default()).unwrap_or_else(|e| panic!("expected valid, got {e}"))
}

fn rejected(buf: &Bytes) -> rpcrdma_wire::Rejection {
    match decode(buf, &DecodeConfig::default()) {
        Ok(m) => panic!("expected a rejection, got {m:?}"),
        Err(r) => r,
    }
}

/// Asserts a BADHEADER reply with exactly the given bytes.
fn assert_badheader(buf: &Bytes, xid: u32, vers: u32, credits: u32) -> HeaderError {
    let r = rejected(buf);
    assert_eq!(r.error.action(), Action::ReplyBadHeader, "{}", r.error);
    let want = h(&(prefix(xid, vers, credits, 4) + &w(2)));
    assert_eq!(r.reply_bytes().unwrap(), want, "{}", r.error);
    r.error
}

const XID: u32 = 0x1234_abcd;
const RPC_CALL: &str = "1234abcd 00000000 00000002 000186a3 00000003 00000000";

// ---------------------------------------------------------------------
// §5.7 golden vectors
// ---------------------------------------------------------------------

//= rfc5666bis-04#section-5.2.4
//# The Transport stream contains the four fixed fields, followed by the Read
//# and Write lists and the Reply chunk, though any or all three MAY be marked
//# as not present.
#[test]
fn golden_no_chunks_is_three_zero_words() {
    // "after the four fixed fields ... simply three 32-bit fields that contain zero"
    let bytes = h(&(prefix(XID, 1, 32, 0) + "00000000 00000000 00000000 " + RPC_CALL));
    let m = ok(&bytes);
    assert_eq!(m.header_len, 28);
    assert_eq!(m.header.chunks(), Some(&ChunkLists::default()));
    assert_eq!(m.header.to_bytes(), bytes.slice(..28));
    assert_eq!(m.payload, bytes.slice(28..));
}

#[test]
fn golden_read_chunk_of_three_segments() {
    // "1 PHLOO 1 PHLOO 1 PHLOO 0" with the same P for one Read chunk.
    let p = 16u32;
    let list = w(1)
        + &w(p)
        + &hloo(0x11, 100, 0x1000)
        + &w(1)
        + &w(p)
        + &hloo(0x22, 200, 0x2000)
        + &w(1)
        + &w(p)
        + &hloo(0x33, 300, 0x3000)
        + &w(0);
    let bytes = h(&(prefix(XID, 1, 1, 0) + &list + "00000000 00000000 " + RPC_CALL));
    let m = ok(&bytes);
    let c = m.header.chunks().unwrap();
    assert_eq!(
        c.reads,
        vec![
            ReadSegment {
                position: p,
                target: seg(0x11, 100, 0x1000)
            },
            ReadSegment {
                position: p,
                target: seg(0x22, 200, 0x2000)
            },
            ReadSegment {
                position: p,
                target: seg(0x33, 300, 0x3000)
            },
        ]
    );
    let chunks: Vec<_> = c.read_chunks().collect();
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].data_len(), 600);
    assert_eq!(m.header.to_bytes(), bytes.slice(..m.header_len));
}

#[test]
fn golden_write_list_of_three_and_two_segments() {
    // "1 3 HLOO HLOO HLOO 1 2 HLOO HLOO 0"
    let list = w(1)
        + &w(3)
        + &hloo(1, 10, 100)
        + &hloo(2, 20, 200)
        + &hloo(3, 30, 300)
        + &w(1)
        + &w(2)
        + &hloo(4, 40, 400)
        + &hloo(5, 50, 500)
        + &w(0);
    let bytes = h(&(prefix(XID, 1, 1, 0) + &w(0) + &list + &w(0) + RPC_CALL));
    let m = ok(&bytes);
    let c = m.header.chunks().unwrap();
    assert_eq!(
        c.writes,
        vec![
            WriteChunk::new(vec![seg(1, 10, 100), seg(2, 20, 200), seg(3, 30, 300)]),
            WriteChunk::new(vec![seg(4, 40, 400), seg(5, 50, 500)]),
        ]
    );
    assert_eq!(m.header.to_bytes(), bytes.slice(..m.header_len));
}

#[test]
fn golden_reply_chunk_of_two_segments() {
    // "1 2 HLOO HLOO"
    let reply = w(1) + &w(2) + &hloo(9, 4096, 0xffff_0000_0000_0000) + &hloo(10, 4096, 1);
    let bytes = h(&(prefix(XID, 1, 1, 0) + &w(0) + &w(0) + &reply + RPC_CALL));
    let m = ok(&bytes);
    let c = m.header.chunks().unwrap();
    assert_eq!(
        c.reply,
        Some(WriteChunk::new(vec![
            seg(9, 4096, 0xffff_0000_0000_0000),
            seg(10, 4096, 1)
        ]))
    );
    assert_eq!(c.reply.as_ref().unwrap().data_len(), 8192);
    assert_eq!(m.header.to_bytes(), bytes.slice(..m.header_len));
}

//= rfc5666bis-04#section-3.2.2
//# The RPC-over-RDMA Version One protocol assumes that each segment of
//# registered memory MUST be identified with a steering tag of no more than
//# 32 bits and memory addresses of up to 64 bits in length.
#[test]
fn golden_segment_layouts() {
    // HLOO and PHLOO, field by field.
    let s = seg(0x0102_0304, 0x0506_0708, 0x090a_0b0c_0d0e_0f10);
    let mut buf = bytes::BytesMut::new();
    s.encode(&mut rpcrdma_xdr::Encoder::new(&mut buf));
    assert_eq!(hex::encode(&buf), "0102030405060708090a0b0c0d0e0f10");
    let r = ReadSegment {
        position: 0x44,
        target: s,
    };
    buf.clear();
    r.encode(&mut rpcrdma_xdr::Encoder::new(&mut buf));
    assert_eq!(
        hex::encode(&buf),
        "000000440102030405060708090a0b0c0d0e0f10"
    );
}

//= rfc5666bis-04#section-5
//# All RPC-over-RDMA header content is contained in the Transport stream, and
//# thus MUST be XDR encoded.
//= rfc5666bis-04#section-5.2.2
//# For RPC-over-RDMA Version One, this field MUST contain the value one (1).
#[test]
fn encoder_matches_golden_bytes() {
    let hdr = V1Header {
        xid: XID,
        credits: 1,
        body: V1Body::Msg(ChunkLists {
            reads: vec![],
            writes: vec![WriteChunk::new(vec![seg(1, 10, 100)])],
            reply: Some(WriteChunk::new(vec![seg(9, 4096, 0)])),
        }),
    };
    let want = h(&(prefix(XID, 1, 1, 0)
        + &w(0)
        + &w(1)
        + &w(1)
        + &hloo(1, 10, 100)
        + &w(0)
        + &w(1)
        + &w(1)
        + &hloo(9, 4096, 0)));
    assert_eq!(hdr.to_bytes(), want);
    assert_eq!(hdr.encoded_len(), want.len());
}

// ---------------------------------------------------------------------
// Valid forms
// ---------------------------------------------------------------------

#[test]
fn nomsg_with_position_zero_read_chunk_is_valid() {
    let bytes = h(&(prefix(XID, 1, 8, 1)
        + &w(1)
        + &w(0)
        + &hloo(7, 2000, 0x8000)
        + &w(0)
        + &w(0)
        + &w(0)));
    let m = ok(&bytes);
    assert!(
        matches!(&m.header, Header::V1(V1Header { body: V1Body::NoMsg(c), .. }) if c.has_position_zero())
    );
    assert!(m.payload.is_empty());
    assert_eq!(m.header.to_bytes(), bytes);
}

#[test]
fn nomsg_with_reply_chunk_is_valid() {
    let bytes = h(&(prefix(XID, 1, 8, 1) + &w(0) + &w(0) + &w(1) + &w(1) + &hloo(7, 2000, 0)));
    assert_eq!(ok(&bytes).header.to_bytes(), bytes);
}

#[test]
fn msg_with_reduced_read_chunk_is_valid() {
    // Read chunk at position 24: a DDP-eligible argument after the RPC header.
    let bytes = h(&(prefix(XID, 1, 8, 0)
        + &w(1)
        + &w(24)
        + &hloo(7, 8192, 0)
        + &w(0)
        + &w(0)
        + &w(0)
        + RPC_CALL));
    let m = ok(&bytes);
    assert_eq!(m.payload.len(), 24);
}

#[test]
fn error_messages_decode() {
    let vers = h(&(prefix(XID, 1, 5, 4) + &w(1) + &w(1) + &w(1)));
    let m = ok(&vers);
    assert_eq!(m.header.error(), Some(&ErrorBody::Vers { low: 1, high: 1 }));
    assert_eq!(m.header.to_bytes(), vers);
    let bad = h(&(prefix(XID, 1, 5, 4) + &w(2)));
    assert_eq!(ok(&bad).header.error(), Some(&ErrorBody::BadHeader));
}

#[test]
fn payload_is_a_zero_copy_slice() {
    let bytes = h(&(prefix(XID, 1, 32, 0) + "00000000 00000000 00000000 " + RPC_CALL));
    let m = ok(&bytes);
    assert_eq!(m.payload.as_ptr(), bytes[28..].as_ptr());
}

// ---------------------------------------------------------------------
// Verdicts
// ---------------------------------------------------------------------

#[test]
fn too_short_to_answer_is_discarded() {
    for len in [0usize, 1, 4, 7] {
        let r = rejected(&Bytes::from(vec![0u8; len]));
        assert_eq!(r.verdict, Verdict::Discard, "len {len}");
        assert!(matches!(r.error, HeaderError::TooShort { .. }));
    }
}

//= rfc5666bis-04#section-5.5.1
//# When a receiver detects an RPC-over-RDMA header version that it does not
//# support (currently this document defines only Version One), it MUST reply
//# with an RDMA_ERROR procedure and set the rdma_err value to RDMA_ERR_VERS,
//# also providing the low and high inclusive version numbers it does, in
//# fact, support.
#[test]
fn unsupported_version_gets_err_vers_with_our_range() {
    for vers in [0u32, 3, 0x0100_0000, u32::MAX] {
        let bytes = h(&(prefix(XID, vers, 17, 0) + "00000000 00000000 00000000"));
        let r = rejected(&bytes);
        assert_eq!(r.error.action(), Action::ReplyVers);
        // xid and vers copied, credits echoed, RDMA_ERROR, ERR_VERS, 1..2
        assert_eq!(
            r.reply_bytes().unwrap(),
            h(&(prefix(XID, vers, 17, 4) + &w(1) + &w(1) + &w(2)))
        );
    }
}

#[test]
fn version_one_only_receiver_answers_one_to_one() {
    let cfg = DecodeConfig {
        versions: VersionRange::V1_ONLY,
        ..DecodeConfig::default()
    };
    let bytes = h(&(prefix(XID, 2, 1, 0) + &w(0) + "00000000 00000000 00000000 " + RPC_CALL));
    let r = decode(&bytes, &cfg).unwrap_err();
    assert_eq!(
        r.reply_bytes().unwrap(),
        h(&(prefix(XID, 2, 1, 4) + &w(1) + &w(1) + &w(1)))
    );
}

#[test]
fn version_only_message_gets_err_vers() {
    // Eight bytes: enough to answer ERR_VERS (credits unknown: 1).
    let r = rejected(&h(&(w(XID) + &w(9))));
    assert_eq!(
        r.reply_bytes().unwrap(),
        h(&(prefix(XID, 9, 1, 4) + &w(1) + &w(1) + &w(2)))
    );
}

#[test]
fn error_of_unsupported_version_is_discarded() {
    let r = rejected(&h(&(prefix(XID, 7, 1, 4) + &w(1) + &w(7) + &w(7))));
    assert_eq!(r.verdict, Verdict::Discard);
    assert_eq!(
        r.error,
        HeaderError::UndecodableError(ErrorMessageDefect::UnsupportedVersion(7))
    );
}

#[test]
fn truncated_prefix_with_known_version_is_badheader() {
    // 8..15 bytes: rdma_credit / rdma_proc missing.
    assert_badheader(&h(&(w(XID) + &w(1))[..]), XID, 1, 1);
    let r = rejected(&h(&(w(XID) + &w(1) + &w(6))));
    assert!(matches!(
        r.error,
        HeaderError::Xdr {
            field: "rdma_proc",
            ..
        }
    ));
    assert_eq!(r.reply_bytes().unwrap(), h(&(prefix(XID, 1, 6, 4) + &w(2))));
}

#[test]
fn unknown_proc_is_badheader() {
    for p in [5u32, 6, 0xffff_ffff] {
        let e = assert_badheader(
            &h(&(prefix(XID, 1, 3, p) + "00000000 00000000 00000000")),
            XID,
            1,
            3,
        );
        assert_eq!(e, HeaderError::UnknownProc { vers: 1, value: p });
    }
}

#[test]
fn msgp_and_done_are_badheader() {
    // §5.6.1 / §5.6.2: "receivers SHOULD reply with an RDMA_ERROR procedure,
    // setting the rdma_err field to RDMA_ERR_BADHEADER".
    let msgp = h(&(prefix(XID, 1, 3, 2) + "00000000 00000400 00000000 00000000 00000000"));
    let e = assert_badheader(&msgp, XID, 1, 3);
    assert!(matches!(e, HeaderError::ObsoleteProc { .. }));
    let done = h(&prefix(XID, 1, 3, 3));
    assert!(matches!(
        assert_badheader(&done, XID, 1, 3),
        HeaderError::ObsoleteProc { .. }
    ));
}

//= rfc5666bis-04#section-5.5
//# If errors are detected in an RPC-over-RDMA header, an RDMA_ERROR procedure
//# MUST be generated.
//= rfc5666bis-04#section-5.5.2
//# If the rdma_vers field contains a recognized value, but an XDR parsing
//# error occurs, the responder MUST reply with an RDMA_ERROR procedure and
//# set the rdma_err value to RDMA_ERR_BADHEADER.
#[test]
fn truncated_chunk_lists_are_badheader() {
    let full = h(&(prefix(XID, 1, 2, 0)
        + &w(1)
        + &w(8)
        + &hloo(7, 100, 0)
        + &w(0)
        + &w(1)
        + &w(2)
        + &hloo(1, 1, 1)
        + &hloo(2, 2, 2)));
    // Every cut inside the chunk lists is an XDR error.
    for cut in 16..full.len() {
        let e = assert_badheader(&full.slice(..cut), XID, 1, 2);
        assert!(matches!(e, HeaderError::Xdr { .. }), "cut {cut}: {e}");
    }
}

#[test]
fn bad_discriminators_are_badheader() {
    for (at, field) in [
        (0usize, "rdma_reads"),
        (1, "rdma_writes"),
        (2, "rdma_reply"),
    ] {
        let mut words = [w(0), w(0), w(0)];
        words[at] = w(2);
        let bytes = h(&(prefix(XID, 1, 2, 0) + &words.concat() + RPC_CALL));
        let e = assert_badheader(&bytes, XID, 1, 2);
        assert!(
            matches!(e, HeaderError::Xdr { field: f, .. } if f == field),
            "{e}"
        );
    }
}

#[test]
fn limits_are_enforced_before_allocation() {
    let lim = Limits::default();
    // 65 read segments.
    let reads: String = (0..=lim.max_read_segments)
        .map(|i| w(1) + &w(8) + &hloo(i, 4, 0))
        .collect();
    let e = assert_badheader(
        &h(&(prefix(XID, 1, 1, 0) + &reads + &w(0) + &w(0) + &w(0) + RPC_CALL)),
        XID,
        1,
        1,
    );
    assert_eq!(e, HeaderError::TooManyReadSegments { max: 64 });
    // 17 write chunks.
    let writes: String = (0..=lim.max_write_chunks)
        .map(|i| w(1) + &w(1) + &hloo(i, 4, 0))
        .collect();
    let e = assert_badheader(
        &h(&(prefix(XID, 1, 1, 0) + &w(0) + &writes + &w(0) + &w(0) + RPC_CALL)),
        XID,
        1,
        1,
    );
    assert_eq!(e, HeaderError::TooManyWriteChunks { max: 16 });
    // 65 segments in one write chunk, and in the reply chunk.
    let chunk = w(65) + &(0..65).map(|i| hloo(i, 4, 0)).collect::<String>();
    let e = assert_badheader(
        &h(&(prefix(XID, 1, 1, 0) + &w(0) + &w(1) + &chunk + &w(0) + &w(0) + RPC_CALL)),
        XID,
        1,
        1,
    );
    assert!(matches!(
        e,
        HeaderError::TooManySegments {
            count: 65,
            max: 64,
            ..
        }
    ));
    let e = assert_badheader(
        &h(&(prefix(XID, 1, 1, 1) + &w(0) + &w(0) + &w(1) + &chunk)),
        XID,
        1,
        1,
    );
    assert!(matches!(
        e,
        HeaderError::TooManySegments {
            list: "the Reply chunk",
            ..
        }
    ));
    // A huge count with nothing behind it.
    let e = assert_badheader(
        &h(&(prefix(XID, 1, 1, 1) + &w(0) + &w(0) + &w(1) + &w(0xffff_ffff))),
        XID,
        1,
        1,
    );
    assert!(matches!(
        e,
        HeaderError::TooManySegments {
            count: 0xffff_ffff,
            ..
        }
    ));
    // A count within the limit but larger than the bytes present.
    let e = assert_badheader(
        &h(&(prefix(XID, 1, 1, 1) + &w(0) + &w(0) + &w(1) + &w(64) + &hloo(1, 1, 1))),
        XID,
        1,
        1,
    );
    assert!(matches!(
        e,
        HeaderError::Xdr {
            field: "rdma_reply",
            ..
        }
    ));
}

#[test]
fn custom_limits_apply() {
    let cfg = DecodeConfig {
        limits: Limits {
            max_read_segments: 1,
            max_write_chunks: 1,
            max_segments_per_chunk: 1,
        },
        ..DecodeConfig::default()
    };
    let two_reads = h(&(prefix(XID, 1, 1, 0)
        + &w(1)
        + &w(8)
        + &hloo(1, 4, 0)
        + &w(1)
        + &w(8)
        + &hloo(2, 4, 0)
        + &w(0)
        + &w(0)
        + &w(0)
        + RPC_CALL));
    assert_eq!(
        decode(&two_reads, &cfg).unwrap_err().error,
        HeaderError::TooManyReadSegments { max: 1 }
    );
    assert!(decode(&two_reads, &DecodeConfig::default()).is_ok());
}

//= rfc5666bis-04#section-4.4.5.1
//# The value in this field MUST be a multiple of four.
#[test]
fn misaligned_position_is_badheader() {
    for pos in [1u32, 2, 3, 5, 22] {
        let bytes = h(&(prefix(XID, 1, 1, 0)
            + &w(1)
            + &w(pos)
            + &hloo(1, 4, 0)
            + &w(0)
            + &w(0)
            + &w(0)
            + RPC_CALL));
        let e = assert_badheader(&bytes, XID, 1, 1);
        assert_eq!(
            e,
            HeaderError::MisalignedPosition {
                index: 0,
                position: pos
            }
        );
    }
}

#[test]
fn read_segments_in_any_order_are_accepted() {
    // Positions 8, 16, 8 (the chunk at 8 split in two runs) and 16, 8
    // (chunks out of Position order): accepted, wire order kept (W9).
    for order in [&[8u32, 16, 8][..], &[16, 8]] {
        let reads = order
            .iter()
            .map(|p| w(1) + &w(*p) + &hloo(*p, 4, 0))
            .collect::<String>();
        let bytes = h(&(prefix(XID, 1, 1, 0) + &reads + &w(0) + &w(0) + &w(0) + RPC_CALL));
        let m = decode(&bytes, &DecodeConfig::default()).expect("accepted");
        let c = m.header.chunks().unwrap();
        assert_eq!(
            c.reads.iter().map(|r| r.position).collect::<Vec<_>>(),
            order.to_vec()
        );
        let sorted: Vec<u32> = c
            .read_chunks_by_position()
            .iter()
            .map(|c| c.position)
            .collect();
        assert_eq!(sorted, vec![8, 16]);
    }
}

#[test]
fn empty_write_and_reply_chunks_are_badheader() {
    let bytes = h(&(prefix(XID, 1, 1, 0) + &w(0) + &w(1) + &w(0) + &w(0) + &w(0) + RPC_CALL));
    assert_eq!(
        assert_badheader(&bytes, XID, 1, 1),
        HeaderError::EmptyWriteChunk { index: 0 }
    );
    let bytes = h(&(prefix(XID, 1, 1, 0) + &w(0) + &w(0) + &w(1) + &w(0) + RPC_CALL));
    assert_eq!(
        assert_badheader(&bytes, XID, 1, 1),
        HeaderError::EmptyReplyChunk
    );
}

#[test]
fn msg_without_payload_is_badheader() {
    let bytes = h(&(prefix(XID, 1, 1, 0) + "00000000 00000000 00000000"));
    assert_eq!(
        assert_badheader(&bytes, XID, 1, 1),
        HeaderError::MissingPayload {
            proc_name: "RDMA_MSG"
        }
    );
}

#[test]
fn msg_payload_too_short_for_xid_is_badheader() {
    let bytes = h(&(prefix(XID, 1, 1, 0) + "00000000 00000000 00000000 1234ab"));
    assert!(matches!(
        assert_badheader(&bytes, XID, 1, 1),
        HeaderError::PayloadTooShort {
            len: 3,
            what: "XID"
        }
    ));
}

//= rfc5666bis-04#section-5.2.1
//# This XID MUST be the same as the XID in the RPC message.
#[test]
fn xid_mismatch_is_badheader() {
    let bytes = h(&(prefix(XID, 1, 1, 0) + "00000000 00000000 00000000 deadbeef 00000000"));
    assert_eq!(
        assert_badheader(&bytes, XID, 1, 1),
        HeaderError::XidMismatch {
            rdma_xid: XID,
            rpc_xid: 0xdead_beef
        }
    );
}

#[test]
fn msg_with_position_zero_read_chunk_is_badheader() {
    let bytes = h(&(prefix(XID, 1, 1, 0)
        + &w(1)
        + &w(0)
        + &hloo(1, 100, 0)
        + &w(0)
        + &w(0)
        + &w(0)
        + RPC_CALL));
    assert!(matches!(
        assert_badheader(&bytes, XID, 1, 1),
        HeaderError::PositionZeroWithPayload { .. }
    ));
}

//= rfc5666bis-04#section-5.2.4
//# Though any of these MAY be marked as not present, one MUST be present and
//# MUST hold the Payload stream for this RPC-over-RDMA message.
#[test]
fn nomsg_without_chunk_lists_is_badheader() {
    let bytes = h(&(prefix(XID, 1, 1, 1) + "00000000 00000000 00000000"));
    assert_eq!(
        assert_badheader(&bytes, XID, 1, 1),
        HeaderError::NoMsgWithoutChunks {
            proc_name: "RDMA_NOMSG"
        }
    );
}

#[test]
fn nomsg_whose_chunks_cannot_hold_the_payload_is_badheader() {
    // Only a Write list.
    let bytes =
        h(&(prefix(XID, 1, 1, 1) + &w(0) + &w(1) + &w(1) + &hloo(1, 100, 0) + &w(0) + &w(0)));
    assert!(matches!(
        assert_badheader(&bytes, XID, 1, 1),
        HeaderError::NoMsgWithoutChunks { .. }
    ));
    // Only a Read chunk at a non-zero position.
    let bytes =
        h(&(prefix(XID, 1, 1, 1) + &w(1) + &w(8) + &hloo(1, 100, 0) + &w(0) + &w(0) + &w(0)));
    assert!(matches!(
        assert_badheader(&bytes, XID, 1, 1),
        HeaderError::NoMsgWithoutChunks { .. }
    ));
}

#[test]
fn nomsg_followed_by_bytes_is_badheader() {
    // A Long call (Position-Zero Read chunk) followed by bytes.
    let bytes = h(&(prefix(XID, 1, 1, 1)
        + &w(1)
        + &w(0)
        + &hloo(7, 2000, 0)
        + &w(0)
        + &w(0)
        + &w(0)
        + RPC_CALL));
    assert_eq!(
        assert_badheader(&bytes, XID, 1, 1),
        HeaderError::UnexpectedPayload {
            proc_name: "RDMA_NOMSG",
            len: 24
        }
    );
    // With only a Reply chunk it is a reply (E8), never answered (W14).
    let bytes =
        h(&(prefix(XID, 1, 1, 1) + &w(0) + &w(0) + &w(1) + &w(1) + &hloo(7, 2000, 0) + RPC_CALL));
    let r = rejected(&bytes);
    assert_eq!(
        r.error,
        HeaderError::UnexpectedPayload {
            proc_name: "RDMA_NOMSG",
            len: 24
        }
    );
    assert_eq!(
        (r.verdict, r.direction),
        (Verdict::Discard, Some(Direction::Reply))
    );
}

//= rfc5666bis-04#section-5.5
//# A receiver MUST silently discard an RDMA_ERROR procedure that cannot be
//# decoded.
#[test]
fn undecodable_errors_are_discarded() {
    let cases = [
        // no rdma_err
        (prefix(XID, 1, 1, 4), "truncated"),
        // ERR_VERS without rdma_vers_high
        (prefix(XID, 1, 1, 4) + &w(1) + &w(1), "truncated"),
        // rdma_err 3 does not exist in Version One
        (prefix(XID, 1, 1, 4) + &w(3), "code"),
        (prefix(XID, 1, 1, 4) + &w(0), "code"),
    ];
    for (hexs, what) in cases {
        let r = rejected(&h(&hexs));
        assert_eq!(r.verdict, Verdict::Discard, "{what}: {}", r.error);
        assert!(
            matches!(r.error, HeaderError::UndecodableError(_)),
            "{what}"
        );
    }
}

#[test]
fn error_reply_credits_follow_the_policy() {
    let bytes = h(&(prefix(XID, 1, 0, 0) + "00000000 00000000 00000000"));
    // Echo raises 0 to 1.
    assert_eq!(rejected(&bytes).reply().unwrap().credits, 1);
    let cfg = DecodeConfig {
        error_credits: ErrorCredits::Grant(64),
        ..DecodeConfig::default()
    };
    assert_eq!(
        decode(&bytes, &cfg).unwrap_err().reply().unwrap().credits,
        64
    );
}

#[test]
fn header_errors_name_the_problem() {
    let bytes = h(&(prefix(XID, 1, 1, 0) + "00000000 00000000 00000000 deadbeef 00000000"));
    let msg = rejected(&bytes).error.to_string();
    assert!(
        msg.contains("0x1234abcd") && msg.contains("0xdeadbeef"),
        "{msg}"
    );
}
