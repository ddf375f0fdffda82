//! Making objects in a directory: CREATE (unchecked, guarded or
//! exclusive with its verifier), MKDIR, SYMLINK and MKNOD, each with its
//! directory's weak cache consistency data.

use std::sync::Arc;

use rpcrdma_sync::lock;
use rustix::fs::{Mode, OFlags, Timespec, Timestamps};
use rustix::io::Errno;

use super::nodes::{open_path, statx_at, statx_fd};
use super::{
    check_name, Caller, CreateHow, Export, FileHandle, FileType, Made, NfsError, NfsResult, Node,
    Outcome, SetAttr, SetTime, SpecialFile, Wcc, WccAttr, MAX_LINK_TARGET,
};

/// The largest device major number the kernel represents (12 bits).
pub const MAX_MAJOR: u32 = 0xFFF;
/// The largest device minor number the kernel represents (20 bits).
pub const MAX_MINOR: u32 = 0xF_FFFF;

impl Export {
    /// Runs a change to directory `dir` and collects its wcc data.
    pub(super) fn in_dir<T>(
        &self,
        dir: &FileHandle,
        f: impl FnOnce(&Node) -> NfsResult<T>,
    ) -> Outcome<T> {
        let d = match self.dir_node(dir) {
            Ok(d) => d,
            Err(e) => {
                return Outcome {
                    result: Err(e),
                    wcc: Wcc::default(),
                }
            }
        };
        let before = Some(WccAttr::from(&self.attr_of(&d.st)));
        let result = f(&d);
        Outcome {
            result,
            wcc: Wcc {
                before,
                after: self.post_attr(&d),
            },
        }
    }

    fn made(&self, d: &Node, name: &[u8]) -> NfsResult<Made> {
        let st = statx_at(&*d.fd, name)?;
        Ok(Made {
            handle: self.learn(d, name, &st),
            attr: self.attr_of(&st),
        })
    }

