//! Entry points for the fuzz harness (`fuzz/fuzz_targets/fpdu.rs`, with
//! cargo-afl) and for the bounded runs in `cargo test`. Each panics only
//! when an invariant breaks.

use std::time::Instant;

use bytes::{Bytes, BytesMut};
use rpcrdma_verbs::{Access, MrBuffer, RecvWr, WorkCompletion};

use crate::conn::{Config, Connection, Event, Phase};
use crate::ddp::DdpHeader;
use crate::fpdu::{encode_fpdu, parse_fpdu};
use crate::mpa::{FrameKind, IrdOrd, MpaFlags, MpaFrame};
use crate::mr::{MrInfo, MrTable};
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

/// A connected responder (MPA revision 2, peer-to-peer with a Write RTR)
/// with three 64-octet regions a peer can aim at and four posted 32-octet
/// receives: the fixture of [`fpdu_stream`], open to tests that drive a
/// stream of their own and check what came of it.
///
/// Keys are deterministic: every responder built with the same `crc` has
/// the same STags and addresses, so a stream can be aimed at one
/// responder's regions and fed to another's.
pub struct Responder {
    /// The connection under test.
    pub conn: Connection,
    /// Its protection domain.
    pub mrs: MrTable,
    /// Whether the FPDUs carry CRC32c.
    pub crc: bool,
    /// A region the peer may RDMA Write (`REMOTE_WRITE`).
    pub write_target: MrInfo,
    /// A region with local rights only (`LOCAL_WRITE`).
    pub local_only: MrInfo,
    /// A region the peer may RDMA Read (`REMOTE_READ`).
    pub read_source: MrInfo,
    /// The completions polled so far.
    pub completions: Vec<WorkCompletion>,
    /// Everything the responder sent after its MPA Reply.
    pub sent: BytesMut,
}

impl Responder {
    /// Sets up the connection: the peer's MPA Request, our Reply, the
    /// regions and the receives.
    pub fn new(crc: bool) -> Self {
        let mut keys = keys();
        let mut mrs = MrTable::new(16);
        let now = Instant::now();
        let mut conn =
            Connection::responder(Config::default(), now).expect("default config is valid");
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
        let mut reply = BytesMut::new();
        conn.poll_transmit(&mut reply);
        let mut region = |access| {
            mrs.register(MrBuffer::Owned(BytesMut::zeroed(64)), access, &mut keys)
                .expect("register")
        };
        let write_target = region(Access::REMOTE_WRITE);
        let local_only = region(Access::LOCAL_WRITE);
        let read_source = region(Access::REMOTE_READ | Access::LOCAL_WRITE);
        for i in 0..4 {
            let _ = conn.post_recv(RecvWr {
                wr_id: i,
                buf: BytesMut::zeroed(32),
            });
        }
        Responder {
            conn,
            mrs,
            crc,
            write_target,
            local_only,
            read_source,
            completions: Vec::new(),
            sent: BytesMut::new(),
        }
    }

    /// Delivers `data` from the peer in pieces of `piece` octets (at least
    /// one), collecting what the responder sends and completes.
    pub fn feed(&mut self, data: &[u8], piece: usize) {
        for p in data.chunks(piece.max(1)) {
            self.conn.handle_bytes(p, &mut self.mrs);
            self.conn.poll_transmit(&mut self.sent);
            while let Some(wc) = self.conn.poll_completion() {
                self.completions.push(wc);
            }
        }
    }

    /// The peer closes the stream.
    pub fn eof(&mut self) {
        self.conn.handle_eof();
        self.conn.poll_transmit(&mut self.sent);
        while let Some(wc) = self.conn.poll_completion() {
            self.completions.push(wc);
        }
    }

