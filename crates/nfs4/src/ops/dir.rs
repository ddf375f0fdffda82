//! Directories: CREATE (everything but regular files, which OPEN makes),
//! REMOVE (files and directories), RENAME, LINK, READDIR (RFC 8881 §18.4,
//! §18.9, §18.23, §18.25, §18.26).
//!
//! An object another client holds a delegation of is not removed,
//! renamed over or away until the delegation is returned
//! (`NFS4ERR_DELAY`). READDIR's cookies are the export's (the file
//! system's own directory offsets, as for NFSv3); `.` and `..` are not
//! listed, cookies 1 and 2 are reserved (`NFS4ERR_BAD_COOKIE`), and an
//! entry that vanishes between the listing and its attributes is left
//! out, as Linux nfsd does.

use bytes::Bytes;
use rpcrdma_nfs3::fs::{FileHandle, SpecialFile, Wcc};

use crate::attrs::{self, Bitmap};
use crate::ctx::{from_fs, Ctx, Done};
use crate::proto::nfs4 as p;
use crate::pseudo::{self, is_pseudo, Child};

use super::attr::{context, may_change};
use super::fh::{check_name, dir_fh};
use super::open::cinfo;

fn cinfo_of(w: &Wcc) -> p::ChangeInfo4 {
    cinfo(w.before, w.after.map(|a| attrs::change_of(a.ctime)))
}

/// CREATE.
pub(crate) fn create(cx: &mut Ctx<'_>, a: &p::Create4args) -> Done {
    let r = (|| {
        check_name(&a.objname)?;
        let dir = dir_fh(cx)?;
        cx.writable()?;
        let (set, mask) = attrs::decode_set(&a.createattrs).map_err(|e| e.status())?;
        let ex = &cx.export;
        let name = &a.objname;
        let out = match &a.objtype {
            p::Createtype4::Nf4lnk(target) => ex.symlink(&cx.caller, &dir, name, target, &set),
            p::Createtype4::Nf4dir => ex.mkdir(&cx.caller, &dir, name, &set),
            p::Createtype4::Nf4blk(d) => ex.mknod(
                &cx.caller,
                &dir,
                name,
                SpecialFile::Block(d.specdata1, d.specdata2),
                &set,
            ),
            p::Createtype4::Nf4chr(d) => ex.mknod(
                &cx.caller,
                &dir,
                name,
                SpecialFile::Char(d.specdata1, d.specdata2),
                &set,
            ),
            p::Createtype4::Nf4sock => ex.mknod(&cx.caller, &dir, name, SpecialFile::Socket, &set),
            p::Createtype4::Nf4fifo => ex.mknod(&cx.caller, &dir, name, SpecialFile::Fifo, &set),
            p::Createtype4::Default(_) => return Err(p::Nfsstat4::Nfs4errBadtype),
        };
        let made = out.result.map_err(from_fs)?;
        cx.cfh = Some(made.handle);
        cx.cstateid = None;
        Ok(p::Create4resok {
            cinfo: cinfo_of(&out.wcc),
            attrset: mask.words(),
        })
    })();
    match r {
        Ok(ok) => (
            p::NfsResop4::OpCreate(p::Create4res::Nfs4Ok(ok)),
            p::Nfsstat4::Nfs4Ok,
        ),
        Err(s) => (p::NfsResop4::OpCreate(p::Create4res::Default(s)), s),
    }
}

/// The object `name` in `dir`, if it exists, after recalling other
/// clients' delegations of it.
fn victim(
    cx: &Ctx<'_>,
    dir: &FileHandle,
    name: &[u8],
) -> Result<Option<(FileHandle, bool)>, p::Nfsstat4> {
    let (r, _) = cx.export.lookup(&cx.caller, dir, name);
    match r {
        Ok((fh, attr)) => {
            may_change(cx, &fh)?;
            Ok(Some((
                fh,
                attr.ftype == rpcrdma_nfs3::fs::FileType::Directory,
            )))
        }
        Err(_) => Ok(None),
    }
}

/// REMOVE: a file or a directory.
pub(crate) fn remove(cx: &mut Ctx<'_>, a: &p::Remove4args) -> Done {
    let r = (|| {
        check_name(&a.target)?;
        let dir = dir_fh(cx)?;
        cx.writable()?;
        let Some((_, is_dir)) = victim(cx, &dir, &a.target)? else {
            return Err(p::Nfsstat4::Nfs4errNoent);
        };
        let out = if is_dir {
            cx.export.rmdir(&cx.caller, &dir, &a.target)
        } else {
            cx.export.remove(&cx.caller, &dir, &a.target)
        };
        out.result.map_err(from_fs)?;
        Ok(p::Remove4resok {
            cinfo: cinfo_of(&out.wcc),
        })
    })();
    match r {
        Ok(ok) => (
            p::NfsResop4::OpRemove(p::Remove4res::Nfs4Ok(ok)),
            p::Nfsstat4::Nfs4Ok,
        ),
        Err(s) => (p::NfsResop4::OpRemove(p::Remove4res::Default(s)), s),
    }
}

