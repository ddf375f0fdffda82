//! The sans-IO RPC-over-RDMA connection engine (RFC 8166 Version One,
//! RFC 8167 bidirectional RPC, RFC 8797 private data, and Version Two of
//! draft-cel-nfsv4-rpcrdma-version-two-01).
//!
//! One [`Engine`] is one end of one connection, in either role. It turns
//! RPC messages ([`rpcrdma_xdr::Payload`]s, with DDP-eligible items marked
//! by the Upper Layer) into RDMA work requests and turns work completions
//! back into RPC messages:
//!
//! * **Requester** ([`Engine::send_call`]): credits (one until the first
//!   reply, zero treated as one, clamped to what we asked for), the choice
//!   of Short / Chunked / Long call by the peer's inline threshold, Read
//!   chunks at their XDR positions without padding, Write chunks and a Reply
//!   chunk provisioned from the Upper Layer Binding's [`ReplyHints`], replies
//!   rebuilt from the Write chunks and Reply chunk and checked against what
//!   was provided, every registration released before the reply is
//!   reported ([`Engine::release`] for abandoned calls).
//! * **Responder** (received calls, [`Engine::send_reply`]): RDMA Reads of
//!   every Read chunk (Position Zero included) within the ORD limit, the
//!   Payload stream rebuilt with correct round-up, replies reduced into the
//!   requester's Write chunks or sent through its Reply chunk (§4.5.3),
//!   Send With Invalidate when both ends set RFC 8797's R bit, grants
//!   enforced (an overrun gets an RPC `SYSTEM_ERR`, not our memory).
//! * **Memory** ([`MemoryBudget`]): a received call's Read sinks are
//!   allocated, and room for its largest reply (its Write and Reply
//!   chunks) reserved, only once they fit a per-connection limit and a
//!   budget connections may share; until then the call waits holding its
//!   credit, and one that never fits is refused; reply data counts until
//!   sent; a send queue that stalls closes the connection
//!   (`docs/engine.md`).
//! * **Errors** (§5.5): invalid headers get the `RDMA_ERROR` the wire crate
//!   prescribes (the failing message's XID and version), always, unless
//!   they are replies, which are never answered and end the call they name;
//!   `RDMA_ERROR`s are honoured per call; calls we will not take for lack
//!   of resources get an RPC `SYSTEM_ERR`; RDMA operational errors end the
//!   connection (sticky [`EngineError`]).
//! * **Versions**: a client probes with Version Two (one credit, at most
//!   1024 bytes) and falls back on `ERR_VERS` (or, at once, on any other
//!   error answering the probe); a server answers in the version of each
//!   call; thresholds follow the version when no private data says
//!   otherwise.
//! * **Version Two optional features** (draft-cel-01 §3.1, §3.3): a
//!   registry of supported `RDMA2_OPTIONAL` types ([`OptionalFeature`],
//!   [`Engine::register_feature`]) feeding the decoder, so unknown types are
//!   answered `RDMA2_ERR_INVAL_OPTION`; the engine sends each feature's offer
//!   once Version Two is settled, answers the peer's, and applies an active
//!   feature's [`Adjustments`]. One experimental feature ships:
//!   [`TransportPropertiesFeature`] (receive buffer size, Send size, chunk
//!   limits; `docs/v2-transport-properties.md`), on by default
//!   ([`EngineConfig::transport_properties`]), state in
//!   [`ConnectionInfo::features`].
//! * **Both directions** (RFC 8167): calls and replies flow both ways on one
//!   connection with separate credits; the reverse direction is used only
//!   after it is enabled ([`Engine::enable_backchannel`],
//!   [`Engine::peer_backchannel_ready`]).
//!
//! # Determinism contract
//!
//! No sockets, clocks, threads, tokio or randomness: time is an argument
//! (`now`), work requests and events are polled, and the only provider
//! calls the engine makes itself are memory registration and
//! deregistration through the [`rpcrdma_verbs::ProtectionDomain`] it owns.
//! The `testing` feature provides an in-memory fabric and a two-engine
//! `testing::Pair` harness.
//!
//! # Example
//!
//! ```
//! use bytes::Bytes;
//! use rpcrdma_engine::{testing::Pair, Event, ReplyHints};
//! use rpcrdma_xdr::Payload;
//!
//! let mut pair = Pair::new();
//! // An RPC call header: xid 7, CALL, RPC version 2, program 0x20000099
//! // version 1 procedure 0, AUTH_NONE credential and verifier.
//! let words = [7u32, 0, 2, 0x2000_0099, 1, 0, 0, 0, 0, 0];
//! let call = Bytes::from(words.iter().flat_map(|w| w.to_be_bytes()).collect::<Vec<u8>>());
//! pair.client.engine.send_call(pair.now, 7, Payload::inline_only(call), ReplyHints::default()).unwrap();
//! pair.drive();
//! let Some(Event::Call { token, message, .. }) =
//!     pair.server.take_event(|e| matches!(e, Event::Call { .. })) else { panic!() };
//! assert_eq!(message.inline().len(), 40);
//! let reply = Bytes::from_static(&[0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 0]);
//! pair.server.engine.send_reply(token, Payload::inline_only(reply)).unwrap();
//! pair.drive();
//! assert!(pair.client.events.iter().any(|e| matches!(e, Event::Reply { xid: 7, .. })));
//! ```
#![forbid(unsafe_code)]

mod budget;
mod config;
mod conn;
mod credits;
mod error;
mod event;
mod features;
mod hdr;
mod marshal;
mod pool;
mod reply;
mod stats;
mod stream;
#[cfg(feature = "testing")]
pub mod testing;

pub use budget::{Charge, MemoryBudget};
pub use config::{
    EngineConfig, Role, VersionPolicy, CONNECTION_OVERHEAD, DEFAULT_INLINE, DEFAULT_MAX_MEMORY,
    DEFAULT_MAX_SHARED_MEMORY, DEFAULT_READ_WINDOW,
};
pub use conn::{ConnectionInfo, Engine};
pub use error::{ApiError, CallError, ConfigError, EngineError, ReplyFault, SizeFault};
pub use event::{CallToken, Event, MessageForm};
pub use features::{
    Adjustments, FeatureContext, FeatureError, FeatureInfo, FeatureState, OptionalFeature,
    TransportProperties, TransportPropertiesFeature, TRANSPORT_PROPERTIES,
    TRANSPORT_PROPERTIES_LEN,
};
pub use marshal::ReplyHints;
/// The `rdma_err` word of an `RDMA_ERROR` (in [`CallError::RdmaError`] and
/// [`Event::Negotiated`]).
pub use rpcrdma_wire::ErrCode;
pub use stats::Stats;
