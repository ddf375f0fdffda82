//! Version Two optional features (draft-cel-01 §3.1, §3.3, §4.2.2): the
//! registry of `RDMA2_OPTIONAL` types this end supports and the trait each
//! of them implements.
//!
//! The engine owns the protocol mechanics of every feature, so a new one
//! plugs in without touching the receive dispatch:
//!
//! * **Decoding.** Every registered [`OptionType`] goes into the decoder's
//!   [`rpcrdma_wire::DecodeConfig::options`]; any other type is answered by
//!   the decoder's verdict, `RDMA2_ERR_INVAL_OPTION` with the message's XID
//!   (§3.1), and never reaches a feature.
//! * **Requester side.** Once the connection runs Version Two, the client
//!   asks each feature once for an offer ([`OptionalFeature::offer`]) and
//!   sends it as `RDMA2_OPTIONAL` with `rdma_optdir` CALL, an XID of its
//!   call XID space, and one credit held until the answer arrives (§4.2.2).
//!   The answer is a REPLY ([`OptionalFeature::on_reply`]), or an
//!   `RDMA2_ERROR`: `RDMA2_ERR_INVAL_OPTION` marks the feature
//!   [`FeatureState::Unsupported`] for the connection and it is never sent
//!   again.
//! * **Responder side.** A CALL of a registered type goes to
//!   [`OptionalFeature::on_call`]; its result is sent back as a REPLY with
//!   the same XID, its error as `RDMA2_ERROR` `RDMA2_ERR_BAD_HEADER`.
//! * **Effects.** While a feature is [`FeatureState::Active`] the engine
//!   applies its [`Adjustments`] (inline thresholds, the limits it respects
//!   when building chunk lists).
//!
//! The one feature defined here is [`TransportPropertiesFeature`]
//! (`docs/v2-transport-properties.md`).

use std::fmt;

use bytes::Bytes;
use rpcrdma_wire::{ErrCode, Limits, OptionType};

use crate::config::Role;

mod transport_properties;

pub use transport_properties::{
    TransportProperties, TransportPropertiesFeature, TRANSPORT_PROPERTIES, TRANSPORT_PROPERTIES_LEN,
};

/// What a feature knows about this end of the connection when it builds or
/// answers an `RDMA2_OPTIONAL` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct FeatureContext {
    /// This end's role.
    pub role: Role,
    /// The settled version, if any.
    pub version: Option<u32>,
    /// The size of each receive buffer this end posts (the largest message
    /// it can take in one Send).
    pub recv_buffer_size: u32,
    /// The largest Send this end posts (`EngineConfig::inline_send`, at
    /// least 4096 on a Version Two connection without RFC 8797 private
    /// data).
    pub inline_send: u32,
    /// The chunk-list limits this end's decoder enforces.
    pub limits: Limits,
    /// The largest message this end accepts through chunks
    /// (`EngineConfig::max_message`).
    pub max_message: u32,
}

/// What an active feature changes in the engine. Every field is optional;
/// the engine combines the adjustments of all active features, taking the
/// smallest value of each field.
///
/// ```
/// use rpcrdma_engine::Adjustments;
/// let mut a = Adjustments::default();
/// a.peer_recv_size = Some(16384);
/// let mut b = Adjustments::default();
/// b.peer_recv_size = Some(8192);
/// assert_eq!(a.merge(&b).peer_recv_size, Some(8192));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Adjustments {
    /// The peer's receive buffer size: our send threshold becomes
    /// `min(inline_send, this)`, replacing the RFC 8797 or version default.
    pub peer_recv_size: Option<u32>,
    /// The largest Send the peer posts: our receive threshold (which
    /// decides Reply chunk provisioning) becomes `min(our receive buffer,
    /// this)`.
    pub peer_send_size: Option<u32>,
    /// The chunk-list limits the peer's decoder enforces: the chunk lists
    /// of our calls stay within them.
    pub peer_limits: Option<Limits>,
    /// The largest message the peer accepts through chunks: larger calls
    /// fail locally instead of drawing its `RDMA_ERROR`.
    pub peer_max_message: Option<u32>,
}

impl Adjustments {
    /// The field-wise minimum of `self` and `other`.
    #[must_use]
    pub fn merge(&self, other: &Self) -> Self {
        fn min(a: Option<u32>, b: Option<u32>) -> Option<u32> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        }
        let limits = match (self.peer_limits, other.peer_limits) {
            (Some(a), Some(b)) => Some(Limits {
                max_read_segments: a.max_read_segments.min(b.max_read_segments),
                max_write_chunks: a.max_write_chunks.min(b.max_write_chunks),
                max_segments_per_chunk: a.max_segments_per_chunk.min(b.max_segments_per_chunk),
            }),
            (a, b) => a.or(b),
        };
        Self {
            peer_recv_size: min(self.peer_recv_size, other.peer_recv_size),
            peer_send_size: min(self.peer_send_size, other.peer_send_size),
            peer_limits: limits,
            peer_max_message: min(self.peer_max_message, other.peer_max_message),
        }
    }
}

