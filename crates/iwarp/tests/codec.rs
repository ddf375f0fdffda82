//! Round trips and hostile input for the MPA / DDP / RDMAP wire codecs.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use rpcrdma_iwarp::ddp::{Buffer, Control, DdpHeader};
use rpcrdma_iwarp::fpdu::{encode_fpdu, fpdu_len, pad_len, parse_fpdu, FpduError};
use rpcrdma_iwarp::mpa::{FrameKind, IrdOrd, MpaError, MpaFlags, MpaFrame, MPA_MAX_PRIVATE_DATA};
use rpcrdma_iwarp::rdmap::{Opcode, ReadRequest, TermError, Terminate};

fn arb_ird_ord() -> impl Strategy<Value = IrdOrd> {
    (0u16..=0x3fff, 0u16..=0x3fff, any::<[bool; 4]>()).prop_map(|(ird, ord, b)| IrdOrd {
        ird,
        ord,
        peer_to_peer: b[0],
        send_rtr: b[1],
        write_rtr: b[2],
        read_rtr: b[3],
    })
}

fn arb_frame() -> impl Strategy<Value = MpaFrame> {
    (
        any::<bool>(),
        any::<u8>(),
        prop_oneof![Just(1u8), Just(2u8), any::<u8>()],
        arb_ird_ord(),
        proptest::collection::vec(any::<u8>(), 0..=508),
    )
        .prop_map(|(req, flags, revision, w, pd)| {
            let flags = MpaFlags(flags);
            let enhanced = revision == 2 && flags.has(MpaFlags::ENHANCED);
            MpaFrame {
                kind: if req {
                    FrameKind::Request
                } else {
                    FrameKind::Reply
                },
                flags,
                revision,
                ird_ord: enhanced.then_some(w),
                private_data: Bytes::from(pd),
            }
        })
}

proptest! {
    #[test]
    fn mpa_frames_round_trip(f in arb_frame(), cut in 0usize..600) {
        let mut wire = BytesMut::new();
        f.emit(&mut wire).unwrap();
        prop_assert_eq!(wire.len(), f.buffer_len());
        let (g, used) = MpaFrame::parse(&wire).unwrap().unwrap();
        prop_assert_eq!(used, wire.len());
        prop_assert_eq!(&g, &f);
        // Any strict prefix is "need more", never an error or a frame.
        let cut = cut.min(wire.len().saturating_sub(1));
        prop_assert_eq!(MpaFrame::parse(&wire[..cut]), Ok(None));
    }

    #[test]
    fn mpa_parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = MpaFrame::parse(&b);
        let mut k = b"MPA ID Rep Frame".to_vec();
        k.extend_from_slice(&b);
        if let Ok(Some((f, used))) = MpaFrame::parse(&k) {
            prop_assert!(used <= k.len());
            prop_assert!(f.pd_length() <= MPA_MAX_PRIVATE_DATA);
        }
    }

    #[test]
    fn ddp_headers_round_trip(
        tagged in any::<bool>(), last in any::<bool>(), c in any::<[u8; 2]>(),
        stag in any::<u32>(), to in any::<u64>(), w in any::<[u32; 4]>(),
    ) {
        let mut control = Control::from_bytes(c);
        control.tagged = tagged;
        control.last = last;
        let buffer = if tagged {
            Buffer::Tagged { stag, to }
        } else {
            Buffer::Untagged { rdmap_word: w[0], qn: w[1], msn: w[2], mo: w[3] }
        };
        let h = DdpHeader { control, buffer };
        let mut v = Vec::new();
        h.emit(&mut v);
        prop_assert_eq!(v.len(), h.buffer_len());
        prop_assert_eq!(DdpHeader::parse(&v), Ok((h, v.len())));
        for cut in 0..v.len() {
            prop_assert!(DdpHeader::parse(&v[..cut]).is_err());
        }
    }

    #[test]
    fn fpdus_round_trip(payload in proptest::collection::vec(any::<u8>(), 0..3000), crc in any::<bool>(), flip in any::<usize>()) {
        let mut out = BytesMut::new();
        encode_fpdu(&[&payload], crc, &mut out).unwrap();
        prop_assert_eq!(out.len(), fpdu_len(payload.len()));
        prop_assert_eq!(out.len() % 4, 0);
        let (f, used) = parse_fpdu(&out, crc).unwrap().unwrap();
        prop_assert_eq!(f.ulpdu, &payload[..]);
        prop_assert_eq!(used, out.len());
        // The pad is zero.
        let pad = pad_len(payload.len());
        prop_assert!(out[2 + payload.len()..2 + payload.len() + pad].iter().all(|&b| b == 0));
        // Any single bit flip after the length field is caught by the CRC.
        if crc {
            let i = 2 + flip % (out.len() - 2);
            out[i] ^= 1 << (flip % 8);
            let bad = matches!(parse_fpdu(&out, true), Err(FpduError::BadCrc { .. }));
            prop_assert!(bad);
        }
    }

    #[test]
    fn fpdu_parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200), crc in any::<bool>()) {
        if let Ok(Some((f, used))) = parse_fpdu(&b, crc) {
            prop_assert!(used <= b.len());
            prop_assert!(f.ulpdu.len() < used);
        }
    }

    #[test]
    fn terminate_parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
        if let Ok(t) = Terminate::parse(&b) {
            let mut v = Vec::new();
            t.emit(&mut v);
            prop_assert_eq!(&v[..], &b[..v.len()]);
        }
    }

    #[test]
    fn read_requests_round_trip(a in any::<(u32, u64, u32, u32, u64)>()) {
        let rr = ReadRequest { sink_stag: a.0, sink_to: a.1, size: a.2, src_stag: a.3, src_to: a.4 };
        prop_assert_eq!(ReadRequest::parse(&rr.to_bytes()), Some(rr));
    }
}

