//! The table of sessions (RFC 8881 §2.10): each session's channels, slots
//! and their cached replies, and its backchannel, with the types the
//! client records share (the connection ID, channel attributes and what
//! CREATE_SESSION granted). The operations on them (CREATE_SESSION,
//! SEQUENCE, BIND_CONN_TO_SESSION, ...) are in `sessions.rs`.

use super::ids::{ClientId, SessionId};

/// A connection, as the service names it (the ONC RPC connection's id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnId(pub u64);

/// A channel's attributes (`channel_attrs4`, without the RDMA IRD).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChannelAttrs {
    /// `ca_headerpadsize`.
    pub header_pad: u32,
    /// `ca_maxrequestsize`.
    pub max_request: u32,
    /// `ca_maxresponsesize`.
    pub max_response: u32,
    /// `ca_maxresponsesize_cached`.
    pub max_response_cached: u32,
    /// `ca_maxoperations`.
    pub max_ops: u32,
    /// `ca_maxrequests`: the slots.
    pub max_requests: u32,
}

/// What CREATE_SESSION granted (also its cached reply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionGrant {
    /// The new session.
    pub session: SessionId,
    /// The CREATE_SESSION sequence id it answered.
    pub sequence: u32,
    /// Whether the connection is bound as the backchannel too
    /// (`CREATE_SESSION4_FLAG_CONN_BACK_CHAN`).
    pub back_channel: bool,
    /// The fore channel's attributes.
    pub fore: ChannelAttrs,
    /// The back channel's attributes.
    pub back: ChannelAttrs,
}

/// Where a session's backchannel stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Back {
    /// No connection bound for callbacks.
    None,
    /// A connection bound, its CB_NULL probe not answered yet.
    Probing(ConnId),
    /// A connection that answered.
    Up(ConnId),
    /// A connection that did not answer.
    Down(ConnId),
}

/// One slot.
#[derive(Debug, Clone)]
pub(crate) struct Slot<R> {
    pub(super) seqid: u32,
    pub(super) busy: bool,
    /// `None`: never used; `Some(None)`: last reply not cached.
    pub(super) reply: Option<Option<R>>,
    /// Octets of the cached reply.
    pub(super) cached: usize,
}

/// One session.
#[derive(Debug)]
pub(crate) struct Session<R> {
    pub(crate) client: ClientId,
    pub(crate) fore: ChannelAttrs,
    pub(crate) back_attrs: ChannelAttrs,
    pub(crate) cb_program: u32,
    pub(super) slots: Vec<Slot<R>>,
    pub(super) conns: Vec<ConnId>,
    pub(crate) back: Back,
    /// The sequence id of the backchannel's slot 0 (CB_SEQUENCE).
    pub(crate) cb_seqid: u32,
}
