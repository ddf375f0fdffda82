//! The receive side's framing: the octet stream cut into MPA set-up frames
//! (handed to `setup.rs`), then FPDUs parsed header, payload and trailer
//! (length, DDP header, pad, CRC32c), each payload handed to its place
//! (`place.rs`) straight from the socket or from staging. A whole small
//! Send already staged is offered first to `place.rs`'s one-step shortcut.
//!
//! Small reads go into a staging buffer (headers, trailers, small
//! payloads, which are then copied to their place). Once a header has been
//! checked and a large payload remains, [`Connection::recv_buffers`] offers
//! the payload's final place itself as the first read buffer, followed by a
//! small staging area for the trailer and the next header: one vectored
//! read, no intermediate copy.
//!
//! # Several FPDUs of a Read Response per read
//!
//! The FPDUs of one RDMA Read Response follow each other, and a sender
//! cuts a message into FPDUs of one size: so when the payload of a Read
//! Response is placed directly, the buffers also offer the places of the
//! following FPDUs of the same Read as guessed from the current one (its
//! trailer and the next header into a small scratch area, the next
//! payload straight into the sink at the next offset, and so on, never
//! past the end of the Read). Verbs leaves a sink's contents undefined
//! until its Read completes, so a guess may fill it. After the read each
//! header is checked as usual; where it does not continue the Read as
//! guessed, the octets read into the sink from there on are copied out and
//! processed like any other input (so the outcome is exactly that of
//! reading the stream FPDU by FPDU).
//!
//! # ... and of an RDMA Write into a scratch region
//!
//! The FPDUs of an RDMA Write follow each other too, but the receiver does
//! not know where the Write ends, and verbs promises that octets a Write
//! does not target stay as they were. So the guess is made for a Write
//! only into a region its owner registered with [`Access::SCRATCH`]
//! (promising to read only what the peer wrote: RPC-over-RDMA's Write and
//! Reply chunk sinks), only behind an FPDU that is not the Write's last,
//! and never past the region's end (the FPDU reaching it guessed as the
//! last). A wrong guess is handled as for a Read Response; the octets it
//! put past the Write's end stay there, inside the region.

use super::place::place;
use super::place_state::Target;
use super::rx_state::{
    RecvBuffers, Rx, Spec, St, DIRECT_MIN, MAX_GAP, MAX_SPEC, SPILL_WITH_DIRECT, STAGE_READ,
};
use super::{ConnError, Connection, Phase, ProtocolError};

