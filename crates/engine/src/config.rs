//! Connection configuration: role, versions, credits, inline sizes, limits.

use std::time::Duration;

use rpcrdma_wire::{Limits, PrivateData, VersionRange};

/// Default [`EngineConfig::max_memory`]: 64 MiB per connection.
pub const DEFAULT_MAX_MEMORY: u64 = 64 << 20;
/// Default [`EngineConfig::max_shared_memory`]: 512 MiB for a server.
pub const DEFAULT_MAX_SHARED_MEMORY: u64 = 512 << 20;
/// Default [`EngineConfig::inline_send`] and [`EngineConfig::inline_recv`]:
/// 4096 bytes, the inline size the Linux kernel's RPC-over-RDMA client and
/// server advertise, and the Version Two default.
pub const DEFAULT_INLINE: u32 = 4096;
/// Default [`EngineConfig::read_window`]: 1 MiB per connection.
pub const DEFAULT_READ_WINDOW: u64 = 1 << 20;
/// What [`EngineConfig::connection_cost`] allows for a connection's queue
/// pair, completion queue, tasks and tables besides its buffers: 64 KiB
/// (about 40 KiB measured with the software iWARP provider,
/// `docs/engine.md`).
pub const CONNECTION_OVERHEAD: u64 = 64 << 10;

/// Which end of the connection this engine is.
///
/// The client (the active side, RFC 8167 §2) is the forward-direction
/// requester; the server is the forward-direction responder. Both ends can
/// also act in the reverse direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The ONC RPC client: establishes the connection, sends forward calls.
    Client,
    /// The ONC RPC server: accepts the connection, answers forward calls.
    Server,
}

/// Which RPC-over-RDMA version a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum VersionPolicy {
    /// Send the first call as Version Two and fall back to the highest
    /// version the responder offers in its `ERR_VERS` (draft-cel-01 §5).
    #[default]
    Negotiate,
    /// Version One only.
    V1,
    /// Version Two only: an `ERR_VERS` fails the connection.
    V2,
}

impl VersionPolicy {
    /// The version of the first message.
    pub fn first_version(self) -> u32 {
        match self {
            Self::V1 => 1,
            Self::V2 | Self::Negotiate => 2,
        }
    }
}

