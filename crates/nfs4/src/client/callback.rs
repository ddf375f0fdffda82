//! The client's side of the backchannel (RFC 8881 §2.10.6, §20), sans-IO:
//! CB_COMPOUND decoded operation by operation, checked against the back
//! channel attributes the session negotiated, sequenced on the back
//! channel's slots with their reply cache, and answered; what the server
//! asked (recall a delegation, return some, a lock may be free) comes out
//! as [`CbEvent`]s for the driver to act on.
//!
//! The checks, in RFC 8881's order (§18.46.3 and §20.9.3, applied to the
//! back channel): a minor version other than the session's is
//! `NFS4ERR_MINOR_VERS_MISMATCH` with no results; an operation number that
//! is not one `NFS4ERR_OP_ILLEGAL`; arguments that do not decode
//! `NFS4ERR_BADXDR`; a first operation that is not CB_SEQUENCE
//! `NFS4ERR_OP_NOT_IN_SESSION`, a later CB_SEQUENCE
//! `NFS4ERR_SEQUENCE_POS`; then CB_SEQUENCE itself: an unknown session
//! `NFS4ERR_BADSESSION`, more operations than `ca_maxoperations`
//! `NFS4ERR_TOO_MANY_OPS`, a call larger than `ca_maxrequestsize`
//! `NFS4ERR_REQ_TOO_BIG`, a slot beyond `ca_maxrequests`
//! `NFS4ERR_BADSLOT`, the slot's last sequence id again its cached reply
//! (or `NFS4ERR_RETRY_UNCACHED_REP`), any id but the next
//! `NFS4ERR_SEQ_MISORDERED`. A reply larger than `ca_maxresponsesize` is
//! `NFS4ERR_REP_TOO_BIG` (`NFS4ERR_REP_TOO_BIG_TO_CACHE` beyond
//! `ca_maxresponsesize_cached` when caching was asked).

use bytes::Bytes;
use rpcrdma_oncrpc::{Marshal, Unmarshal};
use rpcrdma_xdr::{Decoder, Encoder, XdrError};

use super::error::Status;
use crate::proto::nfs4 as p;

/// Most callback operations decoded from one CB_COMPOUND.
pub const MAX_CB_OPS: usize = 64;

/// Longest tag accepted (echoed in the reply).
const MAX_TAG: u32 = 1024;

/// `OP_CB_ILLEGAL`.
pub const OP_CB_ILLEGAL: u32 = 10044;

/// One callback operation as decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum CbOp {
    /// Decoded.
    Arg(p::NfsCbArgop4),
    /// Not a callback operation number.
    Illegal(u32),
    /// Its arguments did not decode.
    BadXdr(u32),
}

/// CB_COMPOUND's arguments, decoded operation by operation (RFC 8881
/// §20.2), with the size of the encoded arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct CbCompoundArgs {
    /// The tag.
    pub tag: Bytes,
    /// The minor version.
    pub minorversion: u32,
    /// `callback_ident` (ignored in NFSv4.1).
    pub callback_ident: u32,
    /// The number of operations the server said it sent.
    pub count: u32,
    /// The operations decoded, up to the first that did not decode.
    pub ops: Vec<CbOp>,
    /// Bytes of the encoded arguments.
    pub len: usize,
}

fn known_cb_op(n: u32) -> bool {
    (3..=15).contains(&n)
}

impl Unmarshal for CbCompoundArgs {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        let start = dec.position();
        let tag = dec.get_opaque_bytes(MAX_TAG)?;
        let minorversion = dec.get_u32()?;
        let callback_ident = dec.get_u32()?;
        let count = dec.get_u32()?;
        let mut ops = Vec::with_capacity((count as usize).min(8));
        for _ in 0..count {
            if ops.len() == MAX_CB_OPS {
                break;
            }
            let Ok(n) = dec.peek_u32() else {
                ops.push(CbOp::BadXdr(0));
                break;
            };
            if !known_cb_op(n) {
                ops.push(CbOp::Illegal(n));
                break;
            }
            match p::NfsCbArgop4::unmarshal(dec) {
                Ok(a) => ops.push(CbOp::Arg(a)),
                Err(_) => {
                    ops.push(CbOp::BadXdr(n));
                    break;
                }
            }
        }
        let _ = dec.take_rest_bytes();
        Ok(Self {
            tag,
            minorversion,
            callback_ident,
            count,
            ops,
            len: dec.position() - start,
        })
    }
}

