//! The send queue (RFC 5040 §5, verbs semantics): work requests posted in
//! order, encoded into FPDUs as the outbound Read limit (ORD) allows,
//! completed in posting order once their last octet is written (Sends,
//! Writes) or their Read Response has arrived (Reads).

use bytes::Bytes;
use rpcrdma_verbs::{Access, PostError, SendOp, SendWr, Sge, WcOpcode, WcStatus, WorkCompletion};

use super::tx::{push_message, push_small, Mark, INLINE_COPY_MAX};
use super::{ConnError, Connection, Phase};
use crate::ddp::{DdpHeader, TAGGED_HEADER_LEN, UNTAGGED_HEADER_LEN};
use crate::mr::MrTable;
use crate::rdmap::{queue, Opcode, ReadRequest, READ_REQUEST_LEN};

#[derive(Debug)]
pub(super) struct SqEntry {
    pub(super) seq: u64,
    pub(super) wr_id: u64,
    pub(super) opcode: WcOpcode,
    pub(super) signaled: bool,
    pub(super) result: Option<(WcStatus, u32)>,
}

#[derive(Debug)]
pub(super) struct OrqEntry {
    /// The send-queue entry, or `None` for our RTR zero-length Read.
    pub(super) seq: Option<u64>,
    pub(super) sink_stag: u32,
    pub(super) sink_to: u64,
    pub(super) len: u64,
    pub(super) received: u64,
}

impl Connection {
    /// Posts a send-queue work request. Local keys are checked now (an
    /// invalid one is refused with [`PostError::LocalProtection`] and
    /// nothing is queued).
    pub fn post_send(&mut self, wr: SendWr, mrs: &mut MrTable) -> Result<(), PostError> {
        if self.phase != Phase::Connected {
            return Err(PostError::NotConnected {
                state: self.phase.name(),
            });
        }
        let depth = self.cfg.caps.send_depth;
        if self.sq.len() >= depth as usize {
            return Err(PostError::QueueFull {
                queue: "send",
                depth,
            });
        }
        check_wr(&wr, mrs)?;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.sq.push_back(SqEntry {
            seq,
            wr_id: wr.wr_id,
            opcode: wr.wc_opcode(),
            signaled: wr.signaled,
            result: None,
        });
        let waits = !self.sq_pending.is_empty()
            || (matches!(wr.op, SendOp::Read { .. }) && self.orq.len() >= usize::from(self.ord));
        if waits {
            self.sq_pending.push_back((seq, wr));
            self.pump(mrs);
        } else {
            // Nothing waits before it: encoded now, without a round trip
            // through the pending queue.
            self.encode_or_fail(seq, wr, mrs);
        }
        self.drain_sq();
        Ok(())
    }

    pub(super) fn set_sq_result(&mut self, seq: u64, status: WcStatus, len: u32) {
        let Some(front) = self.sq.front() else { return };
        let Some(idx) = seq.checked_sub(front.seq) else {
            return;
        };
        if let Some(e) = self.sq.get_mut(idx as usize) {
            if e.result.is_none() {
                e.result = Some((status, len));
            }
        }
    }

    pub(super) fn drain_sq(&mut self) {
        while let Some(e) = self.sq.front() {
            let Some((status, len)) = e.result else { break };
            let e = self.sq.pop_front().expect("front exists");
            if e.signaled || status != WcStatus::Success {
                self.completions.push_back(WorkCompletion {
                    wr_id: e.wr_id,
                    opcode: e.opcode,
                    status,
                    byte_len: len,
                    invalidated_rkey: None,
                    solicited: false,
                    buf: None,
                });
            }
        }
    }

    /// Encodes waiting work requests, in order, while the ORD allows.
    pub(super) fn pump(&mut self, mrs: &mut MrTable) {
        while let Some((_, wr)) = self.sq_pending.front() {
            if matches!(wr.op, SendOp::Read { .. }) && self.orq.len() >= usize::from(self.ord) {
                break;
            }
            let Some((seq, wr)) = self.sq_pending.pop_front() else {
                break;
            };
            if !self.encode_or_fail(seq, wr, mrs) {
                return;
            }
        }
    }

