//! Programs a peer serves: registration and dispatch.
//!
//! [`Services`] maps (program, version, procedure) to async handlers. The
//! dispatch step ([`Services::dispatch`]) is synchronous and pure: it
//! decodes the call header, applies the authentication rules and decodes
//! the arguments, then either answers at once with the framework's error
//! reply (`RPC_MISMATCH`, `AUTH_ERROR`, `PROG_UNAVAIL`, `PROG_MISMATCH`,
//! `PROC_UNAVAIL`, `GARBAGE_ARGS`) or hands back the handler's future.

//!
//! * `mod.rs`: [`Services`], the authentication policy and the dispatch;
//! * `version.rs`: one registered program version and its handlers;
//! * `call.rs`: what a handler sees and answers, and how calls ended;
//! * `reply.rs`: encoding replies.

mod call;
mod reply;
mod version;

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use rpcrdma_xdr::{Decoder, Payload};

use crate::auth::Credential;
use crate::budget::DEFAULT_REPLY_RESERVE;
use crate::conn::Connection;
use crate::drc::{ArgsSum, CallKey, ClientId, Lookup, ReplyCache};
use crate::error::MessageError;
use crate::msg::{
    decode_header, AcceptedStatus, AuthFlavor, AuthStat, Header, RejectedReply, ReplyHeader,
    RPC_VERSION,
};
use crate::util::BoxFuture;
pub use call::{CallInfo, CallObserver, CallOutcome, ProcError};
use reply::{encode_panic, encode_result};
pub use reply::{encode_reply, encode_success};
use version::Started;
pub use version::Version;

/// Authentication flavors a [`Services`] accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthPolicy {
    accepted: Vec<AuthFlavor>,
}

impl Default for AuthPolicy {
    /// `AUTH_NONE` and `AUTH_SYS`.
    fn default() -> Self {
        Self {
            accepted: vec![AuthFlavor::AUTH_NONE, AuthFlavor::AUTH_SYS],
        }
    }
}

impl AuthPolicy {
    /// Accepts exactly these flavors. A call with another flavor is denied
    /// with `AUTH_TOOWEAK` if it is `AUTH_NONE` or `AUTH_SYS` and with
    /// `AUTH_BADCRED` otherwise. Flavors other than `AUTH_NONE`/`AUTH_SYS`
    /// are passed to handlers unverified as [`Credential::Other`].
    pub fn accept(flavors: impl IntoIterator<Item = AuthFlavor>) -> Self {
        Self {
            accepted: flavors.into_iter().collect(),
        }
    }

    /// Whether `flavor` is accepted.
    pub fn accepts(&self, flavor: AuthFlavor) -> bool {
        self.accepted.contains(&flavor)
    }
}

/// The programs served on a connection.
///
/// ```
/// use rpcrdma_oncrpc::{ProcError, Services};
///
/// let mut services = Services::new();
/// services
///     .program(0x2000_0001, 1)
///     .null()
///     .proc(1, |_info, x: u32| async move { Ok::<_, ProcError>(x + 1) });
/// assert!(services.is_registered(0x2000_0001, 1));
/// ```
#[derive(Default)]
pub struct Services {
    programs: BTreeMap<u32, BTreeMap<u32, Version>>,
    auth: AuthPolicy,
    reply_cache: Option<Arc<ReplyCache>>,
    observer: Option<Arc<dyn CallObserver>>,
}

impl fmt::Debug for Services {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Services")
            .field("programs", &self.programs)
            .field("auth", &self.auth)
            .field("reply_cache", &self.reply_cache)
            .field("observer", &self.observer.is_some())
            .finish()
    }
}

/// The result of [`Services::dispatch`].
pub enum Dispatch {
    /// Nothing can be answered (the header is undecodable, or it is not a
    /// call); the reason is for logs.
    Drop(MessageError),
    /// The answer, to send as is: the framework's (an error status), or
    /// the handler's when it finished at once (the dispatch polls it once,
    /// so a handler that never waits costs no task and no boxed wrapper).
    Reply(Payload),
    /// Run the handler; the future yields the encoded reply.
    Run {
        /// Transaction id.
        xid: u32,
        /// The handler, wrapped to encode its reply and catch panics.
        future: BoxFuture<'static, Payload>,
    },
}

