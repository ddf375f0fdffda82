//! [`Header`]: a transport header of either version, its accessors and
//! its encoding.

use rpcrdma_xdr::{Encode, Encoder};

use crate::v2::Direction;
use crate::{v1, v2, ChunkLists, ErrorBody, Proc, V1Body, V1Header, V2Body, V2Header};

/// A transport header of either version.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Header {
    /// Version One.
    V1(V1Header),
    /// Version Two.
    V2(V2Header),
}

impl Header {
    /// `rdma_xid`.
    pub fn xid(&self) -> u32 {
        match self {
            Self::V1(h) => h.xid,
            Self::V2(h) => h.xid,
        }
    }

    /// `rdma_vers`.
    pub fn vers(&self) -> u32 {
        match self {
            Self::V1(_) => v1::VERSION,
            Self::V2(_) => v2::VERSION,
        }
    }

    /// `rdma_credit`.
    pub fn credits(&self) -> u32 {
        match self {
            Self::V1(h) => h.credits,
            Self::V2(h) => h.credits,
        }
    }

    /// `rdma_proc`.
    pub fn proc_(&self) -> Proc {
        match self {
            Self::V1(h) => h.proc_(),
            Self::V2(h) => h.proc_(),
        }
    }

    /// The message type's name in its version (`RDMA_MSG`, `RDMA2_OPTIONAL`, ...).
    pub fn proc_name(&self) -> &'static str {
        let p = self.proc_();
        match self {
            Self::V1(_) => p.v1_name(),
            Self::V2(_) => p.v2_name(),
        }
        .unwrap_or("?")
    }

    /// The chunk lists of a `MSG` / `NOMSG` header.
    pub fn chunks(&self) -> Option<&ChunkLists> {
        match self {
            Self::V1(h) => h.chunks(),
            Self::V2(h) => h.chunks(),
        }
    }

    /// The chunk lists of a `MSG` / `NOMSG` header, taken out of it (no
    /// copy).
    pub fn into_chunks(self) -> Option<ChunkLists> {
        match self {
            Self::V1(V1Header {
                body: V1Body::Msg(c) | V1Body::NoMsg(c),
                ..
            })
            | Self::V2(V2Header {
                body: V2Body::Msg { chunks: c, .. } | V2Body::NoMsg { chunks: c, .. },
                ..
            }) => Some(c),
            _ => None,
        }
    }

    /// The error body of an `RDMA_ERROR` / `RDMA2_ERROR` header.
    pub fn error(&self) -> Option<&ErrorBody> {
        match self {
            Self::V1(V1Header {
                body: V1Body::Error(e),
                ..
            })
            | Self::V2(V2Header {
                body: V2Body::Error(e),
                ..
            }) => Some(e),
            _ => None,
        }
    }

    /// The Version Two direction (`None` for Version One).
    pub fn direction(&self) -> Option<Direction> {
        match self {
            Self::V1(_) => None,
            Self::V2(h) => Some(h.direction()),
        }
    }
}

impl Header {
    /// The encoding of an `RDMA_MSG` / `RDMA_NOMSG` header whose three
    /// chunk lists are empty (the common Short message), built in one
    /// piece: the encoding and its length, or `None` for any other header.
    fn encode_plain(&self) -> Option<([u8; 32], usize)> {
        let (xid, vers, credits, proc_, direction, chunks) = match self {
            Self::V1(h) => match &h.body {
                V1Body::Msg(c) => (h.xid, v1::VERSION, h.credits, Proc::MSG, None, c),
                V1Body::NoMsg(c) => (h.xid, v1::VERSION, h.credits, Proc::NOMSG, None, c),
                V1Body::Error(_) => return None,
            },
            Self::V2(h) => match &h.body {
                V2Body::Msg { direction, chunks } => (
                    h.xid,
                    v2::VERSION,
                    h.credits,
                    Proc::MSG,
                    Some(*direction),
                    chunks,
                ),
                V2Body::NoMsg { direction, chunks } => (
                    h.xid,
                    v2::VERSION,
                    h.credits,
                    Proc::NOMSG,
                    Some(*direction),
                    chunks,
                ),
                V2Body::Error(_) | V2Body::Optional(_) => return None,
            },
        };
        if !chunks.is_empty() {
            return None;
        }
        // Version One: the prefix and three empty lists (seven words);
        // Version Two: rdma_direction before the lists (eight).
        let words = [
            xid,
            vers,
            credits,
            proc_.0,
            direction.map_or(0, Direction::value),
            0,
            0,
            0,
        ];
        let n = if direction.is_some() { 8 } else { 7 };
        let mut out = [0u8; 32];
        for (o, w) in out.chunks_exact_mut(4).zip(words) {
            o.copy_from_slice(&w.to_be_bytes());
        }
        Some((out, 4 * n))
    }
}

impl Encode for Header {
    fn encode(&self, enc: &mut Encoder<'_>) {
        match self {
            Self::V1(h) => h.encode(enc),
            Self::V2(h) => h.encode(enc),
        }
    }
    fn encoded_len(&self) -> usize {
        match self {
            Self::V1(h) => h.encoded_len(),
            Self::V2(h) => h.encoded_len(),
        }
    }
    fn encode_into(&self, buf: &mut bytes::BytesMut) {
        match self.encode_plain() {
            // (Constant lengths: copied without a call to memcpy.)
            Some((b, 28)) => buf.extend_from_slice(&b[..28]),
            Some((b, _)) => buf.extend_from_slice(&b[..32]),
            None => self.encode(&mut Encoder::new(buf)),
        }
    }
}
