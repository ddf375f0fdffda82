//! Answering: replies reduced into the requester's Write chunks or sent
//! through its Reply chunk, Send With Invalidate when both ends allow it
//! (RFC 8166 §4.5.3, §5.5.3; RFC 8797 §4.1), the engine's own RPC-level
//! answers, and the memory a call holds given back once it is done.

use std::collections::hash_map::Entry;

use rpcrdma_verbs::{ProtectionDomain, SendWr};
use rpcrdma_wire::ErrorBody;
use rpcrdma_xdr::Payload;

use super::rpc::{rpc_error_reply, RpcHead, GARBAGE_ARGS, SYSTEM_ERR};
use crate::conn::{Engine, Held, InCall, InCallMore, Wr};
use crate::error::ApiError;
use crate::event::CallToken;
use crate::reply::{plan_reply, ReplyParams};

impl<P: ProtectionDomain> Engine<P> {
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
    pub(super) fn reply_rpc_error(&mut self, call: InCall<P::Mr>, stat: u32) {
        let payload = Payload::inline_only(rpc_error_reply(call.xid, stat));
        self.answer(call, payload);
    }

    /// Answers a call whose RPC header the upper layer could not use, as
    /// RFC 5531 and RFC 8166 allow (spec note E13): `GARBAGE_ARGS` when the
    /// XID and CALL are there but the header is cut short, `RDMA_ERROR`
    /// `ERR_BADHEADER` when there is no RPC call at all (an empty message,
    /// another XID, not a CALL).
    pub(super) fn refuse_unusable(&mut self, call: InCall<P::Mr>, head: RpcHead) {
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
}
