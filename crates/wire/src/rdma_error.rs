//! The body of `RDMA_ERROR` (`rpcrdma1_error`) and `RDMA2_ERROR`
//! (`rpcrdma2_error`), and the complete error reply a receiver sends.

use rpcrdma_xdr::{Decoder, Encode, Encoder};

use crate::prefix::{put_prefix, PREFIX_LEN};
use crate::{ErrorMessageDefect, Proc};

rpcrdma_xdr::open_enum! {
    /// The `rdma_err` word. Its names are the ones `rpcrdma decode --json`
    /// uses: `ERR_VERS`, `ERR_BADHEADER` or `ERR_INVAL_OPTION`.
    ///
    /// ```
    /// use rpcrdma_wire::ErrCode;
    /// assert_eq!(ErrCode::BADHEADER.name(), Some("ERR_BADHEADER"));
    /// assert_eq!(ErrCode(9).name(), None);
    /// ```
    pub struct ErrCode(u32) {
        /// `RDMA_ERR_VERS` / `RDMA2_ERR_VERS`.
        VERS = 1 => "ERR_VERS",
        /// `RDMA_ERR_BADHEADER` / `RDMA2_ERR_BAD_HEADER`.
        BADHEADER = 2 => "ERR_BADHEADER",
        /// `RDMA2_ERR_INVAL_OPTION` (Version Two only).
        INVAL_OPTION = 3 => "ERR_INVAL_OPTION",
    }
}

/// A decoded error body. Which arms exist depends on the version:
/// [`ErrorBody::InvalOption`] is Version Two only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorBody {
    /// `ERR_VERS` with the inclusive range of versions the sender supports
    /// (`rpcrdma_err_vers`, immutable across versions).
    Vers {
        /// `rdma_vers_low`.
        low: u32,
        /// `rdma_vers_high`.
        high: u32,
    },
    /// `ERR_BADHEADER` / `RDMA2_ERR_BAD_HEADER` (no data).
    BadHeader,
    /// `RDMA2_ERR_INVAL_OPTION` (no data).
    InvalOption,
}

impl ErrorBody {
    /// The `rdma_err` code of this body.
    pub fn code(&self) -> ErrCode {
        match self {
            Self::Vers { .. } => ErrCode::VERS,
            Self::BadHeader => ErrCode::BADHEADER,
            Self::InvalOption => ErrCode::INVAL_OPTION,
        }
    }

    /// Decodes an error body of version `vers` (1 or 2). Bytes after it
    /// (XDR pad, or a peer's fixed-size send buffer) are left to the
    /// caller: an error that can be decoded still ends its RPC (see
    /// `docs/spec-notes.md`, W6).
    pub(crate) fn decode(dec: &mut Decoder<'_>, vers: u32) -> Result<Self, ErrorMessageDefect> {
        let code = dec.get_u32().map_err(ErrorMessageDefect::Truncated)?;
        let body = match ErrCode(code) {
            ErrCode::VERS => Self::Vers {
                low: dec.get_u32().map_err(ErrorMessageDefect::Truncated)?,
                high: dec.get_u32().map_err(ErrorMessageDefect::Truncated)?,
            },
            ErrCode::BADHEADER => Self::BadHeader,
            ErrCode::INVAL_OPTION if vers >= 2 => Self::InvalOption,
            _ => return Err(ErrorMessageDefect::UnknownCode(code)),
        };
        Ok(body)
    }
}

impl Encode for ErrorBody {
    fn encode(&self, enc: &mut Encoder<'_>) {
        enc.put_u32(self.code().0);
        if let Self::Vers { low, high } = self {
            enc.put_u32(*low);
            enc.put_u32(*high);
        }
    }
    fn encoded_len(&self) -> usize {
        match self {
            Self::Vers { .. } => 12,
            _ => 4,
        }
    }
}

/// A complete `RDMA_ERROR` / `RDMA2_ERROR` message, ready to send: the
/// answer [`crate::decode`] prescribes for a bad message.
///
/// Per RFC 8166 §5.5 (our spec text §5.5) it copies `rdma_xid` and
/// `rdma_vers` from the failing message; `rdma_credit` comes from the
/// receiver's [`crate::ErrorCredits`] policy (see `docs/spec-notes.md`).
/// The layout is the same in both versions (the Version Two error has no
/// direction field, as its XDR is written).
///
/// ```
/// use rpcrdma_wire::{ErrorBody, ErrorReply};
/// use rpcrdma_xdr::Encode;
/// let r = ErrorReply { xid: 0x11223344, vers: 7, credits: 1, body: ErrorBody::Vers { low: 1, high: 2 } };
/// assert_eq!(hex::encode(r.to_bytes()), "112233440000000700000001000000040000000100000001\
///                                        00000002");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorReply {
    /// `rdma_xid`, copied from the failing message.
    pub xid: u32,
    /// `rdma_vers`, copied from the failing message.
    pub vers: u32,
    /// `rdma_credit`.
    pub credits: u32,
    /// The error.
    pub body: ErrorBody,
}

//= draft-cel-01#section-4.2.1
//# o When the rdma_proc field has the value RDMA2_ERROR, an RPC Payload
//# Stream MUST NOT follow the Transport Header Stream.
impl Encode for ErrorReply {
    fn encode(&self, enc: &mut Encoder<'_>) {
        put_prefix(enc, self.xid, self.vers, self.credits, Proc::ERROR);
        self.body.encode(enc);
    }
    fn encoded_len(&self) -> usize {
        PREFIX_LEN + self.body.encoded_len()
    }
}
