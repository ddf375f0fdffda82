//! `RDMA2_OPTIONAL` messages (draft-cel-01 §3.1, §4.2.1, §4.2.2): sending
//! the registered features' offers, answering the peer's, and taking the
//! answers to ours. The features themselves only build and read
//! `rdma_optinfo` ([`crate::OptionalFeature`]).
//!
//! Rules (also in `docs/v2-transport-properties.md` and the spec notes):
//!
//! * Only a client offers, only on a connection settled on Version Two,
//!   each feature at most once per connection, before any queued call.
//! * An offer is a CALL with no RPC payload. Its XID comes from the
//!   client's call XID space: the search starts half the space away from
//!   the call that settled the version and skips every XID in use, queued
//!   or offered. A queued upper-layer call that happens to carry the XID of
//!   an unanswered offer waits for that answer, so an `RDMA2_ERROR` always
//!   names one message.
//! * An offer holds one credit until its answer (REPLY or `RDMA2_ERROR`)
//!   arrives; the REPLY's credit value is a grant, like a reply's; an
//!   error's is ignored (RFC 8167 §4.1 reading, E6).
//! * No answer within `negotiation_timeout` drops the feature; the credit
//!   stays held until an answer arrives (the responder still counts it,
//!   like an abandoned call, E11).

use std::time::Instant;

use bytes::Bytes;
use rpcrdma_verbs::ProtectionDomain;
use rpcrdma_wire::v2::Direction;
use rpcrdma_wire::{ErrorBody, Header, Message, OptionType, Optional, V2Body, V2Header};
use rpcrdma_xdr::Encode;

use crate::config::Role;
use crate::conn::{Engine, OptCall, VersionState};
use crate::error::ApiError;
use crate::event::Event;
use crate::features::{FeatureContext, FeatureError, FeatureState, OptionalFeature};

/// Distance between the call that settled the version and the first XID
/// tried for an offer: half the XID space, so sequentially allocated RPC
/// XIDs do not reach it for a long time.
const XID_OFFSET: u32 = 0x8000_0000;

fn optional_header(
    xid: u32,
    credits: u32,
    direction: Direction,
    opttype: OptionType,
    optinfo: Bytes,
) -> Header {
    Header::V2(V2Header {
        xid,
        credits,
        body: V2Body::Optional(Optional {
            direction,
            opttype,
            optinfo,
        }),
    })
}

impl<P: ProtectionDomain> Engine<P> {
    /// Adds a Version Two optional feature to this end's registry: its
    /// `rdma_opttype` is accepted from now on (instead of drawing
    /// `RDMA2_ERR_INVAL_OPTION`), and a client offers it once the
    /// connection settles on Version Two. Register before the first call so
    /// the offer goes out with the others.
    ///
    /// The built-in transport properties feature is registered by
    /// [`crate::EngineConfig::transport_properties`].
    pub fn register_feature(&mut self, feature: Box<dyn OptionalFeature>) -> Result<(), ApiError> {
        let t = feature.opttype();
        if !self.features.insert(feature) {
            return Err(ApiError::FeatureRegistered(t.0));
        }
        self.decode_cfg.options.insert(t);
        self.refresh_derived();
        Ok(())
    }

    /// What features see of this end.
    pub(crate) fn feature_context(&self) -> FeatureContext {
        FeatureContext {
            role: self.cfg.role,
            version: match self.version {
                VersionState::Settled(v) => Some(v),
                _ => None,
            },
            recv_buffer_size: self.recv_buffer_len(),
            inline_send: self.send_size(),
            limits: self.cfg.limits,
            max_message: self.cfg.max_message,
        }
    }

    /// Records a feature's state after each of its callbacks (which may
    /// also have changed its adjustments, whatever the state).
    fn set_feature_state(&mut self, slot: usize, state: FeatureState) {
        let Some(s) = self.features.slots.get_mut(slot) else {
            return;
        };
        if s.state == state {
            self.refresh_derived();
            return;
        }
        s.state = state.clone();
        self.refresh_derived();
        let s = &self.features.slots[slot];
        let (opttype, name) = (s.feature.opttype(), s.feature.name());
        tracing::debug!(
            opttype = opttype.0,
            name,
            state = state.name(),
            "optional feature"
        );
        self.events.push_back(Event::Feature {
            opttype,
            name,
            state,
        });
    }