use crate::ddp::{DdpHeader, TAGGED_HEADER_LEN};
use crate::fpdu::{crc_from_wire, pad_len, MPA_CRC_LEN, MPA_LEN_FIELD};
use crate::mr::MrTable;
use crate::rdmap::{Opcode, ReadRequest, Terminate};
use rpcrdma_verbs::Access;

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

    /// The further FPDUs of the Read Response (or RDMA Write) being
    /// placed, as guessed from the current one: same payload size,
    /// consecutive offsets, never past the end of the Read. Planned into
    /// `rx.spec` (`count` 0: no guess); only `count` is reset, so that a
    /// message without a guess (every small one) does not clear the whole
    /// plan.
    ///
    /// An RDMA Write is guessed only into a region its owner registered
    /// with [`Access::SCRATCH`], and only while the current FPDU is not
    /// the Write's last: the guess runs to the region's end at most (its
    /// last FPDU guessed as the one reaching it), and the octets of a
    /// wrong guess stay where they landed, inside that region.
    fn plan_speculation(&mut self, mrs: &MrTable) {
        self.rx.spec.count = 0;
        let rx = &mut self.rx;
        let Target::Mr {
            stag,
            addr,
            read_response,
            needed,
        } = rx.target
        else {
            return;
        };
        let Some(size) = rx.ulpdu_len.checked_sub(TAGGED_HEADER_LEN) else {
            return;
        };
        let mut rest = if read_response {
            let Some(e) = self.orq.front() else {
                return;
            };
            rx.spec.opcode = Opcode::READ_RESPONSE;
            e.len
                .saturating_sub(e.received)
                .saturating_sub(rx.remaining as u64)
        } else {
            if rx.hdr.is_none_or(|h| h.control.last) {
                return;
            }
            let Some(info) = mrs.info(stag) else {
                return;
            };
            if !info.access.contains(Access::SCRATCH) {
                return;
            }
            rx.spec.opcode = Opcode::WRITE;
            (info.addr + info.len as u64).saturating_sub(addr + rx.remaining as u64)
        };
        rx.spec.needed = needed;
        let spec = &mut rx.spec;
        spec.stag = stag;
        spec.addr = addr + rx.remaining as u64;
        let mut ulpdu = rx.ulpdu_len;
        while spec.count < MAX_SPEC && rest > 0 {
            let p = (size as u64).min(rest) as usize;
            if p < DIRECT_MIN {
                break;
            }
            spec.gaps[spec.count] =
                pad_len(ulpdu) + MPA_CRC_LEN + MPA_LEN_FIELD + TAGGED_HEADER_LEN;
            spec.pays[spec.count] = p;
            rest -= p as u64;
            spec.lasts[spec.count] = rest == 0;
            spec.count += 1;
            ulpdu = p + TAGGED_HEADER_LEN;
        }
    }

    /// The buffers the next socket read should fill, in order: read into
    /// `direct` first (if offered), then the guessed FPDUs, then
    /// `staging` ([`RecvBuffers::io_slices`]), and report the total with
    /// [`Connection::handle_read`] before calling anything else. All are
    /// empty when no input is wanted ([`Connection::wants_read`]).
    pub fn recv_buffers<'a>(&'a mut self, mrs: &'a mut MrTable) -> RecvBuffers<'a> {
        self.offer(mrs, true)
    }

    fn offer<'a>(&'a mut self, mrs: &'a mut MrTable, speculate: bool) -> RecvBuffers<'a> {
        self.rx.spec.count = 0;
        if !self.wants_read() {
            self.rx.direct_offered = 0;
            return RecvBuffers {
                direct: None,
                staging: &mut [],
                spec: None,
            };
        }
        let direct_len = self.direct_len();
        if speculate && direct_len > 0 {
            self.plan_speculation(mrs);
        }
        self.rx.compact();
        let Connection { rx, recv_cur, .. } = self;
        let mut guessed: Option<&'a mut [u8]> = None;
        let direct: Option<&'a mut [u8]> = if direct_len > 0 {
            match rx.target {
                Target::Mr {
                    stag, addr, needed, ..
                } => {
                    let mut more = rx.spec.payload_len();
                    if more > 0
                        && mrs
                            .check(stag, addr, (direct_len + more) as u64, needed)
                            .is_err()
                    {
                        rx.spec.count = 0;
                        more = 0;
                    }
                    match mrs.slice_mut(stag, addr, direct_len + more, needed) {
                        Ok(s) if more > 0 => {
                            let (d, g) = s.split_at_mut(direct_len);
                            guessed = Some(g);
                            Some(d)
                        }
                        Ok(s) => Some(s),
                        Err(_) => None,
                    }
                }
                Target::Recv => recv_cur
                    .as_mut()
                    .and_then(|c| c.wr.buf.get_mut(c.received..c.received + direct_len)),
                _ => None,
            }
        } else {
            None
        };
        rx.direct_offered = direct.as_ref().map_or(0, |d| d.len());
        if let Some(g) = guessed {
            if rx.direct_offered > 0 {
                return RecvBuffers {
                    direct,
                    staging: &mut rx.tailbuf[..],
                    spec: Some((&mut rx.gapbuf[..], g, rx.spec)),
                };
            }
        }
        rx.spec.count = 0;
        let limit = if rx.direct_offered > 0 {
            SPILL_WITH_DIRECT
        } else {
            STAGE_READ
        };
        let stop = rx.buf.len().min(rx.end + limit);
        let staging = &mut rx.buf[rx.end..stop];
        RecvBuffers {
            direct,
            staging,
            spec: None,
        }
    }

    /// Records that the last read put `n` octets into the buffers from
    /// [`Connection::recv_buffers`] (in [`RecvBuffers::io_slices`] order),
    /// and processes them.
    ///
    /// # Panics
    /// If `n` exceeds what was offered (driver bug).
    pub fn handle_read(&mut self, n: usize, mrs: &mut MrTable) {
        let d = n.min(self.rx.direct_offered);
        let full = d == self.rx.direct_offered;
        self.rx.direct_offered = 0;
        let guessed = std::mem::take(&mut self.rx.spec.count);
        if d > 0 {
            self.placed_direct(d, mrs);
        }
        let rest = n - d;
        if guessed > 0 {
            if full {
                let mut spec = self.rx.spec;
                spec.count = guessed;
                self.handle_guessed(rest, &spec, mrs);
            }
            return;
        }
        assert!(
            self.rx.end + rest <= self.rx.buf.len(),
            "driver reported more octets than offered"
        );
        self.rx.end += rest;
        self.process(mrs);
    }

    /// Processes what a read put into the guessed FPDUs of a Read Response
    /// or Write (`left` octets after the direct buffer), in stream order.
    ///
    /// Each gap is taken only if the payload before it ended where guessed
    /// and the header in it is the guessed one; from the first gap where
    /// that does not hold, every octet that followed (the guessed payloads
    /// included, which nothing has touched yet) is copied out and processed
    /// like any other input.
    fn handle_guessed(&mut self, mut left: usize, spec: &Spec, mrs: &mut MrTable) {
        let mut other: Option<Vec<u8>> = None;
        let mut addr = spec.addr;
        let mut complete = true;
        for k in 0..spec.count {
            let g = left.min(spec.gaps[k]);
            left -= g;
            let gap = k * MAX_GAP..k * MAX_GAP + g;
            if other.is_none() && !self.gap_as_guessed(spec, k, addr, &self.rx.gapbuf[gap.clone()])
            {
                other = Some(Vec::new());
            }
            match other.as_mut() {
                Some(v) => v.extend_from_slice(&self.rx.gapbuf[gap]),
                None => {
                    let end = self.rx.end;
                    let Rx { buf, gapbuf, .. } = &mut self.rx;
                    buf[end..end + g].copy_from_slice(&gapbuf[gap]);
                    self.rx.end += g;
                    self.process(mrs);
                }
            }
            if g < spec.gaps[k] {
                complete = false;
                break;
            }
            let p = left.min(spec.pays[k]);
            left -= p;
            if other.is_none() && self.continues_read(spec.stag, addr, p) {
                self.placed_direct(p, mrs);
            } else {
                let v = other.get_or_insert_with(Vec::new);
                match mrs.slice_mut(spec.stag, addr, p, spec.needed) {
                    Ok(s) => v.extend_from_slice(s),
                    // Offered under the same lock, so it is there; a sink
                    // that is not is a local protection error.
                    Err(e) => {
                        self.fail(ConnError::LocalProtection(e), None);
                        return;
                    }
                }
            }
            addr += spec.pays[k] as u64;
            if p < spec.pays[k] {
                complete = false;
                break;
            }
        }
        // What followed the last guessed payload is in the tail.
        if complete && left > 0 {
            assert!(
                left <= self.rx.tailbuf.len(),
                "driver reported more octets than offered"
            );
            match other.as_mut() {
                Some(v) => v.extend_from_slice(&self.rx.tailbuf[..left]),
                None => {
                    let end = self.rx.end;
                    assert!(end + left <= self.rx.buf.len(), "staging overflow");
                    let Rx { buf, tailbuf, .. } = &mut self.rx;
                    buf[end..end + left].copy_from_slice(&tailbuf[..left]);
                    self.rx.end += left;
                    self.process(mrs);
                }
            }
        } else {
            assert_eq!(left, 0, "driver reported more octets than offered");
        }
        if let Some(v) = other {
            self.handle_bytes(&v, mrs);
        }
    }

    /// Whether `gap` (the octets read into gap `k`, maybe fewer than
    /// guessed) may be processed as guessed: the payload before it was
    /// placed whole, and it ends with the guessed header (a partial gap
    /// holds at most the trailer and part of the header, which place
    /// nothing).
    fn gap_as_guessed(&self, spec: &Spec, k: usize, addr: u64, gap: &[u8]) -> bool {
        let rx = &self.rx;
        let before_done =
            !rx.dead && rx.st == St::Payload && rx.remaining == 0 && rx.start == rx.end;
        if !before_done {
            return false;
        }
        if gap.len() < spec.gaps[k] {
            return true;
        }
        let Some(h) = gap.len().checked_sub(MPA_LEN_FIELD + TAGGED_HEADER_LEN) else {
            return false;
        };
        let ulpdu = (spec.pays[k] + TAGGED_HEADER_LEN) as u16;
        let header = DdpHeader::tagged(spec.lasts[k], spec.opcode, spec.stag, addr);
        let (bytes, n) = header.to_array();
        gap[h..h + MPA_LEN_FIELD] == ulpdu.to_be_bytes() && gap[h + MPA_LEN_FIELD..] == bytes[..n]
    }

    /// Whether the parser now expects `p` payload octets of the Read
    /// Response or Write at `addr` of the region `stag` (the guess held).
    fn continues_read(&self, stag: u32, addr: u64, p: usize) -> bool {
        let rx = &self.rx;
        !rx.dead
            && rx.st == St::Payload
            && rx.start == rx.end
            && rx.remaining >= p
            && matches!(rx.target, Target::Mr { stag: s, addr: a, .. } if s == stag && a == addr)
    }

    /// Feeds received octets by copying them (for tests, tools and
    /// drivers without vectored reads); returns how many were taken (less
    /// than `data.len()` only once the connection wants no more input).
    pub fn handle_bytes(&mut self, mut data: &[u8], mrs: &mut MrTable) -> usize {
        let total = data.len();
        while !data.is_empty() {
            let mut bufs = self.offer(mrs, false);
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
            // FPDUs, header, payload and trailer in turn. The phase
            // changes here only with an error, which the outer loop
            // looks at.
            while self.error.is_none() {
                let progressed = match self.rx.st {
                    St::Header => self.rx_whole_send() || self.rx_header(mrs),
                    St::Payload => self.rx_payload(mrs),
                    St::Trailer => self.rx_trailer(mrs),
                };
                if !progressed {
                    return;
                }
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