    /// CREATE.
    pub fn create(
        &self,
        caller: &Caller,
        dir: &FileHandle,
        name: &[u8],
        how: CreateHow,
    ) -> Outcome<Made> {
        self.in_dir(dir, |d| {
            check_name(name, false)?;
            self.writable(caller)?;
            let act = self.act(caller)?;
            let (set, verf) = match how {
                CreateHow::Unchecked(s) | CreateHow::Guarded(s) => (s, None),
                CreateHow::Exclusive(v) => (SetAttr::default(), Some(v)),
            };
            let mode = self.settable_mode(caller, set.mode.unwrap_or(0o644), false);
            let flags =
                OFlags::RDONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            match rustix::fs::openat(&*d.fd, name, flags, Mode::from_raw_mode(mode)) {
                Ok(fd) => {
                    // Exactly the mode asked (the process umask applied).
                    rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode))?;
                    if let Some(v) = verf {
                        // The verifier lives in atime/mtime until the
                        // client's SETATTR (as the Linux server does).
                        let t = |b: &[u8]| Timespec {
                            tv_sec: i64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
                            tv_nsec: 0,
                        };
                        rustix::fs::futimens(
                            &fd,
                            &Timestamps {
                                last_access: t(&v[..4]),
                                last_modification: t(&v[4..]),
                            },
                        )?;
                    }
                    let st = statx_fd(&fd)?;
                    let node = Node {
                        fd: Arc::new(fd),
                        st,
                    };
                    let rest = SetAttr { mode: None, ..set };
                    if rest != SetAttr::default() {
                        self.apply(&act, caller, &node, &rest)?;
                    }
                }
                Err(Errno::EXIST) => match how {
                    CreateHow::Guarded(_) => return Err(NfsError::Exist),
                    CreateHow::Unchecked(s) => {
                        let fd = open_path(&*d.fd, name)?;
                        let st = statx_fd(&fd)?;
                        if FileType::from_mode(u32::from(st.stx_mode)) != FileType::Regular {
                            return Err(NfsError::Exist);
                        }
                        // Only the size is applied to an existing file
                        // (as the Linux server does: O_TRUNC).
                        if s.size.is_some() {
                            let node = Node {
                                fd: Arc::new(fd),
                                st,
                            };
                            self.apply(
                                &act,
                                caller,
                                &node,
                                &SetAttr {
                                    size: s.size,
                                    ..SetAttr::default()
                                },
                            )?;
                        }
                    }
                    CreateHow::Exclusive(v) => {
                        let st = statx_at(&*d.fd, name)?;
                        let mine = st.stx_atime.tv_sec
                            == i64::from(u32::from_be_bytes([v[0], v[1], v[2], v[3]]))
                            && st.stx_mtime.tv_sec
                                == i64::from(u32::from_be_bytes([v[4], v[5], v[6], v[7]]))
                            && FileType::from_mode(u32::from(st.stx_mode)) == FileType::Regular;
                        if !mine {
                            return Err(NfsError::Exist);
                        }
                    }
                },
                Err(e) => return Err(e.into()),
            }
            drop(act);
            self.made(d, name)
        })
    }

    /// MKDIR.
    pub fn mkdir(
        &self,
        caller: &Caller,
        dir: &FileHandle,
        name: &[u8],
        set: &SetAttr,
    ) -> Outcome<Made> {
        self.in_dir(dir, |d| {
            check_name(name, false)?;
            self.writable(caller)?;
            let act = self.act(caller)?;
            let mode = self.settable_mode(caller, set.mode.unwrap_or(0o755), true);
            rustix::fs::mkdirat(&*d.fd, name, Mode::from_raw_mode(mode))?;
            let node = Node::open_at(d, name)?;
            self.apply(
                &act,
                caller,
                &node,
                &SetAttr {
                    mode: Some(mode),
                    size: None,
                    ..*set
                },
            )?;
            drop(act);
            lock(&self.nodes).keep_dir(node.ino(), node.fd.clone());
            self.made(d, name)
        })
    }

    /// SYMLINK: a link to `target` (stored as given; never followed by the
    /// server).
    pub fn symlink(
        &self,
        caller: &Caller,
        dir: &FileHandle,
        name: &[u8],
        target: &[u8],
        set: &SetAttr,
    ) -> Outcome<Made> {
        self.in_dir(dir, |d| {
            check_name(name, false)?;
            self.writable(caller)?;
            if target.is_empty() || target.contains(&0) {
                return Err(NfsError::Inval);
            }
            if target.len() > MAX_LINK_TARGET {
                return Err(NfsError::NameTooLong);
            }
            let act = self.act(caller)?;
            rustix::fs::symlinkat(target, &*d.fd, name)?;
            if set.uid.is_some()
                || set.gid.is_some()
                || set.atime != SetTime::DontChange
                || set.mtime != SetTime::DontChange
            {
                let node = Node::open_at(d, name)?;
                self.apply(
                    &act,
                    caller,
                    &node,
                    &SetAttr {
                        mode: None,
                        size: None,
                        ..*set
                    },
                )?;
            }
            drop(act);
            self.made(d, name)
        })
    }

    /// MKNOD.
    pub fn mknod(
        &self,
        caller: &Caller,
        dir: &FileHandle,
        name: &[u8],
        what: SpecialFile,
        set: &SetAttr,
    ) -> Outcome<Made> {
        self.in_dir(dir, |d| {
            check_name(name, false)?;
            self.writable(caller)?;
            if let SpecialFile::Char(ma, mi) | SpecialFile::Block(ma, mi) = what {
                // The kernel's device numbers: 12-bit major, 20-bit minor
                // (`mknodat` takes them as one 32-bit word). Anything
                // larger would be cut to another device, so it is refused
                // as Linux nfsd refuses it.
                if ma > MAX_MAJOR || mi > MAX_MINOR {
                    return Err(NfsError::Inval);
                }
            }
            let act = self.act(caller)?;
            let mode = self.settable_mode(caller, set.mode.unwrap_or(0o644), false);
            let (kind, dev) = match what {
                SpecialFile::Char(ma, mi) => (
                    rustix::fs::FileType::CharacterDevice,
                    rustix::fs::makedev(ma, mi),
                ),
                SpecialFile::Block(ma, mi) => (
                    rustix::fs::FileType::BlockDevice,
                    rustix::fs::makedev(ma, mi),
                ),
                SpecialFile::Socket => (rustix::fs::FileType::Socket, 0),
                SpecialFile::Fifo => (rustix::fs::FileType::Fifo, 0),
            };
            rustix::fs::mknodat(&*d.fd, name, kind, Mode::from_raw_mode(mode), dev)?;
            let node = Node::open_at(d, name)?;
            self.apply(
                &act,
                caller,
                &node,
                &SetAttr {
                    mode: Some(mode),
                    size: None,
                    ..*set
                },
            )?;
            drop(act);
            self.made(d, name)
        })
    }
}
