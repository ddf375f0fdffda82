//! RPC message headers (RFC 5531 §9): calls, replies, and their status codes.
//!
//! Pure encode/decode over [`rpcrdma_xdr`]. The body of a call (the
//! procedure's arguments) and of a successful reply (its results) follow the
//! header in the same Payload stream; this module only handles the header,
//! so arguments and results can be encoded straight into the same
//! [`rpcrdma_xdr::PayloadEncoder`] with their DDP-eligible items out of line.

use bytes::Bytes;
use rpcrdma_xdr::{Decoder, Encoder, XdrError};

/// A message header that could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MessageError {
    /// The header is truncated or malformed XDR.
    #[error("malformed RPC header")]
    Xdr(#[from] XdrError),
    /// `msg_type` is neither CALL nor REPLY.
    #[error("RPC message {xid:#010x} has msg_type {value}, neither CALL (0) nor REPLY (1)")]
    BadMsgType {
        /// Transaction id.
        xid: u32,
        /// The value read.
        value: u32,
    },
    /// A call for an RPC version other than 2 (answered with `RPC_MISMATCH`).
    #[error("RPC call {xid:#010x} uses RPC version {rpcvers}; only version 2 exists")]
    RpcVersion {
        /// Transaction id.
        xid: u32,
        /// The version read.
        rpcvers: u32,
    },
    /// A credential body over 400 bytes (answered with `AUTH_BADCRED`).
    #[error("RPC call {xid:#010x} has a {len}-byte credential; the limit is 400")]
    CredTooLong {
        /// Transaction id.
        xid: u32,
        /// Length read.
        len: u32,
    },
    /// A verifier body over 400 bytes (a call is answered with `AUTH_BADVERF`).
    #[error("RPC message {xid:#010x} has a {len}-byte verifier; the limit is 400")]
    VerfTooLong {
        /// Transaction id.
        xid: u32,
        /// Length read.
        len: u32,
    },
    /// A reply whose `reply_stat` is neither MSG_ACCEPTED nor MSG_DENIED.
    #[error("RPC reply {xid:#010x} has reply_stat {value}")]
    BadReplyStat {
        /// Transaction id.
        xid: u32,
        /// The value read.
        value: u32,
    },
    /// A denied reply whose `reject_stat` is unknown.
    #[error("RPC reply {xid:#010x} has reject_stat {value}")]
    BadRejectStat {
        /// Transaction id.
        xid: u32,
        /// The value read.
        value: u32,
    },
}

/// The RPC protocol version this crate speaks (RFC 5531 §9).
pub const RPC_VERSION: u32 = 2;

/// Maximum size of an `opaque_auth` body (RFC 5531 §8.2: `opaque body<400>`).
pub const MAX_AUTH_BYTES: usize = 400;

rpcrdma_xdr::open_enum! {
    /// `msg_type`: whether a message is a call or a reply.
    pub struct MsgType(u32): Display {
        /// A call.
        CALL = 0,
        /// A reply.
        REPLY = 1,
    }
}

rpcrdma_xdr::open_enum! {
    /// `reply_stat`: whether a call was accepted or denied.
    pub struct ReplyStat(u32): Display {
        /// The call's credentials were accepted.
        MSG_ACCEPTED = 0,
        /// The call was rejected (RPC version or authentication).
        MSG_DENIED = 1,
    }
}

rpcrdma_xdr::open_enum! {
    /// `accept_stat`: the outcome of an accepted call.
    pub struct AcceptStat(u32): Display {
        /// The procedure ran; its results follow.
        SUCCESS = 0,
        /// The program is not available on this server.
        PROG_UNAVAIL = 1,
        /// The program does not support the requested version.
        PROG_MISMATCH = 2,
        /// The program has no such procedure.
        PROC_UNAVAIL = 3,
        /// The procedure's arguments could not be decoded.
        GARBAGE_ARGS = 4,
        /// A server error (e.g. memory allocation failure).
        SYSTEM_ERR = 5,
    }
}

rpcrdma_xdr::open_enum! {
    /// `reject_stat`: why a call was denied.
    pub struct RejectStat(u32): Display {
        /// The RPC version is not supported.
        RPC_MISMATCH = 0,
        /// Authentication failed; an `auth_stat` follows.
        AUTH_ERROR = 1,
    }
}

