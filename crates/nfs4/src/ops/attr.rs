//! Attributes and access: GETATTR, SETATTR, VERIFY, NVERIFY, ACCESS (RFC
//! 8881 §18.1, §18.7, §18.15, §18.30, §18.31).

use rpcrdma_nfs3::fs::{Attr, FileHandle, FsStat, MAX_IO};

use crate::attrs::{self, Bitmap, Context};
use crate::ctx::{from_fs, from_state, Ctx, Done};
use crate::proto::nfs4 as p;
use crate::pseudo::{is_pseudo, PSEUDO_FSID};
use crate::state::StateId;

use super::results::status;

/// The attribute context of an object.
pub(crate) fn context<'a>(
    cx: &Ctx<'_>,
    fh: &'a FileHandle,
    attr: &'a Attr,
    fs: Option<&'a FsStat>,
) -> Context<'a> {
    // An export's root below a pseudo directory is mounted on it: its
    // `mounted_on_fileid` is the pseudo file system's id of its path.
    let mounted_on = cx
        .pseudo
        .as_ref()
        .filter(|_| attr.fsid != PSEUDO_FSID && *fh == cx.export.root_handle())
        .and_then(|ps| ps.mount_of(cx.export.export_id()))
        .map_or(attr.fileid, |(_, id)| id);
    Context {
        attr,
        fh: fh.as_bytes(),
        fs,
        lease: cx.core.lease_secs(),
        mounted_on,
        max_io: u64::from(MAX_IO),
    }
}

/// The file system's counts, if `request` needs them (none for a pseudo
/// directory).
pub(crate) fn fsstat_for(cx: &Ctx<'_>, fh: &FileHandle, request: Bitmap) -> Option<FsStat> {
    if !attrs::needs_fsstat(request) || is_pseudo(fh) {
        return None;
    }
    cx.export.fsstat(fh).0.ok()
}

/// The attributes of the object `fh` names: a file of the current export,
/// or a pseudo directory.
pub(crate) fn attr_of(cx: &Ctx<'_>, fh: &FileHandle) -> Result<Attr, p::Nfsstat4> {
    if is_pseudo(fh) {
        let ps = cx.pseudo.as_ref().ok_or(p::Nfsstat4::Nfs4errStale)?;
        let d = ps.find(fh).ok_or(p::Nfsstat4::Nfs4errStale)?;
        return Ok(ps.attr(d, cx.core.born));
    }
    cx.export.getattr(fh).map_err(from_fs)
}

/// The attributes `request` asks of `fh`.
pub(crate) fn fattr_of(
    cx: &Ctx<'_>,
    fh: &FileHandle,
    request: Bitmap,
) -> Result<p::Fattr4, p::Nfsstat4> {
    let attr = attr_of(cx, fh)?;
    let fs = fsstat_for(cx, fh, request);
    Ok(attrs::encode(&context(cx, fh, &attr, fs.as_ref()), request))
}

/// GETATTR.
pub(crate) fn getattr(cx: &mut Ctx<'_>, x: &p::Getattr4args) -> Done {
    let r = (|| {
        let fh = cx.fh()?;
        let request = Bitmap::from_words(&x.attr_request);
        if attrs::asks_write_only(request) {
            return Err(p::Nfsstat4::Nfs4errInval);
        }
        fattr_of(cx, &fh, request)
    })();
    match r {
        Ok(f) => (
            p::NfsResop4::OpGetattr(p::Getattr4res::Nfs4Ok(p::Getattr4resok {
                obj_attributes: f,
            })),
            p::Nfsstat4::Nfs4Ok,
        ),
        Err(s) => (p::NfsResop4::OpGetattr(p::Getattr4res::Default(s)), s),
    }
}

