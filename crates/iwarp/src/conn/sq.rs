//! The send queue (RFC 5040 §5, verbs semantics): work requests posted in
//! order, encoded into FPDUs as the outbound Read limit (ORD) allows,
//! completed in posting order once their last octet is written (Sends,
//! Writes) or their Read Response has arrived (Reads).

use bytes::Bytes;
use rpcrdma_verbs::{Access, PostError, SendOp, SendWr, Sge, WcOpcode, WcStatus, WorkCompletion};

use super::sq_state::{OrqEntry, SqEntry};
use super::tx::{
    fpdu_prefix, push_message, push_small, push_small_prefixed, Mark, INLINE_COPY_MAX,
};
use super::{ConnError, Connection, Phase};
use crate::ddp::{DdpHeader, TAGGED_HEADER_LEN, UNTAGGED_HEADER_LEN};
use crate::mr::MrTable;
use crate::rdmap::{queue, Opcode, ReadRequest, READ_REQUEST_LEN};

impl Connection {
    /// Posts a send-queue work request. Local keys are checked now (an
    /// invalid one is refused with [`PostError::LocalProtection`] and
    /// nothing is queued).
    pub fn post_send(&mut self, wr: SendWr, mrs: &mut MrTable) -> Result<(), PostError> {
        self.check_post(&wr, mrs)?;
        let seq = self.push_sq_entry(&wr);
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

    /// [`Connection::post_send`], then the write, in one call when the
    /// request can go to the wire at once: a Send whose FPDU is encoded
    /// whole (at most 512 octets of payload) while nothing is queued for
    /// the wire or waits to be (and, if it is signaled, no earlier request
    /// is incomplete, so that its completion can be reported at once).
    /// `write` gets the encoded FPDU, once, and returns how many octets the
    /// socket took (0 for none, e.g. would block); what it did not take
    /// stays queued as after [`Connection::post_send`] and
    /// [`Connection::handle_written`]. A request that cannot go at once is
    /// posted as by [`Connection::post_send`] and `write` is not called:
    /// the driver writes what [`Connection::transmit_iovecs`] offers, as
    /// always.
    ///
    /// A Send written whole this way costs no send-queue entry: it
    /// completes (if signaled) before this returns.
    pub fn post_send_now(
        &mut self,
        wr: SendWr,
        mrs: &mut MrTable,
        write: impl FnOnce(&[u8]) -> usize,
    ) -> Result<(), PostError> {
        let SendOp::Send {
            sges,
            solicited,
            invalidate,
        } = &wr.op
        else {
            return self.post_send(wr, mrs);
        };
        let (mut total, mut regions) = (0usize, false);
        for s in sges {
            total += s.len();
            regions |= matches!(s, Sge::Region(_));
        }
        let now = self.phase == Phase::Connected
            && self.sq_pending.is_empty()
            && self.tx.pending() == 0
            && !self.tx.gated()
            && (!wr.signaled || self.sq.is_empty())
            && self.fits_one_small_fpdu(total);
        if !now {
            return self.post_send(wr, mrs);
        }
        // post_send's checks: state (above), depth, local keys (a Send this
        // short cannot be too long).
        let depth = self.cfg.caps.send_depth;
        if self.sq.len() >= depth as usize {
            return Err(PostError::QueueFull {
                queue: "send",
                depth,
            });
        }
        if regions {
            check_wr(&wr, mrs)?;
        }
        if let Err(e) = self.push_small_send(sges, total, *solicited, *invalidate, mrs) {
            // As post_send: the request fails, and the connection with it.
            let seq = self.push_sq_entry(&wr);
            self.set_sq_result(seq, WcStatus::LocalProtection, 0);
            self.fail(ConnError::LocalProtection(e), None);
            self.drain_sq();
            return Ok(());
        }
        let len = self.tx.pending() as usize;
        let n = write(self.tx.unwritten_encoded()).min(len);
        if n == len {
            self.tx.advance_all();
            if wr.signaled {
                self.completions.push_back(WorkCompletion {
                    wr_id: wr.wr_id,
                    opcode: WcOpcode::Send,
                    status: WcStatus::Success,
                    byte_len: 0,
                    invalidated_rkey: None,
                    solicited: false,
                    buf: None,
                });
            }
        } else {
            // Not all of it: from here as if posted, then written in part.
            let seq = self.push_sq_entry(&wr);
            self.tx.mark(Mark::Sq(seq));
            if n > 0 {
                self.handle_written(n);
            }
        }
        // The payload is encoded: the gather list goes back for the next
        // Send of this thread (no allocation per Send).
        if let SendOp::Send { sges, .. } = wr.op {
            rpcrdma_verbs::recycle_gather_list(sges);
        }
        Ok(())
    }

    /// The checks of a post: state, queue depth, local keys.
    fn check_post(&self, wr: &SendWr, mrs: &MrTable) -> Result<(), PostError> {
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
        check_wr(wr, mrs)
    }

    /// Queues the send-queue entry of a posted request; returns its
    /// sequence number.
    fn push_sq_entry(&mut self, wr: &SendWr) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.sq.push_back(SqEntry {
            seq,
            wr_id: wr.wr_id,
            opcode: wr.wc_opcode(),
            signaled: wr.signaled,
            result: None,
        });
        seq
    }

