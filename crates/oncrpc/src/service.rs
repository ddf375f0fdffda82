//! Programs a peer serves: registration and dispatch.
//!
//! [`Services`] maps (program, version, procedure) to async handlers. The
//! dispatch step ([`Services::dispatch`]) is synchronous and pure: it
//! decodes the call header, applies the authentication rules and decodes
//! the arguments, then either answers at once with the framework's error
//! reply (`RPC_MISMATCH`, `AUTH_ERROR`, `PROG_UNAVAIL`, `PROG_MISMATCH`,
//! `PROC_UNAVAIL`, `GARBAGE_ARGS`) or hands back the handler's future.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rpcrdma_xdr::{Decoder, Payload, PayloadEncoder, XdrError};

use crate::auth::Credential;
use crate::budget::{ReplyBoundFn, DEFAULT_REPLY_RESERVE};
use crate::codec::{Marshal, Unmarshal};
use crate::conn::Connection;
use crate::drc::{ArgsSum, CallKey, ClientId, Lookup, ReplyCache};
use crate::error::MessageError;
use crate::msg::{
    decode_header, AcceptedStatus, AuthFlavor, AuthStat, Header, OpaqueAuth, RejectedReply,
    ReplyHeader, RPC_VERSION,
};
use crate::util::BoxFuture;

/// What a handler may answer instead of results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProcError {
    /// Reply `GARBAGE_ARGS` (the arguments are unusable).
    #[error("GARBAGE_ARGS")]
    GarbageArgs,
    /// Reply `SYSTEM_ERR`.
    #[error("SYSTEM_ERR")]
    SystemErr,
    /// Reply `PROC_UNAVAIL`.
    #[error("PROC_UNAVAIL")]
    ProcUnavail,
    /// Deny the call with `AUTH_ERROR` and this `auth_stat`.
    #[error("AUTH_ERROR {0}")]
    Auth(AuthStat),
}

/// What a handler learns about the call besides its arguments.
#[derive(Clone)]
pub struct CallInfo {
    /// Transaction id (the peer's; unique among its outstanding calls).
    pub xid: u32,
    /// Program.
    pub prog: u32,
    /// Version.
    pub vers: u32,
    /// Procedure.
    pub proc_: u32,
    /// The credential, interpreted.
    pub cred: Credential,
    /// The verifier.
    pub verf: OpaqueAuth,
    /// The connection the call arrived on: [`Connection::client`] makes
    /// calls back to the peer over it (RFC 8167 reverse direction, NFSv4.1
    /// backchannel).
    pub connection: Connection,
}

impl fmt::Debug for CallInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallInfo")
            .field("xid", &format_args!("{:#010x}", self.xid))
            .field("prog", &self.prog)
            .field("vers", &self.vers)
            .field("proc_", &self.proc_)
            .field("cred", &self.cred)
            .finish_non_exhaustive()
    }
}

/// A registered procedure: decodes the arguments, calls the handler and
/// polls its future once (with the dispatch's context).
type Handler =
    dyn Fn(CallInfo, &mut Decoder<'_>, &mut Context<'_>) -> Result<Started, XdrError> + Send + Sync;

/// How a handler's future did on its first poll.
enum Started {
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
type Reply = Result<Box<dyn Marshal + Send>, ProcError>;

/// How a call the [`Services`] dispatched ended, as its reply says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CallOutcome {
    /// `SUCCESS` (the program's own status, if any, is in its results).
    Success,
    /// `PROG_UNAVAIL`.
    ProgUnavail,
    /// `PROG_MISMATCH`.
    ProgMismatch,
    /// `PROC_UNAVAIL`.
    ProcUnavail,
    /// `GARBAGE_ARGS`.
    GarbageArgs,
    /// `SYSTEM_ERR` (a handler that failed or panicked, too).
    SystemErr,
    /// Denied: `RPC_MISMATCH`.
    RpcMismatch,
    /// Denied: `AUTH_ERROR`.
    AuthError,
    /// Not answered: the message was not a call that can be answered.
    Dropped,
}

impl CallOutcome {
    /// Every outcome, in a fixed order (index with [`Self::index`]).
    pub const ALL: [CallOutcome; 9] = [
        Self::Success,
        Self::ProgUnavail,
        Self::ProgMismatch,
        Self::ProcUnavail,
        Self::GarbageArgs,
        Self::SystemErr,
        Self::RpcMismatch,
        Self::AuthError,
        Self::Dropped,
    ];

