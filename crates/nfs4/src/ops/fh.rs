//! The current and saved file handles, and names: PUTFH, PUTROOTFH,
//! PUTPUBFH, GETFH, SAVEFH, RESTOREFH, LOOKUP, LOOKUPP, SECINFO,
//! SECINFO_NO_NAME (RFC 8881 §18.13–18.29, §18.45).
//!
//! The export is the root of the server's namespace (no pseudo file
//! system): PUTROOTFH and PUTPUBFH give the export's root, whose handle is
//! the one NFSv3's MOUNT gives. Names are checked as NFSv4 asks: empty is
//! `NFS4ERR_INVAL`, `.`, `..` and names with `/` or NUL are
//! `NFS4ERR_BADNAME`, more than 255 octets `NFS4ERR_NAMETOOLONG`.

use bytes::Bytes;
use rpcrdma_nfs3::fs::{FileHandle, FileType, NAME_MAX};

use crate::compound::{from_fs, Ctx, Done};
use crate::proto::nfs4 as p;

use super::status;

/// Checks a component name from the wire.
pub(crate) fn check_name(name: &[u8]) -> Result<(), p::Nfsstat4> {
    if name.is_empty() {
        return Err(p::Nfsstat4::Nfs4errInval);
    }
    if name.len() > NAME_MAX {
        return Err(p::Nfsstat4::Nfs4errNametoolong);
    }
    if name == b"." || name == b".." || name.contains(&b'/') || name.contains(&0) {
        return Err(p::Nfsstat4::Nfs4errBadname);
    }
    Ok(())
}

/// The type of the current object, checked to be a directory (a
/// symbolic link is `NFS4ERR_SYMLINK`, anything else `NFS4ERR_NOTDIR`).
pub(crate) fn dir_fh(cx: &Ctx<'_>) -> Result<FileHandle, p::Nfsstat4> {
    let fh = cx.fh()?;
    match cx.core.export.getattr(&fh).map_err(from_fs)?.ftype {
        FileType::Directory => Ok(fh),
        FileType::Symlink => Err(p::Nfsstat4::Nfs4errSymlink),
        _ => Err(p::Nfsstat4::Nfs4errNotdir),
    }
}

/// PUTFH: any handle of ours that still names a file.
pub(crate) fn putfh(cx: &mut Ctx<'_>, x: &p::Putfh4args) -> Done {
    let r = (|| {
        if x.object.len() > p::NFS4_FHSIZE as usize {
            return Err(p::Nfsstat4::Nfs4errBadhandle);
        }
        let fh = FileHandle::from_bytes(&x.object).map_err(from_fs)?;
        cx.core.export.getattr(&fh).map_err(from_fs)?;
        cx.cfh = Some(fh);
        cx.cstateid = None;
        Ok(())
    })();
    let s = status(&r);
    (p::NfsResop4::OpPutfh(p::Putfh4res { status: s }), s)
}

/// PUTROOTFH and PUTPUBFH: the export's root.
pub(crate) fn putrootfh(cx: &mut Ctx<'_>, a: &p::NfsArgop4) -> Done {
    cx.cfh = Some(cx.core.export.root_handle());
    cx.cstateid = None;
    let s = p::Nfsstat4::Nfs4Ok;
    let r = match a {
        p::NfsArgop4::OpPutpubfh => p::NfsResop4::OpPutpubfh(p::Putpubfh4res { status: s }),
        _ => p::NfsResop4::OpPutrootfh(p::Putrootfh4res { status: s }),
    };
    (r, s)
}

/// GETFH.
pub(crate) fn getfh(cx: &mut Ctx<'_>) -> Done {
    match cx.fh() {
        Ok(fh) => (
            p::NfsResop4::OpGetfh(p::Getfh4res::Nfs4Ok(p::Getfh4resok {
                object: Bytes::copy_from_slice(fh.as_bytes()),
            })),
            p::Nfsstat4::Nfs4Ok,
        ),
        Err(s) => (p::NfsResop4::OpGetfh(p::Getfh4res::Default(s)), s),
    }
}