/// Why a feature refused a received `RDMA2_OPTIONAL` message of its type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FeatureError {
    /// `rdma_optinfo` is not the feature's XDR, or holds a value it rules
    /// out.
    #[error("malformed rdma_optinfo: {0}")]
    Malformed(&'static str),
    /// An RPC Payload stream follows a message that carries none.
    #[error("{0} bytes of RPC payload follow an RDMA2_OPTIONAL message that carries none")]
    UnexpectedPayload(usize),
}

impl FeatureError {
    /// The `rdma_err` a responder answers with: `RDMA2_ERR_BAD_HEADER`
    /// (the base protocol's error for a header it cannot use; no new error
    /// code is needed, draft §3.3).
    pub fn err_code(&self) -> ErrCode {
        ErrCode::BADHEADER
    }
}

/// Where a feature stands on one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FeatureState {
    /// Nothing exchanged yet (or never, on a Version One connection).
    Idle,
    /// Our CALL is out; its answer has not arrived.
    Offered,
    /// The peer has shown support (its REPLY to our CALL, or its own CALL)
    /// and the feature's [`Adjustments`] apply.
    Active,
    /// The peer answered `RDMA2_ERR_INVAL_OPTION`: it does not know the
    /// feature. Never sent again on this connection.
    Unsupported,
    /// The peer answered another `RDMA2_ERROR`. Never sent again.
    Refused(ErrCode),
    /// The peer's message of this type was malformed; nothing it said is
    /// used. Never sent again.
    Malformed(FeatureError),
    /// No answer within `EngineConfig::negotiation_timeout`; the credit
    /// stays held until one arrives. Never sent again.
    NoAnswer,
}

impl FeatureState {
    /// A short lowercase name: `idle`, `offered`, `active`, `unsupported`,
    /// `refused`, `malformed`, `no-answer`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Offered => "offered",
            Self::Active => "active",
            Self::Unsupported => "unsupported",
            Self::Refused(_) => "refused",
            Self::Malformed(_) => "malformed",
            Self::NoAnswer => "no-answer",
        }
    }
}

impl fmt::Display for FeatureState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Idle => f.write_str("not exchanged"),
            Self::Offered => f.write_str("offered, awaiting the peer's answer"),
            Self::Active => f.write_str("active (the peer supports it)"),
            Self::Unsupported => {
                f.write_str("unsupported by the peer (RDMA2_ERR_INVAL_OPTION); dropped")
            }
            Self::Refused(c) => write!(
                f,
                "refused by the peer ({}); dropped",
                c.name().unwrap_or("unknown error")
            ),
            Self::Malformed(e) => write!(f, "the peer's message was unusable ({e}); dropped"),
            Self::NoAnswer => f.write_str("the peer never answered; dropped"),
        }
    }
}

/// One registered feature as [`crate::ConnectionInfo`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureInfo {
    /// Its `rdma_opttype`.
    pub opttype: OptionType,
    /// Its name.
    pub name: &'static str,
    /// Where it stands.
    pub state: FeatureState,
    /// What it has learned about the peer (applied only when `state` is
    /// [`FeatureState::Active`]).
    pub adjustments: Adjustments,
}

/// One `RDMA2_OPTIONAL` feature: its type number, what it sends, how it
/// answers and takes answers, and what it changes once active.
///
/// The engine calls these methods; a feature never sends anything itself.
/// Features must be deterministic (no clocks, randomness or I/O), like the
/// engine. Register one with [`crate::Engine::register_feature`].
///
/// ```
/// use bytes::Bytes;
/// use rpcrdma_engine::{Adjustments, FeatureContext, FeatureError, OptionalFeature};
/// use rpcrdma_wire::OptionType;
///
/// /// Answers a CALL with the same bytes; learns nothing.
/// #[derive(Debug)]
/// struct Echo;
///
/// impl OptionalFeature for Echo {
///     fn opttype(&self) -> OptionType { OptionType(0x8000_e000) }
///     fn name(&self) -> &'static str { "echo" }
///     fn offer(&mut self, _: &FeatureContext) -> Option<Bytes> { Some(Bytes::from_static(b"ping")) }
///     fn on_call(&mut self, _: &FeatureContext, info: &Bytes, _: &Bytes) -> Result<Bytes, FeatureError> {
///         Ok(info.clone())
///     }
///     fn on_reply(&mut self, _: &FeatureContext, info: &Bytes, _: &Bytes) -> Result<(), FeatureError> {
///         if &info[..] == b"ping" { Ok(()) } else { Err(FeatureError::Malformed("not an echo")) }
///     }
///     fn adjustments(&self) -> Adjustments { Adjustments::default() }
/// }
/// ```
pub trait OptionalFeature: fmt::Debug + Send {
    /// The `rdma_opttype` this feature owns.
    fn opttype(&self) -> OptionType;

    /// A short name for logs and displays.
    fn name(&self) -> &'static str;

    /// Requester side: asked once per connection, when the client's
    /// connection has settled on Version Two. Returns the `rdma_optinfo`
    /// of the CALL to send, or `None` to send nothing.
    fn offer(&mut self, ctx: &FeatureContext) -> Option<Bytes>;

