//! The transport interface: what TCP and RPC-over-RDMA implement.
//!
//! A [`Transport`] is one connection carrying whole RPC messages (header
//! plus arguments or results, as a [`Payload`]) in **both directions**: a
//! peer may send calls and replies on it at the same time (RFC 8167; NFSv4.1
//! backchannels over TCP work the same way). The RPC layer above
//! ([`crate::Connection`]) runs one reader loop per transport that routes
//! received replies to waiting calls and received calls to the registered
//! programs.
//!
//! The interface carries what the RDMA transport needs and TCP ignores:
//!
//! * [`CallHints`] on every outgoing call: the maximum size of each
//!   DDP-eligible result item (Write chunks), the maximum reply size (Reply
//!   chunk) and a switch that turns reduction off. DDP-eligible *arguments*
//!   are already marked in the call's [`Payload`].
//! * [`Transport::CallContext`]: per-call state a transport hands up with
//!   each received call and takes back with the reply (the call's Write
//!   list and Reply chunk, for RDMA).
//! * [`Transport::retire_call`]: the server will not answer a received
//!   call (undecodable header), so the transport can free what it holds
//!   for it.
//! * [`Transport::release`]: awaited by the client when it is done with a
//!   call — reply delivered, timeout, cancellation, or before
//!   retransmitting on a new connection — *before* the caller sees the
//!   outcome (RFC 8166 §5.4.1: memory registrations are invalidated there).
//! * Credits and any flow control: `send_call` may wait for them.
//! * Readiness for reverse-direction calls (RFC 8167 §6):
//!   [`Transport::enable_backchannel`] on the client side,
//!   [`Transport::peer_backchannel_ready`] on the server side. Both do
//!   nothing by default (TCP needs nothing); RPC-over-RDMA posts receive
//!   buffers for reverse calls and lifts its refusal.

use std::future::Future;
use std::task::{Context, Poll};

use rpcrdma_xdr::Payload;

use crate::error::TransportError;
use crate::msg::MAX_ACCEPTED_REPLY_HEADER;

/// Per-call hints from a program's Upper Layer Binding (RFC 8166 §6).
///
/// TCP ignores them; building them costs nothing when there are no
/// DDP-eligible results (an empty `Vec` does not allocate).
///
/// ```
/// use rpcrdma_oncrpc::CallHints;
/// // A READ of up to 65536 bytes whose results are at most 16 bytes of
/// // fixed fields plus the data.
/// let hints = CallHints::new().ddp_result(65536).max_results(16 + 65536);
/// assert_eq!(hints.ddp_results(), &[65536]);
/// assert!(hints.max_reply_size().unwrap() > 65536);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallHints {
    ddp_results: Vec<u32>,
    max_results: Option<u32>,
    reduced_results: Option<u32>,
    no_reduce: bool,
}

impl CallHints {
    /// No hints: no DDP-eligible results, unknown reply size, reduction on.
    pub const fn new() -> Self {
        Self {
            ddp_results: Vec::new(),
            max_results: None,
            reduced_results: None,
            no_reduce: false,
        }
    }

    /// `CallHints::new().max_results(0)`: a procedure whose results are
    /// void (NULL, RFC 5531 §12.1).
    pub(crate) const NULL: Self = Self {
        ddp_results: Vec::new(),
        max_results: Some(0),
        reduced_results: None,
        no_reduce: false,
    };

    /// Adds a DDP-eligible result item of at most `max_len` bytes; items
    /// are listed in the order they appear in the results (one Write chunk
    /// each, RFC 8166 §4.4.6).
    #[must_use]
    pub fn ddp_result(mut self, max_len: u32) -> Self {
        self.ddp_results.push(max_len);
        self
    }

    /// Sets the maximum size of the procedure's results (the XDR after an
    /// accepted reply header), counting DDP-eligible items in full.
    #[must_use]
    pub fn max_results(mut self, bytes: u32) -> Self {
        self.max_results = Some(bytes);
        self
    }

    /// Sets the maximum size of the results when every DDP-eligible item
    /// travels in its Write chunk, over every branch of the results (NFS
    /// READ: everything but the data). An RDMA requester that provides
    /// the Write chunks then provides a Reply chunk only if this reduced
    /// reply can exceed its receive threshold, as the Linux client does for
    /// READ. Without it the unreduced [`CallHints::max_results`] decides.
    ///
    /// ```
    /// use rpcrdma_oncrpc::CallHints;
    /// let read = CallHints::new().ddp_result(1 << 20).max_results((1 << 20) + 104).reduced_results(104);
    /// assert!(read.max_reduced_reply_size().unwrap() < 1024);
    /// ```
    #[must_use]
    pub fn reduced_results(mut self, bytes: u32) -> Self {
        self.reduced_results = Some(bytes);
        self
    }

    /// Upper bound on the whole reply message with DDP-eligible results
    /// reduced, if stated ([`CallHints::reduced_results`]).
    pub fn max_reduced_reply_size(&self) -> Option<u32> {
        self.reduced_results
            .map(|r| r.saturating_add(MAX_ACCEPTED_REPLY_HEADER as u32))
    }

