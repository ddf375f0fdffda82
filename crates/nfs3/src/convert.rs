//! Between the wire types (`proto`) and the export layer's types (`fs`).

use bytes::Bytes;

use crate::fs::{
    Attr, CreateHow, FileHandle, FileType, NfsError, SetAttr, SetTime, SpecialFile, StableHow,
    Time, Wcc, WccAttr,
};
use crate::proto::nfs3 as p;

/// The status of an error.
pub(crate) fn status(e: NfsError) -> p::Nfsstat3 {
    p::Nfsstat3::from_value(e.code() as i32).unwrap_or(p::Nfsstat3::Nfs3errServerfault)
}

/// The export-layer error for a status (`None` for `NFS3_OK`).
pub fn error_of(s: p::Nfsstat3) -> Option<NfsError> {
    NfsError::from_code(s.value() as u32)
}

pub(crate) fn ftype(t: FileType) -> p::Ftype3 {
    match t {
        FileType::Regular => p::Ftype3::Nf3reg,
        FileType::Directory => p::Ftype3::Nf3dir,
        FileType::BlockDevice => p::Ftype3::Nf3blk,
        FileType::CharDevice => p::Ftype3::Nf3chr,
        FileType::Symlink => p::Ftype3::Nf3lnk,
        FileType::Socket => p::Ftype3::Nf3sock,
        FileType::Fifo => p::Ftype3::Nf3fifo,
    }
}

/// The export-layer type of an `ftype3`.
pub fn ftype_of(t: p::Ftype3) -> FileType {
    match t {
        p::Ftype3::Nf3reg => FileType::Regular,
        p::Ftype3::Nf3dir => FileType::Directory,
        p::Ftype3::Nf3blk => FileType::BlockDevice,
        p::Ftype3::Nf3chr => FileType::CharDevice,
        p::Ftype3::Nf3lnk => FileType::Symlink,
        p::Ftype3::Nf3sock => FileType::Socket,
        p::Ftype3::Nf3fifo => FileType::Fifo,
    }
}

pub(crate) fn time(t: Time) -> p::Nfstime3 {
    p::Nfstime3 {
        seconds: t.seconds,
        nseconds: t.nseconds,
    }
}

pub(crate) fn time_of(t: &p::Nfstime3) -> Time {
    Time {
        seconds: t.seconds,
        nseconds: t.nseconds,
    }
}

pub(crate) fn fattr(a: &Attr) -> p::Fattr3 {
    p::Fattr3 {
        r#type: ftype(a.ftype),
        mode: a.mode,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        size: a.size,
        used: a.used,
        rdev: p::Specdata3 {
            specdata1: a.rdev.0,
            specdata2: a.rdev.1,
        },
        fsid: a.fsid,
        fileid: a.fileid,
        atime: time(a.atime),
        mtime: time(a.mtime),
        ctime: time(a.ctime),
    }
}

