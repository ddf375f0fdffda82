//! The NFSv4.1 service: program 100003 version 4 (NULL and COMPOUND) on an
//! export, its state, its timers, and the callbacks it makes.
//!
//! Each COMPOUND runs on tokio's blocking pool (the export does file
//! I/O) against the state behind one mutex, taken per operation. What an
//! operation leaves for the async side is done when the COMPOUND ends:
//!
//! * **Probes**: a connection just bound as a session's backchannel
//!   (CREATE_SESSION with `CONN_BACK_CHAN`, BIND_CONN_TO_SESSION) is
//!   declared ready for reverse-direction calls
//!   ([`Connection::peer_ready_for_callbacks`]: over RPC-over-RDMA they
//!   are RFC 8167 calls on the client's own connection) and probed with
//!   CB_NULL; until it answers, the session's SEQUENCE says
//!   `CB_PATH_DOWN_SESSION` and no delegation is granted.
//! * **Recalls**: CB_COMPOUND (CB_SEQUENCE, CB_RECALL) on the holder's
//!   backchannel, one at a time per session (its slot 0), inline only (no
//!   Reply chunk: the Linux client offers none for reverse calls).
//! * **Stable storage**: the confirmed clients' owners
//!   (`STATE_DIR/nfs4-clients`), rewritten when they change.
//!
//! A timer (every second) expires leases, revokes delegations not
//! returned within a lease of their recall, and ends the grace period.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rpcrdma_nfs3::exports::Exports;
use rpcrdma_nfs3::fs::{Export, FileHandle, Time};
use rpcrdma_oncrpc::{
    CallHints, CallInfo, ClientConfig, ClientKey, Connection, Credential, ProcError, Services,
};
use rpcrdma_sync::lock;

use crate::compound::{self, CompoundArgs, Op};
use crate::ctx::wire;
use crate::proto::nfs4 as p;
use crate::state::{self, ConnId, Recall, SessionId, State};

pub use crate::shared::{Cached, CbAuth, Core};

/// The NFSv4.1 server's settings.
#[derive(Debug, Clone)]
pub struct Nfs4Config {
    /// The state layer's limits and timers.
    pub state: state::Config,
    /// Where the confirmed clients are recorded for the grace period
    /// after a restart (default: `nfs4-clients` in the export's state
    /// directory).
    pub records: Option<PathBuf>,
    /// How long a callback waits for its answer (default 10 s).
    pub callback_timeout: Duration,
    /// The minor versions served (default 1 and 2: NFSv4.1 and NFSv4.2);
    /// a COMPOUND of another is `NFS4ERR_MINOR_VERS_MISMATCH`.
    pub minor_versions: Vec<u32>,
}

impl Default for Nfs4Config {
    fn default() -> Self {
        Self {
            state: state::Config::default(),
            records: None,
            callback_timeout: Duration::from_secs(10),
            minor_versions: vec![1, 2],
        }
    }
}

/// The NFSv4.1 server of one export.
#[derive(Debug)]
pub struct Nfs4Server {
    core: Arc<Core>,
    conns: Mutex<HashMap<u64, Connection>>,
    /// One callback at a time per session (its back channel's slot 0).
    cb_locks: Mutex<HashMap<SessionId, Arc<tokio::sync::Mutex<()>>>>,
    /// Probes under way (a session's backchannel is probed once).
    probing: Mutex<std::collections::HashSet<(SessionId, u64)>>,
    records: PathBuf,
    callback_timeout: Duration,
}

/// The most data a READ or WRITE of a COMPOUND moves and the COMPOUND
/// still runs on the task that decoded it (`Nfs4Server::brief`), as
/// NFSv3's limit.
const INLINE_IO_MAX: usize = 64 * 1024;

/// NFSv4 (`NFS4_PROGRAM`, 100003).
pub const PROGRAM: u32 = 100_003;
/// Version 4.
pub const VERSION: u32 = 4;

/// Registers NFSv4.1 (and NFSv4.2, minor version 2) for `export` in
/// `services` and starts its timer on the current tokio runtime.
///
/// ```no_run
/// use std::sync::Arc;
/// use rpcrdma_nfs3::fs::{Export, ExportConfig};
/// use rpcrdma_oncrpc::{Server, ServerConfig, Services};
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// let export = Arc::new(Export::open(ExportConfig::new("/srv/data", "/var/lib/rpcrdma-nfs"))?);
/// let mut services = Services::new();
/// let nfs4 = rpcrdma_nfs4::register(&mut services, export, Default::default())?;
/// let server = Server::new(services, ServerConfig::default());
/// server.serve_tcp("0.0.0.0:2049").await?;
/// # drop(nfs4); Ok(()) }
/// ```
pub fn register(
    services: &mut Services,
    export: Arc<Export>,
    cfg: Nfs4Config,
) -> std::io::Result<Arc<Nfs4Server>> {
    register_exports(services, Arc::new(Exports::single(export)), cfg)
}

