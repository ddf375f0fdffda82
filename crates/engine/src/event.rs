//! What the engine tells its driver: received calls and replies, failures,
//! negotiation results.

use rpcrdma_xdr::Payload;

use crate::error::{CallError, EngineError};
use crate::features::FeatureState;

/// Names a received call until its reply is sent ([`crate::Engine::send_reply`]).
///
/// Tokens are never reused on one engine, so a stale token is detected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallToken(pub(crate) u64);

/// How a message travelled (RFC 8166 §4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageForm {
    /// Short: the whole Payload stream inline in the Send.
    Short,
    /// Chunked: DDP-eligible items moved by RDMA Read (calls) or Write
    /// (replies), the reduced stream inline.
    Chunked,
    /// Long: the Payload stream in a Position-Zero Read chunk (calls) or
    /// the Reply chunk (replies); RDMA_NOMSG.
    Long,
}

impl MessageForm {
    /// A short lowercase name ("short", "chunked", "long").
    pub fn name(self) -> &'static str {
        match self {
            Self::Short => "short",
            Self::Chunked => "chunked",
            Self::Long => "long",
        }
    }
}

/// An output of the engine, taken with [`crate::Engine::poll_event`].
#[derive(Debug)]
#[non_exhaustive]
pub enum Event {
    /// The peer sent a call (a forward call on a server, a reverse-direction
    /// call on a client). All of its Read chunks have been pulled.
    Call {
        /// Pass back to [`crate::Engine::send_reply`].
        token: CallToken,
        /// `rdma_xid` (equal to the RPC XID).
        xid: u32,
        /// The whole RPC call; its DDP items are the Read chunks' data.
        message: Payload,
        /// How the call arrived.
        form: MessageForm,
    },
    /// The reply to one of our calls. Every memory registration of the call
    /// has already been invalidated (RFC 8166 §5.4.1).
    Reply {
        /// The call's XID.
        xid: u32,
        /// The whole RPC reply; its DDP items are the Write chunks' data.
        message: Payload,
        /// How our call went.
        call_form: MessageForm,
        /// How the reply came back.
        reply_form: MessageForm,
    },
    /// One of our calls ended without an RPC reply; its registrations are
    /// invalidated.
    CallFailed {
        /// The call's XID.
        xid: u32,
        /// Why.
        error: CallError,
    },
    /// The protocol version of the connection is settled (a client's first
    /// reply, or a server's first call).
    Negotiated {
        /// The version in use.
        version: u32,
        /// Whether a client fell back from its first version (Version
        /// Two) after the responder's `RDMA_ERROR` answering it.
        fell_back: bool,
        /// The error it fell back on: `ERR_VERS` (the responder lacks the
        /// version, draft-cel-01 §5.2: remember it for later connections)
        /// or another (it refused the message; nothing to remember, spec
        /// note E25). `None` without a fallback.
        cause: Option<rpcrdma_wire::ErrCode>,
    },
    /// A Version Two optional feature changed state on this connection
    /// (became active, or was dropped: unsupported by the peer, refused,
    /// malformed, unanswered).
    Feature {
        /// Its `rdma_opttype`.
        opttype: rpcrdma_wire::OptionType,
        /// Its name.
        name: &'static str,
        /// The new state.
        state: FeatureState,
    },
    /// The connection failed; the driver should close it. Every outstanding
    /// call is abandoned by the engine (no reply will be reported) and every
    /// registration has been released.
    Fatal(EngineError),
}
