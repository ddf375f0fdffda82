//! Responder side of the engine: taking the peer's calls (admitting them
//! within the memory budget, pulling their Read chunks) and sending replies
//! (RFC 8166 §4.4.5, §4.5.3, §5.5; RFC 8797 §4.1).

use std::collections::hash_map::Entry;
use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use rpcrdma_verbs::{Access, MemoryRegion, ProtectionDomain, RemoteAddr, SendWr};
use rpcrdma_wire::{ChunkLists, ErrorBody};
use rpcrdma_xdr::{round_up, Payload};

use crate::config::Role;
use crate::conn::{Engine, Held, InCall, InCallMore, MsgHead, Pull, VersionState, Wr};
use crate::error::ApiError;
use crate::event::{CallToken, Event, MessageForm};
use crate::reply::{plan_reply, ReplyParams};

/// RPC `accept_stat` values the engine itself answers with.
const GARBAGE_ARGS: u32 = 4;
const SYSTEM_ERR: u32 = 5;

/// An accepted RPC reply with `AUTH_NONE` verifier and `stat` (RFC 5531 §9).
fn rpc_error_reply(xid: u32, stat: u32) -> Bytes {
    let mut b = BytesMut::with_capacity(24);
    for w in [xid, 1, 0, 0, 0, stat] {
        b.put_u32(w);
    }
    b.freeze()
}

impl<P: ProtectionDomain> Engine<P> {
    /// Client: accept reverse-direction calls from now on (RFC 8167 §6).
    /// Call this before telling the server (through the Upper Layer) that
    /// the reverse direction is ready. Fails if the configuration grants
    /// no reverse-direction credits.
    pub fn enable_backchannel(&mut self) -> Result<(), ApiError> {
        self.check_alive()?;
        if self.cfg.role == Role::Client && self.grant > 0 {
            self.resp_enabled = true;
            Ok(())
        } else {
            Err(ApiError::BackchannelNotReady)
        }
    }

    /// Server: the client has said (through the Upper Layer) that it takes
    /// reverse-direction calls; [`Engine::send_call`] works from now on.
    pub fn peer_backchannel_ready(&mut self, now: Instant) -> Result<(), ApiError> {
        self.check_alive()?;
        if self.cfg.role == Role::Server && self.cfg.backchannel_credits > 0 {
            self.req_enabled = true;
            self.pump_calls(now);
            Ok(())
        } else {
            Err(ApiError::BackchannelNotReady)
        }
    }

    /// Sends the reply to the call named by `token`.
    ///
    /// DDP-eligible results in `payload` are reduced into the call's Write
    /// chunks in order; the reply goes inline if it fits the requester's
    /// threshold, otherwise through its Reply chunk. If the requester
    /// provided no way to return it, an `RDMA_ERROR` `ERR_BADHEADER` is sent
    /// instead (RFC 8166 §5.5.3).
    ///
    /// The call's memory (its Read chunk sinks) and the reply's data stay
    /// counted against the memory budget until the reply's Send completes;
    /// the room reserved for the reply at admission becomes the data its
    /// RDMA Writes carry (the rest goes back at once). A reply whose
    /// RDMA-written data exceeds that room (only one larger than
    /// `max_message` can) is answered `SYSTEM_ERR` instead.
    pub fn send_reply(&mut self, token: CallToken, payload: Payload) -> Result<(), ApiError> {
        self.check_alive()?;
        let call = match self.incoming.entry(token.0) {
            Entry::Occupied(e) if e.get().delivered => e.remove(),
            _ => return Err(ApiError::UnknownCall),
        };
        self.answer(call, payload);
        if !self.waiting.is_empty() {
            // What its reservation held beyond the reply's data is free
            // again: waiting calls may fit now.
            self.pump_admission();
        }
        Ok(())
    }

