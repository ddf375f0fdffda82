//! From a file handle's (inode, generation) back to an open file.
//!
//! A user-space server cannot open a file by inode number without
//! privileges, so the export remembers where it last saw each inode: its
//! parent directory's inode and its name ([`Nodes`]), learnt from every
//! LOOKUP, READDIRPLUS, CREATE, RENAME … it answers. Directories it has
//! opened are also kept open (`O_PATH` descriptors, which follow a
//! directory through renames). A handle is resolved by
//!
//! 1. the open directory, if there is one;
//! 2. otherwise a walk from the export root (or the nearest open
//!    ancestor) along the remembered names, one `openat(…, O_PATH |
//!    O_NOFOLLOW)` per component, checking each inode on the way;
//! 3. otherwise (after a restart, or a rename made outside NFS) a search
//!    of the export's tree for the inode, depth first, never leaving the
//!    file system or following a symbolic link, which records what it
//!    finds.
//!
//! The object found must have the handle's inode **and generation** and a
//! link count above zero; otherwise the handle is stale (and remembered
//! as such, so a client repeating a stale handle does not cause a search
//! each time).
//!
//! Bounds: at most `max_nodes` remembered links (the least recently used
//! eighth is dropped when full), `max_dir_fds` open directories, 4096
//! remembered stale handles, and a search depth of 1024 directories.

use std::collections::{HashMap, HashSet, VecDeque};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use rustix::fs::{AtFlags, Mode, OFlags, StatxFlags};

use super::handle::NodeId;
use super::types::{NfsError, NfsResult};

const MAX_STALE: usize = 4096;
const MAX_SEARCH_DEPTH: usize = 1024;
/// Longest chain of remembered parents followed (a loop guard).
const MAX_CHAIN: usize = 4096;

#[derive(Debug, Clone)]
struct Link {
    parent: u64,
    name: Box<[u8]>,
    used: u64,
}

#[derive(Debug)]
struct DirFd {
    fd: Arc<OwnedFd>,
    used: u64,
}

/// A remembered path: the open directory it starts from (`None`: the
/// export root) and each component with the inode expected there.
pub(crate) type Chain = (Option<Arc<OwnedFd>>, Vec<(u64, Box<[u8]>)>);

/// The export's memory of where inodes are.
#[derive(Debug)]
pub(crate) struct Nodes {
    links: HashMap<u64, Link>,
    dirs: HashMap<u64, DirFd>,
    stale: HashSet<NodeId>,
    stale_order: VecDeque<NodeId>,
    clock: u64,
    max_nodes: usize,
    max_dir_fds: usize,
}

/// What a statx needs to tell us.
pub(crate) const STATX_MASK: StatxFlags = StatxFlags::BASIC_STATS.union(StatxFlags::BTIME);

/// The generation we put in handles: the birth time folded to 32 bits
/// (0 if the file system does not report one).
pub(crate) fn generation(st: &rustix::fs::Statx) -> u32 {
    if st.stx_mask & StatxFlags::BTIME.bits() == 0 {
        return 0;
    }
    let sec = st.stx_btime.tv_sec as u64;
    let nsec = u64::from(st.stx_btime.tv_nsec);
    let x = sec.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ nsec.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    (x ^ (x >> 32)) as u32
}

pub(crate) fn statx_fd(fd: impl AsFd) -> rustix::io::Result<rustix::fs::Statx> {
    rustix::fs::statx(
        fd,
        c"",
        AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW,
        STATX_MASK,
    )
}

pub(crate) fn statx_at(dir: impl AsFd, name: &[u8]) -> rustix::io::Result<rustix::fs::Statx> {
    rustix::fs::statx(dir, name, AtFlags::SYMLINK_NOFOLLOW, STATX_MASK)
}

/// `openat(dir, name, O_PATH | O_NOFOLLOW)`: a handle on the object
/// itself, symbolic links included, never their targets.
pub(crate) fn open_path(dir: impl AsFd, name: &[u8]) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

