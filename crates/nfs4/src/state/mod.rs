//! The server's NFSv4.1 state, sans-IO: client records, sessions and
//! their slot tables, open, lock and delegation stateids, share
//! reservations, byte-range locks, leases and the grace period.
//!
//! Nothing here does I/O, reads a clock or holds a lock: every method
//! takes the time it runs at (`now`), and the service (`service.rs`)
//! keeps one [`State`] behind a mutex, runs each COMPOUND's operations
//! against it and the export, and turns the [`Recall`]s and record
//! changes it returns into callbacks and stable-storage writes.
//!
//! | file | what |
//! |---|---|
//! | `ids.rs` | client IDs, session IDs, stateids (with the instance's boot stamp) |
//! | `error.rs` | the `nfsstat4` values of the state layer |
//! | `client_table.rs` | the client records, by ID and by owner |
//! | `session_table.rs` | sessions, their slots and backchannel; channel attributes |
//! | `grace_period.rs` | the grace period's record: its end, who may reclaim |
//! | `callbacks.rs` | the recalls and lock notifications queued for the service |
//! | `clients.rs` | EXCHANGE_ID, CREATE_SESSION's client side, DESTROY_CLIENTID, leases |
//! | `sessions.rs` | slots and their reply cache, CREATE_SESSION, SEQUENCE, BIND_CONN_TO_SESSION |
//! | `opens.rs` | OPEN, OPEN_DOWNGRADE, CLOSE, share reservations, stateids for I/O |
//! | `lockops.rs` | LOCK, LOCKT, LOCKU, FREE_STATEID, TEST_STATEID |
//! | `locks.rs` | one file's byte-range locks |
//! | `delegs.rs` | read delegations: grant, recall, return, revoke |
//! | `grace.rs` | the grace period and the records kept on stable storage |
//!
//! `mod.rs` holds [`State`] and the records of opens, locks and
//! delegations. The tables it holds (`ids.rs` to `callbacks.rs`, and
//! `locks.rs`) never name [`State`]; each operation file (`clients.rs`,
//! `sessions.rs`, `opens.rs`, `lockops.rs`, `delegs.rs`, `grace.rs`) adds
//! an `impl State` block on top of them, and `mod.rs` names none of those.
//!
//! Bounds (`Config`): clients, sessions per client, slots per session, the
//! size of each cached reply, and states (opens, locks, delegations) per
//! client are all limited, so what clients send cannot grow the state
//! without bound.

mod callbacks;
mod client_table;
mod clients;
mod delegs;
mod error;
mod grace;
mod grace_period;
mod ids;
mod lockops;
pub mod locks;
mod opens;
mod session_table;
mod sessions;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rpcrdma_nfs3::fs::FileHandle;

pub use callbacks::{NotifyLock, Recall};
pub use clients::{Exchange, Exchanged};
pub use error::{StateError, StateResult};
pub use grace::{load_records, save_records};
pub use ids::{ClientId, Other, SessionId, Special, StateId};
pub use lockops::{Denied, LockArgs, Locked, Locker};
pub use locks::LockKind;
pub use opens::{Claim, OpenArgs, Opened, ACCESS_BOTH, ACCESS_READ, ACCESS_WRITE};
pub use session_table::{ChannelAttrs, ConnId, SessionGrant};
pub use sessions::{
    Backchannel, CreateSession, Sequenced, SEQ4_STATUS_CB_PATH_DOWN,
    SEQ4_STATUS_CB_PATH_DOWN_SESSION, SEQ4_STATUS_RECALLABLE_STATE_REVOKED,
};

use client_table::Clients;
use grace_period::Grace;
use locks::{FileLocks, LockOwner};
use session_table::Session;

/// A reply a slot may keep: its size counts against
/// [`Config::max_cached_total`].
pub trait CachedReply: Clone {
    /// Octets it takes.
    fn cached_len(&self) -> usize;
}

impl CachedReply for &str {
    fn cached_len(&self) -> usize {
        self.len()
    }
}

/// Limits and timers of the state layer. Defaults on each field.
#[derive(Debug, Clone)]
pub struct Config {
    /// The lease (default 90 s, as Linux nfsd): a client that renews
    /// nothing for this long loses its state.
    pub lease: Duration,
    /// The grace period after a restart (default: one lease).
    pub grace: Duration,
    /// Client records at once, confirmed or not (default 4096).
    pub max_clients: usize,
    /// Sessions per client (default 16).
    pub max_sessions: usize,
    /// Fore-channel slots per session (default 64).
    pub max_slots: u32,
    /// Back-channel slots per session (default 4).
    pub max_back_slots: u32,
    /// Operations per COMPOUND (default 64).
    pub max_ops: u32,
    /// Largest request (default 1 MiB + 16 KiB: a 1 MiB WRITE and its
    /// operations).
    pub max_request: u32,
    /// Largest reply (default 1 MiB + 16 KiB).
    pub max_response: u32,
    /// Largest reply kept in a slot's cache (default 16 KiB).
    pub max_response_cached: u32,
    /// Opens, locks and delegations per client (default 16384).
    pub max_states: usize,
    /// Opens, locks and delegations of all clients together (default
    /// 262144: some 60 MiB).
    pub max_states_total: usize,
    /// Octets of replies kept in slots, all sessions together (default
    /// 64 MiB); a reply that would exceed it is not cached (its
    /// retransmission gets `NFS4ERR_RETRY_UNCACHED_REP`).
    pub max_cached_total: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(90),
            grace: Duration::from_secs(90),
            max_clients: 4096,
            max_sessions: 16,
            max_slots: 64,
            max_back_slots: 4,
            max_ops: 64,
            max_request: (1 << 20) + (16 << 10),
            max_response: (1 << 20) + (16 << 10),
            max_response_cached: 16 << 10,
            max_states: 16384,
            max_states_total: 262_144,
            max_cached_total: 64 << 20,
        }
    }
}

