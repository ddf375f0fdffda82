//! The client's async driver: COMPOUNDs on the session's slots, sent again
//! on the same slot and sequence id across reconnections, the session
//! (re)established and the state reclaimed after a server restart, and
//! three tasks — lease renewal, the connection watcher that binds each new
//! connection to the session's back channel (BIND_CONN_TO_SESSION), and
//! the callback task that returns recalled delegations. The rules live in
//! the sans-IO modules (`slots`, `session`, `state`, `callback`); the
//! driver only sequences them. This file holds its state (`Inner`) and
//! runs the COMPOUNDs; `recovery.rs` establishes and recovers the session,
//! `tasks.rs` starts the client, runs its tasks and closes it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rpcrdma_oncrpc::{CallHints, RpcError};
use rpcrdma_sync::lock;
use tokio::sync::{broadcast, mpsc, Notify};

use super::backchannel::{Callbacks, CbShared, CbStats};
use super::cache::FileShared;
use super::callback::CbEvent;
use super::config::Nfs4ClientConfig;
use super::error::{Chain, Nfs4Error, Result, Status, Violation};
use super::ops;
use super::session::{self, Lease, Terms};
use super::slots::{Grant, Next, Outcome, SlotTable};
use super::state::ClientState;
use crate::proto::nfs4 as p;
use p::NfsArgop4 as A;
use p::NfsResop4 as R;

/// Something that happened to the client's state, for whoever listens
/// ([`Nfs4Client::events`](super::Nfs4Client::events)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientEvent {
    /// OPEN granted a delegation.
    Delegated {
        /// The file.
        fh: Bytes,
        /// Whether it is a write delegation.
        write: bool,
    },
    /// The server recalled a delegation (CB_RECALL or CB_RECALL_ANY).
    Recalled {
        /// The file.
        fh: Bytes,
    },
    /// A recalled delegation was returned (DELEGRETURN), after its file's
    /// cached writes were flushed.
    Returned {
        /// The file.
        fh: Bytes,
        /// From the recall's arrival to DELEGRETURN's answer.
        took: Duration,
        /// DELEGRETURN's status (an error means the server had revoked it).
        status: Status,
    },
    /// The session was established again; `reclaimed` opens and locks
    /// were reclaimed in the grace period, `reopened` opened again after
    /// it, `lost` could not be.
    Recovered {
        /// Reclaimed opens and locks.
        reclaimed: usize,
        /// Opens and locks taken again without a grace period.
        reopened: usize,
        /// Opens that could not be recovered.
        lost: usize,
    },
    /// A connection was bound to the session's back channel.
    BackchannelBound,
}

/// The client's view of its session, for reports.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Report {
    /// The client ID.
    pub clientid: u64,
    /// The session ID.
    pub session: [u8; 16],
    /// The fore channel as granted.
    pub fore: p::ChannelAttrs4,
    /// The back channel as granted.
    pub back: p::ChannelAttrs4,
    /// Whether CREATE_SESSION made the client's connection the back channel.
    pub back_on_connection: bool,
    /// The lease.
    pub lease: Duration,
    /// The largest READ and WRITE.
    pub io: (u32, u32),
    /// Every SEQUENCE status flag the server set.
    pub flags_seen: u32,
    /// The flags set in answers to SEQUENCEs sent after the server's
    /// CB_NULL probe was answered.
    pub flags_after_probe: u32,
    /// The flags of the last SEQUENCE.
    pub last_flags: u32,
    /// SEQUENCEs answered after the probe.
    pub sequences_after_probe: u64,
    /// The backchannel's counts.
    pub callbacks: CbStats,
    /// Times the session was established again.
    pub recoveries: u32,
    /// The server's `eir_server_owner.so_major_id` and scope.
    pub server: (Bytes, Bytes),
    /// The implementation the server named, if it did.
    pub server_impl: Option<(Bytes, Bytes)>,
}

