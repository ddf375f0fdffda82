//! Intake: a call received from the peer, checked against our grant, its
//! RPC header and its Read list, then handed up at once (nothing to pull,
//! an inline reply), queued for admission, or refused (RFC 8166 §4.3.1,
//! §5.5.2; spec notes E7, E13, E21, E26).

use std::time::Instant;

use bytes::Bytes;
use rpcrdma_verbs::ProtectionDomain;
use rpcrdma_wire::{ChunkLists, ErrorBody};
use rpcrdma_xdr::round_up;

use super::pulls::deliver_inline;
use super::rpc::{rpc_call_head, RpcHead, GARBAGE_ARGS, SYSTEM_ERR};
use crate::conn::{Engine, InCall, InCallMore, MsgHead, VersionState};
use crate::event::MessageForm;

impl<P: ProtectionDomain> Engine<P> {
    /// A call from the peer.
    pub(crate) fn on_call(
        &mut self,
        now: Instant,
        head: MsgHead,
        chunks: ChunkLists,
        payload: Bytes,
    ) {
        let (xid, version) = (head.xid, head.vers);
        if !self.resp_enabled || self.grant == 0 {
            // RFC 8167 §6: reverse-direction calls before the Upper Layer
            // enabled them are refused.
            self.stats.bad_messages += 1;
            tracing::debug!(
                xid,
                "reverse-direction call refused: backchannel not enabled"
            );
            self.send_error(version, xid, ErrorBody::BadHeader);
            return;
        }
        if self.version == VersionState::Unknown {
            self.settle(version, None);
            self.pump_calls(now);
        }
        self.stats.calls_received += 1;
        let nomsg = head.nomsg;
        let mut chunks = chunks;
        //= rfc5666bis-04#section-4.5.3
        //# Though the purpose of a Long Message is to handle large RPC
        //# messages, requesters MAY use a Long Message at any time to convey
        //# an RPC Call.
        let has_pz = chunks.has_position_zero();
        // The reply data its Write chunks and Reply chunk may make us
        // hold, reserved at admission (spec note E21).
        let room = reply_room(&chunks, self.cfg.max_message);
        let more = (!chunks.is_empty()).then(|| {
            Box::new(InCallMore {
                rkeys: chunks
                    .writes
                    .iter()
                    .chain(chunks.reply.as_ref())
                    .flat_map(|c| c.segments.iter().map(|s| s.handle))
                    .chain(chunks.reads.iter().map(|r| r.target.handle))
                    .collect(),
                writes: std::mem::take(&mut chunks.writes),
                reply: chunks.reply.take(),
                ..InCallMore::default()
            })
        });
        let call = InCall {
            xid,
            version,
            form: if has_pz {
                MessageForm::Long
            } else if chunks.reads.is_empty() {
                MessageForm::Short
            } else {
                MessageForm::Chunked
            },
            delivered: false,
            inline: payload,
            more,
        };

        //= rfc5666bis-04#section-4.3.1
        //# If an RDMA layer error does not occur, the responder MAY handle
        //# excess requests or return an RPC layer error to the requester.
        //= rfc5666bis-04#section-5.2.1
        //# The receiver MAY perform its processing based solely on the XID in
        //# the RPC-over-RDMA header, and thereby ignore the XID in the RPC
        //# message, if it so chooses.
        if self.incoming.len() as u32 >= self.grant {
            // The requester exceeded our grant (RFC 8166 §4.3.1): answer
            // with an RPC-level error rather than spend memory on it, an
            // RDMA_NOMSG call too: the reply needs only the XID, which the
            // transport header carries (spec note E26).
            self.stats.credit_overruns += 1;
            tracing::debug!(xid, grant = self.grant, "credit overrun");
            if self.overloaded() {
                // Our sends are backed up: the overrun goes unanswered
                // rather than growing the backlog (E3, E14; the answer is
                // one §4.3.1 allows, not one it requires, E27).
                self.stats.answers_dropped += 1;
            } else {
                self.reply_rpc_error(call, SYSTEM_ERR);
            }
            return;
        }
        if has_pz && !nomsg {
            self.stats.bad_messages += 1;
            self.send_error(version, xid, ErrorBody::BadHeader);
            return;
        }
        if !nomsg {
            // The RPC call header is inline, before the first Read chunk:
            // an upper layer could not use a truncated one, so it is
            // answered here and never holds a credit (spec note E13).
            let first = chunks.reads.iter().map(|r| r.position as usize).min();
            let end = first.unwrap_or(usize::MAX).min(call.inline.len());
            let head = rpc_call_head(&call.inline[..end], xid);
            if head != RpcHead::Usable {
                self.refuse_unusable(call, head);
                return;
            }
        }

        // Group the Read list into chunks (by Position, sorted: a list in
        // any order is accepted, as Linux's server does; spec note W9) and
        // check them before pulling.
        let groups: Vec<(u32, Vec<rpcrdma_wire::Segment>)> = if chunks.reads.is_empty() {
            Vec::new()
        } else {
            chunks
                .read_chunks_by_position()
                .into_iter()
                .map(|c| (c.position, c.segments))
                .collect()
        };
        let mut total: u64 = 0;
        let mut stream_end: u64 = if has_pz { 0 } else { call.inline.len() as u64 };
        let mut last_pos: Option<u32> = None;
        for (position, segs) in &groups {
            let len: u64 = segs.iter().map(|s| u64::from(s.length)).sum();
            total += len;
            if *position == 0 {
                stream_end += len;
            } else {
                //= rfc5666bis-04#section-5.5.2
                //# When a responder receives a valid RPC-over-RDMA header but
                //# the responder's Upper Layer Protocol implementation cannot
                //# parse the RPC arguments in the RPC Call message, the
                //# responder SHOULD return a RPC_GARBAGEARGS reply, using an
                //# RDMA_MSG procedure.
                let misplaced = u64::from(*position) > stream_end
                    || last_pos.is_some_and(|p| p != 0 && *position <= p);
                if misplaced {
                    // A chunk position outside the Payload stream: the
                    // arguments cannot be parsed (RFC 8166 §5.5.2: "SHOULD
                    // return a RPC_GARBAGEARGS reply"), an RDMA_NOMSG call
                    // too: the reply needs only the XID (spec note E7).
                    self.stats.bad_messages += 1;
                    self.reply_rpc_error(call, GARBAGE_ARGS);
                    return;
                }
                stream_end += round_up(len as usize) as u64;
            }
            last_pos = Some(*position);
        }
        if total > u64::from(self.cfg.max_message) {
            // More than the largest message we accept: a resource refusal,
            // answered at the RPC level as every call that can never fit
            // (spec note E26).
            self.stats.calls_refused_too_large += 1;
            tracing::debug!(
                xid,
                total,
                "call's Read chunks exceed max_message; answering SYSTEM_ERR"
            );
            self.reply_rpc_error(call, SYSTEM_ERR);
            return;
        }
        let need = total + room;
        if need > self.cfg.max_memory || need > self.budget.limit() {
            // Its sinks and its largest reply could never fit the memory
            // budget: an RPC-level error (spec note E21). It needs only
            // the XID, which is the transport header's (RFC 8166 §4.2.1),
            // so an RDMA_NOMSG call, whose RPC header sits in the unread
            // chunk, gets one too.
            self.stats.calls_refused_for_memory += 1;
            tracing::debug!(
                xid,
                read_chunks = total,
                reply_room = room,
                limit = self.cfg.max_memory.min(self.budget.limit()),
                "call's Read chunks and largest reply can never fit the memory budget"
            );
            self.reply_rpc_error(call, SYSTEM_ERR);
            return;
        }

        let token = self.next_token;
        self.next_token += 1;
        let mut call = call;
        if groups.is_empty() && room == 0 && self.waiting.is_empty() && self.admission_open() {
            // Nothing to pull, a reply bounded by the inline threshold
            // (the connection's fixed cost: no shared budget's lock) and
            // nothing waiting before it: admitted and handed up at once,
            // as `pump_admission` and `start_call` would (one table
            // operation instead of four).
            self.mem_blocked = None;
            self.events.push_back(deliver_inline(token, &mut call));
            self.incoming.insert(token, call);
            return;
        }
        let more = call.more();
        more.groups = groups;
        more.need = total;
        more.room = room;
        self.incoming.insert(token, call);
        // The call holds its credit from now on; it is processed (its
        // Read sinks allocated and Reads posted, or it is handed up) once
        // admitted, in arrival order (spec notes E14, E21).
        self.waiting.push_back(token);
        self.pump_admission();
    }
}

/// The most reply data a call's Write chunks and Reply chunk can make us
/// hold (what RDMA Writes carry), at most `max_message`: what admission
/// reserves for its reply (spec note E21). Zero for a call without them,
/// whose reply can only go inline.
fn reply_room(chunks: &ChunkLists, max_message: u32) -> u64 {
    if chunks.writes.is_empty() && chunks.reply.is_none() {
        return 0;
    }
    chunks
        .writes
        .iter()
        .chain(chunks.reply.as_ref())
        .flat_map(|c| c.segments.iter())
        .map(|s| u64::from(s.length))
        .sum::<u64>()
        .min(u64::from(max_message))
}
