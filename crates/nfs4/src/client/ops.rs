//! Operations as the client sends them: the name and status of each
//! result, which COMPOUNDs must not run twice (the server keeps their
//! replies, `sa_cachethis`), and the Upper-Layer Binding of a COMPOUND
//! over RPC-over-RDMA (RFC 8267 §5.4: READ's data is DDP-eligible and
//! goes into a Write chunk; the results' size decides a Reply chunk).

use bytes::Bytes;
use rpcrdma_oncrpc::CallHints;

use super::attrs::{self, Attrs};
use super::error::Status as S;
use super::error::{Nfs4Error, Result, Violation};
use crate::proto::nfs4 as p;
use p::NfsArgop4 as A;
use p::NfsResop4 as R;

/// The name and status of an operation's result.
pub fn result_status(r: &R) -> (&'static str, S) {
    match r {
        R::OpAccess(r) => (
            "ACCESS",
            match r {
                p::Access4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Access4res::Default(s) => *s,
            },
        ),
        R::OpClose(r) => (
            "CLOSE",
            match r {
                p::Close4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Close4res::Default(s) => *s,
            },
        ),
        R::OpCommit(r) => (
            "COMMIT",
            match r {
                p::Commit4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Commit4res::Default(s) => *s,
            },
        ),
        R::OpCreate(r) => (
            "CREATE",
            match r {
                p::Create4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Create4res::Default(s) => *s,
            },
        ),
        R::OpDelegpurge(r) => ("DELEGPURGE", r.status),
        R::OpDelegreturn(r) => ("DELEGRETURN", r.status),
        R::OpGetattr(r) => (
            "GETATTR",
            match r {
                p::Getattr4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Getattr4res::Default(s) => *s,
            },
        ),
        R::OpGetfh(r) => (
            "GETFH",
            match r {
                p::Getfh4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Getfh4res::Default(s) => *s,
            },
        ),
        R::OpLink(r) => (
            "LINK",
            match r {
                p::Link4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Link4res::Default(s) => *s,
            },
        ),
        R::OpLock(r) => (
            "LOCK",
            match r {
                p::Lock4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Lock4res::Nfs4errDenied(_) => S::Nfs4errDenied,
                p::Lock4res::Default(s) => *s,
            },
        ),
        R::OpLockt(r) => (
            "LOCKT",
            match r {
                p::Lockt4res::Nfs4errDenied(_) => S::Nfs4errDenied,
                p::Lockt4res::Nfs4Ok => S::Nfs4Ok,
                p::Lockt4res::Default(s) => *s,
            },
        ),
        R::OpLocku(r) => (
            "LOCKU",
            match r {
                p::Locku4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Locku4res::Default(s) => *s,
            },
        ),
        R::OpLookup(r) => ("LOOKUP", r.status),
        R::OpLookupp(r) => ("LOOKUPP", r.status),
        R::OpNverify(r) => ("NVERIFY", r.status),
        R::OpOpen(r) => (
            "OPEN",
            match r {
                p::Open4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Open4res::Default(s) => *s,
            },
        ),
        R::OpOpenattr(r) => ("OPENATTR", r.status),
        R::OpOpenConfirm(r) => (
            "OPEN_CONFIRM",
            match r {
                p::OpenConfirm4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::OpenConfirm4res::Default(s) => *s,
            },
        ),
        R::OpOpenDowngrade(r) => (
            "OPEN_DOWNGRADE",
            match r {
                p::OpenDowngrade4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::OpenDowngrade4res::Default(s) => *s,
            },
        ),
        R::OpPutfh(r) => ("PUTFH", r.status),
        R::OpPutpubfh(r) => ("PUTPUBFH", r.status),
        R::OpPutrootfh(r) => ("PUTROOTFH", r.status),
        R::OpRead(r) => (
            "READ",
            match r {
                p::Read4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Read4res::Default(s) => *s,
            },
        ),
        R::OpReaddir(r) => (
            "READDIR",
            match r {
                p::Readdir4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Readdir4res::Default(s) => *s,
            },
        ),
        R::OpReadlink(r) => (
            "READLINK",
            match r {
                p::Readlink4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Readlink4res::Default(s) => *s,
            },
        ),
        R::OpRemove(r) => (
            "REMOVE",
            match r {
                p::Remove4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Remove4res::Default(s) => *s,
            },
        ),
        R::OpRename(r) => (
            "RENAME",
            match r {
                p::Rename4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Rename4res::Default(s) => *s,
            },
        ),
        R::OpRenew(r) => ("RENEW", r.status),
        R::OpRestorefh(r) => ("RESTOREFH", r.status),
        R::OpSavefh(r) => ("SAVEFH", r.status),
        R::OpSecinfo(r) => (
            "SECINFO",
            match r {
                p::Secinfo4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Secinfo4res::Default(s) => *s,
            },
        ),
        R::OpSetattr(r) => ("SETATTR", r.status),
        R::OpSetclientid(r) => (
            "SETCLIENTID",
            match r {
                p::Setclientid4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Setclientid4res::Nfs4errClidInuse(_) => S::Nfs4errClidInuse,
                p::Setclientid4res::Default(s) => *s,
            },
        ),
        R::OpSetclientidConfirm(r) => ("SETCLIENTID_CONFIRM", r.status),
        R::OpVerify(r) => ("VERIFY", r.status),
        R::OpWrite(r) => (
            "WRITE",
            match r {
                p::Write4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Write4res::Default(s) => *s,
            },
        ),
        R::OpReleaseLockowner(r) => ("RELEASE_LOCKOWNER", r.status),
        R::OpBackchannelCtl(r) => ("BACKCHANNEL_CTL", r.bcr_status),
        R::OpBindConnToSession(r) => (
            "BIND_CONN_TO_SESSION",
            match r {
                p::BindConnToSession4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::BindConnToSession4res::Default(s) => *s,
            },
        ),
        R::OpExchangeId(r) => (
            "EXCHANGE_ID",
            match r {
                p::ExchangeId4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::ExchangeId4res::Default(s) => *s,
            },
        ),
        R::OpCreateSession(r) => (
            "CREATE_SESSION",
            match r {
                p::CreateSession4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::CreateSession4res::Default(s) => *s,
            },
        ),
        R::OpDestroySession(r) => ("DESTROY_SESSION", r.dsr_status),
        R::OpFreeStateid(r) => ("FREE_STATEID", r.fsr_status),
        R::OpGetDirDelegation(r) => (
            "GET_DIR_DELEGATION",
            match r {
                p::GetDirDelegation4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::GetDirDelegation4res::Default(s) => *s,
            },
        ),
        R::OpGetdeviceinfo(r) => (
            "GETDEVICEINFO",
            match r {
                p::Getdeviceinfo4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Getdeviceinfo4res::Nfs4errToosmall(_) => S::Nfs4errToosmall,
                p::Getdeviceinfo4res::Default(s) => *s,
            },
        ),
        R::OpGetdevicelist(r) => (
            "GETDEVICELIST",
            match r {
                p::Getdevicelist4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Getdevicelist4res::Default(s) => *s,
            },
        ),
        R::OpLayoutcommit(r) => (
            "LAYOUTCOMMIT",
            match r {
                p::Layoutcommit4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Layoutcommit4res::Default(s) => *s,
            },
        ),
        R::OpLayoutget(r) => (
            "LAYOUTGET",
            match r {
                p::Layoutget4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Layoutget4res::Nfs4errLayouttrylater(_) => S::Nfs4errLayouttrylater,
                p::Layoutget4res::Default(s) => *s,
            },
        ),
        R::OpLayoutreturn(r) => (
            "LAYOUTRETURN",
            match r {
                p::Layoutreturn4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Layoutreturn4res::Default(s) => *s,
            },
        ),
        R::OpSecinfoNoName(r) => (
            "SECINFO_NO_NAME",
            match r {
                p::Secinfo4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Secinfo4res::Default(s) => *s,
            },
        ),
        R::OpSequence(r) => (
            "SEQUENCE",
            match r {
                p::Sequence4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Sequence4res::Default(s) => *s,
            },
        ),
        R::OpSetSsv(r) => (
            "SET_SSV",
            match r {
                p::SetSsv4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::SetSsv4res::Default(s) => *s,
            },
        ),
        R::OpTestStateid(r) => (
            "TEST_STATEID",
            match r {
                p::TestStateid4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::TestStateid4res::Default(s) => *s,
            },
        ),
        R::OpWantDelegation(r) => (
            "WANT_DELEGATION",
            match r {
                p::WantDelegation4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::WantDelegation4res::Default(s) => *s,
            },
        ),
        R::OpDestroyClientid(r) => ("DESTROY_CLIENTID", r.dcr_status),
        R::OpReclaimComplete(r) => ("RECLAIM_COMPLETE", r.rcr_status),
        R::OpAllocate(r) => ("ALLOCATE", r.ar_status),
        R::OpCopy(r) => (
            "COPY",
            match r {
                p::Copy4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Copy4res::Nfs4errOffloadNoReqs(_) => S::Nfs4errOffloadNoReqs,
                p::Copy4res::Default(s) => *s,
            },
        ),
        R::OpCopyNotify(r) => (
            "COPY_NOTIFY",
            match r {
                p::CopyNotify4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::CopyNotify4res::Default(s) => *s,
            },
        ),
        R::OpDeallocate(r) => ("DEALLOCATE", r.dr_status),
        R::OpIoAdvise(r) => (
            "IO_ADVISE",
            match r {
                p::IoAdvise4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::IoAdvise4res::Default(s) => *s,
            },
        ),
        R::OpLayouterror(r) => ("LAYOUTERROR", r.ler_status),
        R::OpLayoutstats(r) => ("LAYOUTSTATS", r.lsr_status),
        R::OpOffloadCancel(r) => ("OFFLOAD_CANCEL", r.ocr_status),
        R::OpOffloadStatus(r) => (
            "OFFLOAD_STATUS",
            match r {
                p::OffloadStatus4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::OffloadStatus4res::Default(s) => *s,
            },
        ),
        R::OpReadPlus(r) => (
            "READ_PLUS",
            match r {
                p::ReadPlus4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::ReadPlus4res::Default(s) => *s,
            },
        ),
        R::OpSeek(r) => (
            "SEEK",
            match r {
                p::Seek4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Seek4res::Default(s) => *s,
            },
        ),
        R::OpWriteSame(r) => (
            "WRITE_SAME",
            match r {
                p::WriteSame4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::WriteSame4res::Default(s) => *s,
            },
        ),
        R::OpClone(r) => ("CLONE", r.cl_status),
        R::OpGetxattr(r) => (
            "GETXATTR",
            match r {
                p::Getxattr4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Getxattr4res::Default(s) => *s,
            },
        ),
        R::OpSetxattr(r) => (
            "SETXATTR",
            match r {
                p::Setxattr4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Setxattr4res::Default(s) => *s,
            },
        ),
        R::OpListxattrs(r) => (
            "LISTXATTRS",
            match r {
                p::Listxattrs4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Listxattrs4res::Default(s) => *s,
            },
        ),
        R::OpRemovexattr(r) => (
            "REMOVEXATTR",
            match r {
                p::Removexattr4res::Nfs4Ok(_) => S::Nfs4Ok,
                p::Removexattr4res::Default(s) => *s,
            },
        ),
        R::OpIllegal(r) => ("ILLEGAL", r.status),
    }
}