    /// Turns reduction off for this call: nothing is moved out of line in
    /// either direction (required for RPCSEC_GSS integrity and privacy,
    /// RFC 8166 §10.2.2.3).
    #[must_use]
    pub fn no_reduce(mut self) -> Self {
        self.no_reduce = true;
        self
    }

    /// Maximum sizes of the DDP-eligible result items, in XDR order.
    pub fn ddp_results(&self) -> &[u32] {
        &self.ddp_results
    }

    /// Maximum size of the results, if the binding knows it.
    pub fn results_limit(&self) -> Option<u32> {
        self.max_results
    }

    /// Whether reduction is off for this call.
    pub fn is_no_reduce(&self) -> bool {
        self.no_reduce
    }

    /// Upper bound on the whole RPC reply message (header with the largest
    /// verifier plus results), unreduced; `None` if unknown. An RDMA
    /// requester provisions a Reply chunk when this can exceed its receive
    /// inline threshold (RFC 8166 §5.3.3).
    pub fn max_reply_size(&self) -> Option<u32> {
        self.max_results
            .map(|r| r.saturating_add(MAX_ACCEPTED_REPLY_HEADER as u32))
    }
}

/// A message received by a transport.
#[derive(Debug)]
#[non_exhaustive]
pub enum Received<C> {
    /// A call from the peer. Answer it with [`Transport::send_reply`],
    /// passing `context` back.
    Call {
        /// The whole call message (header and arguments).
        message: Payload,
        /// The transport's per-call state.
        context: C,
    },
    /// A reply to one of our calls.
    Reply {
        /// Its xid (the transport read it to match chunks).
        xid: u32,
        /// The whole reply message (header and results).
        message: Payload,
    },
    /// The transport failed one of our calls without a reply (for example
    /// an RPC-over-RDMA `RDMA_ERROR` naming this xid).
    CallFailed {
        /// The call's xid.
        xid: u32,
        /// Why.
        error: TransportError,
    },
}

