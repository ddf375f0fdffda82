//! The operations of a COMPOUND, by group:
//!
//! | file | operations |
//! |---|---|
//! | `session.rs` | EXCHANGE_ID, CREATE_SESSION, SEQUENCE, BIND_CONN_TO_SESSION, DESTROY_SESSION, DESTROY_CLIENTID, RECLAIM_COMPLETE, BACKCHANNEL_CTL |
//! | `fh.rs` | PUTFH, PUTROOTFH, PUTPUBFH, GETFH, SAVEFH, RESTOREFH, LOOKUP, LOOKUPP, SECINFO, SECINFO_NO_NAME |
//! | `attr.rs` | GETATTR, SETATTR, VERIFY, NVERIFY, ACCESS |
//! | `open.rs` | OPEN, OPEN_DOWNGRADE, CLOSE, DELEGRETURN |
//! | `io.rs` | READ, WRITE, COMMIT, READLINK |
//! | `dir.rs` | CREATE, REMOVE, RENAME, LINK, READDIR |
//! | `lock.rs` | LOCK, LOCKT, LOCKU, FREE_STATEID, TEST_STATEID |
//!
//! pNFS, directory delegations, SSV, NFSv4.2's copy, allocation, seek,
//! READ_PLUS, cloning and extended attributes answer `NFS4ERR_NOTSUPP`;
//! the NFSv4.0 operations RFC 8881 removes from NFSv4.1 (OPEN_CONFIRM,
//! RENEW, SETCLIENTID, SETCLIENTID_CONFIRM, RELEASE_LOCKOWNER) too, as the
//! RFC requires.

pub(crate) mod attr;
pub(crate) mod dir;
pub(crate) mod fh;
pub(crate) mod io;
pub(crate) mod lock;
pub(crate) mod open;
pub(crate) mod session;

use crate::compound::{Ctx, Done};
use crate::proto::nfs4 as p;

/// `Ok` as a status, or the error's.
pub(crate) fn status<T>(r: &Result<T, p::Nfsstat4>) -> p::Nfsstat4 {
    match r {
        Ok(_) => p::Nfsstat4::Nfs4Ok,
        Err(e) => *e,
    }
}

/// What an operation that has no meaning on a pseudo directory answers
/// there (`None`: it runs; it knows pseudo directories or needs no current
/// handle): the pseudo file system is read-only, holds only directories,
/// and no state.
fn on_pseudo(a: &p::NfsArgop4) -> Option<p::Nfsstat4> {
    use p::NfsArgop4 as A;
    match a {
        A::OpCreate(_) | A::OpRemove(_) | A::OpRename(_) | A::OpLink(_) | A::OpSetattr(_) => {
            Some(p::Nfsstat4::Nfs4errRofs)
        }
        A::OpOpen(o) if matches!(o.openhow, p::Openflag4::Open4Create(_)) => {
            Some(p::Nfsstat4::Nfs4errRofs)
        }
        A::OpOpen(_)
        | A::OpRead(_)
        | A::OpWrite(_)
        | A::OpCommit(_)
        | A::OpLock(_)
        | A::OpLockt(_) => Some(p::Nfsstat4::Nfs4errIsdir),
        A::OpReadlink => Some(p::Nfsstat4::Nfs4errInval),
        A::OpOpenDowngrade(_) | A::OpClose(_) | A::OpLocku(_) | A::OpDelegreturn(_) => {
            Some(p::Nfsstat4::Nfs4errBadStateid)
        }
        _ => None,
    }
}

