//! The entries of the engine's call tables: our calls, the peer's calls,
//! our `RDMA2_OPTIONAL` offers, what a posted work request is for, and
//! the version state.

use std::time::Instant;

use bytes::{Bytes, BytesMut};
use rpcrdma_xdr::Payload;

use crate::event::MessageForm;
use crate::marshal::{Provided, ReplyHints};

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
    /// Octets its largest reply may make us hold beyond what goes inline:
    /// its Write chunks' and Reply chunk's lengths, together at most
    /// `max_message` (spec note E21). Reserved at admission with its Read
    /// sinks.
    pub(crate) room: u64,
    /// The part of `charge` reserved for the reply (`room` once admitted);
    /// at `send_reply` it becomes the reply's real charge.
    pub(crate) room_held: u64,
    /// Whether it had to wait for memory (counted once).
    pub(crate) waited: bool,
    /// Sink buffers found at admission, one per chunk, until registered.
    pub(crate) bufs: Vec<BytesMut>,
    /// Octets charged to this connection for it (its sink buffers and its
    /// reply's reservation).
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
            room: 0,
            room_held: 0,
            waited: false,
            bufs: Vec::new(),
            charge: 0,
            sinks: Vec::new(),
            pulls: Vec::new(),
            reads_pending: 0,
        }
    }
}

/// One of our `RDMA2_OPTIONAL` CALLs awaiting its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OptCall {
    /// The registry slot of its feature.
    pub(crate) slot: usize,
    /// When it is given up.
    pub(crate) deadline: Instant,
    /// Given up (timed out): the credit is still held.
    pub(crate) abandoned: bool,
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