    /// An XID of our call space that nothing in flight, queued or offered
    /// uses.
    fn alloc_opt_xid(&mut self) -> u32 {
        let mut x = self.next_opt_xid;
        while self.calls.contains_key(&x)
            || self.opt_calls.contains_key(&x)
            || self.queue.iter().any(|p| p.xid == x)
        {
            x = x.wrapping_add(1);
        }
        self.next_opt_xid = x.wrapping_add(1);
        x
    }

    /// Records where offer XIDs start: half the space from `xid`, the call
    /// whose reply settled the version.
    pub(crate) fn seed_opt_xid(&mut self, xid: u32) {
        self.next_opt_xid = xid.wrapping_add(XID_OFFSET);
    }

    /// Client on a Version Two connection: sends each feature's offer once,
    /// while credits allow (before queued calls).
    #[inline]
    pub(crate) fn send_offers(&mut self, now: Instant) {
        // Checked inline: every feature asked (the common case).
        if self.features.unasked > 0 {
            self.send_new_offers(now);
        }
    }

    fn send_new_offers(&mut self, now: Instant) {
        if self.cfg.role != Role::Client
            || self.version != VersionState::Settled(2)
            || self.failed.is_some()
        {
            return;
        }
        for i in 0..self.features.slots.len() {
            if self.features.slots[i].asked {
                continue;
            }
            if !self.credits.available() {
                return;
            }
            let ctx = self.feature_context();
            let slot = &mut self.features.slots[i];
            slot.asked = true;
            self.features.unasked -= 1;
            let opttype = slot.feature.opttype();
            let offer = slot.feature.offer(&ctx);
            self.refresh_derived();
            let Some(info) = offer else {
                continue;
            };
            let xid = self.alloc_opt_xid();
            let h = optional_header(
                xid,
                self.cfg.credits_request,
                //= draft-cel-01#section-4.2.2
                //# o When the rdma_proc field has the value RDMA2_OPTIONAL
                //# and no RPC message payload is present, a Requester MUST
                //# set the value of the rdma_optdir field to CALL, and a
                //# Responder MUST set the value of the rdma_optdir field to
                //# REPLY.
                Direction::Call,
                opttype,
                info,
            );
            if h.encoded_len() > self.thresholds().send as usize {
                tracing::debug!(
                    opttype = opttype.0,
                    "optional offer exceeds the send threshold; not sent"
                );
                continue;
            }
            self.credits.take();
            self.stats.options_sent += 1;
            self.push_send(&h, Vec::new(), None);
            self.opt_calls.insert(
                xid,
                OptCall {
                    slot: i,
                    deadline: now + self.cfg.negotiation_timeout,
                    abandoned: false,
                },
            );
            self.set_feature_state(i, FeatureState::Offered);
        }
    }