rpcrdma_xdr::open_enum! {
    /// `auth_stat`: why authentication failed (RFC 5531 §9, RFC 2203).
    pub struct AuthStat(u32): Display {
        /// Success.
        AUTH_OK = 0,
        /// Bad credential (seal broken).
        AUTH_BADCRED = 1,
        /// The client must begin a new session.
        AUTH_REJECTEDCRED = 2,
        /// Bad verifier (seal broken).
        AUTH_BADVERF = 3,
        /// Verifier expired or replayed.
        AUTH_REJECTEDVERF = 4,
        /// Rejected for security reasons.
        AUTH_TOOWEAK = 5,
        /// Bogus response verifier.
        AUTH_INVALIDRESP = 6,
        /// Reason unknown.
        AUTH_FAILED = 7,
        /// Kerberos generic error.
        AUTH_KERB_GENERIC = 8,
        /// Time of credential expired.
        AUTH_TIMEEXPIRE = 9,
        /// Problem with ticket file.
        AUTH_TKT_FILE = 10,
        /// Can't decode authenticator.
        AUTH_DECODE = 11,
        /// Wrong net address in ticket.
        AUTH_NET_ADDR = 12,
        /// No credentials for user (RPCSEC_GSS).
        RPCSEC_GSS_CREDPROBLEM = 13,
        /// Problem with context (RPCSEC_GSS).
        RPCSEC_GSS_CTXPROBLEM = 14,
    }
}

rpcrdma_xdr::open_enum! {
    /// `auth_flavor`: the kind of an `opaque_auth`.
    pub struct AuthFlavor(u32): Display {
        /// No authentication (`AUTH_NONE`, a.k.a. `AUTH_NULL`).
        AUTH_NONE = 0,
        /// UNIX-style credentials (`AUTH_SYS`, a.k.a. `AUTH_UNIX`).
        AUTH_SYS = 1,
        /// Short-hand UNIX credentials.
        AUTH_SHORT = 2,
        /// Diffie-Hellman.
        AUTH_DH = 3,
        /// Kerberos 4.
        AUTH_KERB = 4,
        /// RPCSEC_GSS (RFC 2203).
        RPCSEC_GSS = 6,
    }
}

/// An `opaque_auth`: a flavor and a body of at most [`MAX_AUTH_BYTES`].
///
/// Bodies of flavors this crate does not interpret are carried through
/// unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpaqueAuth {
    /// The flavor.
    pub flavor: AuthFlavor,
    /// The body (at most [`MAX_AUTH_BYTES`] bytes on the wire).
    pub body: Bytes,
}

impl Default for OpaqueAuth {
    fn default() -> Self {
        Self::none()
    }
}

impl OpaqueAuth {
    /// `AUTH_NONE` with an empty body.
    pub const fn none() -> Self {
        Self {
            flavor: AuthFlavor::AUTH_NONE,
            body: Bytes::new(),
        }
    }

    /// Encoded size in bytes.
    pub fn encoded_len(&self) -> usize {
        8 + rpcrdma_xdr::round_up(self.body.len())
    }

    /// Appends the XDR encoding.
    ///
    /// # Panics
    /// If the body is longer than [`MAX_AUTH_BYTES`] (API misuse: the
    /// constructors in [`crate::auth`] never build one).
    pub fn encode(&self, enc: &mut Encoder<'_>) {
        assert!(
            self.body.len() <= MAX_AUTH_BYTES,
            "opaque_auth body of {} bytes exceeds the RFC 5531 limit of 400",
            self.body.len()
        );
        if self.body.is_empty() {
            enc.put_u32s([self.flavor.0, 0]);
        } else {
            enc.put_u32(self.flavor.0);
            enc.put_opaque(&self.body);
        }
    }

    /// Decodes one `opaque_auth`. A body longer than [`MAX_AUTH_BYTES`] is
    /// reported as `Ok(Err(len))` so a server can answer with the right
    /// `auth_stat` instead of dropping the call.
    fn decode(dec: &mut Decoder<'_>) -> Result<Result<Self, u32>, XdrError> {
        let [flavor, len] = dec.get_u32s()?;
        let flavor = AuthFlavor(flavor);
        if len as usize > MAX_AUTH_BYTES {
            return Ok(Err(len));
        }
        let body = dec.get_fixed_opaque(len as usize)?;
        // AUTH_NONE's empty body (nearly every verifier) needs no copy.
        let body = if body.is_empty() {
            Bytes::new()
        } else {
            Bytes::copy_from_slice(body)
        };
        Ok(Ok(Self { flavor, body }))
    }
}