pub(crate) struct Sess {
    pub(crate) clientid: u64,
    pub(super) cs_seq: u32,
    pub(crate) id: [u8; 16],
    pub(crate) epoch: u64,
    pub(super) slots: SlotTable,
    pub(super) terms: Option<Terms>,
    pub(super) lease: Lease,
    pub(super) flags_seen: u32,
    pub(super) flags_after_probe: u32,
    pub(super) last_flags: u32,
    pub(super) sequences_after_probe: u64,
    pub(super) bound_conn: Option<u64>,
    pub(super) bound_at: Instant,
    pub(super) last_rebind: Option<Instant>,
    pub(crate) root: Bytes,
    pub(crate) rsize: u32,
    pub(crate) wsize: u32,
    pub(super) recoveries: u32,
    pub(super) server: (Bytes, Bytes),
    pub(super) server_impl: Option<(Bytes, Bytes)>,
    pub(super) reclaim_done: bool,
}

pub(crate) struct Inner {
    pub(crate) nfs: p::nfs_v4::Client,
    pub(crate) cfg: Nfs4ClientConfig,
    pub(super) cb: Arc<CbShared>,
    pub(crate) sess: Mutex<Sess>,
    pub(super) slot_free: Notify,
    pub(super) gate: tokio::sync::RwLock<()>,
    pub(super) recovery: tokio::sync::Mutex<()>,
    pub(crate) state: Mutex<ClientState>,
    pub(crate) files: Mutex<Vec<Weak<FileShared>>>,
    pub(super) events: broadcast::Sender<ClientEvent>,
    pub(super) ids: AtomicU64,
    pub(super) verifier: [u8; 8],
    pub(super) owner: Bytes,
    pub(super) closed: AtomicBool,
    pub(crate) lock_wake: Notify,
    pub(super) tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    pub(super) cb_program: u32,
    pub(super) me: Weak<Inner>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for t in lock(&self.tasks).drain(..) {
            t.abort();
        }
    }
}

/// How a COMPOUND is run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mode {
    /// Waits while the session is being recovered (everything but the
    /// recovery's own COMPOUNDs).
    gated: bool,
    /// Recovers the session and state when the server lost them.
    recover: bool,
}

pub(crate) const NORMAL: Mode = Mode {
    gated: true,
    recover: true,
};
pub(super) const RECOVERY: Mode = Mode {
    gated: false,
    recover: false,
};

/// A boxed future of the client's own (breaks the recursion between
/// running a COMPOUND and recovering the session, which runs COMPOUNDs).
type BoxFut<'a> = Pin<Box<dyn Future<Output = Result<()>> + Send + 'a>>;

/// Whether an RPC failure may be followed by the same request again.
pub(super) fn transient(e: &RpcError) -> bool {
    matches!(
        e,
        RpcError::Timeout { .. }
            | RpcError::ConnectionLost { .. }
            | RpcError::Connect(_)
            | RpcError::Transport { .. }
    )
}

/// Statuses that say the server lost the client's state (it restarted, or
/// the lease expired): recover and run the COMPOUND again.
pub(super) fn state_lost(s: Status) -> bool {
    matches!(
        s,
        Status::Nfs4errStaleStateid
            | Status::Nfs4errStaleClientid
            | Status::Nfs4errExpired
            | Status::Nfs4errBadsession
            | Status::Nfs4errDeadsession
    )
}

pub(super) fn sleep_for(attempt: u32) -> Duration {
    Duration::from_millis((20u64 << attempt.min(6)).min(1000))
}

/// The client's host name for EXCHANGE_ID and AUTH_SYS.
pub(crate) fn host_name() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .chars()
        .take(64)
        .collect()
}

impl Inner {
    pub(crate) fn new(
        nfs: p::nfs_v4::Client,
        cb: Callbacks,
        cfg: Nfs4ClientConfig,
    ) -> (Arc<Self>, mpsc::UnboundedReceiver<(CbEvent, Instant)>) {
        let now = Instant::now();
        let verifier: [u8; 8] = rand::random();
        let owner = cfg.owner.clone().unwrap_or_else(|| {
            Bytes::from(format!(
                "rpcrdma-nfs4/{}/{}/{:016x}",
                host_name(),
                std::process::id(),
                u64::from_be_bytes(verifier)
            ))
        });
        let (events, _) = broadcast::channel(256);
        let Callbacks {
            shared,
            rx,
            program,
            ..
        } = cb;
        let inner = Arc::new_cyclic(|me| Self {
            me: me.clone(),
            nfs,
            cb: shared,
            sess: Mutex::new(Sess {
                clientid: 0,
                cs_seq: 0,
                id: [0; 16],
                epoch: 0,
                slots: SlotTable::new(1),
                terms: None,
                lease: Lease::new(Duration::from_secs(90), now),
                flags_seen: 0,
                flags_after_probe: 0,
                last_flags: 0,
                sequences_after_probe: 0,
                bound_conn: None,
                bound_at: now,
                last_rebind: None,
                root: Bytes::new(),
                rsize: 4096,
                wsize: 4096,
                recoveries: 0,
                server: (Bytes::new(), Bytes::new()),
                server_impl: None,
                reclaim_done: false,
            }),
            slot_free: Notify::new(),
            gate: tokio::sync::RwLock::new(()),
            recovery: tokio::sync::Mutex::new(()),
            state: Mutex::new(ClientState::new()),
            files: Mutex::new(Vec::new()),
            events,
            ids: AtomicU64::new(1),
            verifier,
            owner,
            closed: AtomicBool::new(false),
            lock_wake: Notify::new(),
            tasks: Mutex::new(Vec::new()),
            cb_program: program,
            cfg,
        });
        (inner, rx)
    }

