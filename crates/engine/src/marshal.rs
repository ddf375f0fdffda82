//! Requester side: choosing how a call travels and provisioning its reply
//! (RFC 8166 §4.4, §4.5, §5.3).
//!
//! * **Short** when the header plus the whole Payload stream fits the
//!   peer's receive threshold.
//! * **Chunked** otherwise, when reduction is allowed and the call has
//!   DDP-eligible items: each item's data (without padding) becomes a Read
//!   chunk at its Payload-stream position; the reduced stream goes inline.
//! * **Long** otherwise: `RDMA_NOMSG` with a Position-Zero Read chunk
//!   holding the (reduced, if allowed) stream.
//!
//! For the reply, a Write chunk is provisioned for each DDP-eligible result
//! when the largest possible reply might not fit our receive threshold, and
//! a Reply chunk whenever the largest possible reply might not fit it
//! either way: the largest reply may come from a branch of the results
//! without the DDP items (§5.3.3). An Upper Layer that states no maximum
//! gets provision for the largest message the connection carries
//! (`EngineConfig::max_message`). See `docs/spec-notes.md`, E1, E2, E16.
//!
//! When the peer has advertised its chunk-list limits (Version Two
//! transport properties, `docs/v2-transport-properties.md`), the lists stay
//! within them: a call whose DDP items would need more Read segments than
//! the peer takes is not reduced (Long, one Position-Zero segment), and a
//! reply with more DDP-eligible results than the peer takes Write chunks
//! gets none (the results come back inline or in the Reply chunk).

use bytes::Bytes;
use rpcrdma_verbs::{Access, MemoryRegion, ProtectionDomain, Sge};
use rpcrdma_wire::v2::Direction;
use rpcrdma_wire::{ChunkLists, Header, ReadSegment, Segment, WriteChunk};
use rpcrdma_xdr::{round_up, Payload};

use crate::budget::MemoryBudget;
use crate::error::{CallError, SizeFault};
use crate::event::MessageForm;
use crate::hdr;
use crate::stream::{concat, inline_sges, item_positions, stream_pieces, stream_sges};

/// The setting a size refusal names ([`CallError::OverLimit`]).
const MAX_MESSAGE: &str = "EngineConfig::max_message";

/// What a call's Upper Layer Binding says about its reply (RFC 8166 §8).
///
/// ```
/// use rpcrdma_engine::ReplyHints;
/// let h = ReplyHints { ddp_results: vec![1 << 20], max_reply: Some((1 << 20) + 128), reduce: true, max_reply_reduced: None };
/// assert!(h.reduce);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyHints {
    /// Maximum size of each DDP-eligible result item, in XDR order (one
    /// Write chunk each).
    pub ddp_results: Vec<u32>,
    /// Largest possible RPC reply message (header and results, unreduced,
    /// over every branch of the results), if known. `None`: the requester
    /// provides for the largest message the connection carries
    /// (`EngineConfig::max_message`), a Reply chunk of that size.
    pub max_reply: Option<u32>,
    /// Whether DDP-eligible items may be reduced in this call and its reply
    /// (false for RPCSEC_GSS integrity/privacy, RFC 8166 §10.2.2.3).
    pub reduce: bool,
    /// Largest possible reply message when every DDP-eligible result goes
    /// in its Write chunk, over every branch of the results, if the Upper
    /// Layer knows it (NFS READ: the attributes, count and eof). With Write
    /// chunks provided, a Reply chunk is then provided only if this can
    /// exceed the receive threshold, as the Linux client does for READ;
    /// `None`: decided on `max_reply`, unreduced (spec note E1).
    pub max_reply_reduced: Option<u32>,
}

impl ReplyHints {
    /// A reply of at most `max_reply` bytes with nothing DDP-eligible.
    ///
    /// ```
    /// use rpcrdma_engine::ReplyHints;
    /// let h = ReplyHints::at_most(8192);
    /// assert_eq!((h.max_reply, h.ddp_results.is_empty(), h.reduce), (Some(8192), true, true));
    /// ```
    pub fn at_most(max_reply: u32) -> Self {
        Self {
            max_reply: Some(max_reply),
            ..Self::default()
        }
    }

