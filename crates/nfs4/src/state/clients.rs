//! Client records (RFC 8881 §2.4): EXCHANGE_ID, their confirmation by
//! CREATE_SESSION, DESTROY_CLIENTID, and leases.
//!
//! EXCHANGE_ID follows the cases of RFC 8881 §18.35.5 for a client that
//! uses no state protection (SP4_NONE): a new owner gets a new unconfirmed
//! record; the same owner and verifier get their confirmed record back; a
//! new verifier (the client restarted) gets a new unconfirmed record that
//! replaces the old one, state and all, once CREATE_SESSION confirms it;
//! an update names a confirmed record with the same verifier and principal.
//! The principal is the AUTH_SYS uid of the call (`u32::MAX` for other
//! flavors).

use std::time::Instant;

use super::client_table::Client;
use super::ids::ClientId;
use super::{CachedReply, State, StateError, StateResult};

/// EXCHANGE_ID's arguments, as the state layer needs them.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// `co_ownerid`.
    pub owner: Vec<u8>,
    /// `co_verifier`.
    pub verifier: [u8; 8],
    /// The caller's AUTH_SYS uid (`u32::MAX` for other flavors).
    pub principal: u32,
    /// `EXCHGID4_FLAG_UPD_CONFIRMED_REC_A`.
    pub update: bool,
}

/// EXCHANGE_ID's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exchanged {
    /// `eir_clientid`.
    pub client: ClientId,
    /// `eir_sequenceid`: the next CREATE_SESSION sequence id.
    pub sequenceid: u32,
    /// Whether the record is confirmed (`EXCHGID4_FLAG_CONFIRMED_R`).
    pub confirmed: bool,
}

impl<R: CachedReply> State<R> {
    /// EXCHANGE_ID (RFC 8881 §18.35).
    pub fn exchange_id(&mut self, x: Exchange, now: Instant) -> StateResult<Exchanged> {
        let (confirmed, unconfirmed) = self.clients.of_owner(&x.owner);
        let answer = |c: &Client| Exchanged {
            client: c.id,
            sequenceid: c.cs_seqid.wrapping_add(1),
            confirmed: c.confirmed,
        };
        if x.update {
            // Cases 6 to 9: only a confirmed record can be updated.
            let id = confirmed.ok_or(StateError::NoEnt)?;
            let c = self.clients.get_mut(id).expect("listed");
            if c.verifier != x.verifier {
                return Err(StateError::NotSame);
            }
            if c.principal != x.principal {
                return Err(StateError::Perm);
            }
            c.lease_until = now + self.cfg.lease;
            return Ok(answer(c));
        }
        if let Some(id) = confirmed {
            let c = self.clients.get(id).expect("listed");
            if c.verifier == x.verifier {
                if c.principal == x.principal {
                    // Case 2: the same client again.
                    let c = self.clients.get_mut(id).expect("listed");
                    c.lease_until = now + self.cfg.lease;
                    return Ok(answer(c));
                }
                // Case 3: another principal claims the owner.
                let busy = c.states > 0 || self.sessions.values().any(|s| s.client == id);
                if busy {
                    return Err(StateError::ClidInUse);
                }
            }
            // Case 5 (new verifier: the client restarted) or an idle case
            // 3: a new unconfirmed record; the confirmed one goes when the
            // new one is confirmed.
        }
        if let Some(id) = unconfirmed {
            // Case 4: the unconfirmed record is replaced.
            self.clients.remove(id);
        }
        if self.clients.len() >= self.cfg.max_clients {
            return Err(StateError::TooMuchState);
        }
        let n = self.next();
        let c = Client {
            id: ClientId::new(self.boot, n),
            owner: x.owner,
            verifier: x.verifier,
            principal: x.principal,
            confirmed: false,
            cs_seqid: 0,
            cs_reply: None,
            lease_until: now + self.cfg.lease,
            states: 0,
            revoked: 0,
        };
        let out = answer(&c);
        self.clients.insert(c);
        Ok(out)
    }

    /// The client `id` names, if it is ours and alive.
    pub(crate) fn client(&self, id: ClientId) -> StateResult<&Client> {
        if id.boot() != self.boot {
            return Err(StateError::StaleClientId);
        }
        self.clients.get(id).ok_or(StateError::StaleClientId)
    }

    /// Confirms an unconfirmed record (its first CREATE_SESSION): an
    /// older confirmed record of the same owner (the client before it
    /// restarted) goes, with its state.
    pub(crate) fn confirm(&mut self, id: ClientId) {
        let Some(c) = self.clients.get(id) else {
            return;
        };
        if c.confirmed {
            return;
        }
        let (old, _) = self.clients.of_owner(&c.owner.clone());
        if let Some(old) = old {
            self.destroy_client(old);
        }
        if let Some(c) = self.clients.get_mut(id) {
            c.confirmed = true;
        }
        self.clients.dirty = true;
    }

    /// Renews `client`'s lease.
    pub(crate) fn renew(&mut self, client: ClientId, now: Instant) {
        let lease = self.cfg.lease;
        if let Some(c) = self.clients.get_mut(client) {
            c.lease_until = now + lease;
        }
    }

    /// DESTROY_CLIENTID (RFC 8881 §18.50): refused while the client has
    /// sessions; its state goes with it.
    pub fn destroy_clientid(&mut self, id: ClientId) -> StateResult<()> {
        self.client(id)?;
        if self.sessions.values().any(|s| s.client == id) {
            return Err(StateError::ClientIdBusy);
        }
        self.destroy_client(id);
        Ok(())
    }

    /// The owners of the confirmed client records, if they changed since
    /// the last call (what stable storage must hold: `grace.rs`).
    pub fn take_records(&mut self) -> Option<Vec<Vec<u8>>> {
        if !std::mem::take(&mut self.clients.dirty) {
            return None;
        }
        let mut owners = self.clients.confirmed_owners();
        // The clients of the previous instance that may still reclaim
        // stay recorded until they have, or the grace period ended.
        owners.extend(self.grace.pending_owners());
        owners.sort();
        owners.dedup();
        Some(owners)
    }
}