/// The checks before an object changes: another client's delegation of
/// it is recalled (`NFS4ERR_DELAY` until it is returned).
pub(crate) fn may_change(cx: &Ctx<'_>, fh: &FileHandle) -> Result<(), p::Nfsstat4> {
    let client = cx.client.ok_or(p::Nfsstat4::Nfs4errOpNotInSession)?;
    let mut st = cx.core.lock();
    if st.recall_others(fh, client, cx.now) {
        return Err(p::Nfsstat4::Nfs4errDelay);
    }
    Ok(())
}

/// SETATTR: a size change is I/O under the stateid; any change recalls
/// other clients' delegations first.
pub(crate) fn setattr(cx: &mut Ctx<'_>, x: &p::Setattr4args) -> Done {
    let r = (|| {
        let fh = cx.fh()?;
        let (set, mask) = attrs::decode_set(&x.obj_attributes).map_err(|e| e.status())?;
        cx.writable()?;
        let id: StateId = cx.stateid(&x.stateid)?;
        if set.size.is_some() {
            let client = cx.client()?;
            cx.core
                .lock()
                .check_io(Some(client), &id, &fh, true, cx.now)
                .map_err(from_state)?;
        }
        may_change(cx, &fh)?;
        cx.export
            .setattr(&cx.caller, &fh, &set, None)
            .result
            .map_err(from_fs)?;
        Ok(mask)
    })();
    let s = status(&r);
    (
        p::NfsResop4::OpSetattr(p::Setattr4res {
            status: s,
            attrsset: r.map(|m| m.words()).unwrap_or_default(),
        }),
        s,
    )
}

/// VERIFY (`negate` false) and NVERIFY.
pub(crate) fn verify(cx: &mut Ctx<'_>, f: &p::Fattr4, negate: bool) -> Done {
    let r = (|| {
        let fh = cx.fh()?;
        let request = Bitmap::from_words(&f.attrmask);
        let attr = attr_of(cx, &fh)?;
        let fs = fsstat_for(cx, &fh, request);
        let same = attrs::same(&context(cx, &fh, &attr, fs.as_ref()), f).map_err(|e| e.status())?;
        match (same, negate) {
            (true, false) | (false, true) => Ok(()),
            (false, false) => Err(p::Nfsstat4::Nfs4errNotSame),
            (true, true) => Err(p::Nfsstat4::Nfs4errSame),
        }
    })();
    let s = status(&r);
    let res = if negate {
        p::NfsResop4::OpNverify(p::Nverify4res { status: s })
    } else {
        p::NfsResop4::OpVerify(p::Verify4res { status: s })
    };
    (res, s)
}

/// The ACCESS bits this server answers (no extended-attribute bits).
const ACCESS_SUPPORTED: u32 = p::ACCESS4_READ
    | p::ACCESS4_LOOKUP
    | p::ACCESS4_MODIFY
    | p::ACCESS4_EXTEND
    | p::ACCESS4_DELETE
    | p::ACCESS4_EXECUTE;

/// ACCESS: by the mode bits, as NFSv3's (the bits are the same).
pub(crate) fn access(cx: &mut Ctx<'_>, x: &p::Access4args) -> Done {
    let r = (|| {
        let fh = cx.fh()?;
        let supported = x.access & ACCESS_SUPPORTED;
        if is_pseudo(&fh) {
            // A pseudo directory can be listed and looked in, nothing more.
            attr_of(cx, &fh)?;
            return Ok(p::Access4resok {
                supported,
                access: supported & (p::ACCESS4_READ | p::ACCESS4_LOOKUP),
            });
        }
        let (granted, _) = cx
            .export
            .access(&cx.caller, &fh, supported)
            .map_err(from_fs)?;
        Ok(p::Access4resok {
            supported,
            access: granted & supported,
        })
    })();
    match r {
        Ok(ok) => (
            p::NfsResop4::OpAccess(p::Access4res::Nfs4Ok(ok)),
            p::Nfsstat4::Nfs4Ok,
        ),
        Err(s) => (p::NfsResop4::OpAccess(p::Access4res::Default(s)), s),
    }
}
