//! Pulls: an admitted call's Read chunks registered as sinks and read with
//! RDMA Reads within the ORD limit, its Payload stream rebuilt with the
//! round-up the requester left out (RFC 8166 §4.4.5.1), and the call
//! handed up.

use bytes::Bytes;
use rpcrdma_verbs::{Access, MemoryRegion, ProtectionDomain, RemoteAddr, SendWr};
use rpcrdma_xdr::{round_up, Payload};

use super::rpc::{rpc_call_head, RpcHead, GARBAGE_ARGS, SYSTEM_ERR};
use crate::conn::{Engine, InCall, Pull, Wr};
use crate::event::{CallToken, Event};

impl<P: ProtectionDomain> Engine<P> {
    /// Processes an admitted call: hands it up at once, or registers its
    /// Read sinks and queues its RDMA Reads.
    pub(super) fn start_call(&mut self, token: u64) {
        let Some(call) = self.incoming.get_mut(&token) else {
            return;
        };
        let (groups, bufs) = match call.more.as_deref_mut() {
            Some(m) => (std::mem::take(&mut m.groups), std::mem::take(&mut m.bufs)),
            None => (Vec::new(), Vec::new()),
        };
        let xid = call.xid;
        if groups.is_empty() {
            let event = deliver_inline(token, call);
            self.events.push_back(event);
            return;
        }

        let mut reads = Vec::new();
        let mut pulls: Vec<Pull<P::Mr>> = Vec::with_capacity(groups.len());
        for ((position, segs), buf) in groups.into_iter().zip(bufs) {
            let len: usize = segs.iter().map(|s| s.length as usize).sum();
            // The whole buffer is registered (a pooled one may be longer
            // than the chunk; the Reads fill only its first `len` octets).
            let mr = match self.pd.register_mut(buf, Access::LOCAL_WRITE) {
                Ok(mr) => mr,
                Err(e) => {
                    // A resource of ours failed: an RPC-level SYSTEM_ERR,
                    // as for every call we cannot take (spec note E26).
                    tracing::warn!(xid, error = %e, "cannot register a Read sink; answering SYSTEM_ERR");
                    if let Some(mut call) = self.incoming.remove(&token) {
                        let more = call.more();
                        self.reads_ahead = self.reads_ahead.saturating_sub(more.need);
                        for p in pulls {
                            if let Some(mr) = p.mr {
                                self.drop_mr(mr);
                            }
                        }
                        if self.failed.is_none() {
                            self.reply_rpc_error(call, SYSTEM_ERR);
                        }
                    }
                    return;
                }
            };
            self.stats.registrations += 1;
            let mut off = 0usize;
            for s in segs.iter().filter(|s| s.length > 0) {
                let wr_id = self.wr_id(Wr::Read { token });
                reads.push(SendWr::read(
                    wr_id,
                    mr.sge(off, s.length as usize),
                    RemoteAddr {
                        rkey: s.handle,
                        addr: s.offset,
                    },
                ));
                off += s.length as usize;
            }
            pulls.push(Pull {
                position,
                len,
                mr: Some(mr),
            });
        }
        let Some(call) = self.incoming.get_mut(&token) else {
            return;
        };
        let more = call.more();
        more.pulls = pulls;
        more.reads_pending = reads.len() as u32;
        if reads.is_empty() {
            self.finish_pull(token);
        } else {
            self.reads.extend(reads);
            self.pump_reads();
        }
    }

    /// Posts queued RDMA Reads within the outbound read limit (ORD).
    pub(crate) fn pump_reads(&mut self) {
        let ord = u32::from(self.caps.ord).max(1);
        while self.reads_busy < ord {
            let Some(wr) = self.reads.pop_front() else {
                break;
            };
            self.reads_busy += 1;
            self.push_sq(wr);
        }
    }

    pub(crate) fn on_read_done(&mut self, token: u64) {
        let Some(call) = self.incoming.get_mut(&token) else {
            return;
        };
        let more = call.more();
        more.reads_pending = more.reads_pending.saturating_sub(1);
        if more.reads_pending == 0 {
            self.finish_pull(token);
            if !self.waiting.is_empty() {
                // Its data is in: the read window has room again.
                self.pump_admission();
            }
        }
    }

