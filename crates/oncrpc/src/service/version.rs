//! One registered (program, version): its procedures' handlers, which
//! decode the arguments and poll the handler's future once, and what it
//! declares about them (non-idempotent procedures, reply bounds).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rpcrdma_xdr::{Decoder, XdrError};

use super::call::{CallInfo, ProcError};
use crate::budget::ReplyBoundFn;
use crate::codec::{Marshal, Unmarshal};
use crate::util::BoxFuture;

/// A registered procedure: decodes the arguments, calls the handler and
/// polls its future once (with the dispatch's context).
pub(super) type Handler =
    dyn Fn(CallInfo, &mut Decoder<'_>, &mut Context<'_>) -> Result<Started, XdrError> + Send + Sync;

/// How a handler's future did on its first poll.
pub(super) enum Started {
    /// It finished.
    Done(Reply),
    /// It panicked.
    Panicked,
    /// It waits: the rest of it.
    Running(BoxFuture<'static, Reply>),
}

/// Allocations kept per procedure for its handlers' futures (each one
/// polled to completion at once gives its allocation back; one that
/// waits keeps it).
const KEPT_FUTURE_SLOTS: usize = 4;

/// A handler's outcome, encoded: results or an error status.
pub(super) type Reply = Result<Box<dyn Marshal + Send>, ProcError>;

/// The procedures of one registered (program, version).
#[derive(Default)]
pub struct Version {
    pub(super) procs: BTreeMap<u32, Arc<Handler>>,
    pub(super) non_idempotent: BTreeSet<u32>,
    pub(super) reply_bound: Option<Arc<ReplyBoundFn>>,
}

impl fmt::Debug for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.procs.keys()).finish()
    }
}

impl Version {
    /// Registers procedure `num` with an async handler that receives the
    /// call's [`CallInfo`] and its decoded arguments and returns results or
    /// a [`ProcError`].
    ///
    /// The framework decodes the arguments with `A::unmarshal` from a
    /// DDP-aware decoder and then requires that every inline byte and every
    /// directly placed item was consumed; any failure — including a chunk in
    /// a place the binding does not allow (RFC 8166 §8.1.1) — is answered
    /// with `GARBAGE_ARGS` without running the handler. A handler that
    /// panics is answered with `SYSTEM_ERR`.
    pub fn proc<A, R, F, Fut>(&mut self, num: u32, handler: F) -> &mut Self
    where
        A: Unmarshal + Send + 'static,
        R: Marshal + Send + 'static,
        F: Fn(CallInfo, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ProcError>> + Send + 'static,
    {
        // The future of a handler that finishes on its first poll (most
        // do) lives in a reused allocation: no malloc and free per call.
        let slots: parking_lot::Mutex<Vec<Pin<Box<Option<Fut>>>>> =
            parking_lot::Mutex::new(Vec::new());
        let h = move |info: CallInfo, dec: &mut Decoder<'_>, cx: &mut Context<'_>| {
            let args = A::unmarshal(dec)?;
            dec.expect_end()?;
            let fut = handler(info, args);
            let mut slot = slots.lock().pop().unwrap_or_else(|| Box::pin(None));
            slot.set(Some(fut));
            let first = std::panic::catch_unwind(AssertUnwindSafe(|| {
                slot.as_mut().as_pin_mut().map(|f| f.poll(cx))
            }));
            Ok(match first {
                Ok(Some(Poll::Ready(r))) => {
                    slot.set(None);
                    let mut kept = slots.lock();
                    if kept.len() < KEPT_FUTURE_SLOTS {
                        kept.push(slot);
                    }
                    Started::Done(boxed_results(r))
                }
                Ok(Some(Poll::Pending)) => Started::Running(Box::pin(async move {
                    let r = match slot.as_mut().as_pin_mut() {
                        Some(f) => f.await,
                        None => Err(ProcError::SystemErr),
                    };
                    boxed_results(r)
                })),
                Ok(None) | Err(_) => Started::Panicked,
            })
        };
        self.procs.insert(num, Arc::new(h));
        self
    }

    /// Registers procedure 0 as the conventional NULL procedure (no
    /// arguments, no results).
    pub fn null(&mut self) -> &mut Self {
        self.proc(0, |_, ()| async { Ok(()) })
    }

    /// Declares procedures that must not run twice for one call (NFS
    /// `CREATE`, `REMOVE`, `RENAME`, `WRITE`, …). When the [`Services`](crate::Services)
    /// have a duplicate request cache ([`Services::set_reply_cache`](crate::Services::set_reply_cache)),
    /// their replies are remembered and a retransmission is answered
    /// from the cache instead of running again ([`crate::drc`]).
    pub fn non_idempotent(&mut self, procs: impl IntoIterator<Item = u32>) -> &mut Self {
        self.non_idempotent.extend(procs);
        self
    }

    /// Whether `proc_` was declared non-idempotent.
    pub fn is_non_idempotent(&self, proc_: u32) -> bool {
        self.non_idempotent.contains(&proc_)
    }

    /// Declares the largest results each procedure can produce, from its
    /// number and its arguments (XDR after the call header, possibly
    /// malformed: answer `None` or a safe bound): a server's TCP
    /// connection reserves that much of its memory budget for the reply
    /// before it hands the call to the handler ([`crate::budget`]), so
    /// that calls with large replies cannot pile up beyond the budget.
    /// Without a bound (`None`) a call reserves
    /// [`crate::budget::DEFAULT_REPLY_RESERVE`].
    ///
    /// ```
    /// use rpcrdma_oncrpc::Services;
    /// let mut services = Services::new();
    /// // Procedure 1 returns at most the count its arguments start with.
    /// services.program(0x2000_0001, 1).reply_bound(|proc_, args| match (proc_, args) {
    ///     (1, [a, b, c, d, ..]) => Some(u64::from(u32::from_be_bytes([*a, *b, *c, *d])) + 4),
    ///     _ => None,
    /// });
    /// let header = rpcrdma_oncrpc::msg::MAX_ACCEPTED_REPLY_HEADER as u64;
    /// assert_eq!(services.reply_reserve(0x2000_0001, 1, 1, &[0, 1, 0, 0]), 65540 + header);
    /// ```
    pub fn reply_bound(
        &mut self,
        bound: impl Fn(u32, &[u8]) -> Option<u64> + Send + Sync + 'static,
    ) -> &mut Self {
        self.reply_bound = Some(Arc::new(bound));
        self
    }
}

/// A handler's results behind the encoding trait.
fn boxed_results<R: Marshal + Send + 'static>(r: Result<R, ProcError>) -> Reply {
    r.map(|r| -> Box<dyn Marshal + Send> { Box::new(r) })
}