/// The name of an operation.
pub fn arg_name(a: &A) -> &'static str {
    match a {
        A::OpAccess(_) => "ACCESS",
        A::OpClose(_) => "CLOSE",
        A::OpCommit(_) => "COMMIT",
        A::OpCreate(_) => "CREATE",
        A::OpDelegpurge(_) => "DELEGPURGE",
        A::OpDelegreturn(_) => "DELEGRETURN",
        A::OpGetattr(_) => "GETATTR",
        A::OpGetfh => "GETFH",
        A::OpLink(_) => "LINK",
        A::OpLock(_) => "LOCK",
        A::OpLockt(_) => "LOCKT",
        A::OpLocku(_) => "LOCKU",
        A::OpLookup(_) => "LOOKUP",
        A::OpLookupp => "LOOKUPP",
        A::OpNverify(_) => "NVERIFY",
        A::OpOpen(_) => "OPEN",
        A::OpOpenattr(_) => "OPENATTR",
        A::OpOpenConfirm(_) => "OPEN_CONFIRM",
        A::OpOpenDowngrade(_) => "OPEN_DOWNGRADE",
        A::OpPutfh(_) => "PUTFH",
        A::OpPutpubfh => "PUTPUBFH",
        A::OpPutrootfh => "PUTROOTFH",
        A::OpRead(_) => "READ",
        A::OpReaddir(_) => "READDIR",
        A::OpReadlink => "READLINK",
        A::OpRemove(_) => "REMOVE",
        A::OpRename(_) => "RENAME",
        A::OpRenew(_) => "RENEW",
        A::OpRestorefh => "RESTOREFH",
        A::OpSavefh => "SAVEFH",
        A::OpSecinfo(_) => "SECINFO",
        A::OpSetattr(_) => "SETATTR",
        A::OpSetclientid(_) => "SETCLIENTID",
        A::OpSetclientidConfirm(_) => "SETCLIENTID_CONFIRM",
        A::OpVerify(_) => "VERIFY",
        A::OpWrite(_) => "WRITE",
        A::OpReleaseLockowner(_) => "RELEASE_LOCKOWNER",
        A::OpBackchannelCtl(_) => "BACKCHANNEL_CTL",
        A::OpBindConnToSession(_) => "BIND_CONN_TO_SESSION",
        A::OpExchangeId(_) => "EXCHANGE_ID",
        A::OpCreateSession(_) => "CREATE_SESSION",
        A::OpDestroySession(_) => "DESTROY_SESSION",
        A::OpFreeStateid(_) => "FREE_STATEID",
        A::OpGetDirDelegation(_) => "GET_DIR_DELEGATION",
        A::OpGetdeviceinfo(_) => "GETDEVICEINFO",
        A::OpGetdevicelist(_) => "GETDEVICELIST",
        A::OpLayoutcommit(_) => "LAYOUTCOMMIT",
        A::OpLayoutget(_) => "LAYOUTGET",
        A::OpLayoutreturn(_) => "LAYOUTRETURN",
        A::OpSecinfoNoName(_) => "SECINFO_NO_NAME",
        A::OpSequence(_) => "SEQUENCE",
        A::OpSetSsv(_) => "SET_SSV",
        A::OpTestStateid(_) => "TEST_STATEID",
        A::OpWantDelegation(_) => "WANT_DELEGATION",
        A::OpDestroyClientid(_) => "DESTROY_CLIENTID",
        A::OpReclaimComplete(_) => "RECLAIM_COMPLETE",
        A::OpAllocate(_) => "ALLOCATE",
        A::OpCopy(_) => "COPY",
        A::OpCopyNotify(_) => "COPY_NOTIFY",
        A::OpDeallocate(_) => "DEALLOCATE",
        A::OpIoAdvise(_) => "IO_ADVISE",
        A::OpLayouterror(_) => "LAYOUTERROR",
        A::OpLayoutstats(_) => "LAYOUTSTATS",
        A::OpOffloadCancel(_) => "OFFLOAD_CANCEL",
        A::OpOffloadStatus(_) => "OFFLOAD_STATUS",
        A::OpReadPlus(_) => "READ_PLUS",
        A::OpSeek(_) => "SEEK",
        A::OpWriteSame(_) => "WRITE_SAME",
        A::OpClone(_) => "CLONE",
        A::OpGetxattr(_) => "GETXATTR",
        A::OpSetxattr(_) => "SETXATTR",
        A::OpListxattrs(_) => "LISTXATTRS",
        A::OpRemovexattr(_) => "REMOVEXATTR",
        A::OpIllegal => "ILLEGAL",
    }
}

