//! The client's async driver: COMPOUNDs on the session's slots, sent again
//! on the same slot and sequence id across reconnections, the session
//! (re)established and the state reclaimed after a server restart, and
//! three tasks — lease renewal, the connection watcher that binds each new
//! connection to the session's back channel (BIND_CONN_TO_SESSION), and
//! the callback task that returns recalled delegations. The rules live in
//! the sans-IO modules (`slots`, `session`, `state`, `callback`); this file
//! only sequences them.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rpcrdma_oncrpc::{CallHints, RpcError};
use rpcrdma_sync::lock;
use tokio::sync::{broadcast, mpsc, Notify};

use super::attrs::{self, Attrs};
use super::backchannel::{Callbacks, CbShared, CbStats};
use super::callback::CbEvent;
use super::error::{Nfs4Error, Result, Status};
use super::files::FileShared;
use super::ops;
use super::session::{self, Lease, Terms};
use super::slots::{Grant, Next, Outcome, SlotTable};
use super::state::{ClientState, DelegRecord, Range};
use super::Nfs4ClientConfig;
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
    cs_seq: u32,
    pub(crate) id: [u8; 16],
    pub(crate) epoch: u64,
    slots: SlotTable,
    terms: Option<Terms>,
    lease: Lease,
    flags_seen: u32,
    flags_after_probe: u32,
    last_flags: u32,
    sequences_after_probe: u64,
    bound_conn: Option<u64>,
    bound_at: Instant,
    last_rebind: Option<Instant>,
    pub(crate) root: Bytes,
    pub(crate) rsize: u32,
    pub(crate) wsize: u32,
    recoveries: u32,
    server: (Bytes, Bytes),
    server_impl: Option<(Bytes, Bytes)>,
    reclaim_done: bool,
}

pub(crate) struct Inner {
    pub(crate) nfs: p::nfs_v4::Client,
    pub(crate) cfg: Nfs4ClientConfig,
    cb: Arc<CbShared>,
    pub(crate) sess: Mutex<Sess>,
    slot_free: Notify,
    gate: tokio::sync::RwLock<()>,
    recovery: tokio::sync::Mutex<()>,
    pub(crate) state: Mutex<ClientState>,
    pub(crate) files: Mutex<Vec<Weak<FileShared>>>,
    events: broadcast::Sender<ClientEvent>,
    ids: AtomicU64,
    verifier: [u8; 8],
    owner: Bytes,
    closed: AtomicBool,
    pub(crate) lock_wake: Notify,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    cb_program: u32,
    me: Weak<Inner>,
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
const RECOVERY: Mode = Mode {
    gated: false,
    recover: false,
};

/// A boxed future of the client's own (breaks the recursion between
/// running a COMPOUND and recovering the session, which runs COMPOUNDs).
type BoxFut<'a> = Pin<Box<dyn Future<Output = Result<()>> + Send + 'a>>;

/// Whether an RPC failure may be followed by the same request again.
fn transient(e: &RpcError) -> bool {
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
fn state_lost(s: Status) -> bool {
    matches!(
        s,
        Status::Nfs4errStaleStateid
            | Status::Nfs4errStaleClientid
            | Status::Nfs4errExpired
            | Status::Nfs4errBadsession
            | Status::Nfs4errDeadsession
    )
}

fn sleep_for(attempt: u32) -> Duration {
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
    async fn acquire(&self) -> (Grant, [u8; 16], u64, u32, u32) {
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
    fn complete(&self, epoch: u64, g: Grant, o: Outcome) -> Next {
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
    async fn send(
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
                    tracing::debug!(error = %e, attempt, "COMPOUND failed for want of a connection: sending it again");
                    tokio::time::sleep(sleep_for(attempt).max(Duration::from_millis(100))).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// A COMPOUND without SEQUENCE (EXCHANGE_ID, CREATE_SESSION,
    /// BIND_CONN_TO_SESSION, DESTROY_*): its one result.
    async fn single(&self, op: A) -> Result<R> {
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
                    why: "NFS4ERR_MINOR_VERS_MISMATCH".into(),
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
                        return Err(Nfs4Error::Protocol(format!(
                            "{what}: status {:?} without a result",
                            res.status
                        )));
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
                            why: "NFS4ERR_MINOR_VERS_MISMATCH".into(),
                        });
                    }
                    return Err(Nfs4Error::status_of("COMPOUND", what, res.status));
                }
            }
        }
    }

    /// A SEQUENCE sent at `sent` succeeded with `flags`.
    fn sequenced(self: &Inner, epoch: u64, sent: Instant, flags: u32) {
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
                        tracing::warn!(error = %e, "BIND_CONN_TO_SESSION failed");
                    }
                }
                if actions.test_state {
                    me.test_delegations().await;
                }
                if actions.recover {
                    if let Err(e) = me.recover_dyn(epoch, true).await {
                        tracing::warn!(error = %e, "recovery failed");
                    }
                }
            });
        }
    }

    fn me(&self) -> Option<Arc<Self>> {
        self.me.upgrade()
    }

    fn recover_dyn(&self, epoch: u64, full: bool) -> BoxFut<'_> {
        Box::pin(self.recover(epoch, full))
    }

    fn bind_dyn(&self) -> BoxFut<'_> {
        Box::pin(self.bind_conn())
    }
}

