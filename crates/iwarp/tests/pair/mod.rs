//! A deterministic two-peer harness: two sans-IO connections, each with
//! its own protection domain, and the byte streams between them, which
//! tests can re-split, corrupt, truncate or cut.
#![allow(dead_code, unreachable_pub)]

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rpcrdma_iwarp::conn::{Config, Connection, Event};
use rpcrdma_iwarp::ddp::DdpHeader;
use rpcrdma_iwarp::fpdu::{encode_fpdu, parse_fpdu};
use rpcrdma_iwarp::mpa::{FrameKind, MpaFrame};
use rpcrdma_iwarp::mr::{MrInfo, MrTable};
use rpcrdma_iwarp::rdmap::{Opcode, Terminate};
use rpcrdma_verbs::{Access, MrBuffer, WorkCompletion};

/// A fixed key sequence (tests need reproducibility, not secrecy).
pub struct Keys(u64);

impl Keys {
    pub fn new(seed: u64) -> Self {
        Keys(seed | 1)
    }
}

impl rpcrdma_iwarp::mr::KeySource for Keys {
    fn next_u32(&mut self) -> u32 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
    }
}

pub struct Side {
    pub conn: Connection,
    pub mrs: MrTable,
    pub keys: Keys,
    pub events: Vec<Event>,
    pub wcs: Vec<WorkCompletion>,
    /// Octets on their way to this side, not yet delivered.
    pub inbound: Vec<u8>,
    /// Everything this side ever transmitted.
    pub sent: Vec<u8>,
    pub eof_delivered: bool,
    /// Socket reads the connection asked for (vectored delivery).
    pub reads: usize,
}

impl Side {
    pub fn new(conn: Connection, seed: u64) -> Self {
        Side {
            conn,
            mrs: MrTable::new(64),
            keys: Keys::new(seed),
            events: Vec::new(),
            wcs: Vec::new(),
            inbound: Vec::new(),
            sent: Vec::new(),
            eof_delivered: false,
            reads: 0,
        }
    }

    /// Delivers `data` as a driver's vectored reads would: into the
    /// buffers the connection offers ([`Connection::recv_buffers`], in
    /// `io_slices` order), then `handle_read`. Returns how many octets were
    /// taken (fewer once the connection wants no more input).
    pub fn deliver_vectored(&mut self, mut data: &[u8]) -> usize {
        let total = data.len();
        while !data.is_empty() {
            let mut bufs = self.conn.recv_buffers(&mut self.mrs);
            let mut iov: [std::io::IoSliceMut<'_>; rpcrdma_iwarp::conn::MAX_RECV_SLICES] =
                std::array::from_fn(|_| std::io::IoSliceMut::new(&mut []));
            let n = bufs.io_slices(&mut iov);
            let mut put = 0;
            for s in iov[..n].iter_mut() {
                let k = s.len().min(data.len() - put);
                s[..k].copy_from_slice(&data[put..put + k]);
                put += k;
                if put == data.len() {
                    break;
                }
            }
            if put == 0 {
                break;
            }
            self.conn.handle_read(put, &mut self.mrs);
            self.reads += 1;
            data = &data[put..];
        }
        total - data.len()
    }

    pub fn reg_mut(&mut self, len: usize, access: Access) -> MrInfo {
        self.mrs
            .register(
                MrBuffer::Owned(BytesMut::zeroed(len)),
                access,
                &mut self.keys,
            )
            .unwrap()
    }

    pub fn reg_bytes(&mut self, data: &[u8], access: Access) -> MrInfo {
        self.mrs
            .register(
                MrBuffer::Shared(Bytes::copy_from_slice(data)),
                access,
                &mut self.keys,
            )
            .unwrap()
    }

    pub fn contents(&mut self, key: u32) -> Vec<u8> {
        self.mrs.buffer(key).unwrap().to_vec()
    }

    fn collect(&mut self) {
        while let Some(e) = self.conn.poll_event() {
            self.events.push(e);
        }
        while let Some(w) = self.conn.poll_completion() {
            self.wcs.push(w);
        }
    }

    pub fn closed_error(&self) -> Option<&rpcrdma_iwarp::conn::ConnError> {
        self.events.iter().find_map(|e| match e {
            Event::Closed(err) => Some(err),
            _ => None,
        })
    }

    pub fn take_wcs(&mut self) -> Vec<WorkCompletion> {
        std::mem::take(&mut self.wcs)
    }
}

/// Which way bytes flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    AtoB,
    BtoA,
}

pub type Fault = Box<dyn FnMut(Dir, &mut Vec<u8>)>;

pub struct Pair {
    pub a: Side,
    pub b: Side,
    pub now: Instant,
    /// Delivery chunk sizes cycle through this list (re-splitting).
    pub splits: Vec<usize>,
    split_idx: usize,
    /// Applied to every batch of transmitted octets before delivery.
    pub fault: Option<Fault>,
    /// Deliver as a vectored-read driver does (`recv_buffers` +
    /// `handle_read`) instead of `handle_bytes`.
    pub vectored: bool,
}