/// The saved handle must be of the current handle's export
/// (`NFS4ERR_XDEV`: RENAME and LINK do not cross exports).
fn same_export(cx: &Ctx<'_>, saved: &FileHandle) -> Result<(), p::Nfsstat4> {
    match &cx.saved {
        Some((export, _)) if !is_pseudo(saved) && std::sync::Arc::ptr_eq(export, &cx.export) => {
            Ok(())
        }
        _ => Err(p::Nfsstat4::Nfs4errXdev),
    }
}

/// RENAME: from the saved directory to the current one.
pub(crate) fn rename(cx: &mut Ctx<'_>, a: &p::Rename4args) -> Done {
    let r = (|| {
        check_name(&a.oldname)?;
        check_name(&a.newname)?;
        let to = dir_fh(cx)?;
        let from = cx.sfh.clone().ok_or(p::Nfsstat4::Nfs4errNofilehandle)?;
        same_export(cx, &from)?;
        cx.writable()?;
        if victim(cx, &from, &a.oldname)?.is_none() {
            return Err(p::Nfsstat4::Nfs4errNoent);
        }
        victim(cx, &to, &a.newname)?;
        let (r, fw, tw) = cx
            .export
            .rename(&cx.caller, &from, &a.oldname, &to, &a.newname);
        r.map_err(from_fs)?;
        Ok(p::Rename4resok {
            source_cinfo: cinfo_of(&fw),
            target_cinfo: cinfo_of(&tw),
        })
    })();
    match r {
        Ok(ok) => (
            p::NfsResop4::OpRename(p::Rename4res::Nfs4Ok(ok)),
            p::Nfsstat4::Nfs4Ok,
        ),
        Err(s) => (p::NfsResop4::OpRename(p::Rename4res::Default(s)), s),
    }
}

/// LINK: the saved file, a new name in the current directory.
pub(crate) fn link(cx: &mut Ctx<'_>, a: &p::Link4args) -> Done {
    let r = (|| {
        check_name(&a.newname)?;
        let dir = dir_fh(cx)?;
        let file = cx.sfh.clone().ok_or(p::Nfsstat4::Nfs4errNofilehandle)?;
        same_export(cx, &file)?;
        cx.writable()?;
        let (r, _, w) = cx.export.link(&cx.caller, &file, &dir, &a.newname);
        r.map_err(from_fs)?;
        Ok(p::Link4resok {
            cinfo: cinfo_of(&w),
        })
    })();
    match r {
        Ok(ok) => (
            p::NfsResop4::OpLink(p::Link4res::Nfs4Ok(ok)),
            p::Nfsstat4::Nfs4Ok,
        ),
        Err(s) => (p::NfsResop4::OpLink(p::Link4res::Default(s)), s),
    }
}

/// Octets of a READDIR4resok besides its entries: status, verifier, the
/// list's end and eof.
const READDIR_FIXED: usize = 4 + 8 + 4 + 4;

/// The largest READDIR reply built, whatever the client offers.
const MAX_READDIR_REPLY: usize = 1 << 20;

/// READDIR.
pub(crate) fn readdir(cx: &mut Ctx<'_>, a: &p::Readdir4args) -> Done {
    let r = readdir_inner(cx, a);
    match r {
        Ok(ok) => (
            p::NfsResop4::OpReaddir(p::Readdir4res::Nfs4Ok(ok)),
            p::Nfsstat4::Nfs4Ok,
        ),
        Err(s) => (p::NfsResop4::OpReaddir(p::Readdir4res::Default(s)), s),
    }
}

/// The octets an entry takes in a READDIR reply.
fn entry_len(name: &[u8], f: &p::Fattr4) -> usize {
    4 + 8
        + 4
        + name.len().div_ceil(4) * 4
        + 4
        + 4 * f.attrmask.len()
        + 4
        + f.attr_vals.len().div_ceil(4) * 4
}

