//! RPC-over-RDMA Version One headers (RFC 8166; our spec text
//! `rpcrdma-v1-rfc5666bis-04` §5.1–§5.6).

use rpcrdma_xdr::{Decoder, Encode, Encoder};

use crate::prefix::{put_prefix, PREFIX_LEN};
use crate::{ChunkLists, ErrorBody, HeaderError, Limits, Proc};

/// The version number of RPC-over-RDMA Version One.
pub const VERSION: u32 = 1;

/// Default inline threshold of Version One, in bytes (RFC 8166 §3.3.3):
/// what a sender must assume when it knows nothing better.
pub const DEFAULT_INLINE_THRESHOLD: u32 = 1024;

/// A Version One transport header.
///
/// `rdma_vers` is implicitly [`VERSION`]. Build one, learn its size with
/// [`Encode::encoded_len`] (for inline-threshold decisions), and append it
/// to a send buffer with [`Encode::encode_into`]; the Payload stream can
/// then go in a second gather element, it need not follow in the same buffer.
///
/// ```
/// use bytes::BytesMut;
/// use rpcrdma_wire::{ChunkLists, V1Body, V1Header};
/// use rpcrdma_xdr::Encode;
///
/// let hdr = V1Header { xid: 0xd7499bfa, credits: 128, body: V1Body::Msg(ChunkLists::default()) };
/// assert_eq!(hdr.encoded_len(), 28);
/// let mut buf = BytesMut::new();
/// hdr.encode_into(&mut buf);
/// // xid, vers 1, credits 128, RDMA_MSG, then three empty chunk lists
/// assert_eq!(
///     hex::encode(&buf),
///     concat!("d7499bfa", "00000001", "00000080", "00000000", "00000000", "00000000", "00000000"),
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct V1Header {
    /// `rdma_xid`.
    pub xid: u32,
    /// `rdma_credit`: requested credits in a call, granted credits in a reply.
    pub credits: u32,
    /// The message type and its body.
    pub body: V1Body,
}

/// The body of a Version One header, by message type.
//= rfc5666bis-04#section-5.6.1
//= type=implication
//# Therefore, senders MUST NOT send RDMA_MSGP procedures.
//= rfc5666bis-04#section-5.6.2
//= type=implication
//# Therefore, senders MUST NOT send RDMA_DONE messages.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum V1Body {
    /// `RDMA_MSG`: chunk lists, then the Payload stream in the same Send.
    Msg(ChunkLists),
    /// `RDMA_NOMSG`: chunk lists only; the Payload stream is in a
    /// Position-Zero Read chunk or the Reply chunk.
    NoMsg(ChunkLists),
    /// `RDMA_ERROR`. ([`ErrorBody::InvalOption`] does not exist in Version
    /// One; a header built with it encodes `rdma_err` 3, which a Version One
    /// receiver discards.)
    Error(ErrorBody),
}

impl V1Header {
    /// The `rdma_proc` value of this header.
    pub fn proc_(&self) -> Proc {
        match self.body {
            V1Body::Msg(_) => Proc::MSG,
            V1Body::NoMsg(_) => Proc::NOMSG,
            V1Body::Error(_) => Proc::ERROR,
        }
    }

    /// The chunk lists, for `RDMA_MSG` and `RDMA_NOMSG`.
    pub fn chunks(&self) -> Option<&ChunkLists> {
        match &self.body {
            V1Body::Msg(c) | V1Body::NoMsg(c) => Some(c),
            V1Body::Error(_) => None,
        }
    }

    /// Decodes the body that follows a Version One prefix. Payload rules
    /// are checked by the caller, which knows what follows.
    pub(crate) fn decode_body(
        dec: &mut Decoder<'_>,
        proc_: Proc,
        limits: &Limits,
    ) -> Result<V1Body, HeaderError> {
        match proc_ {
            Proc::MSG => Ok(V1Body::Msg(ChunkLists::decode(dec, limits)?)),
            Proc::NOMSG => Ok(V1Body::NoMsg(ChunkLists::decode(dec, limits)?)),
            Proc::ERROR => ErrorBody::decode(dec, VERSION)
                .map(V1Body::Error)
                .map_err(HeaderError::UndecodableError),
            //= rfc5666bis-04#section-5.6.1
            //# When receiving an RDMA_MSGP procedure, receivers SHOULD reply
            //# with an RDMA_ERROR procedure, setting the rdma_err field to
            //# RDMA_ERR_BADHEADER.
            //= rfc5666bis-04#section-5.6.2
            //# When receiving an RDMA_DONE procedure, receivers SHOULD reply
            //# with an RDMA_ERROR procedure, setting the rdma_err field to
            //# RDMA_ERR_BADHEADER.
            Proc::MSGP | Proc::DONE => Err(HeaderError::ObsoleteProc { proc_ }),
            other => Err(HeaderError::UnknownProc {
                vers: VERSION,
                value: other.0,
            }),
        }
    }
}

//= rfc5666bis-04#section-5
//= type=implication
//# All RPC-over-RDMA header content is contained in the Transport stream, and
//# thus MUST be XDR encoded.
//= rfc5666bis-04#section-5.2.2
//# For RPC-over-RDMA Version One, this field MUST contain the value one (1).
impl Encode for V1Header {
    fn encode(&self, enc: &mut Encoder<'_>) {
        put_prefix(enc, self.xid, VERSION, self.credits, self.proc_());
        match &self.body {
            V1Body::Msg(c) | V1Body::NoMsg(c) => c.encode(enc),
            V1Body::Error(e) => e.encode(enc),
        }
    }

    fn encoded_len(&self) -> usize {
        PREFIX_LEN
            + match &self.body {
                V1Body::Msg(c) | V1Body::NoMsg(c) => c.encoded_len(),
                V1Body::Error(e) => e.encoded_len(),
            }
    }
}