/// Whether running the operations twice would do harm: the server is
/// asked to keep the reply in the slot (`sa_cachethis`) so that a
/// retransmission gets it rather than `NFS4ERR_RETRY_UNCACHED_REP`.
pub fn must_cache(ops: &[A]) -> bool {
    ops.iter().any(|a| {
        matches!(
            a,
            A::OpOpen(_)
                | A::OpClose(_)
                | A::OpOpenDowngrade(_)
                | A::OpLock(_)
                | A::OpLocku(_)
                | A::OpWrite(_)
                | A::OpCreate(_)
                | A::OpRemove(_)
                | A::OpRename(_)
                | A::OpLink(_)
                | A::OpSetattr(_)
                | A::OpDelegreturn(_)
                | A::OpFreeStateid(_)
        )
    })
}

/// The largest result an operation can have (its XDR, the status and the
/// operation number included), READ's and READDIR's data counted in full.
pub fn result_bound(a: &A) -> u32 {
    match a {
        A::OpRead(r) => 16 + r.count,
        A::OpReaddir(r) => 24 + r.maxcount,
        A::OpExchangeId(_) => 4600,
        A::OpOpen(_) => 2304,
        A::OpLock(_) | A::OpLockt(_) => 1100,
        A::OpGetattr(_) => 1200,
        A::OpGetfh => 140,
        A::OpCreateSession(_) => 160,
        A::OpTestStateid(t) => 12 + 4 * t.ts_stateids.len() as u32,
        A::OpReadlink => 4108,
        _ => 64,
    }
}

