//! Requester side of the engine: sending our calls within credits and
//! taking their replies (RFC 8166 §3.3.1, §4.4–4.5, §5.3, §5.4.1, §5.5).

use std::time::Instant;

use bytes::Bytes;
use rpcrdma_verbs::{MrBuffer, ProtectionDomain};
use rpcrdma_wire::{ChunkLists, ErrCode, ErrorBody};
use rpcrdma_xdr::Payload;

use crate::config::{Role, VersionPolicy};
use crate::conn::{CallRegs, Engine, MsgHead, OutCall, Pending, VersionState};
use crate::error::{ApiError, CallError, EngineError, ReplyFault};
use crate::event::{Event, MessageForm};
use crate::marshal::{plan_call, CallParams, ReplyHints};

impl<P: ProtectionDomain> Engine<P> {
    /// Sends a call, or queues it until a credit is free.
    ///
    /// `payload` is the whole RPC call (its DDP-eligible items marked, see
    /// [`rpcrdma_xdr::PayloadEncoder`]); `hints` come from the program's
    /// Upper Layer Binding. The outcome arrives as [`Event::Reply`] or
    /// [`Event::CallFailed`] for `xid` — exactly one of them, unless the
    /// connection fails first ([`Event::Fatal`]) or the call is
    /// [`released`](Engine::release).
    ///
    /// On a server this sends a reverse-direction call, which is refused
    /// until [`Engine::peer_backchannel_ready`] (RFC 8167 §6).
    pub fn send_call(
        &mut self,
        now: Instant,
        xid: u32,
        payload: Payload,
        hints: ReplyHints,
    ) -> Result<(), ApiError> {
        self.check_alive()?;
        //= rfc5666bis-04#section-7.3.1
        //# An Upper Layer Protocol consumer MUST NOT perform backward
        //# direction ONC RPC operations unless the peer consumer has
        //# indicated it is prepared to handle them.
        //= rfc8167#section-6
        //# Therefore, a ULP MUST NOT perform reverse-direction ONC RPC
        //# operations until the peer has indicated it is prepared to handle
        //# them.
        if !self.req_enabled {
            return Err(ApiError::BackchannelNotReady);
        }
        if self.calls.contains_key(&xid) || self.queue.iter().any(|p| p.xid == xid) {
            return Err(ApiError::XidInUse(xid));
        }
        if self.queue.len() >= self.cfg.max_queued_calls {
            return Err(ApiError::QueueFull(self.queue.len()));
        }
        if !self.credits.available() || !self.queue.is_empty() {
            self.stats.credit_waits += 1;
        }
        let pending = Pending {
            xid,
            payload,
            hints,
        };
        if self.queue.is_empty() {
            // What `pump_calls` does for a queue of this one call, without
            // queueing it: offers first, then the call if it may go now.
            self.send_offers(now);
            if let Some(version) = self.may_send(xid) {
                self.transmit(now, pending, version);
                self.note_time(now);
                return Ok(());
            }
        }
        self.queue.push_back(pending);
        self.pump_calls(now);
        self.note_time(now);
        Ok(())
    }

    /// The version call `xid` goes in, if it may be sent now (alive,
    /// this direction enabled, a credit free, the version known, and no
    /// unanswered optional offer under the same XID).
    fn may_send(&self, xid: u32) -> Option<u32> {
        if self.failed.is_some()
            || !self.req_enabled
            || !self.credits.available()
            || (!self.opt_calls.is_empty() && self.opt_calls.contains_key(&xid))
        {
            return None;
        }
        //= rfc8167#section-5.1
        //# The rdma_vers field MUST contain the same value in reverse- and
        //# forward-direction Call messages on the same connection.
        //= rfc5666bis-04#section-7.3.4
        //# The rdma_vers field MUST contain the value one.
        self.send_version()
    }

