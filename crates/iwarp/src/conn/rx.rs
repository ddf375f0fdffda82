//! The receive side: MPA set-up frames, then FPDUs parsed header by header,
//! with payload placed straight into registered memory or posted receive
//! buffers.
//!
//! Small reads go into a staging buffer (headers, trailers, small
//! payloads, which are then copied to their place). Once a header has been
//! checked and a large payload remains, [`Connection::recv_buffers`] offers
//! the payload's final place itself as the first read buffer, followed by a
//! small staging area for the trailer and the next header: one vectored
//! read, no intermediate copy.

use std::collections::VecDeque;

use bytes::Bytes;
use rpcrdma_verbs::{Access, WcStatus};

use super::{
    ConnError, Connection, Event, OrqEntry, Phase, ProtocolError, RecvProgress, Role, Rtr,
};
use crate::ddp::{Buffer, DdpHeader, TAGGED_HEADER_LEN, UNTAGGED_HEADER_LEN};
use crate::fpdu::{crc_from_wire, pad_len, MPA_CRC_LEN, MPA_LEN_FIELD};
use crate::mpa::{FrameKind, MpaFlags, MpaFrame};
use crate::mr::MrTable;
use crate::rdmap::{queue, Opcode, ReadRequest, Terminate, READ_REQUEST_LEN};

use super::tx::{push_message, Mark};
use super::MAX_IRD;

/// Staging buffer size.
const STAGE_CAP: usize = 16 * 1024;
/// Largest staging read when no direct placement is possible.
const STAGE_READ: usize = 4096;
/// Staging offered behind a direct placement (trailer, next header, a bit
/// of the next payload).
const SPILL_WITH_DIRECT: usize = 512;
/// Payload remainders at least this long are read in place.
const DIRECT_MIN: usize = 1024;
/// Largest Terminate message body we accept.
const CTRL_MAX: usize = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Header,
    Payload,
    Trailer,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// Zero-length segments.
    Discard,
    /// Tagged placement into a region.
    Mr {
        stag: u32,
        addr: u64,
        needed: Access,
        read_response: bool,
    },
    /// The receive buffer of the Send in progress.
    Recv,
    /// A Read Request or Terminate body, into `ctrl`.
    Ctrl,
}

#[derive(Debug)]
pub(super) struct Rx {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    st: St,
    crc: u32,
    ulpdu_len: usize,
    hdr: Option<DdpHeader>,
    remaining: usize,
    target: Target,
    ctrl: Vec<u8>,
    direct_offered: usize,
    dead: bool,
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

