//! COMPOUND (RFC 8881 §16.2, §18.46.3): decoding the operations one by
//! one, and running them in order against the state and the export.
//!
//! The arguments are decoded lazily enough that a bad operation only ends
//! the COMPOUND where it stands: an unknown operation number is
//! `NFS4ERR_OP_ILLEGAL` (with `OP_ILLEGAL`'s result), arguments that do not
//! decode are `NFS4ERR_BADXDR`, and the operations after them are not read.
//! At most [`MAX_DECODED_OPS`] operations are decoded; a COMPOUND with more
//! than the session allows gets `NFS4ERR_TOO_MANY_OPS` from its SEQUENCE.
//!
//! The rules of a session: SEQUENCE comes first; EXCHANGE_ID,
//! CREATE_SESSION, DESTROY_SESSION, BIND_CONN_TO_SESSION and
//! DESTROY_CLIENTID may come without it, but then alone
//! (`NFS4ERR_NOT_ONLY_OP`); any other operation without a SEQUENCE before
//! it is `NFS4ERR_OP_NOT_IN_SESSION`, and a SEQUENCE that is not first is
//! `NFS4ERR_SEQUENCE_POS`. A retransmission on a slot is answered with the
//! cached reply and nothing runs; when the COMPOUND ends its reply is kept
//! in the slot if the client asked (`sa_cachethis`) and it fits the
//! session's `ca_maxresponsesize_cached` (else `NFS4ERR_REP_TOO_BIG_TO_CACHE`).

use std::net::IpAddr;
use std::time::Instant;

use bytes::Bytes;
use rpcrdma_oncrpc::{Marshal, Unmarshal};
use rpcrdma_xdr::{Decoder, Encoder, XdrError};

use crate::ctx::Ctx;
use crate::ops;
use crate::proto::nfs4 as p;
use crate::shared::Core;
use crate::state::{ChannelAttrs, ConnId};

/// Most operations decoded from one COMPOUND (beyond them: no session
/// allows that many; the rest is skipped and SEQUENCE refuses it).
pub const MAX_DECODED_OPS: usize = 256;

/// Longest COMPOUND tag accepted (it is echoed in the reply).
const MAX_TAG: u32 = 1024;

/// One operation as decoded.
#[derive(Debug, Clone)]
pub enum Op {
    /// Decoded.
    Arg(p::NfsArgop4),
    /// Not an operation number (`NFS4ERR_OP_ILLEGAL`).
    Illegal,
    /// Its arguments did not decode (`NFS4ERR_BADXDR`).
    BadXdr(u32),
}

/// COMPOUND's arguments, decoded operation by operation.
#[derive(Debug, Clone)]
pub struct CompoundArgs {
    /// The tag.
    pub tag: Bytes,
    /// The minor version.
    pub minorversion: u32,
    /// The number of operations the client said it sent.
    pub count: u32,
    /// The operations decoded (up to the first that did not decode).
    pub ops: Vec<Op>,
}

/// Whether `n` is an operation number of the protocol.
fn known_op(n: u32) -> bool {
    (3..=75).contains(&n)
}

impl Unmarshal for CompoundArgs {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        let tag = dec.get_opaque_bytes(MAX_TAG)?;
        let minorversion = dec.get_u32()?;
        let count = dec.get_u32()?;
        let mut ops = Vec::with_capacity((count as usize).min(16));
        for _ in 0..count {
            if ops.len() == MAX_DECODED_OPS {
                break;
            }
            let Ok(n) = dec.peek_u32() else {
                ops.push(Op::BadXdr(0));
                break;
            };
            if !known_op(n) {
                ops.push(Op::Illegal);
                break;
            }
            match p::NfsArgop4::unmarshal(dec) {
                Ok(a) => ops.push(Op::Arg(a)),
                Err(_) => {
                    ops.push(Op::BadXdr(n));
                    break;
                }
            }
        }
        // Whatever was not decoded is not looked at.
        let _ = dec.take_rest_bytes();
        Ok(Self {
            tag,
            minorversion,
            count,
            ops,
        })
    }
}

impl Marshal for CompoundArgs {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        enc.put_opaque(&self.tag);
        enc.put_u32(self.minorversion);
        let ops: Vec<&p::NfsArgop4> = self
            .ops
            .iter()
            .filter_map(|o| match o {
                Op::Arg(a) => Some(a),
                _ => None,
            })
            .collect();
        enc.put_u32(ops.len() as u32);
        for o in ops {
            o.marshal(enc);
        }
    }
}

/// Operations that need no session when they are alone.
fn sessionless(a: &p::NfsArgop4) -> bool {
    matches!(
        a,
        p::NfsArgop4::OpExchangeId(_)
            | p::NfsArgop4::OpCreateSession(_)
            | p::NfsArgop4::OpDestroySession(_)
            | p::NfsArgop4::OpBindConnToSession(_)
            | p::NfsArgop4::OpDestroyClientid(_)
    )
}