    /// Its place in [`Self::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// A lower-case name (`success`, `garbage_args`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::ProgUnavail => "prog_unavail",
            Self::ProgMismatch => "prog_mismatch",
            Self::ProcUnavail => "proc_unavail",
            Self::GarbageArgs => "garbage_args",
            Self::SystemErr => "system_err",
            Self::RpcMismatch => "rpc_mismatch",
            Self::AuthError => "auth_error",
            Self::Dropped => "dropped",
        }
    }

    /// The outcome an encoded reply says (`SystemErr` for one that does
    /// not decode: every reply here is ours).
    pub fn of_reply(reply: &Payload) -> Self {
        let b = reply.inline();
        let word = |at: usize| -> Option<u32> {
            let w = b.get(at..at.checked_add(4)?)?;
            Some(u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
        };
        let outcome = || -> Option<Self> {
            match word(8)? {
                // MSG_ACCEPTED: the verifier (flavor, length, body), then
                // accept_stat.
                0 => {
                    let len = usize::try_from(word(16)?).ok()?;
                    let at = 20usize.checked_add(len.checked_add(3)? & !3)?;
                    Some(match word(at)? {
                        0 => Self::Success,
                        1 => Self::ProgUnavail,
                        2 => Self::ProgMismatch,
                        3 => Self::ProcUnavail,
                        4 => Self::GarbageArgs,
                        _ => Self::SystemErr,
                    })
                }
                // MSG_DENIED: reject_stat.
                1 => Some(if word(12)? == 0 {
                    Self::RpcMismatch
                } else {
                    Self::AuthError
                }),
                _ => None,
            }
        };
        outcome().unwrap_or(Self::SystemErr)
    }
}

/// Told of every call [`Services`] dispatch: which procedure, how it
/// ended, how long from its dispatch to its encoded reply. Set with
/// [`Services::set_observer`]; without one, dispatch measures nothing.
/// Called on the connection's reader or the handler's task: keep it
/// cheap (atomics, no lock per call).
pub trait CallObserver: Send + Sync + 'static {
    /// A call was answered (or dropped: `outcome` [`CallOutcome::Dropped`],
    /// with the program, version and procedure 0 when the header did not
    /// decode).
    fn call_done(&self, prog: u32, vers: u32, proc_: u32, outcome: CallOutcome, elapsed: Duration);
}

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

/// The procedures of one registered (program, version).
#[derive(Default)]
pub struct Version {
    procs: BTreeMap<u32, Arc<Handler>>,
    non_idempotent: BTreeSet<u32>,
    reply_bound: Option<Arc<ReplyBoundFn>>,
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
    /// `CREATE`, `REMOVE`, `RENAME`, `WRITE`, …). When the [`Services`]
    /// have a duplicate request cache ([`Services::set_reply_cache`]),
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

/// A handler's results behind the encoding trait.
fn boxed_results<R: Marshal + Send + 'static>(r: Result<R, ProcError>) -> Reply {
    r.map(|r| -> Box<dyn Marshal + Send> { Box::new(r) })
}

/// Encodes a handler's outcome (results in the connection's arena).
fn encode_result(connection: &Connection, xid: u32, r: Reply) -> Payload {
    match r {
        Ok(results) => {
            let h = ReplyHeader::success(xid);
            let mut arena = crate::util::lock(connection.ops.arena());
            let mut pe = PayloadEncoder::in_arena(&mut arena, h.encoded_len() + 64);
            let mut enc = pe.encoder();
            h.encode(&mut enc);
            results.marshal(&mut enc);
            pe.finish_into(&mut arena)
        }
        Err(ProcError::Auth(stat)) => {
            encode_reply(&ReplyHeader::denied(xid, RejectedReply::AuthError(stat)))
        }
        Err(e) => encode_reply(&ReplyHeader::accepted(
            xid,
            match e {
                ProcError::GarbageArgs => AcceptedStatus::GarbageArgs,
                ProcError::ProcUnavail => AcceptedStatus::ProcUnavail,
                _ => AcceptedStatus::SystemErr,
            },
        )),
    }
}

/// The answer to a call whose handler panicked.
fn encode_panic(xid: u32) -> Payload {
    tracing::error!(
        xid = format_args!("{xid:#010x}"),
        "RPC handler panicked; answering SYSTEM_ERR"
    );
    encode_reply(&ReplyHeader::accepted(xid, AcceptedStatus::SystemErr))
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

fn reply_now(h: ReplyHeader) -> Dispatch {
    Dispatch::Reply(encode_reply(&h))
}

fn accepted(xid: u32, status: AcceptedStatus) -> Dispatch {
    reply_now(ReplyHeader::accepted(xid, status))
}

fn deny_auth(xid: u32, stat: AuthStat) -> Dispatch {
    reply_now(ReplyHeader::denied(xid, RejectedReply::AuthError(stat)))
}

/// Encodes a reply that has no results.
pub fn encode_reply(h: &ReplyHeader) -> Payload {
    let mut pe = PayloadEncoder::with_capacity(h.encoded_len());
    h.encode(&mut pe.encoder());
    pe.finish()
}

/// Encodes a successful reply: header, then the results with their
/// DDP-eligible items out of line.
pub fn encode_success(xid: u32, results: &dyn Marshal) -> Payload {
    let h = ReplyHeader::success(xid);
    let mut pe = PayloadEncoder::with_capacity(h.encoded_len() + 64);
    let mut enc = pe.encoder();
    h.encode(&mut enc);
    results.marshal(&mut enc);
    pe.finish()
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