/// The header of a call message: everything before the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallHeader {
    /// Transaction id.
    pub xid: u32,
    /// Program number.
    pub prog: u32,
    /// Program version.
    pub vers: u32,
    /// Procedure number.
    pub proc_: u32,
    /// Credential.
    pub cred: OpaqueAuth,
    /// Verifier.
    pub verf: OpaqueAuth,
}

impl CallHeader {
    /// Encoded size in bytes.
    pub fn encoded_len(&self) -> usize {
        24 + self.cred.encoded_len() + self.verf.encoded_len()
    }

    /// Appends the XDR encoding (`rpcvers` is always [`RPC_VERSION`]).
    pub fn encode(&self, enc: &mut Encoder<'_>) {
        if self.cred.body.is_empty() && self.verf.body.is_empty() {
            // The common header (AUTH_NONE, or any flavor without a
            // body): ten words in one copy.
            enc.put_u32s([
                self.xid,
                //= rfc5666bis-04#section-7.3.4
                //# The Call header's msg_type field MUST contain the value
                //# CALL.
                //= rfc8167#section-5.1
                //# Whether presented inline or as a separate chunk, the ONC
                //# RPC Call header MUST start with the same XID value that is
                //# present in the RPC-over-RDMA header, and the RPC header's
                //# msg_type field MUST contain the value CALL.
                MsgType::CALL.0,
                RPC_VERSION,
                self.prog,
                self.vers,
                self.proc_,
                self.cred.flavor.0,
                0,
                self.verf.flavor.0,
                0,
            ]);
            return;
        }
        enc.put_u32s([
            self.xid,
            MsgType::CALL.0,
            RPC_VERSION,
            self.prog,
            self.vers,
            self.proc_,
        ]);
        self.cred.encode(enc);
        self.verf.encode(enc);
    }
}

/// The outcome of an accepted call (`accepted_reply.reply_data`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AcceptedStatus {
    /// `SUCCESS`: the results follow the header.
    Success,
    /// `PROG_UNAVAIL`.
    ProgUnavail,
    /// `PROG_MISMATCH` with the lowest and highest versions supported.
    ProgMismatch {
        /// Lowest version supported.
        low: u32,
        /// Highest version supported.
        high: u32,
    },
    /// `PROC_UNAVAIL`.
    ProcUnavail,
    /// `GARBAGE_ARGS`.
    GarbageArgs,
    /// `SYSTEM_ERR`.
    SystemErr,
    /// A value RFC 5531 does not define (its arm is `void`).
    Other(AcceptStat),
}

impl AcceptedStatus {
    /// The `accept_stat` value.
    pub fn stat(self) -> AcceptStat {
        match self {
            Self::Success => AcceptStat::SUCCESS,
            Self::ProgUnavail => AcceptStat::PROG_UNAVAIL,
            Self::ProgMismatch { .. } => AcceptStat::PROG_MISMATCH,
            Self::ProcUnavail => AcceptStat::PROC_UNAVAIL,
            Self::GarbageArgs => AcceptStat::GARBAGE_ARGS,
            Self::SystemErr => AcceptStat::SYSTEM_ERR,
            Self::Other(s) => s,
        }
    }
}

/// Why a call was denied (`rejected_reply`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RejectedReply {
    /// `RPC_MISMATCH` with the lowest and highest RPC versions supported.
    RpcMismatch {
        /// Lowest version supported.
        low: u32,
        /// Highest version supported.
        high: u32,
    },
    /// `AUTH_ERROR` with its reason.
    AuthError(AuthStat),
}

/// The body of a reply message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyBody {
    /// `MSG_ACCEPTED`: a verifier and the outcome.
    Accepted {
        /// The server's verifier.
        verf: OpaqueAuth,
        /// The outcome; results follow for [`AcceptedStatus::Success`].
        status: AcceptedStatus,
    },
    /// `MSG_DENIED`.
    Denied(RejectedReply),
}