    /// The upper layer will not answer the call named by `token`: its RPC
    /// header is unusable to it (RFC 5531 has no reply for a call it cannot
    /// decode). The call is forgotten, its credit of our grant is free
    /// again at once and its memory goes back to the budget; nothing is
    /// sent (an upper layer that can answer, with `GARBAGE_ARGS` say, uses
    /// [`Engine::send_reply`] instead). The requester's own credit stays
    /// taken until its call times out there.
    ///
    /// Calls whose RPC header is truncated or absent never get this far:
    /// the engine answers them itself (spec note E13).
    pub fn retire_call(&mut self, token: CallToken) -> Result<(), ApiError> {
        self.check_alive()?;
        match self.incoming.get(&token.0) {
            Some(c) if c.delivered => {
                if let Some(call) = self.incoming.remove(&token.0) {
                    tracing::debug!(xid = call.xid, "call retired by the upper layer");
                    self.stats.calls_retired += 1;
                    self.finish_call(call);
                }
                self.pump_admission();
                Ok(())
            }
            _ => Err(ApiError::UnknownCall),
        }
    }

    /// Calls received and not yet admitted (waiting for the send backlog
    /// to drain or for memory).
    pub fn calls_waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Admits waiting calls again: the driver calls this when memory was
    /// released elsewhere in a shared budget (see [`Engine::memory_wait`]).
    /// Extra calls are harmless.
    pub fn retry_admission(&mut self) {
        if self.failed.is_none() {
            self.pump_admission();
        }
    }

    /// A call that ends without a reply Send to hold its memory: its charge
    /// goes back to the budget, its sink buffers to the pool.
    fn finish_call(&mut self, call: InCall<P::Mr>) {
        let Some(more) = call.more else {
            return;
        };
        let InCallMore {
            charge,
            sinks,
            pulls,
            bufs,
            ..
        } = *more;
        for p in pulls {
            if let Some(mr) = p.mr {
                self.drop_mr(mr);
            }
        }
        drop(bufs);
        self.release_held(Held { charge, sinks });
    }

    /// Sends `payload` as the reply to `call` (or `ERR_BADHEADER` if it
    /// cannot be returned). The call's memory and the reply's data are
    /// held until the reply's Send completes.
    fn answer(&mut self, call: InCall<P::Mr>, payload: Payload) {
        let t = self.thresholds();
        let params = ReplyParams {
            //= draft-cel-01#section-5.3
            //# [I-D.ietf-nfsv4-rfc5666bis] REQUIRES that a responder MUST
            //# send Replies with the same RPC-over-RDMA protocol version that
            //# the requester uses to send its Calls.
            //= rfc8167#section-5.2
            //# The rdma_vers field MUST contain the same value in a
            //# reverse-direction Reply message as in the matching Call
            //# message.
            //= rfc5666bis-04#section-7.3.5
            //# The rdma_vers field MUST contain the value one.
            version: call.version,
            xid: call.xid,
            //= rfc5666bis-04#section-4.3.1
            //# The granted value MUST NOT be zero, since such a value would
            //# result in deadlock.
            credits: self.grant.max(1),
            send_threshold: t.send,
        };
        let (writes, reply) = match &call.more {
            Some(m) => (&m.writes[..], m.reply.as_ref()),
            None => (&[][..], None),
        };
        match plan_reply(writes, reply, payload, &params) {
            Ok(plan) => {
                // The reply data its RDMA Writes carry (Write chunks, and
                // the Reply chunk of a Long reply): what the reply's
                // reservation becomes. What goes inline (at most the
                // inline threshold) is the connection's fixed cost.
                let data: u64 = plan.writes.iter().map(|w| w.len() as u64).sum();
                let reserved = call.more.as_ref().map_or(0, |m| m.room_held);
                if data > reserved {
                    // More than its reservation (only a reply larger than
                    // `max_message` can be): never held beyond the budget.
                    // An RPC-level error instead, as for a call that can
                    // never fit (spec note E21).
                    tracing::warn!(
                        xid = call.xid,
                        data,
                        reserved,
                        "reply larger than the memory reserved for it; answering SYSTEM_ERR"
                    );
                    self.stats.replies_refused_for_memory += 1;
                    self.reply_rpc_error(call, SYSTEM_ERR);
                    return;
                }
                self.stats.replies_sent += 1;
                for w in plan.writes {
                    let wr_id = self.wr_id(Wr::Write);
                    self.push_sq(SendWr::write(wr_id, w.pieces, w.remote));
                }
                //= rfc8797#section-4.1
                //# When both connection peers have set this bit flag in their
                //# CM Private Data, the responder MAY use RDMA Send With
                //# Invalidate when transmitting RPC Replies.
                //= rfc8797#section-4.1
                //# Each RDMA Send With Invalidate MUST invalidate an STag
                //# associated only with the XID in the rdma_xid field of the
                //# RPC-over-RDMA Transport Header it carries.
                let invalidate = if self.remote_inv {
                    call.more.as_ref().and_then(|m| m.rkeys.first().copied())
                } else {
                    None
                };
                tracing::trace!(xid = call.xid, form = plan.form.name(), "reply sent");
                // The reservation becomes the reply's real charge: the
                // difference goes back now (spec note E21).
                let held = match call.more {
                    Some(m) => {
                        self.release_charge(reserved - data);
                        Held {
                            charge: m.charge - reserved + data,
                            sinks: m.sinks,
                        }
                    }
                    None => Held::default(),
                };
                self.push_send_holding(&plan.header, plan.pieces, invalidate, held);
            }
            Err(e) => {
                tracing::warn!(xid = call.xid, error = %e, "reply cannot be returned");
                let (version, xid) = (call.version, call.xid);
                self.finish_call(call);
                self.send_error(version, xid, ErrorBody::BadHeader);
            }
        }
    }

