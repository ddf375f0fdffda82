//! Entry points for the fuzz harness (`fuzz/fuzz_targets/fpdu.rs`, with
//! cargo-afl) and for the bounded runs in `cargo test`. Each panics only
//! when an invariant breaks.

use std::time::Instant;

use bytes::{Bytes, BytesMut};
use rpcrdma_verbs::{Access, MrBuffer, RecvWr};

use crate::conn::{Config, Connection, Event, Phase};
use crate::ddp::DdpHeader;
use crate::fpdu::{encode_fpdu, parse_fpdu};
use crate::mpa::{FrameKind, IrdOrd, MpaFlags, MpaFrame};
use crate::mr::MrTable;
use crate::rdmap::{Opcode, ReadRequest, Terminate};

/// Decodes `data` with every codec; whatever decodes must re-encode to the
/// same octets.
pub fn codec_roundtrip(data: &[u8]) {
    if let Ok(Some((f, used))) = MpaFrame::parse(data) {
        let mut out = BytesMut::new();
        f.emit(&mut out).expect("a parsed MPA frame re-encodes");
        assert_eq!(&out[..], &data[..used], "MPA frame round trip");
    }
    if let Ok(Some((f, used))) = parse_fpdu(data, false) {
        assert!(used <= data.len() && f.ulpdu.len() < used);
        let mut out = BytesMut::new();
        encode_fpdu(&[f.ulpdu], false, &mut out).expect("a parsed FPDU re-encodes");
        // Pad octets and the CRC field are not checked without CRC.
        assert_eq!(&out[..2 + f.ulpdu.len()], &data[..2 + f.ulpdu.len()]);
    }
    if let Ok((h, n)) = DdpHeader::parse(data) {
        let mut out = Vec::new();
        h.emit(&mut out);
        assert_eq!(&out[..], &data[..n], "DDP header round trip");
    }
    if let Ok(t) = Terminate::parse(data) {
        let mut out = Vec::new();
        t.emit(&mut out);
        assert_eq!(&out[..], &data[..out.len()], "Terminate round trip");
    }
    if let Some(rr) = ReadRequest::parse(data) {
        assert_eq!(&rr.to_bytes()[..], &data[..28]);
    }
}

fn keys() -> impl FnMut() -> u32 {
    let mut x = 0x2545_f491_u32;
    move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    }
}

/// A connected responder fed `data` as the peer's FPDU stream. The first
/// octet picks CRC (bit 0) and how the stream is cut into reads (bits 1-7).
///
/// Invariants: no panic; the connection is either still connected or
/// closed with everything flushed; every octet it sends parses as FPDUs
/// with valid headers; at most one Terminate.
pub fn fpdu_stream(data: &[u8]) {
    let Some((&cfg, data)) = data.split_first() else {
        return;
    };
    let crc = cfg & 1 == 1;
    let chunk = usize::from(cfg >> 1) + 1;
    let mut keys = keys();
    let mut mrs = MrTable::new(16);
    let now = Instant::now();
    let mut conn = Connection::responder(Config::default(), now).expect("default config is valid");
    let req = MpaFrame {
        kind: FrameKind::Request,
        flags: MpaFlags(MpaFlags::ENHANCED | if crc { MpaFlags::CRC } else { 0 }),
        revision: 2,
        ird_ord: Some(IrdOrd {
            ird: 4,
            ord: 4,
            peer_to_peer: true,
            write_rtr: true,
            ..IrdOrd::default()
        }),
        private_data: Bytes::new(),
    };
    let mut wire = BytesMut::new();
    req.emit(&mut wire).expect("valid request");
    conn.handle_bytes(&wire, &mut mrs);
    while conn.poll_event().is_some() {}
    conn.accept(Bytes::new()).expect("accept");
    let mut sent = BytesMut::new();
    conn.poll_transmit(&mut sent);
    let reply_len = sent.len();
    // Regions a hostile stream can aim at, and receive buffers.
    for (len, access) in [
        (64, Access::REMOTE_WRITE),
        (64, Access::LOCAL_WRITE),
        (64, Access::REMOTE_READ | Access::LOCAL_WRITE),
    ] {
        mrs.register(MrBuffer::Owned(BytesMut::zeroed(len)), access, &mut keys)
            .expect("register");
    }
    for i in 0..4 {
        let _ = conn.post_recv(RecvWr {
            wr_id: i,
            buf: BytesMut::zeroed(32),
        });
    }
    for piece in data.chunks(chunk) {
        conn.handle_bytes(piece, &mut mrs);
        conn.poll_transmit(&mut sent);
        while conn.poll_completion().is_some() {}
    }
    conn.handle_eof();
    conn.poll_transmit(&mut sent);
    let mut closed = 0;
    while let Some(e) = conn.poll_event() {
        if matches!(e, Event::Closed(_)) {
            closed += 1;
        }
    }
    assert_eq!(
        conn.phase(),
        Phase::Closed,
        "EOF always ends the connection"
    );
    assert!(closed <= 1);
    assert!(conn.wants_close());
    assert_eq!(
        conn.send_queue_len() + conn.recv_queue_len(),
        0,
        "everything flushed"
    );
    // What we sent after the Reply is well-formed FPDUs.
    let mut out = &sent[reply_len..];
    let mut terminates = 0;
    while !out.is_empty() {
        let (f, used) = parse_fpdu(out, crc)
            .expect("our CRC is right")
            .expect("our FPDUs are complete");
        let (h, _) = DdpHeader::parse(f.ulpdu).expect("our DDP headers parse");
        if h.control.opcode == Opcode::TERMINATE {
            terminates += 1;
        }
        out = &out[used..];
    }
    assert!(terminates <= 1, "at most one Terminate");
}