impl Marshal for CbCompoundArgs {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        enc.put_opaque(&self.tag);
        enc.put_u32(self.minorversion);
        enc.put_u32(self.callback_ident);
        let ops: Vec<&p::NfsCbArgop4> = self
            .ops
            .iter()
            .filter_map(|o| match o {
                CbOp::Arg(a) => Some(a),
                _ => None,
            })
            .collect();
        enc.put_u32(ops.len() as u32);
        for o in ops {
            o.marshal(enc);
        }
    }
}

/// What the server asked of the client, for the driver to do after the
/// answer went back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CbEvent {
    /// CB_RECALL: return this delegation (after flushing cached writes).
    Recall {
        /// The delegation.
        stateid: p::Stateid4,
        /// Its file.
        fh: Bytes,
        /// Whether the file is about to be truncated to zero.
        truncate: bool,
    },
    /// CB_RECALL_ANY: keep at most this many delegations.
    RecallAny {
        /// Objects to keep.
        keep: u32,
        /// The types (`RCA4_TYPE_MASK_*`).
        mask: Vec<u32>,
    },
    /// CB_NOTIFY_LOCK: a lock this owner waited for may be free.
    NotifyLock {
        /// The file.
        fh: Bytes,
        /// The lock owner.
        owner: Bytes,
    },
    /// CB_NOTIFY: a directory changed.
    Notify {
        /// The directory delegation.
        stateid: p::Stateid4,
        /// The directory.
        fh: Bytes,
    },
    /// CB_RECALL_SLOT: use fewer fore channel slots.
    RecallSlot {
        /// The highest slot id to use.
        target: u32,
    },
}

#[derive(Debug, Clone, Default)]
struct CbSlot {
    seqid: u32,
    /// The last reply, if the server asked for it to be kept.
    cached: Option<p::CbCompound4res>,
}

/// The back channel of the client's current session.
#[derive(Debug, Clone, Default)]
pub struct BackChannel {
    session: Option<[u8; 16]>,
    minor: u32,
    attrs: Option<p::ChannelAttrs4>,
    slots: Vec<CbSlot>,
}

/// The size of an RPC reply header with an `AUTH_NONE` verifier.
pub const REPLY_HEADER: usize = 24;

impl BackChannel {
    /// No session yet: every CB_COMPOUND is `NFS4ERR_BADSESSION`.
    pub fn new() -> Self {
        Self::default()
    }

    /// The session the callbacks belong to now, its minor version and its
    /// negotiated back channel (a new session starts its slots afresh).
    pub fn set_session(&mut self, session: [u8; 16], minor: u32, attrs: p::ChannelAttrs4) {
        let n = attrs.ca_maxrequests.clamp(1, 1024) as usize;
        self.session = Some(session);
        self.minor = minor;
        self.attrs = Some(attrs);
        self.slots = vec![CbSlot::default(); n];
    }

    /// The current session.
    pub fn session(&self) -> Option<[u8; 16]> {
        self.session
    }

