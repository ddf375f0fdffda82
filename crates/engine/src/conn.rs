//! The connection engine: state shared by both directions, the input and
//! output queues, and the receive dispatch.

use std::collections::VecDeque;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use rpcrdma_verbs::{
    MemoryRegion, MrBuffer, ProtectionDomain, QpCaps, RecvWr, SendOp, SendWr, Sge, WcStatus,
    WorkCompletion,
};
use rpcrdma_wire::v2::Direction;
use rpcrdma_wire::{
    decode_owned, decode_plain, ChunkLists, DecodeConfig, ErrorBody, ErrorCredits, Header,
    InlineThresholds, Message, PrivateData, Proc,
};
use rpcrdma_xdr::{Encode, Payload};

use crate::budget::MemoryBudget;
use crate::config::{EngineConfig, Role};
use crate::credits::Credits;
use crate::error::{ApiError, EngineError};
use crate::event::{Event, MessageForm};
use crate::features::{Adjustments, FeatureInfo, Registry, TransportPropertiesFeature};
use crate::hdr;
use crate::marshal::{Provided, ReplyHints};
use crate::optional::OptCall;
use crate::stats::Stats;

/// Tables keyed by ids this end chose (work request ids, our XIDs, tokens):
/// the Fx hasher, several times cheaper than SipHash; the peer can look
/// keys up but never choose which are inserted, so collisions cannot be
/// forced.
pub(crate) type IdMap<K, V> = std::collections::HashMap<K, V, rustc_hash::FxBuildHasher>;

/// Capacity of each block of the header arena.
const HDR_ARENA_BLOCK: usize = 4096;

/// A call waiting to be sent.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub(crate) xid: u32,
    pub(crate) payload: Payload,
    pub(crate) hints: ReplyHints,
}

/// One of our calls, sent and awaiting its reply.
#[derive(Debug)]
pub(crate) struct OutCall<Mr> {
    pub(crate) version: u32,
    pub(crate) form: MessageForm,
    /// Its registrations; `None` when it has none (a Short call without
    /// Write or Reply chunks: nothing allocated for it, and the table
    /// entry stays small).
    pub(crate) regs: Option<Box<CallRegs<Mr>>>,
    /// Abandoned by the upper layer: registrations already released, the
    /// credit stays taken until the reply comes (RFC 8166 §4.3.1).
    pub(crate) released: bool,
    /// The call itself, kept for the version probe so it can be sent again
    /// in Version One after `ERR_VERS` (boxed: only the probe has one, and
    /// every other call is moved in and out of the table smaller).
    pub(crate) retry: Option<Box<Pending>>,
}

/// The memory registrations of one of our calls: its Read chunks'
/// sources, and the Write chunks and Reply chunk it provided.
#[derive(Debug)]
pub(crate) struct CallRegs<Mr> {
    pub(crate) sources: Vec<Mr>,
    pub(crate) writes: Vec<Provided<Mr>>,
    pub(crate) reply: Option<Provided<Mr>>,
}

impl<Mr> CallRegs<Mr> {
    /// `None` when there are none.
    pub(crate) fn boxed(
        sources: Vec<Mr>,
        writes: Vec<Provided<Mr>>,
        reply: Option<Provided<Mr>>,
    ) -> Option<Box<Self>> {
        if sources.is_empty() && writes.is_empty() && reply.is_none() {
            None
        } else {
            Some(Box::new(Self {
                sources,
                writes,
                reply,
            }))
        }
    }

    /// The registrations of `regs` (empty lists for `None`).
    pub(crate) fn unbox(regs: Option<Box<Self>>) -> Self {
        match regs {
            Some(r) => *r,
            None => Self {
                sources: Vec::new(),
                writes: Vec::new(),
                reply: None,
            },
        }
    }
}

/// A Read chunk being pulled.
#[derive(Debug)]
pub(crate) struct Pull<Mr> {
    pub(crate) position: u32,
    /// The chunk's length (its sink buffer may be longer).
    pub(crate) len: usize,
    pub(crate) mr: Option<Mr>,
}

/// Memory an answered call still holds until its reply's Send completes:
/// its charge against the budget and its sink buffers (returned to the
/// pool afterwards).
#[derive(Debug, Default)]
pub(crate) struct Held {
    pub(crate) charge: u64,
    pub(crate) sinks: Vec<Bytes>,
}

