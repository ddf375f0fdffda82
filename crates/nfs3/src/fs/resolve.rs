//! From handles and names to open objects, confined to the export:
//! a handle is resolved through open directories, remembered names or
//! a search of the tree; LOOKUP and MOUNT walk single names, never a
//! symbolic link, never above the root or onto another file system.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use rpcrdma_sync::lock;
use rustix::fs::{Mode, OFlags};

use super::nodes::{self, generation, open_path, statx_fd};
use super::{
    check_name, Attr, Caller, Export, FileHandle, FileType, NfsError, NfsResult, Node, NodeId,
    NAME_MAX,
};

impl Export {
    pub(super) fn id_of(st: &rustix::fs::Statx) -> NodeId {
        NodeId {
            ino: st.stx_ino,
            gen: generation(st),
        }
    }

    pub(super) fn same_dev(&self, st: &rustix::fs::Statx) -> bool {
        (st.stx_dev_major, st.stx_dev_minor) == self.dev
    }

    /// Checks that an object found is the one `id` names.
    fn matches(&self, st: &rustix::fs::Statx, id: NodeId) -> bool {
        st.stx_ino == id.ino && generation(st) == id.gen && self.same_dev(st) && st.stx_nlink > 0
    }

    pub(super) fn root_node(&self) -> NfsResult<Node> {
        let st = statx_fd(&*self.root_fd)?;
        Ok(Node {
            fd: self.root_fd.clone(),
            st,
        })
    }

    /// Resolves a handle to an open object (as the server, before acting
    /// as the caller: resolving a handle is not a permission check).
    pub(super) fn resolve(&self, fh: &FileHandle) -> NfsResult<Node> {
        let id = self.keys.open(fh)?;
        if id.ino == self.root_id.ino {
            return if id.gen == self.root_id.gen {
                self.root_node()
            } else {
                Err(NfsError::Stale)
            };
        }
        if let Some(n) = self.resolve_known(id) {
            return Ok(n);
        }
        if lock(&self.nodes).is_stale(&id) {
            return Err(NfsError::Stale);
        }
        // Not where we remembered it (or never seen since the start):
        // search the export, one search at a time.
        let _one = lock(&self.searching);
        if let Some(n) = self.resolve_known(id) {
            return Ok(n);
        }
        if lock(&self.nodes).is_stale(&id) {
            return Err(NfsError::Stale);
        }
        tracing::debug!(ino = id.ino, "searching the export for a handle's inode");
        let found = nodes::search(
            &self.root_fd,
            self.root_id.ino,
            self.dev,
            id,
            |ino, parent, name| {
                lock(&self.nodes).learn(ino, parent, name);
            },
        )?;
        if found {
            if let Some(n) = self.resolve_known(id) {
                return Ok(n);
            }
        }
        lock(&self.nodes).mark_stale(id);
        Err(NfsError::Stale)
    }

    /// Resolves through an open directory or the remembered names.
    fn resolve_known(&self, id: NodeId) -> Option<Node> {
        let open = lock(&self.nodes).open_dir(id.ino);
        if let Some(fd) = open {
            match statx_fd(&*fd) {
                Ok(st) if self.matches(&st, id) => return Some(Node { fd, st }),
                _ => lock(&self.nodes).forget_dir(id.ino),
            }
        }
        let (start, chain) = lock(&self.nodes).chain(id.ino, self.root_id.ino)?;
        let mut cur: Arc<OwnedFd> = start.unwrap_or_else(|| self.root_fd.clone());
        let mut last = None;
        for (ino, name) in &chain {
            let fd = open_path(&*cur, name).ok()?;
            let st = statx_fd(&fd).ok()?;
            if st.stx_ino != *ino || !self.same_dev(&st) {
                return None;
            }
            let fd = Arc::new(fd);
            if FileType::from_mode(u32::from(st.stx_mode)) == FileType::Directory {
                lock(&self.nodes).keep_dir(st.stx_ino, fd.clone());
            }
            cur = fd;
            last = Some(st);
        }
        let st = last?;
        self.matches(&st, id).then_some(Node { fd: cur, st })
    }