    /// Answers a CB_COMPOUND whose call (RPC header included) was
    /// `call_len` bytes; the events are what the driver does next.
    pub fn handle(
        &mut self,
        args: &CbCompoundArgs,
        call_len: usize,
    ) -> (p::CbCompound4res, Vec<CbEvent>) {
        let mut res = p::CbCompound4res {
            status: Status::Nfs4Ok,
            tag: args.tag.clone(),
            resarray: Vec::new(),
        };
        let mut events = Vec::new();
        let minor_ok = match self.session {
            Some(_) => args.minorversion == self.minor,
            None => args.minorversion >= 1,
        };
        if !minor_ok {
            res.status = Status::Nfs4errMinorVersMismatch;
            return (res, events);
        }
        let mut cache: Option<(usize, bool)> = None;
        for (i, op) in args.ops.iter().enumerate() {
            let a = match op {
                CbOp::Arg(a) => a,
                CbOp::Illegal(_) => {
                    res.resarray
                        .push(p::NfsCbResop4::OpCbIllegal(p::CbIllegal4res {
                            status: Status::Nfs4errOpIllegal,
                        }));
                    res.status = Status::Nfs4errOpIllegal;
                    break;
                }
                CbOp::BadXdr(n) => {
                    res.resarray.push(error_result(*n, Status::Nfs4errBadxdr));
                    res.status = Status::Nfs4errBadxdr;
                    break;
                }
            };
            let status = match (i, a) {
                (0, p::NfsCbArgop4::OpCbSequence(s)) => match self.sequence(s, args, call_len) {
                    Ok((r, keep)) => {
                        res.resarray.push(p::NfsCbResop4::OpCbSequence(r));
                        cache = Some((s.csa_slotid as usize, keep));
                        Status::Nfs4Ok
                    }
                    Err(Replay::Cached(c)) => return (c, Vec::new()),
                    Err(Replay::Refused(st)) => {
                        res.resarray
                            .push(p::NfsCbResop4::OpCbSequence(p::CbSequence4res::Default(st)));
                        st
                    }
                },
                (0, a) => {
                    let st = Status::Nfs4errOpNotInSession;
                    res.resarray.push(error_result(cb_opnum(a), st));
                    st
                }
                (_, p::NfsCbArgop4::OpCbSequence(_)) => {
                    let st = Status::Nfs4errSequencePos;
                    res.resarray.push(error_result(11, st));
                    st
                }
                (_, a) => {
                    let (r, st) = run_op(a, &mut events);
                    res.resarray.push(r);
                    st
                }
            };
            if status != Status::Nfs4Ok {
                res.status = status;
                break;
            }
        }
        // The reply's size against the negotiated limits.
        if let (Some((slot, keep)), Some(attrs)) = (cache, &self.attrs) {
            let len = REPLY_HEADER + encoded_len(&res);
            let limit = if keep {
                attrs
                    .ca_maxresponsesize_cached
                    .min(attrs.ca_maxresponsesize)
            } else {
                attrs.ca_maxresponsesize
            };
            if len > limit as usize {
                let st = if len > attrs.ca_maxresponsesize as usize {
                    Status::Nfs4errRepTooBig
                } else {
                    Status::Nfs4errRepTooBigToCache
                };
                if let Some(last) = res.resarray.pop() {
                    res.resarray.push(error_result(cb_resnum(&last), st));
                }
                res.status = st;
                events.clear();
            }
            if let Some(s) = self.slots.get_mut(slot) {
                s.cached = keep.then(|| res.clone());
            }
        }
        (res, events)
    }

    /// CB_SEQUENCE (RFC 8881 §20.9.3): the result and whether to keep the
    /// reply, or the cached reply of a retransmission, or the refusal.
    fn sequence(
        &mut self,
        s: &p::CbSequence4args,
        args: &CbCompoundArgs,
        call_len: usize,
    ) -> Result<(p::CbSequence4res, bool), Replay> {
        let (Some(session), Some(attrs)) = (self.session, self.attrs.as_ref()) else {
            return Err(Replay::Refused(Status::Nfs4errBadsession));
        };
        if s.csa_sessionid != session {
            return Err(Replay::Refused(Status::Nfs4errBadsession));
        }
        if args.count > attrs.ca_maxoperations {
            return Err(Replay::Refused(Status::Nfs4errTooManyOps));
        }
        if call_len > attrs.ca_maxrequestsize as usize {
            return Err(Replay::Refused(Status::Nfs4errReqTooBig));
        }
        let n = self.slots.len() as u32;
        let Some(slot) = self.slots.get_mut(s.csa_slotid as usize) else {
            return Err(Replay::Refused(Status::Nfs4errBadslot));
        };
        if s.csa_sequenceid == slot.seqid && slot.seqid != 0 {
            return Err(match &slot.cached {
                Some(c) => Replay::Cached(c.clone()),
                None => Replay::Refused(Status::Nfs4errRetryUncachedRep),
            });
        }
        if s.csa_sequenceid != slot.seqid.wrapping_add(1) {
            return Err(Replay::Refused(Status::Nfs4errSeqMisordered));
        }
        slot.seqid = s.csa_sequenceid;
        slot.cached = None;
        Ok((
            p::CbSequence4res::Nfs4Ok(p::CbSequence4resok {
                csr_sessionid: session,
                csr_sequenceid: s.csa_sequenceid,
                csr_slotid: s.csa_slotid,
                csr_highest_slotid: n - 1,
                csr_target_highest_slotid: n - 1,
            }),
            s.csa_cachethis,
        ))
    }
}

enum Replay {
    Cached(p::CbCompound4res),
    Refused(Status),
}

