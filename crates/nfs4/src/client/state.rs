//! What the client holds on the server, sans-IO: its opens, the
//! byte-range locks of each, and its delegations — what it reclaims
//! after a server restart (RFC 8881 §8.4.2.1) and what a recall
//! returns.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::proto::nfs4 as p;

/// A byte range, `end` exclusive (`u64::MAX`: to the end of the file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// A write (exclusive) lock.
    pub write: bool,
}

impl Range {
    /// The range of LOCK's `offset` and `length` (`u64::MAX`: to the end).
    pub fn of(offset: u64, length: u64, write: bool) -> Self {
        let end = if length == u64::MAX {
            u64::MAX
        } else {
            offset.saturating_add(length)
        };
        Self {
            start: offset,
            end,
            write,
        }
    }

    /// LOCK's `length` for this range.
    pub fn length(&self) -> u64 {
        if self.end == u64::MAX {
            u64::MAX
        } else {
            self.end - self.start
        }
    }
}

/// The ranges one lock owner holds on one file, as POSIX locks: a new
/// lock replaces what the owner held in its range, an unlock splits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ranges(Vec<Range>);

impl Ranges {
    /// The ranges, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Range> {
        self.0.iter()
    }

    /// Whether nothing is locked.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Takes `r` (replacing what was held in it).
    pub fn lock(&mut self, r: Range) {
        self.unlock(r.start, r.end);
        self.0.push(r);
        self.0.sort_by_key(|x| x.start);
        // Merge neighbours of the same kind.
        let mut out: Vec<Range> = Vec::with_capacity(self.0.len());
        for x in self.0.drain(..) {
            match out.last_mut() {
                Some(l) if l.write == x.write && l.end >= x.start => l.end = l.end.max(x.end),
                _ => out.push(x),
            }
        }
        self.0 = out;
    }

    /// Releases `[start, end)`.
    pub fn unlock(&mut self, start: u64, end: u64) {
        let mut out = Vec::with_capacity(self.0.len() + 1);
        for x in self.0.drain(..) {
            if x.end <= start || x.start >= end {
                out.push(x);
                continue;
            }
            if x.start < start {
                out.push(Range { end: start, ..x });
            }
            if x.end > end {
                out.push(Range { start: end, ..x });
            }
        }
        self.0 = out;
    }
}

/// One lock owner's state on an open file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockRecord {
    /// The lock owner.
    pub owner: Bytes,
    /// Its lock stateid, once LOCK gave one.
    pub stateid: Option<p::Stateid4>,
    /// What it holds.
    pub ranges: Ranges,
}

/// One open of a file (its own open owner).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenRecord {
    /// The file.
    pub fh: Bytes,
    /// The open owner.
    pub owner: Bytes,
    /// `OPEN4_SHARE_ACCESS_*`.
    pub access: u32,
    /// The open stateid.
    pub stateid: p::Stateid4,
    /// Its lock owners.
    pub locks: Vec<LockRecord>,
}

/// A delegation held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelegRecord {
    /// Its stateid.
    pub stateid: p::Stateid4,
    /// The file.
    pub fh: Bytes,
    /// A write delegation.
    pub write: bool,
    /// When it was granted.
    pub granted: Instant,
    /// When the server recalled it, if it did.
    pub recalled: Option<Instant>,
}

/// How long a recall of a delegation the client does not know (yet: the
/// OPEN that grants it may still be on its way, RFC 8881 §2.10.6.3) is
/// remembered.
pub const UNKNOWN_RECALL_KEPT: Duration = Duration::from_secs(120);

/// Everything the client holds.
#[derive(Debug, Default)]
pub struct ClientState {
    opens: BTreeMap<u64, OpenRecord>,
    delegs: HashMap<[u8; 12], DelegRecord>,
    early_recalls: Vec<(p::Stateid4, Instant)>,
}

impl ClientState {
    /// Empty.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records open `id`.
    pub fn opened(&mut self, id: u64, rec: OpenRecord) {
        self.opens.insert(id, rec);
    }

    /// Open `id`, if it is still open.
    pub fn open(&self, id: u64) -> Option<&OpenRecord> {
        self.opens.get(&id)
    }

    /// Its current open stateid.
    pub fn open_stateid(&self, id: u64) -> Option<p::Stateid4> {
        self.opens.get(&id).map(|o| o.stateid)
    }

