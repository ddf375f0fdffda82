//! The table of client records (RFC 8881 §2.4), by ID and by owner: what
//! the state keeps of each client. The operations on it (EXCHANGE_ID,
//! confirmation, leases) are in `clients.rs`.

use std::collections::HashMap;
use std::time::Instant;

use super::ids::ClientId;
use super::session_table::SessionGrant;

/// One client record.
#[derive(Debug)]
pub(crate) struct Client {
    pub(crate) id: ClientId,
    pub(crate) owner: Vec<u8>,
    pub(crate) verifier: [u8; 8],
    pub(crate) principal: u32,
    pub(crate) confirmed: bool,
    /// The last CREATE_SESSION sequence id executed, and its reply.
    pub(crate) cs_seqid: u32,
    pub(crate) cs_reply: Option<SessionGrant>,
    pub(crate) lease_until: Instant,
    /// States held (opens, locks, delegations).
    pub(crate) states: usize,
    /// A recalled delegation of this client was revoked
    /// (`SEQ4_STATUS_RECALLABLE_STATE_REVOKED` until it frees it).
    pub(crate) revoked: usize,
}

/// Every client record, by ID and by owner.
#[derive(Debug, Default)]
pub(crate) struct Clients {
    by_id: HashMap<ClientId, Client>,
    by_owner: HashMap<Vec<u8>, Vec<ClientId>>,
    /// The confirmed owners changed since [`super::State::take_records`].
    pub(crate) dirty: bool,
}

impl Clients {
    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }

    pub(crate) fn get(&self, id: ClientId) -> Option<&Client> {
        self.by_id.get(&id)
    }

    pub(crate) fn get_mut(&mut self, id: ClientId) -> Option<&mut Client> {
        self.by_id.get_mut(&id)
    }

    pub(super) fn of_owner(&self, owner: &[u8]) -> (Option<ClientId>, Option<ClientId>) {
        let mut confirmed = None;
        let mut unconfirmed = None;
        for id in self.by_owner.get(owner).into_iter().flatten() {
            match self.by_id.get(id) {
                Some(c) if c.confirmed => confirmed = Some(*id),
                Some(_) => unconfirmed = Some(*id),
                None => {}
            }
        }
        (confirmed, unconfirmed)
    }

    pub(super) fn insert(&mut self, c: Client) {
        self.by_owner.entry(c.owner.clone()).or_default().push(c.id);
        self.by_id.insert(c.id, c);
    }

    pub(crate) fn remove(&mut self, id: ClientId) -> Option<Client> {
        let c = self.by_id.remove(&id)?;
        if c.confirmed {
            self.dirty = true;
        }
        if let Some(ids) = self.by_owner.get_mut(&c.owner) {
            ids.retain(|i| *i != id);
            if ids.is_empty() {
                self.by_owner.remove(&c.owner);
            }
        }
        Some(c)
    }

    /// Clients whose lease ran out at `now`.
    pub(crate) fn expired(&self, now: Instant) -> Vec<ClientId> {
        self.by_id
            .values()
            .filter(|c| c.lease_until <= now)
            .map(|c| c.id)
            .collect()
    }

    /// Owners of the confirmed records.
    pub(crate) fn confirmed_owners(&self) -> Vec<Vec<u8>> {
        self.by_id
            .values()
            .filter(|c| c.confirmed)
            .map(|c| c.owner.clone())
            .collect()
    }
}
