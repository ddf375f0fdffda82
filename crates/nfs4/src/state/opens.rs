//! Opens (RFC 8881 §9.7, §18.16): share reservations between open owners,
//! OPEN_DOWNGRADE and CLOSE, and which stateid may do which I/O.
//!
//! Each open owner has one open stateid per file; opening the same file
//! again adds to its access and deny bits (and bumps the seqid). An open
//! conflicts with another owner's open when either one's access meets the
//! other's deny. I/O names an open, lock or delegation stateid of the
//! same file, or the anonymous or bypass stateid: a WRITE needs an open
//! for writing (`NFS4ERR_OPENMODE`); a READ is allowed on any open, as
//! Linux nfsd allows it (a client reads around a partial write through a
//! write-only open); anonymous I/O is refused where a share reservation
//! denies it (`NFS4ERR_LOCKED`); any write, and a write-access open, of a
//! file another client holds a delegation of recalls the delegation and
//! waits (`NFS4ERR_DELAY`).

use std::time::Instant;

use rpcrdma_nfs3::fs::FileHandle;

use super::ids::{ClientId, Other, Special, StateId};
use super::{CachedReply, Kind, State, StateError, StateResult};

/// `OPEN4_SHARE_ACCESS_READ`.
pub const ACCESS_READ: u32 = 1;
/// `OPEN4_SHARE_ACCESS_WRITE`.
pub const ACCESS_WRITE: u32 = 2;
/// `OPEN4_SHARE_ACCESS_BOTH`.
pub const ACCESS_BOTH: u32 = 3;

/// How an OPEN names its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// `CLAIM_NULL`: by name in the current directory.
    Null,
    /// `CLAIM_FH`: the current file handle.
    Fh,
    /// `CLAIM_PREVIOUS`: reclaiming an open held before a restart.
    Previous,
    /// `CLAIM_DELEGATE_CUR`, `CLAIM_DELEG_CUR_FH`: an open made under the
    /// client's delegation of the file (this stateid), handed back.
    Delegated(StateId),
}

/// OPEN's arguments, as the state layer needs them.
#[derive(Debug, Clone)]
pub struct OpenArgs {
    /// The client.
    pub client: ClientId,
    /// The open owner's name.
    pub owner: Vec<u8>,
    /// The file (already looked up or created).
    pub file: FileHandle,
    /// `OPEN4_SHARE_ACCESS_*` (1, 2 or 3).
    pub access: u32,
    /// `OPEN4_SHARE_DENY_*` (0 to 3).
    pub deny: u32,
    /// How the file was named.
    pub claim: Claim,
    /// Whether the client would take a delegation (it did not say
    /// `OPEN4_SHARE_ACCESS_WANT_NO_DELEG`).
    pub want_deleg: bool,
}

/// OPEN's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// The open stateid.
    pub stateid: StateId,
    /// A read delegation, if one was granted.
    pub deleg: Option<StateId>,
}

impl<R: CachedReply> State<R> {
    /// The checks of an OPEN that come before the file system is touched
    /// (creating or truncating the file): grace, share reservations and
    /// delegations held by others. Recalls conflicting delegations.
    pub fn check_open(&mut self, a: &OpenArgs, now: Instant) -> StateResult<()> {
        self.client(a.client)?;
        if a.access & ACCESS_BOTH == 0 || a.access & !ACCESS_BOTH != 0 || a.deny & !ACCESS_BOTH != 0
        {
            return Err(StateError::Inval);
        }
        match a.claim {
            Claim::Previous => self.may_reclaim(a.client, now)?,
            Claim::Null | Claim::Fh => self.not_in_grace(now)?,
            Claim::Delegated(id) => {
                let s = self.find(a.client, &id)?;
                if !matches!(s.kind, Kind::Deleg { .. }) || s.file != a.file {
                    return Err(StateError::BadStateId);
                }
            }
        }
        if (a.access & ACCESS_WRITE != 0 || a.deny & ACCESS_READ != 0)
            && self.recall_conflicting(&a.file, Some(a.client), now)
        {
            return Err(StateError::Delay);
        }
        self.share_conflict(a)
    }

    fn share_conflict(&self, a: &OpenArgs) -> StateResult<()> {
        let Some(f) = self.files.get(&a.file) else {
            return Ok(());
        };
        for o in &f.opens {
            let Some(s) = self.states.get(o) else {
                continue;
            };
            let Kind::Open {
                owner,
                access,
                deny,
            } = &s.kind
            else {
                continue;
            };
            if s.client == a.client && owner == &a.owner {
                continue;
            }
            if a.access & deny != 0 || a.deny & access != 0 {
                return Err(StateError::ShareDenied);
            }
        }
        Ok(())
    }