/// Runs one callback operation after CB_SEQUENCE.
fn run_op(a: &p::NfsCbArgop4, events: &mut Vec<CbEvent>) -> (p::NfsCbResop4, Status) {
    use p::NfsCbArgop4 as A;
    use p::NfsCbResop4 as R;
    match a {
        A::OpCbRecall(r) => {
            events.push(CbEvent::Recall {
                stateid: r.stateid,
                fh: r.fh.clone(),
                truncate: r.truncate,
            });
            (
                R::OpCbRecall(p::CbRecall4res {
                    status: Status::Nfs4Ok,
                }),
                Status::Nfs4Ok,
            )
        }
        A::OpCbRecallAny(r) => {
            events.push(CbEvent::RecallAny {
                keep: r.craa_objects_to_keep,
                mask: r.craa_type_mask.clone(),
            });
            (
                R::OpCbRecallAny(p::CbRecallAny4res {
                    crar_status: Status::Nfs4Ok,
                }),
                Status::Nfs4Ok,
            )
        }
        A::OpCbNotifyLock(n) => {
            events.push(CbEvent::NotifyLock {
                fh: n.cnla_fh.clone(),
                owner: n.cnla_lock_owner.owner.clone(),
            });
            (
                R::OpCbNotifyLock(p::CbNotifyLock4res {
                    cnlr_status: Status::Nfs4Ok,
                }),
                Status::Nfs4Ok,
            )
        }
        A::OpCbNotify(n) => {
            events.push(CbEvent::Notify {
                stateid: n.cna_stateid,
                fh: n.cna_fh.clone(),
            });
            (
                R::OpCbNotify(p::CbNotify4res {
                    cnr_status: Status::Nfs4Ok,
                }),
                Status::Nfs4Ok,
            )
        }
        A::OpCbRecallSlot(r) => {
            events.push(CbEvent::RecallSlot {
                target: r.rsa_target_highest_slotid,
            });
            let st = Status::Nfs4Ok;
            (
                R::OpCbRecallSlot(p::CbRecallSlot4res { rsr_status: st }),
                st,
            )
        }
        // No write delegation is asked for, so there is nothing to report
        // (RFC 8881 §20.1.3); no layouts, devices, offloads or pushed
        // delegations either.
        A::OpCbGetattr(_) => {
            let st = Status::Nfs4errBadhandle;
            (R::OpCbGetattr(p::CbGetattr4res::Default(st)), st)
        }
        A::OpCbLayoutrecall(_) => {
            let st = Status::Nfs4errNomatchingLayout;
            (error_result(5, st), st)
        }
        other => {
            let st = Status::Nfs4errNotsupp;
            (error_result(cb_opnum(other), st), st)
        }
    }
}

/// The number of a callback operation.
pub fn cb_opnum(a: &p::NfsCbArgop4) -> u32 {
    use p::NfsCbArgop4 as A;
    match a {
        A::OpCbGetattr(_) => 3,
        A::OpCbRecall(_) => 4,
        A::OpCbLayoutrecall(_) => 5,
        A::OpCbNotify(_) => 6,
        A::OpCbPushDeleg(_) => 7,
        A::OpCbRecallAny(_) => 8,
        A::OpCbRecallableObjAvail(_) => 9,
        A::OpCbRecallSlot(_) => 10,
        A::OpCbSequence(_) => 11,
        A::OpCbWantsCancelled(_) => 12,
        A::OpCbNotifyLock(_) => 13,
        A::OpCbNotifyDeviceid(_) => 14,
        A::OpCbOffload(_) => 15,
        A::OpCbIllegal => OP_CB_ILLEGAL,
    }
}

fn cb_resnum(r: &p::NfsCbResop4) -> u32 {
    use p::NfsCbResop4 as R;
    match r {
        R::OpCbGetattr(_) => 3,
        R::OpCbRecall(_) => 4,
        R::OpCbLayoutrecall(_) => 5,
        R::OpCbNotify(_) => 6,
        R::OpCbPushDeleg(_) => 7,
        R::OpCbRecallAny(_) => 8,
        R::OpCbRecallableObjAvail(_) => 9,
        R::OpCbRecallSlot(_) => 10,
        R::OpCbSequence(_) => 11,
        R::OpCbWantsCancelled(_) => 12,
        R::OpCbNotifyLock(_) => 13,
        R::OpCbNotifyDeviceid(_) => 14,
        R::OpCbOffload(_) => 15,
        R::OpCbIllegal(_) => OP_CB_ILLEGAL,
    }
}

