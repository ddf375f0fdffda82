//! The connection engine: the state shared by both directions, its
//! constructors, getters, outputs and inputs. The call-table entries are
//! in `calls`, the send queue in `sq`, receive buffers and the receive
//! dispatch in `recv`, timers in `timers`; the requester side (our calls)
//! in `requester`, the responder side (the peer's calls) in `responder`,
//! Version Two optional features' messages in `optional`.

use std::collections::VecDeque;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use rpcrdma_verbs::{
    MemoryRegion, MrBuffer, ProtectionDomain, QpCaps, RecvWr, SendWr, WcStatus, WorkCompletion,
};
use rpcrdma_wire::{DecodeConfig, ErrorCredits, InlineThresholds, PrivateData};

use crate::budget::MemoryBudget;
use crate::config::{EngineConfig, Role};
use crate::credits::Credits;
use crate::error::{ApiError, EngineError};
use crate::event::Event;
use crate::features::{Adjustments, FeatureInfo, Registry, TransportPropertiesFeature};
use crate::stats::Stats;

/// Tables keyed by ids this end chose (work request ids, our XIDs, tokens):
/// the Fx hasher, several times cheaper than SipHash; the peer can look
/// keys up but never choose which are inserted, so collisions cannot be
/// forced.
pub(crate) type IdMap<K, V> = std::collections::HashMap<K, V, rustc_hash::FxBuildHasher>;

mod calls;
mod optional;
mod recv;
mod requester;
mod responder;
mod sq;
mod timers;

pub(crate) use calls::{
    CallRegs, Held, InCall, InCallMore, MsgHead, OptCall, OutCall, Pending, Pull, VersionState, Wr,
};

/// The sans-IO RPC-over-RDMA connection engine of one end.
///
/// # Determinism contract
///
/// No sockets, clocks, threads or async: every input is a method call
/// (`now` is an argument), every output is polled. The same inputs in the
/// same order give the same outputs. Memory registration goes through the
/// [`ProtectionDomain`] handed in, which is the only provider call the
/// engine makes itself (registration is synchronous in verbs).
///
/// # Method kinds and call order
///
/// * Inputs: [`Engine::handle_completion`] (every work completion of this
///   connection's queue pair), [`Engine::handle_timeout`],
///   [`Engine::close`].
/// * Commands: [`Engine::send_call`], [`Engine::send_reply`],
///   [`Engine::release`], [`Engine::enable_backchannel`],
///   [`Engine::peer_backchannel_ready`].
/// * Outputs, polled after every input or command, in this order:
///   [`Engine::poll_recv`] (post each to the queue pair's receive queue),
///   [`Engine::poll_send`] (post each to the send queue, in order),
///   [`Engine::poll_event`], then [`Engine::poll_timeout`] (call
///   `handle_timeout` at that instant; extra calls are harmless).
///
/// Errors that end the connection are sticky: the engine emits
/// [`Event::Fatal`] once, releases every registration, and refuses new
/// work with [`ApiError::Failed`].
#[derive(Debug)]
pub struct Engine<P: ProtectionDomain> {
    pub(crate) cfg: EngineConfig,
    pub(crate) pd: P,
    pub(crate) caps: QpCaps,
    pub(crate) local_pd: PrivateData,
    pub(crate) peer_pd: Option<PrivateData>,
    pub(crate) remote_inv: bool,
    pub(crate) decode_cfg: DecodeConfig,
    pub(crate) version: VersionState,
    /// A negotiating client's Version Two probe is out and nothing has
    /// answered it yet (kept after the connection fails: see
    /// [`Engine::probe_unanswered`]).
    pub(crate) probe_out: bool,
    /// The inline thresholds in effect and the active features' combined
    /// adjustments: derived from the version, the private data and the
    /// features' states, recomputed ([`Self::refresh_derived`]) whenever
    /// one of those changes rather than on every message.
    thresholds: InlineThresholds,
    pub(crate) adjustments: Adjustments,
    pub(crate) deadline: Option<Instant>,
    /// The latest `now` an input carried.
    pub(crate) last_now: Option<Instant>,
    /// Since when the send queue has had work and no completion (`None`:
    /// idle, or busy since a command that carries no clock reading).
    pub(crate) stall_since: Option<Instant>,