/// The header of a reply message: everything before the results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyHeader {
    /// Transaction id of the call this answers.
    pub xid: u32,
    /// Accepted or denied, with details.
    pub body: ReplyBody,
}

/// Largest possible reply header with an `AUTH_NONE`-sized verifier of up
/// to [`MAX_AUTH_BYTES`]: xid, mtype, reply_stat, verifier (flavor, length,
/// body), accept_stat. Used to turn a procedure's maximum result size into
/// a maximum reply size.
pub const MAX_ACCEPTED_REPLY_HEADER: usize = 4 * 3 + 8 + MAX_AUTH_BYTES + 4;

impl ReplyHeader {
    /// A successful reply with an `AUTH_NONE` verifier.
    pub fn success(xid: u32) -> Self {
        Self::accepted(xid, AcceptedStatus::Success)
    }

    /// An accepted reply with an `AUTH_NONE` verifier.
    pub fn accepted(xid: u32, status: AcceptedStatus) -> Self {
        Self {
            xid,
            body: ReplyBody::Accepted {
                verf: OpaqueAuth::none(),
                status,
            },
        }
    }

    /// A denied reply.
    pub fn denied(xid: u32, why: RejectedReply) -> Self {
        Self {
            xid,
            body: ReplyBody::Denied(why),
        }
    }

    /// Encoded size in bytes.
    pub fn encoded_len(&self) -> usize {
        12 + match &self.body {
            ReplyBody::Accepted { verf, status } => {
                verf.encoded_len()
                    + 4
                    + match status {
                        AcceptedStatus::ProgMismatch { .. } => 8,
                        _ => 0,
                    }
            }
            ReplyBody::Denied(RejectedReply::RpcMismatch { .. }) => 12,
            ReplyBody::Denied(RejectedReply::AuthError(_)) => 8,
        }
    }

    /// Appends the XDR encoding.
    //= rfc5666bis-04#section-7.3.5
    //# The Reply header's msg_type field MUST contain the value REPLY.
    //= rfc8167#section-5.2
    //# Whether presented inline or as a separate chunk, the ONC RPC Reply
    //# header MUST start with the same XID value that is present in the
    //# RPC-over-RDMA header, and the RPC header's msg_type field MUST contain
    //# the value REPLY.
    pub fn encode(&self, enc: &mut Encoder<'_>) {
        match &self.body {
            ReplyBody::Accepted { verf, status } if verf.body.is_empty() => {
                // The usual reply (an empty verifier): one write.
                enc.put_u32s([
                    self.xid,
                    MsgType::REPLY.0,
                    ReplyStat::MSG_ACCEPTED.0,
                    verf.flavor.0,
                    0,
                    status.stat().0,
                ]);
                if let AcceptedStatus::ProgMismatch { low, high } = status {
                    enc.put_u32s([*low, *high]);
                }
                return;
            }
            _ => enc.put_u32s([self.xid, MsgType::REPLY.0]),
        }
        match &self.body {
            ReplyBody::Accepted { verf, status } => {
                enc.put_u32(ReplyStat::MSG_ACCEPTED.0);
                verf.encode(enc);
                enc.put_u32(status.stat().0);
                if let AcceptedStatus::ProgMismatch { low, high } = status {
                    enc.put_u32(*low);
                    enc.put_u32(*high);
                }
            }
            ReplyBody::Denied(why) => {
                enc.put_u32(ReplyStat::MSG_DENIED.0);
                match why {
                    RejectedReply::RpcMismatch { low, high } => {
                        enc.put_u32(RejectStat::RPC_MISMATCH.0);
                        enc.put_u32(*low);
                        enc.put_u32(*high);
                    }
                    RejectedReply::AuthError(stat) => {
                        enc.put_u32(RejectStat::AUTH_ERROR.0);
                        enc.put_u32(stat.0);
                    }
                }
            }
        }
    }
}

/// A decoded message header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Header {
    /// A call; the arguments follow.
    Call(CallHeader),
    /// A reply; for a successful accepted reply the results follow.
    Reply(ReplyHeader),
}