/// Runs one operation.
pub(crate) fn dispatch(cx: &mut Ctx<'_>, a: &p::NfsArgop4) -> Done {
    use p::NfsArgop4 as A;
    if cx.cfh.as_ref().is_some_and(crate::pseudo::is_pseudo) {
        if let Some(s) = on_pseudo(a) {
            return (error_result(a, s), s);
        }
    }
    match a {
        A::OpExchangeId(x) => session::exchange_id(cx, x),
        A::OpCreateSession(x) => session::create_session(cx, x),
        A::OpDestroySession(x) => session::destroy_session(cx, x),
        A::OpBindConnToSession(x) => session::bind_conn(cx, x),
        A::OpDestroyClientid(x) => session::destroy_clientid(cx, x),
        A::OpReclaimComplete(x) => session::reclaim_complete(cx, x),
        A::OpBackchannelCtl(x) => session::backchannel_ctl(cx, x),
        A::OpPutfh(x) => fh::putfh(cx, x),
        A::OpPutrootfh | A::OpPutpubfh => fh::putrootfh(cx, a),
        A::OpGetfh => fh::getfh(cx),
        A::OpSavefh => fh::savefh(cx),
        A::OpRestorefh => fh::restorefh(cx),
        A::OpLookup(x) => fh::lookup(cx, x),
        A::OpLookupp => fh::lookupp(cx),
        A::OpSecinfo(x) => fh::secinfo(cx, x),
        A::OpSecinfoNoName(x) => fh::secinfo_no_name(cx, x),
        A::OpGetattr(x) => attr::getattr(cx, x),
        A::OpSetattr(x) => attr::setattr(cx, x),
        A::OpVerify(x) => attr::verify(cx, &x.obj_attributes, false),
        A::OpNverify(x) => attr::verify(cx, &x.obj_attributes, true),
        A::OpAccess(x) => attr::access(cx, x),
        A::OpOpen(x) => open::open(cx, x),
        A::OpOpenDowngrade(x) => open::open_downgrade(cx, x),
        A::OpClose(x) => open::close(cx, x),
        A::OpDelegreturn(x) => open::delegreturn(cx, x),
        A::OpRead(x) => io::read(cx, x),
        A::OpWrite(x) => io::write(cx, x),
        A::OpCommit(x) => io::commit(cx, x),
        A::OpReadlink => io::readlink(cx),
        A::OpCreate(x) => dir::create(cx, x),
        A::OpRemove(x) => dir::remove(cx, x),
        A::OpRename(x) => dir::rename(cx, x),
        A::OpLink(x) => dir::link(cx, x),
        A::OpReaddir(x) => dir::readdir(cx, x),
        A::OpLock(x) => lock::lock(cx, x),
        A::OpLockt(x) => lock::lockt(cx, x),
        A::OpLocku(x) => lock::locku(cx, x),
        A::OpFreeStateid(x) => lock::free_stateid(cx, x),
        A::OpTestStateid(x) => lock::test_stateid(cx, x),
        A::OpSequence(_) | A::OpIllegal => {
            let s = p::Nfsstat4::Nfs4errSequencePos;
            (error_result(a, s), s)
        }
        _ => {
            let s = p::Nfsstat4::Nfs4errNotsupp;
            (error_result(a, s), s)
        }
    }
}

/// The result of the operation `a` failing with `status`.
pub(crate) fn error_result(a: &p::NfsArgop4, status: p::Nfsstat4) -> p::NfsResop4 {
    error_result_for(opnum_of_args(a), status)
}

