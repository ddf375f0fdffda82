//! Receive buffers (posted for every credit, reused once nobody refers
//! to them) and the receive dispatch: each received message decoded and
//! handed to the requester or responder side by its direction.

use std::time::Instant;

use bytes::{Bytes, BytesMut};
use rpcrdma_verbs::{ProtectionDomain, RecvWr};
use rpcrdma_wire::v2::Direction;
use rpcrdma_wire::{decode_owned, decode_plain, ChunkLists, ErrorBody, Header, Message, Proc};

use super::{Engine, MsgHead};

impl<P: ProtectionDomain> Engine<P> {
    pub(crate) fn top_up_receives(&mut self) {
        if self.failed.is_some() {
            return;
        }
        while self.recvs_posted < self.recv_target {
            let wr_id = self.next_wr;
            self.next_wr += 1;
            self.recv_ids.push_back(wr_id);
            self.recvs_posted += 1;
            let buf = self.reusable_buffer().unwrap_or_else(|| {
                self.stats.recv_buffers_allocated += 1;
                // Made shared now (once per buffer): the message views
                // handed up and the buffer's reuse then cost a reference
                // count each, not an allocation.
                crate::pool::shared_zeroed(self.recv_size)
            });
            self.out_recv.push_back(RecvWr { wr_id, buf });
        }
    }

    /// A received buffer nobody refers to any more, for reuse. It is not
    /// cleared: a completion reports only the octets its message filled.
    pub(crate) fn reusable_buffer(&mut self) -> Option<BytesMut> {
        for _ in 0..self.spare.len() {
            let b = self.spare.pop_front()?;
            match b.try_into_mut() {
                Ok(mut m) if m.capacity() >= self.recv_size => {
                    // Normally already recv_size long; resizing zeroes only
                    // what it adds.
                    m.resize(self.recv_size, 0);
                    self.stats.recv_buffers_reused += 1;
                    return Some(m);
                }
                Ok(_) => {}
                Err(still_used) => self.spare.push_back(still_used),
            }
        }
        None
    }

    pub(crate) fn on_receive(&mut self, now: Instant, mut buf: Bytes, invalidated: Option<u32>) {
        if let Some(p) = decode_plain(&buf, &self.decode_cfg) {
            // The common message (an RDMA_MSG without chunks), read
            // without building its header: the checks are the decoder's.
            self.note_invalidation(invalidated);
            bytes::Buf::advance(&mut buf, p.header_len);
            let direction = p.direction.or_else(|| v1_msg_direction(&buf));
            let head = MsgHead {
                xid: p.xid,
                vers: p.vers,
                credits: p.credits,
                nomsg: false,
            };
            self.dispatch_msg(
                now,
                direction,
                head,
                ChunkLists::default(),
                buf,
                invalidated,
            );
            return;
        }
        // rdma_xid, rdma_vers and rdma_proc, for a rejected reply (the
        // decoder takes the buffer).
        let (xid, vers, proc_) = (word(&buf, 0), word(&buf, 1), word(&buf, 3));
        let msg = match decode_owned(buf, &self.decode_cfg) {
            Ok(m) => m,
            Err(rej) => {
                self.stats.bad_messages += 1;
                tracing::debug!(error = %rej.error, direction = ?rej.direction, "rejected a received message");
                if rej.direction == Some(Direction::Reply) {
                    // Never answered (W14); it still ends its call (E24).
                    if let (Some(xid), Some(vers)) = (xid, vers) {
                        let optional = proc_ == Some(Proc::OPTIONAL.0);
                        self.on_rejected_reply(now, xid, vers, optional);
                    }
                    return;
                }
                // Owed, whatever our send backlog (E27); the error reply
                // is the decoder's, byte for byte: the failing message's
                // XID and version (E23).
                if let Some(reply) = rej.reply() {
                    self.send_error_reply(reply);
                }
                return;
            }
        };
        self.note_invalidation(invalidated);
        match msg.header.proc_() {
            Proc::ERROR => self.on_error_message(&msg),
            Proc::MSG | Proc::NOMSG => {
                let direction = self.direction_of(&msg);
                let head = MsgHead {
                    xid: msg.header.xid(),
                    vers: msg.header.vers(),
                    credits: msg.header.credits(),
                    nomsg: msg.header.proc_() == Proc::NOMSG,
                };
                let chunks = msg.header.into_chunks().unwrap_or_default();
                self.dispatch_msg(now, direction, head, chunks, msg.payload, invalidated);
            }
            // Only types in the registry get here: the decoder answers every
            // other one with RDMA2_ERR_INVAL_OPTION (draft §3.1).
            Proc::OPTIONAL => self.on_optional(now, msg),
            _ => {
                self.stats.bad_messages += 1;
            }
        }
    }

    pub(crate) fn note_invalidation(&mut self, invalidated: Option<u32>) {
        if let Some(key) = invalidated {
            self.stats.remote_invalidations += 1;
            tracing::trace!(key, "peer invalidated a region");
        }
    }

    /// An `RDMA_MSG`/`RDMA_NOMSG` goes to the responder or the requester
    /// side by its direction.
    pub(crate) fn dispatch_msg(
        &mut self,
        now: Instant,
        direction: Option<Direction>,
        head: MsgHead,
        chunks: ChunkLists,
        payload: Bytes,
        invalidated: Option<u32>,
    ) {
        match direction {
            Some(Direction::Call) => self.on_call(now, head, chunks, payload),
            Some(Direction::Reply) => self.on_reply(now, head, chunks, payload, invalidated),
            None => {
                self.stats.bad_messages += 1;
                self.send_error(head.vers, head.xid, ErrorBody::BadHeader);
            }
        }
    }

    /// The direction of an `RDMA_MSG`/`RDMA_NOMSG` (RFC 8167 §4.1): Version
    /// Two says it; in Version One the RPC `msg_type` says it, and an
    /// `RDMA_NOMSG` is a call if it carries a Position-Zero Read chunk.
    pub(crate) fn direction_of(&self, msg: &Message) -> Option<Direction> {
        match &msg.header {
            Header::V2(h) => Some(h.direction()),
            Header::V1(h) => match h.proc_() {
                Proc::MSG => v1_msg_direction(&msg.payload),
                _ => {
                    let c = h.chunks()?;
                    if c.has_position_zero() {
                        Some(Direction::Call)
                    } else if c.reads.is_empty() {
                        Some(Direction::Reply)
                    } else {
                        None
                    }
                }
            },
        }
    }

    /// Handles a received version-independent error of a Version Two probe
    /// or any other `RDMA_ERROR`.
    pub(crate) fn on_error_message(&mut self, msg: &Message) {
        self.stats.rdma_errors_received += 1;
        let Some(body) = msg.header.error().copied() else {
            return;
        };
        self.on_rdma_error(msg.header.xid(), body);
    }
}

/// The direction of a Version One `RDMA_MSG`: its RPC `msg_type`.
fn v1_msg_direction(payload: &[u8]) -> Option<Direction> {
    match payload.get(4..8) {
        Some([0, 0, 0, 0]) => Some(Direction::Call),
        Some([0, 0, 0, 1]) => Some(Direction::Reply),
        _ => None,
    }
}

/// The big-endian word at index `i` of `buf`, if there is one.
fn word(buf: &[u8], i: usize) -> Option<u32> {
    let b = buf.get(i * 4..i * 4 + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}
