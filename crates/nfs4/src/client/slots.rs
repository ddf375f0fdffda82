//! The fore channel's slot table (RFC 8881 §2.10.6), sans-IO.
//!
//! A request takes the lowest free slot the server lets us use and the
//! slot's next sequence id ([`SlotTable::acquire`]); a request sent again
//! — after a reconnection, or because its answer was lost — goes on the
//! **same slot with the same sequence id**, so the server answers it from
//! its reply cache instead of running it twice. What came back decides
//! the slot's next sequence id ([`SlotTable::complete`]):
//!
//! * SEQUENCE succeeded (whatever the later operations did): the sequence
//!   id is used; the server's `sr_highest_slotid` and
//!   `sr_target_highest_slotid` bound the slots we use from then on
//!   (§18.46.3);
//! * SEQUENCE failed: the sequence id was not used (§2.10.6.1), except
//!   `NFS4ERR_RETRY_UNCACHED_REP`, which says the server ran it;
//! * no answer at all (the caller gave up): the server may or may not have
//!   seen it. The slot is then *in doubt*: the next request on it assumes
//!   it was seen (sequence id + 1); `NFS4ERR_SEQ_MISORDERED` to that says
//!   it was not, and the slot goes back one (§2.10.6.1: the replier's
//!   sequence id is one behind) and the request is sent again.

use super::error::Status;

/// One request's place: a slot and the sequence id it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// The slot id.
    pub slot: u32,
    /// The sequence id.
    pub seqid: u32,
}

/// What came of a request, as far as its slot is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// SEQUENCE succeeded, with the server's slot bounds.
    Done {
        /// `sr_highest_slotid`: the highest slot the server will accept now.
        highest_slotid: u32,
        /// `sr_target_highest_slotid`: the highest it wants us to use.
        target_highest_slotid: u32,
    },
    /// SEQUENCE itself failed with this status.
    Refused(Status),
    /// No answer (the caller gave up on it).
    Lost,
}

/// What the caller does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// The request is finished (successfully or not, as its results say).
    Done,
    /// Send the request again with a new grant (its slot was released).
    Retry,
    /// The request failed with the status SEQUENCE gave; the slot was
    /// released.
    Fail(Status),
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// The sequence id of the last request the server ran on the slot.
    seqid: u32,
    busy: bool,
    /// The last request's answer was lost: `seqid` assumes it ran.
    doubt: bool,
}

/// The fore channel's slots.
#[derive(Debug, Clone)]
pub struct SlotTable {
    slots: Vec<Slot>,
    /// The highest slot id we may use (server's target and limit).
    usable: u32,
}

impl SlotTable {
    /// A table of `n` slots (the session's `ca_maxrequests`; at least 1),
    /// each at sequence id 0, so its first request carries 1.
    pub fn new(n: u32) -> Self {
        let n = n.max(1);
        Self {
            slots: vec![Slot::default(); n as usize],
            usable: n - 1,
        }
    }

    /// The number of slots.
    pub fn len(&self) -> u32 {
        self.slots.len() as u32
    }

    /// Whether the table has no slot (never: at least one).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The highest slot id we may use now.
    pub fn usable(&self) -> u32 {
        self.usable
    }

    /// Requests in flight.
    pub fn in_use(&self) -> usize {
        self.slots.iter().filter(|s| s.busy).count()
    }

    /// The lowest free usable slot and its next sequence id, or `None`
    /// when all are busy (wait for a [`SlotTable::complete`]).
    pub fn acquire(&mut self) -> Option<Grant> {
        let usable = self.usable as usize;
        let (i, s) = self
            .slots
            .iter_mut()
            .enumerate()
            .take(usable + 1)
            .find(|(_, s)| !s.busy)?;
        s.busy = true;
        Some(Grant {
            slot: i as u32,
            seqid: s.seqid.wrapping_add(1),
        })
    }

    /// `sa_highest_slotid`: the highest slot id in use (at least `g`'s).
    pub fn highest_in_use(&self, g: Grant) -> u32 {
        let top = self
            .slots
            .iter()
            .rposition(|s| s.busy)
            .map_or(0, |i| i as u32);
        top.max(g.slot)
    }

