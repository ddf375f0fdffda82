//! Byte-range locks of one file (RFC 8881 §9): POSIX record-lock
//! semantics between lock owners, any number of clients.
//!
//! A range is `[offset, end)` with `end` exclusive; a length of all ones
//! reaches the end of the file (`end == u64::MAX`, which is also the
//! largest end any other lock can have, so "to the end" and "up to the
//! last octet" coincide). A lock owner's new lock replaces whatever it
//! held in that range (upgrading or downgrading it) and merges with
//! adjacent ranges of the same type; an unlock splits. Two owners
//! conflict where their ranges overlap and either holds a write lock.

use super::ids::ClientId;

/// Who holds a lock: a client's lock owner.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LockOwner {
    /// The client.
    pub client: ClientId,
    /// The owner's opaque name (`lock_owner4.owner`).
    pub owner: Vec<u8>,
}

/// A lock's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// Shared (`READ_LT`, `READW_LT`).
    Read,
    /// Exclusive (`WRITE_LT`, `WRITEW_LT`).
    Write,
}

/// One held range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    /// Who holds it.
    pub owner: LockOwner,
    /// First octet.
    pub offset: u64,
    /// One past the last octet (`u64::MAX`: to the end of the file).
    pub end: u64,
    /// Shared or exclusive.
    pub kind: LockKind,
}

impl Range {
    /// The NFSv4 length of this range (all ones for "to the end").
    pub fn length(&self) -> u64 {
        if self.end == u64::MAX {
            u64::MAX
        } else {
            self.end - self.offset
        }
    }
}

/// Why a range from the wire is unusable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeError {
    /// A zero length, or offset + length past 2^64 (`NFS4ERR_INVAL`).
    Invalid,
}

/// `[offset, end)` for an NFSv4 (offset, length) (RFC 8881 §18.10.4:
/// a zero length, or a length other than all ones that runs past 2^64 − 1,
/// is `NFS4ERR_INVAL`).
///
/// ```
/// use rpcrdma_nfs4::state::locks::{span, RangeError};
/// assert_eq!(span(10, 5), Ok((10, 15)));
/// assert_eq!(span(10, u64::MAX), Ok((10, u64::MAX)));
/// assert_eq!(span(10, 0), Err(RangeError::Invalid));
/// assert_eq!(span(u64::MAX - 1, 2), Err(RangeError::Invalid));
/// assert_eq!(span(u64::MAX - 1, 1), Ok((u64::MAX - 1, u64::MAX)));
/// ```
pub fn span(offset: u64, length: u64) -> Result<(u64, u64), RangeError> {
    if length == 0 {
        return Err(RangeError::Invalid);
    }
    if length == u64::MAX {
        return Ok((offset, u64::MAX));
    }
    match offset.checked_add(length) {
        Some(end) => Ok((offset, end)),
        None => Err(RangeError::Invalid),
    }
}

/// The locks held on one file.
#[derive(Debug, Clone, Default)]
pub struct FileLocks {
    ranges: Vec<Range>,
}

fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

impl FileLocks {
    /// No locks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether no lock is held.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Every range held, in no particular order.
    pub fn ranges(&self) -> &[Range] {
        &self.ranges
    }

    /// The first lock of another owner that `kind` over `[offset, end)`
    /// would conflict with.
    pub fn conflict(
        &self,
        who: &LockOwner,
        offset: u64,
        end: u64,
        kind: LockKind,
    ) -> Option<&Range> {
        self.ranges.iter().find(|r| {
            &r.owner != who
                && overlaps((r.offset, r.end), (offset, end))
                && (kind == LockKind::Write || r.kind == LockKind::Write)
        })
    }

    /// Takes `kind` over `[offset, end)` for `who`, unless another owner's
    /// lock conflicts (returned). What `who` held in the range is replaced.
    pub fn lock(
        &mut self,
        who: &LockOwner,
        offset: u64,
        end: u64,
        kind: LockKind,
    ) -> Result<(), Range> {
        if let Some(c) = self.conflict(who, offset, end, kind) {
            return Err(c.clone());
        }
        self.unlock(who, offset, end);
        self.ranges.push(Range {
            owner: who.clone(),
            offset,
            end,
            kind,
        });
        self.merge(who);
        Ok(())
    }

