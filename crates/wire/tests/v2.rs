//! Version Two (draft-cel-nfsv4-rpcrdma-version-two-01 §4.2): message forms,
//! payload-presence rules (§4.2.1), direction rules (§4.2.2), the option
//! registry (§3.1), and every verdict path.

use bytes::Bytes;
use rpcrdma_wire::{
    decode, Action, ChunkLists, DecodeConfig, Direction, ErrorBody, Header, HeaderError,
    OptionType, Optional, Segment, V2Body, V2Header, Verdict, WriteChunk,
};
use rpcrdma_xdr::Encode;

fn h(s: &str) -> Bytes {
    let clean: String = s.split_whitespace().collect();
    Bytes::from(hex::decode(clean).expect("test hex"))
}

fn w(v: u32) -> String {
    format!("{v:08x} ")
}

fn prefix(xid: u32, credits: u32, proc_: u32) -> String {
    format!("{} {} {} {}", w(xid), w(2), w(credits), w(proc_))
}

const XID: u32 = 0x0bad_cafe;
const CALL: &str = "0badcafe 00000000 00000002 000186a3 00000004 00000000";
const REPLY: &str = "0badcafe 00000001 00000000";

fn ok(buf: &Bytes) -> rpcrdma_wire::Message {
    decode(buf, &DecodeConfig::default()).unwrap_or_else(|e| panic!("expected valid, got {e}"))
}

fn rejected(buf: &Bytes) -> rpcrdma_wire::Rejection {
    decode(buf, &DecodeConfig::default()).expect_err("expected a rejection")
}

fn badheader(buf: &Bytes) -> HeaderError {
    let r = rejected(buf);
    assert_eq!(r.error.action(), Action::ReplyBadHeader, "{}", r.error);
    assert_eq!(
        r.reply_bytes().unwrap(),
        h(&(prefix(XID, 9, 4) + &w(2))),
        "{}",
        r.error
    );
    r.error
}

#[test]
fn msg_call_and_reply() {
    let call = h(&(prefix(XID, 9, 0) + &w(0) + "00000000 00000000 00000000 " + CALL));
    let m = ok(&call);
    assert_eq!(m.header_len, 32);
    assert_eq!(m.header.proc_name(), "RDMA2_MSG");
    assert_eq!(m.header.direction(), Some(Direction::Call));
    assert_eq!(m.header.to_bytes(), call.slice(..32));

    let reply = h(&(prefix(XID, 9, 0) + &w(1) + "00000000 00000000 00000000 " + REPLY));
    let m = ok(&reply);
    assert_eq!(m.header.direction(), Some(Direction::Reply));
}

#[test]
fn nomsg_with_reply_chunk() {
    // A Long reply: direction REPLY, the message in the Reply chunk.
    let bytes = h(&(prefix(XID, 9, 1)
        + &w(1)
        + &w(0)
        + &w(0)
        + &w(1)
        + &w(1)
        + "00000005 00001000 0000000000000000"));
    let m = ok(&bytes);
    let want = V2Header {
        xid: XID,
        credits: 9,
        body: V2Body::NoMsg {
            direction: Direction::Reply,
            chunks: ChunkLists {
                reply: Some(WriteChunk::new(vec![Segment {
                    handle: 5,
                    length: 4096,
                    offset: 0,
                }])),
                ..ChunkLists::default()
            },
        },
    };
    assert_eq!(m.header, Header::V2(want));
    assert_eq!(m.header.to_bytes(), bytes);
}

#[test]
fn error_messages() {
    for (body, want) in [
        (w(1) + &w(1) + &w(2), ErrorBody::Vers { low: 1, high: 2 }),
        (w(2), ErrorBody::BadHeader),
        (w(3), ErrorBody::InvalOption),
    ] {
        let bytes = h(&(prefix(XID, 9, 4) + &body));
        let m = ok(&bytes);
        assert_eq!(m.header.error(), Some(&want));
        // §4.2.2: the direction of an RDMA2_ERROR is always REPLY.
        assert_eq!(m.header.direction(), Some(Direction::Reply));
        assert_eq!(m.header.to_bytes(), bytes);
    }
}

//= draft-cel-01#section-3.1
//# When an implementation does not recognize or support the value contained
//# in the rdma_opttype field, it MUST send an RPC-over-RDMA message with the
//# rdma_xid field set to the same value as the erroneous message, the
//# rdma_proc field set to RDMA2_ERROR, and the rdma_err field set to
//# RDMA2_ERR_INVAL_OPTION.
#[test]
fn optional_is_answered_with_inval_option_by_default() {
    // §3.1: no option type is supported yet, so every one is refused.
    let bytes = h(&(prefix(XID, 9, 5) + &w(0) + &w(77) + &w(3) + "aabbcc00"));
    let r = rejected(&bytes);
    assert_eq!(r.error, HeaderError::UnsupportedOption { opttype: 77 });
    assert_eq!(r.reply_bytes().unwrap(), h(&(prefix(XID, 9, 4) + &w(3))));
}