    next_wr: u64,
    /// Signaled send-queue work requests outstanding.
    wrs: IdMap<u64, Wr>,
    /// Receives outstanding, in posting order (a receive queue completes
    /// in order, so the next completion is normally the front one).
    recv_ids: VecDeque<u64>,
    /// Send-queue work requests posted and not known complete: the
    /// unsignaled ones count until a later signaled one completes (a
    /// send queue completes in order).
    sq_busy: u32,
    sq_limit: u32,
    /// Send-queue work requests posted so far.
    sq_posted: u64,
    /// Every send-queue work request up to this count is complete.
    sq_done: u64,
    /// Signaled send-queue work requests outstanding (id, count once
    /// posted), in posting order.
    sq_signaled: VecDeque<(u64, u64)>,
    /// Unsignaled work requests posted since the last signaled one.
    unsignaled_run: u32,
    sq_backlog: VecDeque<SendWr>,
    out_send: VecDeque<SendWr>,
    out_recv: VecDeque<RecvWr>,
    recvs_posted: u32,
    recv_target: u32,
    recv_size: usize,
    /// Received buffers, kept to be posted again once the upper layer has
    /// dropped every view of them (receive buffers are reused, not
    /// reallocated, in the steady state).
    spare: VecDeque<Bytes>,
    /// The memory budget this connection draws from (shared with other
    /// connections when a listener hands the same one to each); idle sink
    /// buffers kept for reuse live there.
    pub(crate) budget: MemoryBudget,
    /// Octets charged to this connection: the peer's calls' Read sinks,
    /// their replies' reservations and reply data in flight (at most
    /// `cfg.max_memory`).
    pub(crate) mem_used: u64,
    /// The budget's epoch when the oldest waiting call last failed to get
    /// shared memory (the driver waits for a release after it).
    pub(crate) mem_blocked: Option<u64>,
    /// The connection's fixed cost, when a listener charged it to the
    /// budget at accept ([`Engine::hold_charge`]): given back when the
    /// connection ends.
    fixed: Option<crate::budget::Charge>,
    /// What each reply Send in flight holds, by work request id.
    pub(crate) replying: IdMap<u64, Held>,
    /// Where transport headers are encoded (see `push_send`).
    hdr_arena: BytesMut,
    pub(crate) events: VecDeque<Event>,

    // Requester side (our calls).
    pub(crate) credits: Credits,
    pub(crate) queue: VecDeque<Pending>,
    //= rfc5666bis-04#section-7.1.4
    //# In other words, a forward direction requester MAY use the same xid
    //# value at the same time as a backward direction requester on the same
    //# transport connection, but such concurrent requests represent distinct
    //# ONC RPC transactions.
    //= rfc8167#section-2.4.1
    //# Therefore, a forward-direction Requester MAY use the same XID value at
    //# the same time as a reverse-direction Requester on the same transport
    //# connection.
    pub(crate) calls: IdMap<u32, OutCall<P::Mr>>,
    pub(crate) req_enabled: bool,

    // Responder side (the peer's calls).
    pub(crate) next_token: u64,
    pub(crate) incoming: IdMap<u64, InCall<P::Mr>>,
    /// Received calls waiting to be admitted (see `pump_admission`), in
    /// arrival order.
    pub(crate) waiting: VecDeque<u64>,
    pub(crate) reads: VecDeque<SendWr>,
    pub(crate) reads_busy: u32,
    /// Read chunk data of admitted calls not yet handed up (pulling, or
    /// waiting for their Reads): what the read window bounds.
    pub(crate) reads_ahead: u64,
    pub(crate) grant: u32,
    pub(crate) resp_enabled: bool,

    // Version Two optional features.
    pub(crate) features: Registry,
    /// Our outstanding `RDMA2_OPTIONAL` CALLs, by XID.
    pub(crate) opt_calls: IdMap<u32, OptCall>,
    /// Where the search for the next optional CALL's XID starts.
    pub(crate) next_opt_xid: u32,

    pub(crate) failed: Option<EngineError>,
    pub(crate) stats: Stats,
}

/// What the engine knows about the connection, for `rpcrdma probe` and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionInfo {
    /// This end's role.
    pub role: Role,
    /// The version in use, once settled.
    pub version: Option<u32>,
    /// The private data we sent.
    pub local_private_data: PrivateData,
    /// The peer's RFC 8797 private data, if it sent any.
    pub peer_private_data: Option<PrivateData>,
    /// The inline thresholds in effect.
    pub thresholds: InlineThresholds,
    /// Whether replies may use Send With Invalidate.
    pub remote_invalidation: bool,
    /// Credits the peer granted to our calls (1 until the first reply).
    pub credits_granted: u32,
    /// Credits we grant to the peer's calls.
    pub credits_we_grant: u32,
    /// Our calls in flight (Version Two optional CALLs awaiting their
    /// answer included: each holds a credit).
    pub calls_in_flight: u32,
    /// The Version Two optional features this end supports, with their
    /// state on this connection.
    pub features: Vec<FeatureInfo>,
}