/// A call received from the peer, until its reply is sent.
#[derive(Debug)]
pub(crate) struct InCall<Mr> {
    pub(crate) xid: u32,
    pub(crate) version: u32,
    pub(crate) form: MessageForm,
    pub(crate) delivered: bool,
    pub(crate) inline: Bytes,
    /// Its chunks and the state of pulling them; `None` for a call
    /// without chunks that was handed up at once (the common case: the
    /// table entry stays small).
    pub(crate) more: Option<Box<InCallMore<Mr>>>,
}

impl<Mr> InCall<Mr> {
    /// Its chunks and pulling state, created empty on first use.
    pub(crate) fn more(&mut self) -> &mut InCallMore<Mr> {
        self.more.get_or_insert_with(Box::default)
    }
}

/// What a received call with chunks (or one that waited for admission)
/// carries besides its inline bytes.
#[derive(Debug)]
pub(crate) struct InCallMore<Mr> {
    pub(crate) writes: Vec<rpcrdma_wire::WriteChunk>,
    pub(crate) reply: Option<rpcrdma_wire::WriteChunk>,
    /// STags of the call a Send With Invalidate may name (RFC 8797 §4.1).
    pub(crate) rkeys: Vec<u32>,
    /// Read chunks (Position, segments) not yet pulled: the call waits
    /// for admission.
    pub(crate) groups: Vec<(u32, Vec<rpcrdma_wire::Segment>)>,
    /// Octets its Read chunks need.
    pub(crate) need: u64,
    /// Whether it had to wait for memory (counted once).
    pub(crate) waited: bool,
    /// Sink buffers found at admission, one per chunk, until registered.
    pub(crate) bufs: Vec<BytesMut>,
    /// Octets charged to this connection for it (its sink buffers).
    pub(crate) charge: u64,
    /// Its pulled sink buffers, whole, until it is answered.
    pub(crate) sinks: Vec<Bytes>,
    pub(crate) pulls: Vec<Pull<Mr>>,
    pub(crate) reads_pending: u32,
}

impl<Mr> Default for InCallMore<Mr> {
    fn default() -> Self {
        Self {
            writes: Vec::new(),
            reply: None,
            rkeys: Vec::new(),
            groups: Vec::new(),
            need: 0,
            waited: false,
            bufs: Vec::new(),
            charge: 0,
            sinks: Vec::new(),
            pulls: Vec::new(),
            reads_pending: 0,
        }
    }
}

/// The fixed fields of a received `RDMA_MSG` / `RDMA_NOMSG`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MsgHead {
    pub(crate) xid: u32,
    pub(crate) vers: u32,
    pub(crate) credits: u32,
    /// `RDMA_NOMSG` (the Payload stream is in a chunk).
    pub(crate) nomsg: bool,
}

/// What a posted work request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wr {
    Recv,
    Send,
    Write,
    Read { token: u64 },
}