/// The result of callback operation `n` failing with `st`.
pub fn error_result(n: u32, st: Status) -> p::NfsCbResop4 {
    use p::NfsCbResop4 as R;
    match n {
        3 => R::OpCbGetattr(p::CbGetattr4res::Default(st)),
        4 => R::OpCbRecall(p::CbRecall4res { status: st }),
        5 => R::OpCbLayoutrecall(p::CbLayoutrecall4res { clorr_status: st }),
        6 => R::OpCbNotify(p::CbNotify4res { cnr_status: st }),
        7 => R::OpCbPushDeleg(p::CbPushDeleg4res { cpdr_status: st }),
        8 => R::OpCbRecallAny(p::CbRecallAny4res { crar_status: st }),
        9 => R::OpCbRecallableObjAvail(p::CbRecallableObjAvail4res { croa_status: st }),
        10 => R::OpCbRecallSlot(p::CbRecallSlot4res { rsr_status: st }),
        11 => R::OpCbSequence(p::CbSequence4res::Default(st)),
        12 => R::OpCbWantsCancelled(p::CbWantsCancelled4res { cwcr_status: st }),
        13 => R::OpCbNotifyLock(p::CbNotifyLock4res { cnlr_status: st }),
        14 => R::OpCbNotifyDeviceid(p::CbNotifyDeviceid4res { cndr_status: st }),
        15 => R::OpCbOffload(p::CbOffload4res { cor_status: st }),
        _ => R::OpCbIllegal(p::CbIllegal4res { status: st }),
    }
}