impl fmt::Debug for Dispatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Drop(e) => f.debug_tuple("Drop").field(e).finish(),
            Self::Reply(p) => f.debug_tuple("Reply").field(p).finish(),
            Self::Run { xid, .. } => f.debug_struct("Run").field("xid", xid).finish(),
        }
    }
}

impl Services {
    /// No programs; `AUTH_NONE` and `AUTH_SYS` accepted.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the authentication policy.
    pub fn set_auth_policy(&mut self, policy: AuthPolicy) -> &mut Self {
        self.auth = policy;
        self
    }

    /// Gives these services a duplicate request cache: the replies of
    /// procedures declared with [`Version::non_idempotent`] are kept in
    /// it, and a retransmitted call (same client, XID, procedure and
    /// arguments) is answered from it — or waits for the first call's
    /// reply if that is still running — instead of running twice.
    pub fn set_reply_cache(&mut self, cache: Arc<ReplyCache>) -> &mut Self {
        self.reply_cache = Some(cache);
        self
    }

    /// Tells `observer` of every call dispatched from now on (metrics):
    /// the procedure, its [`CallOutcome`] and the time from dispatch to
    /// the encoded reply.
    pub fn set_observer(&mut self, observer: Arc<dyn CallObserver>) -> &mut Self {
        self.observer = Some(observer);
        self
    }

    /// The duplicate request cache, if any.
    pub fn reply_cache(&self) -> Option<&Arc<ReplyCache>> {
        self.reply_cache.as_ref()
    }

    /// Registers (or extends) a program version; add procedures to the
    /// returned [`Version`].
    pub fn program(&mut self, prog: u32, vers: u32) -> &mut Version {
        self.programs
            .entry(prog)
            .or_default()
            .entry(vers)
            .or_default()
    }

    /// What a call to (prog, vers, proc) with `args` reserves for its
    /// reply on a TCP connection: the whole reply message, from the
    /// program's [`Version::reply_bound`], or
    /// [`crate::budget::DEFAULT_REPLY_RESERVE`].
    pub fn reply_reserve(&self, prog: u32, vers: u32, proc_: u32, args: &[u8]) -> u64 {
        self.programs
            .get(&prog)
            .and_then(|vs| vs.get(&vers))
            .and_then(|v| v.reply_bound.as_ref())
            .and_then(|bound| bound(proc_, args))
            .map_or(DEFAULT_REPLY_RESERVE, |b| {
                b.saturating_add(crate::msg::MAX_ACCEPTED_REPLY_HEADER as u64)
            })
    }

    /// Whether no program is registered.
    pub fn is_empty(&self) -> bool {
        self.programs.is_empty()
    }

    /// Whether (prog, vers) is registered.
    pub fn is_registered(&self, prog: u32, vers: u32) -> bool {
        self.programs
            .get(&prog)
            .is_some_and(|v| v.contains_key(&vers))
    }

    /// Every registered (program, version), for rpcbind registration.
    pub fn registrations(&self) -> Vec<(u32, u32)> {
        self.programs
            .iter()
            .flat_map(|(p, vs)| vs.keys().map(move |v| (*p, *v)))
            .collect()
    }

    /// Decides what to do with a received call message (and tells the
    /// observer, if any, how it ended).
    pub fn dispatch(&self, message: &Payload, connection: &Connection) -> Dispatch {
        match &self.observer {
            None => self.dispatch_call(message, connection),
            Some(obs) => {
                let start = Instant::now();
                let d = self.dispatch_call(message, connection);
                Self::observed(obs, message, d, start)
            }
        }
    }