/// A COMPOUND's reply header: status, tag (at most 64 bytes sent back)
/// and the count.
const COMPOUND_REPLY_HEADER: u32 = 4 + 4 + 64 + 4;

/// The call hints of a COMPOUND (its Upper-Layer Binding, RFC 8267
/// §5.4.2): a Write chunk for each READ's data; the results' bound
/// (`max_response`, the session's `ca_maxresponsesize`, at most), and,
/// when there is a READ, the bound of everything else
/// ([`CallHints::reduced_results`]), so an RDMA requester offers no
/// Reply chunk beside the Write chunk (a Linux nfsd 6.1 quirk otherwise
/// writes the data into both: `docs/spec-notes.md` N13).
pub fn hints(ops: &[A], max_response: u32) -> CallHints {
    let mut h = CallHints::new();
    let mut all = COMPOUND_REPLY_HEADER;
    let mut reduced = COMPOUND_REPLY_HEADER;
    let mut reads = false;
    for a in ops {
        let b = result_bound(a);
        all = all.saturating_add(b);
        if let A::OpRead(r) = a {
            h = h.ddp_result(r.count);
            reads = true;
            reduced = reduced.saturating_add(b - r.count);
        } else {
            reduced = reduced.saturating_add(b);
        }
    }
    h = h.max_results(all.min(max_response.max(reduced)));
    if reads {
        h = h.reduced_results(reduced);
    }
    h
}