    /// Diagnostics: sends a transport header with an `rdma_proc` no version
    /// defines (9) under `xid`, as a call taking a credit. A conforming
    /// responder answers `RDMA_ERROR` `ERR_BADHEADER` (RFC 8166 §5.5.2),
    /// which completes it as [`Event::CallFailed`]. Used by `rpcrdma demo`
    /// and `rpcrdma probe` to show an error round trip.
    pub fn send_bad_header(&mut self, xid: u32) -> Result<(), ApiError> {
        self.check_alive()?;
        if self.calls.contains_key(&xid) || self.queue.iter().any(|p| p.xid == xid) {
            return Err(ApiError::XidInUse(xid));
        }
        let Some(version) = self.send_version() else {
            return Err(ApiError::BackchannelNotReady);
        };
        if !self.credits.available() || self.version == VersionState::Probing {
            return Err(ApiError::QueueFull(self.queue.len()));
        }
        self.credits.take();
        let mut hb = bytes::BytesMut::with_capacity(16);
        for w in [xid, version, self.cfg.credits_request, 9] {
            bytes::BufMut::put_u32(&mut hb, w);
        }
        let wr_id = self.wr_id(crate::conn::Wr::Send);
        self.push_sq(rpcrdma_verbs::SendWr::send(
            wr_id,
            vec![rpcrdma_verbs::Sge::Bytes(hb.freeze())],
        ));
        self.calls.insert(
            xid,
            OutCall {
                version,
                form: MessageForm::Short,
                regs: None,
                released: false,
                retry: None,
            },
        );
        Ok(())
    }

    /// The upper layer is done with call `xid` (reply taken, timed out or
    /// cancelled): its memory registrations are invalidated now, before
    /// the caller sees the outcome (RFC 8166 §5.4.1, §10.1.3). A call still
    /// waiting for a credit is dropped. Unknown XIDs are ignored.
    ///
    /// A call released before its reply keeps its credit until the reply
    /// arrives (the responder still counts it).
    //= rfc5666bis-04#section-10.1
    //# The use of RPC-over-RDMA MUST NOT introduce any vulnerabilities to
    //# system memory contents, nor to memory owned by user processes.
    pub fn release(&mut self, xid: u32) {
        if let Some(i) = self.queue.iter().position(|p| p.xid == xid) {
            self.queue.remove(i);
            return;
        }
        let Some(call) = self.calls.get_mut(&xid) else {
            return;
        };
        if call.released {
            return;
        }
        call.released = true;
        call.retry = None;
        let CallRegs {
            sources,
            writes,
            reply,
        } = CallRegs::unbox(call.regs.take());
        self.stats.released_early += 1;
        for mr in sources {
            self.drop_mr(mr);
        }
        for p in writes.into_iter().chain(reply) {
            self.drop_mr(p.mr);
        }
    }

    /// Sends queued calls while credits allow.
    #[inline]
    pub(crate) fn pump_calls(&mut self, now: Instant) {
        // Checked inline: nothing queued and no offer to make (the common
        // case after every completion).
        if self.queue.is_empty() && self.features.unasked == 0 {
            return;
        }
        self.pump_queue(now);
    }

    fn pump_queue(&mut self, now: Instant) {
        // Version Two optional offers go first (each holds a credit).
        self.send_offers(now);
        while self.failed.is_none() && self.req_enabled && !self.queue.is_empty() {
            if !self.credits.available() {
                let abandoned =
                    self.calls.values().filter(|c| c.released).count() + self.abandoned_offers();
                if abandoned > 0 && abandoned as u32 >= self.credits.granted() {
                    self.fail(EngineError::CreditsLost(self.credits.granted()));
                }
                return;
            }
            if self
                .queue
                .front()
                .is_some_and(|p| self.opt_calls.contains_key(&p.xid))
            {
                // The upper layer chose the XID of an unanswered optional
                // offer: wait for its answer so every RDMA2_ERROR names
                // one message.
                return;
            }
            let Some(version) = self.send_version() else {
                return;
            };
            let Some(pending) = self.queue.pop_front() else {
                return;
            };
            self.transmit(now, pending, version);
        }
    }