impl Inner {
    /// EXCHANGE_ID (RFC 8881 §18.35) with the client's owner and verifier.
    async fn exchange_id(&self) -> Result<()> {
        let r = self
            .single(A::OpExchangeId(p::ExchangeId4args {
                eia_clientowner: p::ClientOwner4 {
                    co_verifier: self.verifier,
                    co_ownerid: self.owner.clone(),
                },
                eia_flags: 0,
                eia_state_protect: p::StateProtect4A::Sp4None,
                eia_client_impl_id: vec![p::NfsImplId4 {
                    nii_domain: Bytes::from_static(b"rpcrdma"),
                    nii_name: Bytes::from(format!("rpcrdma-nfs4 {}", env!("CARGO_PKG_VERSION"))),
                    nii_date: p::Nfstime4 {
                        seconds: 0,
                        nseconds: 0,
                    },
                }],
            }))
            .await?;
        let R::OpExchangeId(p::ExchangeId4res::Nfs4Ok(x)) = r else {
            return Err(Nfs4Error::Protocol(
                "EXCHANGE_ID answered another operation".into(),
            ));
        };
        if !matches!(x.eir_state_protect, p::StateProtect4R::Sp4None) {
            return Err(Nfs4Error::Protocol(
                "EXCHANGE_ID: the server chose state protection the client did not ask for".into(),
            ));
        }
        let mut s = lock(&self.sess);
        s.clientid = x.eir_clientid;
        s.cs_seq = x.eir_sequenceid;
        s.server = (
            x.eir_server_owner.so_major_id.clone(),
            x.eir_server_scope.clone(),
        );
        s.server_impl = x
            .eir_server_impl_id
            .first()
            .map(|i| (i.nii_domain.clone(), i.nii_name.clone()));
        Ok(())
    }