/// Registers NFSv4.1 (and NFSv4.2) for the exports in force in `exports`
/// (replace its table to reload them): with an exports file, PUTROOTFH
/// gives the pseudo file system of the exported paths (`pseudo.rs`), and
/// every handle is admitted for the client's address before use. The
/// client records live in the first export's state directory (every
/// export of a table shares one).
pub fn register_exports(
    services: &mut Services,
    exports: Arc<Exports>,
    cfg: Nfs4Config,
) -> std::io::Result<Arc<Nfs4Server>> {
    let records = cfg.records.clone().unwrap_or_else(|| {
        exports.table().entries()[0]
            .export()
            .config()
            .state_dir
            .join("nfs4-clients")
    });
    let reclaimable = state::load_records(&records)?;
    if !reclaimable.is_empty() {
        tracing::info!(
            clients = reclaimable.len(),
            grace = ?cfg.state.grace,
            "NFSv4 grace period: the previous instance's clients may reclaim"
        );
    }
    let boot = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as u32)
        .unwrap_or(1);
    let lease = cfg.state.lease.as_secs() as u32;
    let state = State::new(cfg.state, boot, Instant::now(), reclaimable);
    let server = Arc::new(Nfs4Server {
        core: Arc::new(Core {
            exports,
            pseudo: Mutex::new(None),
            born: {
                let d = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                Time {
                    seconds: d.as_secs() as u32,
                    nseconds: d.subsec_nanos(),
                }
            },
            state: Mutex::new(state),
            lease,
            cb_auth: Mutex::new(HashMap::new()),
            minors: cfg.minor_versions.clone(),
        }),
        conns: Mutex::new(HashMap::new()),
        cb_locks: Mutex::new(HashMap::new()),
        probing: Mutex::new(std::collections::HashSet::new()),
        records,
        callback_timeout: cfg.callback_timeout,
    });
    let s = server.clone();
    let v = services.program(PROGRAM, VERSION);
    v.null().proc(1, move |info: CallInfo, args: CompoundArgs| {
        let s = s.clone();
        async move { s.compound(info, args).await }
    });
    v.reply_bound(reply_bound);
    if let Ok(rt) = tokio::runtime::Handle::try_current() {
        let weak = Arc::downgrade(&server);
        rt.spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                let Some(s) = weak.upgrade() else { break };
                s.tick();
            }
        });
    }
    Ok(server)
}

/// The largest COMPOUND reply (`Version::reply_bound`): READs and READDIRs
/// are bounded by the session's largest reply, 1 MiB and some.
fn reply_bound(proc_: u32, _args: &[u8]) -> Option<u64> {
    (proc_ == 1).then_some((1 << 20) + (16 << 10))
}

