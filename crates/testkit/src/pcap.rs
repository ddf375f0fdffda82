//! pcap / pcapng reading and classic pcap writing (test support only).

use std::fmt;

/// Link type of Ethernet frames.
pub const LINKTYPE_ETHERNET: u32 = 1;

/// One captured frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Link-layer type of the interface it was captured on.
    pub linktype: u32,
    /// Timestamp in microseconds (pcapng: in the interface's resolution
    /// assumed to be microseconds, the default).
    pub ts_micros: u64,
    /// The captured bytes.
    pub data: Vec<u8>,
}

/// Why a capture file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcapError(pub String);

impl fmt::Display for PcapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PcapError {}

fn err<T>(msg: &str) -> Result<T, PcapError> {
    Err(PcapError(msg.to_owned()))
}

fn u16_at(b: &[u8], at: usize, le: bool) -> Option<u16> {
    let s = b.get(at..at + 2)?;
    let a = [s[0], s[1]];
    Some(if le {
        u16::from_le_bytes(a)
    } else {
        u16::from_be_bytes(a)
    })
}

fn u32_at(b: &[u8], at: usize, le: bool) -> Option<u32> {
    let s = b.get(at..at + 4)?;
    let a = [s[0], s[1], s[2], s[3]];
    Some(if le {
        u32::from_le_bytes(a)
    } else {
        u32::from_be_bytes(a)
    })
}

/// Reads every frame of a classic pcap or a pcapng file.
pub fn read(file: &[u8]) -> Result<Vec<Frame>, PcapError> {
    match file.get(..4) {
        Some([0x0a, 0x0d, 0x0d, 0x0a]) => read_pcapng(file),
        Some(_) => read_pcap(file),
        None => err("file too short for a capture header"),
    }
}

fn read_pcap(file: &[u8]) -> Result<Vec<Frame>, PcapError> {
    let magic = u32_at(file, 0, true).unwrap_or(0);
    let (le, nanos) = match magic {
        0xa1b2_c3d4 => (true, false),
        0xa1b2_3c4d => (true, true),
        0xd4c3_b2a1 => (false, false),
        0x4d3c_b2a1 => (false, true),
        _ => return err("not a pcap or pcapng file (bad magic)"),
    };
    let Some(linktype) = u32_at(file, 20, le) else {
        return err("truncated pcap header");
    };
    let mut out = Vec::new();
    let mut off = 24;
    while off < file.len() {
        let (Some(sec), Some(frac), Some(incl)) = (
            u32_at(file, off, le),
            u32_at(file, off + 4, le),
            u32_at(file, off + 8, le),
        ) else {
            return err("truncated pcap record header");
        };
        let start = off + 16;
        let Some(data) = file.get(start..start + incl as usize) else {
            return err("truncated pcap record");
        };
        let micros = if nanos {
            u64::from(frac) / 1000
        } else {
            u64::from(frac)
        };
        out.push(Frame {
            linktype,
            ts_micros: u64::from(sec) * 1_000_000 + micros,
            data: data.to_vec(),
        });
        off = start + incl as usize;
    }
    Ok(out)
}

fn read_pcapng(file: &[u8]) -> Result<Vec<Frame>, PcapError> {
    let mut out = Vec::new();
    let mut linktypes: Vec<u32> = Vec::new();
    let mut le = true;
    let mut off = 0;
    while off < file.len() {
        let Some(btype) = u32_at(file, off, le) else {
            return err("truncated pcapng block");
        };
        if btype == 0x0a0d_0d0a {
            // Section Header Block: the byte-order magic decides endianness.
            le = match file.get(off + 8..off + 12) {
                Some([0x4d, 0x3c, 0x2b, 0x1a]) => true,
                Some([0x1a, 0x2b, 0x3c, 0x4d]) => false,
                _ => return err("bad pcapng byte-order magic"),
            };
            linktypes.clear();
        }
        let Some(blen) = u32_at(file, off + 4, le) else {
            return err("truncated pcapng block");
        };
        let blen = blen as usize;
        if blen < 12 || off + blen > file.len() {
            return err("bad pcapng block length");
        }
        let body = &file[off + 8..off + blen - 4];
        match btype {
            1 => linktypes.push(u32::from(u16_at(body, 0, le).unwrap_or(0))),
            6 => {
                let (Some(ifid), Some(hi), Some(lo), Some(cap)) = (
                    u32_at(body, 0, le),
                    u32_at(body, 4, le),
                    u32_at(body, 8, le),
                    u32_at(body, 12, le),
                ) else {
                    return err("truncated enhanced packet block");
                };
                let Some(data) = body.get(20..20 + cap as usize) else {
                    return err("truncated enhanced packet data");
                };
                out.push(Frame {
                    linktype: linktypes.get(ifid as usize).copied().unwrap_or(0),
                    ts_micros: (u64::from(hi) << 32) | u64::from(lo),
                    data: data.to_vec(),
                });
            }
            3 => {
                let Some(orig) = u32_at(body, 0, le) else {
                    return err("truncated simple packet block");
                };
                let cap = (orig as usize).min(body.len().saturating_sub(4));
                out.push(Frame {
                    linktype: linktypes.first().copied().unwrap_or(0),
                    ts_micros: 0,
                    data: body[4..4 + cap].to_vec(),
                });
            }
            _ => {}
        }
        off += blen;
    }
    Ok(out)
}

/// Writes a classic little-endian pcap file of Ethernet frames.
#[derive(Debug, Clone)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Default for Writer {
    fn default() -> Self {
        Self::new()
    }
}

impl Writer {
    /// A file with just the global header (snaplen 262144, Ethernet).
    pub fn new() -> Self {
        let mut buf = Vec::new();
        buf.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        buf.extend_from_slice(&2u16.to_le_bytes());
        buf.extend_from_slice(&4u16.to_le_bytes());
        buf.extend_from_slice(&0i32.to_le_bytes());
        buf.extend_from_slice(&0u32.to_le_bytes());
        buf.extend_from_slice(&262_144u32.to_le_bytes());
        buf.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        Self { buf }
    }

    /// Appends one frame.
    pub fn frame(&mut self, ts_micros: u64, data: &[u8]) {
        let len = u32::try_from(data.len()).expect("frame too large for pcap");
        self.buf.extend_from_slice(
            &u32::try_from(ts_micros / 1_000_000)
                .unwrap_or(u32::MAX)
                .to_le_bytes(),
        );
        self.buf
            .extend_from_slice(&((ts_micros % 1_000_000) as u32).to_le_bytes());
        self.buf.extend_from_slice(&len.to_le_bytes());
        self.buf.extend_from_slice(&len.to_le_bytes());
        self.buf.extend_from_slice(data);
    }

    /// The file's bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}