    fn transmit(&mut self, now: Instant, pending: Pending, version: u32) {
        // The version probe keeps a copy of itself, to be sent again in
        // Version One after ERR_VERS; every other call's payload moves into
        // its Send.
        let probing = self.version == VersionState::Probing;
        let retry = probing.then(|| Box::new(pending.clone()));
        let Pending {
            xid,
            payload,
            hints,
        } = pending;
        let t = self.thresholds();
        let adj = self.adjustments;
        // What we ask for is what we posted receives for: every reply of
        // ours in flight takes one (RFC 8166 §3.3.1, RFC 8167 §4.1; spec
        // note E29).
        //= rfc5666bis-04#section-7.2.1
        //# The rdma_credit field in a backward direction RPC-over-RDMA
        //# message MUST NOT contain the value zero.
        let credits = self.credits.max();
        // A reverse-direction call whose largest reply the Upper Layer
        // does not state goes inline and expects its reply inline: no
        // Reply chunk of `max_message` (E16) to a client that may not take
        // reverse-direction chunks (the Linux client does not; spec note
        // E28).
        let mut hints = hints;
        //= rfc8167#section-5.3
        //# Chunks MAY be used in the reverse direction.
        if self.cfg.role == Role::Server && hints.max_reply.is_none() {
            let header = crate::hdr::chunked_len(version, 0, &[], None) as u32;
            hints.max_reply = Some(self.thresholds().recv.saturating_sub(header));
        }
        let params = CallParams {
            version,
            xid,
            credits,
            send_threshold: t.send,
            recv_threshold: t.recv,
            max_message: self.cfg.max_message,
            peer_limits: adj.peer_limits,
            peer_max_message: adj.peer_max_message,
        };
        let (plan, sinks) = plan_call(&self.pd, &self.budget, payload, &hints, &params);
        self.stats.sink_buffers_allocated += sinks.allocated;
        self.stats.sink_bytes_allocated += sinks.allocated_bytes;
        self.stats.sink_buffers_reused += sinks.reused;
        let plan = match plan {
            Ok(p) => p,
            Err(error) => {
                self.events.push_back(Event::CallFailed { xid, error });
                return;
            }
        };
        self.stats.registrations += plan.registrations() as u64;
        match plan.form {
            MessageForm::Short => self.stats.calls_short += 1,
            MessageForm::Chunked => self.stats.calls_chunked += 1,
            MessageForm::Long => self.stats.calls_long += 1,
        }
        self.credits.take();
        if probing && version == 2 && self.cfg.client_version == VersionPolicy::Negotiate {
            self.deadline = Some(now + self.cfg.negotiation_timeout);
            self.probe_out = true;
        }
        tracing::trace!(xid, form = plan.form.name(), "call sent");
        self.push_send(&plan.header, plan.pieces, None);
        self.calls.insert(
            xid,
            OutCall {
                version,
                form: plan.form,
                regs: CallRegs::boxed(plan.sources, plan.writes, plan.reply),
                released: false,
                retry,
            },
        );
    }

    /// The version is settled: `cause` is the error of the responder that
    /// made a client fall back from its first version (`None` otherwise).
    pub(crate) fn settle(&mut self, version: u32, cause: Option<ErrCode>) {
        self.version = VersionState::Settled(version);
        self.probe_out = false;
        self.refresh_derived();
        self.deadline = None;
        self.events.push_back(Event::Negotiated {
            version,
            fell_back: cause.is_some(),
            cause,
        });
    }

    pub(crate) fn release_call_mrs(&mut self, call: OutCall<P::Mr>) {
        let CallRegs {
            sources,
            writes,
            reply,
        } = CallRegs::unbox(call.regs);
        for mr in sources {
            self.drop_mr(mr);
        }
        for p in writes.into_iter().chain(reply) {
            if let Some(b) = self.drop_mr(p.mr) {
                self.budget.keep(b.freeze());
            }
        }
    }