/// SAVEFH: the current handle and stateid are saved.
pub(crate) fn savefh(cx: &mut Ctx<'_>) -> Done {
    let r = cx.fh().map(|fh| {
        cx.sfh = Some(fh);
        cx.sstateid = cx.cstateid;
    });
    let s = status(&r);
    (p::NfsResop4::OpSavefh(p::Savefh4res { status: s }), s)
}

/// RESTOREFH: `NFS4ERR_RESTOREFH` when nothing was saved.
pub(crate) fn restorefh(cx: &mut Ctx<'_>) -> Done {
    let s = match cx.sfh.clone() {
        Some(fh) => {
            cx.cfh = Some(fh);
            cx.cstateid = cx.sstateid;
            p::Nfsstat4::Nfs4Ok
        }
        None => p::Nfsstat4::Nfs4errRestorefh,
    };
    (p::NfsResop4::OpRestorefh(p::Restorefh4res { status: s }), s)
}

/// LOOKUP.
pub(crate) fn lookup(cx: &mut Ctx<'_>, x: &p::Lookup4args) -> Done {
    let r = (|| {
        check_name(&x.objname)?;
        let dir = dir_fh(cx)?;
        let (r, _) = cx.core.export.lookup(&cx.caller, &dir, &x.objname);
        let (fh, _) = r.map_err(from_fs)?;
        cx.cfh = Some(fh);
        cx.cstateid = None;
        Ok(())
    })();
    let s = status(&r);
    (p::NfsResop4::OpLookup(p::Lookup4res { status: s }), s)
}

/// LOOKUPP: the parent; the root has none (`NFS4ERR_NOENT`).
pub(crate) fn lookupp(cx: &mut Ctx<'_>) -> Done {
    let r = (|| {
        let dir = dir_fh(cx)?;
        if dir == cx.core.export.root_handle() {
            return Err(p::Nfsstat4::Nfs4errNoent);
        }
        let (r, _) = cx.core.export.lookup(&cx.caller, &dir, b"..");
        let (fh, _) = r.map_err(from_fs)?;
        cx.cfh = Some(fh);
        cx.cstateid = None;
        Ok(())
    })();
    let s = status(&r);
    (p::NfsResop4::OpLookupp(p::Lookupp4res { status: s }), s)
}

/// The flavors the export takes: AUTH_SYS (and AUTH_NONE, squashed to the
/// anonymous user).
fn flavors() -> p::Secinfo4resok {
    vec![p::Secinfo4::Default(1), p::Secinfo4::Default(0)]
}

/// SECINFO: the flavors for a name in the current directory; the current
/// handle is consumed (RFC 8881 §18.29.3).
pub(crate) fn secinfo(cx: &mut Ctx<'_>, x: &p::Secinfo4args) -> Done {
    let r = (|| {
        check_name(&x.name)?;
        let dir = dir_fh(cx)?;
        let (r, _) = cx.core.export.lookup(&cx.caller, &dir, &x.name);
        r.map_err(from_fs)?;
        Ok(())
    })();
    cx.cfh = None;
    match r {
        Ok(()) => (
            p::NfsResop4::OpSecinfo(p::Secinfo4res::Nfs4Ok(flavors())),
            p::Nfsstat4::Nfs4Ok,
        ),
        Err(s) => (p::NfsResop4::OpSecinfo(p::Secinfo4res::Default(s)), s),
    }
}

/// SECINFO_NO_NAME: the flavors for the current handle or its parent;
/// the current handle is consumed.
pub(crate) fn secinfo_no_name(cx: &mut Ctx<'_>, x: &p::SecinfoNoName4args) -> Done {
    let r = match (cx.fh(), x) {
        (Err(e), _) => Err(e),
        (Ok(fh), p::SecinfoStyle4::SecinfoStyle4Parent) if fh == cx.core.export.root_handle() => {
            Err(p::Nfsstat4::Nfs4errNoent)
        }
        (Ok(_), _) => Ok(()),
    };
    cx.cfh = None;
    match r {
        Ok(()) => (
            p::NfsResop4::OpSecinfoNoName(p::Secinfo4res::Nfs4Ok(flavors())),
            p::Nfsstat4::Nfs4Ok,
        ),
        Err(s) => (p::NfsResop4::OpSecinfoNoName(p::Secinfo4res::Default(s)), s),
    }
}
