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
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use rpcrdma_nfs3::exports::{Entry, ExportTable};
use rpcrdma_nfs3::fs::{Caller, ClientAccess, Export, FileHandle, NfsError, Squash};
use rpcrdma_oncrpc::{Marshal, Unmarshal};
use rpcrdma_xdr::{Decoder, Encoder, XdrError};

use crate::ops;
use crate::proto::nfs4 as p;
use crate::pseudo::Pseudo;
use crate::shared::Core;
use crate::state::{ChannelAttrs, ClientId, ConnId, SessionId, Special, StateError, StateId};

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

/// The state of one COMPOUND as it runs.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    pub(crate) core: &'a Core,
    /// The exports in force when the COMPOUND began.
    pub(crate) table: Arc<ExportTable>,
    /// Their pseudo file system (`None`: one export is the root).
    pub(crate) pseudo: Option<Arc<Pseudo>>,
    /// The client's address (the connection's peer).
    pub(crate) peer: Option<IpAddr>,
    /// The call's AUTH_SYS ids (`None`: AUTH_NONE or another flavor).
    pub(crate) cred: Option<(u32, u32, Vec<u32>)>,
    /// The export of the current handle (until a handle is set: the
    /// first export, with `caller` anonymous and read-only; no operation
    /// uses them without a current handle).
    pub(crate) export: Arc<Export>,
    /// Who the call acts as on `export`, by the client's options there.
    pub(crate) caller: Caller,
    /// `export` and `caller` of the saved handle.
    pub(crate) saved: Option<(Arc<Export>, Caller)>,
    /// The AUTH_SYS uid of the call (`u32::MAX` for other flavors).
    pub(crate) principal: u32,
    pub(crate) conn: ConnId,
    pub(crate) now: Instant,
    /// The session, slot and whether to cache, after SEQUENCE.
    pub(crate) session: Option<(SessionId, u32, bool)>,
    pub(crate) client: Option<ClientId>,
    pub(crate) fore: ChannelAttrs,
    pub(crate) cfh: Option<FileHandle>,
    pub(crate) sfh: Option<FileHandle>,
    pub(crate) cstateid: Option<StateId>,
    pub(crate) sstateid: Option<StateId>,
}

/// What an operation answers: its result and its status.
pub(crate) type Done = (p::NfsResop4, p::Nfsstat4);

impl Ctx<'_> {
    /// The current file handle, or `NFS4ERR_NOFILEHANDLE`.
    pub(crate) fn fh(&self) -> Result<FileHandle, p::Nfsstat4> {
        self.cfh.clone().ok_or(p::Nfsstat4::Nfs4errNofilehandle)
    }

    /// The client of the session, or `NFS4ERR_OP_NOT_IN_SESSION`.
    pub(crate) fn client(&self) -> Result<ClientId, p::Nfsstat4> {
        self.client.ok_or(p::Nfsstat4::Nfs4errOpNotInSession)
    }

    /// A stateid from the wire, the current stateid substituted (RFC
    /// 8881 §16.2.3.1.2).
    pub(crate) fn stateid(&self, s: &p::Stateid4) -> Result<StateId, p::Nfsstat4> {
        let id = StateId {
            seqid: s.seqid,
            other: s.other,
        };
        if id.special() == Special::Current {
            return self.cstateid.ok_or(p::Nfsstat4::Nfs4errBadStateid);
        }
        Ok(id)
    }

    /// Sets the current stateid (operations that return one).
    pub(crate) fn set_stateid(&mut self, s: StateId) {
        self.cstateid = Some(s);
    }

    /// Whether the export refuses changes to this client (`ro`, or the
    /// export read-only): `NFS4ERR_ROFS`.
    pub(crate) fn writable(&self) -> Result<(), p::Nfsstat4> {
        if self.caller.read_only || self.export.config().read_only {
            Err(p::Nfsstat4::Nfs4errRofs)
        } else {
            Ok(())
        }
    }

    /// The pseudo directory a handle names, if it is one.
    pub(crate) fn pseudo_dir(&self, fh: &FileHandle) -> Option<usize> {
        self.pseudo.as_ref().and_then(|ps| ps.find(fh))
    }

    /// Makes `entry` the export of the current handle, if it admits the
    /// client (`NFS4ERR_ACCESS` and a log line otherwise).
    pub(crate) fn enter_entry(&mut self, entry: &Entry, what: &str) -> Result<(), p::Nfsstat4> {
        let Some(access) = entry.access(self.peer) else {
            self.core.exports.refused(self.peer, entry, what);
            return Err(p::Nfsstat4::Nfs4errAccess);
        };
        let export = entry.export().clone();
        self.caller = export.caller_with(
            &access,
            self.cred.as_ref().map(|(u, g, gs)| (*u, *g, gs.as_slice())),
        );
        self.export = export;
        Ok(())
    }

    /// Makes the export of a handle of ours the current one, if it
    /// admits the client: `NFS4ERR_BADHANDLE` if the handle is not ours,
    /// `NFS4ERR_STALE` if its export is not served any more,
    /// `NFS4ERR_ACCESS` if the client may not use it.
    pub(crate) fn enter(&mut self, fh: &FileHandle, what: &str) -> Result<(), p::Nfsstat4> {
        let table = self.table.clone();
        let entry = table.by_handle(fh).map_err(from_fs)?;
        self.enter_entry(entry, what)
    }

    /// The placeholder identity before any handle: anonymous, read-only.
    fn nobody(export: &Export) -> Caller {
        let anon = export.default_access().anon;
        export.caller_with(
            &ClientAccess {
                read_only: true,
                squash: Squash::All,
                anon,
            },
            None,
        )
    }
}

/// The wire stateid of ours.
pub(crate) fn wire(s: StateId) -> p::Stateid4 {
    p::Stateid4 {
        seqid: s.seqid,
        other: s.other,
    }
}

/// An NFSv3 export error as an NFSv4 status (the numbers are shared).
pub(crate) fn from_fs(e: NfsError) -> p::Nfsstat4 {
    match e {
        NfsError::NotSync => p::Nfsstat4::Nfs4errInval,
        NfsError::Acces => p::Nfsstat4::Nfs4errAccess,
        other => {
            p::Nfsstat4::from_value(other.code() as i32).unwrap_or(p::Nfsstat4::Nfs4errServerfault)
        }
    }
}

/// A state error as an NFSv4 status.
pub(crate) fn from_state(e: StateError) -> p::Nfsstat4 {
    p::Nfsstat4::from_value(e.code() as i32).unwrap_or(p::Nfsstat4::Nfs4errServerfault)
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