    /// Remembers a child found under `dir` and returns its handle.
    pub(super) fn learn(&self, dir: &Node, name: &[u8], st: &rustix::fs::Statx) -> FileHandle {
        lock(&self.nodes).learn(st.stx_ino, dir.ino(), name);
        self.keys.make(Self::id_of(st))
    }

    pub(super) fn dir_node(&self, fh: &FileHandle) -> NfsResult<Node> {
        let n = self.resolve(fh)?;
        if n.ftype() != FileType::Directory {
            return Err(NfsError::NotDir);
        }
        Ok(n)
    }

    /// LOOKUP: the handle and attributes of `name` in `dir`, and the
    /// directory's attributes (also on failure).
    pub fn lookup(
        &self,
        caller: &Caller,
        dir: &FileHandle,
        name: &[u8],
    ) -> (NfsResult<(FileHandle, Attr)>, Option<Attr>) {
        let d = match self.dir_node(dir) {
            Ok(d) => d,
            Err(e) => return (Err(e), None),
        };
        let r = self.lookup_in(caller, &d, name);
        (r, self.post_attr(&d))
    }

    fn lookup_in(&self, caller: &Caller, d: &Node, name: &[u8]) -> NfsResult<(FileHandle, Attr)> {
        check_name(name, true)?;
        if name == b"." {
            return Ok((self.keys.make(Self::id_of(&d.st)), self.attr_of(&d.st)));
        }
        if name == b".." {
            return self.parent_of(caller, d);
        }
        let act = self.act(caller)?;
        let fd = open_path(&*d.fd, name)?;
        drop(act);
        let st = statx_fd(&fd)?;
        if !self.same_dev(&st) {
            // A mount point: nothing of another file system is served.
            return Err(NfsError::Acces);
        }
        if FileType::from_mode(u32::from(st.stx_mode)) == FileType::Directory {
            lock(&self.nodes).keep_dir(st.stx_ino, Arc::new(fd));
        }
        Ok((self.learn(d, name, &st), self.attr_of(&st)))
    }

    /// `..` of `d`, never above the export root.
    fn parent_of(&self, caller: &Caller, d: &Node) -> NfsResult<(FileHandle, Attr)> {
        if d.ino() == self.root_id.ino {
            return Ok((self.root_handle(), self.attr_of(&d.st)));
        }
        {
            let act = self.act(caller)?;
            // Search permission on `d` is what `..` needs.
            open_path(&*d.fd, b".")?;
            drop(act);
        }
        let parent = open_path(&*d.fd, b"..")?;
        let st = statx_fd(&parent)?;
        // The parent must be inside the export: walk up to the root.
        let mut cur = parent.try_clone().map_err(|_| NfsError::ServerFault)?;
        let mut cur_ino = st.stx_ino;
        for _ in 0..4096 {
            if cur_ino == self.root_id.ino {
                let fd = Arc::new(parent);
                lock(&self.nodes).keep_dir(st.stx_ino, fd);
                return Ok((self.keys.make(Self::id_of(&st)), self.attr_of(&st)));
            }
            let up = open_path(&cur, b"..")?;
            let ust = statx_fd(&up)?;
            if ust.stx_ino == cur_ino || !self.same_dev(&ust) {
                break; // reached "/" or another file system
            }
            cur = up;
            cur_ino = ust.stx_ino;
        }
        // The directory was moved out of the export behind our back.
        Err(NfsError::Stale)
    }

    /// MOUNT: the handle of `path` (relative to the export root, `/`
    /// separated), walking only directories inside the export and never
    /// a symbolic link or `..`.
    pub fn mount_path(&self, path: &[u8]) -> NfsResult<FileHandle> {
        let mut cur = self.root_node()?;
        for comp in path
            .split(|&b| b == b'/')
            .filter(|c| !c.is_empty() && *c != b".")
        {
            if comp == b".." || comp.len() > NAME_MAX || comp.contains(&0) {
                return Err(NfsError::Acces);
            }
            let fd = rustix::fs::openat(
                &*cur.fd,
                comp,
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            let st = statx_fd(&fd)?;
            if !self.same_dev(&st) {
                return Err(NfsError::Acces);
            }
            lock(&self.nodes).learn(st.stx_ino, cur.ino(), comp);
            cur = Node {
                fd: Arc::new(fd),
                st,
            };
        }
        Ok(self.keys.make(Self::id_of(&cur.st)))
    }
}
