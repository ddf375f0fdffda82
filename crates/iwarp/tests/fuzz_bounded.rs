//! The fuzz harness's functions (`rpcrdma_iwarp::fuzzing`), run bounded and
//! with a fixed seed: random octets, and valid FPDU streams with single
//! mutations (bit flips, cuts, duplicated and dropped ranges); and the
//! unmutated stream, whose every effect is checked.

use rpcrdma_iwarp::conn::{ConnError, Event, Phase};
use rpcrdma_iwarp::ddp::DdpHeader;
use rpcrdma_iwarp::fpdu::encode_fpdu;
use rpcrdma_iwarp::fuzzing::{codec_roundtrip, fpdu_stream, fpdu_stream_pieces_agree, Responder};
use rpcrdma_iwarp::rdmap::{Opcode, ReadRequest};
use rpcrdma_testkit::rng::XorShift;

fn fpdu(h: DdpHeader, payload: &[u8], crc: bool) -> Vec<u8> {
    let mut hb = Vec::new();
    h.emit(&mut hb);
    let mut out = bytes::BytesMut::new();
    encode_fpdu(&[&hb, payload], crc, &mut out).unwrap();
    out.to_vec()
}

/// A plausible peer stream, aimed at the regions of `r` (every responder
/// has the same ones): the Write RTR, a Send in two segments, a Send with
/// Solicited Event, an RDMA Write of "data" into the writable region and an
/// RDMA Read Request for 8 octets of the readable one.
fn valid_stream(r: &Responder) -> Vec<u8> {
    let crc = r.crc;
    let mut s = fpdu(DdpHeader::tagged(true, Opcode::WRITE, 0, 0), &[], crc);
    s.extend(fpdu(
        DdpHeader::untagged(false, Opcode::SEND, 0, 0, 1, 0),
        b"first ",
        crc,
    ));
    s.extend(fpdu(
        DdpHeader::untagged(true, Opcode::SEND, 0, 0, 1, 6),
        b"half",
        crc,
    ));
    s.extend(fpdu(
        DdpHeader::untagged(true, Opcode::SEND_SE, 0, 0, 2, 0),
        b"se",
        crc,
    ));
    s.extend(fpdu(
        DdpHeader::tagged(
            true,
            Opcode::WRITE,
            r.write_target.key,
            r.write_target.addr + 8,
        ),
        b"data",
        crc,
    ));
    let rr = ReadRequest {
        sink_stag: 5,
        sink_to: 0,
        size: 8,
        src_stag: r.read_source.key,
        src_to: r.read_source.addr,
    };
    s.extend(fpdu(
        DdpHeader::untagged(true, Opcode::READ_REQUEST, 0, 1, 1, 0),
        &rr.to_bytes(),
        crc,
    ));
    s
}

#[test]
fn random_inputs() {
    let mut rng = XorShift::new(0x9e37_79b9_7f4a_7c15);
    for _ in 0..3000 {
        let len = rng.below(300);
        let data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        codec_roundtrip(&data);
        fpdu_stream(&data);
        fpdu_stream_pieces_agree(&data);
    }
}

#[test]
fn mutated_valid_streams() {
    let mut rng = XorShift::new(0x0123_4567_89ab_cdef);
    for i in 0..3000 {
        let crc = i % 2 == 0;
        let mut s = vec![(rng.next_u64() as u8 & 0xfe) | u8::from(crc)];
        s.extend(valid_stream(&Responder::new(crc)));
        match rng.below(4) {
            0 => {
                let at = 1 + rng.below(s.len() - 1);
                s[at] ^= 1 << rng.below(8);
            }
            1 => s.truncate(1 + rng.below(s.len() - 1)),
            2 => {
                let a = 1 + rng.below(s.len() - 1);
                let b = a + rng.below(s.len() - a);
                let dup = s[a..b].to_vec();
                s.splice(b..b, dup);
            }
            _ => {
                let a = 1 + rng.below(s.len() - 1);
                let b = a + rng.below(s.len() - a);
                s.drain(a..b);
            }
        }
        codec_roundtrip(&s[1..]);
        fpdu_stream(&s);
        fpdu_stream_pieces_agree(&s);
    }
}

#[test]
fn unmutated_stream_keeps_the_connection_up_until_eof() {
    for crc in [false, true] {
        for piece in [1, 3, 7, 64, 1 << 16] {
            let mut r = Responder::new(crc);
            let stream = valid_stream(&r);
            r.feed(&stream, piece);
            let ctx = format!("crc {crc}, pieces of {piece}");
            // Still up, nothing refused.
            assert_eq!(r.conn.phase(), Phase::Connected, "{ctx}");
            assert_eq!(r.conn.error(), None, "{ctx}");
            // Both Sends landed whole, in order, the second solicited.
            let recvs: Vec<_> = r
                .completions
                .iter()
                .map(|wc| (wc.wr_id, wc.data().map(<[u8]>::to_vec), wc.solicited))
                .collect();
            assert_eq!(
                recvs,
                vec![
                    (0, Some(b"first half".to_vec()), false),
                    (1, Some(b"se".to_vec()), true)
                ],
                "{ctx}"
            );
            // The Write was placed where it was aimed.
            let placed = r.mrs.buffer(r.write_target.key).unwrap();
            assert_eq!(&placed[8..12], b"data", "{ctx}");
            assert!(placed[..8].iter().chain(&placed[12..]).all(|&b| b == 0));
            // The Read Request was answered with a Read Response, and
            // nothing was terminated.
            let sent = r.sent_messages();
            let opcodes: Vec<_> = sent.iter().map(|(h, _)| h.control.opcode).collect();
            assert_eq!(opcodes, vec![Opcode::READ_RESPONSE], "{ctx}");
            assert_eq!(sent[0].1.len(), 8, "{ctx}");
            // Only the peer's EOF ends it, cleanly, at an FPDU boundary.
            while r.conn.poll_event().is_some() {}
            r.eof();
            assert_eq!(r.conn.phase(), Phase::Closed, "{ctx}");
            assert_eq!(r.conn.error(), Some(&ConnError::PeerClosed), "{ctx}");
            assert!(matches!(
                r.conn.poll_event(),
                Some(Event::Closed(ConnError::PeerClosed))
            ));
            assert!(r
                .sent_messages()
                .iter()
                .all(|(h, _)| h.control.opcode != Opcode::TERMINATE));
        }
        // The harness function agrees on the same stream.
        let mut s = vec![u8::from(crc) | 0x10];
        s.extend(valid_stream(&Responder::new(crc)));
        fpdu_stream(&s);
    }
}
