//! Placement (RFC 5041 §7, RFC 5040 §4): where the payload of a checked
//! segment goes — tagged payload into registered memory, untagged Send
//! payload into the posted receive buffer, Read Request and Terminate
//! bodies into the control buffer — and what completes when a segment
//! that passed its CRC ends a message; and the shortcut for the common
//! small message, a whole staged Send placed into the posted receive and
//! completed in one step (`rx_whole_send`, tried by `rx.rs` before it
//! parses a header).

use std::collections::VecDeque;

use rpcrdma_verbs::{Access, WcStatus};

use super::place_state::{RecvProgress, Target};
use super::sq_state::OrqEntry;
use super::{ConnError, Connection, ProtocolError};
use crate::ddp::{
    field, Buffer, Control, DdpHeader, DDP_VERSION, RDMAP_VERSION, UNTAGGED_HEADER_LEN,
};
use crate::fpdu::{crc_from_wire, pad_len, MPA_CRC_LEN, MPA_LEN_FIELD};
use crate::mr::MrTable;
use crate::rdmap::{queue, Opcode, ReadRequest, Terminate, READ_REQUEST_LEN};

/// Largest Terminate message body we accept.
const CTRL_MAX: usize = 256;

impl Connection {
    /// `d` octets were read straight into the current target.
    pub(super) fn placed_direct(&mut self, d: usize, mrs: &mut MrTable) {
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

    /// Checks a segment header and says where its payload goes. Nothing is
    /// placed anywhere unless this returns `Ok`.
    pub(super) fn on_header(
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

    pub(super) fn on_send_header(
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

    /// The common small message in one step: a whole FPDU staged that is
    /// a Send (or Send with Solicited Event) starting and ending its
    /// message, for the next posted receive. It makes the checks the
    /// general path (`rx_header`, `rx_payload` and `rx_trailer` in
    /// `rx.rs`; `on_header`, `on_send_header`, `on_segment_end`) makes
    /// for such a segment and leaves the same outcome; anything else, an
    /// FPDU to refuse included, it leaves untouched to the general path.
    /// Returns whether it took the FPDU.
    /// (`fuzzing::fpdu_stream_pieces_agree` holds the two paths to the
    /// same outcome.)
    pub(super) fn rx_whole_send(&mut self) -> bool {
        const HDR: usize = MPA_LEN_FIELD + UNTAGGED_HEADER_LEN;
        let Connection {
            rx,
            rq,
            recv_cur,
            rx_msn,
            crc,
            ..
        } = self;
        let staged = &rx.buf[rx.start..rx.end];
        let Some(raw) = staged.get(..HDR) else {
            return false;
        };
        let ulpdu_len = usize::from(u16::from_be_bytes([raw[0], raw[1]]));
        let c = Control::from_bytes([raw[2], raw[3]]);
        if c.tagged
            || !c.last
            || c.ddp_version != DDP_VERSION
            || c.rdmap_version != RDMAP_VERSION
            || !matches!(c.opcode, Opcode::SEND | Opcode::SEND_SE)
        {
            return false;
        }
        let Some(payload) = ulpdu_len.checked_sub(UNTAGGED_HEADER_LEN) else {
            return false;
        };
        let body = HDR + payload + pad_len(ulpdu_len);
        let Some(fpdu) = staged.get(..body + MPA_CRC_LEN) else {
            return false;
        };
        let word = |r: std::ops::Range<usize>| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&raw[MPA_LEN_FIELD..][r]);
            u32::from_be_bytes(b)
        };
        let (qn, msn, mo) = (word(field::QN), word(field::MSN), word(field::MO));
        if qn != queue::SEND || msn != rx_msn[0] || mo != 0 || recv_cur.is_some() {
            return false;
        }
        if rq.front().is_none_or(|wr| wr.buf.len() < payload) {
            return false;
        }
        if *crc {
            let computed = crc32c::crc32c(&fpdu[..body]);
            let mut f = [0u8; MPA_CRC_LEN];
            f.copy_from_slice(&fpdu[body..]);
            if computed != crc_from_wire(f) {
                return false;
            }
        }
        // Taken: as the general path leaves it after the trailer.
        let Some(mut wr) = rq.pop_front() else {
            return false;
        };
        wr.buf[..payload].copy_from_slice(&fpdu[HDR..HDR + payload]);
        // At the next FPDU boundary, as the general path leaves it (the
        // fields of the FPDU in progress describe nothing there).
        rx.start += fpdu.len();
        rx_msn[0] = rx_msn[0].wrapping_add(1);
        if !self.first_fpdu_seen {
            self.first_fpdu_seen = true;
            self.tx.open_gate();
        }
        self.complete_recv(wr, WcStatus::Success, payload, None, c.opcode.solicited());
        true
    }

    /// A segment passed its CRC: finish the message if it was the last one.
    pub(super) fn on_segment_end(
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
}

/// Places staged payload octets at their target.
pub(super) fn place(
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