    /// Whether a Send of `total` octets is encoded as one contiguous FPDU.
    fn fits_one_small_fpdu(&self, total: usize) -> bool {
        total <= INLINE_COPY_MAX && total + UNTAGGED_HEADER_LEN <= self.cfg.max_ulpdu
    }

    /// Queues a Send that fits one small FPDU (see
    /// [`Connection::fits_one_small_fpdu`]).
    fn push_small_send(
        &mut self,
        sges: &[Sge],
        total: usize,
        solicited: bool,
        invalidate: Option<u32>,
        mrs: &MrTable,
    ) -> Result<(), crate::mr::AccessError> {
        let mut few: [&[u8]; 4] = [&[]; 4];
        let more: Vec<&[u8]>;
        let pieces: &[&[u8]] = if sges.len() <= few.len() {
            for (d, s) in few.iter_mut().zip(sges) {
                *d = sge_slice(s, mrs)?;
            }
            &few[..sges.len()]
        } else {
            more = sges
                .iter()
                .map(|s| sge_slice(s, mrs))
                .collect::<Result<_, _>>()?;
            &more
        };
        let msn = self.next_tx_msn(queue::SEND);
        let h = DdpHeader::untagged(
            true,
            send_opcode(solicited, invalidate.is_some()),
            invalidate.unwrap_or(0),
            queue::SEND,
            msn,
            0,
        );
        // The header built here, from what is known here.
        let (pre, pre_len) = fpdu_prefix(UNTAGGED_HEADER_LEN + total, &h);
        push_small_prefixed(&mut self.tx, self.crc, &pre[..pre_len], pieces);
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

    /// Completes the send-queue entries at the front that have a result,
    /// in order (a look at the front when none has).
    #[inline]
    pub(super) fn drain_sq(&mut self) {
        if self.sq.front().is_some_and(|e| e.result.is_some()) {
            self.drain_sq_front();
        }
    }

    fn drain_sq_front(&mut self) {
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
                let total: usize = sges.iter().map(Sge::len).sum();
                if self.fits_one_small_fpdu(total) {
                    // Small Send: one contiguous FPDU, no payload references.
                    self.push_small_send(&sges, total, solicited, invalidate, mrs)?;
                } else {
                    let opcode = send_opcode(solicited, invalidate.is_some());
                    let inv = invalidate.unwrap_or(0);
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
                // Encoded: the list goes back for the thread's next one.
                rpcrdma_verbs::recycle_gather_list(sges);
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
                rpcrdma_verbs::recycle_gather_list(sges);
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

/// The Send opcode for the request's flags.
fn send_opcode(solicited: bool, invalidate: bool) -> Opcode {
    match (solicited, invalidate) {
        (false, false) => Opcode::SEND,
        (false, true) => Opcode::SEND_INVALIDATE,
        (true, false) => Opcode::SEND_SE,
        (true, true) => Opcode::SEND_SE_INVALIDATE,
    }
}

/// The octets of a gather element, borrowed.
fn sge_slice<'a>(s: &'a Sge, mrs: &'a MrTable) -> Result<&'a [u8], crate::mr::AccessError> {
    match s {
        Sge::Bytes(b) => Ok(&b[..]),
        Sge::Region(r) => mrs.source_slice(r.lkey, r.addr, r.len as usize, Access::LOCAL_READ),
    }
}

const _: () = assert!(UNTAGGED_HEADER_LEN + READ_REQUEST_LEN <= crate::fpdu::MIN_MAX_ULPDU);

/// Synchronous checks of a work request's local keys.
pub(super) fn check_wr(wr: &SendWr, mrs: &MrTable) -> Result<(), PostError> {
    let prot = |key: u32, e: crate::mr::AccessError| PostError::LocalProtection {
        key,
        reason: e.into(),
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