/// One connection that carries RPC messages both ways.
///
/// Methods take `&self`: the RPC layer calls `recv` from a single reader
/// task while other tasks send calls and replies concurrently.
///
/// Contract:
/// * `recv` returns `Err` only when the connection is unusable; the RPC
///   layer then fails or retransmits every outstanding call and stops
///   using the transport.
/// * Each message is a complete RPC message; its DDP-eligible items are
///   moved however the transport likes, but a received [`Payload`] must
///   decode with [`rpcrdma_xdr::Decoder::with_ddp`] exactly as the sent
///   one would.
pub trait Transport: Send + Sync + 'static {
    /// State a transport keeps for a received call until its reply is sent.
    type CallContext: Send + 'static;

    /// Sends a call. May wait for credits or other flow control.
    fn send_call(
        &self,
        xid: u32,
        message: Payload,
        hints: &CallHints,
    ) -> impl Future<Output = Result<(), TransportError>> + Send;

    /// The per-call fast path of [`Transport::send_call`]: sends the call
    /// at once if that needs no waiting (no flow control to wait for),
    /// returning `Ok` with the outcome; otherwise gives the message back
    /// (`Err`) and the caller awaits [`Transport::send_call`]. Saves the RPC
    /// layer a boxed future per call.
    ///
    /// The default always gives the message back.
    fn try_send_call(
        &self,
        xid: u32,
        message: Payload,
        hints: &CallHints,
    ) -> Result<Result<(), TransportError>, Payload> {
        let _ = (xid, hints);
        Err(message)
    }

    /// Sends the reply to a call received with `context`.
    fn send_reply(
        &self,
        context: Self::CallContext,
        message: Payload,
    ) -> impl Future<Output = Result<(), TransportError>> + Send;

    /// The fast path of [`Transport::send_reply`]: sends the reply at once
    /// if that needs no waiting (`Ok` with the outcome); otherwise gives
    /// the context and message back (`Err`) and the caller awaits
    /// [`Transport::send_reply`]. Saves the RPC layer a task (or a boxed
    /// future) per reply.
    ///
    /// The default always gives them back.
    #[allow(clippy::type_complexity)]
    fn try_send_reply(
        &self,
        context: Self::CallContext,
        message: Payload,
    ) -> Result<Result<(), TransportError>, (Self::CallContext, Payload)> {
        Err((context, message))
    }

    /// Waits for the next message.
    fn recv(
        &self,
    ) -> impl Future<Output = Result<Received<Self::CallContext>, TransportError>> + Send;

    /// Whether [`Transport::poll_recv`] works: the receive is a poll with
    /// no state of its own between polls, which any task may make (the
    /// waker of the latest poll is the one woken). Then a call waiting for
    /// its reply reads the transport itself when no other task does, and
    /// its future is woken by the transport directly rather than through
    /// the connection's reader task (one task switch less per call). False
    /// by default.
    fn polls_recv(&self) -> bool {
        false
    }

    /// [`Transport::recv`] as a poll, for transports whose
    /// [`Transport::polls_recv`] is true. The default says it has nothing
    /// (it is never called when `polls_recv` is false).
    fn poll_recv(
        &self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Received<Self::CallContext>, TransportError>> {
        let _ = cx;
        Poll::Pending
    }

    /// The RPC layer stops calling [`Transport::recv`] for a while (it
    /// waits for calls in progress to finish before reading more, or it
    /// stops reading for good). A transport that does its I/O on the task
    /// that calls `recv` hands it to a task of its own meanwhile, and puts
    /// on the wire what it kept back for the reader's return (replies
    /// sent while it handed up a batch of calls). Does nothing by default.
    fn recv_paused(&self) {}

    /// Whether the transport can keep sends back to write several at once
    /// ([`Transport::try_send_call_batched`], [`Transport::flush`]).
    /// False by default.
    fn batches_sends(&self) -> bool {
        false
    }

    /// [`Transport::try_send_call`] for a call sent when the RPC layer
    /// knows more will follow at once (other calls' replies wait for their
    /// tasks, which send their next calls right after): a transport that
    /// [`batches_sends`](Transport::batches_sends) may keep it back and
    /// write it with those, at the latest at the next send it does not
    /// keep back, its next receive poll or [`Transport::flush`]. The RPC
    /// layer makes sure one of these follows soon: its reader calls
    /// `flush` when woken for it. The default is `try_send_call`.
    fn try_send_call_batched(
        &self,
        xid: u32,
        message: Payload,
        hints: &CallHints,
    ) -> Result<Result<(), TransportError>, Payload> {
        self.try_send_call(xid, message, hints)
    }

    /// Puts on the wire what the transport kept back
    /// ([`Transport::try_send_call_batched`]). Nothing to do by default.
    fn flush(&self) {}

    /// Tells the transport the client is finished with call `xid` (reply
    /// handed over, timed out, cancelled, or about to be retransmitted
    /// elsewhere). The client awaits this before the caller sees the
    /// outcome. Must be harmless for an unknown xid.
    fn release(&self, xid: u32) -> impl Future<Output = ()> + Send;

    /// The fast path of [`Transport::release`]: releases `xid` at once if
    /// that needs no waiting and returns true; false means the caller
    /// awaits [`Transport::release`] (the default).
    fn try_release(&self, xid: u32) -> bool {
        let _ = xid;
        false
    }

    /// The RPC layer will not answer a call received with `context` (its
    /// header could not be decoded, or it is not a call: RFC 5531 has no
    /// reply for it). A transport that holds resources per received call
    /// (an RPC-over-RDMA credit of its grant) frees them now.
    ///
    /// The default just drops the context (TCP holds nothing).
    fn retire_call(&self, context: Self::CallContext) {
        drop(context);
    }

    /// Closes the connection; `recv` then fails.
    fn close(&self) -> impl Future<Output = ()> + Send;

    /// Client side: start accepting reverse-direction calls on this
    /// connection (RFC 8167 §6). [`crate::Client`] calls it on every new
    /// connection, before its first call, when it serves programs
    /// ([`crate::ClientConfig::services`]). An error means the connection
    /// cannot carry them (e.g. no reverse-direction credits configured).
    ///
    /// The default does nothing: a transport without its own gate (TCP)
    /// hands every call up anyway.
    fn enable_backchannel(&self) -> Result<(), TransportError> {
        Ok(())
    }

    /// Server side: the Upper Layer learned that the client takes
    /// reverse-direction calls on this connection (RFC 8167 §6); sending
    /// them is allowed from now on. Called by
    /// [`crate::Connection::peer_ready_for_callbacks`]. A transport that
    /// refuses a reverse-direction call before this returns
    /// [`TransportError::BackchannelNotReady`] from `send_call`.
    ///
    /// The default does nothing (TCP needs nothing).
    fn peer_backchannel_ready(&self) -> Result<(), TransportError> {
        Ok(())
    }

    /// A short description of the peer for logs (e.g. `tcp 127.0.0.1:2049`).
    fn peer(&self) -> String;

    /// The peer's network address, if the transport has one. The
    /// duplicate request cache ([`crate::drc`]) recognises a client that
    /// reconnects by its IP address; without one, retransmissions are
    /// recognised only on the same connection.
    fn peer_addr(&self) -> Option<std::net::SocketAddr> {
        None
    }
}

/// Makes new connections for a client, so it can reconnect.
pub trait Connector: Send + Sync + 'static {
    /// The transport it makes.
    type Transport: Transport;

    /// Makes one connection.
    fn connect(&self) -> impl Future<Output = Result<Self::Transport, TransportError>> + Send;
}

#[cfg(test)]
mod tests {
    use super::CallHints;

    #[test]
    fn null_hints_are_void_results() {
        assert_eq!(CallHints::NULL, CallHints::new().max_results(0));
    }
}
