//! The receive side's framing: the octet stream cut into MPA set-up frames
//! (handed to `setup.rs`), then FPDUs parsed header, payload and trailer
//! (length, DDP header, pad, CRC32c), each payload handed to its place
//! (`place.rs`) straight from the socket or from staging.
//!
//! Small reads go into a staging buffer (headers, trailers, small
//! payloads, which are then copied to their place). Once a header has been
//! checked and a large payload remains, [`Connection::recv_buffers`] offers
//! the payload's final place itself as the first read buffer, followed by a
//! small staging area for the trailer and the next header: one vectored
//! read, no intermediate copy.

use super::place::{place, Target};
use super::{ConnError, Connection, Phase, ProtocolError};
use crate::ddp::{DdpHeader, UNTAGGED_HEADER_LEN};
use crate::fpdu::{crc_from_wire, pad_len, MPA_CRC_LEN, MPA_LEN_FIELD};
use crate::mr::MrTable;
use crate::rdmap::{ReadRequest, Terminate, READ_REQUEST_LEN};

/// Staging buffer size.
const STAGE_CAP: usize = 16 * 1024;
/// Largest staging read when no direct placement is possible.
const STAGE_READ: usize = 4096;
/// Staging offered behind a direct placement (trailer, next header, a bit
/// of the next payload).
const SPILL_WITH_DIRECT: usize = 512;
/// Payload remainders at least this long are read in place.
const DIRECT_MIN: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum St {
    Header,
    Payload,
    Trailer,
}

#[derive(Debug)]
pub(super) struct Rx {
    pub(super) buf: Box<[u8]>,
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) st: St,
    pub(super) crc: u32,
    pub(super) ulpdu_len: usize,
    pub(super) hdr: Option<DdpHeader>,
    pub(super) remaining: usize,
    pub(super) target: Target,
    pub(super) ctrl: Vec<u8>,
    pub(super) direct_offered: usize,
    pub(super) dead: bool,
}

impl Rx {
    pub(super) fn new() -> Self {
        Rx {
            buf: vec![0u8; STAGE_CAP].into_boxed_slice(),
            start: 0,
            end: 0,
            st: St::Header,
            crc: 0,
            ulpdu_len: 0,
            hdr: None,
            remaining: 0,
            target: Target::Discard,
            ctrl: Vec::new(),
            direct_offered: 0,
            dead: false,
        }
    }

    pub(super) fn has_room(&self) -> bool {
        !self.dead && self.end - self.start < self.buf.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.start == self.end
    }

    pub(super) fn at_fpdu_boundary(&self) -> bool {
        self.st == St::Header && self.start == self.end
    }

    pub(super) fn kill(&mut self) {
        self.dead = true;
        self.start = 0;
        self.end = 0;
    }

    fn compact(&mut self) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 && self.buf.len() - self.end < STAGE_READ {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
    }
}

/// The buffers to read the socket into, in order (see
/// [`Connection::recv_buffers`]).
#[derive(Debug)]
pub struct RecvBuffers<'a> {
    /// The final place of the next payload octets (registered memory or a
    /// posted receive buffer), when there is one worth reading into.
    pub direct: Option<&'a mut [u8]>,
    /// Staging for whatever follows.
    pub staging: &'a mut [u8],
}

