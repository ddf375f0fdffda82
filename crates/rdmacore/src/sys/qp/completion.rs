//! Completions of a queue pair: device work completions translated into
//! the verbs' (receives matched to the caller's buffers, send-queue
//! entries retired in order, their bounce buffers returned to the pool),
//! and the receive slots posted and reposted.

use std::collections::VecDeque;

use rpcrdma_verbs::{
    Access, DisconnectReason, TransportFailure, TransportFault, WcOpcode, WcStatus, WorkCompletion,
};

use super::gather::{class_of, POOL_KEEP};
use super::{Hold, QpShared, QpState, Slot};
use crate::recv::{Arrived, Matched};
use crate::status::{wc_status, wc_status_name};
use crate::sys::device::OwnBuf;
use crate::sys::ffi;

/// Receive work request ids carry this bit (flushed completions have no
/// reliable opcode).
const RECV_TAG: u64 = 1 << 63;

pub(super) fn post_slot(qp: *mut ffi::ibv_qp, idx: usize, slot: &mut Slot) -> Result<(), i32> {
    let sge = ffi::rs_sge {
        addr: slot.buf.addr(),
        length: slot.buf.buf.len() as u32,
        lkey: slot.buf.lkey,
    };
    // SAFETY: the queue pair is live; the slot is registered and owned by
    // the queue pair's state until the queue pair is destroyed.
    let rc = unsafe { ffi::rs_post_recv(qp, RECV_TAG | idx as u64, &sge) };
    if rc != 0 {
        return Err(rc);
    }
    Ok(())
}

impl QpShared {
    /// Translates one device completion of this queue pair.
    pub(crate) fn on_completion(&self, wc: &ffi::rs_wc, ready: &mut VecDeque<WorkCompletion>) {
        let status = wc_status(wc.status);
        let mut fatal = None;
        if status != WcStatus::Success && status != WcStatus::WrFlush {
            fatal = Some(TransportFailure::new(
                TransportFault::Completion {
                    status: wc.status,
                    vendor_err: wc.vendor_err,
                },
                format!(
                    "{} (vendor error {:#x})",
                    wc_status_name(wc.status),
                    wc.vendor_err
                ),
            ));
        }
        if wc.wr_id & RECV_TAG != 0 {
            let slot = (wc.wr_id & !RECV_TAG) as usize;
            let mut st = self.lock();
            let st = &mut *st;
            let arrived = Arrived {
                slot,
                status,
                byte_len: wc.byte_len,
                invalidated: (wc.with_inv != 0).then_some(wc.invalidated_rkey),
            };
            let slots = &st.slots;
            let out = st.recv.arrived(arrived, |i| {
                slots.get(i).map_or(&[][..], |s| &s.buf.buf[..])
            });
            let overflow = self.finish_receives(st, out, ready);
            if overflow {
                fatal = Some(TransportFailure::new(
                    TransportFault::ReceiveOverflow,
                    "a message was longer than the posted receive buffer",
                ));
            }
        } else {
            let mut st = self.lock();
            let Some(front) = st.sq.pop_front() else {
                tracing::warn!(wr_id = wc.wr_id, "send completion with nothing outstanding");
                return;
            };
            if front.seq != wc.wr_id {
                tracing::error!(
                    expected = front.seq,
                    got = wc.wr_id,
                    "send completions out of order"
                );
            }
            for h in front.holds {
                if let Hold::Bounce(b) = h {
                    let c = class_of(b.buf.len());
                    if (512usize << c) == b.buf.len() && st.pool[c].len() < POOL_KEEP {
                        st.pool[c].push(b);
                    }
                }
            }
            drop(st);
            if front.signaled || status != WcStatus::Success {
                ready.push_back(WorkCompletion {
                    wr_id: front.wr_id,
                    opcode: front.opcode,
                    status,
                    byte_len: if front.opcode == WcOpcode::RdmaRead && status.is_ok() {
                        front.len
                    } else {
                        0
                    },
                    invalidated_rkey: None,
                    solicited: false,
                    buf: None,
                });
            }
            if let Some(why) = &fatal {
                tracing::debug!(qp_num = self.qp_num, ?front.opcode, %why, "send work request failed");
            }
        }
        if let Some(reason) = fatal {
            self.set_reason(DisconnectReason::Transport { reason });
            self.send_disconnect();
        } else if status == WcStatus::WrFlush {
            // The reason comes from the connection manager (peer) or from
            // our own disconnect; nothing more may be posted meanwhile.
            self.lock().closed = true;
        }
    }

    /// Reports matched receives and reposts their slots; true if one did
    /// not fit its buffer.
    pub(super) fn finish_receives(
        &self,
        st: &mut QpState,
        out: Vec<Matched>,
        ready: &mut VecDeque<WorkCompletion>,
    ) -> bool {
        let mut overflow = false;
        for m in out {
            overflow |= m.fatal;
            ready.push_back(m.wc);
            if let Some(i) = m.repost {
                if st.closed {
                    continue;
                }
                // Grow the slot if the caller posts larger buffers.
                let want = st.slot_size;
                if st.slots[i].buf.buf.len() < want {
                    match OwnBuf::new(&self.pd, want, Access::LOCAL_WRITE) {
                        Ok(b) => st.slots[i].buf = b,
                        Err(e) => tracing::warn!(error = %e, "cannot grow a receive buffer"),
                    }
                }
                if let Err(rc) = post_slot(self.qp, i, &mut st.slots[i]) {
                    tracing::warn!(rc, "cannot repost a receive buffer");
                }
            }
        }
        overflow
    }
}