    /// Answers a call with an RPC-level error the engine forms itself (it
    /// goes inline: its reservation, if any, goes back).
    fn reply_rpc_error(&mut self, call: InCall<P::Mr>, stat: u32) {
        let payload = Payload::inline_only(rpc_error_reply(call.xid, stat));
        self.answer(call, payload);
    }

    /// Answers a call whose RPC header the upper layer could not use, as
    /// RFC 5531 and RFC 8166 allow (spec note E13): `GARBAGE_ARGS` when the
    /// XID and CALL are there but the header is cut short, `RDMA_ERROR`
    /// `ERR_BADHEADER` when there is no RPC call at all (an empty message,
    /// another XID, not a CALL).
    fn refuse_unusable(&mut self, call: InCall<P::Mr>, head: RpcHead) {
        self.stats.bad_messages += 1;
        if head == RpcHead::Truncated {
            tracing::debug!(xid = call.xid, "truncated RPC call header");
            self.reply_rpc_error(call, GARBAGE_ARGS);
        } else {
            tracing::debug!(xid = call.xid, "the message holds no RPC call");
            let (version, xid) = (call.version, call.xid);
            self.finish_call(call);
            self.send_error(version, xid, ErrorBody::BadHeader);
        }
    }

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

    /// Admits waiting calls, oldest first, while the send queue's backlog
    /// is small, this connection holds no more than its memory limit and
    /// the oldest call's Read sinks and reply room fit the budget: the
    /// responder's
    /// back-pressure (its receives stay posted for every credit it granted,
    /// E14; memory, E21).
    pub(crate) fn pump_admission(&mut self) {
        while let Some(&token) = self.waiting.front() {
            if !self.admission_open() {
                return;
            }
            if !self.incoming.contains_key(&token) {
                self.waiting.pop_front();
                continue;
            }
            if !self.reserve_memory(token) {
                return;
            }
            self.waiting.pop_front();
            self.mem_blocked = None;
            self.start_call(token);
        }
    }

    /// Whether calls may be admitted now (the send backlog is small and
    /// this connection within its memory limit).
    fn admission_open(&self) -> bool {
        self.failed.is_none() && !self.overloaded() && self.mem_used <= self.cfg.max_memory
    }