impl ConnectionInfo {
    /// The feature of `opttype`, if this end supports it.
    pub fn feature(&self, opttype: rpcrdma_wire::OptionType) -> Option<&FeatureInfo> {
        self.features.iter().find(|f| f.opttype == opttype)
    }
}

impl<P: ProtectionDomain> Engine<P> {
    /// An engine for a connection that has just been established.
    ///
    /// `peer_private_data` is what the peer sent in the connection
    /// manager exchange (searched for the RFC 8797 message anywhere in it;
    /// absent or malformed means the defaults, RFC 8797 §5). `caps` are the
    /// queue pair's negotiated sizes. The engine queues its receive buffers
    /// at once: post them ([`Engine::poll_recv`]) before anything else.
    //= rfc8797#section-4
    //# An implementation of the extension described in this document MUST be
    //# prepared for the settings to change upon a reconnection.
    pub fn new(
        cfg: EngineConfig,
        pd: P,
        caps: QpCaps,
        peer_private_data: Option<&[u8]>,
    ) -> Result<Self, crate::ConfigError> {
        let budget = MemoryBudget::new(cfg.max_shared_memory);
        Self::with_budget(cfg, pd, caps, peer_private_data, budget)
    }

    /// Like [`Engine::new`], drawing from `budget`, which other connections
    /// may share (a listener hands one budget to every connection it
    /// accepts, so all of them together stay within its limit; spec note
    /// E21). [`EngineConfig::max_shared_memory`] is not used then.
    pub fn with_budget(
        cfg: EngineConfig,
        pd: P,
        caps: QpCaps,
        peer_private_data: Option<&[u8]>,
        budget: MemoryBudget,
    ) -> Result<Self, crate::ConfigError> {
        cfg.validate()?;
        let local_pd = cfg.private_data();
        let peer_pd = peer_private_data.and_then(|b| PrivateData::find(b).ok().map(|(_, p)| p));
        let remote_inv = peer_pd.is_some_and(|peer| {
            rpcrdma_wire::private_data::remote_invalidation_allowed(&local_pd, &peer)
        });
        let (req_max, grant) = crate::config::credit_split(&cfg, caps.recv_depth);
        let recv_target = req_max + grant;
        let version = match cfg.role {
            Role::Client => VersionState::Probing,
            Role::Server => VersionState::Unknown,
        };
        let mut decode_cfg = DecodeConfig {
            versions: cfg.versions,
            limits: cfg.limits,
            error_credits: ErrorCredits::Grant(grant.max(1)),
            ..DecodeConfig::default()
        };
        let mut features = Registry::default();
        if cfg.transport_properties {
            features.insert(Box::new(TransportPropertiesFeature::new()));
        }
        for slot in &features.slots {
            decode_cfg.options.insert(slot.feature.opttype());
        }
        let mut e = Self {
            recv_size: cfg.recv_buffer_size(),
            spare: VecDeque::new(),
            budget,
            mem_used: 0,
            reads_ahead: 0,
            mem_blocked: None,
            fixed: None,
            replying: IdMap::default(),
            hdr_arena: BytesMut::new(),
            req_enabled: cfg.role == Role::Client,
            resp_enabled: cfg.role == Role::Server,
            cfg,
            pd,
            caps,
            local_pd,
            peer_pd,
            remote_inv,
            decode_cfg,
            version,
            probe_out: false,
            thresholds: InlineThresholds { send: 0, recv: 0 },
            adjustments: Adjustments::default(),
            deadline: None,
            last_now: None,
            stall_since: None,
            next_wr: 1,
            wrs: IdMap::default(),
            recv_ids: VecDeque::new(),
            sq_busy: 0,
            sq_limit: caps.send_depth.max(1),
            sq_posted: 0,
            sq_done: 0,
            sq_signaled: VecDeque::new(),
            unsignaled_run: 0,
            sq_backlog: VecDeque::new(),
            out_send: VecDeque::new(),
            out_recv: VecDeque::new(),
            recvs_posted: 0,
            recv_target,
            events: VecDeque::new(),
            credits: Credits::new(req_max.max(1)),
            queue: VecDeque::new(),
            calls: IdMap::default(),
            next_token: 1,
            incoming: IdMap::default(),
            waiting: VecDeque::new(),
            reads: VecDeque::new(),
            reads_busy: 0,
            grant,
            features,
            opt_calls: IdMap::default(),
            next_opt_xid: 0,
            failed: None,
            stats: Stats::default(),
        };
        e.refresh_derived();
        e.top_up_receives();
        Ok(e)
    }