/// The export-layer attributes of a `fattr3`.
pub fn attr_of(a: &p::Fattr3) -> Attr {
    Attr {
        ftype: ftype_of(a.r#type),
        mode: a.mode,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        size: a.size,
        used: a.used,
        rdev: (a.rdev.specdata1, a.rdev.specdata2),
        fsid: a.fsid,
        fileid: a.fileid,
        atime: time_of(&a.atime),
        mtime: time_of(&a.mtime),
        ctime: time_of(&a.ctime),
    }
}

pub(crate) fn post_op(a: Option<Attr>) -> p::PostOpAttr {
    match a {
        Some(a) => p::PostOpAttr::True(fattr(&a)),
        None => p::PostOpAttr::False,
    }
}

fn pre_op(a: Option<WccAttr>) -> p::PreOpAttr {
    match a {
        Some(a) => p::PreOpAttr::True(p::WccAttr {
            size: a.size,
            mtime: time(a.mtime),
            ctime: time(a.ctime),
        }),
        None => p::PreOpAttr::False,
    }
}

pub(crate) fn wcc(w: Wcc) -> p::WccData {
    p::WccData {
        before: pre_op(w.before),
        after: post_op(w.after),
    }
}

pub(crate) fn fh(h: &FileHandle) -> p::NfsFh3 {
    p::NfsFh3 {
        data: Bytes::copy_from_slice(h.as_bytes()),
    }
}

pub(crate) fn post_fh(h: Option<&FileHandle>) -> p::PostOpFh3 {
    match h {
        Some(h) => p::PostOpFh3::True(fh(h)),
        None => p::PostOpFh3::False,
    }
}

/// The export-layer handle of an `nfs_fh3` (`NFS3ERR_BADHANDLE` if too long).
pub fn handle_of(f: &p::NfsFh3) -> Result<FileHandle, NfsError> {
    FileHandle::from_bytes(&f.data)
}

fn set_time_atime(t: &p::SetAtime) -> SetTime {
    match t {
        p::SetAtime::SetToClientTime(t) => SetTime::ClientTime(time_of(t)),
        p::SetAtime::Default(p::TimeHow::SetToServerTime) => SetTime::ServerTime,
        p::SetAtime::Default(_) => SetTime::DontChange,
    }
}

fn set_time_mtime(t: &p::SetMtime) -> SetTime {
    match t {
        p::SetMtime::SetToClientTime(t) => SetTime::ClientTime(time_of(t)),
        p::SetMtime::Default(p::TimeHow::SetToServerTime) => SetTime::ServerTime,
        p::SetMtime::Default(_) => SetTime::DontChange,
    }
}

pub(crate) fn sattr(s: &p::Sattr3) -> SetAttr {
    SetAttr {
        mode: match s.mode {
            p::SetMode3::True(m) => Some(m),
            p::SetMode3::Default(_) => None,
        },
        uid: match s.uid {
            p::SetUid3::True(u) => Some(u),
            p::SetUid3::Default(_) => None,
        },
        gid: match s.gid {
            p::SetGid3::True(g) => Some(g),
            p::SetGid3::Default(_) => None,
        },
        size: match s.size {
            p::SetSize3::True(n) => Some(n),
            p::SetSize3::Default(_) => None,
        },
        atime: set_time_atime(&s.atime),
        mtime: set_time_mtime(&s.mtime),
    }
}

/// The wire form of attributes to set.
pub fn sattr3(s: &SetAttr) -> p::Sattr3 {
    p::Sattr3 {
        mode: s
            .mode
            .map_or(p::SetMode3::Default(false), p::SetMode3::True),
        uid: s.uid.map_or(p::SetUid3::Default(false), p::SetUid3::True),
        gid: s.gid.map_or(p::SetGid3::Default(false), p::SetGid3::True),
        size: s
            .size
            .map_or(p::SetSize3::Default(false), p::SetSize3::True),
        atime: match s.atime {
            SetTime::DontChange => p::SetAtime::Default(p::TimeHow::DontChange),
            SetTime::ServerTime => p::SetAtime::Default(p::TimeHow::SetToServerTime),
            SetTime::ClientTime(t) => p::SetAtime::SetToClientTime(time(t)),
        },
        mtime: match s.mtime {
            SetTime::DontChange => p::SetMtime::Default(p::TimeHow::DontChange),
            SetTime::ServerTime => p::SetMtime::Default(p::TimeHow::SetToServerTime),
            SetTime::ClientTime(t) => p::SetMtime::SetToClientTime(time(t)),
        },
    }
}

pub(crate) fn create_how(h: &p::Createhow3) -> CreateHow {
    match h {
        p::Createhow3::Unchecked(s) => CreateHow::Unchecked(sattr(s)),
        p::Createhow3::Guarded(s) => CreateHow::Guarded(sattr(s)),
        p::Createhow3::Exclusive(v) => CreateHow::Exclusive(*v),
    }
}

pub(crate) fn stable_of(s: p::StableHow) -> StableHow {
    match s {
        p::StableHow::Unstable => StableHow::Unstable,
        p::StableHow::DataSync => StableHow::DataSync,
        p::StableHow::FileSync => StableHow::FileSync,
    }
}

pub(crate) fn stable(s: StableHow) -> p::StableHow {
    match s {
        StableHow::Unstable => p::StableHow::Unstable,
        StableHow::DataSync => p::StableHow::DataSync,
        StableHow::FileSync => p::StableHow::FileSync,
    }
}

/// What MKNOD makes, or the status for a type it cannot make.
pub(crate) fn special(w: &p::Mknoddata3) -> Result<(SpecialFile, SetAttr), NfsError> {
    Ok(match w {
        p::Mknoddata3::Nf3chr(d) => (
            SpecialFile::Char(d.spec.specdata1, d.spec.specdata2),
            sattr(&d.dev_attributes),
        ),
        p::Mknoddata3::Nf3blk(d) => (
            SpecialFile::Block(d.spec.specdata1, d.spec.specdata2),
            sattr(&d.dev_attributes),
        ),
        p::Mknoddata3::Nf3sock(s) => (SpecialFile::Socket, sattr(s)),
        p::Mknoddata3::Nf3fifo(s) => (SpecialFile::Fifo, sattr(s)),
        p::Mknoddata3::Default(_) => return Err(NfsError::BadType),
    })
}

/// XDR size of a `post_op_attr` with or without attributes.
pub(crate) const fn post_op_attr_len(present: bool) -> usize {
    if present {
        4 + 84
    } else {
        4
    }
}

/// XDR size of a `post_op_fh3` holding `len` bytes of handle.
pub(crate) const fn post_op_fh_len(len: Option<usize>) -> usize {
    match len {
        Some(n) => 4 + 4 + n.div_ceil(4) * 4,
        None => 4,
    }
}

/// XDR size of one `entry3` (with its "value follows" word).
pub(crate) const fn entry3_len(name: usize) -> usize {
    4 + 8 + 4 + name.div_ceil(4) * 4 + 8
}
