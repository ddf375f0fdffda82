//! Counters of one connection (observability, and the leak checks of the
//! tests).

/// Counters of one engine. All monotonic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Calls sent, by form.
    pub calls_short: u64,
    /// Calls sent with Read chunks.
    pub calls_chunked: u64,
    /// Calls sent as Long calls (Position-Zero Read chunk).
    pub calls_long: u64,
    /// Replies received to our calls, by form.
    pub replies_short: u64,
    /// Replies received that used Write chunks.
    pub replies_chunked: u64,
    /// Replies received through the Reply chunk.
    pub replies_long: u64,
    /// Calls received from the peer.
    pub calls_received: u64,
    /// Replies we sent.
    pub replies_sent: u64,
    /// RDMA_ERROR messages sent.
    pub rdma_errors_sent: u64,
    /// RDMA_ERROR messages received.
    pub rdma_errors_received: u64,
    /// Received messages rejected (bad header, bad chunks, ...).
    pub bad_messages: u64,
    /// Replies that matched no outstanding call.
    pub unmatched_replies: u64,
    /// Calls that had to wait for a credit.
    pub credit_waits: u64,
    /// Calls the upper layer retired without answering
    /// ([`crate::Engine::retire_call`]).
    pub calls_retired: u64,
    /// Answers not sent because our send queue was backed up: the
    /// `SYSTEM_ERR` replies to calls beyond our grant (RFC 8166 §4.3.1
    /// allows them, it does not require them). Owed answers (`RDMA_ERROR`)
    /// are never dropped (spec note E27).
    pub answers_dropped: u64,
    /// Sends posted unsignaled: nobody waits for their completion, so the
    /// provider reports one only if they fail (a send queue completes in
    /// order: a later signaled work request's completion covers them).
    pub sends_unsignaled: u64,
    /// Calls the peer sent beyond our grant.
    pub credit_overruns: u64,
    /// Memory registrations made.
    pub registrations: u64,
    /// Memory registrations released.
    pub deregistrations: u64,
    /// Registrations the peer invalidated with Send With Invalidate.
    pub remote_invalidations: u64,
    /// RDMA Read operations posted.
    pub rdma_reads: u64,
    /// RDMA Write operations posted.
    pub rdma_writes: u64,
    /// Octets of the RDMA Reads posted (Read chunks pulled from the peer).
    pub rdma_read_bytes: u64,
    /// Octets of the RDMA Writes posted (Write and Reply chunks filled).
    pub rdma_write_bytes: u64,
    /// Octets sent inline: every Send (transport header and inline part).
    pub inline_sent_bytes: u64,
    /// Octets received inline: every receive (transport header and inline
    /// part).
    pub inline_received_bytes: u64,
    /// Calls the upper layer abandoned before their reply.
    pub released_early: u64,
    /// Receive buffers allocated.
    pub recv_buffers_allocated: u64,
    /// Receive buffers posted again after their previous message was
    /// released by every holder.
    pub recv_buffers_reused: u64,
    /// Sink buffers (RDMA Read sinks, Write and Reply chunks) allocated.
    pub sink_buffers_allocated: u64,
    /// Octets of sink buffers allocated (the sum over
    /// `sink_buffers_allocated`).
    pub sink_bytes_allocated: u64,
    /// Sink buffers reused after the upper layer dropped the data they
    /// carried.
    pub sink_buffers_reused: u64,
    /// Received calls that had to wait for memory before their Read
    /// chunks were pulled.
    pub calls_waited_for_memory: u64,
    /// Received calls that waited because the Read chunk data of earlier
    /// calls, still being pulled, filled the read window
    /// ([`crate::EngineConfig::read_window`]), not for lack of memory.
    pub calls_waited_for_window: u64,
    /// Received calls refused because their Read chunks and largest
    /// reply (Write and Reply chunks) could never fit the memory budget.
    pub calls_refused_for_memory: u64,
    /// Received calls refused (answered `SYSTEM_ERR`) because their Read
    /// chunks hold more than [`crate::EngineConfig::max_message`].
    pub calls_refused_too_large: u64,
    /// Replies answered `SYSTEM_ERR` instead because their RDMA-written
    /// data exceeded what their call reserved (only a reply larger than
    /// `max_message` can).
    pub replies_refused_for_memory: u64,
    /// `RDMA2_OPTIONAL` messages sent (offers and answers).
    pub options_sent: u64,
    /// `RDMA2_OPTIONAL` messages received of a supported type (others are
    /// answered by the decoder and counted in `bad_messages`).
    pub options_received: u64,
}

