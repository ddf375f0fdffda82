//! Building transport headers of the connection's version.

use rpcrdma_wire::v2::Direction;
use rpcrdma_wire::{ChunkLists, ErrorBody, Header, V1Body, V1Header, V2Body, V2Header};

/// `RDMA_MSG` (`nomsg == false`) or `RDMA_NOMSG` in `version`.
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

/// `RDMA_ERROR` / `RDMA2_ERROR` in `version`.
pub(crate) fn error(version: u32, xid: u32, credits: u32, body: ErrorBody) -> Header {
    if version == 1 {
        Header::V1(V1Header {
            xid,
            credits,
            body: V1Body::Error(body),
        })
    } else {
        Header::V2(V2Header {
            xid,
            credits,
            body: V2Body::Error(body),
        })
    }
}