/// The encoded length of a value.
pub fn encoded_len(v: &impl Marshal) -> usize {
    let mut buf = bytes::BytesMut::new();
    v.marshal(&mut Encoder::new(&mut buf));
    buf.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::session::BackChannelLimits;

    const SID: [u8; 16] = [7; 16];

    fn chan() -> BackChannel {
        let mut b = BackChannel::new();
        b.set_session(SID, 1, BackChannelLimits::default().attrs());
        b
    }

    fn seq(slot: u32, seqid: u32, cache: bool) -> p::NfsCbArgop4 {
        p::NfsCbArgop4::OpCbSequence(p::CbSequence4args {
            csa_sessionid: SID,
            csa_sequenceid: seqid,
            csa_slotid: slot,
            csa_highest_slotid: 0,
            csa_cachethis: cache,
            csa_referring_call_lists: Vec::new(),
        })
    }

    fn recall() -> p::NfsCbArgop4 {
        p::NfsCbArgop4::OpCbRecall(p::CbRecall4args {
            stateid: p::Stateid4 {
                seqid: 1,
                other: [3; 12],
            },
            truncate: false,
            fh: Bytes::from_static(b"fh"),
        })
    }

    /// Encoded as the server sends it, decoded as the service does.
    fn args(minor: u32, ops: Vec<p::NfsCbArgop4>) -> CbCompoundArgs {
        let a = p::CbCompound4args {
            tag: Bytes::from_static(b"t"),
            minorversion: minor,
            callback_ident: 0,
            argarray: ops,
        };
        let mut buf = bytes::BytesMut::new();
        a.marshal(&mut Encoder::new(&mut buf));
        let b = buf.freeze();
        CbCompoundArgs::unmarshal(&mut Decoder::new(&b)).unwrap()
    }

    fn seq_status(r: &p::CbCompound4res) -> Status {
        match r.resarray.first() {
            Some(p::NfsCbResop4::OpCbSequence(p::CbSequence4res::Nfs4Ok(_))) => Status::Nfs4Ok,
            Some(p::NfsCbResop4::OpCbSequence(p::CbSequence4res::Default(s))) => *s,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_recall_is_answered_and_reported() {
        let mut b = chan();
        let a = args(1, vec![seq(0, 1, false), recall()]);
        assert_eq!(a.count, 2);
        let (r, ev) = b.handle(&a, 200);
        assert_eq!(r.status, Status::Nfs4Ok, "{r:?}");
        assert_eq!(r.resarray.len(), 2);
        assert!(matches!(&ev[..], [CbEvent::Recall { fh, .. }] if &fh[..] == b"fh"));
        // The same sequence id again, not cached: RETRY_UNCACHED_REP.
        let (r, ev) = b.handle(&a, 200);
        assert_eq!(seq_status(&r), Status::Nfs4errRetryUncachedRep);
        assert!(ev.is_empty());
        // Ahead of the next one: misordered.
        let (r, _) = b.handle(&args(1, vec![seq(0, 3, false)]), 100);
        assert_eq!(seq_status(&r), Status::Nfs4errSeqMisordered);
    }

    #[test]
    fn a_cached_reply_is_replayed_without_running_again() {
        let mut b = chan();
        let a = args(1, vec![seq(1, 1, true), recall()]);
        let (first, ev) = b.handle(&a, 200);
        assert_eq!(ev.len(), 1);
        let (again, ev) = b.handle(&a, 200);
        assert_eq!(again, first);
        assert!(ev.is_empty(), "nothing runs twice");
    }

    #[test]
    fn the_negotiated_limits_hold() {
        let mut b = chan();
        let limits = BackChannelLimits::default();
        let (r, _) = b.handle(&args(1, vec![seq(limits.max_requests, 1, false)]), 100);
        assert_eq!(seq_status(&r), Status::Nfs4errBadslot);
        let many = std::iter::once(seq(0, 1, false))
            .chain((0..limits.max_operations).map(|_| recall()))
            .collect();
        let (r, ev) = b.handle(&args(1, many), 100);
        assert_eq!(seq_status(&r), Status::Nfs4errTooManyOps);
        assert!(ev.is_empty());
        let (r, _) = b.handle(
            &args(1, vec![seq(0, 1, false)]),
            limits.max_request_size as usize + 1,
        );
        assert_eq!(seq_status(&r), Status::Nfs4errReqTooBig);
        // None of those used the slot.
        let (r, _) = b.handle(&args(1, vec![seq(0, 1, false)]), 100);
        assert_eq!(r.status, Status::Nfs4Ok);
    }

    #[test]
    fn session_and_position_rules() {
        let mut b = BackChannel::new();
        let (r, _) = b.handle(&args(1, vec![seq(0, 1, false)]), 100);
        assert_eq!(seq_status(&r), Status::Nfs4errBadsession, "no session yet");
        let mut b = chan();
        let (r, _) = b.handle(&args(2, vec![seq(0, 1, false)]), 100);
        assert_eq!(r.status, Status::Nfs4errMinorVersMismatch);
        assert!(r.resarray.is_empty());
        let (r, ev) = b.handle(&args(1, vec![recall()]), 100);
        assert_eq!(r.status, Status::Nfs4errOpNotInSession);
        assert!(ev.is_empty());
        let (r, _) = b.handle(&args(1, vec![seq(0, 1, false), seq(0, 2, false)]), 100);
        assert_eq!(r.status, Status::Nfs4errSequencePos);
        let mut other = args(1, vec![seq(0, 2, false)]);
        if let CbOp::Arg(p::NfsCbArgop4::OpCbSequence(s)) = &mut other.ops[0] {
            s.csa_sessionid = [9; 16];
        }
        let (r, _) = b.handle(&other, 100);
        assert_eq!(seq_status(&r), Status::Nfs4errBadsession);
    }

    #[test]
    fn unknown_operations_are_illegal() {
        // tag "", minor 1, ident 0, 2 ops: CB_SEQUENCE, then 77.
        let mut raw = vec![0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2];
        raw.extend_from_slice(&11u32.to_be_bytes());
        raw.extend_from_slice(&SID);
        raw.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        raw.extend_from_slice(&77u32.to_be_bytes());
        let a = CbCompoundArgs::unmarshal(&mut Decoder::new(&raw)).unwrap();
        assert_eq!(a.ops.len(), 2);
        assert_eq!(a.ops[1], CbOp::Illegal(77));
        assert_eq!(a.len, raw.len());
        let mut b = chan();
        let (r, _) = b.handle(&a, 100);
        assert_eq!(r.status, Status::Nfs4errOpIllegal);
        assert!(matches!(r.resarray[1], p::NfsCbResop4::OpCbIllegal(_)));
        // CB_GETATTR without a write delegation; CB_RECALL_ANY.
        let (r, _) = b.handle(
            &args(
                1,
                vec![
                    seq(0, 2, false),
                    p::NfsCbArgop4::OpCbGetattr(p::CbGetattr4args {
                        fh: Bytes::new(),
                        attr_request: Vec::new(),
                    }),
                ],
            ),
            100,
        );
        assert_eq!(r.status, Status::Nfs4errBadhandle);
        let (r, ev) = b.handle(
            &args(
                1,
                vec![
                    seq(0, 3, false),
                    p::NfsCbArgop4::OpCbRecallAny(p::CbRecallAny4args {
                        craa_objects_to_keep: 2,
                        craa_type_mask: vec![1],
                    }),
                ],
            ),
            100,
        );
        assert_eq!(r.status, Status::Nfs4Ok);
        assert_eq!(
            ev,
            vec![CbEvent::RecallAny {
                keep: 2,
                mask: vec![1]
            }]
        );
    }
}