    /// DDP-eligible results of at most `ddp_results[i]` bytes each, in XDR
    /// order, in a reply of at most `max_reply` bytes (unreduced).
    ///
    /// ```
    /// use rpcrdma_engine::ReplyHints;
    /// let read = ReplyHints::with_ddp(&[1 << 20], (1 << 20) + 64);
    /// assert_eq!(read.ddp_results, vec![1 << 20]);
    /// assert!(!read.unreduced().reduce);
    /// ```
    pub fn with_ddp(ddp_results: &[u32], max_reply: u32) -> Self {
        Self {
            ddp_results: ddp_results.to_vec(),
            max_reply: Some(max_reply),
            reduce: true,
            max_reply_reduced: None,
        }
    }

    /// The same with reduction turned off (RPCSEC_GSS integrity or privacy,
    /// RFC 8166 §10.2.2.3).
    #[must_use]
    pub fn unreduced(mut self) -> Self {
        self.reduce = false;
        self
    }
}

impl Default for ReplyHints {
    fn default() -> Self {
        Self {
            ddp_results: Vec::new(),
            max_reply: None,
            reduce: true,
            max_reply_reduced: None,
        }
    }
}

/// A chunk we provided for the responder to write into (one segment).
#[derive(Debug)]
pub(crate) struct Provided<Mr> {
    pub(crate) mr: Mr,
    pub(crate) segment: Segment,
}

/// Everything needed to send one call and take its reply.
#[derive(Debug)]
pub(crate) struct CallPlan<Mr> {
    pub(crate) header: Header,
    /// The Send's gather list: index 0 is left for the header, then the
    /// Payload pieces (none for a Long call).
    pub(crate) pieces: Vec<Sge>,
    pub(crate) form: MessageForm,
    /// Read chunk sources (registered for remote read).
    pub(crate) sources: Vec<Mr>,
    /// Write chunks, in Write-list order.
    pub(crate) writes: Vec<Provided<Mr>>,
    /// The Reply chunk.
    pub(crate) reply: Option<Provided<Mr>>,
}

impl<Mr: MemoryRegion> CallPlan<Mr> {
    /// Number of memory registrations the plan holds.
    pub(crate) fn registrations(&self) -> usize {
        self.sources.len() + self.writes.len() + usize::from(self.reply.is_some())
    }
}

/// Connection facts the plan depends on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallParams {
    pub(crate) version: u32,
    pub(crate) xid: u32,
    pub(crate) credits: u32,
    /// The largest message we may Send.
    pub(crate) send_threshold: u32,
    /// The largest message we can receive.
    pub(crate) recv_threshold: u32,
    pub(crate) max_message: u32,
    /// The peer's chunk-list limits, when it advertised them.
    pub(crate) peer_limits: Option<rpcrdma_wire::Limits>,
    /// The largest message the peer accepts through chunks, when known.
    pub(crate) peer_max_message: Option<u32>,
}

/// Registrations made so far, released if planning fails.
struct Regs<'p, P: ProtectionDomain> {
    pd: &'p P,
    /// Where free sink buffers to reuse are kept.
    budget: &'p MemoryBudget,
    /// Sink buffers allocated (and their octets) and reused.
    allocated: u64,
    allocated_bytes: u64,
    reused: u64,
    sources: Vec<P::Mr>,
    writes: Vec<Provided<P::Mr>>,
    reply: Option<Provided<P::Mr>>,
}

