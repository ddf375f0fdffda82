//! The in-memory model of what a worker's directory must hold.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::manifest::{manifest_dir, manifest_fifo, manifest_file, manifest_link};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    File(u32),
    Dir(u32),
    Symlink(Vec<u8>),
    /// A FIFO (never opened) and its mode.
    Fifo(u32),
}

#[derive(Debug)]
pub(crate) struct Inode {
    pub(crate) data: Vec<u8>,
    pub(crate) mode: u32,
    pub(crate) links: u32,
    /// Largest size this file grows to.
    pub(crate) max: u64,
}

/// What the directory must hold: relative path → entry; files by inode.
#[derive(Debug, Default)]
pub(crate) struct Model {
    pub(crate) entries: BTreeMap<String, Entry>,
    pub(crate) inodes: HashMap<u32, Inode>,
    pub(crate) next_ino: u32,
}

pub(crate) fn parent_of(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

pub(crate) fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

pub(crate) fn depth(path: &str) -> usize {
    if path.is_empty() {
        0
    } else {
        path.matches('/').count() + 1
    }
}

impl Model {
    pub(crate) fn dirs(&self) -> Vec<String> {
        let mut v = vec![String::new()];
        v.extend(
            self.entries
                .iter()
                .filter(|(_, e)| matches!(e, Entry::Dir(_)))
                .map(|(p, _)| p.clone()),
        );
        v
    }
    pub(crate) fn files(&self) -> Vec<(String, u32)> {
        self.entries
            .iter()
            .filter_map(|(p, e)| match e {
                Entry::File(i) => Some((p.clone(), *i)),
                _ => None,
            })
            .collect()
    }
    pub(crate) fn symlinks(&self) -> Vec<String> {
        self.entries
            .iter()
            .filter(|(_, e)| matches!(e, Entry::Symlink(_)))
            .map(|(p, _)| p.clone())
            .collect()
    }
    pub(crate) fn children(&self, dir: &str) -> BTreeSet<String> {
        self.entries
            .keys()
            .filter(|p| parent_of(p) == dir)
            .map(|p| p.rsplit('/').next().unwrap_or(p).to_owned())
            .collect()
    }
    /// `buf` written at `off` of inode `ino` (the file grows with zeros
    /// up to `off` if shorter).
    pub(crate) fn wrote(&mut self, ino: u32, off: u64, buf: &[u8]) {
        let d = &mut self.inodes.get_mut(&ino).expect("inode of a file").data;
        let end = off as usize + buf.len();
        if d.len() < end {
            d.resize(end, 0);
        }
        d[off as usize..end].copy_from_slice(buf);
    }

    /// Drops one name of a file (the inode with its last name).
    pub(crate) fn unlink(&mut self, path: &str) {
        if let Some(Entry::File(i)) = self.entries.remove(path) {
            let ino = self.inodes.get_mut(&i).expect("inode of a name");
            ino.links -= 1;
            if ino.links == 0 {
                self.inodes.remove(&i);
            }
        }
    }
    /// The manifest lines of the model.
    pub(crate) fn manifest(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|(p, e)| match e {
                Entry::File(i) => {
                    let n = &self.inodes[i];
                    manifest_file(p, n.mode, n.links, &n.data)
                }
                Entry::Dir(mode) => manifest_dir(p, *mode),
                Entry::Symlink(t) => manifest_link(p, t),
                Entry::Fifo(mode) => manifest_fifo(p, *mode),
            })
            .collect()
    }
}