impl Nodes {
    pub(crate) fn new(max_nodes: usize, max_dir_fds: usize) -> Self {
        Self {
            links: HashMap::new(),
            dirs: HashMap::new(),
            stale: HashSet::new(),
            stale_order: VecDeque::new(),
            clock: 0,
            max_nodes: max_nodes.max(16),
            max_dir_fds: max_dir_fds.max(4),
        }
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Remembers that `ino` is called `name` in directory `parent`.
    pub(crate) fn learn(&mut self, ino: u64, parent: u64, name: &[u8]) {
        let used = self.tick();
        if let Some(l) = self.links.get_mut(&ino) {
            if l.parent == parent && *l.name == *name {
                l.used = used;
                return;
            }
        }
        if self.links.len() >= self.max_nodes && !self.links.contains_key(&ino) {
            self.evict_links();
        }
        self.links.insert(
            ino,
            Link {
                parent,
                name: name.into(),
                used,
            },
        );
    }

    /// Forgets `ino` under `name` in `parent` (it was removed or renamed).
    pub(crate) fn forget_name(&mut self, parent: u64, name: &[u8]) {
        self.links
            .retain(|_, l| !(l.parent == parent && *l.name == *name));
    }

    /// Forgets an open directory (it was removed).
    pub(crate) fn forget_dir(&mut self, ino: u64) {
        self.dirs.remove(&ino);
    }

    fn evict_links(&mut self) {
        let mut used: Vec<u64> = self.links.values().map(|l| l.used).collect();
        let cut = used.len() / 8;
        let (_, nth, _) = used.select_nth_unstable(cut);
        let limit = *nth;
        self.links.retain(|_, l| l.used > limit);
    }

    pub(crate) fn keep_dir(&mut self, ino: u64, fd: Arc<OwnedFd>) {
        let used = self.tick();
        if self.dirs.len() >= self.max_dir_fds && !self.dirs.contains_key(&ino) {
            let mut used_v: Vec<u64> = self.dirs.values().map(|d| d.used).collect();
            let cut = used_v.len() / 4;
            let (_, nth, _) = used_v.select_nth_unstable(cut);
            let limit = *nth;
            self.dirs.retain(|_, d| d.used > limit);
        }
        self.dirs.insert(ino, DirFd { fd, used });
    }

    pub(crate) fn open_dir(&mut self, ino: u64) -> Option<Arc<OwnedFd>> {
        let used = self.tick();
        self.dirs.get_mut(&ino).map(|d| {
            d.used = used;
            d.fd.clone()
        })
    }

    pub(crate) fn is_stale(&self, id: &NodeId) -> bool {
        self.stale.contains(id)
    }

    pub(crate) fn mark_stale(&mut self, id: NodeId) {
        if self.stale.insert(id) {
            self.stale_order.push_back(id);
            if self.stale_order.len() > MAX_STALE {
                if let Some(old) = self.stale_order.pop_front() {
                    self.stale.remove(&old);
                }
            }
        }
    }

    /// The remembered path to `ino`: the components from the nearest open
    /// directory (or the root, `None`) down to `ino`, each with the inode
    /// expected there.
    pub(crate) fn chain(&mut self, ino: u64, root: u64) -> Option<Chain> {
        let mut out = Vec::new();
        let mut cur = ino;
        for _ in 0..MAX_CHAIN {
            if cur == root {
                out.reverse();
                return Some((None, out));
            }
            if cur != ino {
                if let Some(fd) = self.open_dir(cur) {
                    out.reverse();
                    return Some((Some(fd), out));
                }
            }
            let l = self.links.get(&cur)?;
            out.push((cur, l.name.clone()));
            cur = l.parent;
        }
        None
    }
}

/// Depth-first search of the tree under `root` for `target`, on device
/// `dev`, never following symbolic links. Calls `found(parent_ino, name)`
/// for every directory passed and for the target. Returns whether it was
/// found.
pub(crate) fn search(
    root: &OwnedFd,
    root_ino: u64,
    dev: (u32, u32),
    target: NodeId,
    mut learn: impl FnMut(u64, u64, &[u8]),
) -> NfsResult<bool> {
    struct Level {
        dir: rustix::fs::Dir,
        fd: OwnedFd,
        ino: u64,
    }
    let open_level = |fd: OwnedFd, ino: u64| -> Option<Level> {
        let rd = rustix::fs::openat(
            &fd,
            c".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        let dir = rustix::fs::Dir::new(rd).ok()?;
        Some(Level { dir, fd, ino })
    };
    let start = root.try_clone().map_err(|_| NfsError::ServerFault)?;
    let mut stack: Vec<Level> = match open_level(start, root_ino) {
        Some(l) => vec![l],
        None => return Err(NfsError::ServerFault),
    };
    loop {
        let depth = stack.len();
        let Some(top) = stack.last_mut() else { break };
        let Some(entry) = top.dir.read() else {
            stack.pop();
            continue;
        };
        let Ok(entry) = entry else {
            stack.pop();
            continue;
        };
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let ino = entry.ino();
        let is_dir = match entry.file_type() {
            rustix::fs::FileType::Directory => true,
            rustix::fs::FileType::Unknown => statx_at(&top.fd, name)
                .map(|s| FileTypeBits(s.stx_mode).is_dir())
                .unwrap_or(false),
            _ => false,
        };
        if ino == target.ino {
            if let Ok(st) = statx_at(&top.fd, name) {
                if st.stx_ino == target.ino
                    && (st.stx_dev_major, st.stx_dev_minor) == dev
                    && generation(&st) == target.gen
                {
                    learn(target.ino, top.ino, name);
                    return Ok(true);
                }
            }
        }
        if is_dir && depth < MAX_SEARCH_DEPTH {
            let parent = top.ino;
            let Ok(sub) = rustix::fs::openat(
                &top.fd,
                name,
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            ) else {
                continue;
            };
            let Ok(st) = statx_fd(&sub) else { continue };
            if (st.stx_dev_major, st.stx_dev_minor) != dev {
                continue; // a mount point: another file system
            }
            learn(st.stx_ino, parent, name);
            let ino = st.stx_ino;
            if let Some(level) = open_level(sub, ino) {
                stack.push(level);
            }
        }
    }
    Ok(false)
}

struct FileTypeBits(u16);
impl FileTypeBits {
    fn is_dir(&self) -> bool {
        u32::from(self.0) & 0o170000 == 0o040000
    }
}