    /// A reply to one of our calls.
    pub(crate) fn on_reply(
        &mut self,
        now: Instant,
        head: MsgHead,
        chunks: ChunkLists,
        payload: Bytes,
        invalidated: Option<u32>,
    ) {
        let xid = head.xid;
        let Some(call) = self.calls.remove(&xid) else {
            self.stats.unmatched_replies += 1;
            tracing::debug!(xid, "reply matches no outstanding call; dropped");
            return;
        };
        self.credits.put();
        self.credits.grant(head.credits);
        if self.version == VersionState::Probing {
            self.seed_opt_xid(xid);
            self.settle(head.vers, None);
        }
        if call.released {
            self.pump_calls(now);
            return;
        }
        if let Some(key) = invalidated {
            let ours = call.regs.as_ref().is_some_and(|r| {
                r.writes
                    .iter()
                    .chain(r.reply.as_ref())
                    .any(|p| p.segment.handle == key)
                    || r.sources
                        .iter()
                        .any(|m| rpcrdma_verbs::MemoryRegion::rkey(m) == key)
            });
            if !ours {
                tracing::warn!(xid, key, "peer invalidated a key that is not this call's");
            }
        }
        let version_ok = head.vers == call.version;
        let call_form = call.form;
        let outcome = self.collect_reply(call, &chunks, head.nomsg, payload);
        if self.failed.is_some() {
            // A region could not be invalidated: the connection is closed
            // and the call abandoned, never completed (§5.5.4).
            return;
        }
        let event = match outcome {
            Ok(_) if !version_ok => Event::CallFailed {
                xid,
                error: CallError::BadReply(ReplyFault::VersionMismatch),
            },
            Ok((message, reply_form)) => {
                match reply_form {
                    MessageForm::Short => self.stats.replies_short += 1,
                    MessageForm::Chunked => self.stats.replies_chunked += 1,
                    MessageForm::Long => self.stats.replies_long += 1,
                }
                Event::Reply {
                    xid,
                    message,
                    call_form,
                    reply_form,
                }
            }
            Err(error) => Event::CallFailed { xid, error },
        };
        self.events.push_back(event);
        self.pump_calls(now);
    }

    /// Releases every registration of `call`, then rebuilds the reply from
    /// the inline payload, the Write chunks and the Reply chunk, checking
    /// what the responder wrote against what we provided.
    fn collect_reply(
        &mut self,
        call: OutCall<P::Mr>,
        chunks: &ChunkLists,
        nomsg: bool,
        inline: Bytes,
    ) -> Result<(Payload, MessageForm), CallError> {
        if call.regs.is_none() && chunks.is_empty() && !nomsg {
            // A Short call and its Short reply: nothing to release or
            // check (what the general path below finds for it too).
            return Ok((Payload::inline_only(inline), MessageForm::Short));
        }
        let regs = CallRegs::unbox(call.regs);
        for mr in regs.sources {
            self.drop_mr(mr);
        }
        // Every registration is released first, whatever the reply says;
        // the data of each Write chunk is taken on the way, and the first
        // fault found is reported once all are released.
        let provided = regs.writes.len();
        let mut data = Vec::with_capacity(provided);
        let mut any_written = false;
        let mut fault = None;
        for (i, p) in regs.writes.into_iter().enumerate() {
            let seg = p.segment;
            let buf = self.drop_mr(p.mr).map(MrBuffer::freeze);
            if let Some(b) = &buf {
                self.budget.keep(b.clone());
            }
            if fault.is_some() {
                continue;
            }
            let len = match chunks.writes.get(i) {
                None => Ok(0),
                Some(returned) => written_len(&returned.segments, seg.handle, seg.length),
            };
            match len.and_then(|len| {
                any_written |= len > 0;
                take_prefix(buf, len)
            }) {
                Ok(b) => data.push(b),
                Err(e) => fault = Some(e),
            }
        }
        let reply = regs.reply.map(|p| {
            let seg = p.segment;
            let buf = self.drop_mr(p.mr).map(MrBuffer::freeze);
            if let Some(b) = &buf {
                self.budget.keep(b.clone());
            }
            (seg, buf)
        });

        if !chunks.reads.is_empty() {
            return Err(CallError::BadReply(ReplyFault::ReadList));
        }
        if chunks.writes.len() > provided {
            return Err(CallError::BadReply(ReplyFault::ExtraWriteChunks));
        }
        if let Some(e) = fault {
            return Err(e);
        }
        let inline = if nomsg {
            let Some((seg, buf)) = reply else {
                return Err(CallError::BadReply(ReplyFault::NoReplyChunkProvided));
            };
            let Some(returned) = chunks.reply.as_ref() else {
                return Err(CallError::BadReply(ReplyFault::ReplyChunkMissing));
            };
            let len = written_len(&returned.segments, seg.handle, seg.length)?;
            take_prefix(buf, len)?
        } else {
            inline
        };
        let form = if nomsg {
            MessageForm::Long
        } else if any_written {
            MessageForm::Chunked
        } else {
            MessageForm::Short
        };
        Ok((Payload::from_write_chunks(inline, data), form))
    }