    /// A new open stateid (OPEN again, LOCK, reclaim).
    pub fn set_open_stateid(&mut self, id: u64, s: p::Stateid4) {
        if let Some(o) = self.opens.get_mut(&id) {
            o.stateid = s;
        }
    }

    /// Open `id` closed.
    pub fn closed(&mut self, id: u64) -> Option<OpenRecord> {
        self.opens.remove(&id)
    }

    /// The lock owner `owner` of open `id`: its stateid if it has one.
    pub fn lock_stateid(&self, id: u64, owner: &[u8]) -> Option<p::Stateid4> {
        self.opens
            .get(&id)?
            .locks
            .iter()
            .find(|l| l.owner == owner)?
            .stateid
    }

    /// LOCK succeeded: `r` held by `owner` with `stateid`.
    pub fn locked(&mut self, id: u64, owner: &Bytes, stateid: p::Stateid4, r: Range) {
        let Some(o) = self.opens.get_mut(&id) else {
            return;
        };
        let rec = match o.locks.iter_mut().position(|l| l.owner == *owner) {
            Some(i) => &mut o.locks[i],
            None => {
                o.locks.push(LockRecord {
                    owner: owner.clone(),
                    stateid: None,
                    ranges: Ranges::default(),
                });
                o.locks.last_mut().expect("pushed")
            }
        };
        rec.stateid = Some(stateid);
        rec.ranges.lock(r);
    }

    /// LOCKU succeeded.
    pub fn unlocked(&mut self, id: u64, owner: &[u8], stateid: p::Stateid4, start: u64, end: u64) {
        if let Some(l) = self
            .opens
            .get_mut(&id)
            .and_then(|o| o.locks.iter_mut().find(|l| l.owner == owner))
        {
            l.stateid = Some(stateid);
            l.ranges.unlock(start, end);
        }
    }

    /// Whether open `id` holds locks (CLOSE would be `NFS4ERR_LOCKS_HELD`).
    pub fn holds_locks(&self, id: u64) -> bool {
        self.opens
            .get(&id)
            .is_some_and(|o| o.locks.iter().any(|l| !l.ranges.is_empty()))
    }

    /// Every open, for reclaiming after a restart.
    pub fn opens(&self) -> Vec<(u64, OpenRecord)> {
        self.opens.iter().map(|(k, v)| (*k, v.clone())).collect()
    }

    /// After a restart the lock stateids are gone (the ranges stay, to
    /// be reclaimed).
    pub fn forget_lock_stateids(&mut self) {
        for o in self.opens.values_mut() {
            for l in &mut o.locks {
                l.stateid = None;
            }
        }
    }

    /// OPEN granted a delegation; true if the server already recalled it
    /// (the recall overtook the OPEN's reply): return it at once.
    pub fn delegated(&mut self, rec: DelegRecord, now: Instant) -> bool {
        self.early_recalls
            .retain(|(_, t)| now.duration_since(*t) < UNKNOWN_RECALL_KEPT);
        let early = self
            .early_recalls
            .iter()
            .position(|(s, _)| s.other == rec.stateid.other);
        let mut rec = rec;
        if let Some(i) = early {
            rec.recalled = Some(self.early_recalls.remove(i).1);
        }
        self.delegs.insert(rec.stateid.other, rec);
        early.is_some()
    }

    /// CB_RECALL of `stateid` at `now`: the delegation to return, or `None`
    /// if the client does not know it yet (remembered, see
    /// [`ClientState::delegated`]) or returns it already.
    pub fn recalled(&mut self, stateid: &p::Stateid4, now: Instant) -> Option<DelegRecord> {
        match self.delegs.get_mut(&stateid.other) {
            Some(d) if d.recalled.is_none() => {
                d.recalled = Some(now);
                Some(d.clone())
            }
            Some(_) => None,
            None => {
                self.early_recalls.push((*stateid, now));
                None
            }
        }
    }

    /// The delegation returned (or revoked): forgotten.
    pub fn returned(&mut self, stateid: &p::Stateid4) -> Option<DelegRecord> {
        self.delegs.remove(&stateid.other)
    }

    /// The delegation of a file, if one is held.
    pub fn delegation_of(&self, fh: &[u8]) -> Option<&DelegRecord> {
        self.delegs.values().find(|d| d.fh == fh)
    }

    /// Every delegation held.
    pub fn delegations(&self) -> Vec<DelegRecord> {
        self.delegs.values().cloned().collect()
    }

