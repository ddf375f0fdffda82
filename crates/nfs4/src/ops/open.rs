//! Opens and delegations: OPEN, OPEN_DOWNGRADE, CLOSE, DELEGRETURN (RFC
//! 8881 §18.2, §18.6, §18.16, §18.18).
//!
//! OPEN names its file by name in the current directory (`CLAIM_NULL`,
//! creating it if asked), by the current handle (`CLAIM_FH`), for a
//! reclaim after a restart (`CLAIM_PREVIOUS`), or under a delegation the
//! client holds (`CLAIM_DELEGATE_CUR`, `CLAIM_DELEG_CUR_FH`: how a client
//! hands back the opens it made locally before it returns a recalled
//! delegation). The state checks (grace, share reservations, other
//! clients' delegations) come before the file is created or truncated.
//! An existing file is opened only with the permission its access needs
//! (read for READ, write for WRITE), the owner excepted as for NFSv3's
//! I/O; a file this OPEN created is open to its creator whatever its mode.
//! `CLAIM_DELEGATE_PREV` and `CLAIM_DELEG_PREV_FH` (delegations held before
//! a client restart) are not supported (`NFS4ERR_NOTSUPP`): this server
//! keeps no delegation across a restart.

use bytes::Bytes;
use rpcrdma_nfs3::fs::{access as acc, CreateHow, FileHandle, FileType, SetAttr, SetTime, WccAttr};

use crate::attrs::{self, Bitmap};
use crate::ctx::{from_fs, from_state, wire, Ctx, Done};
use crate::proto::nfs4 as p;
use crate::state::{Claim, OpenArgs, StateId, ACCESS_READ, ACCESS_WRITE};

use super::fh::{check_name, dir_fh};

/// The change attribute of a directory before and after an operation.
pub(crate) fn cinfo(before: Option<WccAttr>, after: Option<u64>) -> p::ChangeInfo4 {
    let before = before.map_or(0, |w| attrs::change_of(w.ctime));
    p::ChangeInfo4 {
        atomic: false,
        before,
        after: after.unwrap_or(before),
    }
}

/// A regular file, or the status NFSv4.1 gives the others.
fn regular(cx: &Ctx<'_>, fh: &FileHandle) -> Result<(), p::Nfsstat4> {
    match cx.export.getattr(fh).map_err(from_fs)?.ftype {
        FileType::Regular => Ok(()),
        FileType::Directory => Err(p::Nfsstat4::Nfs4errIsdir),
        FileType::Symlink => Err(p::Nfsstat4::Nfs4errSymlink),
        _ => Err(p::Nfsstat4::Nfs4errWrongType),
    }
}

/// The permission an open of an existing file needs.
fn permitted(cx: &Ctx<'_>, fh: &FileHandle, access: u32) -> Result<(), p::Nfsstat4> {
    let attr = cx.export.getattr(fh).map_err(from_fs)?;
    if attr.uid == cx.caller.uid {
        return Ok(());
    }
    let mut want = 0;
    if access & ACCESS_READ != 0 {
        want |= acc::READ;
    }
    if access & ACCESS_WRITE != 0 {
        want |= acc::MODIFY;
    }
    let (granted, _) = cx.export.access(&cx.caller, fh, want).map_err(from_fs)?;
    if granted & want != want {
        return Err(p::Nfsstat4::Nfs4errAccess);
    }
    Ok(())
}

/// What an OPEN resolved to: the file, whether it was created here, the
/// directory's change info and the attributes set.
struct Target {
    file: FileHandle,
    created: bool,
    cinfo: p::ChangeInfo4,
    attrset: Bitmap,
}