fn readdir_inner(cx: &mut Ctx<'_>, a: &p::Readdir4args) -> Result<p::Readdir4resok, p::Nfsstat4> {
    let fh = cx.fh()?;
    if a.cookie == 1 || a.cookie == 2 {
        return Err(p::Nfsstat4::Nfs4errBadCookie);
    }
    let request = Bitmap::from_words(&a.attr_request);
    if attrs::asks_write_only(request) {
        return Err(p::Nfsstat4::Nfs4errInval);
    }
    let budget = (a.maxcount as usize)
        .min(MAX_READDIR_REPLY)
        .min(cx.fore.max_response.saturating_sub(512) as usize);
    if is_pseudo(&fh) {
        let d = cx.pseudo_dir(&fh).ok_or(p::Nfsstat4::Nfs4errStale)?;
        return pseudo_readdir(cx, d, a.cookie, request, budget);
    }
    let dir = dir_fh(cx)?;
    let fs = super::attr::fsstat_for(cx, &dir, request);
    let mut used = READDIR_FIXED;
    let mut out: Vec<(u64, Bytes, p::Fattr4)> = Vec::new();
    let (r, _) = cx
        .export
        .readdir(&cx.caller, &dir, a.cookie, a.cookieverf, true, |e| {
            if &e.name[..] == b"." || &e.name[..] == b".." {
                return true;
            }
            let (Some(attr), Some(fh)) = (&e.attr, &e.handle) else {
                // Gone, or another file system: not listed.
                return true;
            };
            let f = attrs::encode(&context(cx, fh, attr, fs.as_ref()), request);
            let len = entry_len(&e.name, &f);
            if used + len > budget {
                return false;
            }
            used += len;
            out.push((e.cookie, e.name.clone(), f));
            true
        });
    let rd = r.map_err(from_fs)?;
    if out.is_empty() && !rd.eof {
        return Err(p::Nfsstat4::Nfs4errToosmall);
    }
    let mut entries: Option<Box<p::Entry4>> = None;
    for (cookie, name, attrs) in out.into_iter().rev() {
        entries = Some(Box::new(p::Entry4 {
            cookie,
            name,
            attrs,
            nextentry: entries,
        }));
    }
    Ok(p::Readdir4resok {
        cookieverf: rd.verf,
        reply: p::Dirlist4 {
            entries,
            eof: rd.eof,
        },
    })
}

/// READDIR of a pseudo directory: the names that lead to an export the
/// client may use (the others are not listed), with cookie `3 + index`.
/// An export's root is listed with its own attributes, mounted on the
/// pseudo directory's id for its path.
fn pseudo_readdir(
    cx: &Ctx<'_>,
    d: usize,
    cookie: u64,
    request: Bitmap,
    budget: usize,
) -> Result<p::Readdir4resok, p::Nfsstat4> {
    let ps = cx.pseudo.clone().ok_or(p::Nfsstat4::Nfs4errStale)?;
    let table = cx.table.clone();
    let admits = |id: u32| pseudo::admits(&table, cx.peer, id);
    let start = if cookie == 0 { 0 } else { cookie - 2 } as usize;
    let children = ps.children(d);
    let mut used = READDIR_FIXED;
    let mut out: Vec<(u64, Bytes, p::Fattr4)> = Vec::new();
    let mut eof = true;
    for (i, (name, child)) in children.iter().enumerate().skip(start) {
        if !ps.leads_to(*child, &admits) {
            continue;
        }
        let f = match *child {
            Child::Dir(c) => {
                let attr = ps.attr(c, cx.core.born);
                let fh = ps.handle(c);
                attrs::encode(&context(cx, &fh, &attr, None), request)
            }
            Child::Export(id) => {
                let Some(entry) = table.by_id(id) else {
                    continue;
                };
                let export = entry.export();
                let fh = export.root_handle();
                let Ok(attr) = export.getattr(&fh) else {
                    continue;
                };
                let fs = if attrs::needs_fsstat(request) {
                    export.fsstat(&fh).0.ok()
                } else {
                    None
                };
                let mounted_on = ps.mount_of(id).map_or(attr.fileid, |(_, m)| m);
                attrs::encode(
                    &attrs::Context {
                        attr: &attr,
                        fh: fh.as_bytes(),
                        fs: fs.as_ref(),
                        lease: cx.core.lease_secs(),
                        mounted_on,
                        max_io: u64::from(rpcrdma_nfs3::fs::MAX_IO),
                    },
                    request,
                )
            }
        };
        let len = entry_len(name, &f);
        if used + len > budget {
            eof = false;
            break;
        }
        used += len;
        out.push((3 + i as u64, Bytes::copy_from_slice(name), f));
    }
    if out.is_empty() && !eof {
        return Err(p::Nfsstat4::Nfs4errToosmall);
    }
    let mut entries: Option<Box<p::Entry4>> = None;
    for (cookie, name, attrs) in out.into_iter().rev() {
        entries = Some(Box::new(p::Entry4 {
            cookie,
            name,
            attrs,
            nextentry: entries,
        }));
    }
    Ok(p::Readdir4resok {
        cookieverf: [0; 8],
        reply: p::Dirlist4 { entries, eof },
    })
}
