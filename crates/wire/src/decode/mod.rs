//! The receive path: one function, [`decode`], turns a received message
//! into a typed [`Message`] or a [`Rejection`] that says what to do.

use bytes::Bytes;
use rpcrdma_xdr::{Decoder, Encode};

mod config;
mod header;

pub use config::{DecodeConfig, ErrorCredits, VersionRange};
pub use header::Header;

use crate::v2::Direction;
use crate::{
    v1, v2, Action, ChunkLists, ErrCode, ErrorBody, ErrorMessageDefect, ErrorReply, HeaderError,
    Proc, V1Body, V1Header, V2Body, V2Header,
};

/// A valid received message: its header and the Payload stream bytes that
/// follow the header in the receive buffer (a zero-copy slice of it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The transport header.
    pub header: Header,
    /// Length of the transport header in bytes.
    pub header_len: usize,
    /// Everything after the header: the (possibly reduced) Payload stream
    /// of `RDMA_MSG`; empty for `RDMA_NOMSG`; whatever pad bytes followed
    /// an `RDMA_ERROR`'s body (accepted, W6); empty or the option's
    /// business for `RDMA2_OPTIONAL`.
    pub payload: Bytes,
}

/// What the receiver must do with a bad message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Send this `RDMA_ERROR` / `RDMA2_ERROR`.
    Reply(ErrorReply),
    /// Drop the message without a reply.
    Discard,
}

/// A message that failed validation: why, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}")]
pub struct Rejection {
    /// The rule the message broke.
    pub error: HeaderError,
    /// What the receiver sends (or that it sends nothing).
    pub verdict: Verdict,
    /// The message's direction, when its bytes tell it: Version Two's
    /// `rdma_direction` (`rdma_optdir` of an `RDMA2_OPTIONAL`); in Version
    /// One, after a header whose chunk lists decode, the RPC `msg_type` of
    /// an `RDMA_MSG`, or the chunk an `RDMA_NOMSG` carries its message in
    /// (a Position-Zero Read chunk: CALL; only a Reply chunk: REPLY).
    /// `None` when they do not, or when the header and the RPC message
    /// disagree ([`HeaderError::DirectionMismatch`]). A message whose bytes say REPLY is never
    /// answered (its [`Verdict`] is [`Verdict::Discard`], spec note W14):
    /// an error names only an XID, which its receiver matches against its
    /// own calls, those of the other direction (RFC 8166 §5.5: a
    /// requester silently discards a reply whose header it rejects).
    pub direction: Option<Direction>,
}

impl Rejection {
    /// The error reply to send, if any.
    pub fn reply(&self) -> Option<&ErrorReply> {
        match &self.verdict {
            Verdict::Reply(r) => Some(r),
            Verdict::Discard => None,
        }
    }

    /// The exact bytes of the error reply, if any.
    pub fn reply_bytes(&self) -> Option<Bytes> {
        self.reply().map(ErrorReply::to_bytes)
    }

    /// The `rdma_err` of the reply, if any.
    pub fn err_code(&self) -> Option<ErrCode> {
        self.reply().map(|r| r.body.code())
    }
}

