//! XID allocation (RFC 5531 §9): unique among the outstanding calls of
//! every client sending on the same connections.

use parking_lot::Mutex;
use std::sync::Arc;

use crate::util::IdSet;

/// XIDs in use by outstanding calls; allocation starts at a random value
/// (or at a fixed one, for reproducible runs).
pub(crate) struct XidAlloc {
    next: u32,
    used: IdSet<u32>,
}

/// An XID allocator shared by every client that sends on the same
/// connections.
pub(crate) type SharedXids = Arc<Mutex<XidAlloc>>;

impl XidAlloc {
    pub(crate) fn new(first: Option<u32>) -> Self {
        let next = first.unwrap_or_else(rand::random::<u32>);
        Self {
            next,
            used: IdSet::default(),
        }
    }

    pub(crate) fn shared(first: Option<u32>) -> SharedXids {
        Arc::new(Mutex::new(Self::new(first)))
    }

    /// A fresh xid, unique among those not yet freed.
    pub(crate) fn alloc(&mut self) -> u32 {
        loop {
            let x = self.next;
            self.next = self.next.wrapping_add(1);
            if self.used.insert(x) {
                return x;
            }
        }
    }

    pub(crate) fn free(&mut self, xid: u32) {
        self.used.remove(&xid);
    }
}
