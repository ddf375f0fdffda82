//! Ethernet/IPv4/TCP: parsing captured frames, reassembling byte streams,
//! and writing a synthetic conversation (test support only).

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddrV4};

use crate::pcap::{Frame, Writer, LINKTYPE_ETHERNET};

const SYN: u8 = 0x02;
const FIN: u8 = 0x01;
const ACK: u8 = 0x10;
const PSH: u8 = 0x08;

/// One TCP segment of a captured frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Sender.
    pub src: SocketAddrV4,
    /// Receiver.
    pub dst: SocketAddrV4,
    /// Sequence number.
    pub seq: u32,
    /// TCP flags byte.
    pub flags: u8,
    /// Payload.
    pub payload: Vec<u8>,
}

/// Parses an Ethernet II / IPv4 / TCP frame; `None` for anything else.
pub fn parse(frame: &Frame) -> Option<Segment> {
    if frame.linktype != LINKTYPE_ETHERNET {
        return None;
    }
    let d = &frame.data;
    let mut ethertype = u16::from_be_bytes([*d.get(12)?, *d.get(13)?]);
    let mut at = 14;
    if ethertype == 0x8100 {
        ethertype = u16::from_be_bytes([*d.get(16)?, *d.get(17)?]);
        at = 18;
    }
    if ethertype != 0x0800 {
        return None;
    }
    let ip = d.get(at..)?;
    let ihl = usize::from(ip.first()? & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([*ip.get(2)?, *ip.get(3)?]));
    if *ip.get(9)? != 6 || total < ihl {
        return None;
    }
    let src_ip = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let dst_ip = Ipv4Addr::new(*ip.get(16)?, ip[17], ip[18], ip[19]);
    let tcp = ip.get(ihl..total.min(ip.len()))?;
    let sport = u16::from_be_bytes([*tcp.first()?, *tcp.get(1)?]);
    let dport = u16::from_be_bytes([*tcp.get(2)?, *tcp.get(3)?]);
    let seq = u32::from_be_bytes([*tcp.get(4)?, tcp[5], tcp[6], tcp[7]]);
    let doff = usize::from(tcp.get(12)? >> 4) * 4;
    let flags = *tcp.get(13)?;
    Some(Segment {
        src: SocketAddrV4::new(src_ip, sport),
        dst: SocketAddrV4::new(dst_ip, dport),
        seq,
        flags,
        payload: tcp.get(doff..)?.to_vec(),
    })
}

/// The bytes one side of a TCP connection sent, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stream {
    /// Sender.
    pub src: SocketAddrV4,
    /// Receiver.
    pub dst: SocketAddrV4,
    /// Reassembled payload (retransmissions and overlaps removed; stops at
    /// the first gap).
    pub data: Vec<u8>,
}

/// Reassembles every TCP byte stream in `frames`, one [`Stream`] per
/// direction of each connection, in order of first appearance. Sequence
/// numbers count from the SYN when it was captured, else from the first
/// segment seen.
pub fn reassemble(frames: &[Frame]) -> Vec<Stream> {
    struct Acc {
        src: SocketAddrV4,
        dst: SocketAddrV4,
        isn: Option<u32>,
        pieces: BTreeMap<u32, Vec<u8>>,
    }
    let mut accs: Vec<Acc> = Vec::new();
    for seg in frames.iter().filter_map(parse) {
        let idx = match accs
            .iter()
            .position(|a| a.src == seg.src && a.dst == seg.dst)
        {
            Some(i) => i,
            None => {
                accs.push(Acc {
                    src: seg.src,
                    dst: seg.dst,
                    isn: None,
                    pieces: BTreeMap::new(),
                });
                accs.len() - 1
            }
        };
        let acc = &mut accs[idx];
        if seg.flags & SYN != 0 {
            // A new connection on the same address pair starts a new stream.
            if acc.isn.is_some() && !acc.pieces.is_empty() {
                accs.push(Acc {
                    src: seg.src,
                    dst: seg.dst,
                    isn: Some(seg.seq.wrapping_add(1)),
                    pieces: BTreeMap::new(),
                });
            } else {
                acc.isn = Some(seg.seq.wrapping_add(1));
            }
            continue;
        }
        let acc = accs
            .iter_mut()
            .rev()
            .find(|a| a.src == seg.src && a.dst == seg.dst)
            .expect("just inserted");
        if seg.payload.is_empty() {
            continue;
        }
        let isn = *acc.isn.get_or_insert(seg.seq);
        let rel = seg.seq.wrapping_sub(isn);
        let e = acc.pieces.entry(rel).or_default();
        if seg.payload.len() > e.len() {
            *e = seg.payload;
        }
    }
    accs.into_iter()
        .map(|a| {
            let mut data: Vec<u8> = Vec::new();
            for (rel, p) in a.pieces {
                let rel = rel as usize;
                if rel > data.len() {
                    break;
                }
                let skip = data.len() - rel;
                if skip < p.len() {
                    data.extend_from_slice(&p[skip..]);
                }
            }
            Stream {
                src: a.src,
                dst: a.dst,
                data,
            }
        })
        .collect()
}