    // ----- getters -------------------------------------------------------

    /// Connection parameters in effect.
    pub fn info(&self) -> ConnectionInfo {
        ConnectionInfo {
            role: self.cfg.role,
            version: match self.version {
                VersionState::Settled(v) => Some(v),
                _ => None,
            },
            local_private_data: self.local_pd,
            peer_private_data: self.peer_pd,
            thresholds: self.thresholds(),
            remote_invalidation: self.remote_inv,
            credits_granted: self.credits.granted(),
            credits_we_grant: self.grant,
            calls_in_flight: self.credits.in_flight(),
            features: self.features.infos(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The connection's error, once it has failed.
    #[inline]
    pub fn error(&self) -> Option<&EngineError> {
        self.failed.as_ref()
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// The memory budget this connection draws from.
    pub fn memory_budget(&self) -> &MemoryBudget {
        &self.budget
    }

    /// Keeps `charge` — the connection's fixed cost
    /// ([`EngineConfig::connection_cost`]), charged to the shared budget
    /// by the listener that accepted it — until the connection ends: it
    /// is given back when the engine fails or is closed, or dropped. A
    /// failed engine gives it back at once.
    pub fn hold_charge(&mut self, charge: crate::budget::Charge) {
        if self.failed.is_none() {
            self.fixed = Some(charge);
        }
    }

    /// Octets this connection holds against its budget now: the Read
    /// sinks of the peer's calls, the room reserved for their replies
    /// until answered, and reply data whose Send has not completed (idle
    /// pooled buffers are the budget's, not counted here). Never more
    /// than [`EngineConfig::max_memory`].
    pub fn memory_in_use(&self) -> u64 {
        self.mem_used
    }

    /// `Some(epoch)` when the oldest waiting call needs memory that other
    /// connections sharing the budget hold: the driver waits for
    /// [`MemoryBudget::poll_released`]`(epoch, ..)` and then calls
    /// [`Engine::retry_admission`].
    #[inline]
    pub fn memory_wait(&self) -> Option<u64> {
        if self.failed.is_some() || self.waiting.is_empty() {
            return None;
        }
        self.mem_blocked
    }

    /// Whether this client sent its Version Two probe and nothing answered
    /// it: no reply, no `RDMA_ERROR`, before the connection failed (or
    /// yet). draft-cel-01 §5.2 lets a requester then assume the responder
    /// lacks Version Two ("if the initial negotiation message is lost or
    /// dropped"): a responder that drops the connection on a version it
    /// does not know would otherwise see the probe on every reconnection
    /// (spec note E25). The transport's `VersionMemory` asks this when a
    /// connection ends.
    pub fn probe_unanswered(&self) -> bool {
        self.probe_out
    }

    /// Whether nothing is in flight or queued in either direction.
    pub fn is_idle(&self) -> bool {
        self.calls.is_empty()
            && self.queue.is_empty()
            && self.incoming.is_empty()
            && self.sq_busy == 0
            && self.sq_backlog.is_empty()
            && self.out_send.is_empty()
            && self.opt_calls.is_empty()
    }

    /// The size of each posted receive buffer.
    pub(crate) fn recv_buffer_len(&self) -> u32 {
        u32::try_from(self.recv_size).unwrap_or(u32::MAX)
    }

    /// The version messages are sent in now.
    pub(crate) fn send_version(&self) -> Option<u32> {
        match self.version {
            VersionState::Settled(v) => Some(v),
            VersionState::Probing => Some(self.cfg.client_version.first_version()),
            VersionState::Unknown => None,
        }
    }

    /// The largest Send this end posts: [`EngineConfig::inline_send`],
    /// raised to the Version Two default threshold on a Version Two
    /// connection without RFC 8797 private data, where both ends use 4096
    /// bytes for both directions whatever they would otherwise choose
    /// (draft-cel-01 §2.3, §5.1; spec note E15). A Send is a gather list,
    /// so no buffer of ours depends on it.
    pub(crate) fn send_size(&self) -> u32 {
        match (self.peer_pd, self.send_version()) {
            (None, Some(2)) => self
                .cfg
                .inline_send
                .max(rpcrdma_wire::v2::DEFAULT_INLINE_THRESHOLD),
            _ => self.cfg.inline_send,
        }
    }

    /// The inline thresholds in effect (RFC 8797 §4.2 when the peer sent
    /// private data, otherwise the version's default; while a Version Two
    /// probe is outstanding, at most 1024 bytes may be sent, draft §5).
    pub fn thresholds(&self) -> InlineThresholds {
        debug_assert_eq!(
            (self.thresholds, self.adjustments),
            (self.compute_thresholds(), self.features.adjustments()),
            "derived connection values are stale (refresh_derived not called after a change)"
        );
        self.thresholds
    }

    /// Recomputes the values derived from the version, the private data
    /// and the features (their states and adjustments): called wherever
    /// one of them changes.
    //= draft-cel-01#section-5.2
    //# To permit inline threshold values to change during negotiation of
    //# protocol version, RPC-over-RDMA Version Two implementations MUST allow
    //# inline threshold values to change without triggering a connection
    //# loss.
    pub(crate) fn refresh_derived(&mut self) {
        self.adjustments = self.features.adjustments();
        self.thresholds = self.compute_thresholds();
    }

    fn compute_thresholds(&self) -> InlineThresholds {
        let mut t = match self.peer_pd {
            Some(peer) => InlineThresholds::derive(&self.local_pd, &peer),
            None => {
                //= rfc5666bis-04#section-4.3.3
                //# In the absence of such a mechanism, senders MUST assume a
                //# receiver's inline threshold is 1024 bytes.
                //= draft-cel-01#section-2.3
                //# In the absense of such a mechanism, senders MUST assume a
                //# receiver's inline threshold is 4096 bytes.
                let d = match self.send_version() {
                    Some(2) => rpcrdma_wire::v2::DEFAULT_INLINE_THRESHOLD,
                    _ => rpcrdma_wire::v1::DEFAULT_INLINE_THRESHOLD,
                };
                InlineThresholds {
                    send: self.send_size().min(d),
                    recv: (self.recv_size as u32).min(d),
                }
            }
        };
        // Version Two optional features that learned the peer's sizes
        // (transport properties) replace both.
        let adj = self.features.adjustments();
        if let Some(r) = adj.peer_recv_size {
            t.send = self.send_size().min(r);
        }
        if let Some(s) = adj.peer_send_size {
            t.recv = (self.recv_size as u32).min(s);
        }
        if self.version == VersionState::Probing {
            t.send = t.send.min(rpcrdma_wire::v1::DEFAULT_INLINE_THRESHOLD);
        }
        t.recv = t.recv.min(self.recv_size as u32);
        t
    }

    // ----- outputs -------------------------------------------------------

    /// The next receive to post.
    #[inline]
    pub fn poll_recv(&mut self) -> Option<RecvWr> {
        self.out_recv.pop_front()
    }

    /// The next send-queue work request to post (in this order).
    #[inline]
    pub fn poll_send(&mut self) -> Option<SendWr> {
        self.out_send.pop_front()
    }

    /// The next event.
    #[inline]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Whether [`Engine::poll_event`] has something (a driver whose reader
    /// sleeps wakes it only then).
    #[inline]
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    // ----- inputs --------------------------------------------------------

    /// The queue pair reported that the connection ended (or the driver
    /// closes it): releases everything and fails the connection.
    pub fn close(&mut self, reason: EngineError) {
        self.fail(reason);
    }

    /// Feeds one work completion of this connection's queue pair.
    pub fn handle_completion(&mut self, now: Instant, wc: WorkCompletion) {
        let Some(kind) = self.take_wr(wc.wr_id) else {
            // An unsignaled Send reports only its failure (verbs).
            //= rfc5666bis-04#section-5.5.4
            //# If a responder is unable to construct and transmit a Reply or
            //# error message, the responder MUST close the connection to
            //# signal to the requester that a reply was lost.
            if !wc.status.is_ok() && self.failed.is_none() {
                if wc.status != WcStatus::WrFlush {
                    tracing::warn!(opcode = ?wc.opcode, status = ?wc.status, "work request failed");
                }
                self.fail(EngineError::WorkRequest {
                    opcode: wc.opcode,
                    status: wc.status,
                });
            } else {
                tracing::debug!(wr_id = wc.wr_id, "completion for an unknown work request");
            }
            return;
        };
        if kind == Wr::Recv {
            self.recvs_posted = self.recvs_posted.saturating_sub(1);
        } else {
            // A reply's Send completed (or was flushed): the provider holds
            // none of its data any more, so its call's memory goes back.
            if let Some(held) = self.replying.remove(&wc.wr_id) {
                self.release_held(held);
            }
            self.sq_completed(wc.wr_id);
            if let Wr::Read { .. } = kind {
                self.reads_busy = self.reads_busy.saturating_sub(1);
            }
            // Progress: the stall watch starts over.
            self.stall_since = Some(now);
        }
        if self.failed.is_some() {
            return;
        }
        if !wc.status.is_ok() {
            if wc.status != WcStatus::WrFlush {
                tracing::warn!(opcode = ?wc.opcode, status = ?wc.status, "work request failed");
            }
            self.fail(EngineError::WorkRequest {
                opcode: wc.opcode,
                status: wc.status,
            });
            return;
        }
        match kind {
            Wr::Recv => {
                // The buffer comes back with its posted length; the message
                // is its first `byte_len` octets. The whole buffer is kept to
                // be posted again (without clearing) once the upper layer
                // has dropped every view of the message.
                let full = wc.buf.unwrap_or_default().freeze();
                let len = (wc.byte_len as usize).min(full.len());
                self.stats.inline_received_bytes += len as u64;
                self.on_receive(now, full.slice(..len), wc.invalidated_rkey);
                if self.spare.len() < 2 * self.recv_target as usize {
                    self.spare.push_back(full);
                }
                self.top_up_receives();
            }
            Wr::Read { token } => self.on_read_done(token),
            Wr::Send | Wr::Write => {}
        }
        self.pump_reads();
        self.pump_sq();
        self.pump_admission();
        self.top_up_receives();
        self.pump_calls(now);
        self.note_time(now);
    }

    /// Invalidates and deregisters a region, giving its buffer back. If
    /// the provider cannot, the peer may still reach the memory: the
    /// connection is failed at once to fence it (RFC 8166 §5.5.4), before
    /// the call it belonged to completes (callers check `failed`).
    pub(crate) fn drop_mr(&mut self, mr: P::Mr) -> Option<MrBuffer> {
        let key = mr.rkey();
        match mr.deregister() {
            Ok(b) => {
                self.stats.deregistrations += 1;
                Some(b)
            }
            Err(error) => {
                tracing::warn!(key, %error, "a memory region could not be invalidated; closing the connection");
                //= rfc5666bis-04#section-5.5.4
                //# After a requester has received a reply, if it is unable to
                //# invalidate a memory region due to an unrecoverable
                //# problem, the requester MUST close the connection to fence
                //# that memory from the responder before the associated RPC
                //# transaction is complete.
                self.fail(EngineError::InvalidationFailed { key, error });
                None
            }
        }
    }

    /// Ends the connection (sticky).
    pub(crate) fn fail(&mut self, err: EngineError) {
        if self.failed.is_some() {
            return;
        }
        tracing::debug!(error = %err, "connection failed");
        self.failed = Some(err.clone());
        self.deadline = None;
        let calls: Vec<_> = self.calls.drain().map(|(_, c)| c).collect();
        for c in calls {
            self.release_call_mrs(c);
        }
        let incoming: Vec<_> = self.incoming.drain().map(|(_, c)| c).collect();
        for c in incoming {
            for p in c.more.map(|m| m.pulls).unwrap_or_default() {
                if let Some(mr) = p.mr {
                    self.drop_mr(mr);
                }
            }
        }
        // Every octet this connection held goes back to the budget, its
        // fixed cost too.
        self.replying.clear();
        self.budget.release(std::mem::take(&mut self.mem_used));
        self.reads_ahead = 0;
        self.fixed = None;
        self.mem_blocked = None;
        self.waiting.clear();
        self.queue.clear();
        self.opt_calls.clear();
        self.reads.clear();
        self.sq_backlog.clear();
        self.out_send.clear();
        self.out_recv.clear();
        self.events.push_back(Event::Fatal(err));
    }

    pub(crate) fn check_alive(&self) -> Result<(), ApiError> {
        match &self.failed {
            Some(e) => Err(ApiError::Failed(e.clone())),
            None => Ok(()),
        }
    }
}

impl<P: ProtectionDomain> Drop for Engine<P> {
    /// A connection dropped without being closed still gives its memory
    /// back to a shared budget.
    fn drop(&mut self) {
        self.budget.release(std::mem::take(&mut self.mem_used));
    }
}