/// The result of an operation that failed before it ran, for its number.
fn failed(op: &Op, status: p::Nfsstat4) -> p::NfsResop4 {
    match op {
        Op::Arg(a) => ops::error_result(a, status),
        Op::Illegal => p::NfsResop4::OpIllegal(p::Illegal4res {
            status: p::Nfsstat4::Nfs4errOpIllegal,
        }),
        Op::BadXdr(n) => ops::error_result_for(*n, status),
    }
}

/// Runs a COMPOUND (on a blocking thread: the export does file-system
/// I/O).
pub(crate) fn run(
    core: &Core,
    cred: Option<(u32, u32, Vec<u32>)>,
    peer: Option<IpAddr>,
    principal: u32,
    conn: ConnId,
    args: CompoundArgs,
) -> p::Compound4res {
    let now = Instant::now();
    let mut res = p::Compound4res {
        status: p::Nfsstat4::Nfs4Ok,
        tag: args.tag.clone(),
        resarray: Vec::new(),
    };
    if !core.minors.contains(&args.minorversion) {
        res.status = p::Nfsstat4::Nfs4errMinorVersMismatch;
        return res;
    }
    let table = core.exports.table();
    let pseudo = core.pseudo_of(&table);
    let export = table.entries()[0].export().clone();
    let caller = Ctx::nobody(&export);
    let mut cx = Ctx {
        core,
        table,
        pseudo,
        peer,
        cred,
        export,
        caller,
        saved: None,
        principal,
        conn,
        now,
        session: None,
        client: None,
        fore: ChannelAttrs::default(),
        cfh: None,
        sfh: None,
        cstateid: None,
        sstateid: None,
    };
    let alone = args.count == 1;
    for (i, op) in args.ops.iter().enumerate() {
        let a = match op {
            Op::Arg(a) => a,
            Op::Illegal => {
                res.resarray.push(failed(op, p::Nfsstat4::Nfs4errOpIllegal));
                res.status = p::Nfsstat4::Nfs4errOpIllegal;
                break;
            }
            Op::BadXdr(_) => {
                res.resarray.push(failed(op, p::Nfsstat4::Nfs4errBadxdr));
                res.status = p::Nfsstat4::Nfs4errBadxdr;
                break;
            }
        };
        // Where the operation may stand.
        let place = if i == 0 {
            match a {
                p::NfsArgop4::OpSequence(_) => Ok(()),
                a if sessionless(a) && alone => Ok(()),
                a if sessionless(a) => Err(p::Nfsstat4::Nfs4errNotOnlyOp),
                _ => Err(p::Nfsstat4::Nfs4errOpNotInSession),
            }
        } else if matches!(a, p::NfsArgop4::OpSequence(_)) {
            Err(p::Nfsstat4::Nfs4errSequencePos)
        } else if cx.session.is_none() {
            Err(p::Nfsstat4::Nfs4errOpNotInSession)
        } else {
            Ok(())
        };
        if let Err(status) = place {
            res.resarray.push(failed(op, status));
            res.status = status;
            break;
        }
        if let p::NfsArgop4::OpSequence(sa) = a {
            match ops::session::sequence(&mut cx, sa, args.count) {
                Ok(ops::session::Seq::Replay(cached)) => return cached.res,
                Ok(ops::session::Seq::New(r)) => {
                    res.resarray.push(r);
                    continue;
                }
                Err(status) => {
                    res.resarray
                        .push(p::NfsResop4::OpSequence(p::Sequence4res::Default(status)));
                    res.status = status;
                    return res;
                }
            }
        }
        let (r, status) = ops::dispatch(&mut cx, a);
        tracing::trace!(op = ops::opnum_of(&r), ?status, "NFSv4 operation");
        res.resarray.push(r);
        if status != p::Nfsstat4::Nfs4Ok {
            res.status = status;
            break;
        }
    }
    // The slot: keep the reply if asked and it fits.
    if let Some((sid, slot, cache)) = cx.session {
        let keep = if cache {
            let len = reply_len(&res);
            if len > cx.fore.max_response_cached as usize {
                // RFC 8881 §18.46.3: the last operation's status says so.
                if let Some(last) = res.resarray.pop() {
                    let n = ops::opnum_of(&last);
                    res.resarray.push(ops::error_result_for(
                        n,
                        p::Nfsstat4::Nfs4errRepTooBigToCache,
                    ));
                }
                res.status = p::Nfsstat4::Nfs4errRepTooBigToCache;
                None
            } else {
                Some(crate::shared::Cached {
                    res: res.clone(),
                    len,
                })
            }
        } else {
            None
        };
        core.lock().finish(&sid, slot, keep);
    }
    res
}

/// The encoded length of a reply (DDP items counted in full).
pub(crate) fn reply_len(r: &p::Compound4res) -> usize {
    let mut pe = rpcrdma_xdr::PayloadEncoder::new();
    r.marshal(&mut pe.encoder());
    pe.finish().stream_len()
}
