//! Memory admission: received calls wait, holding their credit, until the
//! send backlog is small and their Read sinks and reply room fit the
//! connection's limit, the read window and the shared memory budget
//! (spec notes E14, E21).

use bytes::BytesMut;
use rpcrdma_verbs::ProtectionDomain;

use crate::conn::Engine;

impl<P: ProtectionDomain> Engine<P> {
    /// Calls received and not yet admitted (waiting for the send backlog
    /// to drain or for memory).
    pub fn calls_waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Admits waiting calls again: the driver calls this when memory was
    /// released elsewhere in a shared budget (see [`Engine::memory_wait`]).
    /// Extra calls are harmless.
    pub fn retry_admission(&mut self) {
        if self.failed.is_none() {
            self.pump_admission();
        }
    }

    /// Admits waiting calls, oldest first, while the send queue's backlog
    /// is small, this connection holds no more than its memory limit and
    /// the oldest call's Read sinks and reply room fit the budget: the
    /// responder's
    /// back-pressure (its receives stay posted for every credit it granted,
    /// E14; memory, E21).
    pub(crate) fn pump_admission(&mut self) {
        while let Some(&token) = self.waiting.front() {
            if !self.admission_open() {
                return;
            }
            if !self.incoming.contains_key(&token) {
                self.waiting.pop_front();
                continue;
            }
            if !self.reserve_memory(token) {
                return;
            }
            self.waiting.pop_front();
            self.mem_blocked = None;
            self.start_call(token);
        }
    }

    /// Whether calls may be admitted now (the send backlog is small and
    /// this connection within its memory limit).
    pub(super) fn admission_open(&self) -> bool {
        self.failed.is_none() && !self.overloaded() && self.mem_used <= self.cfg.max_memory
    }

    /// Finds the memory for a waiting call's Read sinks (idle pooled
    /// buffers where they fit, fresh ones otherwise) and reserves its
    /// reply room, all within the connection's limit and the shared
    /// budget. Returns whether it did; if not, nothing is held and the
    /// call keeps waiting. A call with neither (no Read chunks, a reply
    /// that can only go inline) takes no lock.
    fn reserve_memory(&mut self, token: u64) -> bool {
        let Some(call) = self.incoming.get(&token) else {
            return false;
        };
        let Some(more) = call.more.as_deref().filter(|m| m.need > 0 || m.room > 0) else {
            return true;
        };
        let room = more.room;
        let lens: Vec<usize> = more
            .groups
            .iter()
            .map(|(_, segs)| segs.iter().map(|s| s.length as usize).sum())
            .collect();
        let mut bufs: Vec<Option<BytesMut>> = lens
            .iter()
            .map(|&len| self.budget.take_pooled(len))
            .collect();
        let mut pooled: u64 = bufs.iter().flatten().map(|b| b.len() as u64).sum();
        let mut fresh: u64 = lens
            .iter()
            .zip(&bufs)
            .filter(|(_, b)| b.is_none())
            .map(|(&l, _)| l as u64)
            .sum();
        if pooled > 0 && self.mem_used + pooled + fresh + room > self.cfg.max_memory {
            // Pooled buffers are charged whole and may be larger than
            // their chunks: if that is what does not fit, take fresh
            // ones of the chunks' sizes (else a call that fits the limit
            // could wait for ever on an idle connection).
            for b in bufs.iter_mut().filter_map(Option::take) {
                self.budget.put_back(b);
            }
            pooled = 0;
            fresh = lens.iter().map(|&l| l as u64).sum();
        }
        let need = more.need;
        // The read window: Read data pulled ahead of the calls handed up
        // (a call without Read chunks is never held by it).
        let in_window =
            need == 0 || self.reads_ahead == 0 || self.reads_ahead + need <= self.cfg.read_window;
        let conn_ok = self.mem_used + pooled + fresh + room <= self.cfg.max_memory && in_window;
        // A connection that holds memory already leaves the budget's
        // headroom to those that hold none (spec note E21).
        let leave = if self.mem_used > 0 {
            self.budget.headroom()
        } else {
            0
        };
        let shared_ok =
            conn_ok && (fresh + room == 0 || self.budget.try_reserve(fresh + room, leave));
        if !shared_ok {
            for b in bufs.into_iter().flatten() {
                self.budget.put_back(b);
            }
            // Waiting for another connection to release memory, or for
            // this one's own calls (which wake it themselves).
            self.mem_blocked = conn_ok.then(|| self.budget.epoch());
            if let Some(call) = self.incoming.get_mut(&token) {
                let more = call.more();
                if !more.waited {
                    more.waited = true;
                    if in_window {
                        self.stats.calls_waited_for_memory += 1;
                    } else {
                        self.stats.calls_waited_for_window += 1;
                    }
                }
            }
            return false;
        }
        self.mem_used += pooled + fresh + room;
        self.reads_ahead += need;
        for (b, &len) in bufs.iter_mut().zip(&lens) {
            if b.is_some() {
                self.stats.sink_buffers_reused += 1;
            } else {
                self.stats.sink_buffers_allocated += 1;
                self.stats.sink_bytes_allocated += len as u64;
                *b = Some(crate::pool::shared_zeroed(len));
            }
        }
        if let Some(call) = self.incoming.get_mut(&token) {
            let more = call.more();
            more.charge += pooled + fresh + room;
            more.room_held = room;
            more.bufs = bufs.into_iter().flatten().collect();
        }
        true
    }
}
