//! Operations on attributes: owners, modes and times, each checked with
//! `stat`.

use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use rustix::fs::{Timespec, Timestamps};

use super::{ctx, Res, Worker};
use crate::model::Entry;
use crate::rng::Rng;

impl Worker {
    /// A name of the model that is not a symbolic link (whose mode and
    /// times the calls here would not set), picked at random.
    fn pick_not_symlink(&mut self) -> Option<String> {
        let cands: Vec<&String> = self
            .m
            .entries
            .iter()
            .filter(|(_, e)| !matches!(e, Entry::Symlink(_)))
            .map(|(p, _)| p)
            .collect();
        self.rng.pick(&cands).map(|p| (*p).clone())
    }

    /// `lchown` of any name to another owner and group and back (root
    /// only, checked with `stat`).
    pub(super) fn chown(&mut self) -> Res {
        if !rustix::process::geteuid().is_root() || self.o.owner_rw {
            return self.stat();
        }
        let all: Vec<String> = self.m.entries.keys().cloned().collect();
        let Some(path) = self.rng.pick(&all).cloned() else {
            return self.create();
        };
        let (uid, gid) = (
            1 + self.rng.below(60_000) as u32,
            1 + self.rng.below(60_000) as u32,
        );
        self.note(format!("lchown {path} {uid}:{gid}, then back to 0:0"));
        let p = self.path(&path);
        for (u, g) in [(uid, gid), (0, 0)] {
            ctx(std::os::unix::fs::lchown(&p, Some(u), Some(g)), || {
                format!("lchown {path} {u}:{g}")
            })?;
            let md = ctx(fs::symlink_metadata(&p), || format!("stat {path}"))?;
            if (md.uid(), md.gid()) != (u, g) {
                return Err(format!(
                    "stat after lchown {path} {u}:{g}: owner {}:{}",
                    md.uid(),
                    md.gid()
                ));
            }
        }
        Ok(())
    }

    pub(super) fn chmod(&mut self) -> Res {
        let Some(path) = self.pick_not_symlink() else {
            return self.create();
        };
        let is_dir = matches!(self.m.entries[&path], Entry::Dir(_));
        let mode = if is_dir {
            0o700 | (self.rng.below(0o100) as u32)
        } else if rustix::process::geteuid().is_root() && !self.o.owner_rw {
            self.rng.below(0o1000) as u32
        } else {
            // Another user must still be able to read and write it.
            0o600 | (self.rng.below(0o1000) as u32)
        };
        self.note(format!("chmod {path} {mode:o}"));
        let p = self.path(&path);
        ctx(
            fs::set_permissions(&p, fs::Permissions::from_mode(mode)),
            || format!("chmod {path} {mode:o}"),
        )?;
        match self.m.entries.get_mut(&path).expect("listed") {
            Entry::Dir(m) | Entry::Fifo(m) => *m = mode,
            Entry::File(i) => self.m.inodes.get_mut(i).expect("inode").mode = mode,
            Entry::Symlink(_) => unreachable!("not a candidate"),
        }
        let md = ctx(fs::symlink_metadata(&p), || format!("stat {path}"))?;
        if md.mode() & 0o7777 != mode {
            return Err(format!(
                "stat after chmod {path} {mode:o}: mode {:o}",
                md.mode() & 0o7777
            ));
        }
        Ok(())
    }

    pub(super) fn utimes(&mut self) -> Res {
        let Some(path) = self.pick_not_symlink() else {
            return self.create();
        };
        let ts = |r: &mut Rng| Timespec {
            tv_sec: 1_000_000_000 + r.below(1_000_000_000) as i64,
            tv_nsec: r.below(1_000_000_000) as _,
        };
        let (a, m) = (ts(&mut self.rng), ts(&mut self.rng));
        self.note(format!(
            "utimes {path} atime {}.{:09} mtime {}.{:09}",
            a.tv_sec, a.tv_nsec, m.tv_sec, m.tv_nsec
        ));
        let p = self.path(&path);
        ctx(
            rustix::fs::utimensat(
                rustix::fs::CWD,
                &p,
                &Timestamps {
                    last_access: a,
                    last_modification: m,
                },
                rustix::fs::AtFlags::empty(),
            )
            .map_err(io::Error::from),
            || format!("utimensat {path}"),
        )?;
        let md = ctx(fs::symlink_metadata(&p), || format!("stat {path}"))?;
        if (md.mtime(), md.mtime_nsec()) != (m.tv_sec, m.tv_nsec)
            || (md.atime(), md.atime_nsec()) != (a.tv_sec, a.tv_nsec)
        {
            return Err(format!(
                "stat after utimes {path}: atime {}.{:09} mtime {}.{:09}",
                md.atime(),
                md.atime_nsec(),
                md.mtime(),
                md.mtime_nsec()
            ));
        }
        Ok(())
    }
}