/// `CLAIM_NULL`: by name, created if asked.
fn by_name(
    cx: &Ctx<'_>,
    a: &p::Open4args,
    name: &[u8],
    state: &OpenArgs,
) -> Result<Target, p::Nfsstat4> {
    check_name(name)?;
    let dir = dir_fh(cx)?;
    let (found, dattr) = cx.export.lookup(&cx.caller, &dir, name);
    let here = dattr.map(|d| attrs::change_of(d.ctime));
    let same = p::ChangeInfo4 {
        atomic: true,
        before: here.unwrap_or(0),
        after: here.unwrap_or(0),
    };
    let how = match &a.openhow {
        p::Openflag4::Default(_) => {
            let (file, _) = found.map_err(from_fs)?;
            return Ok(Target {
                file,
                created: false,
                cinfo: same,
                attrset: Bitmap::EMPTY,
            });
        }
        p::Openflag4::Open4Create(how) => how,
    };
    cx.writable()?;
    // The state checks first, on an existing file, before truncating it.
    if let Ok((file, _)) = &found {
        cx.core
            .lock()
            .check_open(
                &OpenArgs {
                    file: file.clone(),
                    ..state.clone()
                },
                cx.now,
            )
            .map_err(from_state)?;
    }
    let (how, extra, mut attrset) = match how {
        p::Createhow4::Unchecked4(f) | p::Createhow4::Guarded4(f) => {
            let (set, mask) = attrs::decode_set(f).map_err(|e| e.status())?;
            let h = if matches!(how, p::Createhow4::Guarded4(_)) {
                CreateHow::Guarded(set)
            } else {
                CreateHow::Unchecked(set)
            };
            (h, None, mask)
        }
        p::Createhow4::Exclusive4(v) => (CreateHow::Exclusive(*v), None, Bitmap::EMPTY),
        p::Createhow4::Exclusive41(c) => {
            let (set, mask) = attrs::decode_set(&c.cva_attrs).map_err(|e| e.status())?;
            if mask.outside(attrs::exclcreat()) {
                return Err(p::Nfsstat4::Nfs4errInval);
            }
            (CreateHow::Exclusive(c.cva_verf), Some(set), mask)
        }
    };
    if matches!(how, CreateHow::Exclusive(_)) {
        // The verifier lives in the times until the client sets them.
        attrset.set(p::FATTR4_TIME_ACCESS);
        attrset.set(p::FATTR4_TIME_MODIFY);
    }
    let out = cx.export.create(&cx.caller, &dir, name, how);
    let made = out.result.map_err(from_fs)?;
    if let Some(set) = extra {
        let set = SetAttr {
            atime: SetTime::DontChange,
            mtime: SetTime::DontChange,
            ..set
        };
        if set != SetAttr::default() {
            cx.export
                .setattr(&cx.caller, &made.handle, &set, None)
                .result
                .map_err(from_fs)?;
        }
    }
    Ok(Target {
        created: found.is_err(),
        file: made.handle,
        cinfo: cinfo(
            out.wcc.before,
            out.wcc.after.map(|d| attrs::change_of(d.ctime)),
        ),
        attrset: if found.is_err() {
            attrset
        } else {
            Bitmap::EMPTY
        },
    })
}

/// OPEN.
pub(crate) fn open(cx: &mut Ctx<'_>, a: &p::Open4args) -> Done {
    let r = open_inner(cx, a);
    match r {
        Ok(ok) => (
            p::NfsResop4::OpOpen(p::Open4res::Nfs4Ok(ok)),
            p::Nfsstat4::Nfs4Ok,
        ),
        Err(s) => (p::NfsResop4::OpOpen(p::Open4res::Default(s)), s),
    }
}

fn open_inner(cx: &mut Ctx<'_>, a: &p::Open4args) -> Result<p::Open4resok, p::Nfsstat4> {
    let client = cx.client()?;
    let access = a.share_access & 3;
    let want = a.share_access & p::OPEN4_SHARE_ACCESS_WANT_DELEG_MASK;
    let signals = p::OPEN4_SHARE_ACCESS_WANT_SIGNAL_DELEG_WHEN_RESRC_AVAIL
        | p::OPEN4_SHARE_ACCESS_WANT_PUSH_DELEG_WHEN_UNCONTENDED;
    if a.share_access & !(3 | p::OPEN4_SHARE_ACCESS_WANT_DELEG_MASK | signals) != 0
        || a.share_deny & !3 != 0
        || access == 0
    {
        return Err(p::Nfsstat4::Nfs4errInval);
    }
    if access & ACCESS_WRITE != 0 {
        cx.writable()?;
    }
    let mut state = OpenArgs {
        client,
        owner: a.owner.owner.to_vec(),
        file: cx.cfh.clone().unwrap_or(cx.export.root_handle()),
        access,
        deny: a.share_deny,
        claim: Claim::Null,
        want_deleg: want != p::OPEN4_SHARE_ACCESS_WANT_NO_DELEG
            && want != p::OPEN4_SHARE_ACCESS_WANT_CANCEL,
    };
    let target = match &a.claim {
        p::OpenClaim4::ClaimNull(name) => by_name(cx, a, name, &state)?,
        p::OpenClaim4::ClaimFh => {
            state.claim = Claim::Fh;
            same_file(cx)?
        }
        p::OpenClaim4::ClaimPrevious(_) => {
            state.claim = Claim::Previous;
            same_file(cx)?
        }
        p::OpenClaim4::ClaimDelegCurFh(d) => {
            let t = same_file(cx)?;
            state.claim = Claim::Delegated(cx.stateid(d)?);
            t
        }
        p::OpenClaim4::ClaimDelegateCur(d) => {
            let file = Ctx::lookup_name(cx, &d.file)?;
            state.claim = Claim::Delegated(cx.stateid(&d.delegate_stateid)?);
            Target {
                file,
                created: false,
                cinfo: p::ChangeInfo4 {
                    atomic: true,
                    before: 0,
                    after: 0,
                },
                attrset: Bitmap::EMPTY,
            }
        }
        p::OpenClaim4::ClaimDelegatePrev(_) | p::OpenClaim4::ClaimDelegPrevFh => {
            return Err(p::Nfsstat4::Nfs4errNotsupp)
        }
    };
    regular(cx, &target.file)?;
    if !target.created {
        permitted(cx, &target.file, access)?;
    }
    state.file = target.file.clone();
    let opened = cx.core.lock().open(&state, cx.now).map_err(from_state)?;
    cx.cfh = Some(target.file);
    cx.set_stateid(opened.stateid);
    let delegation = match opened.deleg {
        Some(d) => p::OpenDelegation4::OpenDelegateRead(p::OpenReadDelegation4 {
            stateid: wire(d),
            recall: false,
            permissions: p::Nfsace4 {
                r#type: 0,
                flag: 0,
                access_mask: 0,
                who: Bytes::from_static(b"EVERYONE@"),
            },
        }),
        None if want == 0 => p::OpenDelegation4::OpenDelegateNone,
        None if !state.want_deleg => p::OpenDelegation4::OpenDelegateNoneExt(
            p::OpenNoneDelegation4::Default(p::WhyNoDelegation4::Wnd4NotWanted),
        ),
        None => {
            p::OpenDelegation4::OpenDelegateNoneExt(p::OpenNoneDelegation4::Wnd4Contention(false))
        }
    };
    Ok(p::Open4resok {
        stateid: wire(opened.stateid),
        cinfo: target.cinfo,
        rflags: p::OPEN4_RESULT_LOCKTYPE_POSIX | p::OPEN4_RESULT_MAY_NOTIFY_LOCK,
        attrset: target.attrset.words(),
        delegation,
    })
}