fn word(buf: &[u8], i: usize) -> Option<u32> {
    let b = buf.get(i * 4..i * 4 + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn reject(buf: &Bytes, cfg: &DecodeConfig, error: HeaderError) -> Rejection {
    // A header and an RPC message that disagree on the direction tell
    // none: such a message is answered like one whose direction is unknown.
    let direction = match error {
        HeaderError::DirectionMismatch { .. } => None,
        _ => rejected_direction(buf, cfg),
    };
    //= rfc5666bis-04#section-5.5
    //# If errors are detected in an RPC-over-RDMA header, an RDMA_ERROR
    //# procedure MUST be generated.
    //= rfc5666bis-04#section-5.5.2
    //# If the rdma_vers field contains a recognized value, but an XDR parsing
    //# error occurs, the responder MUST reply with an RDMA_ERROR procedure
    //# and set the rdma_err value to RDMA_ERR_BADHEADER.
    let body = match error.action() {
        // A REPLY is never answered (spec note W14): the error would name
        // an XID of the other direction at its receiver.
        _ if direction == Some(Direction::Reply) => None,
        //= rfc5666bis-04#section-5.5.1
        //# When a receiver detects an RPC-over-RDMA header version that it
        //# does not support (currently this document defines only Version
        //# One), it MUST reply with an RDMA_ERROR procedure and set the
        //# rdma_err value to RDMA_ERR_VERS, also providing the low and high
        //# inclusive version numbers it does, in fact, support.
        Action::ReplyVers => Some(ErrorBody::Vers {
            low: cfg.versions.low(),
            high: cfg.versions.high(),
        }),
        Action::ReplyBadHeader => Some(ErrorBody::BadHeader),
        //= draft-cel-01#section-3.1
        //# When an implementation does not recognize or support the value
        //# contained in the rdma_opttype field, it MUST send an RPC-over-RDMA
        //# message with the rdma_xid field set to the same value as the
        //# erroneous message, the rdma_proc field set to RDMA2_ERROR, and the
        //# rdma_err field set to RDMA2_ERR_INVAL_OPTION.
        Action::ReplyInvalOption => Some(ErrorBody::InvalOption),
        //= rfc5666bis-04#section-5.5
        //# A receiver MUST silently discard an RDMA_ERROR procedure that
        //# cannot be decoded.
        Action::Discard => None,
    };
    let verdict = match (body, word(buf, 0), word(buf, 1)) {
        (Some(body), Some(xid), Some(vers)) => {
            let credits = match cfg.error_credits {
                ErrorCredits::Echo => word(buf, 2).unwrap_or(1).max(1),
                ErrorCredits::Grant(n) => n,
            };
            //= rfc5666bis-04#section-5.5
            //# To form an RDMA_ERROR procedure: The rdma_xid field MUST
            //# contain the same XID that was in the rdma_xid field in the
            //# failing request; The rdma_vers field MUST contain the same
            //# version that was in the rdma_vers field in the failing
            //# request; The rdma_proc field MUST contain the value
            //# RDMA_ERROR; The rdma_err field contains a value that reflects
            //# the type of error that occurred, as described below.
            Verdict::Reply(ErrorReply {
                xid,
                vers,
                credits,
                body,
            })
        }
        _ => Verdict::Discard,
    };
    Rejection {
        error,
        verdict,
        direction,
    }
}

/// The direction of a message that failed validation, as far as its bytes
/// tell it (see [`Rejection::direction`]).
fn rejected_direction(buf: &Bytes, cfg: &DecodeConfig) -> Option<Direction> {
    let vers = word(buf, 1)?;
    if !cfg.versions.contains(vers) {
        // Nothing in a version we do not speak can be trusted.
        return None;
    }
    let proc_ = Proc(word(buf, 3)?);
    let direction_word = |w: u32| match w {
        0 => Some(Direction::Call),
        1 => Some(Direction::Reply),
        _ => None,
    };
    if vers == v2::VERSION {
        // rdma_direction, or rdma_optdir: the first word of the body.
        return match proc_ {
            Proc::MSG | Proc::NOMSG | Proc::OPTIONAL => direction_word(word(buf, 4)?),
            _ => None,
        };
    }
    let mut dec = Decoder::from_bytes(buf);
    dec.skip(16).ok()?;
    match V1Header::decode_body(&mut dec, proc_, &cfg.limits).ok()? {
        V1Body::Msg(_) => direction_word(word(buf.get(dec.position()..)?, 1)?),
        V1Body::NoMsg(c) if c.has_position_zero() => Some(Direction::Call),
        V1Body::NoMsg(c) if c.reads.is_empty() && c.reply.is_some() => Some(Direction::Reply),
        _ => None,
    }
}

/// Decodes one received RPC-over-RDMA message (transport header plus
/// whatever follows it in the receive buffer) and validates it.
///
/// On success the [`Message`] holds the typed header and the payload as a
/// zero-copy slice of `buf`. On failure the [`Rejection`] names the broken
/// rule and carries the [`Verdict`]: the complete error reply to send
/// (`ERR_VERS` with `cfg.versions`, `ERR_BADHEADER`,
/// `RDMA2_ERR_INVAL_OPTION`) or "discard".
///
/// Nothing here panics or allocates more than the input pays for,
/// whatever `buf` holds.
///
/// ```
/// use bytes::Bytes;
/// use rpcrdma_wire::{decode, DecodeConfig, Header, Verdict, VersionRange};
/// use rpcrdma_xdr::Encode;
///
/// // An RDMA_MSG with no chunks, carrying an RPC call with XID 0x2a.
/// let msg = Bytes::from(hex::decode(concat!(
///     "0000002a", "00000001", "00000020", "00000000", // xid, vers 1, credits 32, RDMA_MSG
///     "00000000", "00000000", "00000000",             // no Read list, Write list, Reply chunk
///     "0000002a", "00000000",                         // RPC XID, CALL ...
/// )).unwrap());
/// let m = decode(&msg, &DecodeConfig::default()).unwrap();
/// assert!(matches!(m.header, Header::V1(_)));
/// assert_eq!((m.header_len, m.payload.len()), (28, 8));
///
/// // The same message as Version 3: answer ERR_VERS with our range.
/// let mut v3 = msg.to_vec();
/// v3[7] = 3;
/// let rej = decode(&Bytes::from(v3), &DecodeConfig::default()).unwrap_err();
/// assert_eq!(
///     hex::encode(rej.reply_bytes().unwrap()),
///     concat!("0000002a", "00000003", "00000020", "00000004", "00000001", "00000001", "00000002"),
/// );
///
/// // A Version One-only receiver advertises 1..1.
/// let mut v2 = msg.to_vec();
/// v2[7] = 2;
/// let cfg = DecodeConfig { versions: VersionRange::V1_ONLY, ..Default::default() };
/// let rej = decode(&Bytes::from(v2), &cfg).unwrap_err();
/// assert!(matches!(rej.verdict, Verdict::Reply(r) if hex::encode(r.to_bytes()).ends_with("0000000100000001")));
/// ```
pub fn decode(buf: &Bytes, cfg: &DecodeConfig) -> Result<Message, Rejection> {
    let (header, header_len) = decode_inner(buf, cfg).map_err(|e| reject(buf, cfg, e))?;
    Ok(Message {
        header,
        header_len,
        payload: buf.slice(header_len..),
    })
}

/// Like [`decode`], taking the received bytes by value: the payload is
/// `buf` itself past the header, so no reference to the receive buffer is
/// taken or dropped (a receiver that is done with `buf` saves two atomic
/// operations per message).
///
/// ```
/// use bytes::Bytes;
/// use rpcrdma_wire::{decode, decode_owned, DecodeConfig};
///
/// let msg = Bytes::from(hex::decode(concat!(
///     "0000002a", "00000001", "00000020", "00000000",
///     "00000000", "00000000", "00000000", "0000002a", "00000000",
/// )).unwrap());
/// let cfg = DecodeConfig::default();
/// assert_eq!(decode_owned(msg.clone(), &cfg), decode(&msg, &cfg));
/// ```
pub fn decode_owned(mut buf: Bytes, cfg: &DecodeConfig) -> Result<Message, Rejection> {
    let (header, header_len) = decode_inner(&buf, cfg).map_err(|e| reject(&buf, cfg, e))?;
    bytes::Buf::advance(&mut buf, header_len);
    Ok(Message {
        header,
        header_len,
        payload: buf,
    })
}

/// The common received message, read without building a [`Header`]: an
/// `RDMA_MSG` with three empty chunk lists, in a supported version, whose
/// payload starts with the same XID (and, in Version Two, the
/// `msg_type` its `rdma_direction` names). See [`decode_plain`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PlainMsg {
    /// `rdma_xid`.
    pub xid: u32,
    /// `rdma_vers`.
    pub vers: u32,
    /// `rdma_credit`.
    pub credits: u32,
    /// Version Two's `rdma_direction`; `None` in Version One (where the
    /// RPC `msg_type` says it).
    pub direction: Option<Direction>,
    /// Length of the transport header; the payload is what follows it.
    pub header_len: usize,
}

impl PlainMsg {
    /// The header [`decode`] gives for the same bytes.
    pub fn header(&self) -> Header {
        let chunks = ChunkLists::default();
        match self.direction {
            None => Header::V1(V1Header {
                xid: self.xid,
                credits: self.credits,
                body: V1Body::Msg(chunks),
            }),
            Some(direction) => Header::V2(V2Header {
                xid: self.xid,
                credits: self.credits,
                body: V2Body::Msg { direction, chunks },
            }),
        }
    }
}

/// Reads `buf` if it is the common message (a [`PlainMsg`]): `Some`
/// exactly when [`decode`] accepts `buf` as an `RDMA_MSG` with three empty
/// chunk lists, and then `decode` gives the header [`PlainMsg::header`]
/// and the payload `buf[header_len..]`. `None` says nothing about
/// validity: [`decode`] reads (or rejects) every other message.
///
/// A receiver can take this fast path first and fall back to [`decode`]:
/// the checks are the same.
///
/// ```
/// use rpcrdma_wire::{decode_plain, DecodeConfig};
///
/// let msg = hex::decode(concat!(
///     "0000002a", "00000001", "00000020", "00000000", // xid, vers 1, credits 32, RDMA_MSG
///     "00000000", "00000000", "00000000",             // no chunks
///     "0000002a", "00000000",                         // RPC XID, CALL
/// )).unwrap();
/// let p = decode_plain(&msg, &DecodeConfig::default()).unwrap();
/// assert_eq!((p.xid, p.credits, p.direction, p.header_len), (42, 32, None, 28));
/// // Another RPC XID: not plain (decode rejects it).
/// let mut bad = msg.clone();
/// bad[31] = 7;
/// assert_eq!(decode_plain(&bad, &DecodeConfig::default()), None);
/// ```
pub fn decode_plain(buf: &[u8], cfg: &DecodeConfig) -> Option<PlainMsg> {
    let xid = word(buf, 0)?;
    let vers = word(buf, 1)?;
    if !cfg.versions.contains(vers) || word(buf, 3)? != Proc::MSG.0 {
        return None;
    }
    let (lists_at, direction) = match vers {
        v1::VERSION => (16, None),
        v2::VERSION => match word(buf, 4)? {
            0 => (20, Some(Direction::Call)),
            1 => (20, Some(Direction::Reply)),
            _ => return None,
        },
        _ => return None,
    };
    if buf.get(lists_at..lists_at + 12)? != [0u8; 12] {
        return None;
    }
    let header_len = lists_at + 12;
    // The RDMA_MSG rules (`check_msg`; no Read list, so no Position-Zero
    // chunk) and Version Two's direction against the RPC msg_type.
    let payload = buf.get(header_len..)?;
    if word(payload, 0)? != xid {
        return None;
    }
    if let Some(d) = direction {
        if word(payload, 1)? != d.value() {
            return None;
        }
    }
    Some(PlainMsg {
        xid,
        vers,
        credits: word(buf, 2)?,
        direction,
        header_len,
    })
}

/// The header and its length; the payload (what follows it) is checked
/// against the header here but cut out by the caller.
fn decode_inner(buf: &Bytes, cfg: &DecodeConfig) -> Result<(Header, usize), HeaderError> {
    decode_with(buf, cfg, true)
}

/// The header and its length as the field-by-field decoder alone reads
/// them (without [`decode_plain`]): what the fuzz checks hold the fast
/// path against.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn decode_fieldwise(
    buf: &Bytes,
    cfg: &DecodeConfig,
) -> Result<(Header, usize), HeaderError> {
    decode_with(buf, cfg, false)
}

