//! The grace period's own record (RFC 8881 §8.4.2): until when it runs,
//! which clients of the previous instance may still reclaim, and which
//! clients completed. What the operations do with it, and the records
//! kept on stable storage, are in `grace.rs`.

use std::collections::HashSet;
use std::time::Instant;

use super::ids::ClientId;

/// The grace period's state.
#[derive(Debug)]
pub(crate) struct Grace {
    pub(super) until: Instant,
    pub(super) over: bool,
    /// Owners of the previous instance's clients that have not completed
    /// their reclaim.
    pub(super) pending: HashSet<Vec<u8>>,
    /// Clients (of this instance) that sent RECLAIM_COMPLETE.
    pub(super) completed: HashSet<ClientId>,
    /// Opens and locks reclaimed.
    pub(crate) reclaims: u64,
    /// How many previous clients there were, and whether the end was
    /// reported ([`super::State::grace_ended`]).
    pub(super) previous: usize,
    pub(super) reported: bool,
}

impl Grace {
    pub(crate) fn new(until: Instant, reclaimable: Vec<Vec<u8>>) -> Self {
        let pending: HashSet<Vec<u8>> = reclaimable.into_iter().collect();
        Self {
            until,
            // Nobody to wait for: no grace period at all.
            over: pending.is_empty(),
            reported: pending.is_empty(),
            previous: pending.len(),
            pending,
            completed: HashSet::new(),
            reclaims: 0,
        }
    }

    pub(crate) fn active(&self, now: Instant) -> bool {
        !self.over && now < self.until
    }

    /// Owners still allowed to reclaim (none once the period is over).
    pub(super) fn may(&self, owner: &[u8]) -> bool {
        !self.over && self.pending.contains(owner)
    }

    pub(crate) fn tick(&mut self, now: Instant) {
        if !self.over && now >= self.until {
            self.over = true;
        }
    }

    pub(crate) fn pending_owners(&self) -> impl Iterator<Item = Vec<u8>> + '_ {
        self.pending.iter().filter(|_| !self.over).cloned()
    }

    pub(crate) fn forget(&mut self, client: ClientId) {
        self.completed.remove(&client);
    }
}
