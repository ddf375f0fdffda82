//! The receive side of a TCP connection: the read buffer and deframer,
//! large records read straight into buffers of their own, and the reads
//! themselves.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use bytes::{BufMut, Bytes, BytesMut};

use super::TcpTransport;
use crate::budget::Held;
use crate::error::{RecordError, TransportError};
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

impl TcpTransport {
    /// Reads the rest of the large record in `rs.body` from the socket
    /// straight into its buffer (never past the record's end, so the
    /// next record's bytes stay in the socket for `rs.buf`), growing the
    /// buffer at most [`READ_RESERVE_CAP`] beyond what has arrived, and
    /// hands it out. Cancel-safe: what was read stays in `rs.body`.
    pub(super) async fn read_body(&self, rs: &mut ReadSide) -> Result<Bytes, TransportError> {
        loop {
            if rs.body.as_ref().is_some_and(|((b, _), len)| b.len() < *len) {
                // No more of it while over budget.
                self.room(0).await?;
            }
            let Some(((body, held), len)) = rs.body.as_mut() else {
                unreachable!("read_body without a record in progress");
            };
            let len = *len;
            if body.len() == len {
                let (body, _) = rs.body.take().unwrap_or_default();
                return Ok(rs.pool.record(body));
            }
            if body.capacity() == body.len() {
                body.reserve_exact((len - body.len()).min(READ_RESERVE_CAP));
                if let Some(h) = held.as_mut() {
                    h.resize(body.capacity() as u64);
                }
            }
            let room = (len - body.len()).min(body.capacity() - body.len());
            if self.read_some(&mut (&mut *body).limit(room)).await? == 0 {
                return Err(RecordError::Truncated {
                    buffered: body.len(),
                }
                .into());
            }
        }
    }

    /// One read from the socket into `into`, waiting for it to become
    /// readable first if it has nothing: the octets read, 0 at the end of
    /// the stream (the connection is then closed). A failed read closes
    /// the connection; a closed one answers `Closed`.
    pub(super) async fn read_some<B: BufMut>(&self, into: &mut B) -> Result<usize, TransportError> {
        loop {
            let notified = self.shared.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.shared.closed.load(Ordering::Acquire) {
                return Err(TransportError::Closed);
            }
            match self.stream.try_read_buf(into) {
                Ok(0) => {
                    self.shared.close();
                    return Ok(0);
                }
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.shared.close();
                    return Err(e.into());
                }
            }
            tokio::select! {
                r = self.stream.readable() => r?,
                _ = notified => return Err(TransportError::Closed),
            }
        }
    }
}
