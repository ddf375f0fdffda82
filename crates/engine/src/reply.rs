//! Responder side: choosing how a reply travels (RFC 8166 §4.5.3).
//!
//! When the requester provided Write chunks, DDP-eligible results are
//! reduced into them in order (§4.4.6, §5.3.2): segments are filled in
//! array order, their lengths rewritten with what was written, no XDR pad
//! is written, and unused chunks come back with zero lengths (§4.4.6.2).
//! The reduced reply goes inline when it fits the requester's receive
//! threshold, otherwise into the Reply chunk as `RDMA_NOMSG`.

use bytes::Bytes;
use rpcrdma_verbs::{RemoteAddr, Sge};
use rpcrdma_wire::v2::Direction;
use rpcrdma_wire::{ChunkLists, Header, Segment, WriteChunk};
use rpcrdma_xdr::Payload;

use crate::event::MessageForm;
use crate::hdr;
use crate::stream::{inline_sges, stream_sges};

/// One RDMA Write: a gather list and where it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WriteOp {
    /// The pieces, as the work request's gather list.
    pub(crate) pieces: Vec<Sge>,
    pub(crate) remote: RemoteAddr,
}

impl WriteOp {
    /// Octets the Write carries.
    pub(crate) fn len(&self) -> usize {
        self.pieces.iter().map(Sge::len).sum()
    }
}

/// How to send one reply.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ReplyPlan {
    /// RDMA Writes to post before the Send.
    pub(crate) writes: Vec<WriteOp>,
    pub(crate) header: Header,
    /// The Send's gather list: index 0 is left for the header, then the
    /// Payload pieces (none for `RDMA_NOMSG`).
    pub(crate) pieces: Vec<Sge>,
    pub(crate) form: MessageForm,
}

/// Why a reply cannot be sent in any form the requester provided for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ReplyError {
    /// A DDP-eligible result is larger than its Write chunk.
    #[error("a result is larger than the Write chunk provided for it")]
    WriteChunkTooSmall,
    /// The reply does not fit inline and the Reply chunk is too small.
    #[error("the reply is larger than the Reply chunk provided for it")]
    ReplyChunkTooSmall,
    /// The reply does not fit inline and no Reply chunk was provided.
    #[error("the reply exceeds the requester's inline threshold and it provided no Reply chunk")]
    NoReplyChunk,
}

/// Spreads `pieces` over `segments` in order, appending one RDMA Write per
/// segment that receives data to `writes`. Returns the segments with their
/// lengths rewritten to what each received (zero for untouched ones), or
/// `None` if the data does not fit (`writes` may then hold some of them).
pub(crate) fn scatter(
    pieces: &[Bytes],
    segments: &[Segment],
    writes: &mut Vec<WriteOp>,
) -> Option<Vec<Segment>> {
    let mut updated = Vec::with_capacity(segments.len());
    // The piece being spread, and how much of it went already.
    let mut rest = pieces.iter().filter(|p| !p.is_empty());
    let mut front = rest.next();
    let mut sent = 0usize;
    for seg in segments {
        let mut room = seg.length as usize;
        let mut used = 0usize;
        let mut gather = rpcrdma_verbs::gather_list(1);
        while room > 0 {
            let Some(piece) = front else {
                break;
            };
            let take = (piece.len() - sent).min(room);
            gather.push(Sge::Bytes(if sent == 0 && take == piece.len() {
                piece.clone()
            } else {
                piece.slice(sent..sent + take)
            }));
            sent += take;
            if sent == piece.len() {
                front = rest.next();
                sent = 0;
            }
            room -= take;
            used += take;
        }
        if gather.is_empty() {
            rpcrdma_verbs::recycle_gather_list(gather);
        } else {
            writes.push(WriteOp {
                pieces: gather,
                remote: RemoteAddr {
                    rkey: seg.handle,
                    addr: seg.offset,
                },
            });
        }
        //= rfc5666bis-04#section-4.4.6
        //# The responder MUST NOT change the number of segments in the Write
        //# chunk.
        //= rfc5666bis-04#section-4.4.6
        //# If a Write chunk segment is not filled by the responder, the
        //# updated length of the segment SHOULD be zero.
        //= rfc5666bis-04#section-4.4.6.2
        //# When forming an RPC-over-RDMA Reply message with an unused Write
        //# chunk, the responder MUST set the length of all segments in the
        //# chunk to zero.
        updated.push(Segment {
            length: used as u32,
            ..*seg
        });
    }
    front.is_none().then_some(updated)
}

