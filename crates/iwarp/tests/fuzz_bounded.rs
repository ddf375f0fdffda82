//! The fuzz harness's functions (`rpcrdma_iwarp::fuzzing`), run bounded and
//! with a fixed seed: random octets, and valid FPDU streams with single
//! mutations (bit flips, cuts, duplicated and dropped ranges).

use rpcrdma_iwarp::ddp::DdpHeader;
use rpcrdma_iwarp::fpdu::encode_fpdu;
use rpcrdma_iwarp::fuzzing::{codec_roundtrip, fpdu_stream};
use rpcrdma_iwarp::rdmap::{Opcode, ReadRequest};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn fpdu(h: DdpHeader, payload: &[u8], crc: bool) -> Vec<u8> {
    let mut hb = Vec::new();
    h.emit(&mut hb);
    let mut out = bytes::BytesMut::new();
    encode_fpdu(&[&hb, payload], crc, &mut out).unwrap();
    out.to_vec()
}

/// A plausible peer stream: RTR, Sends, Writes, a Read Request.
fn valid_stream(crc: bool) -> Vec<u8> {
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
        DdpHeader::tagged(true, Opcode::WRITE, 0x1234, 0),
        b"data",
        crc,
    ));
    let rr = ReadRequest {
        sink_stag: 5,
        sink_to: 0,
        size: 8,
        src_stag: 9,
        src_to: 0,
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
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..3000 {
        let len = rng.below(300);
        let data: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        codec_roundtrip(&data);
        fpdu_stream(&data);
    }
}

#[test]
fn mutated_valid_streams() {
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    for i in 0..3000 {
        let crc = i % 2 == 0;
        let mut s = vec![(rng.next() as u8 & 0xfe) | u8::from(crc)];
        s.extend(valid_stream(crc));
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
    }
}

#[test]
fn unmutated_stream_keeps_the_connection_up_until_eof() {
    for crc in [false, true] {
        let mut s = vec![u8::from(crc) | 0x10];
        s.extend(valid_stream(crc));
        // Ends in the Read Request for an unknown STag: a Terminate, which
        // fpdu_stream checks is well formed and unique.
        fpdu_stream(&s);
    }
}
