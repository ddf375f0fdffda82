//! How a Send or RDMA Write's gather list becomes device scatter/gather
//! elements (sans-IO).
//!
//! The verbs interface lets a gather list mix registered memory
//! ([`Sge::Region`]) and inline [`bytes::Bytes`] owned by the work request
//! ([`Sge::Bytes`]). A device gathers only from registered memory, through
//! at most `max_send_sge` elements, or copies up to `max_inline_data`
//! octets at post time (`IBV_SEND_INLINE`). So:
//!
//! 1. a list of `Bytes` only whose total fits the queue pair's inline size
//!    is posted inline (no registration, no copy of ours);
//! 2. otherwise each `Bytes` piece of at most [`COPY_MAX`] octets is
//!    copied into a registered bounce buffer of the provider's, and a
//!    larger one is registered for the life of the work request;
//! 3. a list longer than `max_send_sge` is copied whole into one bounce
//!    buffer (registered memory included).

use rpcrdma_verbs::Sge;

/// `Bytes` pieces up to this size are copied into bounce buffers; larger
/// ones are registered while the work request is outstanding.
pub const COPY_MAX: usize = 64 * 1024;

/// What to do with one gather element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece {
    /// Registered memory, as is.
    Region,
    /// Copy into a bounce buffer.
    Copy,
    /// Register for the life of the work request.
    Register,
    /// Empty: left out.
    Skip,
}

/// The plan for one gather list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GatherPlan {
    /// Post inline (all `Bytes`, total within the inline size).
    Inline,
    /// One device element per non-skipped element.
    Pieces(Vec<Piece>),
    /// Copy everything into one bounce buffer of `total` octets.
    Coalesce {
        /// The message length.
        total: usize,
    },
}

/// Plans a gather list for a queue pair taking `max_sge` elements and
/// `max_inline` inline octets.
///
/// ```
/// use bytes::Bytes;
/// use rpcrdma_rdmacore::gather::{plan, GatherPlan, Piece};
/// use rpcrdma_verbs::{LocalSge, Sge};
/// let hdr = Sge::Bytes(Bytes::from_static(&[0; 28]));
/// assert_eq!(plan(&[hdr.clone()], 6, 64), GatherPlan::Inline);
/// let region = Sge::Region(LocalSge { lkey: 1, addr: 0x1000, len: 4096 });
/// assert_eq!(plan(&[hdr, region], 6, 64), GatherPlan::Pieces(vec![Piece::Copy, Piece::Region]));
/// ```
pub fn plan(sges: &[Sge], max_sge: u32, max_inline: u32) -> GatherPlan {
    let total: usize = sges.iter().map(Sge::len).sum();
    let all_bytes = sges.iter().all(|s| matches!(s, Sge::Bytes(_)));
    if all_bytes && total <= max_inline as usize {
        return GatherPlan::Inline;
    }
    let pieces: Vec<Piece> = sges
        .iter()
        .map(|s| match s {
            _ if s.is_empty() => Piece::Skip,
            Sge::Region(_) => Piece::Region,
            Sge::Bytes(b) if b.len() <= COPY_MAX => Piece::Copy,
            Sge::Bytes(_) => Piece::Register,
        })
        .collect();
    let used = pieces.iter().filter(|p| **p != Piece::Skip).count();
    if used > max_sge.max(1) as usize {
        return GatherPlan::Coalesce { total };
    }
    GatherPlan::Pieces(pieces)
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use rpcrdma_verbs::LocalSge;

    use super::*;

    fn b(n: usize) -> Sge {
        Sge::Bytes(Bytes::from(vec![7u8; n]))
    }

    fn r(n: u32) -> Sge {
        Sge::Region(LocalSge {
            lkey: 9,
            addr: 0x10_0000,
            len: n,
        })
    }

    #[test]
    fn inline_only_for_small_bytes() {
        assert_eq!(plan(&[b(20), b(40)], 2, 64), GatherPlan::Inline);
        assert_eq!(plan(&[], 2, 0), GatherPlan::Inline, "empty Send");
        assert_eq!(
            plan(&[b(20), b(45)], 2, 64),
            GatherPlan::Pieces(vec![Piece::Copy, Piece::Copy])
        );
        assert_eq!(
            plan(&[r(8)], 2, 64),
            GatherPlan::Pieces(vec![Piece::Region]),
            "registered memory is never inlined"
        );
    }

    #[test]
    fn large_bytes_are_registered() {
        assert_eq!(
            plan(&[b(100), b(COPY_MAX), b(COPY_MAX + 1)], 4, 0),
            GatherPlan::Pieces(vec![Piece::Copy, Piece::Copy, Piece::Register])
        );
    }

    #[test]
    fn too_many_elements_are_coalesced() {
        let list = [b(10), r(100), b(0), r(5)];
        assert_eq!(
            plan(&list, 3, 0),
            GatherPlan::Pieces(vec![Piece::Copy, Piece::Region, Piece::Skip, Piece::Region]),
            "empty elements do not count"
        );
        assert_eq!(plan(&list, 2, 0), GatherPlan::Coalesce { total: 115 });
        assert_eq!(plan(&list, 0, 0), GatherPlan::Coalesce { total: 115 });
    }
}