/// Connection facts the plan depends on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReplyParams {
    pub(crate) version: u32,
    pub(crate) xid: u32,
    pub(crate) credits: u32,
    /// The largest message the requester can receive.
    pub(crate) send_threshold: u32,
}

/// Plans the reply to a call that provided `writes` and `reply`.
pub(crate) fn plan_reply(
    writes: &[WriteChunk],
    reply: Option<&WriteChunk>,
    payload: Payload,
    p: &ReplyParams,
) -> Result<ReplyPlan, ReplyError> {
    if writes.is_empty() && !payload.has_items() {
        // The common reply: nothing to reduce; inline if it fits (what
        // the general path below decides for it too).
        let len = hdr::chunked_len(p.version, 0, &[], None) + payload.inline().len();
        if len <= p.send_threshold as usize {
            return Ok(ReplyPlan {
                writes: Vec::new(),
                header: hdr::chunked(
                    p.version,
                    p.xid,
                    p.credits,
                    Direction::Reply,
                    ChunkLists::default(),
                    false,
                ),
                pieces: inline_sges(payload),
                form: MessageForm::Short,
            });
        }
    }
    plan_reply_general(writes, reply, &payload, p)
}

/// [`plan_reply`] without its fast path.
fn plan_reply_general(
    writes: &[WriteChunk],
    reply: Option<&WriteChunk>,
    payload: &Payload,
    p: &ReplyParams,
) -> Result<ReplyPlan, ReplyError> {
    // The positioned items, in order: the first of them go into the
    // Write chunks, one each.
    let mut positioned = payload
        .items()
        .iter()
        .filter(|i| i.inline_offset.is_some())
        .map(|i| &i.data);
    let mut reduced = 0;
    let mut ops = Vec::new();
    let mut write_list = Vec::with_capacity(writes.len());
    for chunk in writes {
        let item = positioned.next();
        reduced += usize::from(item.is_some());
        //= rfc5666bis-04#section-4.4.6.1
        //# A responder MUST NOT write XDR pad bytes for a Write chunk.
        //= rfc5666bis-04#section-5.3.2
        //# * When a Write list is provided for the results of an RPC Call,
        //# the responder MUST provide data corresponding to DDP-eligible XDR
        //# data items via RDMA Write operations to the memory referenced in
        //# the Write list.
        let data = item.map_or(&[][..], std::slice::from_ref);
        let segs =
            scatter(data, &chunk.segments, &mut ops).ok_or(ReplyError::WriteChunkTooSmall)?;
        write_list.push(WriteChunk::new(segs));
    }
    //= rfc5666bis-04#section-4.4.6.1
    //# Thus when an XDR data item is moved from a reply Payload stream into a
    //# Write chunk, the responder MUST remove XDR padding for that data item
    //# from the reply Payload stream as well.
    let (pieces, inline_len) = stream_sges(payload, reduced);
    let form_if_inline = if reduced > 0 {
        MessageForm::Chunked
    } else {
        MessageForm::Short
    };

    // The header is built once, by the form that fits: its chunk lists
    // move into it.
    let header = |write_list: Vec<WriteChunk>, reply_chunk: Option<WriteChunk>| {
        let nomsg = reply_chunk.is_some();
        hdr::chunked(
            p.version,
            p.xid,
            p.credits,
            Direction::Reply,
            ChunkLists {
                reads: Vec::new(),
                writes: write_list,
                reply: reply_chunk,
            },
            nomsg,
        )
    };
    //= rfc5666bis-04#section-5.3.3
    //# If the actual reply Payload stream is smaller than the requester's
    //# inline threshold, the responder MAY return it as a Short message
    //# rather than using the Reply chunk.
    //= rfc5666bis-04#section-5.2.4
    //# However, the total length of the gathered send buffers MUST NOT exceed
    //# the peer receiver's inline threshold.
    if hdr::chunked_len(p.version, 0, &write_list, None) + inline_len <= p.send_threshold as usize {
        return Ok(ReplyPlan {
            writes: ops,
            header: header(write_list, None),
            pieces,
            form: form_if_inline,
        });
    }
    //= rfc5666bis-04#section-4.5.3
    //# If a Reply chunk was provided and the reduced Payload is larger than
    //# the requester's inline threshold, the responder MUST use the provided
    //# Reply chunk for the reply.
    //= rfc5666bis-04#section-4.5.3
    //# If there are no DDP-eligible data items in the Payload stream, or the
    //# Payload stream is still too large after it has been reduced, the RDMA
    //# transport MUST use RDMA Read or Write operations to convey the Payload
    //# stream itself.
    let Some(chunk) = reply else {
        return Err(ReplyError::NoReplyChunk);
    };
    let stream: Vec<Bytes> = pieces
        .into_iter()
        .filter_map(|s| match s {
            Sge::Bytes(b) => Some(b),
            Sge::Region(_) => None,
        })
        .collect();
    let segs = scatter(&stream, &chunk.segments, &mut ops).ok_or(ReplyError::ReplyChunkTooSmall)?;
    Ok(ReplyPlan {
        writes: ops,
        header: header(write_list, Some(WriteChunk::new(segs))),
        pieces: Vec::new(),
        form: MessageForm::Long,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(handle: u32, length: u32) -> Segment {
        Segment {
            handle,
            length,
            offset: u64::from(handle) << 32,
        }
    }

    //= rfc5666bis-04#section-4.4.6
    //= type=test
    //# The responder MUST NOT change the number of segments in the Write
    //# chunk.
    //= rfc5666bis-04#section-4.4.6
    //= type=test
    //# If a Write chunk segment is not filled by the responder, the updated
    //# length of the segment SHOULD be zero.
    #[test]
    fn scatter_fills_segments_in_order_and_zeroes_the_rest() {
        let data = [Bytes::from_static(b"0123456789")];
        let mut w = Vec::new();
        let segs = scatter(&data, &[seg(1, 4), seg(2, 4), seg(3, 4), seg(4, 4)], &mut w).unwrap();
        assert_eq!(w.len(), 3);
        assert_eq!(w[2].pieces, vec![Sge::Bytes(Bytes::from_static(b"89"))]);
        assert_eq!(
            w.iter().map(WriteOp::len).collect::<Vec<_>>(),
            vec![4, 4, 2]
        );
        assert_eq!(
            segs.iter().map(|s| s.length).collect::<Vec<_>>(),
            vec![4, 4, 2, 0]
        );
        assert!(scatter(&data, &[seg(1, 9)], &mut Vec::new()).is_none());
    }

    #[test]
    fn the_short_fast_path_plans_what_the_general_path_plans() {
        let reply_chunk = WriteChunk::new(vec![seg(9, 8192)]);
        for version in [1, 2] {
            for len in [0usize, 4, 24, 995, 996, 997, 1000, 4064, 4065, 5000] {
                let payload = Payload::inline_only(Bytes::from(vec![7u8; len]));
                for send_threshold in [1024, 4096] {
                    for reply in [None, Some(&reply_chunk)] {
                        let p = ReplyParams {
                            version,
                            xid: 5,
                            credits: 32,
                            send_threshold,
                        };
                        assert_eq!(
                            plan_reply(&[], reply, payload.clone(), &p),
                            plan_reply_general(&[], reply, &payload, &p),
                            "version {version}, {len} octets, threshold {send_threshold}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn scatter_gathers_several_pieces_into_one_segment() {
        let data = [Bytes::from_static(b"ab"), Bytes::from_static(b"cd")];
        let mut w = Vec::new();
        let segs = scatter(&data, &[seg(7, 100)], &mut w).unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].pieces.len(), 2);
        assert_eq!(segs[0].length, 4);
    }

    #[test]
    fn scatter_splits_a_piece_across_segments_and_shares_its_memory() {
        let data = [Bytes::from_static(b"abc"), Bytes::from_static(b"defgh")];
        let mut w = Vec::new();
        let segs = scatter(&data, &[seg(1, 4), seg(2, 4), seg(3, 4)], &mut w).unwrap();
        let got: Vec<Vec<&[u8]>> = w
            .iter()
            .map(|op| {
                op.pieces
                    .iter()
                    .map(|p| match p {
                        Sge::Bytes(b) => &b[..],
                        Sge::Region(_) => panic!("a region in a reply's Write"),
                    })
                    .collect()
            })
            .collect();
        assert_eq!(got, vec![vec![&b"abc"[..], b"d"], vec![b"efgh"]]);
        assert_eq!(w[1].remote.rkey, 2);
        assert_eq!(
            segs.iter().map(|s| s.length).collect::<Vec<_>>(),
            vec![4, 4, 0]
        );
        // A whole piece goes as itself, a part as a slice of it: no copy.
        let Sge::Bytes(first) = &w[0].pieces[0] else {
            unreachable!()
        };
        assert_eq!(first.as_ptr(), data[0].as_ptr());
        let Sge::Bytes(tail) = &w[1].pieces[0] else {
            unreachable!()
        };
        assert_eq!(tail.as_ptr(), data[1][1..].as_ptr());
        // Data left over: no plan.
        assert!(scatter(&data, &[seg(1, 4), seg(2, 3)], &mut Vec::new()).is_none());
    }
}