/// Reads the `xid` and `msg_type` words at the start of a message without
/// decoding further. Transports use this to tell calls from replies
/// (RFC 8167 §4.2: the direction of a message is known from its header).
///
/// ```
/// use rpcrdma_oncrpc::msg::{peek_kind, MsgType};
/// assert_eq!(peek_kind(&[0, 0, 0, 9, 0, 0, 0, 1]), Some((9, MsgType::REPLY)));
/// assert_eq!(peek_kind(&[0, 0, 0, 9]), None);
/// ```
pub fn peek_kind(inline: &[u8]) -> Option<(u32, MsgType)> {
    let mut dec = Decoder::new(inline);
    let xid = dec.get_u32().ok()?;
    let mtype = dec.get_u32().ok()?;
    Some((xid, MsgType(mtype)))
}

/// Decodes a message header, leaving `dec` at the first byte of the
/// arguments (call) or results (successful reply).
///
/// Errors that still allow an answer to a call (wrong RPC version, an
/// oversized credential or verifier) carry the xid, so a server can reply
/// `RPC_MISMATCH` or `AUTH_ERROR` as RFC 5531 §9 requires.
pub fn decode_header(dec: &mut Decoder<'_>) -> Result<Header, MessageError> {
    if let Some(h) = decode_plain_header(dec) {
        return Ok(h);
    }
    decode_header_fields(dec)
}

/// [`decode_header`] field by field (every header).
fn decode_header_fields(dec: &mut Decoder<'_>) -> Result<Header, MessageError> {
    let xid = dec.get_u32()?;
    let mtype = MsgType(dec.get_u32()?);
    match mtype {
        MsgType::CALL => decode_call_body(xid, dec).map(Header::Call),
        MsgType::REPLY => decode_reply_body(xid, dec).map(Header::Reply),
        other => Err(MessageError::BadMsgType {
            xid,
            value: other.0,
        }),
    }
}

/// The two headers nearly every message has, read in one piece: a call
/// whose credential and verifier have empty bodies, and a `SUCCESS` reply
/// with an empty verifier. `None` (and `dec` untouched) for anything
/// else, which the field-by-field reading below then decodes; for these
/// two both readings give the same header (`plain_headers_read_as_the_general_path`).
#[inline]
fn decode_plain_header(dec: &mut Decoder<'_>) -> Option<Header> {
    let mut d = dec.clone();
    let [xid, mtype, w2, w3, w4, w5] = d.get_u32s().ok()?;
    let h = match MsgType(mtype) {
        MsgType::CALL if w2 == RPC_VERSION => {
            let [cred_flavor, cred_len, verf_flavor, verf_len] = d.get_u32s().ok()?;
            if cred_len != 0 || verf_len != 0 {
                return None;
            }
            Header::Call(CallHeader {
                xid,
                prog: w3,
                vers: w4,
                proc_: w5,
                cred: OpaqueAuth {
                    flavor: AuthFlavor(cred_flavor),
                    body: Bytes::new(),
                },
                verf: OpaqueAuth {
                    flavor: AuthFlavor(verf_flavor),
                    body: Bytes::new(),
                },
            })
        }
        MsgType::REPLY
            if ReplyStat(w2) == ReplyStat::MSG_ACCEPTED
                && w4 == 0
                && AcceptStat(w5) == AcceptStat::SUCCESS =>
        {
            Header::Reply(ReplyHeader {
                xid,
                body: ReplyBody::Accepted {
                    verf: OpaqueAuth {
                        flavor: AuthFlavor(w3),
                        body: Bytes::new(),
                    },
                    status: AcceptedStatus::Success,
                },
            })
        }
        _ => return None,
    };
    *dec = d;
    Some(h)
}

fn decode_call_body(xid: u32, dec: &mut Decoder<'_>) -> Result<CallHeader, MessageError> {
    let rpcvers = dec.get_u32()?;
    if rpcvers != RPC_VERSION {
        return Err(MessageError::RpcVersion { xid, rpcvers });
    }
    let [prog, vers, proc_] = dec.get_u32s()?;
    let cred = OpaqueAuth::decode(dec)?.map_err(|len| MessageError::CredTooLong { xid, len })?;
    let verf = OpaqueAuth::decode(dec)?.map_err(|len| MessageError::VerfTooLong { xid, len })?;
    Ok(CallHeader {
        xid,
        prog,
        vers,
        proc_,
        cred,
        verf,
    })
}

