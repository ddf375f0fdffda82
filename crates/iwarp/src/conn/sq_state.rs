//! The send queue's entries that the connection holds: a posted work
//! request awaiting completion ([`SqEntry`]) and an outstanding RDMA Read
//! of ours awaiting its Response ([`OrqEntry`]). `sq.rs` drives them.

use rpcrdma_verbs::{WcOpcode, WcStatus};

#[derive(Debug)]
pub(super) struct SqEntry {
    pub(super) seq: u64,
    pub(super) wr_id: u64,
    pub(super) opcode: WcOpcode,
    pub(super) signaled: bool,
    pub(super) result: Option<(WcStatus, u32)>,
}

#[derive(Debug)]
pub(super) struct OrqEntry {
    /// The send-queue entry, or `None` for our RTR zero-length Read.
    pub(super) seq: Option<u64>,
    pub(super) sink_stag: u32,
    pub(super) sink_to: u64,
    pub(super) len: u64,
    pub(super) received: u64,
}