/// The current handle as an OPEN's target.
fn same_file(cx: &Ctx<'_>) -> Result<Target, p::Nfsstat4> {
    let file = cx.fh()?;
    let c = cx
        .export
        .getattr(&file)
        .map(|a| attrs::change_of(a.ctime))
        .unwrap_or(0);
    Ok(Target {
        file,
        created: false,
        cinfo: p::ChangeInfo4 {
            atomic: true,
            before: c,
            after: c,
        },
        attrset: Bitmap::EMPTY,
    })
}

impl Ctx<'_> {
    /// The file `name` in the current directory.
    fn lookup_name(cx: &Ctx<'_>, name: &[u8]) -> Result<FileHandle, p::Nfsstat4> {
        check_name(name)?;
        let dir = dir_fh(cx)?;
        let (r, _) = cx.export.lookup(&cx.caller, &dir, name);
        r.map(|(fh, _)| fh).map_err(from_fs)
    }
}

/// OPEN_DOWNGRADE.
pub(crate) fn open_downgrade(cx: &mut Ctx<'_>, a: &p::OpenDowngrade4args) -> Done {
    let r = (|| {
        let client = cx.client()?;
        let fh = cx.fh()?;
        let id = cx.stateid(&a.open_stateid)?;
        let s = cx
            .core
            .lock()
            .open_downgrade(client, &id, &fh, a.share_access & 3, a.share_deny & 3)
            .map_err(from_state)?;
        cx.set_stateid(s);
        Ok(s)
    })();
    match r {
        Ok(s) => (
            p::NfsResop4::OpOpenDowngrade(p::OpenDowngrade4res::Nfs4Ok(p::OpenDowngrade4resok {
                open_stateid: wire(s),
            })),
            p::Nfsstat4::Nfs4Ok,
        ),
        Err(s) => (
            p::NfsResop4::OpOpenDowngrade(p::OpenDowngrade4res::Default(s)),
            s,
        ),
    }
}

/// The stateid CLOSE returns in NFSv4.1: the invalid special stateid (the
/// open is gone; RFC 8881 §18.2.4).
const CLOSED: StateId = StateId {
    seqid: u32::MAX,
    other: [0; 12],
};

/// CLOSE.
pub(crate) fn close(cx: &mut Ctx<'_>, a: &p::Close4args) -> Done {
    let r = (|| {
        let client = cx.client()?;
        let fh = cx.fh()?;
        let id = cx.stateid(&a.open_stateid)?;
        cx.core.lock().close(client, &id, &fh).map_err(from_state)?;
        Ok(())
    })();
    match r {
        Ok(()) => (
            p::NfsResop4::OpClose(p::Close4res::Nfs4Ok(wire(CLOSED))),
            p::Nfsstat4::Nfs4Ok,
        ),
        Err(s) => (p::NfsResop4::OpClose(p::Close4res::Default(s)), s),
    }
}

/// DELEGRETURN.
pub(crate) fn delegreturn(cx: &mut Ctx<'_>, a: &p::Delegreturn4args) -> Done {
    let r = (|| {
        let client = cx.client()?;
        let fh = cx.fh()?;
        let id = cx.stateid(&a.deleg_stateid)?;
        cx.core
            .lock()
            .delegreturn(client, &id, &fh)
            .map_err(from_state)
    })();
    let s = super::results::status(&r);
    (
        p::NfsResop4::OpDelegreturn(p::Delegreturn4res { status: s }),
        s,
    )
}