fn checksum(parts: &[&[u8]]) -> u16 {
    let mut sum = 0u32;
    let mut odd: Option<u8> = None;
    for part in parts {
        for &b in *part {
            match odd.take() {
                Some(hi) => sum += u32::from(u16::from_be_bytes([hi, b])),
                None => odd = Some(b),
            }
        }
    }
    if let Some(hi) = odd {
        sum += u32::from(u16::from_be_bytes([hi, 0]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Which side of a [`Conversation`] sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The side that connects.
    Client,
    /// The side that accepts.
    Server,
}

/// A synthetic TCP connection between two endpoints, written as Ethernet
/// frames with correct sequence/ack numbers and IPv4/TCP checksums.
#[derive(Debug)]
pub struct Conversation {
    client: SocketAddrV4,
    server: SocketAddrV4,
    seq: [u32; 2],
    ip_id: u16,
    ts: u64,
    mss: usize,
    out: Writer,
}

impl Conversation {
    /// A conversation; call [`Conversation::handshake`] first.
    pub fn new(client: SocketAddrV4, server: SocketAddrV4) -> Self {
        Self {
            client,
            server,
            seq: [0x1000_0000, 0x2000_0000],
            ip_id: 1,
            ts: 1_700_000_000_000_000,
            mss: 1460,
            out: Writer::new(),
        }
    }

    /// Sets the largest payload per segment (default 1460).
    pub fn set_mss(&mut self, mss: usize) {
        self.mss = mss.max(1);
    }

    fn idx(side: Side) -> usize {
        match side {
            Side::Client => 0,
            Side::Server => 1,
        }
    }

    fn emit(&mut self, side: Side, flags: u8, payload: &[u8]) {
        let (src, dst) = match side {
            Side::Client => (self.client, self.server),
            Side::Server => (self.server, self.client),
        };
        let i = Self::idx(side);
        let seq = self.seq[i];
        let ack = if flags & ACK != 0 { self.seq[1 - i] } else { 0 };
        let mut tcp = Vec::with_capacity(20 + payload.len());
        tcp.extend_from_slice(&src.port().to_be_bytes());
        tcp.extend_from_slice(&dst.port().to_be_bytes());
        tcp.extend_from_slice(&seq.to_be_bytes());
        tcp.extend_from_slice(&ack.to_be_bytes());
        tcp.push(5 << 4);
        tcp.push(flags);
        tcp.extend_from_slice(&65535u16.to_be_bytes());
        tcp.extend_from_slice(&[0, 0, 0, 0]);
        tcp.extend_from_slice(payload);
        let tcp_len = u16::try_from(tcp.len()).expect("segment too large");
        let mut pseudo = Vec::with_capacity(12);
        pseudo.extend_from_slice(&src.ip().octets());
        pseudo.extend_from_slice(&dst.ip().octets());
        pseudo.extend_from_slice(&[0, 6]);
        pseudo.extend_from_slice(&tcp_len.to_be_bytes());
        let c = checksum(&[&pseudo, &tcp]);
        tcp[16..18].copy_from_slice(&c.to_be_bytes());

        let mut ip = Vec::with_capacity(20);
        ip.extend_from_slice(&[0x45, 0]);
        ip.extend_from_slice(&(20 + tcp_len).to_be_bytes());
        ip.extend_from_slice(&self.ip_id.to_be_bytes());
        ip.extend_from_slice(&[0x40, 0, 64, 6, 0, 0]);
        ip.extend_from_slice(&src.ip().octets());
        ip.extend_from_slice(&dst.ip().octets());
        let c = checksum(&[&ip]);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        self.ip_id = self.ip_id.wrapping_add(1);

        let mut frame = Vec::with_capacity(14 + ip.len() + tcp.len());
        let (smac, dmac) = match side {
            Side::Client => ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]),
            Side::Server => ([2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 1]),
        };
        frame.extend_from_slice(&dmac);
        frame.extend_from_slice(&smac);
        frame.extend_from_slice(&[0x08, 0x00]);
        frame.extend_from_slice(&ip);
        frame.extend_from_slice(&tcp);
        self.ts += 100;
        self.out.frame(self.ts, &frame);

        let advance = payload.len() as u32 + u32::from(flags & (SYN | FIN) != 0);
        self.seq[i] = seq.wrapping_add(advance);
    }

    /// SYN, SYN-ACK, ACK.
    pub fn handshake(&mut self) {
        self.emit(Side::Client, SYN, &[]);
        self.emit(Side::Server, SYN | ACK, &[]);
        self.emit(Side::Client, ACK, &[]);
    }

    /// Sends `data` from `side` in segments of at most the MSS, each
    /// acknowledged by the peer.
    pub fn send(&mut self, side: Side, data: &[u8]) {
        for piece in data.chunks(self.mss) {
            self.emit(side, ACK | PSH, piece);
            let peer = match side {
                Side::Client => Side::Server,
                Side::Server => Side::Client,
            };
            self.emit(peer, ACK, &[]);
        }
    }

    /// FIN from both sides, then the final ACK; returns the pcap file.
    pub fn finish(mut self) -> Vec<u8> {
        self.emit(Side::Client, FIN | ACK, &[]);
        self.emit(Side::Server, FIN | ACK, &[]);
        self.emit(Side::Client, ACK, &[]);
        self.out.into_bytes()
    }
}