//= draft-cel-01#section-4.2.1
//# o When the rdma_proc field has the value RDMA2_OPTIONAL, all, part of, or
//# no RPC Payload Stream MAY follow the Transport header Stream in the Send
//# buffer.
#[test]
fn optional_with_a_registered_type_is_valid() {
    let mut cfg = DecodeConfig::default();
    cfg.options.insert(OptionType(77));
    let bytes = h(&(prefix(XID, 9, 5) + &w(1) + &w(77) + &w(3) + "aabbcc00" + REPLY));
    let m = decode(&bytes, &cfg).unwrap();
    let Header::V2(V2Header {
        body: V2Body::Optional(o),
        ..
    }) = &m.header
    else {
        panic!("not optional: {:?}", m.header)
    };
    assert_eq!(
        o,
        &Optional {
            direction: Direction::Reply,
            opttype: OptionType(77),
            optinfo: Bytes::from_static(&[0xaa, 0xbb, 0xcc])
        }
    );
    // §4.2.1: all, part or none of a Payload stream MAY follow.
    assert_eq!(m.payload.len(), 12);
    assert_eq!(m.header_len, 32);
    assert_eq!(m.header.to_bytes(), bytes.slice(..32));
}

#[test]
fn optional_xdr_errors_come_before_the_registry() {
    // A malformed RDMA2_OPTIONAL is a bad header, whatever its type.
    let bad_dir = h(&(prefix(XID, 9, 5) + &w(7) + &w(77) + &w(0)));
    assert!(matches!(
        badheader(&bad_dir),
        HeaderError::Xdr {
            field: "rdma_optdir",
            ..
        }
    ));
    let short_info = h(&(prefix(XID, 9, 5) + &w(0) + &w(77) + &w(100) + "aabbccdd"));
    assert!(matches!(
        badheader(&short_info),
        HeaderError::Xdr {
            field: "rdma_optinfo",
            ..
        }
    ));
}

//= draft-cel-01#section-4.2.1
//# o When the rdma_proc field has the value RDMA2_MSG, an RPC Payload Stream
//# MUST follow the Transport Header Stream in the Send buffer.
#[test]
fn msg_rules() {
    // Direction must be CALL or REPLY.
    let e = badheader(&h(&(prefix(XID, 9, 0)
        + &w(2)
        + "00000000 00000000 00000000 "
        + CALL)));
    assert!(matches!(
        e,
        HeaderError::Xdr {
            field: "rdma_direction",
            ..
        }
    ));
    // Direction must match the RPC msg_type.
    let e = badheader(&h(&(prefix(XID, 9, 0)
        + &w(1)
        + "00000000 00000000 00000000 "
        + CALL)));
    assert_eq!(
        e,
        HeaderError::DirectionMismatch {
            field: "rdma_direction",
            direction: 1,
            msg_type: 0
        }
    );
    // A payload must be present (§4.2.1) ...
    let e = badheader(&h(&(prefix(XID, 9, 0)
        + &w(0)
        + "00000000 00000000 00000000")));
    assert_eq!(
        e,
        HeaderError::MissingPayload {
            proc_name: "RDMA2_MSG"
        }
    );
    // ... long enough for XID and msg_type ...
    let e = badheader(&h(&(prefix(XID, 9, 0)
        + &w(0)
        + "00000000 00000000 00000000 0badcafe")));
    assert!(matches!(
        e,
        HeaderError::PayloadTooShort {
            what: "msg_type",
            ..
        }
    ));
    // ... with the transport XID.
    let e = badheader(&h(&(prefix(XID, 9, 0)
        + &w(0)
        + "00000000 00000000 00000000 00000001 00000000")));
    assert!(matches!(e, HeaderError::XidMismatch { .. }));
}

#[test]
fn nomsg_rules() {
    let e = badheader(&h(&(prefix(XID, 9, 1)
        + &w(0)
        + "00000000 00000000 00000000")));
    assert_eq!(
        e,
        HeaderError::NoMsgWithoutChunks {
            proc_name: "RDMA2_NOMSG"
        }
    );
    let e = badheader(&h(&(prefix(XID, 9, 1)
        + &w(0)
        + &w(1)
        + &w(0)
        + "00000001 00000000 0000000000000000 "
        + &w(0)
        + &w(0)
        + &w(0)
        + CALL)));
    assert!(matches!(
        e,
        HeaderError::UnexpectedPayload {
            proc_name: "RDMA2_NOMSG",
            ..
        }
    ));
}

#[test]
fn unknown_procs_are_bad_header() {
    // The v2 body union has no default arm and no RDMA_MSGP / RDMA_DONE.
    for p in [2u32, 3, 6, 0xffff_ffff] {
        let e = badheader(&h(&(prefix(XID, 9, p)
            + &w(0)
            + "00000000 00000000 00000000")));
        assert_eq!(e, HeaderError::UnknownProc { vers: 2, value: p });
    }
}

#[test]
fn undecodable_v2_errors_are_discarded() {
    for body in [String::new(), w(1) + &w(1), w(4)] {
        let r = rejected(&h(&(prefix(XID, 9, 4) + &body)));
        assert_eq!(r.verdict, Verdict::Discard, "{body}: {}", r.error);
    }
}

#[test]
fn truncations_never_panic_and_are_bad_header() {
    let full = h(&(prefix(XID, 9, 0)
        + &w(0)
        + &w(1)
        + &w(8)
        + "00000001 00000002 0000000000000003 "
        + &w(0)
        + &w(0)
        + &w(0)
        + CALL));
    assert!(decode(&full, &DecodeConfig::default()).is_ok());
    for cut in 16..52 {
        let r = rejected(&full.slice(..cut));
        assert_eq!(r.error.action(), Action::ReplyBadHeader, "cut {cut}");
    }
}