    /// Encodes one work request; a local key that fails now (it was
    /// checked at post time) fails the connection. Returns false then.
    fn encode_or_fail(&mut self, seq: u64, wr: SendWr, mrs: &mut MrTable) -> bool {
        if let Err(e) = self.encode_wr(seq, wr, mrs) {
            self.set_sq_result(seq, WcStatus::LocalProtection, 0);
            self.fail(ConnError::LocalProtection(e), None);
            return false;
        }
        true
    }

    pub(super) fn gather(
        sges: &[Sge],
        mrs: &MrTable,
    ) -> Result<(Vec<Bytes>, usize), crate::mr::AccessError> {
        let mut pieces = Vec::with_capacity(sges.len());
        let mut total = 0usize;
        for s in sges {
            let b = match s {
                Sge::Bytes(b) => b.clone(),
                Sge::Region(r) => mrs.source(r.lkey, r.addr, r.len as usize, Access::LOCAL_READ)?,
            };
            total += b.len();
            pieces.push(b);
        }
        Ok((pieces, total))
    }

    pub(super) fn encode_wr(
        &mut self,
        seq: u64,
        wr: SendWr,
        mrs: &mut MrTable,
    ) -> Result<(), crate::mr::AccessError> {
        let (crc, max_ulpdu) = (self.crc, self.cfg.max_ulpdu);
        match wr.op {
            SendOp::Send {
                sges,
                solicited,
                invalidate,
            } => {
                let opcode = match (solicited, invalidate.is_some()) {
                    (false, false) => Opcode::SEND,
                    (false, true) => Opcode::SEND_INVALIDATE,
                    (true, false) => Opcode::SEND_SE,
                    (true, true) => Opcode::SEND_SE_INVALIDATE,
                };
                let inv = invalidate.unwrap_or(0);
                let total: usize = sges.iter().map(Sge::len).sum();
                if total <= INLINE_COPY_MAX && total + UNTAGGED_HEADER_LEN <= max_ulpdu {
                    // Small Send: one contiguous FPDU, no payload references.
                    let msn = self.next_tx_msn(queue::SEND);
                    let h = DdpHeader::untagged(true, opcode, inv, queue::SEND, msn, 0);
                    self.push_small_from(&h, &sges, total, mrs)?;
                } else {
                    let (pieces, total) = Self::gather(&sges, mrs)?;
                    let msn = self.next_tx_msn(queue::SEND);
                    push_message(
                        &mut self.tx,
                        crc,
                        max_ulpdu,
                        UNTAGGED_HEADER_LEN,
                        &pieces,
                        total,
                        |off, last| {
                            DdpHeader::untagged(last, opcode, inv, queue::SEND, msn, off as u32)
                        },
                    );
                }
                self.tx.mark(Mark::Sq(seq));
            }
            SendOp::Write { sges, remote } => {
                let (pieces, total) = Self::gather(&sges, mrs)?;
                push_message(
                    &mut self.tx,
                    crc,
                    max_ulpdu,
                    TAGGED_HEADER_LEN,
                    &pieces,
                    total,
                    |off, last| {
                        DdpHeader::tagged(
                            last,
                            Opcode::WRITE,
                            remote.rkey,
                            remote.addr.wrapping_add(off as u64),
                        )
                    },
                );
                self.tx.mark(Mark::Sq(seq));
            }
            SendOp::Read { sink, remote } => {
                mrs.check(
                    sink.lkey,
                    sink.addr,
                    u64::from(sink.len),
                    Access::LOCAL_WRITE,
                )?;
                self.queue_read_request(
                    Some(seq),
                    ReadRequest {
                        sink_stag: sink.lkey,
                        sink_to: sink.addr,
                        size: sink.len,
                        src_stag: remote.rkey,
                        src_to: remote.addr,
                    },
                );
            }
            SendOp::LocalInvalidate { key } => {
                let status = if mrs.invalidate(key).is_ok() {
                    WcStatus::Success
                } else {
                    WcStatus::LocalProtection
                };
                self.set_sq_result(seq, status, 0);
            }
            // Refused by check_wr at post time.
            _ => self.set_sq_result(seq, WcStatus::LocalQpOperation, 0),
        }
        Ok(())
    }

