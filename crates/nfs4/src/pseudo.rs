//! The NFSv4 pseudo file system: the namespace that leads to the exports
//! of an exports file (RFC 8881 §7.3).
//!
//! With one directory served from the command line its root is the
//! namespace's root, as before. With an exports file, PUTROOTFH gives a
//! read-only directory tree made of the components of the exported paths
//! (`/srv/a` and `/data` make `/` with `srv` and `data`, `srv` with `a`);
//! LOOKUP of an exported path's last component crosses into that export,
//! and there the export's own handles, attributes and access rules apply
//! (LOOKUP of an export the client may not use is `NFS4ERR_ACCESS`, and
//! logged; READDIR of a pseudo directory lists only what leads to an
//! export the client may use). An export below another one is reached
//! through that one's directories, as NFSv3 clients reach it. An export of
//! `/` itself is the namespace's root (no pseudo file system).
//!
//! A pseudo directory's handle is 12 octets: `2, 0, 0, 0` (a format no
//! export handle has) and a 64-bit FNV-1a hash of its path, which is also
//! its file id; it names no file, so it needs no MAC (a forged one names a
//! pseudo directory anyone may look at, or nothing: `NFS4ERR_STALE`). Its
//! attributes: a directory, mode 0555, owned by root, of its own file
//! system id, with the server's start as its times.

use std::net::IpAddr;

use rpcrdma_nfs3::exports::ExportTable;
use rpcrdma_nfs3::fs::{Attr, FileHandle, FileType, Time};

/// The first octet of a pseudo directory's handle.
const FORMAT: u8 = 2;
/// The length of a pseudo directory's handle.
const HANDLE_LEN: usize = 12;
/// The file system id of the pseudo directories.
pub(crate) const PSEUDO_FSID: u64 = u64::MAX;

/// What a name in a pseudo directory leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Child {
    /// Another pseudo directory (its index).
    Dir(usize),
    /// The root of an export (its export id).
    Export(u32),
}

#[derive(Debug)]
struct Node {
    id: u64,
    parent: Option<usize>,
    children: Vec<(Vec<u8>, Child)>,
    /// The exports at or below this directory.
    below: Vec<u32>,
}

/// The pseudo file system of an exports table.
#[derive(Debug)]
pub(crate) struct Pseudo {
    nodes: Vec<Node>,
    /// (export id, the pseudo directory it sits in, its path's id).
    mounts: Vec<(u32, usize, u64)>,
}