    /// OPEN's state (after [`Self::check_open`] and the file system work):
    /// a new open stateid or the owner's upgraded one, and perhaps a read
    /// delegation.
    pub fn open(&mut self, a: &OpenArgs, now: Instant) -> StateResult<Opened> {
        self.check_open(a, now)?;
        let existing = self.files.get(&a.file).and_then(|f| {
            f.opens.iter().copied().find(|o| {
                self.states.get(o).is_some_and(|s| {
                    s.client == a.client
                        && matches!(&s.kind, Kind::Open { owner, .. } if owner == &a.owner)
                })
            })
        });
        let stateid = match existing {
            Some(o) => {
                if let Some(Kind::Open { access, deny, .. }) =
                    self.states.get_mut(&o).map(|s| &mut s.kind)
                {
                    *access |= a.access;
                    *deny |= a.deny;
                }
                self.bump(&o)
            }
            None => self.add_state(
                a.client,
                &a.file,
                Kind::Open {
                    owner: a.owner.clone(),
                    access: a.access,
                    deny: a.deny,
                },
            )?,
        };
        if a.claim == Claim::Previous {
            self.grace.reclaims += 1;
        }
        let deleg = if a.want_deleg
            && a.access == ACCESS_READ
            && a.deny == 0
            && matches!(a.claim, Claim::Null | Claim::Fh)
        {
            self.maybe_delegate(a.client, &a.file, now)
        } else {
            None
        };
        Ok(Opened { stateid, deleg })
    }

    /// The open a stateid names, checked against `client` and `file`.
    fn open_of(&self, client: ClientId, id: &StateId, file: &FileHandle) -> StateResult<Other> {
        let s = self.find(client, id)?;
        if &s.file != file || !matches!(s.kind, Kind::Open { .. }) {
            return Err(StateError::BadStateId);
        }
        Ok(id.other)
    }

    /// OPEN_DOWNGRADE (RFC 8881 §18.18): access and deny may only shrink.
    pub fn open_downgrade(
        &mut self,
        client: ClientId,
        id: &StateId,
        file: &FileHandle,
        access: u32,
        deny: u32,
    ) -> StateResult<StateId> {
        let o = self.open_of(client, id, file)?;
        let Some(Kind::Open {
            access: have_a,
            deny: have_d,
            ..
        }) = self.states.get_mut(&o).map(|s| &mut s.kind)
        else {
            return Err(StateError::BadStateId);
        };
        if access & ACCESS_BOTH == 0 || access & !*have_a != 0 || deny & !*have_d != 0 {
            return Err(StateError::Inval);
        }
        *have_a = access;
        *have_d = deny;
        Ok(self.bump(&o))
    }

    /// CLOSE (RFC 8881 §18.2): refused while a lock owner of this open
    /// holds locks; the lock stateids without locks go with it.
    pub fn close(
        &mut self,
        client: ClientId,
        id: &StateId,
        file: &FileHandle,
    ) -> StateResult<StateId> {
        let o = self.open_of(client, id, file)?;
        let locks: Vec<(Other, Vec<u8>)> = self
            .states
            .iter()
            .filter_map(|(lo, s)| match &s.kind {
                Kind::Lock { owner, open } if *open == o => Some((*lo, owner.clone())),
                _ => None,
            })
            .collect();
        let held = locks.iter().any(|(_, owner)| {
            self.files.get(file).is_some_and(|f| {
                f.locks.holds(&super::locks::LockOwner {
                    client,
                    owner: owner.clone(),
                })
            })
        });
        if held {
            return Err(StateError::LocksHeld);
        }
        for (lo, _) in locks {
            self.forget_state(&lo);
        }
        let closed = self.bump(&o);
        self.forget_state(&o);
        Ok(closed)
    }

    /// Whether `id` may read (`write` false) or write `file` for `client`
    /// (`None`: a call outside NFSv4 state). Recalls other clients'
    /// delegations in the way of a write.
    pub fn check_io(
        &mut self,
        client: Option<ClientId>,
        id: &StateId,
        file: &FileHandle,
        write: bool,
        now: Instant,
    ) -> StateResult<()> {
        match id.special() {
            Special::Bypass if !write => return Ok(()),
            Special::Bypass | Special::Invalid | Special::Current => {
                return Err(StateError::BadStateId)
            }
            Special::Anonymous => {
                let want = if write { ACCESS_WRITE } else { ACCESS_READ };
                let denied = self.files.get(file).is_some_and(|f| {
                    f.opens.iter().any(|o| {
                        self.states.get(o).is_some_and(
                            |s| matches!(s.kind, Kind::Open { deny, .. } if deny & want != 0),
                        )
                    })
                });
                if denied {
                    return Err(StateError::Locked);
                }
            }
            Special::Regular => {
                let client = client.ok_or(StateError::BadStateId)?;
                let s = self.find(client, id)?;
                if &s.file != file {
                    return Err(StateError::BadStateId);
                }
                let access = match &s.kind {
                    Kind::Open { access, .. } => *access,
                    Kind::Lock { open, .. } => match self.states.get(open).map(|o| &o.kind) {
                        Some(Kind::Open { access, .. }) => *access,
                        _ => return Err(StateError::BadStateId),
                    },
                    Kind::Deleg { .. } => ACCESS_READ,
                };
                if write && access & ACCESS_WRITE == 0 {
                    return Err(StateError::OpenMode);
                }
            }
        }
        if write && self.recall_conflicting(file, client, now) {
            return Err(StateError::Delay);
        }
        Ok(())
    }
}