/// The kind of state a stateid names.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    /// An open of a file by an open owner: its share access and deny.
    Open {
        owner: Vec<u8>,
        access: u32,
        deny: u32,
    },
    /// A lock owner's locks on a file, derived from an open.
    Lock { owner: Vec<u8>, open: Other },
    /// A read delegation.
    Deleg {
        /// When it was recalled, if it was.
        recalled: Option<Instant>,
    },
}

/// One state a stateid names.
#[derive(Debug, Clone)]
pub(crate) struct Stateful {
    pub(crate) client: ClientId,
    pub(crate) file: FileHandle,
    pub(crate) seqid: u32,
    pub(crate) kind: Kind,
    /// Revoked (a delegation not returned in time): only FREE_STATEID
    /// may name it now.
    pub(crate) revoked: bool,
}

/// The state held on one file.
#[derive(Debug, Default)]
pub(crate) struct FileState {
    pub(crate) opens: Vec<Other>,
    pub(crate) delegs: Vec<Other>,
    pub(crate) locks: FileLocks,
    /// When a delegation of this file was last recalled (none is
    /// granted again for a while).
    pub(crate) recalled_at: Option<Instant>,
    /// Lock owners whose blocking LOCK was denied: told with
    /// CB_NOTIFY_LOCK when locks of the file are released.
    pub(crate) waiters: Vec<LockOwner>,
}

impl FileState {
    fn is_empty(&self) -> bool {
        self.opens.is_empty() && self.delegs.is_empty() && self.locks.is_empty()
    }
}

/// The server's NFSv4.1 state. `R` is the cached reply of a slot (the
/// service's encoded COMPOUND result).
#[derive(Debug)]
pub struct State<R> {
    cfg: Config,
    /// This instance's boot stamp (in every ID it hands out).
    boot: u32,
    counter: u32,
    clients: Clients,
    sessions: HashMap<SessionId, Session<R>>,
    states: HashMap<Other, Stateful>,
    files: HashMap<FileHandle, FileState>,
    grace: Grace,
    /// Delegations to recall, for the service to send.
    recalls: Vec<Recall>,
    /// Lock owners to tell that a lock they waited for may be free.
    notifies: Vec<NotifyLock>,
    /// Octets of replies kept in slots.
    cached_total: usize,
}