impl<P: ProtectionDomain> Regs<'_, P> {
    fn source(&mut self, data: Bytes) -> Result<Segment, CallError> {
        let len =
            u32::try_from(data.len()).map_err(|_| CallError::TooLarge(SizeFault::ChunkOver4GiB))?;
        let mr = self
            .pd
            .register_bytes(data, Access::REMOTE_READ)
            .map_err(CallError::Register)?;
        let seg = Segment {
            handle: mr.rkey(),
            length: len,
            offset: mr.addr(),
        };
        self.sources.push(mr);
        Ok(seg)
    }

    fn sink(&mut self, len: u32) -> Result<Provided<P::Mr>, CallError> {
        // A pooled buffer is taken whole (it may be longer than the chunk;
        // only `len` octets are advertised) and leaves the budget: our own
        // calls' chunks are ours to size, not the peer's (spec note E21).
        let buf = match self.budget.take_pooled(len as usize) {
            Some(b) => {
                self.budget.release(b.len() as u64);
                self.reused += 1;
                b
            }
            None => {
                self.allocated += 1;
                self.allocated_bytes += u64::from(len);
                crate::pool::shared_zeroed(len as usize)
            }
        };
        // SCRATCH: only the prefix the reply says was written is read
        // (`conn/requester.rs`, `take_prefix`), so software iWARP may place the
        // responder's Writes several FPDUs per socket read.
        let mr = self
            .pd
            .register_mut(
                buf,
                Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::SCRATCH,
            )
            .map_err(CallError::Register)?;
        let segment = Segment {
            handle: mr.rkey(),
            length: len,
            offset: mr.addr(),
        };
        Ok(Provided { mr, segment })
    }

    fn release(self) {
        for mr in self.sources {
            let _ = mr.deregister();
        }
        for p in self.writes.into_iter().chain(self.reply) {
            let _ = p.mr.deregister();
        }
    }
}

/// Length of a reply header that echoes `writes` (what the responder sends).
fn reply_header_len(version: u32, writes: &[WriteChunk], reply: Option<&WriteChunk>) -> usize {
    hdr::chunked_len(version, 0, writes, reply)
}

/// Plans one call: registers its chunks and builds its header.
/// Sink buffers a plan allocated and reused (for the stats).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SinkCounts {
    pub(crate) allocated: u64,
    pub(crate) allocated_bytes: u64,
    pub(crate) reused: u64,
}

pub(crate) fn plan_call<P: ProtectionDomain>(
    pd: &P,
    budget: &MemoryBudget,
    payload: Payload,
    hints: &ReplyHints,
    p: &CallParams,
) -> (Result<CallPlan<P::Mr>, CallError>, SinkCounts) {
    // The common call first: its largest reply fits inline (so it gets
    // neither Write chunks nor a Reply chunk, see `plan_inner`) and so does
    // the call itself. What `plan_inner` decides for it, without building
    // chunk lists, and the payload moved into the gather list.
    let plain_len = reply_header_len(p.version, &[], None);
    let max_reply = hints.max_reply.unwrap_or(p.max_message) as usize;
    if plain_len + max_reply <= p.recv_threshold as usize
        && plain_len + payload.stream_len() <= p.send_threshold as usize
    {
        let chunks = ChunkLists::default();
        let plan = CallPlan {
            header: hdr::chunked(p.version, p.xid, p.credits, Direction::Call, chunks, false),
            pieces: inline_sges(payload),
            form: MessageForm::Short,
            sources: Vec::new(),
            writes: Vec::new(),
            reply: None,
        };
        return (Ok(plan), SinkCounts::default());
    }
    let mut regs = Regs {
        pd,
        budget,
        allocated: 0,
        allocated_bytes: 0,
        reused: 0,
        sources: Vec::new(),
        writes: Vec::new(),
        reply: None,
    };
    let r = plan_inner(&mut regs, &payload, hints, p);
    let counts = SinkCounts {
        allocated: regs.allocated,
        allocated_bytes: regs.allocated_bytes,
        reused: regs.reused,
    };
    match r {
        Ok((header, pieces, form)) => (
            Ok(CallPlan {
                header,
                pieces,
                form,
                sources: regs.sources,
                writes: regs.writes,
                reply: regs.reply,
            }),
            counts,
        ),
        Err(e) => {
            regs.release();
            (Err(e), counts)
        }
    }
}

