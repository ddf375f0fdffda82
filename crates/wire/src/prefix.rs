//! The four fixed words every RPC-over-RDMA header begins with, in every
//! version (RFC 8166 §4.2, our spec text §5.1.2 `rpcrdma_prefix`):
//! `rdma_xid`, `rdma_vers`, `rdma_credit`, `rdma_proc`.

use std::fmt;

/// Length of the fixed prefix in bytes.
pub const PREFIX_LEN: usize = 16;

/// Byte ranges of the prefix fields.
pub mod field {
    /// A byte range within the prefix.
    pub type Field = core::ops::Range<usize>;
    /// `rdma_xid`.
    pub const XID: Field = 0..4;
    /// `rdma_vers`.
    pub const VERS: Field = 4..8;
    /// `rdma_credit`.
    pub const CREDITS: Field = 8..12;
    /// `rdma_proc` (`rdma_htype`).
    pub const PROC: Field = 12..16;
}

rpcrdma_xdr::open_enum! {
    /// The message type word, `rdma_proc`. [`Proc::name`] is the name in
    /// the first version that defines the value; [`Proc::v1_name`] and
    /// [`Proc::v2_name`] are each version's own.
    ///
    /// ```
    /// use rpcrdma_wire::Proc;
    /// assert_eq!(Proc::from(4), Proc::ERROR);
    /// assert_eq!(Proc::ERROR.v1_name(), Some("RDMA_ERROR"));
    /// assert_eq!(Proc::OPTIONAL.v1_name(), None);
    /// assert_eq!(format!("{:?}", Proc::OPTIONAL), "RDMA2_OPTIONAL");
    /// assert_eq!(Proc(77).to_string(), "rdma_proc 77");
    /// ```
    pub struct Proc(u32) {
        /// `RDMA_MSG` / `RDMA2_MSG`: chunk lists, then a Payload stream.
        MSG = 0 => "RDMA_MSG",
        /// `RDMA_NOMSG` / `RDMA2_NOMSG`: chunk lists only; the Payload
        /// stream travels in chunks.
        NOMSG = 1 => "RDMA_NOMSG",
        /// `RDMA_MSGP`: Version One, reserved, no longer supported.
        MSGP = 2 => "RDMA_MSGP",
        /// `RDMA_DONE`: Version One, reserved, no longer supported.
        DONE = 3 => "RDMA_DONE",
        /// `RDMA_ERROR` / `RDMA2_ERROR`.
        ERROR = 4 => "RDMA_ERROR",
        /// `RDMA2_OPTIONAL` (Version Two only).
        OPTIONAL = 5 => "RDMA2_OPTIONAL",
    }
}

impl Proc {
    /// The Version One name, if the value has one.
    pub fn v1_name(self) -> Option<&'static str> {
        Some(match self {
            Self::MSG => "RDMA_MSG",
            Self::NOMSG => "RDMA_NOMSG",
            Self::MSGP => "RDMA_MSGP",
            Self::DONE => "RDMA_DONE",
            Self::ERROR => "RDMA_ERROR",
            _ => return None,
        })
    }

    /// The Version Two name, if the value has one.
    pub fn v2_name(self) -> Option<&'static str> {
        Some(match self {
            Self::MSG => "RDMA2_MSG",
            Self::NOMSG => "RDMA2_NOMSG",
            Self::ERROR => "RDMA2_ERROR",
            Self::OPTIONAL => "RDMA2_OPTIONAL",
            _ => return None,
        })
    }
}

impl fmt::Display for Proc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "rdma_proc {}", self.0),
        }
    }
}

/// Appends the four prefix words (the same in every version).
pub(crate) fn put_prefix(
    enc: &mut rpcrdma_xdr::Encoder<'_>,
    xid: u32,
    vers: u32,
    credits: u32,
    proc_: Proc,
) {
    enc.put_u32(xid);
    enc.put_u32(vers);
    enc.put_u32(credits);
    enc.put_u32(proc_.0);
}

/// A read-only view of the fixed prefix of a received message, for the
/// cheap look-ups an engine does before full decoding (find the XID,
/// check the version).
///
/// [`Packet::new_checked`] is the only constructor: after it succeeds no
/// accessor can panic.
///
/// ```
/// use rpcrdma_wire::prefix::Packet;
/// let bytes = [0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 32, 0, 0, 0, 0, 0, 0, 0, 0];
/// let p = Packet::new_checked(&bytes[..]).unwrap();
/// assert_eq!((p.xid(), p.vers(), p.credits(), p.proc_().0), (9, 1, 32, 0));
/// assert!(Packet::new_checked(&bytes[..15]).is_none());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Packet<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buf` if it holds at least [`PREFIX_LEN`] bytes.
    pub fn new_checked(buf: T) -> Option<Self> {
        (buf.as_ref().len() >= PREFIX_LEN).then_some(Self { buf })
    }

    fn word(&self, f: field::Field) -> u32 {
        let b = self.buf.as_ref();
        // In bounds: `new_checked` guaranteed PREFIX_LEN bytes.
        u32::from_be_bytes([b[f.start], b[f.start + 1], b[f.start + 2], b[f.start + 3]])
    }

    /// `rdma_xid`.
    pub fn xid(&self) -> u32 {
        self.word(field::XID)
    }

    /// `rdma_vers`.
    pub fn vers(&self) -> u32 {
        self.word(field::VERS)
    }

    /// `rdma_credit`.
    pub fn credits(&self) -> u32 {
        self.word(field::CREDITS)
    }

    /// `rdma_proc`.
    pub fn proc_(&self) -> Proc {
        Proc(self.word(field::PROC))
    }

    /// Everything after the prefix.
    pub fn body(&self) -> &[u8] {
        self.buf.as_ref().get(PREFIX_LEN..).unwrap_or(&[])
    }
}