    /// Finds the memory for a waiting call's Read sinks (idle pooled
    /// buffers where they fit, fresh ones otherwise) and reserves its
    /// reply room, all within the connection's limit and the shared
    /// budget. Returns whether it did; if not, nothing is held and the
    /// call keeps waiting. A call with neither (no Read chunks, a reply
    /// that can only go inline) takes no lock.
    fn reserve_memory(&mut self, token: u64) -> bool {
        let Some(call) = self.incoming.get(&token) else {
            return false;
        };
        let Some(more) = call.more.as_deref().filter(|m| m.need > 0 || m.room > 0) else {
            return true;
        };
        let room = more.room;
        let lens: Vec<usize> = more
            .groups
            .iter()
            .map(|(_, segs)| segs.iter().map(|s| s.length as usize).sum())
            .collect();
        let mut bufs: Vec<Option<BytesMut>> = lens
            .iter()
            .map(|&len| self.budget.take_pooled(len))
            .collect();
        let mut pooled: u64 = bufs.iter().flatten().map(|b| b.len() as u64).sum();
        let mut fresh: u64 = lens
            .iter()
            .zip(&bufs)
            .filter(|(_, b)| b.is_none())
            .map(|(&l, _)| l as u64)
            .sum();
        if pooled > 0 && self.mem_used + pooled + fresh + room > self.cfg.max_memory {
            // Pooled buffers are charged whole and may be larger than
            // their chunks: if that is what does not fit, take fresh
            // ones of the chunks' sizes (else a call that fits the limit
            // could wait for ever on an idle connection).
            for b in bufs.iter_mut().filter_map(Option::take) {
                self.budget.put_back(b);
            }
            pooled = 0;
            fresh = lens.iter().map(|&l| l as u64).sum();
        }
        let need = more.need;
        // The read window: Read data pulled ahead of the calls handed up
        // (a call without Read chunks is never held by it).
        let in_window =
            need == 0 || self.reads_ahead == 0 || self.reads_ahead + need <= self.cfg.read_window;
        let conn_ok = self.mem_used + pooled + fresh + room <= self.cfg.max_memory && in_window;
        // A connection that holds memory already leaves the budget's
        // headroom to those that hold none (spec note E21).
        let leave = if self.mem_used > 0 {
            self.budget.headroom()
        } else {
            0
        };
        let shared_ok =
            conn_ok && (fresh + room == 0 || self.budget.try_reserve(fresh + room, leave));
        if !shared_ok {
            for b in bufs.into_iter().flatten() {
                self.budget.put_back(b);
            }
            // Waiting for another connection to release memory, or for
            // this one's own calls (which wake it themselves).
            self.mem_blocked = conn_ok.then(|| self.budget.epoch());
            if let Some(call) = self.incoming.get_mut(&token) {
                let more = call.more();
                if !more.waited {
                    more.waited = true;
                    if in_window {
                        self.stats.calls_waited_for_memory += 1;
                    } else {
                        self.stats.calls_waited_for_window += 1;
                    }
                }
            }
            return false;
        }
        self.mem_used += pooled + fresh + room;
        self.reads_ahead += need;
        for (b, &len) in bufs.iter_mut().zip(&lens) {
            if b.is_some() {
                self.stats.sink_buffers_reused += 1;
            } else {
                self.stats.sink_buffers_allocated += 1;
                self.stats.sink_bytes_allocated += len as u64;
                *b = Some(crate::pool::shared_zeroed(len));
            }
        }
        if let Some(call) = self.incoming.get_mut(&token) {
            let more = call.more();
            more.charge += pooled + fresh + room;
            more.room_held = room;
            more.bufs = bufs.into_iter().flatten().collect();
        }
        true
    }