    /// A received message whose header we rejected and whose bytes say it
    /// is a REPLY (its `rdma_xid` and `rdma_vers`; `optional`: an
    /// `RDMA2_OPTIONAL`, which can answer only an offer). It is never answered
    /// (spec note W14: an error would name an XID of the other direction
    /// at the peer, and end one of the peer's calls that has nothing to do
    /// with it). If it names one of our calls, that call ends now with
    /// [`CallError::BadReply`] and its credit comes back: the responder
    /// answered it, and no other reply will come (spec note E24). Nothing
    /// else in it is used (not its credit value).
    pub(crate) fn on_rejected_reply(&mut self, now: Instant, xid: u32, vers: u32, optional: bool) {
        if self.on_rejected_optional_reply(xid) {
            self.pump_calls(now);
            return;
        }
        let call = if optional {
            None
        } else {
            self.calls.remove(&xid)
        };
        let Some(call) = call else {
            self.stats.unmatched_replies += 1;
            tracing::debug!(xid, "rejected reply matches no outstanding call; dropped");
            return;
        };
        self.credits.put();
        if self.version == VersionState::Probing {
            // The responder answered our first message in its version: that
            // settles it, as any reply does (no timeout to wait for).
            self.seed_opt_xid(xid);
            self.settle(vers, None);
        }
        let released = call.released;
        self.release_call_mrs(call);
        if !released && self.failed.is_none() {
            tracing::debug!(
                xid,
                "the reply's transport header is malformed; the call fails"
            );
            self.events.push_back(Event::CallFailed {
                xid,
                error: CallError::BadReply(ReplyFault::MalformedHeader),
            });
        }
        self.pump_calls(now);
    }

    /// An `RDMA_ERROR` naming `xid`.
    pub(crate) fn on_rdma_error(&mut self, xid: u32, body: ErrorBody) {
        if self.on_optional_error(xid, body) {
            return;
        }
        let Some(mut call) = self.calls.remove(&xid) else {
            tracing::debug!(xid, "RDMA_ERROR for no outstanding call");
            return;
        };
        //= rfc8167#section-4.1
        //# In such cases, the receiver MUST ignore the header's credit value.
        // The direction of a Version One RDMA_ERROR is unknown: its credit
        // value is ignored (RFC 8167 §4.1).
        self.credits.put();
        let released = call.released;
        let retry = call.retry.take().filter(|_| !released);
        let version = call.version;
        self.release_call_mrs(call);
        if self.failed.is_some() {
            return;
        }
        if self.version == VersionState::Probing {
            // The answer to our first message settles the version now,
            // whatever it is and even if the upper layer gave up on the
            // call (then it is not sent again): never a timeout (spec
            // notes E12, E25).
            self.on_probe_error(xid, version, body, retry, released);
            return;
        }
        if released {
            return;
        }
        let error = match body {
            ErrorBody::Vers { low, high } => CallError::Version { low, high },
            other => CallError::RdmaError { code: other.code() },
        };
        self.events.push_back(Event::CallFailed { xid, error });
    }

