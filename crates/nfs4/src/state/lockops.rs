//! Byte-range lock operations (RFC 8881 §18.10–18.12) and the stateid
//! operations of NFSv4.1 (FREE_STATEID §18.38, TEST_STATEID §18.48).
//!
//! A lock owner's first LOCK on a file names the open it derives from
//! (`open_to_lock_owner4`) and gets a lock stateid for (owner, file); later
//! LOCKs and LOCKUs name that lock stateid. A conflict is answered with
//! the holder's range and owner (`LOCK4denied`), which LOCKT gives too.

use std::time::Instant;

use rpcrdma_nfs3::fs::FileHandle;

use super::callbacks::NotifyLock;
use super::ids::{ClientId, Other, StateId};
use super::locks::{span, LockKind, LockOwner, Range};
use super::{CachedReply, Kind, State, StateError, StateResult};

/// Who a LOCK is for.
#[derive(Debug, Clone)]
pub enum Locker {
    /// A lock owner's first lock on the file, from an open.
    New {
        /// The open stateid.
        open: StateId,
        /// The lock owner's name.
        owner: Vec<u8>,
    },
    /// An owner that already has a lock stateid for the file.
    Existing(StateId),
}

/// LOCK's arguments.
#[derive(Debug, Clone)]
pub struct LockArgs {
    /// The client.
    pub client: ClientId,
    /// The file.
    pub file: FileHandle,
    /// Shared or exclusive.
    pub kind: LockKind,
    /// A reclaim after a restart.
    pub reclaim: bool,
    /// The range.
    pub offset: u64,
    /// Its length (all ones: to the end).
    pub length: u64,
    /// The owner.
    pub locker: Locker,
    /// A blocking lock (`READW_LT`, `WRITEW_LT`): if denied, the owner is
    /// told with CB_NOTIFY_LOCK when the file's locks are released.
    pub blocking: bool,
}

/// Most owners remembered as waiting on one file.
const MAX_WAITERS: usize = 64;

/// A conflicting lock (`LOCK4denied`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    /// Its range's start.
    pub offset: u64,
    /// Its length.
    pub length: u64,
    /// Its type.
    pub kind: LockKind,
    /// Its owner.
    pub owner: LockOwner,
}

impl From<&Range> for Denied {
    fn from(r: &Range) -> Self {
        Self {
            offset: r.offset,
            length: r.length(),
            kind: r.kind,
            owner: r.owner.clone(),
        }
    }
}

/// What LOCK did.
pub type Locked = Result<StateId, Denied>;

impl<R: CachedReply> State<R> {
    /// LOCK (RFC 8881 §18.10): `Ok(Ok(stateid))` when granted,
    /// `Ok(Err(denied))` on a conflict (`NFS4ERR_DENIED` with it).
    pub fn lock(&mut self, a: &LockArgs, now: Instant) -> StateResult<Locked> {
        let (offset, end) = span(a.offset, a.length).map_err(|_| StateError::Inval)?;
        if a.reclaim {
            self.may_reclaim(a.client, now)?;
        } else {
            self.not_in_grace(now)?;
        }
        let (other, owner) = match &a.locker {
            Locker::New { open, owner } => {
                let s = self.find(a.client, open)?;
                if s.file != a.file || !matches!(s.kind, Kind::Open { .. }) {
                    return Err(StateError::BadStateId);
                }
                let open_other = open.other;
                // The owner may already have a lock stateid for the file.
                let have = self.states.iter().find_map(|(o, s)| match &s.kind {
                    Kind::Lock { owner: w, .. }
                        if s.client == a.client && s.file == a.file && w == owner =>
                    {
                        Some(*o)
                    }
                    _ => None,
                });
                match have {
                    Some(o) => (o, owner.clone()),
                    None => {
                        let id = self.add_state(
                            a.client,
                            &a.file,
                            Kind::Lock {
                                owner: owner.clone(),
                                open: open_other,
                            },
                        )?;
                        (id.other, owner.clone())
                    }
                }
            }
            Locker::Existing(id) => self.lock_state(a.client, id, &a.file)?,
        };
        let who = LockOwner {
            client: a.client,
            owner,
        };
        let f = self.files.entry(a.file.clone()).or_default();
        match f.locks.lock(&who, offset, end, a.kind) {
            Ok(()) => {
                f.waiters.retain(|w| w != &who);
                if a.reclaim {
                    self.grace.reclaims += 1;
                }
                Ok(Ok(self.bump(&other)))
            }
            Err(c) => {
                if a.blocking && !f.waiters.contains(&who) && f.waiters.len() < MAX_WAITERS {
                    f.waiters.push(who);
                }
                Ok(Err(Denied::from(&c)))
            }
        }
    }

