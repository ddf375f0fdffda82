//! The state of one open connection ([`Conn`]) and its [`ConnOps`], which
//! the [`Connection`] handle calls with the transport type erased.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use rpcrdma_sync::Signal;
use rpcrdma_xdr::Payload;
use tokio::sync::watch;
use tokio::time::Instant;

use super::handle::{ConnOps, Side};
use super::pending::{Outcome, Pending};
use super::xid::SharedXids;
use crate::backchannel::Backchannels;
use crate::client_key::ClientKey;
use crate::error::TransportError;
use crate::transport::{CallHints, Received, Transport};
use crate::util::{lock, BoxFuture};

/// What the reader task gets from the transport.
pub(super) type Next<C> = Result<Received<C>, TransportError>;

/// One open connection over a transport `T`: what the [`Connection`]
/// handle (through [`ConnOps`]), the reader task and the inline receive
/// share.
pub(super) struct Conn<T: Transport> {
    pub(super) id: u64,
    pub(super) peer: String,
    pub(super) peer_addr: Option<std::net::SocketAddr>,
    pub(super) transport: T,
    pub(super) pending: Arc<Pending>,
    /// Whether the transport's receive is a poll any task may make
    /// (`Transport::polls_recv`): then waiting calls read it themselves
    /// (`inline.rs`).
    pub(super) inline: bool,
    /// The waker of every poll of such a transport (`pending`'s
    /// [`std::task::Wake`]).
    pub(super) reader_waker: Waker,
    /// What a caller reading the transport left for the reader task.
    pub(super) stash: Mutex<Option<Next<T::CallContext>>>,
    pub(super) stashed: AtomicBool,
    pub(super) stop: watch::Sender<u8>,
    /// Wakes the reader for control work: a stop (`stop` says which) or a
    /// sweep timer to set earlier (a call registered with an earlier
    /// deadline than the one armed).
    pub(super) ctl: Signal,
    /// Set by an abort: calls in progress must not reply any more.
    pub(super) aborted: AtomicBool,
    pub(super) done: watch::Sender<bool>,
    pub(super) xids: SharedXids,
    pub(super) side: Side,
    /// See [`ConnOps::backchannel_ready`].
    pub(super) ready: AtomicBool,
    /// Server side: the Upper Layer's name for the client, once declared.
    pub(super) key: Mutex<Option<ClientKey>>,
    /// Server side: where the connection is bound to its key.
    pub(super) registry: Option<Backchannels>,
    /// See [`ConnOps::arena`].
    pub(super) arena: Mutex<bytes::BytesMut>,
    /// Whether the transport keeps sends back to write several at once
    /// ([`Transport::batches_sends`]).
    pub(super) batches: bool,
    /// A call was kept back ([`Transport::try_send_call_batched`]) and the
    /// reader was asked to [`Transport::flush`] (through `ctl`).
    pub(super) flush_due: AtomicBool,
}

pub(super) const STOP_NONE: u8 = 0;
pub(super) const STOP_GRACEFUL: u8 = 1;
pub(super) const STOP_ABORT: u8 = 2;

impl<T: Transport> ConnOps for Conn<T> {
    fn id(&self) -> u64 {
        self.id
    }
    fn peer(&self) -> &str {
        &self.peer
    }
    fn peer_addr(&self) -> Option<std::net::SocketAddr> {
        self.peer_addr
    }
    fn side(&self) -> Side {
        self.side
    }
    fn backchannel_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
    fn declare_peer_ready(&self, key: ClientKey) -> Result<Option<ClientKey>, TransportError> {
        self.transport.peer_backchannel_ready()?;
        let old = lock(&self.key).replace(key);
        self.ready.store(true, Ordering::Release);
        Ok(old)
    }
    fn client_key(&self) -> Option<ClientKey> {
        lock(&self.key).clone()
    }
    fn backchannels(&self) -> Option<&Backchannels> {
        self.registry.as_ref()
    }
    fn register(&self, xid: u32, deadline: Instant) -> bool {
        match self.pending.register(xid, deadline) {
            None => false,
            Some(rearm) => {
                if rearm {
                    self.ctl.notify();
                }
                true
            }
        }
    }
    fn poll_outcome(&self, xid: u32, cx: &mut Context<'_>) -> Poll<Option<Outcome>> {
        self.poll_outcome_inline(xid, cx)
    }
    fn unregister(&self, xid: u32) {
        self.pending.unregister(xid);
    }
    fn try_send_call(
        &self,
        xid: u32,
        message: Payload,
        hints: &CallHints,
    ) -> Result<Result<(), TransportError>, Payload> {
        if self.batches && self.pending.others_ready() {
            // Other calls' tasks are about to run and send their next
            // calls: this one may go with them. The reader flushes once
            // the tasks already runnable have run (it is woken after
            // them), whatever they do.
            let r = self.transport.try_send_call_batched(xid, message, hints);
            if !self.flush_due.load(Ordering::Acquire)
                && !self.flush_due.swap(true, Ordering::AcqRel)
            {
                self.ctl.notify();
            }
            return r;
        }
        self.transport.try_send_call(xid, message, hints)
    }
    fn try_release(&self, xid: u32) -> bool {
        self.transport.try_release(xid)
    }
    fn send_call<'a>(
        &'a self,
        xid: u32,
        message: Payload,
        hints: &'a CallHints,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(self.transport.send_call(xid, message, hints))
    }
    fn release(&self, xid: u32) -> BoxFuture<'_, ()> {
        Box::pin(self.transport.release(xid))
    }
    fn is_alive(&self) -> bool {
        self.pending.is_alive()
    }
    fn abort(&self) {
        self.aborted.store(true, Ordering::Release);
        self.pending.fail_all();
        self.stop.send_replace(STOP_ABORT);
        self.ctl.notify();
    }
    fn shutdown(&self) {
        self.stop.send_if_modified(|s| {
            if *s == STOP_NONE {
                *s = STOP_GRACEFUL;
                true
            } else {
                false
            }
        });
        self.ctl.notify();
    }
    fn closed(&self) -> BoxFuture<'_, ()> {
        let mut rx = self.done.subscribe();
        Box::pin(async move {
            let _ = rx.wait_for(|d| *d).await;
        })
    }
    fn xids(&self) -> &SharedXids {
        &self.xids
    }
    fn arena(&self) -> &Mutex<bytes::BytesMut> {
        &self.arena
    }
}

impl<T: Transport> Conn<T> {
    /// The reader's part of [`Transport::try_send_call_batched`]: puts on
    /// the wire what the transport kept back, when asked to.
    pub(super) fn flush_if_due(&self) {
        if self.flush_due.load(Ordering::Acquire) && self.flush_due.swap(false, Ordering::AcqRel) {
            self.transport.flush();
        }
    }
}