#[test]
fn private_data_limits() {
    let f = MpaFrame {
        kind: FrameKind::Request,
        flags: MpaFlags(MpaFlags::ENHANCED),
        revision: 2,
        ird_ord: Some(IrdOrd::default()),
        private_data: Bytes::from(vec![0u8; 509]),
    };
    assert_eq!(
        f.emit(&mut BytesMut::new()),
        Err(MpaError::PrivateDataTooLong { len: 513, max: 512 })
    );
    // On the wire: PD_Length 513 is refused as soon as the header is read.
    let mut hdr = b"MPA ID Req Frame".to_vec();
    hdr.extend_from_slice(&[0, 1, 0x02, 0x01]);
    assert_eq!(
        MpaFrame::parse(&hdr),
        Err(MpaError::PrivateDataTooLong { len: 513, max: 512 })
    );
    // Enhanced flag with fewer than 4 octets of private data.
    let mut hdr = b"MPA ID Req Frame".to_vec();
    hdr.extend_from_slice(&[MpaFlags::ENHANCED, 2, 0, 3, 1, 2, 3]);
    assert_eq!(
        MpaFrame::parse(&hdr),
        Err(MpaError::MissingIrdOrd { pd_len: 3 })
    );
    // Revision 1 ignores the H bit: no IRD/ORD word is taken.
    let mut hdr = b"MPA ID Req Frame".to_vec();
    hdr.extend_from_slice(&[MpaFlags::ENHANCED, 1, 0, 1, 9]);
    let (f, _) = MpaFrame::parse(&hdr).unwrap().unwrap();
    assert_eq!((f.ird_ord, &f.private_data[..]), (None, &[9u8][..]));
}

#[test]
fn kernel_client_request_decodes() {
    // The MPA Request the Linux NFS client sends over siw (interop README):
    // rev 2, enhanced, IRD 0x80 / ORD 0, then RFC 8797 private data.
    let mut wire = b"MPA ID Req Frame".to_vec();
    wire.extend_from_slice(&[0x10, 2, 0, 12, 0x00, 0x80, 0x00, 0x00]);
    wire.extend_from_slice(&[0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3]);
    let (f, used) = MpaFrame::parse(&wire).unwrap().unwrap();
    assert_eq!(used, wire.len());
    assert_eq!(f.kind, FrameKind::Request);
    assert_eq!(
        f.ird_ord,
        Some(IrdOrd {
            ird: 0x80,
            ..IrdOrd::default()
        })
    );
    assert_eq!(&f.private_data[..], &[0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3]);
}

#[test]
fn opcode_table() {
    assert_eq!(Opcode::SEND_SE_INVALIDATE.tagged(), Some(false));
    assert_eq!(Opcode::READ_RESPONSE.tagged(), Some(true));
    assert_eq!(Opcode(9).tagged(), None);
    assert!(Opcode::SEND_SE_INVALIDATE.invalidates() && Opcode::SEND_SE_INVALIDATE.solicited());
    assert!(!Opcode::SEND.invalidates() && !Opcode::WRITE.is_send());
    assert_eq!(format!("{:?}", Opcode(12)), "Opcode(12)");
    assert_eq!(
        TermError::DDP_UNTAGGED_NO_BUFFER.to_string(),
        "DDP untagged buffer: invalid MSN, no buffer available"
    );
}