fn plan_inner<P: ProtectionDomain>(
    regs: &mut Regs<'_, P>,
    payload: &Payload,
    hints: &ReplyHints,
    p: &CallParams,
) -> Result<(Header, Vec<Sge>, MessageForm), CallError> {
    let recv = p.recv_threshold as usize;
    let send = p.send_threshold as usize;
    let max_reads = p
        .peer_limits
        .map_or(usize::MAX, |l| l.max_read_segments as usize);
    let max_writes = p
        .peer_limits
        .map_or(usize::MAX, |l| l.max_write_chunks as usize);

    // Reply resources first: they go in every form of the call. The
    // largest reply we may get is the Upper Layer's maximum, or, when it
    // states none, the largest message this connection carries (§5.3.3;
    // spec note E16).
    let stated = hints.max_reply.map(|m| m as usize);
    let max_reply = stated.unwrap_or(p.max_message as usize);
    let want_writes = hints.reduce
        && !hints.ddp_results.is_empty()
        && hints.ddp_results.len() <= max_writes
        && reply_header_len(p.version, &[], None) + max_reply > recv;
    if want_writes {
        for &max in &hints.ddp_results {
            if max > p.max_message {
                return Err(CallError::OverLimit {
                    what: "a DDP-eligible result's Write chunk",
                    size: u64::from(max),
                    limit: u64::from(p.max_message),
                    setting: MAX_MESSAGE,
                });
            }
            //= rfc5666bis-04#section-4.4.6
            //# A requester does not know the actual length of the result data
            //# item to be returned, thus it MUST register a Write chunk long
            //# enough to accommodate the maximum possible size of the
            //# returned data item.
            //= rfc5666bis-04#section-4.4.6.1
            //# A requester SHOULD NOT provide extra length in a Write chunk
            //# to accommodate XDR pad bytes.
            let w = regs.sink(max)?;
            regs.writes.push(w);
        }
    }
    let write_list: Vec<WriteChunk> = regs
        .writes
        .iter()
        .map(|w| WriteChunk::new(vec![w.segment]))
        .collect();
    // A Reply chunk whenever the largest reply might not fit inline. It is
    // compared unreduced, Write chunks or not: the largest reply may come
    // from a branch of the results that has no DDP-eligible item, which
    // then travels whole (spec note E1) -- unless the Upper Layer states the
    // largest reply with its DDP items reduced (spec note N13).
    let largest = match hints.max_reply_reduced {
        Some(r) if want_writes => r as usize,
        _ => max_reply,
    };
    //= rfc5666bis-04#section-5.3.3
    //# A requester MUST provide a Reply chunk whenever the maximum possible
    //# size of the reply is larger than its own inline threshold.
    //= rfc5666bis-04#section-5.3.3
    //# The Reply chunk MUST be large enough to contain a Payload stream (RPC
    //# message) of this maximum size.
    if reply_header_len(p.version, &write_list, None) + largest > recv {
        let len = match stated {
            Some(m) => u32::try_from(round_up(m))
                .ok()
                .filter(|&l| l <= p.max_message)
                .ok_or(CallError::OverLimit {
                    what: "the largest reply (the Upper Layer's maximum)",
                    size: round_up(m) as u64,
                    limit: u64::from(p.max_message),
                    setting: MAX_MESSAGE,
                })?,
            None => p.max_message,
        };
        regs.reply = Some(regs.sink(len)?);
    }
    let reply_chunk = regs
        .reply
        .as_ref()
        .map(|r| WriteChunk::new(vec![r.segment]));

    // The header is built once, by the form that fits (its chunk lists
    // move into it); the forms are compared by their lengths.
    let header_len =
        |reads: usize| hdr::chunked_len(p.version, reads, &write_list, reply_chunk.as_ref());
    let header = |reads: Vec<ReadSegment>,
                  writes: Vec<WriteChunk>,
                  reply: Option<WriteChunk>,
                  nomsg: bool| {
        hdr::chunked(
            p.version,
            p.xid,
            p.credits,
            Direction::Call,
            ChunkLists {
                reads,
                writes,
                reply,
            },
            nomsg,
        )
    };

    //= rfc5666bis-04#section-5.2.4
    //# However, the total length of the gathered send buffers MUST NOT exceed
    //# the peer receiver's inline threshold.
    // Short.
    if header_len(0) + payload.stream_len() <= send {
        let (pieces, _) = stream_sges(payload, 0);
        let plain = header(Vec::new(), write_list, reply_chunk, false);
        return Ok((plain, pieces, MessageForm::Short));
    }

    if payload.stream_len() > p.max_message as usize {
        return Err(CallError::OverLimit {
            what: "the call's RPC message",
            size: payload.stream_len() as u64,
            limit: u64::from(p.max_message),
            setting: MAX_MESSAGE,
        });
    }
    if p.peer_max_message
        .is_some_and(|m| payload.stream_len() > m as usize)
    {
        return Err(CallError::TooLarge(SizeFault::PeerMaxMessage));
    }
    //= rfc5666bis-04#section-4.4.2
    //# All other XDR data items MUST NOT be reduced.
    //= rfc5666bis-04#section-8.1
    //# Senders MUST NOT reduce data items that are not DDP-eligible.
    //= rfc5666bis-04#section-4.5.3
    //# DDP-eligible data items MAY be removed from these special chunks and
    //# conveyed via normal chunks, but non-eligible data items MUST NOT
    //# appear in normal chunks.
    //= rfc5666bis-04#section-10.2.2.3
    //# Therefore a sender MUST NOT reduce a Payload stream when RPCSEC_GSS
    //# integrity or encryption services are in use.
    let items = if hints.reduce && payload.has_items() {
        item_positions(payload)
    } else {
        Vec::new()
    };
    // Within the peer's Read segment limit: Chunked needs one segment per
    // item, a reduced Long call one more.
    let reduce = !items.is_empty() && items.len() <= max_reads;
    let reduce_long = !items.is_empty() && items.len() < max_reads;

    //= rfc5666bis-04#section-4.5.2
    //# If DDP-eligible data items are present in a Payload stream, a sender
    //# MAY reduce the Payload stream to enable the use of RDMA Read or Write
    //# operations to move the reduced data items.
    // Chunked: every DDP item becomes a Read chunk at its position.
    let mut item_reads = Vec::new();
    if reduce {
        for (position, data) in items {
            //= rfc5666bis-04#section-4.4.5.1
            //# If this sum is not a multiple of four, the requester MAY
            //# choose to send a Read chunk without any XDR padding.
            //= rfc5666bis-04#section-4.4.4.1
            //# Any byte count left in the Payload stream MUST match the sum
            //# of the lengths of the segments making up the chunk.
            let target = regs.source(data)?;
            item_reads.push(ReadSegment { position, target });
        }
        let inline_len = payload.inline().len();
        if header_len(item_reads.len()) + inline_len <= send {
            let (pieces, _) = stream_sges(payload, usize::MAX);
            let hdr = header(item_reads, write_list, reply_chunk, false);
            return Ok((hdr, pieces, MessageForm::Chunked));
        }
    }

    //= rfc5666bis-04#section-4.5.3
    //# If there are no DDP-eligible data items in the Payload stream, or the
    //# Payload stream is still too large after it has been reduced, the RDMA
    //# transport MUST use RDMA Read or Write operations to convey the Payload
    //# stream itself.
    //= rfc5666bis-04#section-4.5.3
    //# Because these special chunks contain a whole RPC message, any XDR data
    //# item MAY appear in one of these special chunks without regard to its
    //# DDP-eligibility.
    //= rfc5666bis-04#section-8.1
    //# Such data items MAY, however, be moved as part of a Position Zero Read
    //# Chunk or a Reply chunk.
    // Long: the (reduced) stream in a Position-Zero Read chunk.
    if !reduce_long {
        // Registered for a Chunked attempt, but one segment too many for
        // the peer alongside the Position-Zero chunk: send unreduced.
        item_reads.clear();
        for mr in regs.sources.drain(..) {
            let _ = mr.deregister();
        }
    }
    let stream = if reduce_long {
        payload.inline().clone()
    } else {
        concat(&stream_pieces(payload, 0).0)
    };
    let pz = regs.source(stream)?;
    let mut reads = vec![ReadSegment {
        //= rfc5666bis-04#section-4.5.3
        //# Every segment in this Read chunk MUST contain zero in its Position
        //# field.
        position: 0,
        target: pz,
    }];
    reads.extend(item_reads);
    if header_len(reads.len()) > send {
        return Err(CallError::TooLarge(SizeFault::HeaderOverInline));
    }
    let hdr = header(reads, write_list, reply_chunk, true);
    Ok((hdr, Vec::new(), MessageForm::Long))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Fabric;

    /// `plan_call` plans a call whose largest reply and itself fit inline
    /// at once; the general planner (`plan_inner`) must decide the same,
    /// for every input.
    #[test]
    fn the_short_fast_path_plans_what_the_general_path_plans() {
        let fabric = Fabric::new(1);
        let pd = fabric.pd(0);
        let budget = MemoryBudget::new(1 << 30);
        let mut fast_paths = 0;
        for version in [1, 2] {
            for len in [0usize, 4, 40, 960, 995, 996, 997, 1000, 4000, 4064, 4065] {
                let payload = Payload::inline_only(Bytes::from(vec![1u8; len]));
                for max_reply in [None, Some(100), Some(992), Some(996), Some(997), Some(5000)] {
                    for ddp_results in [vec![], vec![4096]] {
                        for (send, recv) in [(1024, 1024), (4096, 4096), (4096, 1024)] {
                            let hints = ReplyHints {
                                ddp_results: ddp_results.clone(),
                                max_reply,
                                reduce: true,
                                max_reply_reduced: None,
                            };
                            let p = CallParams {
                                version,
                                xid: 3,
                                credits: 8,
                                send_threshold: send,
                                recv_threshold: recv,
                                max_message: 1 << 20,
                                peer_limits: None,
                                peer_max_message: None,
                            };
                            let (planned, _) = plan_call(&pd, &budget, payload.clone(), &hints, &p);
                            let mut regs = Regs {
                                pd: &pd,
                                budget: &budget,
                                allocated: 0,
                                allocated_bytes: 0,
                                reused: 0,
                                sources: Vec::new(),
                                writes: Vec::new(),
                                reply: None,
                            };
                            let general = plan_inner(&mut regs, &payload, &hints, &p);
                            let general_regs = regs.sources.len()
                                + regs.writes.len()
                                + usize::from(regs.reply.is_some());
                            let case = format!("v{version}, {len} octets, {max_reply:?}, {ddp_results:?}, {send}/{recv}");
                            match (planned, general) {
                                (Ok(plan), Ok((header, pieces, form))) => {
                                    assert_eq!(plan.registrations(), general_regs, "{case}");
                                    assert_eq!(plan.form, form, "{case}");
                                    if general_regs == 0 {
                                        // No keys in the headers: the same bytes.
                                        assert_eq!(
                                            (plan.header, plan.pieces),
                                            (header, pieces),
                                            "{case}"
                                        );
                                        fast_paths += usize::from(form == MessageForm::Short);
                                    }
                                    release(plan.sources, plan.writes, plan.reply);
                                }
                                (Err(a), Err(b)) => assert_eq!(a, b, "{case}"),
                                (a, b) => {
                                    panic!("{case}: {:?} / {:?}", a.map(|p| p.form), b.map(|g| g.2))
                                }
                            }
                            release(regs.sources, regs.writes, regs.reply);
                        }
                    }
                }
            }
        }
        assert!(fast_paths > 50, "only {fast_paths} Short plans compared");
        assert_eq!(fabric.live_regions(0), 0);
    }

    fn release<Mr: MemoryRegion>(
        sources: Vec<Mr>,
        writes: Vec<Provided<Mr>>,
        reply: Option<Provided<Mr>>,
    ) {
        for mr in sources {
            mr.deregister().unwrap();
        }
        for p in writes.into_iter().chain(reply) {
            p.mr.deregister().unwrap();
        }
    }
}