/// The configuration of one RPC-over-RDMA connection.
///
/// Defaults follow the Linux kernel: a client asks for 128 credits, a
/// server grants 64, each end advertises 4096-byte inline sizes in its
/// RFC 8797 private data (as Linux's `xprtrdma` and `svcrdma` do, and the
/// Version Two default, draft-cel-01 §2.3), and remote invalidation is
/// offered. A peer that sends no private data gets the Version One
/// default of 1024 bytes (RFC 8166 §3.3.3) whatever we advertise.
///
/// ```
/// use rpcrdma_engine::{EngineConfig, Role};
/// let c = EngineConfig::client();
/// assert_eq!((c.role, c.credits_request), (Role::Client, 128));
/// let s = EngineConfig::server();
/// assert_eq!(s.credits_grant, 64);
/// assert_eq!(s.private_data().recv_size.bytes(), 4096);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineConfig {
    /// Client or server.
    pub role: Role,
    /// Versions this end accepts (a server answers others with `ERR_VERS`
    /// carrying this range).
    pub versions: VersionRange,
    /// The version a client starts with (ignored by a server).
    pub client_version: VersionPolicy,
    /// Credits a requester asks for in each call (RFC 8166 §3.3.1); also
    /// the most it will ever use, whatever a responder grants. A client
    /// asks for fewer when its receive queue cannot hold a receive for each
    /// of them besides those it keeps for reverse-direction calls
    /// ([`Self::backchannel_credits`], kept first, RFC 8167 §4.3.1): with
    /// a queue of 128, 120 (spec note E29).
    pub credits_request: u32,
    /// Credits a responder grants in each reply; never zero.
    pub credits_grant: u32,
    /// Reverse-direction credits: on a client, how many reverse-direction
    /// calls it can take at once (and receive buffers it adds for them,
    /// RFC 8167 §4.3.1; within its receive queue less one, before its
    /// forward credits); on a server, how many it asks for (within what its
    /// receive queue holds beyond its grant). Zero disables the reverse
    /// direction.
    //= rfc5666bis-04#section-7.2.1
    //# The backward direction credit value MAY be different than the forward
    //# direction credit value.
    //= rfc8167#section-4.1
    //# The reverse-direction credit value MAY be different than the
    //# forward-direction credit value.
    pub backchannel_credits: u32,
    /// Our largest Send (RFC 8797 Send Size). 1024..=262144.
    pub inline_send: u32,
    /// Our receive buffer size (RFC 8797 Receive Size). 1024..=262144.
    pub inline_recv: u32,
    /// Whether we offer remote invalidation (RFC 8797 R bit).
    pub remote_invalidate: bool,
    /// Largest RPC message (call or reply Payload stream, or one chunk)
    /// this end accepts or provisions through chunks.
    pub max_message: u32,
    /// How long a client waits for the answer to its first Version Two
    /// message before it treats the responder as Version One only.
    pub negotiation_timeout: Duration,
    /// Chunk-list limits for decoding.
    pub limits: Limits,
    /// Most calls a requester queues while waiting for credits.
    pub max_queued_calls: usize,
    /// Most memory one connection holds for its peer's calls: the sinks of
    /// their Read chunks, the room reserved for their replies (their Write
    /// and Reply chunks' lengths, at most `max_message` a call) and the
    /// reply data whose Send has not completed (spec note E21,
    /// `docs/engine.md`). A call whose sinks and reply room do not fit
    /// waits, holding its credit; one that can never fit is refused with
    /// an RPC-level error. Replies that go inline (calls without Write or
    /// Reply chunks) are not counted: at most one inline Send per credit,
    /// the connection's fixed cost. Default 64 MiB.
    pub max_memory: u64,
    /// How far a responder reads ahead: the Read chunk data of admitted
    /// calls not yet handed up (their RDMA Reads posted or queued) stays
    /// within this window. A further call with Read chunks waits, holding
    /// its credit, until earlier calls' data is in; a connection with
    /// nothing being pulled admits its oldest call whatever its size (up
    /// to [`Self::max_memory`]), and calls without Read chunks are never
    /// held by it. Data pulled megabytes ahead of the work that consumes it
    /// has left the CPU's caches when it is used; the next call's Reads
    /// still overlap the work on the calls handed up before it
    /// (`docs/engine.md`, `docs/performance.md`). `u64::MAX` turns it off.
    /// Default [`DEFAULT_READ_WINDOW`] (1 MiB); `rpcrdma serve
    /// --read-window auto` gives 2 MiB to a process that may run on
    /// several CPUs, where the next call's data can follow without
    /// waiting for its Read Request.
    pub read_window: u64,
    /// Most memory all the connections sharing one budget hold together
    /// (a listener's connections; the idle sink buffers kept for reuse
    /// count too): the limit of the budget [`crate::Engine::new`] creates,
    /// and the one a listener creates for all its connections. Default
    /// 512 MiB.
    pub max_shared_memory: u64,
    /// How long work may sit on the send queue (RDMA Reads of the peer's
    /// chunks, Writes, Sends) without any completing before the
    /// connection is closed: a peer that stops answering our RDMA Reads or
    /// reading its end would otherwise hold our memory for ever (spec note
    /// E22). Detected between one and two times this after the last
    /// progress. Default 10 s.
    pub stall_timeout: Duration,
    /// Whether this end supports the experimental Version Two transport
    /// properties feature (`docs/v2-transport-properties.md`): a client
    /// offers its properties once Version Two is settled, a server answers
    /// with its own. Off: neither sent nor accepted (a peer's offer draws
    /// `RDMA2_ERR_INVAL_OPTION`). On by default.
    pub transport_properties: bool,
}

impl EngineConfig {
    /// Defaults for a client.
    pub fn client() -> Self {
        Self {
            role: Role::Client,
            ..Self::server()
        }
    }

    /// Defaults for a server.
    pub fn server() -> Self {
        Self {
            role: Role::Server,
            versions: VersionRange::V1_AND_V2,
            client_version: VersionPolicy::Negotiate,
            credits_request: 128,
            credits_grant: 64,
            backchannel_credits: 8,
            inline_send: DEFAULT_INLINE,
            inline_recv: DEFAULT_INLINE,
            remote_invalidate: true,
            max_message: 16 * 1024 * 1024 + 64 * 1024,
            negotiation_timeout: Duration::from_secs(5),
            limits: Limits::default(),
            max_queued_calls: 4096,
            max_memory: DEFAULT_MAX_MEMORY,
            read_window: DEFAULT_READ_WINDOW,
            stall_timeout: Duration::from_secs(10),
            max_shared_memory: DEFAULT_MAX_SHARED_MEMORY,
            transport_properties: true,
        }
    }

    /// The RFC 8797 private data this end advertises.
    pub fn private_data(&self) -> PrivateData {
        PrivateData::new(self.inline_send, self.inline_recv, self.remote_invalidate)
    }

    /// Size of each posted receive buffer: our advertised Receive Size, and
    /// at least the Version Two default threshold when Version Two is
    /// accepted (a Version Two peer without RFC 8797 assumes 4096,
    /// draft-cel-01 §2.3).
    pub fn recv_buffer_size(&self) -> usize {
        //= draft-cel-01#section-2.3
        //# RPC-over-RDMA Version Two receiver implementations MUST support an
        //# inline threshold of 4096 bytes, but MAY support larger inline
        //# threshold values.
        let v2_floor = if self.versions.high() >= 2 {
            rpcrdma_wire::v2::DEFAULT_INLINE_THRESHOLD
        } else {
            0
        };
        self.inline_recv.max(v2_floor) as usize
    }

