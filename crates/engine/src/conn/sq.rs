//! The send queue: work request ids, posting within the queue depth with
//! unsignaled Sends, Sends of headers and gather lists, and the memory a
//! reply holds until its Send completes.

use rpcrdma_verbs::{ProtectionDomain, SendOp, SendWr, Sge};
use rpcrdma_wire::{ErrorBody, ErrorReply, Header};
use rpcrdma_xdr::Encode;

use super::{Engine, Held, Wr};
use crate::error::EngineError;

/// Capacity of each block of the header arena.
const HDR_ARENA_BLOCK: usize = 4096;

impl<P: ProtectionDomain> Engine<P> {
    /// What the completed work request `wr_id` was for, if it is ours and
    /// outstanding (then no longer).
    pub(crate) fn take_wr(&mut self, wr_id: u64) -> Option<Wr> {
        if self.recv_ids.front() == Some(&wr_id) {
            self.recv_ids.pop_front();
            return Some(Wr::Recv);
        }
        if let Some(kind) = self.wrs.remove(&wr_id) {
            return Some(kind);
        }
        // A receive completing out of order (no provider does; kept
        // correct anyway).
        let i = self.recv_ids.iter().position(|&id| id == wr_id)?;
        self.recv_ids.remove(i);
        Some(Wr::Recv)
    }

    pub(crate) fn wr_id(&mut self, kind: Wr) -> u64 {
        let id = self.next_wr;
        self.next_wr += 1;
        self.wrs.insert(id, kind);
        id
    }

    /// Queues a send-queue work request, keeping within the queue depth.
    /// A work request that is not signaled (a Send whose completion
    /// nobody waits for; see [`Self::push_send`]) has no entry in `wrs`.
    #[inline]
    pub(crate) fn push_sq(&mut self, wr: SendWr) {
        match &wr.op {
            SendOp::Write { sges, .. } => {
                self.stats.rdma_writes += 1;
                self.stats.rdma_write_bytes += sges.iter().map(|s| s.len() as u64).sum::<u64>();
            }
            SendOp::Read { sink, .. } => {
                self.stats.rdma_reads += 1;
                self.stats.rdma_read_bytes += u64::from(sink.len);
            }
            SendOp::Send { sges, .. } => {
                self.stats.inline_sent_bytes += sges.iter().map(|s| s.len() as u64).sum::<u64>();
            }
            _ => {}
        }
        if self.sq_backlog.is_empty() && self.sq_busy < self.sq_limit {
            // Room on the send queue and nothing before it: posted at
            // once, not through the backlog.
            self.post_sq(wr);
        } else {
            self.sq_backlog.push_back(wr);
            self.pump_sq();
        }
    }

    /// Posts backlogged work requests while the send queue has room.
    ///
    /// Sends nobody waits for go unsignaled (verbs: no completion unless
    /// they fail), except one in every `sq_limit / 2`, whose completion
    /// tells that every work request before it completed too (a send queue
    /// completes in order), so a full queue always holds a signaled one.
    pub(crate) fn pump_sq(&mut self) {
        while self.sq_busy < self.sq_limit {
            let Some(wr) = self.sq_backlog.pop_front() else {
                break;
            };
            self.post_sq(wr);
        }
    }

    /// Hands one work request to the driver (the send queue has room).
    #[inline]
    pub(crate) fn post_sq(&mut self, mut wr: SendWr) {
        let signal_every = (self.sq_limit / 2).max(1);
        if !wr.signaled && self.unsignaled_run + 1 >= signal_every {
            wr.signaled = true;
            self.wrs.insert(wr.wr_id, Wr::Send);
        }
        self.sq_busy += 1;
        self.sq_posted += 1;
        if wr.signaled {
            self.unsignaled_run = 0;
            self.sq_signaled.push_back((wr.wr_id, self.sq_posted));
        } else {
            self.unsignaled_run += 1;
            self.stats.sends_unsignaled += 1;
        }
        self.out_send.push_back(wr);
    }

    /// A signaled send-queue work request completed: so did every one
    /// posted before it.
    pub(crate) fn sq_completed(&mut self, wr_id: u64) {
        while let Some(&(id, count)) = self.sq_signaled.front() {
            self.sq_signaled.pop_front();
            if count > self.sq_done {
                self.sq_busy = self
                    .sq_busy
                    .saturating_sub(u32::try_from(count - self.sq_done).unwrap_or(u32::MAX));
                self.sq_done = count;
            }
            if id == wr_id {
                break;
            }
        }
    }

    /// Queues a Send of `header` followed by `sges[1..]`: the gather list
    /// comes with index 0 left for the header (or empty, for a header
    /// alone). Nobody waits for its completion, so it may go unsignaled
    /// ([`Self::pump_sq`]).
    #[inline]
    pub(crate) fn push_send<H: Encode + ?Sized>(
        &mut self,
        header: &H,
        sges: Vec<Sge>,
        invalidate: Option<u32>,
    ) {
        let wr_id = self.next_wr;
        self.next_wr += 1;
        self.push_send_as(header, sges, invalidate, wr_id, false);
    }