/// Adds each counter of `rhs` to `self` (the counters of several
/// connections).
impl std::ops::AddAssign for Stats {
    fn add_assign(&mut self, rhs: Self) {
        let Stats {
            calls_short,
            calls_chunked,
            calls_long,
            replies_short,
            replies_chunked,
            replies_long,
            calls_received,
            replies_sent,
            rdma_errors_sent,
            rdma_errors_received,
            bad_messages,
            unmatched_replies,
            credit_waits,
            calls_retired,
            answers_dropped,
            sends_unsignaled,
            credit_overruns,
            registrations,
            deregistrations,
            remote_invalidations,
            rdma_reads,
            rdma_writes,
            rdma_read_bytes,
            rdma_write_bytes,
            inline_sent_bytes,
            inline_received_bytes,
            released_early,
            recv_buffers_allocated,
            recv_buffers_reused,
            sink_buffers_allocated,
            sink_bytes_allocated,
            sink_buffers_reused,
            calls_waited_for_memory,
            calls_waited_for_window,
            calls_refused_for_memory,
            calls_refused_too_large,
            replies_refused_for_memory,
            options_sent,
            options_received,
        } = rhs;
        self.calls_short += calls_short;
        self.calls_chunked += calls_chunked;
        self.calls_long += calls_long;
        self.replies_short += replies_short;
        self.replies_chunked += replies_chunked;
        self.replies_long += replies_long;
        self.calls_received += calls_received;
        self.replies_sent += replies_sent;
        self.rdma_errors_sent += rdma_errors_sent;
        self.rdma_errors_received += rdma_errors_received;
        self.bad_messages += bad_messages;
        self.unmatched_replies += unmatched_replies;
        self.credit_waits += credit_waits;
        self.calls_retired += calls_retired;
        self.answers_dropped += answers_dropped;
        self.sends_unsignaled += sends_unsignaled;
        self.credit_overruns += credit_overruns;
        self.registrations += registrations;
        self.deregistrations += deregistrations;
        self.remote_invalidations += remote_invalidations;
        self.rdma_reads += rdma_reads;
        self.rdma_writes += rdma_writes;
        self.rdma_read_bytes += rdma_read_bytes;
        self.rdma_write_bytes += rdma_write_bytes;
        self.inline_sent_bytes += inline_sent_bytes;
        self.inline_received_bytes += inline_received_bytes;
        self.released_early += released_early;
        self.recv_buffers_allocated += recv_buffers_allocated;
        self.recv_buffers_reused += recv_buffers_reused;
        self.sink_buffers_allocated += sink_buffers_allocated;
        self.sink_bytes_allocated += sink_bytes_allocated;
        self.sink_buffers_reused += sink_buffers_reused;
        self.calls_waited_for_memory += calls_waited_for_memory;
        self.calls_waited_for_window += calls_waited_for_window;
        self.calls_refused_for_memory += calls_refused_for_memory;
        self.calls_refused_too_large += calls_refused_too_large;
        self.replies_refused_for_memory += replies_refused_for_memory;
        self.options_sent += options_sent;
        self.options_received += options_received;
    }
}

impl Stats {
    /// Registrations not yet released.
    pub fn live_registrations(&self) -> u64 {
        self.registrations - self.deregistrations
    }
}