/// FNV-1a, 64 bits: a stable id for a path.
fn fnv64(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in b {
        h ^= u64::from(x);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Whether a handle is a pseudo directory's (by its form).
pub(crate) fn is_pseudo(fh: &FileHandle) -> bool {
    let b = fh.as_bytes();
    b.len() == HANDLE_LEN && b[0] == FORMAT
}

impl Pseudo {
    /// The pseudo file system of `table`: `None` for one directory from
    /// the command line, or when `/` itself is exported (that export is
    /// then the root).
    pub(crate) fn build(table: &ExportTable) -> Option<Self> {
        if table.is_single() || table.entries().iter().any(|e| e.path() == b"/") {
            return None;
        }
        let mut entries: Vec<(&[u8], u32)> = table
            .entries()
            .iter()
            .map(|e| (e.path(), e.export().export_id()))
            .collect();
        entries.sort_by_key(|e| e.0.len());
        let mut fs = Pseudo {
            nodes: vec![Node {
                id: fnv64(b"/"),
                parent: None,
                children: Vec::new(),
                below: Vec::new(),
            }],
            mounts: Vec::new(),
        };
        let exported: Vec<&[u8]> = entries.iter().map(|e| e.0).collect();
        'exports: for &(path, id) in &entries {
            let comps: Vec<&[u8]> = path
                .split(|&b| b == b'/')
                .filter(|c| !c.is_empty())
                .collect();
            let mut at = 0;
            let mut cur = Vec::new();
            let mut chain = vec![0];
            for (i, comp) in comps.iter().enumerate() {
                cur.push(b'/');
                cur.extend_from_slice(comp);
                if i + 1 == comps.len() {
                    fs.nodes[at]
                        .children
                        .push((comp.to_vec(), Child::Export(id)));
                    fs.mounts.push((id, at, fnv64(&cur)));
                    break;
                }
                if exported.contains(&cur.as_slice()) {
                    // Below another export: reached through it.
                    continue 'exports;
                }
                let next = fs.nodes[at].children.iter().find_map(|(n, c)| match c {
                    Child::Dir(d) if n == comp => Some(*d),
                    _ => None,
                });
                at = match next {
                    Some(d) => d,
                    None => {
                        fs.nodes.push(Node {
                            id: fnv64(&cur),
                            parent: Some(at),
                            children: Vec::new(),
                            below: Vec::new(),
                        });
                        let d = fs.nodes.len() - 1;
                        fs.nodes[at].children.push((comp.to_vec(), Child::Dir(d)));
                        d
                    }
                };
                chain.push(at);
            }
            for n in chain {
                fs.nodes[n].below.push(id);
            }
        }
        Some(fs)
    }

    /// The root's index.
    pub(crate) fn root(&self) -> usize {
        0
    }

    /// The handle of directory `i`.
    pub(crate) fn handle(&self, i: usize) -> FileHandle {
        let mut b = Vec::with_capacity(HANDLE_LEN);
        b.extend_from_slice(&[FORMAT, 0, 0, 0]);
        b.extend_from_slice(&self.nodes[i].id.to_be_bytes());
        FileHandle::from_bytes(&b).expect("12 octets")
    }

    /// The directory a pseudo handle names (`None`: none here now).
    pub(crate) fn find(&self, fh: &FileHandle) -> Option<usize> {
        if !is_pseudo(fh) {
            return None;
        }
        let b = fh.as_bytes();
        if b[1..4] != [0, 0, 0] {
            return None;
        }
        let mut id = [0u8; 8];
        id.copy_from_slice(&b[4..12]);
        let id = u64::from_be_bytes(id);
        self.nodes.iter().position(|n| n.id == id)
    }

    /// What `name` in directory `i` leads to.
    pub(crate) fn child(&self, i: usize, name: &[u8]) -> Option<Child> {
        self.nodes[i]
            .children
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| *c)
    }

    /// The names in directory `i`, in order.
    pub(crate) fn children(&self, i: usize) -> &[(Vec<u8>, Child)] {
        &self.nodes[i].children
    }

    /// The parent of directory `i` (`None` for the root).
    pub(crate) fn parent(&self, i: usize) -> Option<usize> {
        self.nodes[i].parent
    }

    /// The pseudo directory an export's root sits in, and the file id its
    /// path has in the pseudo file system (its `mounted_on_fileid`).
    pub(crate) fn mount_of(&self, export_id: u32) -> Option<(usize, u64)> {
        self.mounts
            .iter()
            .find(|m| m.0 == export_id)
            .map(|m| (m.1, m.2))
    }

    /// Whether `child` leads to an export `admits` lets the client use.
    pub(crate) fn leads_to(&self, child: Child, admits: &dyn Fn(u32) -> bool) -> bool {
        match child {
            Child::Export(id) => admits(id),
            Child::Dir(d) => self.nodes[d].below.iter().any(|&id| admits(id)),
        }
    }

    /// The attributes of directory `i`; `born` is its times.
    pub(crate) fn attr(&self, i: usize, born: Time) -> Attr {
        let n = &self.nodes[i];
        let dirs = n
            .children
            .iter()
            .filter(|(_, c)| matches!(c, Child::Dir(_)))
            .count() as u32;
        Attr {
            ftype: FileType::Directory,
            mode: 0o555,
            nlink: 2 + dirs,
            uid: 0,
            gid: 0,
            size: 4096,
            used: 4096,
            rdev: (0, 0),
            fsid: PSEUDO_FSID,
            fileid: n.id,
            atime: born,
            mtime: born,
            ctime: born,
        }
    }
}

/// Whether a table lets a client at `ip` use the export `id`.
pub(crate) fn admits(table: &ExportTable, ip: Option<IpAddr>, id: u32) -> bool {
    table.by_id(id).is_some_and(|e| e.access(ip).is_some())
}