    /// A received `RDMA2_OPTIONAL` of a registered type.
    pub(crate) fn on_optional(&mut self, now: Instant, msg: Message) {
        let Header::V2(V2Header {
            xid,
            credits,
            body: V2Body::Optional(o),
        }) = msg.header
        else {
            return;
        };
        self.stats.options_received += 1;
        let Some(slot) = self.features.find(o.opttype) else {
            // Unreachable: the decoder refuses unregistered types. Answer
            // as it would.
            self.stats.bad_messages += 1;
            self.send_error(2, xid, ErrorBody::InvalOption);
            return;
        };
        let ctx = self.feature_context();
        match o.direction {
            //= draft-cel-01#section-3.1
            //# The value in this field denotes an optional operation that MAY
            //# be supported by the receiver.
            Direction::Call => {
                let result =
                    self.features.slots[slot]
                        .feature
                        .on_call(&ctx, &o.optinfo, &msg.payload);
                match result {
                    Ok(info) => {
                        let h = optional_header(
                            xid,
                            self.grant.max(1),
                            //= draft-cel-01#section-4.2.2
                            //# o When the rdma_proc field has the value
                            //# RDMA2_OPTIONAL and no RPC message payload is
                            //# present, a Requester MUST set the value of the
                            //# rdma_optdir field to CALL, and a Responder
                            //# MUST set the value of the rdma_optdir field to
                            //# REPLY.
                            Direction::Reply,
                            o.opttype,
                            info,
                        );
                        self.stats.options_sent += 1;
                        self.push_send(&h, Vec::new(), None);
                        self.set_feature_state(slot, FeatureState::Active);
                    }
                    Err(e) => {
                        tracing::debug!(xid, error = %e, "refused an optional CALL");
                        self.stats.bad_messages += 1;
                        self.send_error(2, xid, ErrorBody::BadHeader);
                        self.set_feature_state(slot, FeatureState::Malformed(e));
                    }
                }
            }
            Direction::Reply => {
                let Some(call) = self.opt_calls.get(&xid).copied().filter(|c| c.slot == slot)
                else {
                    self.stats.unmatched_replies += 1;
                    tracing::debug!(xid, "optional REPLY matches no offer; dropped");
                    return;
                };
                self.opt_calls.remove(&xid);
                self.credits.put();
                self.credits.grant(credits);
                if !call.abandoned {
                    let result =
                        self.features.slots[slot]
                            .feature
                            .on_reply(&ctx, &o.optinfo, &msg.payload);
                    match result {
                        Ok(()) => self.set_feature_state(slot, FeatureState::Active),
                        Err(e) => {
                            tracing::debug!(xid, error = %e, "unusable optional REPLY");
                            self.stats.bad_messages += 1;
                            self.set_feature_state(slot, FeatureState::Malformed(e));
                        }
                    }
                }
                self.pump_calls(now);
            }
        }
    }

    /// An `RDMA2_ERROR` naming `xid`: if it answers one of our offers, the
    /// feature is dropped for the connection and `true` is returned.
    pub(crate) fn on_optional_error(&mut self, xid: u32, body: ErrorBody) -> bool {
        let Some(call) = self.opt_calls.remove(&xid) else {
            return false;
        };
        // Its credit value is ignored (E6); the offer's credit comes back.
        self.credits.put();
        if !call.abandoned {
            let state = match body {
                ErrorBody::InvalOption => FeatureState::Unsupported,
                other => FeatureState::Refused(other.code()),
            };
            self.set_feature_state(call.slot, state);
        }
        true
    }

    /// A REPLY whose header the decoder rejected names `xid`: if it
    /// answers one of our offers, the feature is dropped as malformed
    /// (spec note X4; nothing is sent back, W14), the offer's credit comes
    /// back and `true` is returned.
    pub(crate) fn on_rejected_optional_reply(&mut self, xid: u32) -> bool {
        let Some(call) = self.opt_calls.remove(&xid) else {
            return false;
        };
        self.credits.put();
        if !call.abandoned {
            tracing::debug!(xid, "malformed optional REPLY; feature dropped");
            self.set_feature_state(
                call.slot,
                FeatureState::Malformed(FeatureError::Malformed(
                    "the answer's transport header could not be decoded",
                )),
            );
        }
        true
    }

    /// The earliest deadline of an offer still awaited.
    pub(crate) fn next_optional_deadline(&self) -> Option<Instant> {
        self.opt_calls
            .values()
            .filter(|c| !c.abandoned)
            .map(|c| c.deadline)
            .min()
    }

    /// Gives up offers past their deadline. Returns whether any was.
    pub(crate) fn optional_timeouts(&mut self, now: Instant) -> bool {
        let mut expired: Vec<(u32, usize)> = self
            .opt_calls
            .iter()
            .filter(|(_, c)| !c.abandoned && c.deadline <= now)
            .map(|(x, c)| (*x, c.slot))
            .collect();
        expired.sort_unstable();
        for (xid, slot) in &expired {
            if let Some(c) = self.opt_calls.get_mut(xid) {
                c.abandoned = true;
            }
            tracing::debug!(xid, "optional offer unanswered; feature dropped");
            self.set_feature_state(*slot, FeatureState::NoAnswer);
        }
        !expired.is_empty()
    }

    /// Offers given up whose credit is still held.
    pub(crate) fn abandoned_offers(&self) -> usize {
        self.opt_calls.values().filter(|c| c.abandoned).count()
    }
}
