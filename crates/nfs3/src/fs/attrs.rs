//! Attributes: from `statx` to NFS attributes, GETATTR, SETATTR (with
//! the ctime guard), and the file system's FSSTAT, FSINFO and PATHCONF.

use rustix::fs::{AtFlags, Mode, Timespec, Timestamps};

use super::ident::Acting;
use super::nodes::statx_fd;
use super::{
    fsf, Attr, Caller, Export, FileHandle, FileType, FsInfo, FsStat, NfsError, NfsResult, Node,
    Outcome, PathConf, SetAttr, SetTime, Time, Wcc, WccAttr, MAX_IO, NAME_MAX,
};

fn time_of(t: &rustix::fs::StatxTimestamp) -> Time {
    Time {
        seconds: t.tv_sec.clamp(0, i64::from(u32::MAX)) as u32,
        nseconds: t.tv_nsec.min(999_999_999),
    }
}

impl Export {
    pub(super) fn attr_of(&self, st: &rustix::fs::Statx) -> Attr {
        Attr {
            ftype: FileType::from_mode(u32::from(st.stx_mode)),
            mode: u32::from(st.stx_mode) & 0o7777,
            nlink: st.stx_nlink,
            uid: st.stx_uid,
            gid: st.stx_gid,
            size: st.stx_size,
            used: st.stx_blocks.saturating_mul(512),
            rdev: (st.stx_rdev_major, st.stx_rdev_minor),
            fsid: self.fsid,
            fileid: st.stx_ino,
            atime: time_of(&st.stx_atime),
            mtime: time_of(&st.stx_mtime),
            ctime: time_of(&st.stx_ctime),
        }
    }

    pub(super) fn post_attr(&self, n: &Node) -> Option<Attr> {
        statx_fd(&*n.fd).ok().map(|st| self.attr_of(&st))
    }

    /// GETATTR.
    pub fn getattr(&self, fh: &FileHandle) -> NfsResult<Attr> {
        let n = self.resolve(fh)?;
        Ok(self.attr_of(&n.st))
    }

    /// Attributes for a `post_op_attr`: `None` if the handle does not
    /// resolve.
    pub fn post_op_attr(&self, fh: &FileHandle) -> Option<Attr> {
        self.getattr(fh).ok()
    }

    /// SETATTR, with the optional ctime guard.
    pub fn setattr(
        &self,
        caller: &Caller,
        fh: &FileHandle,
        set: &SetAttr,
        guard: Option<Time>,
    ) -> Outcome<()> {
        let n = match self.resolve(fh) {
            Ok(n) => n,
            Err(e) => {
                return Outcome {
                    result: Err(e),
                    wcc: Wcc::default(),
                }
            }
        };
        let attr = self.attr_of(&n.st);
        let before = Some(WccAttr::from(&attr));
        let result = (|| {
            if guard.is_some_and(|g| g != attr.ctime) {
                return Err(NfsError::NotSync);
            }
            self.writable(caller)?;
            let act = self.act(caller)?;
            self.apply(&act, caller, &n, set)
        })();
        Outcome {
            result,
            wcc: Wcc {
                before,
                after: self.post_attr(&n),
            },
        }
    }

