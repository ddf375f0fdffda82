//! File data: READ, WRITE, COMMIT, READLINK (RFC 8881 §18.5, §18.22,
//! §18.24, §18.32).
//!
//! READ and WRITE go through the stateid checks of `state::opens` first
//! (an open of the file, a lock or delegation stateid of it, or the
//! anonymous or bypass stateid); a WRITE recalls other clients'
//! delegations of the file. The data work is the export's, as for NFSv3:
//! offsets anywhere in the 64-bit range, `NFS4ERR_FBIG` past the largest
//! file, READ capped at 1 MiB and at the session's largest reply.

use bytes::Bytes;
use rpcrdma_nfs3::fs::{FileHandle, FileType, StableHow, MAX_IO};

use crate::ctx::{from_fs, from_state, Ctx, Done};
use crate::proto::nfs4 as p;

/// Room in a reply besides READ's data (the COMPOUND's other results).
const READ_OVERHEAD: u32 = 2048;

fn regular(cx: &Ctx<'_>, fh: &FileHandle) -> Result<(), p::Nfsstat4> {
    match cx.export.getattr(fh).map_err(from_fs)?.ftype {
        FileType::Regular => Ok(()),
        FileType::Directory => Err(p::Nfsstat4::Nfs4errIsdir),
        FileType::Symlink => Err(p::Nfsstat4::Nfs4errSymlink),
        _ => Err(p::Nfsstat4::Nfs4errWrongType),
    }
}

/// READ.
pub(crate) fn read(cx: &mut Ctx<'_>, a: &p::Read4args) -> Done {
    let r = (|| {
        let client = cx.client()?;
        let fh = cx.fh()?;
        regular(cx, &fh)?;
        let id = cx.stateid(&a.stateid)?;
        cx.core
            .lock()
            .check_io(Some(client), &id, &fh, false, cx.now)
            .map_err(from_state)?;
        let room = cx.fore.max_response.saturating_sub(READ_OVERHEAD);
        let count = a.count.min(MAX_IO).min(room);
        let (r, _) = cx.export.read(&cx.caller, &fh, a.offset, count);
        let d = r.map_err(from_fs)?;
        Ok(p::Read4resok {
            eof: d.eof,
            data: d.data,
        })
    })();
    match r {
        Ok(ok) => (
            p::NfsResop4::OpRead(p::Read4res::Nfs4Ok(ok)),
            p::Nfsstat4::Nfs4Ok,
        ),
        Err(s) => (p::NfsResop4::OpRead(p::Read4res::Default(s)), s),
    }
}

/// WRITE.
pub(crate) fn write(cx: &mut Ctx<'_>, a: &p::Write4args) -> Done {
    let r = (|| {
        let client = cx.client()?;
        let fh = cx.fh()?;
        cx.writable()?;
        regular(cx, &fh)?;
        let id = cx.stateid(&a.stateid)?;
        cx.core
            .lock()
            .check_io(Some(client), &id, &fh, true, cx.now)
            .map_err(from_state)?;
        let stable = match a.stable {
            p::StableHow4::Unstable4 => StableHow::Unstable,
            p::StableHow4::DataSync4 => StableHow::DataSync,
            p::StableHow4::FileSync4 => StableHow::FileSync,
        };
        let w = cx
            .export
            .write(&cx.caller, &fh, a.offset, &a.data, stable)
            .result
            .map_err(from_fs)?;
        Ok(p::Write4resok {
            count: w.count,
            committed: match w.committed {
                StableHow::Unstable => p::StableHow4::Unstable4,
                StableHow::DataSync => p::StableHow4::DataSync4,
                StableHow::FileSync => p::StableHow4::FileSync4,
            },
            writeverf: w.verf,
        })
    })();
    match r {
        Ok(ok) => (
            p::NfsResop4::OpWrite(p::Write4res::Nfs4Ok(ok)),
            p::Nfsstat4::Nfs4Ok,
        ),
        Err(s) => (p::NfsResop4::OpWrite(p::Write4res::Default(s)), s),
    }
}

/// COMMIT: the whole file is synced; a range past 2^64 is
/// `NFS4ERR_INVAL` (RFC 8881 §18.3.3).
pub(crate) fn commit(cx: &mut Ctx<'_>, a: &p::Commit4args) -> Done {
    let r = (|| {
        let fh = cx.fh()?;
        if a.count != 0 && a.offset.checked_add(u64::from(a.count)).is_none() {
            return Err(p::Nfsstat4::Nfs4errInval);
        }
        regular(cx, &fh)?;
        let verf = cx.export.commit(&cx.caller, &fh).result.map_err(from_fs)?;
        Ok(p::Commit4resok { writeverf: verf })
    })();
    match r {
        Ok(ok) => (
            p::NfsResop4::OpCommit(p::Commit4res::Nfs4Ok(ok)),
            p::Nfsstat4::Nfs4Ok,
        ),
        Err(s) => (p::NfsResop4::OpCommit(p::Commit4res::Default(s)), s),
    }
}

/// READLINK.
pub(crate) fn readlink(cx: &mut Ctx<'_>) -> Done {
    let r = (|| {
        let fh = cx.fh()?;
        let (target, _) = cx.export.readlink(&cx.caller, &fh).map_err(from_fs)?;
        Ok(p::Readlink4resok {
            link: Bytes::from(target),
        })
    })();
    match r {
        Ok(ok) => (
            p::NfsResop4::OpReadlink(p::Readlink4res::Nfs4Ok(ok)),
            p::Nfsstat4::Nfs4Ok,
        ),
        Err(s) => (p::NfsResop4::OpReadlink(p::Readlink4res::Default(s)), s),
    }
}