    /// Releases `[offset, end)` of `who`'s locks (splitting a range that
    /// straddles it). Releasing what is not held is not an error.
    pub fn unlock(&mut self, who: &LockOwner, offset: u64, end: u64) {
        let mut out = Vec::with_capacity(self.ranges.len() + 1);
        for r in self.ranges.drain(..) {
            if &r.owner != who || !overlaps((r.offset, r.end), (offset, end)) {
                out.push(r);
                continue;
            }
            if r.offset < offset {
                out.push(Range {
                    end: offset,
                    ..r.clone()
                });
            }
            if r.end > end {
                out.push(Range { offset: end, ..r });
            }
        }
        self.ranges = out;
    }

    /// Drops every lock of `who` (its state freed or its client gone).
    pub fn release_owner(&mut self, who: &LockOwner) {
        self.ranges.retain(|r| &r.owner != who);
    }

    /// Drops every lock of `client`.
    pub fn release_client(&mut self, client: ClientId) {
        self.ranges.retain(|r| r.owner.client != client);
    }

    /// Whether `who` holds any range.
    pub fn holds(&self, who: &LockOwner) -> bool {
        self.ranges.iter().any(|r| &r.owner == who)
    }

    /// Joins `who`'s adjacent or overlapping ranges of the same kind.
    fn merge(&mut self, who: &LockOwner) {
        let (mut mine, others): (Vec<Range>, Vec<Range>) =
            self.ranges.drain(..).partition(|r| &r.owner == who);
        mine.sort_by_key(|r| r.offset);
        let mut joined: Vec<Range> = Vec::with_capacity(mine.len());
        for r in mine {
            match joined.last_mut() {
                Some(last) if last.kind == r.kind && last.end >= r.offset => {
                    last.end = last.end.max(r.end);
                }
                _ => joined.push(r),
            }
        }
        self.ranges = others;
        self.ranges.extend(joined);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(c: u64, o: &[u8]) -> LockOwner {
        LockOwner {
            client: ClientId(c),
            owner: o.to_vec(),
        }
    }

    #[test]
    fn readers_share_and_writers_exclude() {
        let (a, b) = (owner(1, b"a"), owner(2, b"b"));
        let mut f = FileLocks::new();
        f.lock(&a, 0, 100, LockKind::Read).unwrap();
        f.lock(&b, 50, 150, LockKind::Read).unwrap();
        let c = f.lock(&b, 90, 95, LockKind::Write).unwrap_err();
        assert_eq!((c.owner.clone(), c.offset, c.end), (a.clone(), 0, 100));
        // Beyond a's range, b may write.
        f.lock(&b, 100, 150, LockKind::Write).unwrap();
        assert!(f.conflict(&a, 120, 121, LockKind::Read).is_some());
        assert!(f.conflict(&a, 150, u64::MAX, LockKind::Write).is_none());
    }

    #[test]
    fn an_owner_upgrades_splits_and_merges_its_own_ranges() {
        let a = owner(1, b"a");
        let mut f = FileLocks::new();
        f.lock(&a, 0, 100, LockKind::Read).unwrap();
        f.lock(&a, 40, 60, LockKind::Write).unwrap();
        let mut r: Vec<_> = f
            .ranges()
            .iter()
            .map(|r| (r.offset, r.end, r.kind))
            .collect();
        r.sort_by_key(|x| x.0);
        assert_eq!(
            r,
            vec![
                (0, 40, LockKind::Read),
                (40, 60, LockKind::Write),
                (60, 100, LockKind::Read)
            ]
        );
        f.unlock(&a, 10, 90);
        let mut r: Vec<_> = f.ranges().iter().map(|r| (r.offset, r.end)).collect();
        r.sort();
        assert_eq!(r, vec![(0, 10), (90, 100)]);
        f.lock(&a, 10, 90, LockKind::Read).unwrap();
        assert_eq!(f.ranges().len(), 1, "merged back: {:?}", f.ranges());
        assert_eq!(f.ranges()[0].length(), 100);
        f.release_owner(&a);
        assert!(f.is_empty());
    }

    #[test]
    fn to_the_end_of_the_file() {
        let (a, b) = (owner(1, b"a"), owner(1, b"b"));
        let mut f = FileLocks::new();
        let (o, e) = span(1000, u64::MAX).unwrap();
        f.lock(&a, o, e, LockKind::Write).unwrap();
        assert!(f
            .conflict(&b, u64::MAX - 1, u64::MAX, LockKind::Read)
            .is_some());
        assert!(f.conflict(&b, 0, 1000, LockKind::Write).is_none());
        assert_eq!(f.ranges()[0].length(), u64::MAX);
        f.release_client(ClientId(1));
        assert!(f.is_empty());
    }
}