    /// The lock state `id` names for `client` on `file`, with its owner.
    fn lock_state(
        &self,
        client: ClientId,
        id: &StateId,
        file: &FileHandle,
    ) -> StateResult<(Other, Vec<u8>)> {
        let s = self.find(client, id)?;
        match &s.kind {
            Kind::Lock { owner, .. } if &s.file == file => Ok((id.other, owner.clone())),
            _ => Err(StateError::BadStateId),
        }
    }

    /// LOCKT (RFC 8881 §18.11): the conflicting lock, if any.
    pub fn lockt(
        &self,
        client: ClientId,
        owner: &[u8],
        file: &FileHandle,
        kind: LockKind,
        offset: u64,
        length: u64,
    ) -> StateResult<Option<Denied>> {
        self.client(client)?;
        let (offset, end) = span(offset, length).map_err(|_| StateError::Inval)?;
        let who = LockOwner {
            client,
            owner: owner.to_vec(),
        };
        Ok(self
            .files
            .get(file)
            .and_then(|f| f.locks.conflict(&who, offset, end, kind))
            .map(Denied::from))
    }

    /// LOCKU (RFC 8881 §18.12).
    pub fn locku(
        &mut self,
        client: ClientId,
        id: &StateId,
        file: &FileHandle,
        offset: u64,
        length: u64,
    ) -> StateResult<StateId> {
        let (offset, end) = span(offset, length).map_err(|_| StateError::Inval)?;
        let (other, owner) = self.lock_state(client, id, file)?;
        if let Some(f) = self.files.get_mut(file) {
            f.locks.unlock(&LockOwner { client, owner }, offset, end);
        }
        self.locks_released(file);
        Ok(self.bump(&other))
    }

    /// Locks of `file` were released: the owners that waited are told.
    pub(crate) fn locks_released(&mut self, file: &FileHandle) {
        if let Some(f) = self.files.get_mut(file) {
            if !f.waiters.is_empty() {
                self.notifies
                    .extend(f.waiters.drain(..).map(|owner| NotifyLock {
                        owner,
                        file: file.clone(),
                    }));
            }
        }
    }

    /// The CB_NOTIFY_LOCKs queued since the last call.
    pub fn take_notifies(&mut self) -> Vec<NotifyLock> {
        std::mem::take(&mut self.notifies)
    }

    /// FREE_STATEID (RFC 8881 §18.38): a lock stateid without locks, or a
    /// revoked delegation; an open must be closed (`NFS4ERR_LOCKS_HELD`),
    /// and so must a lock stateid still holding locks.
    pub fn free_stateid(&mut self, client: ClientId, id: &StateId) -> StateResult<()> {
        if self.free_revoked(client, id) {
            return Ok(());
        }
        let s = self.find(client, id)?;
        match &s.kind {
            Kind::Lock { owner, .. } => {
                let who = LockOwner {
                    client,
                    owner: owner.clone(),
                };
                if self.files.get(&s.file).is_some_and(|f| f.locks.holds(&who)) {
                    return Err(StateError::LocksHeld);
                }
                self.forget_state(&id.other);
                Ok(())
            }
            Kind::Open { .. } => Err(StateError::LocksHeld),
            Kind::Deleg { .. } => Err(StateError::LocksHeld),
        }
    }

    /// TEST_STATEID (RFC 8881 §18.48): the status of each stateid for
    /// `client` (0 for a valid one).
    pub fn test_stateids(&self, client: ClientId, ids: &[StateId]) -> Vec<u32> {
        ids.iter()
            .map(|id| match self.find(client, id) {
                Ok(_) => 0,
                Err(e) => e.code(),
            })
            .collect()
    }
}
