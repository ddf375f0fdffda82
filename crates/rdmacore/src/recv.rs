//! Matching the device's receives to the caller's (sans-IO).
//!
//! The verbs interface hands the provider owned receive buffers
//! ([`RecvWr`]); a device can only receive into registered memory. So the
//! provider keeps its own registered receive slots, posted to the device
//! from the moment the queue pair exists (before the connection is
//! established, so the peer's first Send can never find an empty receive
//! queue: no RNR NAK on InfiniBand/RoCE, no "no buffer" Terminate on
//! iWARP), and copies each message into the caller's next posted buffer.
//! A message that arrives before the caller posted a buffer waits in its
//! slot (at most the receive depth of them: the device has no more slots).
//!
//! Completions come out in arrival order, whichever of the two (message,
//! caller's buffer) came second.

use std::collections::VecDeque;

use rpcrdma_verbs::{PostError, RecvWr, WcOpcode, WcStatus, WorkCompletion};

/// A device receive completion on one of the provider's slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrived {
    /// The slot.
    pub slot: usize,
    /// The status.
    pub status: WcStatus,
    /// Octets received.
    pub byte_len: u32,
    /// Key invalidated by a Send with Invalidate.
    pub invalidated: Option<u32>,
}

/// One receive completed for the caller.
#[derive(Debug)]
pub struct Matched {
    /// The completion to report.
    pub wc: WorkCompletion,
    /// The slot whose message was copied, to post to the device again.
    pub repost: Option<usize>,
    /// The message did not fit the caller's buffer: the connection must
    /// end (as on iWARP, where it is a Terminate).
    pub fatal: bool,
}

/// The matcher of one queue pair's receive queue.
#[derive(Debug)]
pub struct RecvMatcher {
    depth: usize,
    user: VecDeque<RecvWr>,
    held: VecDeque<Arrived>,
    dead: bool,
}

impl RecvMatcher {
    /// A matcher accepting up to `depth` outstanding caller receives.
    pub fn new(depth: usize) -> Self {
        RecvMatcher {
            depth: depth.max(1),
            user: VecDeque::new(),
            held: VecDeque::new(),
            dead: false,
        }
    }

    /// Receives posted by the caller and not yet completed.
    pub fn outstanding(&self) -> usize {
        self.user.len()
    }

    /// Messages waiting for a caller's buffer.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// The largest buffer the caller has posted so far is at least this.
    pub fn largest_posted(&self) -> usize {
        self.user.iter().map(|w| w.buf.len()).max().unwrap_or(0)
    }