impl Pair {
    pub fn new(cfg_a: Config, cfg_b: Config, pd: &[u8]) -> Pair {
        let now = Instant::now();
        let a = Connection::initiator(cfg_a, Bytes::copy_from_slice(pd), now).unwrap();
        let b = Connection::responder(cfg_b, now).unwrap();
        Pair {
            a: Side::new(a, 1),
            b: Side::new(b, 2),
            now,
            splits: vec![usize::MAX],
            split_idx: 0,
            fault: None,
            vectored: false,
        }
    }

    /// Moves transmitted octets and delivers what is in flight; returns
    /// whether anything happened.
    pub fn step(&mut self) -> bool {
        let mut moved = false;
        for dir in [Dir::AtoB, Dir::BtoA] {
            let (from, to) = match dir {
                Dir::AtoB => (&mut self.a, &mut self.b),
                Dir::BtoA => (&mut self.b, &mut self.a),
            };
            let mut out = BytesMut::new();
            from.conn.poll_transmit(&mut out);
            if !out.is_empty() {
                moved = true;
                let mut v = out.to_vec();
                from.sent.extend_from_slice(&v);
                if let Some(f) = self.fault.as_mut() {
                    f(dir, &mut v);
                }
                to.inbound.extend_from_slice(&v);
            }
            from.collect();
        }
        for side in [&mut self.a, &mut self.b] {
            while !side.inbound.is_empty() {
                let chunk = self.splits[self.split_idx % self.splits.len()].max(1);
                self.split_idx += 1;
                let k = chunk.min(side.inbound.len());
                let data: Vec<u8> = side.inbound.drain(..k).collect();
                let took = if self.vectored {
                    side.deliver_vectored(&data)
                } else {
                    side.conn.handle_bytes(&data, &mut side.mrs)
                };
                moved |= took > 0;
                if took < data.len() {
                    // The connection wants no more input: drop the rest.
                    side.inbound.clear();
                }
            }
            side.collect();
        }
        moved
    }

    /// Runs to quiescence; fails the test on livelock.
    pub fn drive(&mut self) {
        for _ in 0..10_000 {
            if !self.step() {
                return;
            }
        }
        panic!("pair did not settle in 10000 steps");
    }

    /// Connects: the responder accepts with `pd`.
    pub fn connect(&mut self, pd: &[u8]) {
        self.drive();
        assert!(
            matches!(self.b.events.first(), Some(Event::ConnectRequest(_))),
            "no ConnectRequest: {:?}",
            self.b.events
        );
        self.b.conn.accept(Bytes::copy_from_slice(pd)).unwrap();
        self.drive();
        assert!(
            self.a
                .events
                .iter()
                .any(|e| matches!(e, Event::Established(_))),
            "initiator not established: {:?}",
            self.a.events
        );
    }

    /// Delivers an EOF to `side` (the other side "closed").
    pub fn eof_to_b(&mut self) {
        self.b.conn.handle_eof();
        self.b.collect();
    }

    pub fn eof_to_a(&mut self) {
        self.a.conn.handle_eof();
        self.a.collect();
    }

    pub fn advance(&mut self, d: Duration) {
        self.now += d;
        self.a.conn.handle_timeout(self.now);
        self.b.conn.handle_timeout(self.now);
        self.a.collect();
        self.b.collect();
    }
}

/// One FPDU with `h` and `payload`.
pub fn fpdu(h: DdpHeader, payload: &[u8], crc: bool) -> Vec<u8> {
    let mut hb = Vec::new();
    h.emit(&mut hb);
    let mut out = BytesMut::new();
    encode_fpdu(&[&hb, payload], crc, &mut out).unwrap();
    out.to_vec()
}

/// Splits a captured stream into its MPA frame (if it starts with one) and
/// FPDUs, decoding each DDP header.
pub fn decode_stream(mut b: &[u8], crc: bool) -> (Option<MpaFrame>, Vec<(DdpHeader, Vec<u8>)>) {
    let mut mpa = None;
    if b.starts_with(b"MPA ID") {
        let (f, used) = MpaFrame::parse(b).unwrap().unwrap();
        mpa = Some(f);
        b = &b[used..];
    }
    let mut out = Vec::new();
    while !b.is_empty() {
        let Some((f, used)) = parse_fpdu(b, crc).unwrap() else {
            break;
        };
        let (h, hl) = DdpHeader::parse(f.ulpdu).unwrap();
        out.push((h, f.ulpdu[hl..].to_vec()));
        b = &b[used..];
    }
    (mpa, out)
}

/// The Terminate messages in a stream.
pub fn terminates(b: &[u8], crc: bool) -> Vec<Terminate> {
    decode_stream(b, crc)
        .1
        .into_iter()
        .filter(|(h, _)| h.control.opcode == Opcode::TERMINATE)
        .map(|(_, p)| Terminate::parse(&p).unwrap())
        .collect()
}

pub fn is_reply(f: &Option<MpaFrame>) -> bool {
    matches!(
        f,
        Some(MpaFrame {
            kind: FrameKind::Reply,
            ..
        })
    )
}