    /// Ends a request on its slot; says what the caller does next.
    pub fn complete(&mut self, g: Grant, outcome: Outcome) -> Next {
        let n = self.len();
        let Some(s) = self.slots.get_mut(g.slot as usize) else {
            return Next::Fail(Status::Nfs4errBadslot);
        };
        s.busy = false;
        match outcome {
            Outcome::Done {
                highest_slotid,
                target_highest_slotid,
            } => {
                s.seqid = g.seqid;
                s.doubt = false;
                self.usable = highest_slotid.min(target_highest_slotid).min(n - 1);
                Next::Done
            }
            Outcome::Lost => {
                s.seqid = g.seqid;
                s.doubt = true;
                Next::Done
            }
            Outcome::Refused(Status::Nfs4errSeqMisordered) if s.doubt => {
                // The lost request never ran: the server is one behind.
                s.seqid = g.seqid.wrapping_sub(2);
                s.doubt = false;
                Next::Retry
            }
            Outcome::Refused(Status::Nfs4errRetryUncachedRep) => {
                // It ran, and its reply is gone.
                s.seqid = g.seqid;
                s.doubt = false;
                Next::Fail(Status::Nfs4errRetryUncachedRep)
            }
            Outcome::Refused(Status::Nfs4errBadslot) => {
                // The server shrank the table under us.
                self.usable = g.slot.saturating_sub(1).min(self.usable);
                Next::Retry
            }
            Outcome::Refused(Status::Nfs4errDelay) => Next::Retry,
            Outcome::Refused(st) => Next::Fail(st),
        }
    }

    /// Sets the usable slots after CB_RECALL_SLOT (RFC 8881 §20.8): at
    /// most `target` + 1.
    pub fn recall(&mut self, target: u32) {
        self.usable = self.usable.min(target);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: Outcome = Outcome::Done {
        highest_slotid: 7,
        target_highest_slotid: 7,
    };

    #[test]
    fn lowest_free_slot_and_sequence_ids() {
        let mut t = SlotTable::new(4);
        let a = t.acquire().unwrap();
        let b = t.acquire().unwrap();
        assert_eq!((a.slot, a.seqid, b.slot, b.seqid), (0, 1, 1, 1));
        assert_eq!(t.highest_in_use(a), 1);
        assert_eq!(t.complete(a, OK), Next::Done);
        let c = t.acquire().unwrap();
        assert_eq!((c.slot, c.seqid), (0, 2), "slot 0 again, its next id");
        assert_eq!(t.in_use(), 2);
        t.acquire().unwrap();
        t.acquire().unwrap();
        assert_eq!(t.acquire(), None, "all four busy");
    }

    #[test]
    fn a_failed_sequence_does_not_use_the_id() {
        let mut t = SlotTable::new(1);
        let a = t.acquire().unwrap();
        assert_eq!(
            t.complete(a, Outcome::Refused(Status::Nfs4errBadsession)),
            Next::Fail(Status::Nfs4errBadsession)
        );
        assert_eq!(t.acquire().unwrap().seqid, 1);
    }

    #[test]
    fn delay_retries_with_the_same_id() {
        let mut t = SlotTable::new(1);
        let a = t.acquire().unwrap();
        assert_eq!(
            t.complete(a, Outcome::Refused(Status::Nfs4errDelay)),
            Next::Retry
        );
        assert_eq!(t.acquire().unwrap(), a);
    }

    #[test]
    fn a_lost_answer_puts_the_slot_in_doubt() {
        let mut t = SlotTable::new(1);
        let a = t.acquire().unwrap();
        t.complete(a, Outcome::Lost);
        // Assumed seen: the next request carries 2.
        let b = t.acquire().unwrap();
        assert_eq!(b.seqid, 2);
        // The server says it never saw 1: back one, and again.
        assert_eq!(
            t.complete(b, Outcome::Refused(Status::Nfs4errSeqMisordered)),
            Next::Retry
        );
        let c = t.acquire().unwrap();
        assert_eq!(c.seqid, 1);
        // Misordered without doubt is an error.
        assert_eq!(
            t.complete(c, Outcome::Refused(Status::Nfs4errSeqMisordered)),
            Next::Fail(Status::Nfs4errSeqMisordered)
        );
    }

    #[test]
    fn the_server_bounds_the_slots() {
        let mut t = SlotTable::new(8);
        let a = t.acquire().unwrap();
        t.complete(
            a,
            Outcome::Done {
                highest_slotid: 7,
                target_highest_slotid: 1,
            },
        );
        assert_eq!(t.usable(), 1);
        t.acquire().unwrap();
        t.acquire().unwrap();
        assert_eq!(t.acquire(), None, "only slots 0 and 1");
        let mut t = SlotTable::new(8);
        t.acquire().unwrap();
        let b = t.acquire().unwrap();
        assert_eq!(
            t.complete(b, Outcome::Refused(Status::Nfs4errBadslot)),
            Next::Retry
        );
        assert_eq!(t.usable(), 0);
        assert_eq!(t.acquire(), None);
    }

    #[test]
    fn uncached_replay_uses_the_id() {
        let mut t = SlotTable::new(1);
        let a = t.acquire().unwrap();
        assert_eq!(
            t.complete(a, Outcome::Refused(Status::Nfs4errRetryUncachedRep)),
            Next::Fail(Status::Nfs4errRetryUncachedRep)
        );
        assert_eq!(t.acquire().unwrap().seqid, 2);
    }
}