fn decode_reply_body(xid: u32, dec: &mut Decoder<'_>) -> Result<ReplyHeader, MessageError> {
    let stat = ReplyStat(dec.get_u32()?);
    let body = match stat {
        ReplyStat::MSG_ACCEPTED => {
            let verf =
                OpaqueAuth::decode(dec)?.map_err(|len| MessageError::VerfTooLong { xid, len })?;
            let stat = AcceptStat(dec.get_u32()?);
            let status = match stat {
                AcceptStat::SUCCESS => AcceptedStatus::Success,
                AcceptStat::PROG_UNAVAIL => AcceptedStatus::ProgUnavail,
                AcceptStat::PROG_MISMATCH => AcceptedStatus::ProgMismatch {
                    low: dec.get_u32()?,
                    high: dec.get_u32()?,
                },
                AcceptStat::PROC_UNAVAIL => AcceptedStatus::ProcUnavail,
                AcceptStat::GARBAGE_ARGS => AcceptedStatus::GarbageArgs,
                AcceptStat::SYSTEM_ERR => AcceptedStatus::SystemErr,
                other => AcceptedStatus::Other(other),
            };
            ReplyBody::Accepted { verf, status }
        }
        ReplyStat::MSG_DENIED => {
            let rstat = RejectStat(dec.get_u32()?);
            ReplyBody::Denied(match rstat {
                RejectStat::RPC_MISMATCH => RejectedReply::RpcMismatch {
                    low: dec.get_u32()?,
                    high: dec.get_u32()?,
                },
                RejectStat::AUTH_ERROR => RejectedReply::AuthError(AuthStat(dec.get_u32()?)),
                other => {
                    return Err(MessageError::BadRejectStat {
                        xid,
                        value: other.0,
                    })
                }
            })
        }
        other => {
            return Err(MessageError::BadReplyStat {
                xid,
                value: other.0,
            })
        }
    };
    Ok(ReplyHeader { xid, body })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_of(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    /// `decode_header` (one-piece reading first) and the field-by-field
    /// reading alone agree on every input: the header or the error, and
    /// where the decoder stops.
    fn agree(input: &[u8]) {
        let mut a = Decoder::new(input);
        let mut b = Decoder::new(input);
        let ra = decode_header(&mut a);
        let rb = decode_header_fields(&mut b);
        assert_eq!(ra, rb, "input {input:02x?}");
        if ra.is_ok() {
            assert_eq!(a.position(), b.position(), "input {input:02x?}");
        }
    }

    #[test]
    fn plain_headers_read_as_the_general_path() {
        // Each word from a few values around the ones the one-piece
        // reading tests, every prefix of each message, plus a tail.
        let small = [0u32, 1, 2, 3, 6, 7, 400, 401, u32::MAX];
        let mut n = 0;
        for mtype in [0u32, 1, 2] {
            for w2 in small {
                for w3 in [0u32, 1, 6] {
                    for w4 in small {
                        for w5 in small {
                            for (w6, w7, w8, w9) in [
                                (0, 0, 0, 0),
                                (1, 0, 0, 0),
                                (0, 4, 0, 0),
                                (6, 0, 6, 0),
                                (0, 0, 0, 8),
                                (0, 401, 0, 0),
                                (0, 0, 1, 401),
                            ] {
                                let words = [7, mtype, w2, w3, w4, w5, w6, w7, w8, w9, 5, 6, 7, 8];
                                let b = bytes_of(&words);
                                for cut in [0, 4, 8, 20, 24, 28, 36, 40, b.len()] {
                                    agree(&b[..cut]);
                                    n += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(n > 10_000);
    }

    #[test]
    fn encoded_headers_decode_in_one_piece() {
        let call = CallHeader {
            xid: 9,
            prog: 100_003,
            vers: 3,
            proc_: 0,
            cred: OpaqueAuth::none(),
            verf: OpaqueAuth::none(),
        };
        let mut buf = bytes::BytesMut::new();
        call.encode(&mut Encoder::new(&mut buf));
        assert_eq!(buf.len(), call.encoded_len());
        let mut d = Decoder::new(&buf);
        assert!(decode_plain_header(&mut d).is_some());
        assert!(d.is_empty());
        assert_eq!(
            decode_header(&mut Decoder::new(&buf)),
            Ok(Header::Call(call))
        );
    }
}