    /// The caller posts a receive. If a message is waiting, it completes
    /// at once (`data(slot)` gives the slot's octets).
    pub fn post<'a>(
        &mut self,
        wr: RecvWr,
        data: impl Fn(usize) -> &'a [u8],
    ) -> Result<Option<Matched>, PostError> {
        if let Some(a) = self.held.pop_front() {
            return Ok(Some(self.fill(wr, a, &data)));
        }
        if self.dead {
            return Err(PostError::NotConnected { state: "closed" });
        }
        if self.user.len() >= self.depth {
            return Err(PostError::QueueFull {
                queue: "receive",
                depth: self.depth as u32,
            });
        }
        self.user.push_back(wr);
        Ok(None)
    }

    /// A device receive completed.
    pub fn arrived<'a>(&mut self, a: Arrived, data: impl Fn(usize) -> &'a [u8]) -> Vec<Matched> {
        if a.status != WcStatus::Success {
            // The receive queue is done: the first caller's receive takes
            // the status, the others are flushed.
            let first = !self.dead;
            self.dead = true;
            let mut out = self.flush();
            if let (true, Some(m)) = (first, out.first_mut()) {
                m.wc.status = a.status;
            }
            return out;
        }
        if self.dead {
            return Vec::new();
        }
        match self.user.pop_front() {
            Some(wr) => vec![self.fill(wr, a, &data)],
            None => {
                self.held.push_back(a);
                Vec::new()
            }
        }
    }

    /// The connection ended: every caller's receive is flushed; later
    /// posts are refused (once the waiting messages are taken).
    pub fn flush(&mut self) -> Vec<Matched> {
        self.dead = true;
        self.user
            .drain(..)
            .map(|wr| Matched {
                wc: WorkCompletion {
                    wr_id: wr.wr_id,
                    opcode: WcOpcode::Recv,
                    status: WcStatus::WrFlush,
                    byte_len: 0,
                    invalidated_rkey: None,
                    solicited: false,
                    buf: Some(wr.buf),
                },
                repost: None,
                fatal: false,
            })
            .collect()
    }

    fn fill<'a>(
        &mut self,
        mut wr: RecvWr,
        a: Arrived,
        data: &impl Fn(usize) -> &'a [u8],
    ) -> Matched {
        let msg = data(a.slot);
        let n = (a.byte_len as usize).min(msg.len());
        if n > wr.buf.len() {
            self.dead = true;
            return Matched {
                wc: WorkCompletion {
                    wr_id: wr.wr_id,
                    opcode: WcOpcode::Recv,
                    status: WcStatus::LocalLength,
                    byte_len: a.byte_len,
                    invalidated_rkey: None,
                    solicited: false,
                    buf: Some(wr.buf),
                },
                repost: None,
                fatal: true,
            };
        }
        wr.buf[..n].copy_from_slice(&msg[..n]);
        Matched {
            wc: WorkCompletion {
                wr_id: wr.wr_id,
                opcode: WcOpcode::Recv,
                status: WcStatus::Success,
                byte_len: n as u32,
                invalidated_rkey: a.invalidated,
                solicited: false,
                buf: Some(wr.buf),
            },
            repost: Some(a.slot),
            fatal: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;

    use super::*;

    fn slots() -> Vec<Vec<u8>> {
        (0..4u8).map(|i| vec![b'a' + i; 64]).collect()
    }

    fn ok(slot: usize, len: u32) -> Arrived {
        Arrived {
            slot,
            status: WcStatus::Success,
            byte_len: len,
            invalidated: None,
        }
    }

    fn wr(id: u64, len: usize) -> RecvWr {
        RecvWr {
            wr_id: id,
            buf: BytesMut::zeroed(len),
        }
    }

    #[test]
    fn caller_first_then_message() {
        let s = slots();
        let mut m = RecvMatcher::new(4);
        assert!(m.post(wr(1, 32), |i| &s[i]).unwrap().is_none());
        assert!(m.post(wr(2, 32), |i| &s[i]).unwrap().is_none());
        let out = m.arrived(ok(3, 5), |i| &s[i]);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].wc.wr_id, 1);
        assert_eq!(out[0].wc.data(), Some(&b"ddddd"[..]));
        assert_eq!(
            out[0].wc.buf.as_ref().unwrap().len(),
            32,
            "posted length kept"
        );
        assert_eq!(out[0].repost, Some(3));
        assert_eq!(m.outstanding(), 1);
    }

    #[test]
    fn message_first_waits_for_the_caller_in_order() {
        let s = slots();
        let mut m = RecvMatcher::new(4);
        assert!(m.arrived(ok(0, 3), |i| &s[i]).is_empty());
        assert!(m.arrived(ok(1, 4), |i| &s[i]).is_empty());
        assert_eq!(m.held(), 2);
        let a = m.post(wr(7, 16), |i| &s[i]).unwrap().unwrap();
        assert_eq!((a.wc.wr_id, a.wc.data()), (7, Some(&b"aaa"[..])));
        let b = m.post(wr(8, 16), |i| &s[i]).unwrap().unwrap();
        assert_eq!((b.wc.wr_id, b.wc.data()), (8, Some(&b"bbbb"[..])));
        assert_eq!(b.repost, Some(1));
        assert_eq!(m.held(), 0);
    }

    #[test]
    fn depth_is_enforced() {
        let s = slots();
        let mut m = RecvMatcher::new(2);
        m.post(wr(1, 8), |i| &s[i]).unwrap();
        m.post(wr(2, 8), |i| &s[i]).unwrap();
        assert!(matches!(
            m.post(wr(3, 8), |i| &s[i]),
            Err(PostError::QueueFull { depth: 2, .. })
        ));
    }

    #[test]
    fn too_long_for_the_callers_buffer_is_fatal() {
        let s = slots();
        let mut m = RecvMatcher::new(2);
        m.post(wr(1, 4), |i| &s[i]).unwrap();
        let out = m.arrived(ok(0, 10), |i| &s[i]);
        assert_eq!(out[0].wc.status, WcStatus::LocalLength);
        assert!(out[0].fatal);
        assert_eq!(out[0].repost, None);
        assert!(matches!(
            m.post(wr(2, 64), |i| &s[i]),
            Err(PostError::NotConnected { .. })
        ));
    }

    #[test]
    fn errors_flush_everything() {
        let s = slots();
        let mut m = RecvMatcher::new(4);
        m.post(wr(1, 8), |i| &s[i]).unwrap();
        m.post(wr(2, 8), |i| &s[i]).unwrap();
        let out = m.arrived(
            Arrived {
                slot: 0,
                status: WcStatus::WrFlush,
                byte_len: 0,
                invalidated: None,
            },
            |i| &s[i],
        );
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|o| o.wc.status == WcStatus::WrFlush));
        assert_eq!((out[0].wc.wr_id, out[1].wc.wr_id), (1, 2));
        // Later device flushes produce nothing more.
        assert!(m
            .arrived(
                Arrived {
                    slot: 1,
                    status: WcStatus::WrFlush,
                    byte_len: 0,
                    invalidated: None
                },
                |i| &s[i]
            )
            .is_empty());
        assert!(m.post(wr(3, 8), |i| &s[i]).is_err());
    }

    #[test]
    fn a_fatal_error_goes_to_the_first_receive() {
        let s = slots();
        let mut m = RecvMatcher::new(4);
        m.post(wr(1, 8), |i| &s[i]).unwrap();
        m.post(wr(2, 8), |i| &s[i]).unwrap();
        let out = m.arrived(
            Arrived {
                slot: 0,
                status: WcStatus::LocalLength,
                byte_len: 0,
                invalidated: None,
            },
            |i| &s[i],
        );
        assert_eq!(out[0].wc.status, WcStatus::LocalLength);
        assert_eq!(out[1].wc.status, WcStatus::WrFlush);
    }

    #[test]
    fn messages_held_before_the_close_are_still_delivered() {
        let s = slots();
        let mut m = RecvMatcher::new(4);
        m.arrived(ok(2, 2), |i| &s[i]);
        assert!(m.flush().is_empty());
        let a = m.post(wr(1, 8), |i| &s[i]).unwrap().unwrap();
        assert_eq!(a.wc.data(), Some(&b"cc"[..]));
        assert!(m.post(wr(2, 8), |i| &s[i]).is_err());
    }

    #[test]
    fn invalidated_key_is_reported() {
        let s = slots();
        let mut m = RecvMatcher::new(1);
        m.post(wr(1, 8), |i| &s[i]).unwrap();
        let out = m.arrived(
            Arrived {
                invalidated: Some(0x1234),
                ..ok(0, 1)
            },
            |i| &s[i],
        );
        assert_eq!(out[0].wc.invalidated_rkey, Some(0x1234));
    }
}