impl<R: CachedReply> State<R> {
    /// A new instance with boot stamp `boot` (seconds since the epoch at
    /// start: different for every instance), started at `now`, whose
    /// previous instance had these clients (their owners, from stable
    /// storage): they may reclaim during the grace period.
    pub fn new(cfg: Config, boot: u32, now: Instant, reclaimable: Vec<Vec<u8>>) -> Self {
        let grace = Grace::new(now + cfg.grace, reclaimable);
        Self {
            cfg,
            boot,
            counter: 0,
            clients: Clients::default(),
            sessions: HashMap::new(),
            states: HashMap::new(),
            files: HashMap::new(),
            grace,
            recalls: Vec::new(),
            notifies: Vec::new(),
            cached_total: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The boot stamp.
    pub fn boot(&self) -> u32 {
        self.boot
    }

    fn next(&mut self) -> u32 {
        self.counter = self.counter.wrapping_add(1);
        self.counter
    }

    /// Client records held (confirmed and not).
    pub fn client_count(&self) -> usize {
        self.clients.len()
    }

    /// States held (opens, locks, delegations).
    pub fn state_count(&self) -> usize {
        self.states.len()
    }

    /// Sessions held.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// Octets of replies kept in slots.
    pub fn cached_bytes(&self) -> usize {
        self.cached_total
    }

    /// Drops every state of `client` (its opens, locks and delegations).
    fn drop_client_state(&mut self, client: ClientId) {
        let mine: Vec<Other> = self
            .states
            .iter()
            .filter(|(_, s)| s.client == client)
            .map(|(o, _)| *o)
            .collect();
        for o in mine {
            self.forget_state(&o);
        }
        let files: Vec<FileHandle> = self.files.keys().cloned().collect();
        for file in files {
            if let Some(f) = self.files.get_mut(&file) {
                f.locks.release_client(client);
                f.waiters.retain(|w| w.client != client);
            }
            self.locks_released(&file);
        }
        self.files
            .retain(|_, f| !f.is_empty() || f.recalled_at.is_some());
    }

    /// Removes one state from every table.
    pub(crate) fn forget_state(&mut self, other: &Other) {
        let Some(s) = self.states.remove(other) else {
            return;
        };
        if let Some(c) = self.clients.get_mut(s.client) {
            c.states = c.states.saturating_sub(1);
        }
        if let Some(f) = self.files.get_mut(&s.file) {
            f.opens.retain(|o| o != other);
            f.delegs.retain(|o| o != other);
            if let Kind::Lock { owner, .. } = &s.kind {
                f.locks.release_owner(&LockOwner {
                    client: s.client,
                    owner: owner.clone(),
                });
                if !f.waiters.is_empty() {
                    let file = s.file.clone();
                    self.notifies
                        .extend(f.waiters.drain(..).map(|owner| NotifyLock {
                            owner,
                            file: file.clone(),
                        }));
                }
            }
            if f.is_empty() && f.recalled_at.is_none() {
                self.files.remove(&s.file);
            }
        }
    }

    /// Records a new state for `client`, within its limit.
    pub(crate) fn add_state(
        &mut self,
        client: ClientId,
        file: &FileHandle,
        kind: Kind,
    ) -> StateResult<StateId> {
        let limit = self.cfg.max_states;
        let total = self.states.len() >= self.cfg.max_states_total;
        let c = self
            .clients
            .get_mut(client)
            .ok_or(StateError::StaleClientId)?;
        if c.states >= limit || total {
            return Err(StateError::TooMuchState);
        }
        c.states += 1;
        let n = self.next();
        let id = StateId::new(self.boot, n, client);
        let f = self.files.entry(file.clone()).or_default();
        match kind {
            Kind::Open { .. } => f.opens.push(id.other),
            Kind::Deleg { .. } => f.delegs.push(id.other),
            Kind::Lock { .. } => {}
        }
        self.states.insert(
            id.other,
            Stateful {
                client,
                file: file.clone(),
                seqid: id.seqid,
                kind,
                revoked: false,
            },
        );
        Ok(id)
    }

    /// Finds the state `id` names for `client` (RFC 8881 §8.2.2, §8.2.4):
    /// another instance's is stale, an unknown or another client's is bad,
    /// seqid 0 means the current one, an older seqid is old, a newer one
    /// bad; a revoked delegation is `NFS4ERR_DELEG_REVOKED`.
    pub(crate) fn find(&self, client: ClientId, id: &StateId) -> StateResult<&Stateful> {
        if id.boot() != self.boot {
            return Err(StateError::StaleStateId);
        }
        let s = self.states.get(&id.other).ok_or(StateError::BadStateId)?;
        if s.client != client {
            return Err(StateError::BadStateId);
        }
        if s.revoked {
            return Err(match s.kind {
                Kind::Deleg { .. } => StateError::DelegRevoked,
                _ => StateError::AdminRevoked,
            });
        }
        if id.seqid != 0 && id.seqid != s.seqid {
            // Stateid seqids only grow (wrapping past 0): one behind is old.
            return Err(if seqid_before(id.seqid, s.seqid) {
                StateError::OldStateId
            } else {
                StateError::BadStateId
            });
        }
        Ok(s)
    }

    /// Bumps the seqid of a state and returns its new stateid.
    pub(crate) fn bump(&mut self, other: &Other) -> StateId {
        let s = self.states.get_mut(other).expect("a state just found");
        let next = StateId {
            seqid: s.seqid,
            other: *other,
        }
        .bumped();
        s.seqid = next.seqid;
        next
    }

    /// Time passes: expires clients whose lease ran out (and their state
    /// and sessions) and revokes delegations not returned within a lease
    /// of their recall; ends the grace period when due. Returns the
    /// clients expired (to update stable storage) and whether the
    /// records changed.
    pub fn tick(&mut self, now: Instant) -> Vec<ClientId> {
        self.grace.tick(now);
        self.revoke_overdue(now);
        let gone = self.clients.expired(now);
        for c in &gone {
            self.destroy_client(*c);
        }
        for f in self.files.values_mut() {
            if f.recalled_at
                .is_some_and(|t| now.duration_since(t) > self.cfg.lease)
            {
                f.recalled_at = None;
            }
        }
        self.files
            .retain(|_, f| !f.is_empty() || f.recalled_at.is_some());
        gone
    }

    /// Removes a client with its sessions and state.
    fn destroy_client(&mut self, client: ClientId) {
        self.drop_client_state(client);
        let gone: Vec<SessionId> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.client == client)
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            self.forget_session(&id);
        }
        self.clients.remove(client);
        self.grace.forget(client);
    }
}

/// Whether seqid `a` comes before `b` in the wrapping sequence.
fn seqid_before(a: u32, b: u32) -> bool {
    a != b && b.wrapping_sub(a) < 0x8000_0000
}
