//! Permissions: ACCESS by the mode bits, as the kernel decides them,
//! and opening a file for I/O as the caller with the Linux NFS server's
//! overrides (an owner may write a read-only file it made; a file the
//! caller may execute may be read).

use std::os::fd::OwnedFd;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::ident::Acting;
use super::{
    access, Attr, Caller, Export, FileHandle, FileType, IdentityMode, NfsError, NfsResult, Node,
};

impl Export {
    /// ACCESS: which of `mask` the caller may do, by the mode bits (as the
    /// kernel would decide them), and the attributes.
    pub fn access(&self, caller: &Caller, fh: &FileHandle, mask: u32) -> NfsResult<(u32, Attr)> {
        let n = self.resolve(fh)?;
        let attr = self.attr_of(&n.st);
        let caller = match self.cfg.identity {
            IdentityMode::Switch => caller.clone(),
            IdentityMode::ServerUser => Caller::new(
                rustix::process::geteuid().as_raw(),
                rustix::process::getegid().as_raw(),
                rustix::process::getgroups()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|g| g.as_raw())
                    .collect(),
            ),
        };
        let mut granted = access_by_mode(&attr, &caller, mask);
        if self.cfg.read_only || caller.read_only {
            granted &= !(access::MODIFY | access::EXTEND | access::DELETE);
        }
        Ok((granted, attr))
    }

    /// Opens the object for I/O as the caller, with the Linux NFS server's
    /// overrides: the owner may read and write whatever the mode (a file
    /// created read-only is still written by its creator), and a file the
    /// caller may execute may be read (paging in a program).
    pub(super) fn open_io(
        &self,
        act: &Acting,
        caller: &Caller,
        n: &Node,
        write: bool,
    ) -> NfsResult<OwnedFd> {
        // No O_NOFOLLOW: the magic link in /proc must be followed (to the
        // inode itself, never a path); symbolic links never get here.
        let flags = if write {
            OFlags::WRONLY
        } else {
            OFlags::RDONLY
        } | OFlags::CLOEXEC;
        let path = n.proc_path();
        match rustix::fs::open(path.as_str(), flags, Mode::empty()) {
            Ok(fd) => Ok(fd),
            Err(Errno::ACCESS) if act.switched() => {
                let attr = self.attr_of(&n.st);
                let owner = attr.uid == caller.uid;
                let exec = !write && access_by_mode(&attr, caller, access::EXECUTE) != 0;
                if owner || exec {
                    act.as_root(|| rustix::fs::open(path.as_str(), flags, Mode::empty()))
                        .map_err(NfsError::from)
                } else {
                    Err(NfsError::Acces)
                }
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// What the mode bits allow `caller` among `mask` (RFC 1813 ACCESS), as
/// the kernel's permission check decides for owner, group and others;
/// the superuser may do anything but execute a file without any `x` bit.
pub fn access_by_mode(attr: &Attr, caller: &Caller, mask: u32) -> u32 {
    let is_dir = attr.ftype == FileType::Directory;
    let bits = if caller.is_root() {
        let any_x = attr.mode & 0o111 != 0;
        0o6 | if is_dir || any_x { 0o1 } else { 0 }
    } else if caller.uid == attr.uid {
        (attr.mode >> 6) & 7
    } else if caller.in_group(attr.gid) {
        (attr.mode >> 3) & 7
    } else {
        attr.mode & 7
    };
    let (r, w, x) = (bits & 4 != 0, bits & 2 != 0, bits & 1 != 0);
    let mut granted = 0;
    if r {
        granted |= access::READ;
    }
    if is_dir {
        if x {
            granted |= access::LOOKUP;
        }
        if w && x {
            granted |= access::MODIFY | access::EXTEND | access::DELETE;
        }
    } else {
        if w {
            granted |= access::MODIFY | access::EXTEND;
        }
        if x {
            granted |= access::EXECUTE;
        }
    }
    granted & mask
}