    pub(crate) fn push_send_as<H: Encode + ?Sized>(
        &mut self,
        header: &H,
        mut sges: Vec<Sge>,
        invalidate: Option<u32>,
        wr_id: u64,
        signaled: bool,
    ) {
        // Headers are encoded into an arena: each is a view of it, and
        // its memory is reused once the provider dropped the views.
        let len = header.encoded_len();
        if self.hdr_arena.capacity() < len {
            self.hdr_arena.reserve(len.max(HDR_ARENA_BLOCK));
        }
        header.encode_into(&mut self.hdr_arena);
        let hb = Sge::Bytes(self.hdr_arena.split().freeze());
        match sges.first_mut() {
            Some(slot) => *slot = hb,
            None => sges.push(hb),
        }
        self.push_sq(SendWr {
            wr_id,
            op: SendOp::Send {
                sges,
                solicited: false,
                invalidate,
            },
            signaled,
        });
    }

    /// Like [`Self::push_send`], for a reply whose call still holds memory
    /// (`held`) until this Send completes (signaled then).
    pub(crate) fn push_send_holding(
        &mut self,
        header: &Header,
        sges: Vec<Sge>,
        invalidate: Option<u32>,
        held: Held,
    ) {
        if held.charge > 0 || !held.sinks.is_empty() {
            let id = self.wr_id(Wr::Send);
            self.replying.insert(id, held);
            self.push_send_as(header, sges, invalidate, id, true);
        } else {
            self.push_send(header, sges, invalidate);
        }
    }

    /// Gives `n` charged octets back to this connection's count and the
    /// budget (a reply's reservation beyond its real data).
    pub(crate) fn release_charge(&mut self, n: u64) {
        if n == 0 {
            // (Every reply whose reservation it fills, and every call
            // without one: no lock of a shared budget.)
            return;
        }
        self.mem_used = self.mem_used.saturating_sub(n);
        self.budget.release(n);
    }

    /// Gives a call's memory back: its charge to the budget, its sink
    /// buffers to the pool (kept if there is room).
    pub(crate) fn release_held(&mut self, held: Held) {
        self.mem_used = self.mem_used.saturating_sub(held.charge);
        self.budget.release(held.charge);
        for b in held.sinks {
            self.budget.keep(b);
        }
    }

    /// Sends an `RDMA_ERROR` / `RDMA2_ERROR` with our grant as its credit
    /// value (spec note W2), in `version`: the version of the message it
    /// answers, whatever that is (RFC 8166 §5.5).
    pub(crate) fn send_error(&mut self, version: u32, xid: u32, body: ErrorBody) {
        self.send_error_reply(&ErrorReply {
            xid,
            vers: version,
            //= rfc5666bis-04#section-4.3.1
            //# The granted value MUST NOT be zero, since such a value would
            //# result in deadlock.
            credits: self.grant.max(1),
            body,
        });
    }

    /// Sends an error reply exactly as given: its `rdma_xid` and
    /// `rdma_vers` are the failing message's own (RFC 8166 §5.5; an
    /// `ERR_VERS` answering version 3 says version 3, spec note E23).
    ///
    /// Error answers are owed (RFC 8166 §5.5.1, §5.5.2; draft-cel-01
    /// §3.1): they are sent whatever the send backlog. What bounds them is
    /// the connection: a peer that keeps sending messages to be answered
    /// while it drains none of our Sends is cut off once the backlog
    /// passes [`Self::answer_backlog_limit`] (spec note E27).
    pub(crate) fn send_error_reply(&mut self, reply: &ErrorReply) {
        self.stats.rdma_errors_sent += 1;
        self.push_send(reply, Vec::new(), None);
        let limit = self.answer_backlog_limit();
        if self.sq_backlog.len() > limit {
            tracing::warn!(
                backlog = self.sq_backlog.len(),
                limit,
                "the peer keeps sending messages that must be answered while our sends back up; closing the connection"
            );
            self.fail(EngineError::AnswerBacklog { limit });
        }
    }

    /// Too much is waiting for the send queue: received calls wait before
    /// they are processed, and answers nobody is owed (`SYSTEM_ERR` for
    /// calls beyond the grant, which RFC 8166 §4.3.1 only allows) are not
    /// sent. Receives stay posted for every credit granted whatever the
    /// backlog (RFC 8166 §3.3.1, RFC 8167 §4.3.2; spec note E14): a
    /// conforming requester never finds none.
    pub(crate) fn overloaded(&self) -> bool {
        self.sq_backlog.len() > self.overload_mark()
    }

    /// The send backlog beyond which the connection is [overloaded](Self::overloaded).
    fn overload_mark(&self) -> usize {
        4 * self.sq_limit as usize + self.recv_target as usize
    }

    /// The send backlog beyond which an owed error answer closes the
    /// connection instead (spec note E27): the overload mark plus one
    /// answer for every receive we post. Past the mark no new call is
    /// processed, so what still grows the backlog is the peer's stream of
    /// messages that must be answered; a peer within its credits cannot
    /// have that many unanswered.
    pub(crate) fn answer_backlog_limit(&self) -> usize {
        self.overload_mark() + self.recv_target as usize
    }
}