    /// The responder answered our first message (`xid`, sent in
    /// `version`) with an `RDMA_ERROR`. `ERR_VERS` whose range holds a
    /// version we speak: fall back to it (draft-cel-01 §5.2). Any other
    /// error: the responder refused the message, not necessarily the
    /// version; a negotiating client that speaks Version One falls back to
    /// it at once, and otherwise the version it used is settled and the
    /// call fails with the error (spec note E25). Either way the call is
    /// sent again (same XID) in the version fallen back to, unless the
    /// upper layer released it.
    fn on_probe_error(
        &mut self,
        xid: u32,
        version: u32,
        body: ErrorBody,
        retry: Option<Box<Pending>>,
        released: bool,
    ) {
        // Answered, whatever follows.
        self.probe_out = false;
        let negotiate = self.cfg.client_version == VersionPolicy::Negotiate;
        let fallback = match body {
            ErrorBody::Vers { low, high } => (low..=high.min(2))
                .rev()
                .find(|v| *v != version && self.cfg.versions.contains(*v)),
            _ => Some(1).filter(|&v| v != version && self.cfg.versions.contains(v)),
        }
        .filter(|_| negotiate);
        match (fallback, body) {
            (Some(v), _) => {
                if body.code() == ErrCode::VERS {
                    tracing::info!(
                        from = version,
                        to = v,
                        "responder lacks the version; falling back"
                    );
                } else {
                    tracing::warn!(
                        from = version,
                        to = v,
                        error = ?body.code().name(),
                        "responder refused the first message; falling back"
                    );
                }
                self.settle(v, Some(body.code()));
                if let Some(pending) = retry {
                    self.queue.push_front(*pending);
                }
            }
            (None, ErrorBody::Vers { low, high }) => {
                if !released {
                    self.events.push_back(Event::CallFailed {
                        xid,
                        error: CallError::Version { low, high },
                    });
                }
                self.fail(EngineError::NoCommonVersion { low, high });
            }
            (None, other) => {
                self.settle(version, None);
                if !released {
                    self.events.push_back(Event::CallFailed {
                        xid,
                        error: CallError::RdmaError { code: other.code() },
                    });
                }
            }
        }
    }
}

/// The bytes written into a chunk we provided as one segment: the returned
/// chunk must still be one segment with our handle, and may not claim more
/// than we provided (RFC 8166 §4.4.6).
fn written_len(
    returned: &[rpcrdma_wire::Segment],
    handle: u32,
    provided: u32,
) -> Result<usize, CallError> {
    match returned {
        [s] if s.handle == handle && s.length <= provided => Ok(s.length as usize),
        [s] if s.handle != handle => Err(CallError::BadReply(ReplyFault::ForeignHandle)),
        [_] => Err(CallError::BadReply(ReplyFault::ChunkOverclaimed)),
        _ => Err(CallError::BadReply(ReplyFault::SegmentCount)),
    }
}

fn take_prefix(buf: Option<Bytes>, len: usize) -> Result<Bytes, CallError> {
    let Some(mut b) = buf else {
        return Err(CallError::BadReply(ReplyFault::ChunkMemoryLost));
    };
    if len > b.len() {
        return Err(CallError::BadReply(ReplyFault::ChunkBeyondMemory));
    }
    b.truncate(len);
    Ok(b)
}
