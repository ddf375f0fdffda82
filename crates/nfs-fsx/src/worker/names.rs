//! Operations on the name space: creates, renames, links, unlinks,
//! directories, FIFOs and symbolic links.

use std::ffi::OsStr;
use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};

use rustix::io::Errno;

use super::{ctx, expect_errno, first_diff, Res, Worker};
use crate::model::{depth, join, Entry, Inode};

impl Worker {
    pub(super) fn random_dir(&mut self, max_depth: usize) -> String {
        let dirs: Vec<String> = self
            .m
            .dirs()
            .into_iter()
            .filter(|d| depth(d) <= max_depth)
            .collect();
        self.rng.pick(&dirs).cloned().unwrap_or_default()
    }

    pub(super) fn create_named(&mut self, path: &str) -> Res {
        let p = self.path(path);
        let mode = 0o600 | (self.rng.below(0o100) as u32 & 0o066);
        let r = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&p);
        if self.m.entries.contains_key(path) {
            self.note(format!("exclusive create {path} (exists)"));
            return expect_errno(r, &[Errno::EXIST], &format!("exclusive create {path}"));
        }
        self.note(format!("create {path} mode {mode:o}"));
        ctx(r, || format!("exclusive create {path}"))?;
        let ino = self.m.next_ino;
        self.m.next_ino += 1;
        // Every third file may grow large; the rest stay small.
        let max = if ino % 3 == 0 {
            self.o.max_size
        } else {
            self.o.small_size
        };
        self.m.inodes.insert(
            ino,
            Inode {
                data: Vec::new(),
                mode,
                links: 1,
                max,
            },
        );
        self.m.entries.insert(path.to_owned(), Entry::File(ino));
        Ok(())
    }

    pub(super) fn create(&mut self) -> Res {
        let d = self.random_dir(2);
        let name = format!("f{}", self.rng.below(5));
        self.create_named(&join(&d, &name))
    }

    pub(super) fn rename(&mut self) -> Res {
        let all: Vec<String> = self.m.entries.keys().cloned().collect();
        let Some(src) = self.rng.pick(&all).cloned() else {
            return self.create();
        };
        let src_e = self.m.entries[&src].clone();
        let kind = match src_e {
            Entry::File(_) => "f",
            Entry::Dir(_) => "d",
            Entry::Symlink(_) => "s",
            Entry::Fifo(_) => "p",
        };
        let d = self.random_dir(2);
        let prefix = if self.rng.pct(85) {
            kind
        } else {
            ["f", "d", "s", "p"][self.rng.below(4) as usize]
        };
        let dst = join(&d, &format!("{prefix}{}", self.rng.below(5)));
        let is_dir = matches!(src_e, Entry::Dir(_));
        let into_itself = is_dir && dst.starts_with(&format!("{src}/"));
        if is_dir && !into_itself && depth(&dst) + self.subtree_depth(&src) > 3 {
            // Keeps the tree shallow.
            self.note(format!("rename {src} -> {dst}: skipped (too deep)"));
            return Ok(());
        }
        let what = format!("rename {src} -> {dst}");
        self.note(what.clone());
        // Nothing open may lose its last name (the client would rename
        // it to .nfsXXXX instead of removing it).
        self.open.clear();
        let r = fs::rename(self.path(&src), self.path(&dst));
        if src == dst {
            return ctx(r, || what);
        }
        if into_itself {
            return expect_errno(r, &[Errno::INVAL], &what);
        }
        match (self.m.entries.get(&dst).cloned(), &src_e) {
            (Some(Entry::Dir(_)), Entry::File(_) | Entry::Symlink(_) | Entry::Fifo(_)) => {
                // ENOTEMPTY when the directory is the source's own parent
                // (Linux checks that first).
                return expect_errno(r, &[Errno::ISDIR, Errno::NOTEMPTY], &what);
            }
            (Some(Entry::File(_) | Entry::Symlink(_) | Entry::Fifo(_)), Entry::Dir(_)) => {
                return expect_errno(r, &[Errno::NOTDIR], &what)
            }
            (Some(Entry::Dir(_)), Entry::Dir(_)) if !self.m.children(&dst).is_empty() => {
                return expect_errno(r, &[Errno::NOTEMPTY, Errno::EXIST], &what)
            }
            (Some(Entry::File(a)), Entry::File(b)) if a == *b => {
                // Two names of one file: rename does nothing.
                return ctx(r, || what);
            }
            (Some(Entry::File(_)), _) => {
                ctx(r, || what)?;
                self.m.unlink(&dst);
            }
            (Some(_), _) => {
                ctx(r, || what)?;
                self.m.entries.remove(&dst);
            }
            (None, _) => ctx(r, || what)?,
        }
        let moved: Vec<String> = self
            .m
            .entries
            .keys()
            .filter(|p| **p == src || p.starts_with(&format!("{src}/")))
            .cloned()
            .collect();
        for p in moved {
            let e = self.m.entries.remove(&p).expect("listed");
            self.m
                .entries
                .insert(format!("{dst}{}", &p[src.len()..]), e);
        }
        Ok(())
    }

    /// Levels below `dir` (0 for an empty directory).
    pub(super) fn subtree_depth(&self, dir: &str) -> usize {
        self.m
            .entries
            .keys()
            .filter(|p| p.starts_with(&format!("{dir}/")))
            .map(|p| depth(p) - depth(dir))
            .max()
            .unwrap_or(0)
    }

    pub(super) fn link(&mut self) -> Res {
        let (src, ino) = self.some_file()?;
        let d = self.random_dir(2);
        let dst = join(&d, &format!("f{}", self.rng.below(5)));
        let what = format!("link {src} -> {dst}");
        self.note(what.clone());
        let r = fs::hard_link(self.path(&src), self.path(&dst));
        if self.m.entries.contains_key(&dst) {
            return expect_errno(r, &[Errno::EXIST], &what);
        }
        ctx(r, || what)?;
        self.m.inodes.get_mut(&ino).expect("inode").links += 1;
        self.m.entries.insert(dst, Entry::File(ino));
        Ok(())
    }

    pub(super) fn unlink(&mut self) -> Res {
        let names: Vec<String> = self
            .m
            .entries
            .iter()
            .filter(|(_, e)| !matches!(e, Entry::Dir(_)))
            .map(|(p, _)| p.clone())
            .collect();
        let path = match self.rng.pick(&names) {
            Some(p) if self.rng.pct(90) => p.clone(),
            _ => {
                let d = self.random_dir(2);
                join(&d, &format!("f{}", self.rng.below(5)))
            }
        };
        let what = format!("unlink {path}");
        self.note(what.clone());
        self.open.clear();
        let r = fs::remove_file(self.path(&path));
        match self.m.entries.get(&path) {
            None => expect_errno(r, &[Errno::NOENT], &what),
            Some(Entry::Dir(_)) => expect_errno(r, &[Errno::ISDIR, Errno::PERM], &what),
            Some(_) => {
                ctx(r, || what)?;
                if matches!(self.m.entries.get(&path), Some(Entry::File(_))) {
                    self.m.unlink(&path);
                } else {
                    self.m.entries.remove(&path);
                }
                Ok(())
            }
        }
    }

    pub(super) fn mkdir(&mut self) -> Res {
        let d = self.random_dir(1);
        let path = join(&d, &format!("d{}", self.rng.below(3)));
        let mode = 0o700 | (self.rng.below(0o100) as u32 & 0o055);
        let what = format!("mkdir {path} mode {mode:o}");
        self.note(what.clone());
        let r = fs::DirBuilder::new().mode(mode).create(self.path(&path));
        if self.m.entries.contains_key(&path) {
            return expect_errno(r, &[Errno::EXIST], &what);
        }
        ctx(r, || what)?;
        self.m.entries.insert(path, Entry::Dir(mode));
        Ok(())
    }

    pub(super) fn rmdir(&mut self) -> Res {
        let dirs: Vec<String> = self
            .m
            .dirs()
            .into_iter()
            .filter(|d| !d.is_empty())
            .collect();
        let Some(path) = self.rng.pick(&dirs).cloned() else {
            return self.mkdir();
        };
        let what = format!("rmdir {path}");
        self.note(what.clone());
        self.open.clear();
        let r = fs::remove_dir(self.path(&path));
        if !self.m.children(&path).is_empty() {
            return expect_errno(r, &[Errno::NOTEMPTY, Errno::EXIST], &what);
        }
        ctx(r, || what)?;
        self.m.entries.remove(&path);
        Ok(())
    }

    /// MKNOD: a FIFO (never opened).
    pub(super) fn mkfifo(&mut self) -> Res {
        let d = self.random_dir(2);
        let path = join(&d, &format!("p{}", self.rng.below(3)));
        let mode = 0o600 | (self.rng.below(0o100) as u32 & 0o066);
        let what = format!("mkfifo {path} mode {mode:o}");
        self.note(what.clone());
        let r = rustix::fs::mknodat(
            rustix::fs::CWD,
            self.path(&path),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(mode),
            0,
        )
        .map_err(io::Error::from);
        if self.m.entries.contains_key(&path) {
            return expect_errno(r, &[Errno::EXIST], &what);
        }
        ctx(r, || what)?;
        self.m.entries.insert(path, Entry::Fifo(mode));
        Ok(())
    }

    pub(super) fn symlink(&mut self) -> Res {
        let d = self.random_dir(2);
        let path = join(&d, &format!("s{}", self.rng.below(4)));
        let target: Vec<u8> = match self.rng.below(5) {
            0 => b"f0".to_vec(),
            1 => b"../d0/f1".to_vec(),
            2 => b"/etc/passwd".to_vec(),
            3 => {
                // Long: over the inline threshold (a Read chunk for the
                // call, the Reply chunk for READLINK).
                let n = 1000 + self.rng.below(2000) as usize;
                (0..n).map(|i| b"abcdefgh/"[i % 9]).collect()
            }
            _ => format!("t-{}-{}", self.op_no, self.rng.below(1000)).into_bytes(),
        };
        let what = format!("symlink {path} -> ({} bytes)", target.len());
        self.note(what.clone());
        let r = std::os::unix::fs::symlink(OsStr::from_bytes(&target), self.path(&path));
        if self.m.entries.contains_key(&path) {
            return expect_errno(r, &[Errno::EXIST], &what);
        }
        ctx(r, || what)?;
        self.m.entries.insert(path, Entry::Symlink(target));
        Ok(())
    }

    pub(super) fn readlink(&mut self) -> Res {
        let links = self.m.symlinks();
        let Some(path) = self.rng.pick(&links).cloned() else {
            // readlink of a file is EINVAL.
            let (f, _) = self.some_file()?;
            self.note(format!("readlink {f} (a file)"));
            return expect_errno(
                fs::read_link(self.path(&f)),
                &[Errno::INVAL],
                &format!("readlink {f}"),
            );
        };
        self.note(format!("readlink {path}"));
        let got = ctx(fs::read_link(self.path(&path)), || {
            format!("readlink {path}")
        })?;
        let Entry::Symlink(want) = &self.m.entries[&path] else {
            unreachable!("a symlink of the model")
        };
        if got.as_os_str().as_encoded_bytes() != want.as_slice() {
            return Err(format!(
                "readlink {path}: {}",
                first_diff(want, got.as_os_str().as_encoded_bytes(), 0)
            ));
        }
        Ok(())
    }
}