    /// The memory one connection of this configuration holds whatever
    /// its peer does — its fixed cost, outside [`Self::max_memory`]: its
    /// receive buffers (one per credit granted plus one per call it may
    /// have in flight, RFC 8167 §4.3, within `caps.recv_depth`, each
    /// [`Self::recv_buffer_size`]), one inline reply per credit granted at
    /// the largest Send it may post ([`Self::inline_send`], or the
    /// Version Two default of 4096 when Version Two is accepted: the
    /// replies of calls without Write or Reply chunks, spec note E21), and
    /// [`CONNECTION_OVERHEAD`]. A listener charges it to the shared budget
    /// at accept and refuses a connection that does not fit.
    ///
    /// ```
    /// use rpcrdma_engine::{EngineConfig, CONNECTION_OVERHEAD};
    /// use rpcrdma_verbs::QpCaps;
    /// let s = EngineConfig::server();
    /// // 64 credits granted, 8 reverse-direction calls: 72 receives of
    /// // 4 KiB, 64 inline replies of up to 4 KiB.
    /// assert_eq!(
    ///     s.connection_cost(QpCaps::default()),
    ///     72 * 4096 + 64 * 4096 + CONNECTION_OVERHEAD
    /// );
    /// ```
    pub fn connection_cost(&self, caps: rpcrdma_verbs::QpCaps) -> u64 {
        let (in_flight, grant) = credit_split(self, caps.recv_depth);
        let receives = u64::from(in_flight + grant) * self.recv_buffer_size() as u64;
        let v2_floor = if self.versions.high() >= 2 {
            rpcrdma_wire::v2::DEFAULT_INLINE_THRESHOLD
        } else {
            0
        };
        let replies = u64::from(grant) * u64::from(self.inline_send.max(v2_floor));
        receives + replies + CONNECTION_OVERHEAD
    }

    /// Checks the values; the error names the field to fix.
    pub fn validate(&self) -> Result<(), crate::ConfigError> {
        use crate::ConfigError as E;
        //= rfc5666bis-04#section-4.3.1
        //# The granted value MUST NOT be zero, since such a value would
        //# result in deadlock.
        if self.credits_grant == 0 {
            return Err(E::ZeroGrant);
        }
        if self.credits_request == 0 {
            return Err(E::ZeroRequest);
        }
        for (name, v) in [
            ("inline_send", self.inline_send),
            ("inline_recv", self.inline_recv),
        ] {
            //= rfc5666bis-04#section-4.3.3
            //# Receiver implementations MUST support an inline threshold of
            //# 1024 bytes, but MAY support larger inline thresholds values.
            if !(1024..=262_144).contains(&v) {
                return Err(E::InlineSize {
                    field: name,
                    value: v,
                });
            }
        }
        for (name, v) in [
            ("limits.max_read_segments", self.limits.max_read_segments),
            (
                "limits.max_segments_per_chunk",
                self.limits.max_segments_per_chunk,
            ),
        ] {
            if v == 0 {
                return Err(E::ZeroLimit { field: name });
            }
        }
        for (name, v) in [
            ("max_memory", self.max_memory),
            ("max_shared_memory", self.max_shared_memory),
            ("read_window", self.read_window),
        ] {
            if v == 0 {
                return Err(E::ZeroLimit { field: name });
            }
        }
        if self.role == Role::Client
            && !self.versions.contains(self.client_version.first_version())
            && self.client_version != VersionPolicy::Negotiate
        {
            return Err(E::VersionPolicy);
        }
        Ok(())
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self::client()
    }
}

/// How many calls we may have in flight and how many we grant, within a
/// receive queue of `recv_depth` (RFC 8167 §4.3: one receive per call in
/// flight plus one per credit granted). On a server the forward direction
/// keeps its grant first and its reverse-direction calls get what is left
/// (§4.3.2: no fewer receives than the credits it grants). On a client the
/// reverse-direction credits are the minimum it posts and each forward
/// call takes one more (§4.3.1): its grant is kept first, and it asks for
/// only as many forward credits as it has receives left for (spec note
/// E29).
pub(crate) fn credit_split(cfg: &EngineConfig, recv_depth: u32) -> (u32, u32) {
    let depth = recv_depth.max(2);
    let bc = cfg.backchannel_credits;
    match cfg.role {
        Role::Client => {
            let bc = bc.min(depth - 1);
            let req = cfg.credits_request.min(depth - bc).max(1);
            (req, bc)
        }
        Role::Server => {
            let grant = cfg.credits_grant.min(depth - 1).max(1);
            (bc.min(depth - grant), grant)
        }
    }
}