    /// Queues one small FPDU whose payload is copied from `sges` (every
    /// key is checked before anything is queued).
    pub(super) fn push_small_from(
        &mut self,
        h: &DdpHeader,
        sges: &[Sge],
        total: usize,
        mrs: &MrTable,
    ) -> Result<(), crate::mr::AccessError> {
        let mut slices: [&[u8]; 4] = [&[]; 4];
        if sges.len() <= slices.len() {
            for (d, s) in slices.iter_mut().zip(sges) {
                *d = sge_slice(s, mrs)?;
            }
            push_small(&mut self.tx, self.crc, h, &slices[..sges.len()], total);
        } else {
            let refs = sges
                .iter()
                .map(|s| sge_slice(s, mrs))
                .collect::<Result<Vec<_>, _>>()?;
            push_small(&mut self.tx, self.crc, h, &refs, total);
        }
        Ok(())
    }

    pub(super) fn next_tx_msn(&mut self, qn: u32) -> u32 {
        let m = &mut self.tx_msn[qn as usize];
        let v = *m;
        *m = m.wrapping_add(1);
        v
    }

    pub(super) fn queue_read_request(&mut self, seq: Option<u64>, rr: ReadRequest) {
        let msn = self.next_tx_msn(queue::READ_REQUEST);
        let h = DdpHeader::untagged(true, Opcode::READ_REQUEST, 0, queue::READ_REQUEST, msn, 0);
        // 18 + 28 octets: within the smallest max_ulpdu (MIN_MAX_ULPDU).
        push_small(
            &mut self.tx,
            self.crc,
            &h,
            &[&rr.to_bytes()],
            READ_REQUEST_LEN,
        );
        self.orq.push_back(OrqEntry {
            seq,
            sink_stag: rr.sink_stag,
            sink_to: rr.sink_to,
            len: u64::from(rr.size),
            received: 0,
        });
    }
}

/// The octets of a gather element, borrowed.
fn sge_slice<'a>(s: &'a Sge, mrs: &'a MrTable) -> Result<&'a [u8], crate::mr::AccessError> {
    match s {
        Sge::Bytes(b) => Ok(&b[..]),
        Sge::Region(r) => mrs.source_slice(r.lkey, r.addr, r.len as usize, Access::LOCAL_READ),
    }
}

const _: () = assert!(UNTAGGED_HEADER_LEN + READ_REQUEST_LEN <= super::MIN_MAX_ULPDU);

/// Synchronous checks of a work request's local keys.
pub(super) fn check_wr(wr: &SendWr, mrs: &MrTable) -> Result<(), PostError> {
    let prot = |key: u32, e: crate::mr::AccessError| PostError::LocalProtection {
        key,
        reason: e.to_string(),
    };
    let check_sges = |sges: &[Sge]| -> Result<u64, PostError> {
        let mut total = 0u64;
        for s in sges {
            if let Sge::Region(r) = s {
                mrs.check(r.lkey, r.addr, u64::from(r.len), Access::LOCAL_READ)
                    .map_err(|e| prot(r.lkey, e))?;
            }
            total += s.len() as u64;
        }
        Ok(total)
    };
    match &wr.op {
        SendOp::Send { sges, .. } | SendOp::Write { sges, .. } => {
            if check_sges(sges)? > u64::from(u32::MAX) {
                return Err(PostError::Invalid {
                    reason: "message longer than 4 GiB",
                });
            }
        }
        SendOp::Read { sink, .. } => {
            mrs.check(
                sink.lkey,
                sink.addr,
                u64::from(sink.len),
                Access::LOCAL_WRITE,
            )
            .map_err(|e| prot(sink.lkey, e))?;
        }
        SendOp::LocalInvalidate { .. } => {}
        #[allow(unreachable_patterns)]
        _ => {
            return Err(PostError::Invalid {
                reason: "unsupported work request",
            })
        }
    }
    Ok(())
}