    pub(crate) fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn clientid(&self) -> u64 {
        lock(&self.sess).clientid
    }

    pub(crate) fn emit(&self, e: ClientEvent) {
        let _ = self.events.send(e);
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ClientEvent> {
        self.events.subscribe()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    pub(crate) fn report(&self) -> Report {
        let s = lock(&self.sess);
        let t = s.terms.clone();
        Report {
            clientid: s.clientid,
            session: s.id,
            fore: t
                .as_ref()
                .map(|t| t.fore.clone())
                .unwrap_or_else(|| session::fore_attrs(0, 0, 0)),
            back: t
                .as_ref()
                .map(|t| t.back.clone())
                .unwrap_or_else(|| self.cfg.back_channel.attrs()),
            back_on_connection: t.as_ref().is_some_and(|t| t.back_on_connection),
            lease: s.lease.period(),
            io: (s.rsize, s.wsize),
            flags_seen: s.flags_seen,
            flags_after_probe: s.flags_after_probe,
            last_flags: s.last_flags,
            sequences_after_probe: s.sequences_after_probe,
            callbacks: lock(&self.cb.stats).clone(),
            recoveries: s.recoveries,
            server: s.server.clone(),
            server_impl: s.server_impl.clone(),
        }
    }

    /// A free slot of the current session (waits for one).
    pub(super) async fn acquire(&self) -> (Grant, [u8; 16], u64, u32, u32) {
        loop {
            let freed = self.slot_free.notified();
            {
                let mut s = lock(&self.sess);
                if let Some(g) = s.slots.acquire() {
                    let max = s
                        .terms
                        .as_ref()
                        .map_or(1 << 20, |t| t.fore.ca_maxresponsesize);
                    let highest = s.slots.highest_in_use(g);
                    return (g, s.id, s.epoch, max, highest);
                }
            }
            freed.await;
        }
    }

    /// Ends a request on its slot (a slot of an older session is gone).
    pub(super) fn complete(&self, epoch: u64, g: Grant, o: Outcome) -> Next {
        let next = {
            let mut s = lock(&self.sess);
            if s.epoch != epoch {
                Next::Retry
            } else {
                s.slots.complete(g, o)
            }
        };
        self.slot_free.notify_waiters();
        next
    }

    /// Sends one COMPOUND, again with the same arguments (same slot,
    /// same sequence id) while the RPC fails for want of a connection,
    /// until `deadline`.
    pub(super) async fn send(
        &self,
        args: &p::Compound4args,
        hints: &CallHints,
        deadline: Instant,
    ) -> std::result::Result<p::Compound4res, RpcError> {
        let mut attempt = 0;
        loop {
            match self.nfs.compound_with_hints(args.clone(), hints).await {
                Ok(r) => return Ok(r),
                Err(e) if transient(&e) && Instant::now() < deadline && !self.is_closed() => {
                    attempt += 1;
                    tracing::debug!(error = %Chain(&e), attempt, "COMPOUND failed for want of a connection: sending it again");
                    tokio::time::sleep(sleep_for(attempt).max(Duration::from_millis(100))).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// A COMPOUND without SEQUENCE (EXCHANGE_ID, CREATE_SESSION,
    /// BIND_CONN_TO_SESSION, DESTROY_*): its one result.
    pub(super) async fn single(&self, op: A) -> Result<R> {
        let name = ops::arg_name(&op);
        let args = p::Compound4args {
            tag: Bytes::new(),
            minorversion: self.cfg.minor_version,
            argarray: vec![op],
        };
        let hints = ops::hints(&args.argarray, 1 << 16);
        let deadline = Instant::now() + self.cfg.patience;
        let mut attempt = 0;
        loop {
            let res = self
                .send(&args, &hints, deadline)
                .await
                .map_err(|source| Nfs4Error::Rpc { op: name, source })?;
            if res.status == Status::Nfs4errMinorVersMismatch {
                return Err(Nfs4Error::Unsupported {
                    minor: self.cfg.minor_version,
                    rpc: None,
                });
            }
            if res.status == Status::Nfs4errDelay && Instant::now() < deadline {
                attempt += 1;
                tokio::time::sleep(sleep_for(attempt)).await;
                continue;
            }
            let Some(r) = res.resarray.into_iter().next() else {
                return Err(Nfs4Error::status_of(name, "", res.status));
            };
            let (rname, st) = ops::result_status(&r);
            if st != Status::Nfs4Ok {
                return Err(Nfs4Error::status_of(rname, "", st));
            }
            return Ok(r);
        }
    }

    /// Runs a COMPOUND on the session: SEQUENCE and the operations `build`
    /// makes (again for each attempt: after a recovery the stateids are
    /// new). Returns the results after SEQUENCE.
    pub(crate) async fn run<F>(&self, what: &str, mode: Mode, mut build: F) -> Result<Vec<R>>
    where
        F: FnMut() -> Result<Vec<A>>,
    {
        let deadline = Instant::now() + self.cfg.patience;
        let mut attempt = 0u32;
        loop {
            if self.is_closed() {
                return Err(Nfs4Error::Shutdown);
            }
            attempt += 1;
            let gate = if mode.gated {
                Some(self.gate.read().await)
            } else {
                None
            };
            let ops = build()?;
            let name = ops
                .iter()
                .rev()
                .find(|a| !matches!(a, A::OpGetattr(_) | A::OpGetfh))
                .map_or("SEQUENCE", ops::arg_name);
            let cache = ops::must_cache(&ops);
            let (grant, sid, epoch, max_resp, highest) = self.acquire().await;
            let hints = ops::hints(&ops, max_resp);
            let mut argarray = Vec::with_capacity(ops.len() + 1);
            argarray.push(A::OpSequence(p::Sequence4args {
                sa_sessionid: sid,
                sa_sequenceid: grant.seqid,
                sa_slotid: grant.slot,
                sa_highest_slotid: highest,
                sa_cachethis: cache,
            }));
            argarray.extend(ops);
            let args = p::Compound4args {
                tag: Bytes::new(),
                minorversion: self.cfg.minor_version,
                argarray,
            };
            let sent = Instant::now();
            let res = match self.send(&args, &hints, deadline).await {
                Ok(r) => r,
                Err(source) => {
                    self.complete(epoch, grant, Outcome::Lost);
                    return Err(Nfs4Error::Rpc { op: name, source });
                }
            };
            let mut results = res.resarray.into_iter();
            match results.next() {
                Some(R::OpSequence(p::Sequence4res::Nfs4Ok(ok))) => {
                    self.complete(
                        epoch,
                        grant,
                        Outcome::Done {
                            highest_slotid: ok.sr_highest_slotid,
                            target_highest_slotid: ok.sr_target_highest_slotid,
                        },
                    );
                    drop(gate);
                    self.sequenced(epoch, sent, ok.sr_status_flags);
                    let rest: Vec<R> = results.collect();
                    if res.status == Status::Nfs4Ok {
                        return Ok(rest);
                    }
                    let Some(last) = rest.last() else {
                        return Err(Nfs4Error::Protocol(Violation::NoResult {
                            what: what.to_owned(),
                            status: res.status,
                        }));
                    };
                    let (op, st) = ops::result_status(last);
                    if mode.recover && state_lost(st) {
                        tracing::info!(op, status = ?st, "the server lost our state: recovering");
                        self.recover_dyn(
                            epoch,
                            st != Status::Nfs4errBadsession && st != Status::Nfs4errDeadsession,
                        )
                        .await?;
                        continue;
                    }
                    if matches!(st, Status::Nfs4errDelay | Status::Nfs4errGrace)
                        && Instant::now() < deadline
                    {
                        tracing::debug!(op, status = ?st, attempt, "waiting to run it again");
                        tokio::time::sleep(sleep_for(attempt)).await;
                        continue;
                    }
                    if let R::OpLock(p::Lock4res::Nfs4errDenied(d)) = last {
                        return Err(Nfs4Error::Denied {
                            offset: d.offset,
                            length: d.length,
                            write: matches!(
                                d.locktype,
                                p::NfsLockType4::WriteLt | p::NfsLockType4::WritewLt
                            ),
                            owner: d.owner.owner.clone(),
                        });
                    }
                    return Err(Nfs4Error::status_of(op, what, st));
                }
                Some(R::OpSequence(p::Sequence4res::Default(st))) => {
                    let next = self.complete(epoch, grant, Outcome::Refused(st));
                    drop(gate);
                    match next {
                        Next::Retry | Next::Done if Instant::now() < deadline => {
                            tokio::time::sleep(sleep_for(attempt)).await;
                            continue;
                        }
                        Next::Fail(s) if mode.recover && state_lost(s) => {
                            tracing::info!(status = ?s, "SEQUENCE: the session is gone: recovering");
                            self.recover_dyn(epoch, s == Status::Nfs4errStaleClientid)
                                .await?;
                            continue;
                        }
                        Next::Fail(Status::Nfs4errConnNotBoundToSession)
                            if Instant::now() < deadline =>
                        {
                            self.bind_dyn().await?;
                            continue;
                        }
                        Next::Fail(s) => return Err(Nfs4Error::status_of("SEQUENCE", what, s)),
                        _ => return Err(Nfs4Error::status_of("SEQUENCE", what, st)),
                    }
                }
                _ => {
                    self.complete(epoch, grant, Outcome::Refused(res.status));
                    if res.status == Status::Nfs4errMinorVersMismatch {
                        return Err(Nfs4Error::Unsupported {
                            minor: self.cfg.minor_version,
                            rpc: None,
                        });
                    }
                    return Err(Nfs4Error::status_of("COMPOUND", what, res.status));
                }
            }
        }
    }

    /// A SEQUENCE sent at `sent` succeeded with `flags`.
    pub(super) fn sequenced(self: &Inner, epoch: u64, sent: Instant, flags: u32) {
        let probed = lock(&self.cb.stats).first_null;
        let actions = session::flag_actions(flags);
        let now = Instant::now();
        let rebind = {
            let mut s = lock(&self.sess);
            if s.epoch != epoch {
                return;
            }
            s.lease.renewed(sent);
            s.flags_seen |= flags;
            s.last_flags = flags;
            if probed.is_some_and(|t| t <= sent) {
                s.flags_after_probe |= flags;
                s.sequences_after_probe += 1;
            }
            // The server probes a new backchannel first: give it time.
            let due = actions.rebind_backchannel
                && self.cfg.backchannel
                && now.duration_since(s.bound_at) > Duration::from_secs(3)
                && s.last_rebind
                    .is_none_or(|t| now.duration_since(t) > Duration::from_secs(10));
            if due {
                s.last_rebind = Some(now);
            }
            due
        };
        if rebind || actions.test_state || actions.recover {
            tracing::info!(flags = ?session::flag_names(flags), "SEQUENCE status flags");
            let Some(me) = self.me() else { return };
            tokio::spawn(async move {
                if rebind {
                    if let Err(e) = me.bind_dyn().await {
                        tracing::warn!(error = %Chain(&e), "BIND_CONN_TO_SESSION failed");
                    }
                }
                if actions.test_state {
                    me.test_delegations().await;
                }
                if actions.recover {
                    if let Err(e) = me.recover_dyn(epoch, true).await {
                        tracing::warn!(error = %Chain(&e), "recovery failed");
                    }
                }
            });
        }
    }

    pub(super) fn me(&self) -> Option<Arc<Self>> {
        self.me.upgrade()
    }

    pub(super) fn recover_dyn(&self, epoch: u64, full: bool) -> BoxFut<'_> {
        Box::pin(self.recover(epoch, full))
    }

    pub(super) fn bind_dyn(&self) -> BoxFut<'_> {
        Box::pin(self.bind_conn())
    }
}

/// Hex of a session ID, for logs.
pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