    /// The FPDUs sent after the MPA Reply, as DDP headers and their
    /// payloads. Panics unless every octet sent parses as a complete FPDU
    /// with a valid DDP header and the right CRC.
    pub fn sent_messages(&self) -> Vec<(DdpHeader, Bytes)> {
        let mut out = &self.sent[..];
        let mut msgs = Vec::new();
        while !out.is_empty() {
            let (f, used) = parse_fpdu(out, self.crc)
                .expect("our CRC is right")
                .expect("our FPDUs are complete");
            let (h, n) = DdpHeader::parse(f.ulpdu).expect("our DDP headers parse");
            msgs.push((h, Bytes::copy_from_slice(&f.ulpdu[n..])));
            out = &out[used..];
        }
        msgs
    }
}

/// What a responder made of a stream: completions (with their data),
/// events, the octets it sent, its phase and error, its regions' contents.
#[derive(Debug, PartialEq)]
struct Outcome {
    completions: Vec<(WorkCompletion, Option<Vec<u8>>)>,
    events: Vec<Event>,
    sent: Vec<u8>,
    phase: Phase,
    error: Option<crate::conn::ConnError>,
    regions: Vec<Vec<u8>>,
}

impl Responder {
    fn outcome(mut self) -> Outcome {
        let mut events = Vec::new();
        while let Some(e) = self.conn.poll_event() {
            events.push(e);
        }
        let regions = [self.write_target, self.local_only, self.read_source]
            .iter()
            .map(|r| {
                self.mrs
                    .buffer(r.key)
                    .map(<[u8]>::to_vec)
                    .unwrap_or_default()
            })
            .collect();
        Outcome {
            completions: self
                .completions
                .drain(..)
                .map(|wc| {
                    let data = wc.data().map(<[u8]>::to_vec);
                    (wc, data)
                })
                .collect(),
            events,
            sent: self.sent.to_vec(),
            phase: self.conn.phase(),
            error: self.conn.error().cloned(),
            regions,
        }
    }
}

/// A connected responder fed `data` (the first octet picks CRC, bit 0)
/// whole, and again one octet at a time: both must end the same way (the
/// same completions with the same data, events, octets sent, phase,
/// error and memory contents), before and after the peer's EOF. One octet
/// at a time never has a whole FPDU staged, so this holds the receive
/// side's whole-FPDU shortcut to the general, octet-by-octet path.
pub fn fpdu_stream_pieces_agree(data: &[u8]) {
    let Some((&cfg, data)) = data.split_first() else {
        return;
    };
    let crc = cfg & 1 == 1;
    let run = |piece: usize, eof: bool| {
        let mut r = Responder::new(crc);
        r.feed(data, piece);
        if eof {
            r.eof();
        }
        r.outcome()
    };
    for eof in [false, true] {
        assert_eq!(
            run(data.len(), eof),
            run(1, eof),
            "whole and octet by octet disagree (eof {eof})"
        );
    }
}

/// A connected responder fed `data` as the peer's FPDU stream. The first
/// octet picks CRC (bit 0) and how the stream is cut into reads (bits 1-7).
///
/// Invariants: no panic; EOF closes the connection with everything
/// flushed and at most one `Closed` event; every octet it sends parses as
/// FPDUs with valid headers; at most one Terminate.
pub fn fpdu_stream(data: &[u8]) {
    let Some((&cfg, data)) = data.split_first() else {
        return;
    };
    let mut r = Responder::new(cfg & 1 == 1);
    r.feed(data, usize::from(cfg >> 1) + 1);
    r.eof();
    let mut closed = 0;
    while let Some(e) = r.conn.poll_event() {
        if matches!(e, Event::Closed(_)) {
            closed += 1;
        }
    }
    assert_eq!(
        r.conn.phase(),
        Phase::Closed,
        "EOF always ends the connection"
    );
    assert!(closed <= 1);
    assert!(r.conn.wants_close());
    assert_eq!(
        r.conn.send_queue_len() + r.conn.recv_queue_len(),
        0,
        "everything flushed"
    );
    let terminates = r
        .sent_messages()
        .iter()
        .filter(|(h, _)| h.control.opcode == Opcode::TERMINATE)
        .count();
    assert!(terminates <= 1, "at most one Terminate");
}
