//! The receive side's state of a TCP connection: the read buffer and
//! deframer, the large record being read into a buffer of its own, and
//! the call waiting for room in the memory budget.

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};

use crate::budget::Held;
use crate::record::Deframer;
use crate::record_pool::{Charged, RecordPool};

/// Most bytes reserved in the receive buffer at once, whatever a fragment
/// header announces: a peer that announces a large record and stalls pins
/// no more than this per connection.
pub(super) const READ_RESERVE_CAP: usize = 1 << 20;

pub(super) struct ReadSide {
    pub(super) buf: BytesMut,
    /// The charge for `buf`'s capacity (a server's connection).
    pub(super) buf_held: Option<Held>,
    pub(super) deframer: Deframer,
    /// A large single-fragment record being read into a buffer of its own
    /// (`record_pool`), with its length.
    pub(super) body: Option<(Charged, usize)>,
    pub(super) pool: RecordPool,
    /// A call received and waiting for room in the memory budget before
    /// it is handed up, with the charge it will take.
    pub(super) waiting: Option<(Bytes, u64)>,
    /// A byte arrived on the connection.
    pub(super) received: bool,
    /// The calls to fail with [`TransportError::SpeaksRdma`] before the
    /// end of the connection is reported: the server closed it without a
    /// byte and answers MPA.
    pub(super) refused: Option<(SocketAddr, Vec<u32>)>,
}

impl ReadSide {
    /// Charges `buf`'s capacity as it is now.
    pub(super) fn sync_buf(&mut self) {
        let cap = self.buf.capacity() as u64;
        if let Some(h) = self.buf_held.as_mut() {
            if h.octets() != cap {
                h.resize(cap);
            }
        }
    }
}