    /// CB_RECALL_ANY: the delegations to return so that at most `keep`
    /// stay (the oldest go first), marked recalled.
    pub fn recall_any(&mut self, keep: u32, now: Instant) -> Vec<DelegRecord> {
        let mut held: Vec<&mut DelegRecord> = self
            .delegs
            .values_mut()
            .filter(|d| d.recalled.is_none())
            .collect();
        held.sort_by_key(|d| d.granted);
        let extra = held.len().saturating_sub(keep as usize);
        held.into_iter()
            .take(extra)
            .map(|d| {
                d.recalled = Some(now);
                d.clone()
            })
            .collect()
    }

    /// A server restart drops every delegation (none is reclaimed).
    pub fn forget_delegations(&mut self) -> usize {
        let n = self.delegs.len();
        self.delegs.clear();
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sid(n: u8) -> p::Stateid4 {
        p::Stateid4 {
            seqid: 1,
            other: [n; 12],
        }
    }

    #[test]
    fn posix_ranges() {
        let mut r = Ranges::default();
        r.lock(Range::of(0, 100, true));
        r.lock(Range::of(100, 50, true));
        assert_eq!(
            r.iter().copied().collect::<Vec<_>>(),
            vec![Range::of(0, 150, true)]
        );
        r.lock(Range::of(40, 20, false));
        r.unlock(140, u64::MAX);
        assert_eq!(
            r.iter().copied().collect::<Vec<_>>(),
            vec![
                Range::of(0, 40, true),
                Range::of(40, 20, false),
                Range::of(60, 80, true)
            ]
        );
        r.lock(Range::of(10, u64::MAX, false));
        assert_eq!(r.iter().last().unwrap().length(), u64::MAX);
        r.unlock(0, u64::MAX);
        assert!(r.is_empty());
    }

    #[test]
    fn opens_and_locks() {
        let mut s = ClientState::new();
        s.opened(
            1,
            OpenRecord {
                fh: Bytes::from_static(b"fh"),
                owner: Bytes::from_static(b"o"),
                access: 1,
                stateid: sid(1),
                locks: Vec::new(),
            },
        );
        let owner = Bytes::from_static(b"l");
        assert_eq!(s.lock_stateid(1, b"l"), None);
        s.locked(1, &owner, sid(2), Range::of(0, 10, true));
        assert_eq!(s.lock_stateid(1, b"l"), Some(sid(2)));
        assert!(s.holds_locks(1));
        s.forget_lock_stateids();
        assert_eq!(s.lock_stateid(1, b"l"), None);
        s.unlocked(1, b"l", sid(3), 0, 10);
        assert!(!s.holds_locks(1));
        assert!(s.closed(1).is_some() && s.open(1).is_none());
    }

    #[test]
    fn a_recall_may_overtake_the_open() {
        let t = Instant::now();
        let mut s = ClientState::new();
        assert_eq!(s.recalled(&sid(5), t), None);
        let d = DelegRecord {
            stateid: sid(5),
            fh: Bytes::from_static(b"f"),
            write: false,
            granted: t,
            recalled: None,
        };
        assert!(s.delegated(d.clone(), t), "recalled before it was known");
        assert!(!s.delegated(
            DelegRecord {
                stateid: sid(6),
                ..d.clone()
            },
            t
        ));
        assert!(s.recalled(&sid(6), t).is_some());
        assert!(s.recalled(&sid(6), t).is_none(), "once");
        assert!(s.returned(&sid(6)).is_some());
        assert!(s.delegation_of(b"f").is_some());
    }

    #[test]
    fn recall_any_keeps_the_newest() {
        let t = Instant::now();
        let mut s = ClientState::new();
        for i in 0..4u8 {
            s.delegated(
                DelegRecord {
                    stateid: sid(i),
                    fh: Bytes::from(vec![i]),
                    write: false,
                    granted: t + Duration::from_secs(u64::from(i)),
                    recalled: None,
                },
                t,
            );
        }
        let gone = s.recall_any(1, t);
        let mut ids: Vec<u8> = gone.iter().map(|d| d.stateid.other[0]).collect();
        ids.sort_unstable();
        assert_eq!(ids, vec![0, 1, 2]);
        assert!(s.recall_any(1, t).is_empty());
        assert_eq!(s.forget_delegations(), 4);
    }
}