    /// Every Read of a call completed: rebuild its Payload stream.
    fn finish_pull(&mut self, token: u64) {
        let Some(call) = self.incoming.get_mut(&token) else {
            return;
        };
        // Pulled: no longer ahead of the calls handed up.
        self.reads_ahead = self.reads_ahead.saturating_sub(call.more().need);
        let pulls = std::mem::take(&mut call.more().pulls);
        let mut chunks = Vec::with_capacity(pulls.len());
        let mut sinks = Vec::with_capacity(pulls.len());
        for p in pulls {
            let whole =
                p.mr.and_then(|mr| self.drop_mr(mr))
                    .map(|b| b.freeze())
                    .unwrap_or_default();
            let data = whole.slice(..p.len.min(whole.len()));
            sinks.push(whole);
            chunks.push((p.position, data));
        }
        // (A sink that could not be invalidated failed the connection,
        // which dropped the call.)
        let Some(call) = self.incoming.get_mut(&token) else {
            return;
        };
        // The buffers stay the call's (and counted) until it is answered.
        call.more().sinks = sinks;
        let inline = match chunks.first() {
            Some((0, _)) => chunks.remove(0).1,
            _ => call.inline.clone(),
        };
        //= rfc5666bis-04#section-4.4.5.1
        //# If the requester provides no actual round-up in a Read chunk, the
        //# responder MUST be prepared to provide appropriate round-up in the
        //# reconstructed call XDR stream The Position field in a read segment
        //# indicates where the containing Read chunk starts in the Payload
        //# stream.
        strip_read_chunk_padding(&inline, &mut chunks);
        let xid = call.xid;
        // The RPC call header: the stream before the first remaining chunk.
        let head_end = chunks
            .first()
            .map_or(inline.len(), |(p, _)| (*p as usize).min(inline.len()));
        let head = rpc_call_head(&inline[..head_end], xid);
        if head != RpcHead::Usable {
            if let Some(call) = self.incoming.remove(&token) {
                self.refuse_unusable(call, head);
            }
            return;
        }
        match Payload::from_read_chunks(inline, chunks) {
            Ok(message) => {
                call.delivered = true;
                let form = call.form;
                self.events.push_back(Event::Call {
                    token: CallToken(token),
                    xid,
                    message,
                    form,
                });
            }
            Err(e) => {
                tracing::debug!(xid, error = %e, "Read chunks do not fit the Payload stream");
                self.stats.bad_messages += 1;
                if let Some(call) = self.incoming.remove(&token) {
                    self.reply_rpc_error(call, GARBAGE_ARGS);
                }
            }
        }
    }
}

/// The event handing up an admitted call without Read chunks, marked
/// delivered: its inline bytes are the whole message (taken: nothing
/// reads them from the call afterwards).
pub(super) fn deliver_inline<Mr>(token: u64, call: &mut InCall<Mr>) -> Event {
    call.delivered = true;
    Event::Call {
        token: CallToken(token),
        xid: call.xid,
        message: Payload::inline_only(std::mem::take(&mut call.inline)),
        form: call.form,
    }
}

/// Removes XDR padding a requester left in its Read chunks (RFC 8166
/// §4.4.5.1: it MAY send a chunk "without any XDR padding", so it may also
/// send one with it): a chunk whose length is a multiple of four, preceded
/// in the stream by a length word `L` with `L` < its length and `L`
/// rounded up equal to it, holds `L` octets of data and its pad. The data
/// an upper layer sees is then exactly the item, as for an unpadded chunk
/// (spec note E18). `chunks` are (Position, data) in Position order,
/// Position-Zero chunk removed; `inline` is the reduced stream they belong
/// in.
fn strip_read_chunk_padding(inline: &Bytes, chunks: &mut [(u32, Bytes)]) {
    let mut placed = 0usize;
    for (position, data) in chunks.iter_mut() {
        let padded = data.len();
        let off = (*position as usize).checked_sub(placed);
        placed = placed.saturating_add(round_up(padded));
        let Some(off) = off.filter(|&o| o >= 4 && o <= inline.len()) else {
            continue;
        };
        let word = u32::from_be_bytes([
            inline[off - 4],
            inline[off - 3],
            inline[off - 2],
            inline[off - 1],
        ]) as usize;
        if padded % 4 == 0 && word < padded && round_up(word) == padded {
            data.truncate(word);
        }
    }
}
