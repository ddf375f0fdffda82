//! Read delegations (RFC 8881 §10.2): granted on OPEN, recalled through
//! the client's backchannel when another client (NFSv4.1 or NFSv3) wants
//! to change the file, returned with DELEGRETURN, revoked when not
//! returned within a lease of the recall.
//!
//! A conflicting operation is not held: it gets `NFS4ERR_DELAY` (NFSv3:
//! `NFS3ERR_JUKEBOX`) and the client retries, as with Linux nfsd; the
//! recall itself is queued ([`State::take_recalls`]) for the service to
//! send as CB_RECALL. A file whose delegation was recalled gets no new
//! delegation for a lease, so a file written by several clients does not
//! flap between granting and recalling.

use std::time::Instant;

use rpcrdma_nfs3::fs::FileHandle;

use super::callbacks::Recall;
use super::ids::{ClientId, Other, StateId};
use super::{CachedReply, Kind, State, StateError, StateResult};

impl<R: CachedReply> State<R> {
    /// Recalls the delegations of `file` held by clients other than
    /// `except` (every one for NFSv3's `None`): true if any stands in the
    /// way (the caller answers `NFS4ERR_DELAY`).
    pub(crate) fn recall_conflicting(
        &mut self,
        file: &FileHandle,
        except: Option<ClientId>,
        now: Instant,
    ) -> bool {
        let Some(f) = self.files.get(file) else {
            return false;
        };
        let delegs: Vec<Other> = f.delegs.clone();
        let mut conflict = false;
        for o in delegs {
            let Some(s) = self.states.get_mut(&o) else {
                continue;
            };
            if Some(s.client) == except || s.revoked {
                continue;
            }
            conflict = true;
            if let Kind::Deleg { recalled } = &mut s.kind {
                if recalled.is_none() {
                    *recalled = Some(now);
                    self.recalls.push(Recall {
                        client: s.client,
                        stateid: StateId {
                            seqid: s.seqid,
                            other: o,
                        },
                        file: file.clone(),
                    });
                }
            }
        }
        if conflict {
            if let Some(f) = self.files.get_mut(file) {
                f.recalled_at = Some(now);
            }
        }
        conflict
    }

    /// Recalls the delegations of `file` held by clients other than
    /// `client` (before `client` changes or removes it): true if any
    /// stands in the way (answer `NFS4ERR_DELAY`).
    pub fn recall_others(&mut self, file: &FileHandle, client: ClientId, now: Instant) -> bool {
        self.recall_conflicting(file, Some(client), now)
    }

    /// The recalls queued since the last call.
    pub fn take_recalls(&mut self) -> Vec<Recall> {
        std::mem::take(&mut self.recalls)
    }

    /// NFSv3 (or any client outside NFSv4 state) is about to change
    /// `file`: `Err(NFS4ERR_DELAY)` while a delegation of it is recalled.
    pub fn outside_change(&mut self, file: &FileHandle, now: Instant) -> StateResult<()> {
        if self.recall_conflicting(file, None, now) {
            Err(StateError::Delay)
        } else {
            Ok(())
        }
    }

    /// A read delegation of `file` for `client`, if nothing speaks
    /// against one: the client's backchannel is up, no other client has
    /// the file open for writing or holds a delegation being recalled, it
    /// was not recalled within the last lease, the client holds none on
    /// it already, and the grace period is over.
    pub(crate) fn maybe_delegate(
        &mut self,
        client: ClientId,
        file: &FileHandle,
        now: Instant,
    ) -> Option<StateId> {
        if self.grace.active(now) || !self.backchannel_up(client) {
            return None;
        }
        let f = self.files.get(file)?;
        if f.recalled_at.is_some() {
            return None;
        }
        let others_write = f.opens.iter().any(|o| {
            self.states.get(o).is_some_and(|s| {
                s.client != client && matches!(s.kind, Kind::Open { access, .. } if access & 2 != 0)
            })
        });
        let held = f.delegs.iter().any(|o| {
            self.states.get(o).is_some_and(|s| {
                s.client == client || matches!(s.kind, Kind::Deleg { recalled: Some(_) })
            })
        });
        if others_write || held {
            return None;
        }
        self.add_state(client, file, Kind::Deleg { recalled: None })
            .ok()
    }

    /// DELEGRETURN (RFC 8881 §18.6).
    pub fn delegreturn(
        &mut self,
        client: ClientId,
        id: &StateId,
        file: &FileHandle,
    ) -> StateResult<()> {
        let s = match self.find(client, id) {
            Ok(s) => s,
            Err(StateError::DelegRevoked) => {
                // A revoked delegation is freed by its return too.
                self.free_revoked(client, id);
                return Err(StateError::DelegRevoked);
            }
            Err(e) => return Err(e),
        };
        if !matches!(s.kind, Kind::Deleg { .. }) {
            return Err(StateError::BadStateId);
        }
        if &s.file != file {
            return Err(StateError::BadStateId);
        }
        self.forget_state(&id.other);
        Ok(())
    }

    /// Revokes delegations recalled more than a lease ago.
    pub(crate) fn revoke_overdue(&mut self, now: Instant) {
        let lease = self.cfg.lease;
        let overdue: Vec<Other> = self
            .states
            .iter()
            .filter(|(_, s)| {
                !s.revoked
                    && matches!(s.kind, Kind::Deleg { recalled: Some(t) } if now.duration_since(t) > lease)
            })
            .map(|(o, _)| *o)
            .collect();
        for o in overdue {
            let (client, file) = {
                let s = self.states.get_mut(&o).expect("listed");
                s.revoked = true;
                (s.client, s.file.clone())
            };
            tracing::warn!(
                client = client.0,
                "a delegation recalled a lease ago was not returned: revoked"
            );
            if let Some(c) = self.clients.get_mut(client) {
                c.revoked += 1;
            }
            if let Some(f) = self.files.get_mut(&file) {
                f.delegs.retain(|d| *d != o);
            }
        }
    }

    /// Frees a revoked delegation (FREE_STATEID, DELEGRETURN).
    pub(crate) fn free_revoked(&mut self, client: ClientId, id: &StateId) -> bool {
        let ok = self
            .states
            .get(&id.other)
            .is_some_and(|s| s.revoked && s.client == client);
        if ok {
            self.states.remove(&id.other);
            if let Some(c) = self.clients.get_mut(client) {
                c.states = c.states.saturating_sub(1);
                c.revoked = c.revoked.saturating_sub(1);
            }
        }
        ok
    }
}