/// The result of operation number `n` failing with `status`.
pub(crate) fn error_result_for(n: u32, status: p::Nfsstat4) -> p::NfsResop4 {
    use p::NfsResop4 as R;
    match n {
        3 => R::OpAccess(p::Access4res::Default(status)),
        4 => R::OpClose(p::Close4res::Default(status)),
        5 => R::OpCommit(p::Commit4res::Default(status)),
        6 => R::OpCreate(p::Create4res::Default(status)),
        7 => R::OpDelegpurge(p::Delegpurge4res { status }),
        8 => R::OpDelegreturn(p::Delegreturn4res { status }),
        9 => R::OpGetattr(p::Getattr4res::Default(status)),
        10 => R::OpGetfh(p::Getfh4res::Default(status)),
        11 => R::OpLink(p::Link4res::Default(status)),
        12 => R::OpLock(p::Lock4res::Default(status)),
        13 => R::OpLockt(p::Lockt4res::Default(status)),
        14 => R::OpLocku(p::Locku4res::Default(status)),
        15 => R::OpLookup(p::Lookup4res { status }),
        16 => R::OpLookupp(p::Lookupp4res { status }),
        17 => R::OpNverify(p::Nverify4res { status }),
        18 => R::OpOpen(p::Open4res::Default(status)),
        19 => R::OpOpenattr(p::Openattr4res { status }),
        20 => R::OpOpenConfirm(p::OpenConfirm4res::Default(status)),
        21 => R::OpOpenDowngrade(p::OpenDowngrade4res::Default(status)),
        22 => R::OpPutfh(p::Putfh4res { status }),
        23 => R::OpPutpubfh(p::Putpubfh4res { status }),
        24 => R::OpPutrootfh(p::Putrootfh4res { status }),
        25 => R::OpRead(p::Read4res::Default(status)),
        26 => R::OpReaddir(p::Readdir4res::Default(status)),
        27 => R::OpReadlink(p::Readlink4res::Default(status)),
        28 => R::OpRemove(p::Remove4res::Default(status)),
        29 => R::OpRename(p::Rename4res::Default(status)),
        30 => R::OpRenew(p::Renew4res { status }),
        31 => R::OpRestorefh(p::Restorefh4res { status }),
        32 => R::OpSavefh(p::Savefh4res { status }),
        33 => R::OpSecinfo(p::Secinfo4res::Default(status)),
        34 => R::OpSetattr(p::Setattr4res {
            status,
            attrsset: Default::default(),
        }),
        35 => R::OpSetclientid(p::Setclientid4res::Default(status)),
        36 => R::OpSetclientidConfirm(p::SetclientidConfirm4res { status }),
        37 => R::OpVerify(p::Verify4res { status }),
        38 => R::OpWrite(p::Write4res::Default(status)),
        39 => R::OpReleaseLockowner(p::ReleaseLockowner4res { status }),
        40 => R::OpBackchannelCtl(p::BackchannelCtl4res { bcr_status: status }),
        41 => R::OpBindConnToSession(p::BindConnToSession4res::Default(status)),
        42 => R::OpExchangeId(p::ExchangeId4res::Default(status)),
        43 => R::OpCreateSession(p::CreateSession4res::Default(status)),
        44 => R::OpDestroySession(p::DestroySession4res { dsr_status: status }),
        45 => R::OpFreeStateid(p::FreeStateid4res { fsr_status: status }),
        46 => R::OpGetDirDelegation(p::GetDirDelegation4res::Default(status)),
        47 => R::OpGetdeviceinfo(p::Getdeviceinfo4res::Default(status)),
        48 => R::OpGetdevicelist(p::Getdevicelist4res::Default(status)),
        49 => R::OpLayoutcommit(p::Layoutcommit4res::Default(status)),
        50 => R::OpLayoutget(p::Layoutget4res::Default(status)),
        51 => R::OpLayoutreturn(p::Layoutreturn4res::Default(status)),
        52 => R::OpSecinfoNoName(p::Secinfo4res::Default(status)),
        53 => R::OpSequence(p::Sequence4res::Default(status)),
        54 => R::OpSetSsv(p::SetSsv4res::Default(status)),
        55 => R::OpTestStateid(p::TestStateid4res::Default(status)),
        56 => R::OpWantDelegation(p::WantDelegation4res::Default(status)),
        57 => R::OpDestroyClientid(p::DestroyClientid4res { dcr_status: status }),
        58 => R::OpReclaimComplete(p::ReclaimComplete4res { rcr_status: status }),
        59 => R::OpAllocate(p::Allocate4res { ar_status: status }),
        60 => R::OpCopy(p::Copy4res::Default(status)),
        61 => R::OpCopyNotify(p::CopyNotify4res::Default(status)),
        62 => R::OpDeallocate(p::Deallocate4res { dr_status: status }),
        63 => R::OpIoAdvise(p::IoAdvise4res::Default(status)),
        64 => R::OpLayouterror(p::Layouterror4res { ler_status: status }),
        65 => R::OpLayoutstats(p::Layoutstats4res { lsr_status: status }),
        66 => R::OpOffloadCancel(p::OffloadCancel4res { ocr_status: status }),
        67 => R::OpOffloadStatus(p::OffloadStatus4res::Default(status)),
        68 => R::OpReadPlus(p::ReadPlus4res::Default(status)),
        69 => R::OpSeek(p::Seek4res::Default(status)),
        70 => R::OpWriteSame(p::WriteSame4res::Default(status)),
        71 => R::OpClone(p::Clone4res { cl_status: status }),
        72 => R::OpGetxattr(p::Getxattr4res::Default(status)),
        73 => R::OpSetxattr(p::Setxattr4res::Default(status)),
        74 => R::OpListxattrs(p::Listxattrs4res::Default(status)),
        75 => R::OpRemovexattr(p::Removexattr4res::Default(status)),
        _ => R::OpIllegal(p::Illegal4res { status }),
    }
}

