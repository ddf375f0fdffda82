//! Serving the peer's RDMA Read Requests (RFC 5040 §4.4, §4.5): checked
//! against our inbound Read limit (IRD) and the source region's remote
//! read access, answered with a Read Response streamed straight from
//! registered memory.

use bytes::Bytes;
use rpcrdma_verbs::Access;

use super::tx::{push_message, Mark};
use super::{Connection, ProtocolError};
use crate::ddp::{DdpHeader, TAGGED_HEADER_LEN};
use crate::mr::MrTable;
use crate::rdmap::{Opcode, ReadRequest};

impl Connection {
    /// Answers an inbound RDMA Read Request.
    pub(super) fn serve_read(
        &mut self,
        rr: &ReadRequest,
        mrs: &mut MrTable,
    ) -> Result<(), ProtocolError> {
        if self.irq_outstanding >= usize::from(self.ird) {
            return Err(ProtocolError::IrdExceeded(self.ird));
        }
        let data = if rr.size == 0 {
            // Zero-length Read (e.g. an RTR): nothing to check or send.
            Bytes::new()
        } else {
            mrs.source(
                rr.src_stag,
                rr.src_to,
                rr.size as usize,
                Access::REMOTE_READ,
            )
            .map_err(ProtocolError::ReadAccess)?
        };
        let (sink, to) = (rr.sink_stag, rr.sink_to);
        let total = data.len();
        push_message(
            &mut self.tx,
            self.crc,
            self.cfg.max_ulpdu,
            TAGGED_HEADER_LEN,
            &[data],
            total,
            |off, last| {
                DdpHeader::tagged(
                    last,
                    Opcode::READ_RESPONSE,
                    sink,
                    to.wrapping_add(off as u64),
                )
            },
        );
        self.tx.mark(Mark::Irq);
        self.irq_outstanding += 1;
        Ok(())
    }
}