    /// CREATE_SESSION (RFC 8881 §18.36) with a backchannel on this
    /// connection; installs the new session.
    async fn create_session(&self) -> Result<()> {
        let (clientid, seq) = {
            let s = lock(&self.sess);
            (s.clientid, s.cs_seq)
        };
        let fore = session::fore_attrs(self.cfg.max_io, self.cfg.slots, self.cfg.max_operations);
        let back = self.cfg.back_channel.attrs();
        let host = Bytes::from(host_name());
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as u32);
        let r = self
            .single(A::OpCreateSession(p::CreateSession4args {
                csa_clientid: clientid,
                csa_sequence: seq,
                csa_flags: if self.cfg.backchannel {
                    p::CREATE_SESSION4_FLAG_CONN_BACK_CHAN
                } else {
                    0
                },
                csa_fore_chan_attrs: fore.clone(),
                csa_back_chan_attrs: back.clone(),
                csa_cb_program: self.cb_program,
                csa_sec_parms: vec![
                    p::CallbackSecParms4::AuthSys(p::AuthsysParms4 {
                        stamp,
                        machinename: host,
                        uid: 0,
                        gid: 0,
                        gids: Vec::new(),
                    }),
                    p::CallbackSecParms4::AuthNone,
                ],
            }))
            .await?;
        let R::OpCreateSession(p::CreateSession4res::Nfs4Ok(c)) = r else {
            return Err(Nfs4Error::Protocol(
                "CREATE_SESSION answered another operation".into(),
            ));
        };
        let terms = session::accept(&fore, &back, &c).map_err(Nfs4Error::Protocol)?;
        let conn = self.nfs.rpc().connection().map(|c| c.id());
        let now = Instant::now();
        {
            let mut s = lock(&self.sess);
            s.cs_seq = seq.wrapping_add(1);
            s.id = c.csr_sessionid;
            s.epoch += 1;
            s.slots = SlotTable::new(terms.fore.ca_maxrequests.min(self.cfg.slots.max(1)));
            s.lease.renewed(now);
            s.bound_conn = if terms.back_on_connection { conn } else { None };
            s.bound_at = now;
            s.rsize = s.rsize.max(4096);
            s.terms = Some(terms.clone());
            lock(&self.cb.bc).set_session(
                c.csr_sessionid,
                self.cfg.minor_version,
                terms.back.clone(),
            );
        }
        self.slot_free.notify_waiters();
        tracing::info!(
            session = %hex(&c.csr_sessionid),
            slots = terms.fore.ca_maxrequests,
            back_slots = terms.back.ca_maxrequests,
            backchannel = terms.back_on_connection,
            "NFSv4.1 session created"
        );
        if self.cfg.backchannel && !terms.back_on_connection {
            // The server did not take this connection for callbacks:
            // ask again with BIND_CONN_TO_SESSION.
            self.bind_only().await?;
        }
        Ok(())
    }

    /// BIND_CONN_TO_SESSION (RFC 8881 §18.34) of the current connection,
    /// fore channel and, if the server will, back channel; recovers the
    /// session if the server lost it.
    pub(crate) async fn bind_conn(&self) -> Result<()> {
        let epoch = lock(&self.sess).epoch;
        match self.bind_only().await {
            Err(e) if e.status().is_some_and(state_lost) => {
                tracing::info!("BIND_CONN_TO_SESSION: the session is gone: recovering");
                self.recover_dyn(epoch, false).await
            }
            other => other,
        }
    }

    /// BIND_CONN_TO_SESSION alone.
    async fn bind_only(&self) -> Result<()> {
        let (sid, epoch) = {
            let s = lock(&self.sess);
            (s.id, s.epoch)
        };
        let r = self
            .single(A::OpBindConnToSession(p::BindConnToSession4args {
                bctsa_sessid: sid,
                bctsa_dir: p::ChannelDirFromClient4::Cdfc4ForeOrBoth,
                bctsa_use_conn_in_rdma_mode: false,
            }))
            .await?;
        let R::OpBindConnToSession(p::BindConnToSession4res::Nfs4Ok(b)) = r else {
            return Err(Nfs4Error::Protocol(
                "BIND_CONN_TO_SESSION answered another operation".into(),
            ));
        };
        let both = matches!(
            b.bctsr_dir,
            p::ChannelDirFromServer4::Cdfs4Both | p::ChannelDirFromServer4::Cdfs4Back
        );
        let conn = self.nfs.rpc().connection().map(|c| c.id());
        {
            let mut s = lock(&self.sess);
            if s.epoch == epoch && both {
                s.bound_conn = conn;
                s.bound_at = Instant::now();
            }
        }
        tracing::info!(back = both, "connection bound to the session");
        if both {
            self.emit(ClientEvent::BackchannelBound);
        }
        Ok(())
    }

    /// Establishes a new session after the server lost ours (`full`: its
    /// client record too: EXCHANGE_ID first, then the state is reclaimed).
    /// Once per loss: a caller that saw an older session returns at once.
    pub(crate) async fn recover(&self, seen_epoch: u64, full: bool) -> Result<()> {
        let _one = self.recovery.lock().await;
        if lock(&self.sess).epoch != seen_epoch {
            return Ok(());
        }
        let _all = self.gate.write().await;
        let mut full = full;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let r = if full {
                self.establish_full().await
            } else {
                match self.create_session().await {
                    Err(e) if e.status() == Some(Status::Nfs4errStaleClientid) => {
                        self.establish_full().await
                    }
                    other => other,
                }
            };
            match r {
                Ok(()) => {
                    lock(&self.sess).recoveries += 1;
                    return Ok(());
                }
                Err(e) if attempt < 5 && !self.is_closed() => {
                    tracing::warn!(error = %e, attempt, "recovery failed; again");
                    full = true;
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// EXCHANGE_ID, CREATE_SESSION, reclaim, RECLAIM_COMPLETE.
    async fn establish_full(&self) -> Result<()> {
        self.exchange_id().await?;
        self.create_session().await?;
        lock(&self.sess).reclaim_done = false;
        let (reclaimed, reopened, lost) = self.reclaim().await;
        self.reclaim_complete().await?;
        if reclaimed + reopened + lost > 0 {
            tracing::info!(reclaimed, reopened, lost, "state recovered");
        }
        self.emit(ClientEvent::Recovered {
            reclaimed,
            reopened,
            lost,
        });
        Ok(())
    }

    /// RECLAIM_COMPLETE (RFC 8881 §18.51): the client reclaims nothing
    /// more (the Linux server refuses other OPENs until it is sent).
    async fn reclaim_complete(&self) -> Result<()> {
        if lock(&self.sess).reclaim_done {
            return Ok(());
        }
        let r = self
            .run("RECLAIM_COMPLETE", RECOVERY, || {
                Ok(vec![A::OpReclaimComplete(p::ReclaimComplete4args {
                    rca_one_fs: false,
                })])
            })
            .await;
        match r {
            Ok(_) => {}
            Err(e) if e.status() == Some(Status::Nfs4errCompleteAlready) => {}
            Err(e) => return Err(e),
        }
        lock(&self.sess).reclaim_done = true;
        Ok(())
    }

    /// Reclaims every open and lock (RFC 8881 §8.4.2.1): OPEN with
    /// CLAIM_PREVIOUS and LOCK with `reclaim` while the server is in its
    /// grace period; when it is not (`NFS4ERR_NO_GRACE`), opens them again
    /// (CLAIM_FH) and locks again. Delegations are not reclaimed (a
    /// restart drops them). Returns (reclaimed, reopened, lost).
    async fn reclaim(&self) -> (usize, usize, usize) {
        let (opens, dropped) = {
            let mut st = lock(&self.state);
            st.forget_lock_stateids();
            (st.opens(), st.forget_delegations())
        };
        if dropped > 0 {
            tracing::info!(dropped, "delegations dropped by the server's restart");
        }
        let clientid = self.clientid();
        let (mut reclaimed, mut reopened, mut lost) = (0, 0, 0);
        let mut grace = true;
        for (id, o) in opens {
            let mut done = false;
            for _ in 0..2 {
                let claim = if grace {
                    p::OpenClaim4::ClaimPrevious(p::OpenDelegationType4::OpenDelegateNone)
                } else {
                    p::OpenClaim4::ClaimFh
                };
                let open = A::OpOpen(p::Open4args {
                    seqid: 0,
                    share_access: o.access | p::OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
                    share_deny: 0,
                    owner: p::StateOwner4 {
                        clientid,
                        owner: o.owner.clone(),
                    },
                    openhow: p::Openflag4::Default(p::Opentype4::Open4Nocreate),
                    claim,
                });
                let fh = o.fh.clone();
                let r = self
                    .run("reclaim", RECOVERY, || {
                        Ok(vec![
                            A::OpPutfh(p::Putfh4args { object: fh.clone() }),
                            open.clone(),
                        ])
                    })
                    .await;
                match r {
                    Ok(res) => {
                        if let Some(R::OpOpen(p::Open4res::Nfs4Ok(ok))) = res.get(1) {
                            lock(&self.state).set_open_stateid(id, ok.stateid);
                            if grace {
                                reclaimed += 1;
                            } else {
                                reopened += 1;
                            }
                            done = true;
                        }
                        break;
                    }
                    Err(e) if grace && e.status() == Some(Status::Nfs4errNoGrace) => {
                        // No grace period: nothing to reclaim; open anew
                        // after RECLAIM_COMPLETE.
                        grace = false;
                        if let Err(e) = self.reclaim_complete().await {
                            tracing::warn!(error = %e, "RECLAIM_COMPLETE failed");
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "an open could not be recovered");
                        break;
                    }
                }
            }
            if !done {
                lost += 1;
                continue;
            }
            for l in &o.locks {
                for r in l.ranges.iter() {
                    match self.relock(id, &l.owner, *r, grace).await {
                        Ok(()) if grace => reclaimed += 1,
                        Ok(()) => reopened += 1,
                        Err(e) => {
                            tracing::warn!(error = %e, "a lock could not be recovered");
                            lost += 1;
                        }
                    }
                }
            }
        }
        (reclaimed, reopened, lost)
    }

    /// LOCK (reclaim or not) of a range held before a restart.
    async fn relock(&self, id: u64, owner: &Bytes, r: Range, reclaim: bool) -> Result<()> {
        let clientid = self.clientid();
        let res = self
            .run("reclaim lock", RECOVERY, || {
                let st = lock(&self.state);
                let Some(o) = st.open(id) else {
                    return Err(Nfs4Error::StateLost("the open went away".into()));
                };
                let locker = match st.lock_stateid(id, owner) {
                    Some(ls) => p::Locker4::False(p::ExistLockOwner4 {
                        lock_stateid: ls,
                        lock_seqid: 0,
                    }),
                    None => p::Locker4::True(p::OpenToLockOwner4 {
                        open_seqid: 0,
                        open_stateid: o.stateid,
                        lock_seqid: 0,
                        lock_owner: p::StateOwner4 {
                            clientid,
                            owner: owner.clone(),
                        },
                    }),
                };
                Ok(vec![
                    A::OpPutfh(p::Putfh4args {
                        object: o.fh.clone(),
                    }),
                    A::OpLock(p::Lock4args {
                        locktype: if r.write {
                            p::NfsLockType4::WriteLt
                        } else {
                            p::NfsLockType4::ReadLt
                        },
                        reclaim,
                        offset: r.start,
                        length: r.length(),
                        locker,
                    }),
                ])
            })
            .await?;
        if let Some(R::OpLock(p::Lock4res::Nfs4Ok(ok))) = res.get(1) {
            lock(&self.state).locked(id, owner, ok.lock_stateid, r);
        }
        Ok(())
    }

    /// After `SEQ4_STATUS_RECALLABLE_STATE_REVOKED` (and its kin): finds
    /// the revoked delegations (TEST_STATEID) and frees them (FREE_STATEID).
    async fn test_delegations(&self) {
        let delegs = lock(&self.state).delegations();
        if delegs.is_empty() {
            return;
        }
        let ids: Vec<p::Stateid4> = delegs.iter().map(|d| d.stateid).collect();
        let r = self
            .run("TEST_STATEID", NORMAL, || {
                Ok(vec![A::OpTestStateid(p::TestStateid4args {
                    ts_stateids: ids.clone(),
                })])
            })
            .await;
        let Ok(res) = r else { return };
        let Some(R::OpTestStateid(p::TestStateid4res::Nfs4Ok(t))) = res.first() else {
            return;
        };
        for (d, st) in delegs.iter().zip(&t.tsr_status_codes) {
            if *st == Status::Nfs4Ok {
                continue;
            }
            tracing::info!(status = ?st, "a delegation was revoked: freeing it");
            let sid = d.stateid;
            let _ = self
                .run("FREE_STATEID", NORMAL, || {
                    Ok(vec![A::OpFreeStateid(p::FreeStateid4args {
                        fsa_stateid: sid,
                    })])
                })
                .await;
            lock(&self.state).returned(&d.stateid);
        }
    }

    /// Returns a recalled delegation: the file's cached writes flushed
    /// first, then DELEGRETURN.
    pub(crate) async fn return_delegation(self: Arc<Self>, d: DelegRecord, recalled: Instant) {
        let files: Vec<Arc<FileShared>> = {
            let mut all = lock(&self.files);
            all.retain(|w| w.strong_count() > 0);
            all.iter()
                .filter_map(Weak::upgrade)
                .filter(|f| f.fh == d.fh)
                .collect()
        };
        for f in files {
            if let Err(e) = f.flush(&self).await {
                tracing::warn!(error = %e, "flushing cached writes before DELEGRETURN failed");
            }
        }
        let (fh, sid) = (d.fh.clone(), d.stateid);
        let r = self
            .run("DELEGRETURN", NORMAL, || {
                Ok(vec![
                    A::OpPutfh(p::Putfh4args { object: fh.clone() }),
                    A::OpDelegreturn(p::Delegreturn4args { deleg_stateid: sid }),
                ])
            })
            .await;
        let status = match &r {
            Ok(_) => Status::Nfs4Ok,
            Err(e) => e.status().unwrap_or(Status::Nfs4errServerfault),
        };
        lock(&self.state).returned(&d.stateid);
        let took = recalled.elapsed();
        if status == Status::Nfs4Ok {
            tracing::info!(took_ms = took.as_millis() as u64, "delegation returned");
        } else {
            tracing::warn!(status = ?status, "DELEGRETURN failed; the delegation is forgotten");
        }
        self.emit(ClientEvent::Returned {
            fh: d.fh,
            took,
            status,
        });
    }

    /// OPEN granted `deleg` on `fh`.
    pub(crate) fn delegated(&self, fh: &Bytes, deleg: &p::OpenDelegation4) {
        let (stateid, write) = match deleg {
            p::OpenDelegation4::OpenDelegateRead(r) => (r.stateid, false),
            p::OpenDelegation4::OpenDelegateWrite(w) => (w.stateid, true),
            _ => return,
        };
        let now = Instant::now();
        let rec = DelegRecord {
            stateid,
            fh: fh.clone(),
            write,
            granted: now,
            recalled: None,
        };
        let early = lock(&self.state).delegated(rec.clone(), now);
        self.emit(ClientEvent::Delegated {
            fh: fh.clone(),
            write,
        });
        if early {
            tracing::info!("a delegation recalled before OPEN's reply arrived: returning it");
            if let Some(me) = self.me() {
                tokio::spawn(me.return_delegation(rec, now));
            }
        }
    }

    /// The callbacks' events, in order.
    async fn events_task(weak: Weak<Self>, mut rx: mpsc::UnboundedReceiver<(CbEvent, Instant)>) {
        while let Some((ev, at)) = rx.recv().await {
            let Some(me) = weak.upgrade() else { return };
            match ev {
                CbEvent::Recall { stateid, fh, .. } => {
                    me.emit(ClientEvent::Recalled { fh: fh.clone() });
                    let d = lock(&me.state).recalled(&stateid, at);
                    match d {
                        Some(d) => {
                            tokio::spawn(me.clone().return_delegation(d, at));
                        }
                        None => {
                            tracing::info!("CB_RECALL of a delegation not known (yet): remembered")
                        }
                    }
                }
                CbEvent::RecallAny { keep, .. } => {
                    let ds = lock(&me.state).recall_any(keep, at);
                    for d in ds {
                        me.emit(ClientEvent::Recalled { fh: d.fh.clone() });
                        tokio::spawn(me.clone().return_delegation(d, at));
                    }
                }
                CbEvent::NotifyLock { .. } => me.lock_wake.notify_waiters(),
                CbEvent::Notify { .. } => {}
                CbEvent::RecallSlot { target } => {
                    lock(&me.sess).slots.recall(target);
                }
            }
        }
    }

    /// Keeps the lease: a SEQUENCE when the client has been idle for a
    /// third of it.
    async fn renew_task(weak: Weak<Self>) {
        loop {
            let at = match weak.upgrade() {
                Some(me) if !me.is_closed() => lock(&me.sess).lease.renew_at(),
                _ => return,
            };
            tokio::time::sleep_until(at.into()).await;
            let Some(me) = weak.upgrade() else { return };
            if me.is_closed() {
                return;
            }
            if Instant::now() < lock(&me.sess).lease.renew_at() {
                continue;
            }
            if let Err(e) = me.run("lease renewal", NORMAL, || Ok(Vec::new())).await {
                tracing::warn!(error = %e, "lease renewal failed");
                drop(me);
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }

    /// Binds each new connection to the session's back channel: the
    /// server cannot call back on a connection it has not been told of
    /// (RFC 8881 §2.10.3.1; SEQUENCE binds a connection to the fore
    /// channel only, §2.10.5.1).
    async fn watch_task(weak: Weak<Self>) {
        loop {
            let conn = match weak.upgrade() {
                Some(me) if !me.is_closed() => {
                    let conn = me.nfs.rpc().connection().filter(|c| c.is_alive());
                    let bound = lock(&me.sess).bound_conn;
                    match &conn {
                        Some(c) if bound != Some(c.id()) && me.cfg.backchannel => {
                            tracing::info!(
                                conn = c.id(),
                                "a new connection: binding it to the session"
                            );
                            if let Err(e) = me.bind_conn().await {
                                tracing::warn!(error = %e, "BIND_CONN_TO_SESSION failed");
                            }
                        }
                        None if me.cfg.backchannel => {
                            // Connect again: the server may need to call.
                            if let Err(e) = me.bind_conn().await {
                                tracing::debug!(error = %e, "reconnecting for the backchannel failed");
                            }
                        }
                        _ => {}
                    }
                    conn
                }
                _ => return,
            };
            match conn {
                Some(c) => c.closed().await,
                None => tokio::time::sleep(Duration::from_millis(500)).await,
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Starts the client's session and its tasks.
    pub(crate) async fn start(
        self: &Arc<Self>,
        rx: mpsc::UnboundedReceiver<(CbEvent, Instant)>,
    ) -> Result<()> {
        match self.nfs.null().await {
            Ok(()) => {}
            Err(e @ (RpcError::ProgMismatch { .. } | RpcError::ProgUnavail { .. })) => {
                return Err(Nfs4Error::Unsupported {
                    minor: self.cfg.minor_version,
                    why: e.to_string(),
                })
            }
            Err(source) => return Err(Nfs4Error::Rpc { op: "NULL", source }),
        }
        self.exchange_id().await?;
        self.create_session().await?;
        self.reclaim_complete().await?;
        let want = attrs::limits();
        let res = self
            .run("the root", NORMAL, || {
                Ok(vec![
                    A::OpPutrootfh,
                    A::OpGetfh,
                    A::OpGetattr(p::Getattr4args {
                        attr_request: want.words(),
                    }),
                ])
            })
            .await?;
        let (
            Some(R::OpGetfh(p::Getfh4res::Nfs4Ok(fh))),
            Some(R::OpGetattr(p::Getattr4res::Nfs4Ok(g))),
        ) = (res.get(1), res.get(2))
        else {
            return Err(Nfs4Error::Protocol(
                "PUTROOTFH, GETFH, GETATTR: results missing".into(),
            ));
        };
        let a: Attrs =
            attrs::decode(&g.obj_attributes).map_err(|e| Nfs4Error::Protocol(e.to_string()))?;
        {
            let mut s = lock(&self.sess);
            s.root = fh.object.clone();
            let max_io = s.terms.as_ref().map_or(4096, |t| t.max_io);
            let cap = |v: u64| -> u32 {
                let v = if v == 0 { u64::from(max_io) } else { v };
                (v.min(u64::from(max_io)) as u32).max(4096) & !4095
            };
            s.rsize = cap(a.maxread);
            s.wsize = cap(a.maxwrite);
            if a.lease_time > 0 {
                s.lease
                    .set_period(Duration::from_secs(u64::from(a.lease_time)));
            }
        }
        let weak = Arc::downgrade(self);
        let mut tasks = lock(&self.tasks);
        tasks.push(tokio::spawn(Self::events_task(weak.clone(), rx)));
        tasks.push(tokio::spawn(Self::renew_task(weak.clone())));
        tasks.push(tokio::spawn(Self::watch_task(weak)));
        Ok(())
    }

    /// Returns the delegations, ends the session and the client record.
    pub(crate) async fn close(&self) -> Result<()> {
        let delegs = lock(&self.state).delegations();
        for d in delegs {
            let (fh, sid) = (d.fh.clone(), d.stateid);
            let _ = self
                .run("DELEGRETURN", NORMAL, || {
                    Ok(vec![
                        A::OpPutfh(p::Putfh4args { object: fh.clone() }),
                        A::OpDelegreturn(p::Delegreturn4args { deleg_stateid: sid }),
                    ])
                })
                .await;
            lock(&self.state).returned(&d.stateid);
        }
        self.closed.store(true, Ordering::Relaxed);
        for t in lock(&self.tasks).drain(..) {
            t.abort();
        }
        let (sid, clientid) = {
            let s = lock(&self.sess);
            (s.id, s.clientid)
        };
        self.single(A::OpDestroySession(p::DestroySession4args {
            dsa_sessionid: sid,
        }))
        .await?;
        match self
            .single(A::OpDestroyClientid(p::DestroyClientid4args {
                dca_clientid: clientid,
            }))
            .await
        {
            Ok(_) => Ok(()),
            // Opens the caller left open keep the record busy.
            Err(e) if e.status() == Some(Status::Nfs4errClientidBusy) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Hex of a session ID, for logs.
pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
