//! RPC message headers, authentication and the server's dispatch decisions
//! for every reply status and authentication case.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use rpcrdma_oncrpc::msg::{
    decode_header, peek_kind, AcceptStat, AcceptedStatus, AuthFlavor, AuthStat, CallHeader, Header,
    MsgType, OpaqueAuth, RejectedReply, ReplyBody, ReplyHeader, MAX_AUTH_BYTES,
};
use rpcrdma_oncrpc::{
    mem, AuthSysError, AuthSysParams, Connection, Credential, Dispatch, MessageError, ProcError,
    ServeLimits, Services,
};
use rpcrdma_xdr::{Decoder, Encoder, Payload, XdrError};

fn enc(f: impl FnOnce(&mut Encoder<'_>)) -> Bytes {
    let mut b = BytesMut::new();
    f(&mut Encoder::new(&mut b));
    b.freeze()
}

#[test]
fn call_header_layout_is_rfc5531() {
    let h = CallHeader {
        xid: 0x0102_0304,
        prog: 100_003,
        vers: 3,
        proc_: 0,
        cred: OpaqueAuth::none(),
        verf: OpaqueAuth::none(),
    };
    let b = enc(|e| h.encode(e));
    let words: Vec<u32> = b
        .chunks(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert_eq!(words, vec![0x0102_0304, 0, 2, 100_003, 3, 0, 0, 0, 0, 0]);
    assert_eq!(b.len(), h.encoded_len());
    let mut d = Decoder::new(&b);
    assert_eq!(decode_header(&mut d).unwrap(), Header::Call(h));
    d.expect_end().unwrap();
}

//= rfc5666bis-04#section-7.3.5
//# The Reply header's msg_type field MUST contain the value REPLY.
//= rfc8167#section-5.2
//# Whether presented inline or as a separate chunk, the ONC RPC Reply header
//# MUST start with the same XID value that is present in the RPC-over-RDMA
//# header, and the RPC header's msg_type field MUST contain the value REPLY.
#[test]
fn every_reply_form_round_trips() {
    let statuses = [
        AcceptedStatus::Success,
        AcceptedStatus::ProgUnavail,
        AcceptedStatus::ProgMismatch { low: 2, high: 4 },
        AcceptedStatus::ProcUnavail,
        AcceptedStatus::GarbageArgs,
        AcceptedStatus::SystemErr,
        AcceptedStatus::Other(AcceptStat(77)),
    ];
    let mut replies: Vec<ReplyHeader> = statuses
        .iter()
        .map(|s| ReplyHeader::accepted(9, *s))
        .collect();
    replies.push(ReplyHeader::denied(
        9,
        RejectedReply::RpcMismatch { low: 2, high: 2 },
    ));
    for stat in 0..=15 {
        replies.push(ReplyHeader::denied(
            9,
            RejectedReply::AuthError(AuthStat(stat)),
        ));
    }
    for r in replies {
        let b = enc(|e| r.encode(e));
        assert_eq!(b.len(), r.encoded_len(), "{r:?}");
        let mut d = Decoder::new(&b);
        assert_eq!(decode_header(&mut d).unwrap(), Header::Reply(r.clone()));
        d.expect_end().unwrap();
        assert_eq!(peek_kind(&b), Some((9, MsgType::REPLY)));
    }
}

#[test]
fn reply_layouts_are_rfc5531() {
    let b = enc(|e| {
        ReplyHeader::accepted(1, AcceptedStatus::ProgMismatch { low: 2, high: 3 }).encode(e)
    });
    assert_eq!(
        &b[..],
        &[
            0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 2, 0,
            0, 0, 3
        ]
    );
    let b =
        enc(|e| ReplyHeader::denied(1, RejectedReply::AuthError(AuthStat::AUTH_TOOWEAK)).encode(e));
    assert_eq!(
        &b[..],
        &[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 5]
    );
}

#[test]
fn bad_reply_and_message_types_are_errors() {
    let b = enc(|e| {
        e.put_u32(5);
        e.put_u32(2);
    });
    assert!(matches!(
        decode_header(&mut Decoder::new(&b)),
        Err(MessageError::BadMsgType { xid: 5, value: 2 })
    ));
    let b = enc(|e| {
        e.put_u32(5);
        e.put_u32(1);
        e.put_u32(2);
    });
    assert!(matches!(
        decode_header(&mut Decoder::new(&b)),
        Err(MessageError::BadReplyStat { xid: 5, value: 2 })
    ));
    let b = enc(|e| {
        e.put_u32(5);
        e.put_u32(1);
        e.put_u32(1);
        e.put_u32(9);
    });
    assert!(matches!(
        decode_header(&mut Decoder::new(&b)),
        Err(MessageError::BadRejectStat { xid: 5, value: 9 })
    ));
}

#[test]
fn truncated_headers_are_errors_at_every_length() {
    let sys = AuthSysParams::new(3, "machine", 1, 2, vec![3, 4, 5]).unwrap();
    let h = CallHeader {
        xid: 77,
        prog: 1,
        vers: 2,
        proc_: 3,
        cred: sys.to_opaque_auth(),
        verf: OpaqueAuth::none(),
    };
    let b = enc(|e| h.encode(e));
    for n in 0..b.len() {
        let r = decode_header(&mut Decoder::new(&b[..n]));
        assert!(matches!(r, Err(MessageError::Xdr(_))), "length {n}: {r:?}");
    }
    let r = ReplyHeader::accepted(1, AcceptedStatus::ProgMismatch { low: 1, high: 2 });
    let b = enc(|e| r.encode(e));
    for n in 0..b.len() {
        assert!(
            decode_header(&mut Decoder::new(&b[..n])).is_err(),
            "length {n}"
        );
    }
}

#[test]
fn auth_sys_limits() {
    let long = "x".repeat(256);
    assert_eq!(
        AuthSysParams::new(0, long, 0, 0, vec![]),
        Err(AuthSysError::MachineNameTooLong { len: 256 })
    );
    assert_eq!(
        AuthSysParams::new(0, "m", 0, 0, vec![0; 17]),
        Err(AuthSysError::TooManyGids { count: 17 })
    );
    // The largest legal credential fits in 400 bytes.
    let max = AuthSysParams::new(u32::MAX, "y".repeat(255), 1, 2, vec![7; 16]).unwrap();
    let auth = max.to_opaque_auth();
    assert!(auth.body.len() <= MAX_AUTH_BYTES);
    assert_eq!(AuthSysParams::from_opaque_auth(&auth).unwrap(), max);
    // Wrong flavor, trailing bytes, too many gids on the wire.
    assert!(matches!(
        AuthSysParams::from_opaque_auth(&OpaqueAuth::none()),
        Err(AuthSysError::WrongFlavor { .. })
    ));
    let mut body = BytesMut::from(&auth.body[..]);
    body.extend_from_slice(&[0, 0, 0, 0]);
    let trailing = OpaqueAuth {
        flavor: AuthFlavor::AUTH_SYS,
        body: body.freeze(),
    };
    assert!(matches!(
        AuthSysParams::from_opaque_auth(&trailing),
        Err(AuthSysError::Malformed(XdrError::TrailingBytes { .. }))
    ));
    let gids17 = enc(|e| {
        e.put_u32(0);
        e.put_string("m");
        e.put_u32(0);
        e.put_u32(0);
        e.put_array(&[0u32; 17]);
    });
    let bad = OpaqueAuth {
        flavor: AuthFlavor::AUTH_SYS,
        body: gids17,
    };
    assert!(matches!(
        AuthSysParams::from_opaque_auth(&bad),
        Err(AuthSysError::Malformed(XdrError::TooLong { .. }))
    ));
    // Credential interpretation.
    assert_eq!(
        Credential::from_opaque_auth(&OpaqueAuth::none()).unwrap(),
        Credential::None
    );
    let none_body = OpaqueAuth {
        flavor: AuthFlavor::AUTH_NONE,
        body: Bytes::from_static(&[0; 4]),
    };
    assert!(matches!(
        Credential::from_opaque_auth(&none_body),
        Err(AuthSysError::NoneWithBody { len: 4 })
    ));
    let gss = OpaqueAuth {
        flavor: AuthFlavor::RPCSEC_GSS,
        body: Bytes::from_static(b"ctx!"),
    };
    assert_eq!(
        Credential::from_opaque_auth(&gss).unwrap(),
        Credential::Other(gss.clone())
    );
    assert_eq!(Credential::Other(gss.clone()).to_opaque_auth(), gss);
}

#[test]
fn open_enums_keep_unknown_values() {
    assert_eq!(format!("{:?}", AuthStat::AUTH_TOOWEAK), "AUTH_TOOWEAK");
    assert_eq!(format!("{:?}", AuthStat(99)), "AuthStat(99)");
    assert_eq!(AuthFlavor::RPCSEC_GSS.name(), Some("RPCSEC_GSS"));
    assert_eq!(AcceptStat::from(12).0, 12);
}

const PROG: u32 = 0x2000_0042;

/// A raw call: header fields, cred and verf given as (flavor, body).
fn raw_call(
    rpcvers: u32,
    prog: u32,
    vers: u32,
    proc_: u32,
    cred: (u32, &[u8]),
    verf: (u32, &[u8]),
    args: &[u8],
) -> Payload {
    Payload::inline_only(enc(|e| {
        e.put_u32(0xabcd);
        e.put_u32(0);
        e.put_u32(rpcvers);
        e.put_u32(prog);
        e.put_u32(vers);
        e.put_u32(proc_);
        e.put_u32(cred.0);
        e.put_opaque(cred.1);
        e.put_u32(verf.0);
        e.put_opaque(verf.1);
        e.put_fixed_opaque(args);
    }))
}

fn services() -> Services {
    let mut s = Services::new();
    s.program(PROG, 1).null();
    s.program(PROG, 3)
        .null()
        .proc(1, |_, x: u32| async move { Ok::<_, ProcError>(x) });
    s
}

async fn reply_of(s: &Services, call: Payload, conn: &Connection) -> Option<ReplyHeader> {
    let reply = match s.dispatch(&call, conn) {
        Dispatch::Drop(_) => return None,
        Dispatch::Reply(r) => r,
        Dispatch::Run { future, .. } => future.await,
    };
    match decode_header(&mut Decoder::with_ddp(&reply)).unwrap() {
        Header::Reply(r) => Some(r),
        Header::Call(_) => panic!("reply expected"),
    }
}

fn status(r: &ReplyHeader) -> Result<AcceptedStatus, RejectedReply> {
    match &r.body {
        ReplyBody::Accepted { status, verf } => {
            assert_eq!(verf, &OpaqueAuth::none());
            Ok(*status)
        }
        ReplyBody::Denied(d) => Err(*d),
    }
}

#[tokio::test]
async fn dispatch_answers_every_status_and_auth_case() {
    let (a, _b) = mem::pair(mem::MemConfig::default());
    let conn = Connection::open(a, Arc::new(Services::new()), ServeLimits::default());
    let s = services();
    let none: (u32, &[u8]) = (0, &[]);
    let sys = AuthSysParams::new(1, "m", 2, 3, vec![4])
        .unwrap()
        .to_opaque_auth();
    let sys_cred: (u32, &[u8]) = (1, &sys.body);
    let arg = 5u32.to_be_bytes();

    let cases: Vec<(&str, Payload, Result<AcceptedStatus, RejectedReply>)> = vec![
        (
            "success",
            raw_call(2, PROG, 3, 1, none, none, &arg),
            Ok(AcceptedStatus::Success),
        ),
        (
            "AUTH_SYS success",
            raw_call(2, PROG, 3, 1, sys_cred, none, &arg),
            Ok(AcceptedStatus::Success),
        ),
        (
            "PROG_UNAVAIL",
            raw_call(2, PROG + 1, 1, 0, none, none, &[]),
            Ok(AcceptedStatus::ProgUnavail),
        ),
        (
            "PROG_MISMATCH",
            raw_call(2, PROG, 2, 0, none, none, &[]),
            Ok(AcceptedStatus::ProgMismatch { low: 1, high: 3 }),
        ),
        (
            "PROC_UNAVAIL",
            raw_call(2, PROG, 3, 9, none, none, &[]),
            Ok(AcceptedStatus::ProcUnavail),
        ),
        (
            "GARBAGE_ARGS missing",
            raw_call(2, PROG, 3, 1, none, none, &[]),
            Ok(AcceptedStatus::GarbageArgs),
        ),
        (
            "GARBAGE_ARGS trailing",
            raw_call(2, PROG, 3, 1, none, none, &[0; 8]),
            Ok(AcceptedStatus::GarbageArgs),
        ),
        (
            "GARBAGE_ARGS for NULL",
            raw_call(2, PROG, 3, 0, none, none, &[0; 4]),
            Ok(AcceptedStatus::GarbageArgs),
        ),
        (
            "RPC_MISMATCH",
            raw_call(3, PROG, 3, 0, none, none, &[]),
            Err(RejectedReply::RpcMismatch { low: 2, high: 2 }),
        ),
        (
            "credential over 400 bytes",
            raw_call(2, PROG, 3, 0, (1, &[0; 404]), none, &[]),
            Err(RejectedReply::AuthError(AuthStat::AUTH_BADCRED)),
        ),
        (
            "verifier over 400 bytes",
            raw_call(2, PROG, 3, 0, none, (0, &[0; 401]), &[]),
            Err(RejectedReply::AuthError(AuthStat::AUTH_BADVERF)),
        ),
        (
            "AUTH_NONE with a body",
            raw_call(2, PROG, 3, 0, (0, &[1, 2, 3, 4]), none, &[]),
            Err(RejectedReply::AuthError(AuthStat::AUTH_BADCRED)),
        ),
        (
            "malformed AUTH_SYS",
            raw_call(2, PROG, 3, 0, (1, &[0, 0, 0, 1]), none, &[]),
            Err(RejectedReply::AuthError(AuthStat::AUTH_BADCRED)),
        ),
        (
            "AUTH_SYS with a non-NONE verifier",
            raw_call(2, PROG, 3, 0, sys_cred, (1, &[]), &[]),
            Err(RejectedReply::AuthError(AuthStat::AUTH_BADVERF)),
        ),
        (
            "AUTH_NONE verifier with a body",
            raw_call(2, PROG, 3, 0, none, (0, &[9; 8]), &[]),
            Err(RejectedReply::AuthError(AuthStat::AUTH_BADVERF)),
        ),
        (
            "unknown flavor",
            raw_call(2, PROG, 3, 0, (99, &[]), none, &[]),
            Err(RejectedReply::AuthError(AuthStat::AUTH_BADCRED)),
        ),
    ];
    for (what, call, want) in cases {
        let r = reply_of(&s, call, &conn)
            .await
            .unwrap_or_else(|| panic!("{what}: dropped"));
        assert_eq!(r.xid, 0xabcd, "{what}");
        assert_eq!(status(&r), want, "{what}");
    }

    // Messages nobody can answer are dropped.
    let reply_msg = Payload::inline_only(enc(|e| ReplyHeader::success(3).encode(e)));
    assert!(reply_of(&s, reply_msg, &conn).await.is_none());
    let short = Payload::inline_only(Bytes::from_static(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
    assert!(reply_of(&s, short, &conn).await.is_none());
    let weird = Payload::inline_only(Bytes::from_static(&[0, 0, 0, 1, 0, 0, 0, 7]));
    assert!(reply_of(&s, weird, &conn).await.is_none());
    conn.abort();
}

/// A Read chunk at a place the binding does not allow (here: a u32
/// argument) or left over is GARBAGE_ARGS (RFC 8166 §8.1.1).
//= rfc5666bis-04#section-8.1.1
//# In the first case, a responder MUST NOT process the Call message.
//= rfc5666bis-04#section-8.1.1
//# Both types of violations MUST be reported as described in Section 5.5.2.
//= rfc5666bis-04#section-5.5.2
//# A responder MAY also report the presence of a non-DDP-eligible data item
//# in a Read or Write chunk using RPC_GARBAGEARGS.
#[tokio::test]
async fn ddp_violations_in_arguments_are_garbage_args() {
    let (a, _b) = mem::pair(mem::MemConfig::default());
    let conn = Connection::open(a, Arc::new(Services::new()), ServeLimits::default());
    let s = services();
    let call = raw_call(2, PROG, 3, 1, (0, &[]), (0, &[]), &[]);
    let inline = call.inline().clone();
    let hdr = inline.len() as u32;
    // A chunk where the u32 argument should be.
    let misplaced =
        Payload::from_read_chunks(inline.clone(), [(hdr, Bytes::from_static(&[0, 0, 0, 5]))])
            .unwrap();
    let r = reply_of(&s, misplaced, &conn).await.unwrap();
    assert_eq!(status(&r), Ok(AcceptedStatus::GarbageArgs));
    // A chunk after the argument: never consumed.
    let mut with_arg = BytesMut::from(&inline[..]);
    with_arg.extend_from_slice(&5u32.to_be_bytes());
    let leftover =
        Payload::from_read_chunks(with_arg.freeze(), [(hdr + 4, Bytes::from_static(b"xyz"))])
            .unwrap();
    let r = reply_of(&s, leftover, &conn).await.unwrap();
    assert_eq!(status(&r), Ok(AcceptedStatus::GarbageArgs));
    conn.abort();
}

fn auth_strategy() -> impl Strategy<Value = OpaqueAuth> {
    (
        any::<u32>(),
        proptest::collection::vec(any::<u8>(), 0..=MAX_AUTH_BYTES),
    )
        .prop_map(|(f, b)| OpaqueAuth {
            flavor: AuthFlavor(f),
            body: Bytes::from(b),
        })
}

proptest! {
    #[test]
    fn call_headers_round_trip(xid: u32, prog: u32, vers: u32, proc_: u32,
                               cred in auth_strategy(), verf in auth_strategy()) {
        let h = CallHeader { xid, prog, vers, proc_, cred, verf };
        let b = enc(|e| h.encode(e));
        prop_assert_eq!(b.len(), h.encoded_len());
        let mut d = Decoder::new(&b);
        prop_assert_eq!(decode_header(&mut d).unwrap(), Header::Call(h));
        prop_assert!(d.expect_end().is_ok());
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = decode_header(&mut Decoder::new(&bytes));
        let p = Payload::inline_only(Bytes::from(bytes));
        let _ = rpcrdma_oncrpc::decode_reply::<u32>(&p, 1, 1, 1);
    }

    #[test]
    fn auth_sys_round_trips(stamp: u32, name in "[a-z0-9.-]{0,255}", uid: u32, gid: u32,
                            gids in proptest::collection::vec(any::<u32>(), 0..=16)) {
        let p = AuthSysParams::new(stamp, name, uid, gid, gids).unwrap();
        prop_assert_eq!(AuthSysParams::from_opaque_auth(&p.to_opaque_auth()).unwrap(), p);
    }
}