/// [`decode_inner`], with the one-piece reading of plain `RDMA_MSG`
/// headers ([`decode_plain`]) or without it (the tests compare both).
fn decode_with(
    buf: &Bytes,
    cfg: &DecodeConfig,
    plain: bool,
) -> Result<(Header, usize), HeaderError> {
    if plain {
        if let Some(p) = decode_plain(buf, cfg) {
            return Ok((p.header(), p.header_len));
        }
    }
    let (Some(xid), Some(vers)) = (word(buf, 0), word(buf, 1)) else {
        return Err(HeaderError::TooShort { len: buf.len() });
    };
    if !cfg.versions.contains(vers) {
        // Never answer an error with an error: an RDMA_ERROR (whose type
        // number is the same in every version) in a version we cannot
        // decode is dropped.
        if word(buf, 3) == Some(Proc::ERROR.0) {
            return Err(HeaderError::UndecodableError(
                ErrorMessageDefect::UnsupportedVersion(vers),
            ));
        }
        return Err(HeaderError::UnsupportedVersion {
            vers,
            low: cfg.versions.low(),
            high: cfg.versions.high(),
        });
    }
    let mut dec = Decoder::from_bytes(buf);
    dec.skip(8).map_err(HeaderError::xdr("rdma_vers"))?;
    let credits = dec.get_u32().map_err(HeaderError::xdr("rdma_credit"))?;
    let proc_ = Proc(dec.get_u32().map_err(HeaderError::xdr("rdma_proc"))?);
    let header = if vers == v1::VERSION {
        let body = V1Header::decode_body(&mut dec, proc_, &cfg.limits)?;
        Header::V1(V1Header { xid, credits, body })
    } else {
        let body = V2Header::decode_body(&mut dec, buf, proc_, &cfg.limits)?;
        Header::V2(V2Header { xid, credits, body })
    };
    let header_len = dec.position();
    let payload = buf.get(header_len..).unwrap_or_default();

    match &header {
        Header::V1(h) => match &h.body {
            V1Body::Msg(c) => check_msg(c, payload, xid, "RDMA_MSG", "RDMA_NOMSG")?,
            V1Body::NoMsg(c) => check_nomsg(c, payload, "RDMA_NOMSG")?,
            // Bytes after a complete error body are pad (W6): the error
            // still ends its RPC; they stay in `payload`.
            V1Body::Error(_) => {}
        },
        Header::V2(h) => match &h.body {
            V2Body::Msg { direction, chunks } => {
                check_msg(chunks, payload, xid, "RDMA2_MSG", "RDMA2_NOMSG")?;
                let Some(msg_type) = word(payload, 1) else {
                    return Err(HeaderError::PayloadTooShort {
                        len: payload.len(),
                        what: "msg_type",
                    });
                };
                //= draft-cel-01#section-4.2.2
                //# o When the rdma_proc field has the value RDMA2_MSG or
                //# RDMA2_NOMSG, the value of the rdma_direction field MUST be
                //# the same as the value of the associated RPC message's
                //# msg_type field.
                if msg_type != direction.value() {
                    return Err(HeaderError::DirectionMismatch {
                        field: "rdma_direction",
                        direction: direction.value(),
                        msg_type,
                    });
                }
            }
            V2Body::NoMsg { direction, chunks } => {
                check_nomsg(chunks, payload, "RDMA2_NOMSG")?;
                // The direction says which chunk holds the message: a call
                // with only a Reply chunk (or a reply with only a
                // Position-Zero Read chunk) carries no RPC message at all.
                let (holds, needs) = match direction {
                    Direction::Call => (chunks.has_position_zero(), "a Position-Zero Read chunk"),
                    Direction::Reply => (chunks.reply.is_some(), "the Reply chunk"),
                };
                if !holds {
                    return Err(HeaderError::NoMsgWrongChunk {
                        proc_name: "RDMA2_NOMSG",
                        direction: direction.name(),
                        needs,
                    });
                }
            }
            V2Body::Error(_) => {}
            //= draft-cel-01#section-4.2.1
            //# o When the rdma_proc field has the value RDMA2_OPTIONAL, all,
            //# part of, or no RPC Payload Stream MAY follow the Transport
            //# header Stream in the Send buffer.
            V2Body::Optional(o) => {
                if !cfg.options.supports(o.opttype) {
                    return Err(HeaderError::UnsupportedOption {
                        opttype: o.opttype.0,
                    });
                }
            }
        },
    }
    Ok((header, header_len))
}