pub(crate) fn putfh(fh: &Bytes) -> A {
    A::OpPutfh(p::Putfh4args { object: fh.clone() })
}

pub(crate) fn getattr(set: attrs::AttrSet) -> A {
    A::OpGetattr(p::Getattr4args {
        attr_request: set.words(),
    })
}

pub(crate) fn decode_attrs(f: &p::Fattr4) -> Result<Attrs> {
    attrs::decode(f).map_err(|e| Nfs4Error::Protocol(Violation::Attributes(e)))
}

pub(crate) fn missing(what: &'static str) -> Nfs4Error {
    Nfs4Error::Protocol(Violation::Missing { what })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(count: u32) -> A {
        A::OpRead(p::Read4args {
            stateid: p::Stateid4 {
                seqid: 0,
                other: [0; 12],
            },
            offset: 0,
            count,
        })
    }

    #[test]
    fn read_data_goes_in_a_write_chunk() {
        let h = hints(&[A::OpPutrootfh, read(1 << 20)], 2 << 20);
        assert_eq!(h.ddp_results(), &[1 << 20]);
        let reduced = h.max_reduced_reply_size().unwrap();
        assert!(
            reduced < 1024,
            "no Reply chunk beside the Write chunk: {reduced}"
        );
        assert!(h.max_reply_size().unwrap() > 1 << 20);
        let h = hints(
            &[
                A::OpPutrootfh,
                A::OpGetattr(p::Getattr4args {
                    attr_request: vec![],
                }),
            ],
            1 << 20,
        );
        assert!(h.ddp_results().is_empty());
        assert!(h.max_reply_size().unwrap() < 4096, "small: inline");
        assert_eq!(h.max_reduced_reply_size(), None);
    }

    #[test]
    fn statuses_and_names() {
        let r = R::OpLookup(p::Lookup4res {
            status: S::Nfs4errNoent,
        });
        assert_eq!(result_status(&r), ("LOOKUP", S::Nfs4errNoent));
        let r = R::OpSequence(p::Sequence4res::Default(S::Nfs4errBadsession));
        assert_eq!(result_status(&r), ("SEQUENCE", S::Nfs4errBadsession));
        assert!(must_cache(&[
            A::OpPutrootfh,
            A::OpRemove(p::Remove4args { target: "x".into() })
        ]));
        assert!(!must_cache(&[A::OpPutrootfh, read(10)]));
    }
}