/// The operation number of a result.
pub(crate) fn opnum_of(r: &p::NfsResop4) -> u32 {
    use p::NfsResop4 as R;
    match r {
        R::OpAccess(_) => 3,
        R::OpClose(_) => 4,
        R::OpCommit(_) => 5,
        R::OpCreate(_) => 6,
        R::OpDelegpurge(_) => 7,
        R::OpDelegreturn(_) => 8,
        R::OpGetattr(_) => 9,
        R::OpGetfh(_) => 10,
        R::OpLink(_) => 11,
        R::OpLock(_) => 12,
        R::OpLockt(_) => 13,
        R::OpLocku(_) => 14,
        R::OpLookup(_) => 15,
        R::OpLookupp(_) => 16,
        R::OpNverify(_) => 17,
        R::OpOpen(_) => 18,
        R::OpOpenattr(_) => 19,
        R::OpOpenConfirm(_) => 20,
        R::OpOpenDowngrade(_) => 21,
        R::OpPutfh(_) => 22,
        R::OpPutpubfh(_) => 23,
        R::OpPutrootfh(_) => 24,
        R::OpRead(_) => 25,
        R::OpReaddir(_) => 26,
        R::OpReadlink(_) => 27,
        R::OpRemove(_) => 28,
        R::OpRename(_) => 29,
        R::OpRenew(_) => 30,
        R::OpRestorefh(_) => 31,
        R::OpSavefh(_) => 32,
        R::OpSecinfo(_) => 33,
        R::OpSetattr(_) => 34,
        R::OpSetclientid(_) => 35,
        R::OpSetclientidConfirm(_) => 36,
        R::OpVerify(_) => 37,
        R::OpWrite(_) => 38,
        R::OpReleaseLockowner(_) => 39,
        R::OpBackchannelCtl(_) => 40,
        R::OpBindConnToSession(_) => 41,
        R::OpExchangeId(_) => 42,
        R::OpCreateSession(_) => 43,
        R::OpDestroySession(_) => 44,
        R::OpFreeStateid(_) => 45,
        R::OpGetDirDelegation(_) => 46,
        R::OpGetdeviceinfo(_) => 47,
        R::OpGetdevicelist(_) => 48,
        R::OpLayoutcommit(_) => 49,
        R::OpLayoutget(_) => 50,
        R::OpLayoutreturn(_) => 51,
        R::OpSecinfoNoName(_) => 52,
        R::OpSequence(_) => 53,
        R::OpSetSsv(_) => 54,
        R::OpTestStateid(_) => 55,
        R::OpWantDelegation(_) => 56,
        R::OpDestroyClientid(_) => 57,
        R::OpReclaimComplete(_) => 58,
        R::OpAllocate(_) => 59,
        R::OpCopy(_) => 60,
        R::OpCopyNotify(_) => 61,
        R::OpDeallocate(_) => 62,
        R::OpIoAdvise(_) => 63,
        R::OpLayouterror(_) => 64,
        R::OpLayoutstats(_) => 65,
        R::OpOffloadCancel(_) => 66,
        R::OpOffloadStatus(_) => 67,
        R::OpReadPlus(_) => 68,
        R::OpSeek(_) => 69,
        R::OpWriteSame(_) => 70,
        R::OpClone(_) => 71,
        R::OpGetxattr(_) => 72,
        R::OpSetxattr(_) => 73,
        R::OpListxattrs(_) => 74,
        R::OpRemovexattr(_) => 75,
        R::OpIllegal(_) => 10044,
    }
}