    /// `d` octets were read straight into the current target.
    fn placed_direct(&mut self, d: usize, mrs: &mut MrTable) {
        let crc_on = self.crc;
        match &mut self.rx.target {
            Target::Mr {
                stag,
                addr,
                needed,
                read_response,
            } => {
                if crc_on {
                    if let Ok(s) = mrs.slice_mut(*stag, *addr, d, *needed) {
                        self.rx.crc = crc32c::crc32c_append(self.rx.crc, s);
                    }
                }
                *addr += d as u64;
                if *read_response {
                    if let Some(e) = self.orq.front_mut() {
                        e.received += d as u64;
                    }
                }
            }
            Target::Recv => {
                if let Some(c) = self.recv_cur.as_mut() {
                    if crc_on {
                        if let Some(s) = c.wr.buf.get(c.received..c.received + d) {
                            self.rx.crc = crc32c::crc32c_append(self.rx.crc, s);
                        }
                    }
                    c.received += d;
                }
            }
            Target::Discard | Target::Ctrl => {}
        }
        self.rx.remaining -= d;
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

    fn process_mpa(&mut self) -> bool {
        let staged = &self.rx.buf[self.rx.start..self.rx.end];
        match MpaFrame::parse(staged) {
            Ok(None) => false,
            Err(e) => {
                // A responder can still answer a frame it could read the
                // header of with a Reject; a garbled key gets no answer.
                if self.role == Role::Responder && !matches!(e, crate::mpa::MpaError::BadKey) {
                    let _ = self.send_reject(Bytes::new());
                }
                self.fail(ConnError::Protocol(e.into()), None);
                true
            }
            Ok(Some((frame, used))) => {
                self.rx.start += used;
                match self.role {
                    Role::Responder => self.on_request(frame),
                    Role::Initiator => self.on_reply(frame),
                }
                true
            }
        }
    }

    fn on_request(&mut self, req: MpaFrame) {
        if req.kind != FrameKind::Request {
            self.fail(
                ProtocolError::MpaUnexpectedKey {
                    got: "Reply",
                    expected: "Request",
                }
                .into(),
                None,
            );
            return;
        }
        let early = self.rx.end - self.rx.start;
        let markers = req.flags.has(MpaFlags::MARKERS);
        let pd_len = req.pd_length();
        let revision = req.revision;
        self.request = Some(req);
        if early > 0 {
            self.fail(ProtocolError::MpaEarlyData(early).into(), None);
            return;
        }
        let refusal = if !(1..=2).contains(&revision) {
            Some(ConnError::Protocol(ProtocolError::MpaRevision(revision)))
        } else if markers {
            Some(ConnError::RejectedLocally { markers: true })
        } else if pd_len > self.cfg.max_private_data {
            Some(ConnError::Protocol(ProtocolError::MpaPrivateDataTooLong {
                len: pd_len,
                max: self.cfg.max_private_data,
            }))
        } else {
            None
        };
        if let Some(err) = refusal {
            let _ = self.send_reject(Bytes::new());
            self.fail(err, None);
            return;
        }
        let Some(req) = self.request.as_ref() else {
            return;
        };
        let info = super::PeerRequest {
            revision: req.revision,
            crc: req.flags.has(MpaFlags::CRC),
            ird_ord: req.ird_ord,
            private_data: req.private_data.clone(),
        };
        self.phase = Phase::AwaitAccept;
        self.deadline = None;
        self.events.push_back(Event::ConnectRequest(info));
    }

    fn on_reply(&mut self, rep: MpaFrame) {
        if rep.kind != FrameKind::Reply {
            self.fail(
                ProtocolError::MpaUnexpectedKey {
                    got: "Request",
                    expected: "Reply",
                }
                .into(),
                None,
            );
            return;
        }
        if rep.is_reject() {
            self.fail(
                ConnError::Rejected {
                    private_data: rep.private_data,
                },
                None,
            );
            return;
        }
        let Some(req) = self.request.clone() else {
            return;
        };
        self.crc = req.flags.has(MpaFlags::CRC) || rep.flags.has(MpaFlags::CRC);
        let mut rtr = None;
        let err = if rep.revision == 0 || rep.revision > req.revision {
            Some(ProtocolError::MpaReplyRevision {
                sent: req.revision,
                got: rep.revision,
            })
        } else if rep.flags.has(MpaFlags::MARKERS) {
            Some(ProtocolError::MpaMarkers)
        } else if rep.pd_length() > self.cfg.max_private_data {
            Some(ProtocolError::MpaPrivateDataTooLong {
                len: rep.pd_length(),
                max: self.cfg.max_private_data,
            })
        } else {
            match (req.ird_ord, rep.ird_ord) {
                (Some(ours), Some(w)) if ours.peer_to_peer && w.peer_to_peer => {
                    if w.write_rtr && ours.write_rtr {
                        rtr = Some(Rtr::Write);
                        None
                    } else if w.read_rtr && ours.read_rtr {
                        rtr = Some(Rtr::Read);
                        None
                    } else {
                        Some(ProtocolError::MpaNoMatchingRtr)
                    }
                }
                _ => None,
            }
        };
        if let Some(w) = rep.ird_ord {
            self.ord = self.cfg.caps.ord.min(w.ird);
            self.ird = self.cfg.caps.ird.max(w.ord).min(MAX_IRD);
        }
        if let Some(e) = err {
            // The Reply was well formed, so the peer is in FPDU mode: tell it
            // why with a Terminate (as Linux siw does).
            self.phase = Phase::Connected;
            let t = e.term_error().map(Terminate::bare);
            self.fail(e.into(), t);
            return;
        }
        self.connected(rep.revision, rtr, rep.private_data.clone(), rep.ird_ord);
        // Peer-to-peer mode: the RTR is our first FPDU.
        match rtr {
            Some(Rtr::Write) => {
                let (crc, max) = (self.crc, self.cfg.max_ulpdu);
                push_message(&mut self.tx, crc, max, TAGGED_HEADER_LEN, &[], 0, |_, _| {
                    DdpHeader::tagged(true, Opcode::WRITE, 0, 0)
                });
            }
            Some(Rtr::Read) => self.queue_read_request(None, ReadRequest::default()),
            None => {}
        }
    }

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

    /// Checks a segment header and says where its payload goes. Nothing is
    /// placed anywhere unless this returns `Ok`.
    fn on_header(
        &mut self,
        h: &DdpHeader,
        payload: usize,
        mrs: &mut MrTable,
    ) -> Result<Target, ProtocolError> {
        let c = h.control;
        if c.ddp_version != crate::ddp::DDP_VERSION {
            return Err(ProtocolError::DdpVersion {
                version: c.ddp_version,
                tagged: c.tagged,
            });
        }
        if c.rdmap_version != crate::ddp::RDMAP_VERSION {
            return Err(ProtocolError::RdmapVersion(c.rdmap_version));
        }
        let op = c.opcode;
        if op.tagged() != Some(c.tagged) {
            return Err(ProtocolError::UnexpectedOpcode {
                opcode: op,
                tagged: c.tagged,
            });
        }
        match h.buffer {
            Buffer::Tagged { stag, to } => {
                if op == Opcode::WRITE {
                    // A zero-length Write (the RTR of RFC 6581) places
                    // nothing, so its STag is not checked (as in siw).
                    if payload == 0 {
                        return Ok(Target::Discard);
                    }
                    mrs.check(stag, to, payload as u64, Access::REMOTE_WRITE)
                        .map_err(ProtocolError::WriteAccess)?;
                    return Ok(Target::Mr {
                        stag,
                        addr: to,
                        needed: Access::REMOTE_WRITE,
                        read_response: false,
                    });
                }
                // Read Response: must continue the oldest outstanding Read.
                let Some(e) = self.orq.front() else {
                    return Err(ProtocolError::UnexpectedReadResponse);
                };
                if stag != e.sink_stag {
                    return Err(ProtocolError::ReadResponseMismatch("sink STag"));
                }
                if e.sink_to.checked_add(e.received) != Some(to) {
                    return Err(ProtocolError::ReadResponseMismatch("tagged offset"));
                }
                let got = e.received + payload as u64;
                if got > e.len || (c.last && got != e.len) {
                    return Err(ProtocolError::ReadResponseMismatch("length"));
                }
                if payload == 0 {
                    return Ok(Target::Discard);
                }
                mrs.check(stag, to, payload as u64, Access::LOCAL_WRITE)
                    .map_err(ProtocolError::WriteAccess)?;
                Ok(Target::Mr {
                    stag,
                    addr: to,
                    needed: Access::LOCAL_WRITE,
                    read_response: true,
                })
            }
            Buffer::Untagged {
                rdmap_word,
                qn,
                msn,
                mo,
            } => {
                let want_qn = match op {
                    Opcode::READ_REQUEST => queue::READ_REQUEST,
                    Opcode::TERMINATE => queue::TERMINATE,
                    _ => queue::SEND,
                };
                if qn != want_qn {
                    return Err(ProtocolError::InvalidQueue { qn, opcode: op });
                }
                let expected = self.rx_msn[qn as usize];
                if msn != expected {
                    return Err(ProtocolError::MsnRange { qn, msn, expected });
                }
                match qn {
                    queue::SEND => self.on_send_header(op, rdmap_word, msn, mo, payload),
                    queue::READ_REQUEST => {
                        if mo != 0 {
                            return Err(ProtocolError::InvalidMo { mo, expected: 0 });
                        }
                        if !c.last {
                            return Err(ProtocolError::BadReadRequest(
                                "segmented over several FPDUs",
                            ));
                        }
                        if payload != READ_REQUEST_LEN {
                            return Err(ProtocolError::BadReadRequest("not 28 octets long"));
                        }
                        Ok(Target::Ctrl)
                    }
                    _ => {
                        if mo != 0 || !c.last || payload > CTRL_MAX {
                            return Err(ProtocolError::BadTerminate);
                        }
                        Ok(Target::Ctrl)
                    }
                }
            }
        }
    }

    fn on_send_header(
        &mut self,
        op: Opcode,
        inv: u32,
        msn: u32,
        mo: u32,
        payload: usize,
    ) -> Result<Target, ProtocolError> {
        match &mut self.recv_cur {
            None => {
                if mo != 0 {
                    return Err(ProtocolError::InvalidMo { mo, expected: 0 });
                }
                let Some(wr) = self.rq.pop_front() else {
                    return Err(ProtocolError::NoReceiveBuffer { msn });
                };
                self.recv_cur = Some(RecvProgress {
                    wr,
                    msn,
                    received: 0,
                    opcode: op,
                    invalidate: inv,
                });
            }
            Some(cur) => {
                if op != cur.opcode || inv != cur.invalidate {
                    return Err(ProtocolError::Interleaved { opcode: op });
                }
                if mo as usize != cur.received {
                    return Err(ProtocolError::InvalidMo {
                        mo,
                        expected: cur.received as u32,
                    });
                }
            }
        }
        let Some(cur) = self.recv_cur.as_ref() else {
            return Err(ProtocolError::NoReceiveBuffer { msn });
        };
        debug_assert_eq!(cur.msn, msn);
        if cur.received + payload > cur.wr.buf.len() {
            return Err(ProtocolError::MessageTooLong {
                len: cur.received + payload,
                buffer: cur.wr.buf.len(),
            });
        }
        Ok(if payload == 0 {
            Target::Discard
        } else {
            Target::Recv
        })
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

    /// A segment passed its CRC: finish the message if it was the last one.
    fn on_segment_end(
        &mut self,
        mrs: &mut MrTable,
    ) -> Result<(), (ProtocolError, Option<ReadRequest>)> {
        let Some(h) = self.rx.hdr else { return Ok(()) };
        let (op, last) = (h.control.opcode, h.control.last);
        match op {
            Opcode::WRITE => {}
            Opcode::READ_RESPONSE => {
                if last {
                    if let Some(e) = self.orq.pop_front() {
                        if let Some(seq) = e.seq {
                            self.set_sq_result(seq, WcStatus::Success, e.len as u32);
                            self.drain_sq();
                        }
                    }
                    // An ORD slot is free: Reads waiting for one may go.
                    self.pump(mrs);
                    self.drain_sq();
                }
            }
            Opcode::READ_REQUEST => {
                self.rx_msn[1] = self.rx_msn[1].wrapping_add(1);
                let Some(rr) = ReadRequest::parse(&self.rx.ctrl) else {
                    return Err((ProtocolError::BadReadRequest("not 28 octets long"), None));
                };
                self.serve_read(&rr, mrs).map_err(|e| (e, Some(rr)))?;
            }
            Opcode::TERMINATE => {
                self.rx_msn[2] = self.rx_msn[2].wrapping_add(1);
                match Terminate::parse(&self.rx.ctrl) {
                    Ok(t) => self.fail(ConnError::RemoteTerminate(t), None),
                    Err(_) => self.fail(ConnError::Protocol(ProtocolError::BadTerminate), None),
                }
            }
            _ => {
                if last {
                    self.rx_msn[0] = self.rx_msn[0].wrapping_add(1);
                    let Some(cur) = self.recv_cur.take() else {
                        return Ok(());
                    };
                    let mut inv = None;
                    if op.invalidates() {
                        if mrs.invalidate(cur.invalidate).is_err() {
                            let stag = cur.invalidate;
                            self.recv_cur = Some(cur);
                            return Err((ProtocolError::CannotInvalidate(stag), None));
                        }
                        inv = Some(cur.invalidate);
                    }
                    let len = cur.received;
                    self.complete_recv(cur.wr, WcStatus::Success, len, inv, op.solicited());
                }
            }
        }
        Ok(())
    }

    /// Answers an inbound RDMA Read Request.
    fn serve_read(&mut self, rr: &ReadRequest, mrs: &mut MrTable) -> Result<(), ProtocolError> {
        if self.irq_outstanding >= usize::from(self.ird) {
            return Err(ProtocolError::IrdExceeded(self.ird));
        }
        let data = if rr.size == 0 {
            // Zero-length Read (e.g. an RTR): nothing to check or send.
            Bytes::new()
        } else {
            mrs.source(
                rr.src_stag,
                rr.src_to,
                rr.size as usize,
                Access::REMOTE_READ,
            )
            .map_err(ProtocolError::ReadAccess)?
        };
        let (sink, to) = (rr.sink_stag, rr.sink_to);
        let total = data.len();
        push_message(
            &mut self.tx,
            self.crc,
            self.cfg.max_ulpdu,
            TAGGED_HEADER_LEN,
            &[data],
            total,
            |off, last| {
                DdpHeader::tagged(
                    last,
                    Opcode::READ_RESPONSE,
                    sink,
                    to.wrapping_add(off as u64),
                )
            },
        );
        self.tx.mark(Mark::Irq);
        self.irq_outstanding += 1;
        Ok(())
    }
}

/// Places staged payload octets at their target.
fn place(
    data: &[u8],
    target: &mut Target,
    recv_cur: &mut Option<RecvProgress>,
    orq: &mut VecDeque<OrqEntry>,
    ctrl: &mut Vec<u8>,
    mrs: &mut MrTable,
) -> Result<(), ProtocolError> {
    match target {
        Target::Discard => Ok(()),
        Target::Mr {
            stag,
            addr,
            needed,
            read_response,
        } => {
            mrs.slice_mut(*stag, *addr, data.len(), *needed)
                .map_err(ProtocolError::WriteAccess)?
                .copy_from_slice(data);
            *addr += data.len() as u64;
            if *read_response {
                if let Some(e) = orq.front_mut() {
                    e.received += data.len() as u64;
                }
            }
            Ok(())
        }
        Target::Recv => {
            let Some(c) = recv_cur.as_mut() else {
                return Err(ProtocolError::NoReceiveBuffer { msn: 0 });
            };
            let len = c.wr.buf.len();
            let Some(dst) = c.wr.buf.get_mut(c.received..c.received + data.len()) else {
                return Err(ProtocolError::MessageTooLong {
                    len: c.received + data.len(),
                    buffer: len,
                });
            };
            dst.copy_from_slice(data);
            c.received += data.len();
            Ok(())
        }
        Target::Ctrl => {
            ctrl.extend_from_slice(data);
            Ok(())
        }
    }
}

#[allow(dead_code)]
const _: () = assert!(UNTAGGED_HEADER_LEN + READ_REQUEST_LEN < STAGE_READ);