    pub(super) fn apply(
        &self,
        act: &Acting,
        caller: &Caller,
        n: &Node,
        set: &SetAttr,
    ) -> NfsResult<()> {
        let ftype = n.ftype();
        // An owner or group the server cannot act as (0xFFFFFFFF, which
        // chown reads as "no change", or an id outside its user namespace)
        // is refused before anything changes, not silently ignored.
        if set.uid.is_some_and(|u| !self.valid_uid(u))
            || set.gid.is_some_and(|g| !self.valid_gid(g))
        {
            return Err(NfsError::Inval);
        }
        if let Some(size) = set.size {
            match ftype {
                FileType::Regular => {}
                FileType::Directory => return Err(NfsError::IsDir),
                _ => return Err(NfsError::Inval),
            }
            if size > super::read_write::MAX_FILE_OFFSET {
                return Err(NfsError::FBig);
            }
            let fd = self.open_io(act, caller, n, true)?;
            rustix::fs::ftruncate(&fd, size)?;
        }
        if set.uid.is_some() || set.gid.is_some() {
            rustix::fs::chownat(
                &*n.fd,
                c"",
                set.uid.map(rustix::fs::Uid::from_raw),
                set.gid.map(rustix::fs::Gid::from_raw),
                AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW,
            )?;
        }
        if let Some(mode) = set.mode {
            if ftype != FileType::Symlink {
                rustix::fs::chmodat(
                    rustix::fs::CWD,
                    n.proc_path().as_str(),
                    Mode::from_raw_mode(self.settable_mode(
                        caller,
                        mode,
                        ftype == FileType::Directory,
                    )),
                    AtFlags::empty(),
                )?;
            }
        }
        if set.atime != SetTime::DontChange || set.mtime != SetTime::DontChange {
            let ts = |t: SetTime| match t {
                SetTime::DontChange => Timespec {
                    tv_sec: 0,
                    tv_nsec: rustix::fs::UTIME_OMIT,
                },
                SetTime::ServerTime => Timespec {
                    tv_sec: 0,
                    tv_nsec: rustix::fs::UTIME_NOW,
                },
                SetTime::ClientTime(t) => Timespec {
                    tv_sec: i64::from(t.seconds),
                    tv_nsec: t.nseconds.min(999_999_999).into(),
                },
            };
            let times = Timestamps {
                last_access: ts(set.atime),
                last_modification: ts(set.mtime),
            };
            if ftype == FileType::Symlink {
                rustix::fs::utimensat(
                    &*n.fd,
                    c"",
                    &times,
                    AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW,
                )?;
            } else {
                rustix::fs::utimensat(
                    rustix::fs::CWD,
                    n.proc_path().as_str(),
                    &times,
                    AtFlags::empty(),
                )?;
            }
        }
        Ok(())
    }

    /// FSSTAT.
    pub fn fsstat(&self, fh: &FileHandle) -> (NfsResult<FsStat>, Option<Attr>) {
        let n = match self.resolve(fh) {
            Ok(n) => n,
            Err(e) => return (Err(e), None),
        };
        let r = rustix::fs::fstatvfs(&*n.fd)
            .map_err(NfsError::from)
            .map(|v| {
                let b = v.f_frsize.max(1);
                FsStat {
                    tbytes: v.f_blocks.saturating_mul(b),
                    fbytes: v.f_bfree.saturating_mul(b),
                    abytes: v.f_bavail.saturating_mul(b),
                    tfiles: v.f_files,
                    ffiles: v.f_ffree,
                    afiles: v.f_favail,
                    invarsec: 0,
                }
            });
        (r, Some(self.attr_of(&n.st)))
    }

    /// FSINFO.
    pub fn fsinfo(&self, fh: &FileHandle) -> (NfsResult<FsInfo>, Option<Attr>) {
        let n = match self.resolve(fh) {
            Ok(n) => n,
            Err(e) => return (Err(e), None),
        };
        let info = FsInfo {
            rtmax: MAX_IO,
            rtpref: MAX_IO,
            rtmult: 4096,
            wtmax: MAX_IO,
            wtpref: MAX_IO,
            wtmult: 4096,
            dtpref: 64 * 1024,
            maxfilesize: super::read_write::MAX_FILE_OFFSET,
            time_delta: Time {
                seconds: 0,
                nseconds: 1,
            },
            properties: fsf::LINK | fsf::SYMLINK | fsf::HOMOGENEOUS | fsf::CANSETTIME,
        };
        (Ok(info), Some(self.attr_of(&n.st)))
    }

    /// PATHCONF.
    pub fn pathconf(&self, fh: &FileHandle) -> (NfsResult<PathConf>, Option<Attr>) {
        let n = match self.resolve(fh) {
            Ok(n) => n,
            Err(e) => return (Err(e), None),
        };
        let pc = PathConf {
            linkmax: 65000,
            name_max: NAME_MAX as u32,
            no_trunc: true,
            chown_restricted: true,
            case_insensitive: false,
            case_preserving: true,
        };
        (Ok(pc), Some(self.attr_of(&n.st)))
    }
}
