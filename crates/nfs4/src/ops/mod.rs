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
mod results;
pub(crate) mod session;

use crate::ctx::{Ctx, Done};
use crate::proto::nfs4 as p;
pub(crate) use results::{error_result, error_result_for, opnum_of};

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
