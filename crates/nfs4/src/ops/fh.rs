//! The current and saved file handles, and names: PUTFH, PUTROOTFH,
//! PUTPUBFH, GETFH, SAVEFH, RESTOREFH, LOOKUP, LOOKUPP, SECINFO,
//! SECINFO_NO_NAME (RFC 8881 §18.13–18.29, §18.45).
//!
//! With one directory from the command line, its root is the root of the
//! server's namespace: PUTROOTFH and PUTPUBFH give the export's root, whose
//! handle is the one NFSv3's MOUNT gives. With an exports file they give
//! the root of the pseudo file system (`pseudo.rs`), and LOOKUP crosses
//! from it into the exports the client may use. Every handle is admitted
//! for the client before it becomes current (PUTFH, PUTROOTFH, LOOKUP into
//! an export): `NFS4ERR_ACCESS` if the exports do not let it use the
//! export. Names are checked as NFSv4 asks: empty is
//! `NFS4ERR_INVAL`, `.`, `..` and names with `/` or NUL are
//! `NFS4ERR_BADNAME`, more than 255 octets `NFS4ERR_NAMETOOLONG`.

use bytes::Bytes;
use rpcrdma_nfs3::fs::{FileHandle, FileType, NAME_MAX};

use crate::ctx::{from_fs, Ctx, Done};
use crate::proto::nfs4 as p;
use crate::pseudo::{is_pseudo, Child};

use super::results::status;

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
    match cx.export.getattr(&fh).map_err(from_fs)?.ftype {
        FileType::Directory => Ok(fh),
        FileType::Symlink => Err(p::Nfsstat4::Nfs4errSymlink),
        _ => Err(p::Nfsstat4::Nfs4errNotdir),
    }
}

/// PUTFH: any handle of ours that still names a file, of an export the
/// client may use (or a pseudo directory).
pub(crate) fn putfh(cx: &mut Ctx<'_>, x: &p::Putfh4args) -> Done {
    let r = (|| {
        if x.object.len() > p::NFS4_FHSIZE as usize {
            return Err(p::Nfsstat4::Nfs4errBadhandle);
        }
        let fh = FileHandle::from_bytes(&x.object).map_err(from_fs)?;
        if is_pseudo(&fh) {
            // A pseudo directory of the exports now in force, or stale.
            cx.pseudo_dir(&fh).ok_or(p::Nfsstat4::Nfs4errStale)?;
        } else {
            cx.enter(&fh, "PUTFH")?;
            cx.export.getattr(&fh).map_err(from_fs)?;
        }
        cx.cfh = Some(fh);
        cx.cstateid = None;
        Ok(())
    })();
    let s = status(&r);
    (p::NfsResop4::OpPutfh(p::Putfh4res { status: s }), s)
}