    /// Processes an admitted call: hands it up at once, or registers its
    /// Read sinks and queues its RDMA Reads.
    fn start_call(&mut self, token: u64) {
        let Some(call) = self.incoming.get_mut(&token) else {
            return;
        };
        let (groups, bufs) = match call.more.as_deref_mut() {
            Some(m) => (std::mem::take(&mut m.groups), std::mem::take(&mut m.bufs)),
            None => (Vec::new(), Vec::new()),
        };
        let xid = call.xid;
        if groups.is_empty() {
            let event = deliver_inline(token, call);
            self.events.push_back(event);
            return;
        }

        let mut reads = Vec::new();
        let mut pulls: Vec<Pull<P::Mr>> = Vec::with_capacity(groups.len());
        for ((position, segs), buf) in groups.into_iter().zip(bufs) {
            let len: usize = segs.iter().map(|s| s.length as usize).sum();
            // The whole buffer is registered (a pooled one may be longer
            // than the chunk; the Reads fill only its first `len` octets).
            let mr = match self.pd.register_mut(buf, Access::LOCAL_WRITE) {
                Ok(mr) => mr,
                Err(e) => {
                    // A resource of ours failed: an RPC-level SYSTEM_ERR,
                    // as for every call we cannot take (spec note E26).
                    tracing::warn!(xid, error = %e, "cannot register a Read sink; answering SYSTEM_ERR");
                    if let Some(mut call) = self.incoming.remove(&token) {
                        let more = call.more();
                        self.reads_ahead = self.reads_ahead.saturating_sub(more.need);
                        for p in pulls {
                            if let Some(mr) = p.mr {
                                self.drop_mr(mr);
                            }
                        }
                        if self.failed.is_none() {
                            self.reply_rpc_error(call, SYSTEM_ERR);
                        }
                    }
                    return;
                }
            };
            self.stats.registrations += 1;
            let mut off = 0usize;
            for s in segs.iter().filter(|s| s.length > 0) {
                let wr_id = self.wr_id(Wr::Read { token });
                reads.push(SendWr::read(
                    wr_id,
                    mr.sge(off, s.length as usize),
                    RemoteAddr {
                        rkey: s.handle,
                        addr: s.offset,
                    },
                ));
                off += s.length as usize;
            }
            pulls.push(Pull {
                position,
                len,
                mr: Some(mr),
            });
        }
        let Some(call) = self.incoming.get_mut(&token) else {
            return;
        };
        let more = call.more();
        more.pulls = pulls;
        more.reads_pending = reads.len() as u32;
        if reads.is_empty() {
            self.finish_pull(token);
        } else {
            self.reads.extend(reads);
            self.pump_reads();
        }
    }

    /// Posts queued RDMA Reads within the outbound read limit (ORD).
    pub(crate) fn pump_reads(&mut self) {
        let ord = u32::from(self.caps.ord).max(1);
        while self.reads_busy < ord {
            let Some(wr) = self.reads.pop_front() else {
                break;
            };
            self.reads_busy += 1;
            self.push_sq(wr);
        }
    }

    pub(crate) fn on_read_done(&mut self, token: u64) {
        let Some(call) = self.incoming.get_mut(&token) else {
            return;
        };
        let more = call.more();
        more.reads_pending = more.reads_pending.saturating_sub(1);
        if more.reads_pending == 0 {
            self.finish_pull(token);
            if !self.waiting.is_empty() {
                // Its data is in: the read window has room again.
                self.pump_admission();
            }
        }
    }