/// `RDMA_MSG` rules: no Position-Zero Read chunk, a payload, matching XIDs.
fn check_msg(
    chunks: &ChunkLists,
    payload: &[u8],
    xid: u32,
    proc_name: &'static str,
    nomsg_name: &'static str,
) -> Result<(), HeaderError> {
    if chunks.has_position_zero() {
        return Err(HeaderError::PositionZeroWithPayload {
            proc_name,
            nomsg_name,
        });
    }
    //= draft-cel-01#section-4.2.1
    //# o When the rdma_proc field has the value RDMA2_MSG, an RPC Payload
    //# Stream MUST follow the Transport Header Stream in the Send buffer.
    if payload.is_empty() {
        return Err(HeaderError::MissingPayload { proc_name });
    }
    let Some(rpc_xid) = word(payload, 0) else {
        return Err(HeaderError::PayloadTooShort {
            len: payload.len(),
            what: "XID",
        });
    };
    //= rfc5666bis-04#section-5.2.1
    //# This XID MUST be the same as the XID in the RPC message.
    if rpc_xid != xid {
        return Err(HeaderError::XidMismatch {
            rdma_xid: xid,
            rpc_xid,
        });
    }
    Ok(())
}

/// `RDMA_NOMSG` rules: somewhere to hold the Payload stream, nothing after
/// the header.
fn check_nomsg(
    chunks: &ChunkLists,
    payload: &[u8],
    proc_name: &'static str,
) -> Result<(), HeaderError> {
    //= rfc5666bis-04#section-5.2.4
    //# Though any of these MAY be marked as not present, one MUST be present
    //# and MUST hold the Payload stream for this RPC-over-RDMA message.
    if !chunks.has_position_zero() && chunks.reply.is_none() {
        return Err(HeaderError::NoMsgWithoutChunks { proc_name });
    }
    if !payload.is_empty() {
        return Err(HeaderError::UnexpectedPayload {
            proc_name,
            len: payload.len(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Bytes that are mostly a plain `RDMA_MSG` (either version) and its
    /// RPC message: each field usually right, sometimes another value,
    /// cut at any length.
    fn near_plain() -> impl Strategy<Value = Vec<u8>> {
        let usually = |usual: u32, other: u32| prop_oneof![6 => Just(usual), 1 => Just(other), 1 => any::<u32>()];
        let fields = (
            usually(0, 1), // rdma_proc
            usually(0, 1), // rdma_direction (Version Two)
            usually(0, 1), // Read list
            usually(0, 1), // Write list
            usually(0, 1), // Reply chunk
            usually(7, 8), // RPC XID
            usually(0, 1), // RPC msg_type
        );
        (any::<bool>(), fields, 8usize..48).prop_map(|(v2, f, cut)| {
            let (proc_, direction, reads, writes, reply, rpc_xid, msg_type) = f;
            let mut words = vec![7, if v2 { 2 } else { 1 }, 32, proc_];
            if v2 {
                words.push(direction);
            }
            words.extend([reads, writes, reply, rpc_xid, msg_type, 2]);
            let mut v = hex_words(&words);
            v.truncate(cut);
            v
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

        /// The one-piece reading of plain messages gives exactly what the
        /// field-by-field decoder gives, for any bytes and any versions,
        /// and it takes every message that decoder reads as plain.
        #[test]
        fn plain_messages_read_as_the_decoder_reads_them(bytes in near_plain(), v in 0usize..3) {
            let versions = [VersionRange::V1_AND_V2, VersionRange::V1_ONLY, VersionRange::V2_ONLY][v];
            let cfg = DecodeConfig { versions, ..DecodeConfig::default() };
            let buf = Bytes::from(bytes);
            let fieldwise = decode_with(&buf, &cfg, false);
            prop_assert_eq!(&decode_with(&buf, &cfg, true), &fieldwise);
            let plain_by_decoder = matches!(
                &fieldwise,
                Ok((h, _)) if h.proc_() == Proc::MSG && h.chunks().is_some_and(ChunkLists::is_empty)
            );
            let plain = decode_plain(&buf, &cfg);
            prop_assert_eq!(plain.is_some(), plain_by_decoder);
            if let (Some(p), Ok((h, n))) = (plain, fieldwise) {
                prop_assert_eq!((p.header(), p.header_len), (h, n));
            }
        }
    }

    #[test]
    fn plain_messages_take_the_one_piece_path() {
        let cfg = DecodeConfig::default();
        let plain = |words: &[u32]| decode_plain(&hex_words(words), &cfg);
        assert_eq!(
            plain(&[9, 1, 5, 0, 0, 0, 0, 9, 0]).map(|p| p.header_len),
            Some(28)
        );
        assert_eq!(
            plain(&[9, 2, 5, 0, 1, 0, 0, 0, 9, 1]).map(|p| (p.header_len, p.direction)),
            Some((32, Some(Direction::Reply)))
        );
        // A chunk list, RDMA_NOMSG, a bad direction, another RPC XID, a
        // direction that is not the msg_type, no payload, an unsupported
        // version: the field-by-field path.
        assert_eq!(plain(&[9, 1, 5, 0, 1, 0, 0, 9, 0]), None);
        assert_eq!(plain(&[9, 1, 5, 1, 0, 0, 1]), None);
        assert_eq!(plain(&[9, 2, 5, 0, 2, 0, 0, 0, 9, 2]), None);
        assert_eq!(plain(&[9, 1, 5, 0, 0, 0, 0, 8, 0]), None);
        assert_eq!(plain(&[9, 2, 5, 0, 1, 0, 0, 0, 9, 0]), None);
        assert_eq!(plain(&[9, 1, 5, 0, 0, 0, 0]), None);
        assert_eq!(plain(&[9, 3, 5, 0, 0, 0, 0, 9, 0]), None);
    }

    fn hex_words(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_be_bytes()).collect()
    }
}
