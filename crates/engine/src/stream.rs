//! Turning a [`Payload`] into the byte pieces of a (possibly reduced)
//! Payload stream, without copying.

use bytes::Bytes;
use rpcrdma_verbs::Sge;
use rpcrdma_xdr::{pad_len, Payload};

static PAD: [u8; 3] = [0; 3];

/// The Payload stream of `payload` as consecutive [`Bytes`] pieces, with
/// the first `reduced` positioned DDP items left out (their length words
/// stay, RFC 8166 §4.4.4.1; their padding goes too, §4.4.5.1/§4.4.6.1).
/// Items after those are written inline with their padding.
///
/// Returns the pieces and their total length.
pub(crate) fn stream_pieces(payload: &Payload, reduced: usize) -> (Vec<Bytes>, usize) {
    let mut out = Vec::with_capacity(1 + 3 * payload.items().len());
    let total = visit_pieces(payload, reduced, |b| out.push(b));
    (out, total)
}

/// Like [`stream_pieces`], as the gather list of a Send whose first
/// element (index 0, an empty placeholder here) is left for the transport
/// header: one allocation for the whole list.
pub(crate) fn stream_sges(payload: &Payload, reduced: usize) -> (Vec<Sge>, usize) {
    let mut out = rpcrdma_verbs::gather_list(2 + 3 * payload.items().len());
    out.push(Sge::Bytes(Bytes::new()));
    if !payload.has_items() {
        // The whole stream is the inline bytes.
        let inline = payload.inline();
        if !inline.is_empty() {
            out.push(Sge::Bytes(inline.clone()));
        }
        return (out, inline.len());
    }
    let total = visit_pieces(payload, reduced, |b| out.push(Sge::Bytes(b)));
    (out, total)
}

/// The gather list of a Send of the whole (unreduced) Payload stream of
/// `payload`, taken by value: inline bytes alone are moved into the list,
/// not shared (slot 0 left for the header, as in [`stream_sges`]).
pub(crate) fn inline_sges(payload: Payload) -> Vec<Sge> {
    if payload.has_items() {
        return stream_sges(&payload, 0).0;
    }
    let (inline, _) = payload.into_parts();
    let mut out = rpcrdma_verbs::gather_list(2);
    out.push(Sge::Bytes(Bytes::new()));
    if !inline.is_empty() {
        out.push(Sge::Bytes(inline));
    }
    out
}

/// Calls `f` with each non-empty piece of the (reduced) Payload stream in
/// order; returns their total length.
fn visit_pieces(payload: &Payload, reduced: usize, mut f: impl FnMut(Bytes)) -> usize {
    let inline = payload.inline();
    let mut total = 0usize;
    let mut at = 0usize;
    let mut push = |b: Bytes, f: &mut dyn FnMut(Bytes)| {
        if !b.is_empty() {
            total += b.len();
            f(b);
        }
    };
    let out = &mut f;
    for (i, item) in payload.items().iter().enumerate() {
        let Some(off) = item.inline_offset else {
            continue;
        };
        //= rfc5666bis-04#section-4.4.5.1
        //# Thus when an XDR data item is moved from the Payload stream into a
        //# Read chunk, the requester MUST remove XDR padding for that data
        //# item from the Payload stream as well.
        if i < reduced {
            continue;
        }
        let off = off.clamp(at, inline.len());
        push(inline.slice(at..off), out);
        push(item.data.clone(), out);
        push(Bytes::from_static(&PAD[..pad_len(item.data.len())]), out);
        at = off;
    }
    push(inline.slice(at..), out);
    total
}

/// Positions (in the full Payload stream) and data of the positioned DDP
/// items of `payload`.
pub(crate) fn item_positions(payload: &Payload) -> Vec<(u32, Bytes)> {
    payload
        .item_positions()
        .map(|(pos, item)| (u32::try_from(pos).unwrap_or(u32::MAX), item.data.clone()))
        .collect()
}

/// Joins pieces into one buffer (used only where a single contiguous
/// region is needed, e.g. a Position-Zero Read chunk of an unreduced call).
pub(crate) fn concat(pieces: &[Bytes]) -> Bytes {
    match pieces {
        [] => Bytes::new(),
        [one] => one.clone(),
        many => {
            let mut v = Vec::with_capacity(many.iter().map(Bytes::len).sum());
            for p in many {
                v.extend_from_slice(p);
            }
            Bytes::from(v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcrdma_xdr::PayloadEncoder;

    fn sample() -> Payload {
        let mut pe = PayloadEncoder::new();
        let mut e = pe.encoder();
        e.put_u32(1);
        e.put_opaque_ddp(Bytes::from_static(b"abcde"));
        e.put_u32(2);
        e.put_opaque_ddp(Bytes::from_static(b"xy"));
        e.put_u32(3);
        pe.finish()
    }

    #[test]
    fn unreduced_pieces_are_the_full_stream() {
        let p = sample();
        let (pieces, n) = stream_pieces(&p, 0);
        assert_eq!(n, p.stream_len());
        assert_eq!(concat(&pieces), p.flatten());
    }

    #[test]
    fn reduced_pieces_drop_data_and_padding_only() {
        let p = sample();
        let (pieces, n) = stream_pieces(&p, 2);
        assert_eq!(concat(&pieces), p.inline().clone());
        assert_eq!(n, p.inline().len());
        // Reducing only the first item keeps the second inline, padded.
        let (pieces, _) = stream_pieces(&p, 1);
        let flat = concat(&pieces);
        assert_eq!(flat.len(), p.inline().len() + 4);
        assert_eq!(&flat[flat.len() - 12..flat.len() - 4], b"\0\0\0\x02xy\0\0");
    }

    #[test]
    fn send_gather_lists_leave_slot_zero_for_the_header() {
        let p = sample();
        for reduced in [0, 1, 2] {
            let (sges, n) = stream_sges(&p, reduced);
            let (pieces, m) = stream_pieces(&p, reduced);
            assert_eq!(n, m);
            assert_eq!(sges[0], Sge::Bytes(Bytes::new()));
            let rest: Vec<Sge> = pieces.into_iter().map(Sge::Bytes).collect();
            assert_eq!(&sges[1..], &rest[..]);
        }
    }

    #[test]
    fn a_gather_list_by_value_is_the_same_list() {
        let inline_only = Payload::inline_only(Bytes::from_static(b"0123"));
        for p in [sample(), inline_only, Payload::default()] {
            assert_eq!(inline_sges(p.clone()), stream_sges(&p, 0).0);
        }
    }

    #[test]
    fn positions_count_earlier_items() {
        let pos: Vec<u32> = item_positions(&sample()).iter().map(|p| p.0).collect();
        assert_eq!(pos, vec![8, 8 + 8 + 8]);
    }
}