    /// Every Read of a call completed: rebuild its Payload stream.
    fn finish_pull(&mut self, token: u64) {
        let Some(call) = self.incoming.get_mut(&token) else {
            return;
        };
        // Pulled: no longer ahead of the calls handed up.
        self.reads_ahead = self.reads_ahead.saturating_sub(call.more().need);
        let pulls = std::mem::take(&mut call.more().pulls);
        let mut chunks = Vec::with_capacity(pulls.len());
        let mut sinks = Vec::with_capacity(pulls.len());
        for p in pulls {
            let whole =
                p.mr.and_then(|mr| self.drop_mr(mr))
                    .map(|b| b.freeze())
                    .unwrap_or_default();
            let data = whole.slice(..p.len.min(whole.len()));
            sinks.push(whole);
            chunks.push((p.position, data));
        }
        // (A sink that could not be invalidated failed the connection,
        // which dropped the call.)
        let Some(call) = self.incoming.get_mut(&token) else {
            return;
        };
        // The buffers stay the call's (and counted) until it is answered.
        call.more().sinks = sinks;
        let inline = match chunks.first() {
            Some((0, _)) => chunks.remove(0).1,
            _ => call.inline.clone(),
        };
        //= rfc5666bis-04#section-4.4.5.1
        //# If the requester provides no actual round-up in a Read chunk, the
        //# responder MUST be prepared to provide appropriate round-up in the
        //# reconstructed call XDR stream The Position field in a read segment
        //# indicates where the containing Read chunk starts in the Payload
        //# stream.
        strip_read_chunk_padding(&inline, &mut chunks);
        let xid = call.xid;
        // The RPC call header: the stream before the first remaining chunk.
        let head_end = chunks
            .first()
            .map_or(inline.len(), |(p, _)| (*p as usize).min(inline.len()));
        let head = rpc_call_head(&inline[..head_end], xid);
        if head != RpcHead::Usable {
            if let Some(call) = self.incoming.remove(&token) {
                self.refuse_unusable(call, head);
            }
            return;
        }
        match Payload::from_read_chunks(inline, chunks) {
            Ok(message) => {
                call.delivered = true;
                let form = call.form;
                self.events.push_back(Event::Call {
                    token: CallToken(token),
                    xid,
                    message,
                    form,
                });
            }
            Err(e) => {
                tracing::debug!(xid, error = %e, "Read chunks do not fit the Payload stream");
                self.stats.bad_messages += 1;
                if let Some(call) = self.incoming.remove(&token) {
                    self.reply_rpc_error(call, GARBAGE_ARGS);
                }
            }
        }
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

/// The event handing up an admitted call without Read chunks, marked
/// delivered: its inline bytes are the whole message (taken: nothing
/// reads them from the call afterwards).
fn deliver_inline<Mr>(token: u64, call: &mut InCall<Mr>) -> Event {
    call.delivered = true;
    Event::Call {
        token: CallToken(token),
        xid: call.xid,
        message: Payload::inline_only(std::mem::take(&mut call.inline)),
        form: call.form,
    }
}

/// Largest `opaque_auth` body (RFC 5531 §8.2).
const MAX_AUTH_BYTES: u32 = 400;

/// What the start of a call's Payload stream holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RpcHead {
    /// A complete RPC call header (RFC 5531 §9: xid, CALL, rpcvers, prog,
    /// vers, proc, cred, verf), or one the upper layer answers from its
    /// first words (another RPC version, an over-long credential or
    /// verifier).
    Usable,
    /// No RPC call: fewer than eight bytes, another XID, not a CALL.
    NotACall,
    /// XID and CALL, then cut short before the verifier ends.
    Truncated,
}

/// Classifies the RPC call header at the start of `s` (the same steps as
/// the ONC RPC layer's header decoder, so exactly the calls it would drop
/// are caught here).
fn rpc_call_head(s: &[u8], xid: u32) -> RpcHead {
    let word = |i: usize| {
        s.get(i..i + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    if word(0) != Some(xid) || word(4) != Some(0) {
        return RpcHead::NotACall;
    }
    match word(8) {
        None => return RpcHead::Truncated,
        // RPC_MISMATCH, answered by the upper layer from three words.
        Some(v) if v != 2 => return RpcHead::Usable,
        Some(_) => {}
    }
    // prog, vers, proc; then the credential and the verifier.
    let mut at = 24usize;
    if s.len() < at {
        return RpcHead::Truncated;
    }
    for _ in 0..2 {
        let Some(len) = word(at + 4) else {
            return RpcHead::Truncated;
        };
        if len > MAX_AUTH_BYTES {
            // AUTH_BADCRED / AUTH_BADVERF, answered by the upper layer.
            return RpcHead::Usable;
        }
        at += 8 + round_up(len as usize);
        if s.len() < at {
            return RpcHead::Truncated;
        }
    }
    RpcHead::Usable
}

/// Removes XDR padding a requester left in its Read chunks (RFC 8166
/// §4.4.5.1: it MAY send a chunk "without any XDR padding", so it may also
/// send one with it): a chunk whose length is a multiple of four, preceded
/// in the stream by a length word `L` with `L` < its length and `L`
/// rounded up equal to it, holds `L` octets of data and its pad. The data
/// an upper layer sees is then exactly the item, as for an unpadded chunk
/// (spec note E18). `chunks` are (Position, data) in Position order,
/// Position-Zero chunk removed; `inline` is the reduced stream they belong
/// in.
fn strip_read_chunk_padding(inline: &Bytes, chunks: &mut [(u32, Bytes)]) {
    let mut placed = 0usize;
    for (position, data) in chunks.iter_mut() {
        let padded = data.len();
        let off = (*position as usize).checked_sub(placed);
        placed = placed.saturating_add(round_up(padded));
        let Some(off) = off.filter(|&o| o >= 4 && o <= inline.len()) else {
            continue;
        };
        let word = u32::from_be_bytes([
            inline[off - 4],
            inline[off - 3],
            inline[off - 2],
            inline[off - 1],
        ]) as usize;
        if padded % 4 == 0 && word < padded && round_up(word) == padded {
            data.truncate(word);
        }
    }
}