impl Nfs4Server {
    /// The state (for tests and diagnostics).
    pub fn state(&self) -> MutexGuard<'_, State<Cached>> {
        self.core.lock()
    }

    async fn compound(
        self: Arc<Self>,
        info: CallInfo,
        args: CompoundArgs,
    ) -> Result<p::Compound4res, ProcError> {
        let (cred, principal) = match &info.cred {
            Credential::Sys(s) => (Some((s.uid(), s.gid(), s.gids().to_vec())), s.uid()),
            _ => (None, u32::MAX),
        };
        let peer = info.connection.peer_addr().map(|a| a.ip().to_canonical());
        let conn = ConnId(info.connection.id());
        self.watch(&info.connection);
        let core = self.core.clone();
        let res = if self.brief(&args) {
            compound::run(&core, cred, peer, principal, conn, args)
        } else {
            tokio::task::spawn_blocking(move || {
                compound::run(&core, cred, peer, principal, conn, args)
            })
            .await
            .map_err(|_| ProcError::SystemErr)?
        };
        self.after(conn);
        Ok(res)
    }

    /// Whether a COMPOUND runs on the task that decoded it rather than on
    /// the blocking pool, as NFSv3's brief procedures do (docs/nfs.md,
    /// "Where the work runs"): when every export is memory-backed
    /// (`Export::memory_backed`: nothing waits for a device) and no
    /// operation is a READDIR or a READ or WRITE of more than
    /// [`INLINE_IO_MAX`] octets.
    fn brief(&self, args: &CompoundArgs) -> bool {
        let heavy = args.ops.iter().any(|op| match op {
            Op::Arg(p::NfsArgop4::OpRead(a)) => a.count as usize > INLINE_IO_MAX,
            Op::Arg(p::NfsArgop4::OpWrite(a)) => a.data.len() > INLINE_IO_MAX,
            Op::Arg(p::NfsArgop4::OpReaddir(_)) => true,
            _ => false,
        });
        !heavy
            && self
                .core
                .exports
                .table()
                .entries()
                .iter()
                .all(|e| e.export().runs_brief_work_inline())
    }

    /// Remembers a connection (callbacks go on it), and forgets it with
    /// its bindings when it closes.
    fn watch(self: &Arc<Self>, c: &Connection) {
        let id = c.id();
        if lock(&self.conns).contains_key(&id) {
            return;
        }
        lock(&self.conns).insert(id, c.clone());
        let weak = Arc::downgrade(self);
        let c = c.clone();
        tokio::spawn(async move {
            c.closed().await;
            if let Some(s) = weak.upgrade() {
                lock(&s.conns).remove(&id);
                s.core.lock().conn_lost(ConnId(id));
            }
        });
    }

    /// What a COMPOUND left to do: probes, recalls, records.
    fn after(self: &Arc<Self>, conn: ConnId) {
        let (probes, recalls, notifies, records) = {
            let mut st = self.core.lock();
            (
                st.to_probe(conn),
                st.take_recalls(),
                st.take_notifies(),
                st.take_records(),
            )
        };
        self.notify(notifies);
        for (sid, prog) in probes {
            if !lock(&self.probing).insert((sid, conn.0)) {
                continue;
            }
            let s = self.clone();
            tokio::spawn(async move { s.probe(sid, conn, prog).await });
        }
        for r in recalls {
            let s = self.clone();
            tokio::spawn(async move { s.recall(r).await });
        }
        if let Some(owners) = records {
            self.save(owners);
        }
    }

    fn save(&self, owners: Vec<Vec<u8>>) {
        let path = self.records.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = state::save_records(&path, &owners) {
                tracing::error!(path = %path.display(), error = %e, "cannot record the NFSv4 clients: after a restart they could not reclaim their state");
            }
        });
    }

    /// The timer's work.
    fn tick(self: &Arc<Self>) {
        let (gone, recalls, notifies, records) = {
            let mut st = self.core.lock();
            let gone = st.tick(Instant::now());
            (
                gone,
                st.take_recalls(),
                st.take_notifies(),
                st.take_records(),
            )
        };
        self.notify(notifies);
        for c in gone {
            tracing::info!(
                client = format_args!("{:#018x}", c.0),
                "NFSv4 lease expired: the client's state is gone"
            );
        }
        if let Some((back, of, reclaims)) = self.core.lock().grace_ended() {
            tracing::info!(
                clients = back,
                previous = of,
                reclaims,
                "NFSv4 grace period over: {back} of {of} previous clients reclaimed {reclaims} opens and locks"
            );
        }
        for r in recalls {
            let s = self.clone();
            tokio::spawn(async move { s.recall(r).await });
        }
        if let Some(owners) = records {
            self.save(owners);
        }
    }

    fn callback_client(&self, sid: &SessionId, conn: ConnId) -> Option<rpcrdma_oncrpc::Client> {
        let c = lock(&self.conns).get(&conn.0).cloned()?;
        if !c.backchannel_ready() {
            if let Err(e) =
                c.peer_ready_for_callbacks(ClientKey::new(Bytes::copy_from_slice(&sid.0)))
            {
                tracing::warn!(error = %e, "a session's backchannel cannot carry callbacks");
                return None;
            }
        }
        let mut cfg = ClientConfig::default();
        cfg.timeout = self.callback_timeout;
        cfg.max_retransmits = 0;
        cfg.credential = self.core.credential(sid);
        Some(c.client(cfg))
    }

    /// Probes a session's new backchannel with CB_NULL.
    async fn probe(self: Arc<Self>, sid: SessionId, conn: ConnId, prog: u32) {
        let up = match self.callback_client(&sid, conn) {
            Some(c) => match c.null(prog, 1).await {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!(error = %e, "CB_NULL on a session's backchannel failed: callbacks are down");
                    false
                }
            },
            None => false,
        };
        tracing::debug!(up, "NFSv4 backchannel probed");
        self.core.lock().probed(&sid, conn, up);
        lock(&self.probing).remove(&(sid, conn.0));
    }

    fn cb_lock(&self, sid: &SessionId) -> Arc<tokio::sync::Mutex<()>> {
        lock(&self.cb_locks).entry(*sid).or_default().clone()
    }

    /// Sends CB_NOTIFY_LOCK to each owner that waited for a lock.
    fn notify(self: &Arc<Self>, notifies: Vec<state::NotifyLock>) {
        for n in notifies {
            let s = self.clone();
            tokio::spawn(async move {
                let op = p::NfsCbArgop4::OpCbNotifyLock(p::CbNotifyLock4args {
                    cnla_fh: Bytes::copy_from_slice(n.file.as_bytes()),
                    cnla_lock_owner: p::StateOwner4 {
                        clientid: n.owner.client.0,
                        owner: n.owner.owner.clone().into(),
                    },
                });
                s.callback(n.owner.client, op, "CB_NOTIFY_LOCK").await;
            });
        }
    }

    /// Sends CB_RECALL for a delegation.
    async fn recall(self: Arc<Self>, r: Recall) {
        let op = p::NfsCbArgop4::OpCbRecall(p::CbRecall4args {
            stateid: wire(r.stateid),
            truncate: false,
            fh: Bytes::copy_from_slice(r.file.as_bytes()),
        });
        if !self.callback(r.client, op, "CB_RECALL").await {
            tracing::warn!(client = format_args!("{:#018x}", r.client.0), "a delegation could not be recalled: it is revoked if not returned within a lease of the recall");
        }
    }

    /// Sends one callback operation (after CB_SEQUENCE) to `client` on a
    /// backchannel of its; whether the client took it.
    async fn callback(&self, client: state::ClientId, op: p::NfsCbArgop4, what: &str) -> bool {
        let Some(bc) = self.core.lock().backchannel(client) else {
            tracing::debug!(what, "no backchannel to send it on");
            return false;
        };
        let lock = self.cb_lock(&bc.session);
        let _one = lock.lock().await;
        // The sequence id is taken under the session's callback lock.
        let Some(seq) = self.core.lock().cb_sequence(&bc.session) else {
            return false;
        };
        let Some(rpc) = self.callback_client(&bc.session, bc.conn) else {
            self.core.lock().probed(&bc.session, bc.conn, false);
            return false;
        };
        let args = p::CbCompound4args {
            tag: Bytes::new(),
            minorversion: 1,
            callback_ident: 0,
            argarray: vec![
                p::NfsCbArgop4::OpCbSequence(p::CbSequence4args {
                    csa_sessionid: bc.session.0,
                    csa_sequenceid: seq,
                    csa_slotid: 0,
                    csa_highest_slotid: 0,
                    csa_cachethis: false,
                    csa_referring_call_lists: Vec::new(),
                }),
                op,
            ],
        };
        let res: Result<p::CbCompound4res, _> = rpc
            .call(bc.cb_program, 1, 1, &args, &CallHints::new())
            .await;
        match res {
            Ok(res) if res.status == p::Nfsstat4::Nfs4Ok => {
                tracing::debug!(
                    what,
                    client = format_args!("{:#018x}", client.0),
                    "callback answered"
                );
                true
            }
            Ok(res) => {
                tracing::warn!(what, status = ?res.status, "the client refused a callback");
                false
            }
            Err(e) => {
                tracing::warn!(what, error = %e, "a callback failed: the backchannel is down");
                self.core.lock().probed(&bc.session, bc.conn, false);
                false
            }
        }
    }

    /// A guard for another protocol's changes to a file (NFSv3's WRITE,
    /// SETATTR, REMOVE, RENAME): `false` while a delegation of it is
    /// being recalled (answer `NFS3ERR_JUKEBOX`); the recall is sent.
    pub fn change_guard(self: &Arc<Self>) -> impl Fn(&FileHandle) -> bool + Send + Sync + 'static {
        let weak = Arc::downgrade(self);
        move |fh: &FileHandle| {
            let Some(s) = weak.upgrade() else {
                return true;
            };
            let (ok, recalls) = {
                let mut st = s.core.lock();
                let ok = st.outside_change(fh, Instant::now()).is_ok();
                (ok, st.take_recalls())
            };
            if !recalls.is_empty() {
                if let Ok(rt) = tokio::runtime::Handle::try_current() {
                    for r in recalls {
                        let s = s.clone();
                        rt.spawn(async move { s.recall(r).await });
                    }
                }
            }
            ok
        }
    }
}