    /// Reports a dispatch's outcome to `obs`: at once for an answer made
    /// now, when its reply is encoded for a handler that runs.
    fn observed(
        obs: &Arc<dyn CallObserver>,
        message: &Payload,
        d: Dispatch,
        start: Instant,
    ) -> Dispatch {
        // The call header's fixed words: xid, CALL, 2, prog, vers, proc.
        let word = |at: usize| {
            message
                .inline()
                .get(at..at + 4)
                .map_or(0, |w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
        };
        let (prog, vers, proc_) = (word(12), word(16), word(20));
        match d {
            Dispatch::Drop(e) => {
                obs.call_done(prog, vers, proc_, CallOutcome::Dropped, start.elapsed());
                Dispatch::Drop(e)
            }
            Dispatch::Reply(r) => {
                obs.call_done(
                    prog,
                    vers,
                    proc_,
                    CallOutcome::of_reply(&r),
                    start.elapsed(),
                );
                Dispatch::Reply(r)
            }
            Dispatch::Run { xid, future } => {
                let obs = obs.clone();
                Dispatch::Run {
                    xid,
                    future: Box::pin(async move {
                        let r = future.await;
                        obs.call_done(
                            prog,
                            vers,
                            proc_,
                            CallOutcome::of_reply(&r),
                            start.elapsed(),
                        );
                        r
                    }),
                }
            }
        }
    }

    fn dispatch_call(&self, message: &Payload, connection: &Connection) -> Dispatch {
        let mut dec = Decoder::with_ddp(message);
        let call = match decode_header(&mut dec) {
            Ok(Header::Call(c)) => c,
            Ok(Header::Reply(r)) => {
                return Dispatch::Drop(MessageError::BadMsgType {
                    xid: r.xid,
                    value: 1,
                })
            }
            Err(MessageError::RpcVersion { xid, .. }) => {
                return reply_now(ReplyHeader::denied(
                    xid,
                    RejectedReply::RpcMismatch {
                        low: RPC_VERSION,
                        high: RPC_VERSION,
                    },
                ))
            }
            Err(MessageError::CredTooLong { xid, .. }) => {
                return deny_auth(xid, AuthStat::AUTH_BADCRED)
            }
            Err(MessageError::VerfTooLong { xid, .. }) => {
                return deny_auth(xid, AuthStat::AUTH_BADVERF)
            }
            Err(e) => return Dispatch::Drop(e),
        };
        let xid = call.xid;

        // Authentication (RFC 5531 §8-9).
        if !self.auth.accepts(call.cred.flavor) {
            let known = matches!(
                call.cred.flavor,
                AuthFlavor::AUTH_NONE | AuthFlavor::AUTH_SYS
            );
            let stat = if known {
                AuthStat::AUTH_TOOWEAK
            } else {
                AuthStat::AUTH_BADCRED
            };
            return deny_auth(xid, stat);
        }
        let Ok(cred) = Credential::from_opaque_auth(&call.cred) else {
            return deny_auth(xid, AuthStat::AUTH_BADCRED);
        };
        if matches!(cred, Credential::None | Credential::Sys(_))
            && (call.verf.flavor != AuthFlavor::AUTH_NONE || !call.verf.body.is_empty())
        {
            return deny_auth(xid, AuthStat::AUTH_BADVERF);
        }

        let Some(versions) = self.programs.get(&call.prog) else {
            return accepted(xid, AcceptedStatus::ProgUnavail);
        };
        let Some(version) = versions.get(&call.vers) else {
            let low = versions.keys().next().copied().unwrap_or(0);
            let high = versions.keys().next_back().copied().unwrap_or(0);
            return accepted(xid, AcceptedStatus::ProgMismatch { low, high });
        };
        let Some(handler) = version.procs.get(&call.proc_) else {
            return accepted(xid, AcceptedStatus::ProcUnavail);
        };
        // Non-idempotent procedures go through the duplicate request cache
        // before anything of the handler runs (its closure may do work
        // before returning its future).
        let mut ticket = None;
        if let Some(cache) = self
            .reply_cache
            .as_ref()
            .filter(|_| version.non_idempotent.contains(&call.proc_))
        {
            let key = CallKey {
                client: match connection.peer_addr() {
                    Some(a) => ClientId::Addr(a.ip()),
                    None => ClientId::Connection(connection.peer().to_owned()),
                },
                xid,
                prog: call.prog,
                vers: call.vers,
                proc_: call.proc_,
            };
            let sum = ArgsSum::of_message(message, dec.position());
            match cache.lookup(key, sum, std::time::Instant::now()) {
                Lookup::Replay(reply) => {
                    tracing::debug!(
                        xid = format_args!("{xid:#010x}"),
                        "retransmission answered from the duplicate request cache"
                    );
                    return Dispatch::Reply(reply);
                }
                Lookup::Wait(mut rx) => {
                    tracing::debug!(
                        xid = format_args!("{xid:#010x}"),
                        "retransmission of a call in progress: waiting for its reply"
                    );
                    return Dispatch::Run {
                        xid,
                        future: Box::pin(async move {
                            let first = rx
                                .wait_for(Option::is_some)
                                .await
                                .ok()
                                .and_then(|r| r.clone());
                            // `None`: the first call vanished without a
                            // reply (its task was dropped). Whether it took
                            // effect is unknown; it is not run again.
                            first.unwrap_or_else(|| {
                                encode_reply(&ReplyHeader::accepted(xid, AcceptedStatus::SystemErr))
                            })
                        }),
                    };
                }
                Lookup::Run(t) => ticket = Some(TicketGuard(Some((cache.clone(), t)))),
                Lookup::RunUncached => {}
            }
        }
        let info = CallInfo {
            xid,
            prog: call.prog,
            vers: call.vers,
            proc_: call.proc_,
            cred,
            verf: call.verf,
            connection: connection.clone(),
        };
        // A handler that is not an `async fn` may run code here; keep a
        // panic from taking the connection's reader down. (A failure drops
        // `ticket`, which takes the call out of the cache: framework
        // errors are never cached.)
        // Its future is polled once right there: most finish at once (no
        // I/O to wait for), and then no task and no wrapper is needed. One
        // that waits is polled again by its task, with a real waker
        // (futures register the waker of their latest poll).
        let noop = std::task::Waker::noop();
        let mut cx = Context::from_waker(noop);
        let decoded =
            std::panic::catch_unwind(AssertUnwindSafe(|| handler(info, &mut dec, &mut cx)));
        let fut = match decoded {
            Ok(Ok(Started::Done(r))) => {
                let reply = encode_result(connection, xid, r);
                if let Some(t) = ticket {
                    t.complete(reply.clone());
                }
                return Dispatch::Reply(reply);
            }
            Ok(Ok(Started::Panicked)) => {
                let reply = encode_panic(xid);
                if let Some(t) = ticket {
                    t.complete(reply.clone());
                }
                return Dispatch::Reply(reply);
            }
            Ok(Ok(Started::Running(f))) => f,
            Err(_) => {
                tracing::error!(
                    xid = format_args!("{xid:#010x}"),
                    "RPC handler panicked; answering SYSTEM_ERR"
                );
                return accepted(xid, AcceptedStatus::SystemErr);
            }
            Ok(Err(e)) => {
                tracing::debug!(xid = format_args!("{xid:#010x}"), error = %e, "GARBAGE_ARGS");
                return accepted(xid, AcceptedStatus::GarbageArgs);
            }
        };
        let connection = connection.clone();
        Dispatch::Run {
            xid,
            future: Box::pin(async move {
                let reply = match CatchUnwind(fut).await {
                    Ok(r) => encode_result(&connection, xid, r),
                    Err(()) => encode_panic(xid),
                };
                if let Some(t) = ticket {
                    t.complete(reply.clone());
                }
                reply
            }),
        }
    }
}

/// Completes a cache entry with the reply, or abandons it if the call's
/// future is dropped before it has one.
struct TicketGuard(Option<(Arc<ReplyCache>, crate::drc::Ticket)>);

impl TicketGuard {
    fn complete(mut self, reply: Payload) {
        if let Some((cache, ticket)) = self.0.take() {
            cache.complete(ticket, reply, std::time::Instant::now());
        }
    }
}

impl Drop for TicketGuard {
    fn drop(&mut self) {
        if let Some((cache, ticket)) = self.0.take() {
            cache.abandon(ticket);
        }
    }
}

/// The framework's answer, at once: a reply with no results.
fn reply_now(h: ReplyHeader) -> Dispatch {
    Dispatch::Reply(encode_reply(&h))
}

/// An accepted reply with an error status.
fn accepted(xid: u32, status: AcceptedStatus) -> Dispatch {
    reply_now(ReplyHeader::accepted(xid, status))
}

/// A call denied with `AUTH_ERROR`.
fn deny_auth(xid: u32, stat: AuthStat) -> Dispatch {
    reply_now(ReplyHeader::denied(xid, RejectedReply::AuthError(stat)))
}

/// Polls a future, turning a panic into `Err(())`.
struct CatchUnwind<F>(F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, ()>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(inner).poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(_) => Poll::Ready(Err(())),
        }
    }
}