    /// Responder side: the peer sent a CALL of this type (`payload` is
    /// whatever followed the header). Returns the `rdma_optinfo` of the
    /// REPLY; an error is answered with `RDMA2_ERROR`
    /// ([`FeatureError::err_code`]). On success the feature becomes active.
    fn on_call(
        &mut self,
        ctx: &FeatureContext,
        optinfo: &Bytes,
        payload: &Bytes,
    ) -> Result<Bytes, FeatureError>;

    /// Requester side: the REPLY to our CALL. On success the feature
    /// becomes active; on error it is dropped for the connection.
    fn on_reply(
        &mut self,
        ctx: &FeatureContext,
        optinfo: &Bytes,
        payload: &Bytes,
    ) -> Result<(), FeatureError>;

    /// What the engine applies while the feature is active. The engine
    /// reads it after each call of [`Self::offer`], [`Self::on_call`] and
    /// [`Self::on_reply`] and keeps the result until the next one, so it
    /// must depend only on what those calls changed.
    fn adjustments(&self) -> Adjustments;
}

/// One registered feature and its state on this connection.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) feature: Box<dyn OptionalFeature>,
    pub(crate) state: FeatureState,
    /// `offer` has been asked (it is asked at most once).
    pub(crate) asked: bool,
}

/// The features this end supports, by `rdma_opttype`.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    pub(crate) slots: Vec<Slot>,
    /// Slots whose `offer` has not been asked yet.
    pub(crate) unasked: usize,
}

impl Registry {
    /// Adds `feature`; `false` if its type is already registered.
    pub(crate) fn insert(&mut self, feature: Box<dyn OptionalFeature>) -> bool {
        if self.find(feature.opttype()).is_some() {
            return false;
        }
        self.slots.push(Slot {
            feature,
            state: FeatureState::Idle,
            asked: false,
        });
        self.unasked += 1;
        true
    }

    /// The slot of `t`.
    pub(crate) fn find(&self, t: OptionType) -> Option<usize> {
        self.slots.iter().position(|s| s.feature.opttype() == t)
    }

    /// The combined adjustments of the active features.
    pub(crate) fn adjustments(&self) -> Adjustments {
        self.slots
            .iter()
            .filter(|s| s.state == FeatureState::Active)
            .fold(Adjustments::default(), |acc, s| {
                acc.merge(&s.feature.adjustments())
            })
    }

    /// What [`crate::ConnectionInfo::features`] shows.
    pub(crate) fn infos(&self) -> Vec<FeatureInfo> {
        self.slots
            .iter()
            .map(|s| FeatureInfo {
                opttype: s.feature.opttype(),
                name: s.feature.name(),
                state: s.state.clone(),
                adjustments: s.feature.adjustments(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_takes_the_smallest_of_each_field() {
        let a = Adjustments {
            peer_recv_size: Some(8192),
            peer_limits: Some(Limits {
                max_read_segments: 4,
                max_write_chunks: 9,
                max_segments_per_chunk: 2,
            }),
            ..Adjustments::default()
        };
        let b = Adjustments {
            peer_recv_size: Some(4096),
            peer_send_size: Some(1024),
            peer_limits: Some(Limits {
                max_read_segments: 8,
                max_write_chunks: 1,
                max_segments_per_chunk: 3,
            }),
            ..Adjustments::default()
        };
        let m = a.merge(&b);
        assert_eq!(m.peer_recv_size, Some(4096));
        assert_eq!(m.peer_send_size, Some(1024));
        assert_eq!(m.peer_max_message, None);
        assert_eq!(
            m.peer_limits,
            Some(Limits {
                max_read_segments: 4,
                max_write_chunks: 1,
                max_segments_per_chunk: 2,
            })
        );
        assert_eq!(Adjustments::default().merge(&a), a);
    }

    #[test]
    fn only_active_features_adjust() {
        let mut r = Registry::default();
        assert!(r.insert(Box::new(TransportPropertiesFeature::new())));
        assert!(!r.insert(Box::new(TransportPropertiesFeature::new())));
        assert_eq!(r.find(TRANSPORT_PROPERTIES), Some(0));
        assert_eq!(r.adjustments(), Adjustments::default());
        assert_eq!(r.infos()[0].state, FeatureState::Idle);
    }

    #[test]
    fn state_names_and_texts() {
        for (s, n) in [
            (FeatureState::Idle, "idle"),
            (FeatureState::Offered, "offered"),
            (FeatureState::Active, "active"),
            (FeatureState::Unsupported, "unsupported"),
            (FeatureState::Refused(ErrCode::BADHEADER), "refused"),
            (
                FeatureState::Malformed(FeatureError::UnexpectedPayload(3)),
                "malformed",
            ),
            (FeatureState::NoAnswer, "no-answer"),
        ] {
            assert_eq!(s.name(), n);
            assert!(!s.to_string().is_empty());
        }
        assert!(FeatureState::Unsupported
            .to_string()
            .contains("RDMA2_ERR_INVAL_OPTION"));
    }
}