/// PUTROOTFH and PUTPUBFH: the root of the namespace: the export's root
/// for one directory (or an export of `/`), else the pseudo file system's.
pub(crate) fn putrootfh(cx: &mut Ctx<'_>, a: &p::NfsArgop4) -> Done {
    let r = (|| {
        if let Some(ps) = cx.pseudo.clone() {
            cx.cfh = Some(ps.handle(ps.root()));
        } else {
            let table = cx.table.clone();
            let entry = table
                .entries()
                .iter()
                .find(|e| table.is_single() || e.path() == b"/")
                .ok_or(p::Nfsstat4::Nfs4errNoent)?;
            cx.enter_entry(entry, "PUTROOTFH")?;
            cx.cfh = Some(cx.export.root_handle());
        }
        cx.cstateid = None;
        Ok(())
    })();
    let s = status(&r);
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

/// SAVEFH: the current handle and stateid are saved (with the export
/// and identity they go with).
pub(crate) fn savefh(cx: &mut Ctx<'_>) -> Done {
    let r = cx.fh().map(|fh| {
        cx.sfh = Some(fh);
        cx.sstateid = cx.cstateid;
        cx.saved = Some((cx.export.clone(), cx.caller.clone()));
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
            if let Some((export, caller)) = cx.saved.clone() {
                cx.export = export;
                cx.caller = caller;
            }
            p::Nfsstat4::Nfs4Ok
        }
        None => p::Nfsstat4::Nfs4errRestorefh,
    };
    (p::NfsResop4::OpRestorefh(p::Restorefh4res { status: s }), s)
}

/// LOOKUP; in a pseudo directory, to the next one or across into an
/// export (`NFS4ERR_ACCESS` if the client may not use it).
pub(crate) fn lookup(cx: &mut Ctx<'_>, x: &p::Lookup4args) -> Done {
    let r = (|| {
        check_name(&x.objname)?;
        let fh = cx.fh()?;
        if let Some(d) = cx.pseudo_dir(&fh) {
            let ps = cx.pseudo.clone().ok_or(p::Nfsstat4::Nfs4errStale)?;
            match ps.child(d, &x.objname) {
                None => return Err(p::Nfsstat4::Nfs4errNoent),
                Some(Child::Dir(c)) => cx.cfh = Some(ps.handle(c)),
                Some(Child::Export(id)) => {
                    let table = cx.table.clone();
                    let entry = table.by_id(id).ok_or(p::Nfsstat4::Nfs4errStale)?;
                    cx.enter_entry(entry, "LOOKUP")?;
                    cx.cfh = Some(cx.export.root_handle());
                }
            }
            cx.cstateid = None;
            return Ok(());
        }
        if is_pseudo(&fh) {
            return Err(p::Nfsstat4::Nfs4errStale);
        }
        let dir = dir_fh(cx)?;
        let (r, _) = cx.export.lookup(&cx.caller, &dir, &x.objname);
        let (fh, _) = r.map_err(from_fs)?;
        cx.cfh = Some(fh);
        cx.cstateid = None;
        Ok(())
    })();
    let s = status(&r);
    (p::NfsResop4::OpLookup(p::Lookup4res { status: s }), s)
}

/// LOOKUPP: the parent; the root has none (`NFS4ERR_NOENT`); an export's
/// root has its pseudo directory, if there is a pseudo file system.
pub(crate) fn lookupp(cx: &mut Ctx<'_>) -> Done {
    let r = (|| {
        let fh = cx.fh()?;
        if let Some(d) = cx.pseudo_dir(&fh) {
            let ps = cx.pseudo.clone().ok_or(p::Nfsstat4::Nfs4errStale)?;
            let up = ps.parent(d).ok_or(p::Nfsstat4::Nfs4errNoent)?;
            cx.cfh = Some(ps.handle(up));
            cx.cstateid = None;
            return Ok(());
        }
        let dir = dir_fh(cx)?;
        if dir == cx.export.root_handle() {
            let ps = cx.pseudo.clone().ok_or(p::Nfsstat4::Nfs4errNoent)?;
            let (up, _) = ps
                .mount_of(cx.export.export_id())
                .ok_or(p::Nfsstat4::Nfs4errNoent)?;
            cx.cfh = Some(ps.handle(up));
            cx.cstateid = None;
            return Ok(());
        }
        let (r, _) = cx.export.lookup(&cx.caller, &dir, b"..");
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
        let fh = cx.fh()?;
        if let Some(d) = cx.pseudo_dir(&fh) {
            let ps = cx.pseudo.clone().ok_or(p::Nfsstat4::Nfs4errStale)?;
            return match ps.child(d, &x.name) {
                None => Err(p::Nfsstat4::Nfs4errNoent),
                Some(Child::Dir(_)) => Ok(()),
                Some(Child::Export(id)) => {
                    let table = cx.table.clone();
                    let entry = table.by_id(id).ok_or(p::Nfsstat4::Nfs4errStale)?;
                    if entry.access(cx.peer).is_none() {
                        cx.core.exports.refused(cx.peer, entry, "SECINFO");
                        return Err(p::Nfsstat4::Nfs4errAccess);
                    }
                    Ok(())
                }
            };
        }
        let dir = dir_fh(cx)?;
        let (r, _) = cx.export.lookup(&cx.caller, &dir, &x.name);
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
        (Ok(fh), p::SecinfoStyle4::SecinfoStyle4Parent)
            if cx.pseudo_dir(&fh).is_some_and(|d| d == 0)
                || (cx.pseudo.is_none() && fh == cx.export.root_handle()) =>
        {
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