/// The protocol version state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VersionState {
    /// A client before its first reply: the first call is the probe.
    Probing,
    /// A server before the first call.
    Unknown,
    /// Settled.
    Settled(u32),
}

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
    /// Octets charged to this connection: the peer's calls' Read sinks and
    /// reply data in flight (at most `cfg.max_memory`, reply data aside).
    pub(crate) mem_used: u64,
    /// The budget's epoch when the oldest waiting call last failed to get
    /// shared memory (the driver waits for a release after it).
    pub(crate) mem_blocked: Option<u64>,
    /// What each reply Send in flight holds, by work request id.
    pub(crate) replying: IdMap<u64, Held>,
    /// Where transport headers are encoded (see `push_send`).
    hdr_arena: BytesMut,
    pub(crate) events: VecDeque<Event>,

    // Requester side (our calls).
    pub(crate) credits: Credits,
    pub(crate) queue: VecDeque<Pending>,
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
        let (req_max, grant) = credit_split(&cfg, caps.recv_depth);
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
            mem_blocked: None,
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

    /// Octets this connection holds against its budget now: the Read
    /// sinks of the peer's calls and reply data whose Send has not
    /// completed (idle pooled buffers are the budget's, not counted here).
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
    pub(crate) fn refresh_derived(&mut self) {
        self.adjustments = self.features.adjustments();
        self.thresholds = self.compute_thresholds();
    }

    fn compute_thresholds(&self) -> InlineThresholds {
        let mut t = match self.peer_pd {
            Some(peer) => InlineThresholds::derive(&self.local_pd, &peer),
            None => {
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

    /// When [`Engine::handle_timeout`] must next be called.
    #[inline]
    pub fn poll_timeout(&self) -> Option<Instant> {
        // The common case, checked inline: no probe deadline, no optional
        // offer awaited, and no stall watch (it needs RDMA Reads out or
        // memory held; see `stall_watched`).
        if self.deadline.is_none()
            && self.opt_calls.is_empty()
            && self.reads_busy == 0
            && self.mem_used == 0
        {
            return None;
        }
        self.next_deadline()
    }

    /// [`Self::poll_timeout`] when some timer may be armed.
    fn next_deadline(&self) -> Option<Instant> {
        fn earlier(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        }
        let mut at = self.deadline;
        if !self.opt_calls.is_empty() {
            at = earlier(at, self.next_optional_deadline());
        }
        earlier(at, self.stall_deadline())
    }

    /// When the send-queue watch must look next (spec note E22): the end
    /// of the stall timeout counted from the last progress, or, when the
    /// queue went busy without a clock reading, a check to start counting.
    fn stall_deadline(&self) -> Option<Instant> {
        if !self.stall_watched() {
            return None;
        }
        let from = self.stall_since.or(self.last_now)?;
        Some(from + self.cfg.stall_timeout)
    }

    /// Whether the stall watch runs: work is on the send queue while the
    /// connection holds memory for the peer (its calls' Read sinks, reply
    /// data) or RDMA Reads are out. Our own calls' Sends are the RPC
    /// layer's to time out.
    fn stall_watched(&self) -> bool {
        self.failed.is_none()
            && !self.sq_signaled.is_empty()
            && (self.reads_busy > 0 || self.mem_used > 0)
    }

    /// Records the time of an input; starts the stall watch if work is on
    /// the send queue and no time has been recorded for it yet.
    pub(crate) fn note_time(&mut self, now: Instant) {
        self.last_now = Some(now);
        if self.sq_signaled.is_empty() {
            self.stall_since = None;
        } else if self.stall_since.is_none() {
            self.stall_since = Some(now);
        }
    }

    // ----- inputs --------------------------------------------------------

    /// Timer expiry. Spurious calls are harmless.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.stall_watched() {
            match self.stall_since {
                Some(t) if now >= t + self.cfg.stall_timeout => {
                    // Nothing on the send queue completed for the whole
                    // timeout: the peer stopped answering our RDMA Reads or
                    // reading its end (spec note E22).
                    tracing::warn!(
                        busy = self.sq_busy,
                        timeout = ?self.cfg.stall_timeout,
                        "send queue stalled; closing the connection"
                    );
                    self.fail(EngineError::Stalled {
                        timeout: self.cfg.stall_timeout,
                    });
                    return;
                }
                Some(_) => {}
                None => self.stall_since = Some(now),
            }
        }
        self.note_time(now);
        if let Some(d) = self.deadline {
            if now >= d {
                self.deadline = None;
                if self.version == VersionState::Probing && self.failed.is_none() {
                    self.fail(EngineError::NegotiationTimeout);
                }
            }
        }
        if self.failed.is_none() && self.optional_timeouts(now) {
            self.pump_calls(now);
        }
    }

    /// The queue pair reported that the connection ended (or the driver
    /// closes it): releases everything and fails the connection.
    pub fn close(&mut self, reason: EngineError) {
        self.fail(reason);
    }

    /// Feeds one work completion of this connection's queue pair.
    pub fn handle_completion(&mut self, now: Instant, wc: WorkCompletion) {
        let Some(kind) = self.take_wr(wc.wr_id) else {
            // An unsignaled Send reports only its failure (verbs).
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

    // ----- internals shared by both directions ---------------------------

    /// What the completed work request `wr_id` was for, if it is ours and
    /// outstanding (then no longer).
    fn take_wr(&mut self, wr_id: u64) -> Option<Wr> {
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
            SendOp::Write { .. } => self.stats.rdma_writes += 1,
            SendOp::Read { .. } => self.stats.rdma_reads += 1,
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
    fn pump_sq(&mut self) {
        while self.sq_busy < self.sq_limit {
            let Some(wr) = self.sq_backlog.pop_front() else {
                break;
            };
            self.post_sq(wr);
        }
    }

    /// Hands one work request to the driver (the send queue has room).
    #[inline]
    fn post_sq(&mut self, mut wr: SendWr) {
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
    fn sq_completed(&mut self, wr_id: u64) {
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
    pub(crate) fn push_send(&mut self, header: &Header, sges: Vec<Sge>, invalidate: Option<u32>) {
        let wr_id = self.next_wr;
        self.next_wr += 1;
        self.push_send_as(header, sges, invalidate, wr_id, false);
    }

    fn push_send_as(
        &mut self,
        header: &Header,
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

    /// Charges `n` octets that exist already (reply data) to this
    /// connection and the budget, whatever the limits.
    pub(crate) fn charge_anyway(&mut self, n: u64) {
        if n == 0 {
            // (Every reply that goes inline: no lock of a shared budget.)
            return;
        }
        self.mem_used += n;
        self.budget.force(n);
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

    /// Sends an `RDMA_ERROR`.
    pub(crate) fn send_error(&mut self, version: u32, xid: u32, body: ErrorBody) {
        let h = hdr::error(version, xid, self.grant.max(1), body);
        self.stats.rdma_errors_sent += 1;
        self.push_send(&h, Vec::new(), None);
    }

    /// Too much is waiting for the send queue: received calls wait before
    /// they are processed, and answers nobody is owed (`RDMA_ERROR`s for
    /// bad messages, `SYSTEM_ERR` for calls beyond the grant) are not sent.
    /// Receives stay posted for every credit granted whatever the backlog
    /// (RFC 8166 §3.3.1, RFC 8167 §4.3.2; spec note E14): a conforming
    /// requester never finds none.
    pub(crate) fn overloaded(&self) -> bool {
        self.sq_backlog.len() > 4 * self.sq_limit as usize + self.recv_target as usize
    }

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
                BytesMut::zeroed(self.recv_size).split_to(self.recv_size)
            });
            self.out_recv.push_back(RecvWr { wr_id, buf });
        }
    }

    /// A received buffer nobody refers to any more, for reuse. It is not
    /// cleared: a completion reports only the octets its message filled.
    fn reusable_buffer(&mut self) -> Option<BytesMut> {
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
        // Every octet this connection held goes back to the budget.
        self.replying.clear();
        self.budget.release(std::mem::take(&mut self.mem_used));
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

    // ----- receive dispatch ----------------------------------------------

    fn on_receive(&mut self, now: Instant, mut buf: Bytes, invalidated: Option<u32>) {
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
        let msg = match decode_owned(buf, &self.decode_cfg) {
            Ok(m) => m,
            Err(rej) => {
                self.stats.bad_messages += 1;
                tracing::debug!(error = %rej.error, "rejected a received message");
                if self.overloaded() {
                    // A peer flooding us with bad messages while our sends
                    // back up gets no answers (E14).
                    self.stats.answers_dropped += 1;
                    return;
                }
                if let Some(reply) = rej.reply() {
                    self.stats.rdma_errors_sent += 1;
                    let h = hdr::error(reply.vers, reply.xid, reply.credits, reply.body);
                    self.push_send(&h, Vec::new(), None);
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

    fn note_invalidation(&mut self, invalidated: Option<u32>) {
        if let Some(key) = invalidated {
            self.stats.remote_invalidations += 1;
            tracing::trace!(key, "peer invalidated a region");
        }
    }

    /// An `RDMA_MSG`/`RDMA_NOMSG` goes to the responder or the requester
    /// side by its direction.
    fn dispatch_msg(
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
    fn direction_of(&self, msg: &Message) -> Option<Direction> {
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
    fn on_error_message(&mut self, msg: &Message) {
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

/// How many calls we may have in flight and how many we grant, within a
/// receive queue of `recv_depth` (RFC 8167 §4.3: one receive per call in
/// flight plus one per credit granted). The forward direction keeps its
/// share first; the reverse direction gets what is left.
pub(crate) fn credit_split(cfg: &EngineConfig, recv_depth: u32) -> (u32, u32) {
    let depth = recv_depth.max(2);
    let bc = cfg.backchannel_credits;
    match cfg.role {
        Role::Client => {
            let req = cfg.credits_request.min(depth - 1).max(1);
            (req, bc.min(depth - req))
        }
        Role::Server => {
            let grant = cfg.credits_grant.min(depth - 1).max(1);
            (bc.min(depth - grant), grant)
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
