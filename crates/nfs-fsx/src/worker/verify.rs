//! Checks of the tree against the model: one name (`stat`), one
//! directory's listing, and everything, every byte, after dropping the
//! page cache.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt};

use super::{ctx, first_diff, Res, Worker};
use crate::model::Entry;
use crate::opts::DropCaches;

impl Worker {
    pub(super) fn stat(&mut self) -> Res {
        let all: Vec<String> = self.m.entries.keys().cloned().collect();
        let Some(path) = self.rng.pick(&all).cloned() else {
            return self.create();
        };
        self.note(format!("stat {path}"));
        self.check_one(&path)
    }

    /// `path` as the model says: type, mode, link count, size (not the
    /// contents).
    pub(super) fn check_one(&self, path: &str) -> Res {
        let md = ctx(fs::symlink_metadata(self.path(path)), || {
            format!("stat {path}")
        })?;
        let mode = md.mode() & 0o7777;
        let ok = match &self.m.entries[path] {
            Entry::File(i) => {
                let n = &self.m.inodes[i];
                md.is_file()
                    && mode == n.mode
                    && md.nlink() == u64::from(n.links)
                    && md.len() == n.data.len() as u64
            }
            Entry::Dir(m) => md.is_dir() && mode == *m,
            Entry::Symlink(t) => md.file_type().is_symlink() && md.len() == t.len() as u64,
            Entry::Fifo(m) => md.file_type().is_fifo() && mode == *m,
        };
        if ok {
            Ok(())
        } else {
            let want = match &self.m.entries[path] {
                Entry::File(i) => {
                    let n = &self.m.inodes[i];
                    format!(
                        "a file, mode {:o}, {} links, {} bytes",
                        n.mode,
                        n.links,
                        n.data.len()
                    )
                }
                Entry::Dir(m) => format!("a directory, mode {m:o}"),
                Entry::Symlink(t) => format!("a symlink of {} bytes", t.len()),
                Entry::Fifo(m) => format!("a FIFO, mode {m:o}"),
            };
            Err(format!(
                "stat {path}: {:?}, mode {mode:o}, {} links, {} bytes; want {want}",
                md.file_type(),
                md.nlink(),
                md.len()
            ))
        }
    }

    pub(super) fn readdir(&mut self) -> Res {
        let d = self.random_dir(3);
        self.note(format!("readdir {d:?}"));
        self.check_dir(&d)
    }

    pub(super) fn check_dir(&self, d: &str) -> Res {
        let mut got = BTreeSet::new();
        for e in ctx(fs::read_dir(self.path(d)), || format!("readdir {d:?}"))? {
            let e = ctx(e, || format!("readdir {d:?}"))?;
            got.insert(e.file_name().to_string_lossy().into_owned());
        }
        let want = self.m.children(d);
        if got != want {
            return Err(format!(
                "readdir {d:?}: missing {:?}, unexpected {:?}",
                want.difference(&got).collect::<Vec<_>>(),
                got.difference(&want).collect::<Vec<_>>()
            ));
        }
        Ok(())
    }

    /// Closes everything, syncs, drops the page cache and compares the
    /// whole tree with the model, every byte.
    pub(super) fn verify_all(&mut self) -> Res {
        self.open.clear();
        self.note("verify everything".into());
        rustix::fs::sync();
        if self.o.drop_caches != DropCaches::No {
            match fs::write("/proc/sys/vm/drop_caches", "3") {
                Ok(()) => self.dropped = true,
                Err(e) if self.o.drop_caches == DropCaches::Yes => {
                    return Err(format!(
                        "cannot drop the page cache (/proc/sys/vm/drop_caches: {e}); run as root or with --drop-caches auto"
                    ))
                }
                Err(_) => {}
            }
        }
        for d in self.m.dirs() {
            self.check_dir(&d)?;
        }
        let paths: Vec<String> = self.m.entries.keys().cloned().collect();
        for p in &paths {
            self.check_one(p)?;
            match &self.m.entries[p] {
                Entry::File(i) => {
                    let mut got = Vec::new();
                    ctx(
                        File::open(self.path(p)).and_then(|mut f| f.read_to_end(&mut got)),
                        || format!("read {p}"),
                    )?;
                    let want = &self.m.inodes[i].data;
                    if &got != want {
                        return Err(format!(
                            "contents of {p} after dropping the cache: {}",
                            first_diff(want, &got, 0)
                        ));
                    }
                }
                Entry::Symlink(t) => {
                    let got = ctx(fs::read_link(self.path(p)), || format!("readlink {p}"))?;
                    if got.as_os_str().as_encoded_bytes() != t.as_slice() {
                        return Err(format!("readlink {p} after dropping the cache differs"));
                    }
                }
                Entry::Dir(_) | Entry::Fifo(_) => {}
            }
        }
        Ok(())
    }
}