impl RecvBuffers<'_> {
    /// Total octets the buffers can take.
    pub fn len(&self) -> usize {
        self.direct.as_ref().map_or(0, |d| d.len()) + self.staging.len()
    }

    /// Whether no octet can be taken now.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Connection {
    fn direct_len(&self) -> usize {
        let rx = &self.rx;
        let ok = matches!(self.phase, Phase::Connected | Phase::Closing)
            && !rx.dead
            && rx.st == St::Payload
            && rx.start == rx.end
            && rx.remaining >= DIRECT_MIN
            && matches!(rx.target, Target::Mr { .. } | Target::Recv);
        if ok {
            rx.remaining
        } else {
            0
        }
    }

    /// The buffers the next socket read should fill, in order: read into
    /// `direct` first (if offered), then `staging`, and report the total
    /// with [`Connection::handle_read`] before calling anything else.
    /// Both are empty when no input is wanted ([`Connection::wants_read`]).
    pub fn recv_buffers<'a>(&'a mut self, mrs: &'a mut MrTable) -> RecvBuffers<'a> {
        if !self.wants_read() {
            self.rx.direct_offered = 0;
            return RecvBuffers {
                direct: None,
                staging: &mut [],
            };
        }
        let direct_len = self.direct_len();
        self.rx.compact();
        let Connection { rx, recv_cur, .. } = self;
        let direct: Option<&'a mut [u8]> = if direct_len > 0 {
            match rx.target {
                Target::Mr {
                    stag, addr, needed, ..
                } => mrs.slice_mut(stag, addr, direct_len, needed).ok(),
                Target::Recv => recv_cur
                    .as_mut()
                    .and_then(|c| c.wr.buf.get_mut(c.received..c.received + direct_len)),
                _ => None,
            }
        } else {
            None
        };
        rx.direct_offered = direct.as_ref().map_or(0, |d| d.len());
        let limit = if rx.direct_offered > 0 {
            SPILL_WITH_DIRECT
        } else {
            STAGE_READ
        };
        let stop = rx.buf.len().min(rx.end + limit);
        let staging = &mut rx.buf[rx.end..stop];
        RecvBuffers { direct, staging }
    }

    /// Records that the last read put `n` octets into the buffers from
    /// [`Connection::recv_buffers`] (direct first), and processes them.
    ///
    /// # Panics
    /// If `n` exceeds what was offered (driver bug).
    pub fn handle_read(&mut self, n: usize, mrs: &mut MrTable) {
        let d = n.min(self.rx.direct_offered);
        self.rx.direct_offered = 0;
        if d > 0 {
            self.placed_direct(d, mrs);
        }
        let rest = n - d;
        assert!(
            self.rx.end + rest <= self.rx.buf.len(),
            "driver reported more octets than offered"
        );
        self.rx.end += rest;
        self.process(mrs);
    }

    /// Feeds received octets by copying them (for tests, tools and
    /// drivers without vectored reads); returns how many were taken (less
    /// than `data.len()` only once the connection wants no more input).
    pub fn handle_bytes(&mut self, mut data: &[u8], mrs: &mut MrTable) -> usize {
        let total = data.len();
        while !data.is_empty() {
            let mut bufs = self.recv_buffers(mrs);
            let mut n = 0;
            if let Some(d) = bufs.direct.as_deref_mut() {
                let k = d.len().min(data.len());
                d[..k].copy_from_slice(&data[..k]);
                n += k;
            }
            // Only spill into staging once the direct buffer is full.
            if bufs.direct.as_ref().map_or(0, |d| d.len()) == n {
                let k = bufs.staging.len().min(data.len() - n);
                bufs.staging[..k].copy_from_slice(&data[n..n + k]);
                n += k;
            }
            if n == 0 {
                break;
            }
            self.handle_read(n, mrs);
            data = &data[n..];
        }
        total - data.len()
    }

    /// Processes staged octets as far as they go.
    fn process(&mut self, mrs: &mut MrTable) {
        loop {
            if self.error.is_some() {
                self.rx.kill();
                return;
            }
            match self.phase {
                Phase::AwaitRequest | Phase::AwaitReply => {
                    if !self.process_mpa() {
                        return;
                    }
                    continue;
                }
                Phase::AwaitAccept | Phase::Closed => return,
                Phase::Connected | Phase::Closing => {}
            }
            let progressed = match self.rx.st {
                St::Header => self.rx_header(mrs),
                St::Payload => self.rx_payload(mrs),
                St::Trailer => self.rx_trailer(mrs),
            };
            if !progressed {
                return;
            }
        }
    }

    // ------------------------------------------------------------ MPA set-up

    // ------------------------------------------------------------ FPDUs

    fn protocol_fail(&mut self, e: ProtocolError, quote: bool, rr: Option<&ReadRequest>) {
        let term = e.term_error().map(|te| match (quote, self.rx.hdr) {
            (true, Some(h)) => Terminate::quoting(te, self.rx.ulpdu_len as u16, &h, rr),
            _ => Terminate::bare(te),
        });
        self.fail(ConnError::Protocol(e), term);
    }

    fn rx_header(&mut self, mrs: &mut MrTable) -> bool {
        let rx = &mut self.rx;
        let staged = &rx.buf[rx.start..rx.end];
        let Some(&[l0, l1, b0]) = staged.get(..3) else {
            return false;
        };
        let ulpdu_len = usize::from(u16::from_be_bytes([l0, l1]));
        let hl = DdpHeader::len_for_first_octet(b0);
        if ulpdu_len < hl {
            rx.hdr = None;
            self.protocol_fail(
                ProtocolError::ShortSegment {
                    len: ulpdu_len,
                    needed: hl,
                },
                false,
                None,
            );
            return true;
        }
        let Some(raw) = staged.get(..MPA_LEN_FIELD + hl) else {
            return false;
        };
        let Ok((h, _)) = DdpHeader::parse(&raw[MPA_LEN_FIELD..]) else {
            return false;
        };
        rx.crc = if self.crc { crc32c::crc32c(raw) } else { 0 };
        rx.start += MPA_LEN_FIELD + hl;
        rx.ulpdu_len = ulpdu_len;
        rx.hdr = Some(h);
        rx.remaining = ulpdu_len - hl;
        rx.st = St::Payload;
        rx.ctrl.clear();
        if !self.first_fpdu_seen {
            self.first_fpdu_seen = true;
            self.tx.open_gate();
        }
        match self.on_header(&h, ulpdu_len - hl, mrs) {
            Ok(t) => self.rx.target = t,
            Err(e) => self.protocol_fail(e, true, None),
        }
        true
    }

    fn rx_payload(&mut self, mrs: &mut MrTable) -> bool {
        if self.rx.remaining == 0 {
            self.rx.st = St::Trailer;
            return true;
        }
        let avail = self.rx.end - self.rx.start;
        if avail == 0 {
            return false;
        }
        let k = avail.min(self.rx.remaining);
        let Connection {
            rx,
            recv_cur,
            orq,
            crc,
            ..
        } = self;
        let data = &rx.buf[rx.start..rx.start + k];
        let res = place(data, &mut rx.target, recv_cur, orq, &mut rx.ctrl, mrs);
        if *crc {
            rx.crc = crc32c::crc32c_append(rx.crc, data);
        }
        rx.start += k;
        rx.remaining -= k;
        if let Err(e) = res {
            self.protocol_fail(e, true, None);
        }
        true
    }

    fn rx_trailer(&mut self, mrs: &mut MrTable) -> bool {
        let rx = &mut self.rx;
        let pad = pad_len(rx.ulpdu_len);
        let staged = &rx.buf[rx.start..rx.end];
        let Some(t) = staged.get(..pad + MPA_CRC_LEN) else {
            return false;
        };
        if self.crc {
            let computed = crc32c::crc32c_append(rx.crc, &t[..pad]);
            let mut f = [0u8; 4];
            f.copy_from_slice(&t[pad..]);
            let received = crc_from_wire(f);
            if computed != received {
                rx.start += pad + MPA_CRC_LEN;
                self.protocol_fail(ProtocolError::BadCrc { received, computed }, true, None);
                return true;
            }
        }
        rx.start += pad + MPA_CRC_LEN;
        rx.st = St::Header;
        if let Err((e, rr)) = self.on_segment_end(mrs) {
            self.protocol_fail(e, true, rr.as_ref());
        }
        true
    }
}

#[allow(dead_code)]
const _: () = assert!(UNTAGGED_HEADER_LEN + READ_REQUEST_LEN < STAGE_READ);