/// The operation number of arguments.
pub(crate) fn opnum_of_args(a: &p::NfsArgop4) -> u32 {
    use p::NfsArgop4 as A;
    match a {
        A::OpAccess(_) => 3,
        A::OpClose(_) => 4,
        A::OpCommit(_) => 5,
        A::OpCreate(_) => 6,
        A::OpDelegpurge(_) => 7,
        A::OpDelegreturn(_) => 8,
        A::OpGetattr(_) => 9,
        A::OpGetfh => 10,
        A::OpLink(_) => 11,
        A::OpLock(_) => 12,
        A::OpLockt(_) => 13,
        A::OpLocku(_) => 14,
        A::OpLookup(_) => 15,
        A::OpLookupp => 16,
        A::OpNverify(_) => 17,
        A::OpOpen(_) => 18,
        A::OpOpenattr(_) => 19,
        A::OpOpenConfirm(_) => 20,
        A::OpOpenDowngrade(_) => 21,
        A::OpPutfh(_) => 22,
        A::OpPutpubfh => 23,
        A::OpPutrootfh => 24,
        A::OpRead(_) => 25,
        A::OpReaddir(_) => 26,
        A::OpReadlink => 27,
        A::OpRemove(_) => 28,
        A::OpRename(_) => 29,
        A::OpRenew(_) => 30,
        A::OpRestorefh => 31,
        A::OpSavefh => 32,
        A::OpSecinfo(_) => 33,
        A::OpSetattr(_) => 34,
        A::OpSetclientid(_) => 35,
        A::OpSetclientidConfirm(_) => 36,
        A::OpVerify(_) => 37,
        A::OpWrite(_) => 38,
        A::OpReleaseLockowner(_) => 39,
        A::OpBackchannelCtl(_) => 40,
        A::OpBindConnToSession(_) => 41,
        A::OpExchangeId(_) => 42,
        A::OpCreateSession(_) => 43,
        A::OpDestroySession(_) => 44,
        A::OpFreeStateid(_) => 45,
        A::OpGetDirDelegation(_) => 46,
        A::OpGetdeviceinfo(_) => 47,
        A::OpGetdevicelist(_) => 48,
        A::OpLayoutcommit(_) => 49,
        A::OpLayoutget(_) => 50,
        A::OpLayoutreturn(_) => 51,
        A::OpSecinfoNoName(_) => 52,
        A::OpSequence(_) => 53,
        A::OpSetSsv(_) => 54,
        A::OpTestStateid(_) => 55,
        A::OpWantDelegation(_) => 56,
        A::OpDestroyClientid(_) => 57,
        A::OpReclaimComplete(_) => 58,
        A::OpAllocate(_) => 59,
        A::OpCopy(_) => 60,
        A::OpCopyNotify(_) => 61,
        A::OpDeallocate(_) => 62,
        A::OpIoAdvise(_) => 63,
        A::OpLayouterror(_) => 64,
        A::OpLayoutstats(_) => 65,
        A::OpOffloadCancel(_) => 66,
        A::OpOffloadStatus(_) => 67,
        A::OpReadPlus(_) => 68,
        A::OpSeek(_) => 69,
        A::OpWriteSame(_) => 70,
        A::OpClone(_) => 71,
        A::OpGetxattr(_) => 72,
        A::OpSetxattr(_) => 73,
        A::OpListxattrs(_) => 74,
        A::OpRemovexattr(_) => 75,
        A::OpIllegal => 10044,
    }
}
