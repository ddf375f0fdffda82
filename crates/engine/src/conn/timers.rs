//! Timers: the Version Two probe's deadline, the optional offers' and the
//! send-queue stall watch (spec note E22), and the clock readings inputs
//! carry.

use std::time::Instant;

use rpcrdma_verbs::ProtectionDomain;

use super::{Engine, VersionState};
use crate::error::EngineError;

impl<P: ProtectionDomain> Engine<P> {
    /// When [`Engine::handle_timeout`] must next be called.
    #[inline]
    pub fn poll_timeout(&self) -> Option<Instant> {
        // The common case, checked inline: no probe deadline, no optional
        // offer awaited, and no stall watch (it needs RDMA Reads out or
        // memory held; see `stall_watched`).
        if self.deadline.is_none()
            && self.opt_calls.is_empty()
            && self.reads_busy == 0
            && self.mem_used == 0
        {
            return None;
        }
        self.next_deadline()
    }

    /// [`Self::poll_timeout`] when some timer may be armed.
    fn next_deadline(&self) -> Option<Instant> {
        fn earlier(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        }
        let mut at = self.deadline;
        if !self.opt_calls.is_empty() {
            at = earlier(at, self.next_optional_deadline());
        }
        earlier(at, self.stall_deadline())
    }

    /// When the send-queue watch must look next (spec note E22): the end
    /// of the stall timeout counted from the last progress, or, when the
    /// queue went busy without a clock reading, a check to start counting.
    fn stall_deadline(&self) -> Option<Instant> {
        if !self.stall_watched() {
            return None;
        }
        let from = self.stall_since.or(self.last_now)?;
        Some(from + self.cfg.stall_timeout)
    }

    /// Whether the stall watch runs: work is on the send queue while the
    /// connection holds memory for the peer (its calls' Read sinks, reply
    /// data) or RDMA Reads are out. Our own calls' Sends are the RPC
    /// layer's to time out.
    fn stall_watched(&self) -> bool {
        self.failed.is_none()
            && !self.sq_signaled.is_empty()
            && (self.reads_busy > 0 || self.mem_used > 0)
    }

    /// Records the time of an input; starts the stall watch if work is on
    /// the send queue and no time has been recorded for it yet.
    pub(crate) fn note_time(&mut self, now: Instant) {
        self.last_now = Some(now);
        if self.sq_signaled.is_empty() {
            self.stall_since = None;
        } else if self.stall_since.is_none() {
            self.stall_since = Some(now);
        }
    }

    /// Timer expiry. Spurious calls are harmless.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.stall_watched() {
            match self.stall_since {
                Some(t) if now >= t + self.cfg.stall_timeout => {
                    // Nothing on the send queue completed for the whole
                    // timeout: the peer stopped answering our RDMA Reads or
                    // reading its end (spec note E22).
                    tracing::warn!(
                        busy = self.sq_busy,
                        timeout = ?self.cfg.stall_timeout,
                        "send queue stalled; closing the connection"
                    );
                    self.fail(EngineError::Stalled {
                        timeout: self.cfg.stall_timeout,
                    });
                    return;
                }
                Some(_) => {}
                None => self.stall_since = Some(now),
            }
        }
        self.note_time(now);
        if let Some(d) = self.deadline {
            if now >= d {
                self.deadline = None;
                if self.version == VersionState::Probing && self.failed.is_none() {
                    self.fail(EngineError::NegotiationTimeout);
                }
            }
        }
        if self.failed.is_none() && self.optional_timeouts(now) {
            self.pump_calls(now);
        }
    }
}
