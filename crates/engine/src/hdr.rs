//! Building transport headers of the connection's version.

use rpcrdma_wire::prefix::PREFIX_LEN;
use rpcrdma_wire::v2::Direction;
use rpcrdma_wire::{ChunkLists, Header, V1Body, V1Header, V2Body, V2Header, WriteChunk};

/// The encoded length of what [`chunked`] builds in `version` with
/// `reads` Read segments and these Write and Reply chunks, without
/// building it.
pub(crate) fn chunked_len(
    version: u32,
    reads: usize,
    writes: &[WriteChunk],
    reply: Option<&WriteChunk>,
) -> usize {
    // Version Two has rdma_direction before the lists.
    let direction = if version == 1 { 0 } else { 4 };
    PREFIX_LEN + direction + ChunkLists::encoded_len_of(reads, writes, reply)
}

/// `RDMA_MSG` (`nomsg == false`) or `RDMA_NOMSG` in `version`.
//= rfc5666bis-04#section-7.3.4
//# The ONC RPC Call header MUST follow immediately, starting with the same
//# XID value that is present in the RPC-over-RDMA header.
//= rfc5666bis-04#section-7.3.5
//# The ONC RPC Reply header MUST follow immediately, starting with the same
//# XID value that is present in the RPC-over-RDMA header.
//= rfc8167#section-5.1
//# Whether presented inline or as a separate chunk, the ONC RPC Call header
//# MUST start with the same XID value that is present in the RPC-over-RDMA
//# header, and the RPC header's msg_type field MUST contain the value CALL.
//= rfc8167#section-5.2
//# Whether presented inline or as a separate chunk, the ONC RPC Reply header
//# MUST start with the same XID value that is present in the RPC-over-RDMA
//# header, and the RPC header's msg_type field MUST contain the value REPLY.
pub(crate) fn chunked(
    version: u32,
    xid: u32,
    credits: u32,
    direction: Direction,
    chunks: ChunkLists,
    nomsg: bool,
) -> Header {
    if version == 1 {
        let body = if nomsg {
            V1Body::NoMsg(chunks)
        } else {
            V1Body::Msg(chunks)
        };
        Header::V1(V1Header { xid, credits, body })
    } else {
        let body = if nomsg {
            V2Body::NoMsg { direction, chunks }
        } else {
            V2Body::Msg { direction, chunks }
        };
        Header::V2(V2Header { xid, credits, body })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcrdma_wire::{ReadSegment, Segment};
    use rpcrdma_xdr::Encode;

    #[test]
    fn chunked_len_is_the_built_headers_length() {
        let seg = Segment::default();
        let chunk = |n: usize| WriteChunk::new(vec![seg; n]);
        for version in [1, 2] {
            for reads in [0, 1, 3] {
                for writes in [vec![], vec![chunk(1)], vec![chunk(2), chunk(5)]] {
                    for reply in [None, Some(chunk(1)), Some(chunk(3))] {
                        let lists = ChunkLists {
                            reads: vec![ReadSegment::default(); reads],
                            writes: writes.clone(),
                            reply: reply.clone(),
                        };
                        let built =
                            chunked(version, 1, 2, Direction::Reply, lists, reply.is_some());
                        assert_eq!(
                            chunked_len(version, reads, &writes, reply.as_ref()),
                            built.encoded_len(),
                            "version {version}, {reads} reads, {writes:?}, {reply:?}"
                        );
                    }
                }
            }
        }
    }
}
