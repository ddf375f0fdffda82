//! The placement state that the connection holds: where the payload of
//! the segment in progress goes ([`Target`]) and the Send being received
//! into a posted buffer ([`RecvProgress`]). `place.rs` decides and places.

use rpcrdma_verbs::{Access, RecvWr};

use crate::rdmap::Opcode;

/// The Send being received into a posted buffer.

#[derive(Debug)]
pub(super) struct RecvProgress {
    pub(super) wr: RecvWr,
    pub(super) msn: u32,
    pub(super) received: usize,
    pub(super) opcode: Opcode,
    pub(super) invalidate: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Target {
    /// Zero-length segments.
    Discard,
    /// Tagged placement into a region.
    Mr {
        stag: u32,
        addr: u64,
        needed: Access,
        read_response: bool,
    },
    /// The receive buffer of the Send in progress.
    Recv,
    /// A Read Request or Terminate body, into `ctrl`.
    Ctrl,
}
