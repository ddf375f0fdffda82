//! The export: a local directory served over NFSv3, with its own Rust
//! types and no wire encoding.
//!
//! Every operation works from **open directory descriptors and single
//! names** (`openat`, `mkdirat`, `renameat`, `statx` … with `O_NOFOLLOW`
//! / `AT_SYMLINK_NOFOLLOW`): the server never joins paths, never follows a
//! symbolic link (clients resolve their own), and never leaves the
//! export — `..` of the export root is the root, names with `/` are
//! refused, and nothing on another file system below a mount point is
//! served. See `docs/nfs.md` for the whole design.
//!
//! * File handles ([`handle`]) are keyed MACs over (export, inode,
//!   generation), stable across restarts; [`nodes`] turns them back into
//!   open files; a deleted file's handle is `NFS3ERR_STALE`.
//! * Attributes come from `statx` of the real file system.
//! * Identities ([`ident`]): AUTH_SYS with root squashing by default;
//!   a server running as root acts as the caller for each operation.
//! * WRITE with `UNSTABLE` leaves data in the page cache until COMMIT
//!   (`fdatasync`); the write verifier is random per server start, so a
//!   client notices a restart and writes again what was not committed.
//! * READDIR cookies are the file system's own directory offsets
//!   (`d_off`), stable across restarts and across changes to the
//!   directory; the cookie verifier is a keyed hash of the directory's
//!   identity.

mod handle;
mod ident;
mod nodes;
mod types;

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use rpcrdma_sync::lock;
use rustix::fs::{AtFlags, Mode, OFlags, Timespec, Timestamps};
use rustix::io::Errno;

pub use handle::{FileHandle, HandleKey, NodeId, HANDLE_LEN, NFS3_FHSIZE};
pub use ident::{squash, Caller, IdentityMode, Squash};
pub use types::{
    access, fsf, Attr, CreateHow, FileType, FsInfo, FsStat, NfsError, NfsResult, PathConf, SetAttr,
    SetTime, SpecialFile, StableHow, Time, Wcc, WccAttr,
};

use ident::Acting;
use nodes::{generation, open_path, statx_at, statx_fd, Nodes};

/// Largest READ and WRITE (`FSINFO` rtmax/wtmax): 1 MiB.
pub const MAX_IO: u32 = 1 << 20;
/// Longest name (`PATHCONF` name_max).
pub const NAME_MAX: usize = 255;
/// Longest symbolic link target accepted by SYMLINK.
pub const MAX_LINK_TARGET: usize = 4095;

/// Settings of an export.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ExportConfig {
    /// The directory served.
    pub root: PathBuf,
    /// Where the file handle key is kept (`handle.key`, created on first
    /// use with mode 0600). Never inside the export.
    pub state_dir: PathBuf,
    /// Refuse every change with `NFS3ERR_ROFS` (default false).
    pub read_only: bool,
    /// Identity mapping (default: root squashing).
    pub squash: Squash,
    /// The anonymous user and group (default 65534, 65534).
    pub anon: (u32, u32),
    /// How operations run (default: [`IdentityMode::detect`]).
    pub identity: IdentityMode,
    /// Remembered inode locations (default 262144, about 100 bytes each
    /// plus the name).
    pub max_nodes: usize,
    /// Directories kept open (default 512).
    pub max_dir_fds: usize,
}

impl ExportConfig {
    /// Defaults for serving `root`, keeping state in `state_dir`.
    pub fn new(root: impl Into<PathBuf>, state_dir: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            state_dir: state_dir.into(),
            read_only: false,
            squash: Squash::Root,
            anon: (65534, 65534),
            identity: IdentityMode::detect(),
            max_nodes: 262_144,
            max_dir_fds: 512,
        }
    }
}

/// Why an export cannot be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The export directory cannot be opened.
    #[error(
        "cannot open the export directory {path}: {source} (it must be an existing directory)"
    )]
    Root {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The state directory or key cannot be used.
    #[error("cannot use the state directory {path}: {source} (give a writable directory outside the export)")]
    State {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The key file exists but is not a key.
    #[error("{path} is not a file handle key (16 bytes expected, found {len}); move it away to start with a new key (clients will see stale handles)")]
    BadKey {
        /// The path.
        path: PathBuf,
        /// Its length.
        len: u64,
    },
    /// The state directory is inside the export.
    #[error("the state directory {state} is inside the export {root}: clients could read the file handle key; choose another")]
    StateInsideExport {
        /// State directory.
        state: PathBuf,
        /// Export.
        root: PathBuf,
    },
    /// `/proc/self/fd` is missing (the server reopens files through it).
    #[error("/proc is not mounted: the NFS server reopens files through /proc/self/fd")]
    NoProc,
}

/// One entry of a READDIR or READDIRPLUS reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// Inode number.
    pub fileid: u64,
    /// Name.
    pub name: Bytes,
    /// The cookie that resumes the listing after this entry.
    pub cookie: u64,
    /// Attributes (READDIRPLUS).
    pub attr: Option<Attr>,
    /// File handle (READDIRPLUS; none for `..`).
    pub handle: Option<FileHandle>,
}

/// A READDIR(PLUS) result.
#[derive(Debug, Clone)]
pub struct ReadDir {
    /// The entries that fit.
    pub entries: Vec<DirEntry>,
    /// Whether the listing ended.
    pub eof: bool,
    /// The cookie verifier to send back.
    pub verf: [u8; 8],
    /// The directory's attributes.
    pub dir_attr: Option<Attr>,
}

/// The result of an operation that changed an object, with its weak
/// cache consistency data (on success and on failure).
#[derive(Debug, Clone)]
pub struct Outcome<T> {
    /// The result.
    pub result: NfsResult<T>,
    /// Attributes before and after, of the object changed (a directory for
    /// CREATE, REMOVE …; the file for WRITE, SETATTR, COMMIT).
    pub wcc: Wcc,
}

/// A file made by CREATE, MKDIR, SYMLINK or MKNOD.
#[derive(Debug, Clone)]
pub struct Made {
    /// Its handle.
    pub handle: FileHandle,
    /// Its attributes.
    pub attr: Attr,
}

/// The result of a WRITE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// Bytes written.
    pub count: u32,
    /// How they were committed.
    pub committed: StableHow,
    /// The write verifier.
    pub verf: [u8; 8],
}

/// The result of a READ.
#[derive(Debug, Clone)]
pub struct ReadData {
    /// The data.
    pub data: Bytes,
    /// Whether the read reached the end of the file.
    pub eof: bool,
    /// Attributes after the read.
    pub attr: Attr,
}

/// An open object, resolved from a handle.
#[derive(Debug)]
struct Node {
    fd: Arc<OwnedFd>,
    st: rustix::fs::Statx,
}

impl Node {
    /// The entry `name` of directory `dir`, opened `O_PATH` and stat'ed.
    fn open_at(dir: &Node, name: &[u8]) -> rustix::io::Result<Node> {
        let fd = open_path(&*dir.fd, name)?;
        let st = statx_fd(&fd)?;
        Ok(Node {
            fd: Arc::new(fd),
            st,
        })
    }

    fn ino(&self) -> u64 {
        self.st.stx_ino
    }
    fn ftype(&self) -> FileType {
        FileType::from_mode(u32::from(self.st.stx_mode))
    }
    fn proc_path(&self) -> String {
        use std::os::fd::AsRawFd;
        format!("/proc/self/fd/{}", self.fd.as_raw_fd())
    }
}

fn time_of(t: &rustix::fs::StatxTimestamp) -> Time {
    Time {
        seconds: t.tv_sec.clamp(0, i64::from(u32::MAX)) as u32,
        nseconds: t.tv_nsec.min(999_999_999),
    }
}

/// Checks one name given by a client: not empty, no `/` or NUL, at most
/// [`NAME_MAX`] bytes. `.` and `..` are refused unless `dots` (LOOKUP).
fn check_name(name: &[u8], dots: bool) -> NfsResult<()> {
    if name.is_empty() || name.contains(&b'/') || name.contains(&0) {
        return Err(NfsError::Acces);
    }
    if name.len() > NAME_MAX {
        return Err(NfsError::NameTooLong);
    }
    if !dots && (name == b"." || name == b"..") {
        return Err(NfsError::Inval);
    }
    Ok(())
}

/// A served directory.
#[derive(Debug)]
pub struct Export {
    cfg: ExportConfig,
    canon: PathBuf,
    root_fd: Arc<OwnedFd>,
    root_id: NodeId,
    dev: (u32, u32),
    fsid: u64,
    keys: HandleKey,
    write_verf: [u8; 8],
    nodes: Mutex<Nodes>,
    /// One tree search at a time.
    searching: Mutex<()>,
}

fn read_or_make_key(state_dir: &Path) -> Result<[u8; 16], ExportError> {
    use std::io::{Read, Write};
    let state_err = |source| ExportError::State {
        path: state_dir.to_owned(),
        source,
    };
    std::fs::create_dir_all(state_dir).map_err(state_err)?;
    let path = state_dir.join("handle.key");
    match std::fs::File::open(&path) {
        Ok(mut f) => {
            let len = f.metadata().map_err(state_err)?.len();
            let mut key = [0u8; 16];
            if len != 16 {
                return Err(ExportError::BadKey { path, len });
            }
            f.read_exact(&mut key).map_err(state_err)?;
            Ok(key)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key: [u8; 16] = rand::random();
            let tmp = state_dir.join(format!("handle.key.{}", std::process::id()));
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode_0600()
                .open(&tmp)
                .map_err(state_err)?;
            f.write_all(&key).map_err(state_err)?;
            f.sync_all().map_err(state_err)?;
            // Another server starting at the same moment may have won:
            // keep whichever key landed first.
            match std::fs::hard_link(&tmp, &path) {
                Ok(()) => {
                    let _ = std::fs::remove_file(&tmp);
                    Ok(key)
                }
                Err(_) => {
                    let _ = std::fs::remove_file(&tmp);
                    read_or_make_key(state_dir)
                }
            }
        }
        Err(e) => Err(state_err(e)),
    }
}

trait Mode0600 {
    fn mode_0600(&mut self) -> &mut Self;
}
impl Mode0600 for std::fs::OpenOptions {
    fn mode_0600(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.mode(0o600)
    }
}

impl Export {
    /// Opens the export: the root directory, the handle key (made on
    /// first use), a fresh write verifier.
    pub fn open(cfg: ExportConfig) -> Result<Self, ExportError> {
        let root_err = |source| ExportError::Root {
            path: cfg.root.clone(),
            source,
        };
        let canon = std::fs::canonicalize(&cfg.root).map_err(root_err)?;
        let root_fd = rustix::fs::open(
            &canon,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| root_err(e.into()))?;
        let st = statx_fd(&root_fd).map_err(|e| root_err(e.into()))?;
        if let Ok(state) = std::fs::canonicalize(&cfg.state_dir) {
            if state.starts_with(&canon) {
                return Err(ExportError::StateInsideExport { state, root: canon });
            }
        } else if cfg.state_dir.starts_with(&canon) || cfg.state_dir.starts_with(&cfg.root) {
            return Err(ExportError::StateInsideExport {
                state: cfg.state_dir.clone(),
                root: canon,
            });
        }
        if !Path::new("/proc/self/fd").is_dir() {
            return Err(ExportError::NoProc);
        }
        let key = read_or_make_key(&cfg.state_dir)?;
        let export_id = {
            let k = HandleKey::new(key, 0);
            k.tag64(canon.as_os_str().as_encoded_bytes()) as u32
        };
        let dev = (st.stx_dev_major, st.stx_dev_minor);
        let nodes = Nodes::new(cfg.max_nodes, cfg.max_dir_fds);
        Ok(Self {
            root_id: NodeId {
                ino: st.stx_ino,
                gen: generation(&st),
            },
            dev,
            fsid: (u64::from(dev.0) << 32) | u64::from(dev.1),
            keys: HandleKey::new(key, export_id),
            write_verf: rand::random(),
            nodes: Mutex::new(nodes),
            searching: Mutex::new(()),
            root_fd: Arc::new(root_fd),
            canon,
            cfg,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ExportConfig {
        &self.cfg
    }

    /// The export's directory, canonical.
    pub fn root_path(&self) -> &Path {
        &self.canon
    }

    /// The handle of the export's root.
    pub fn root_handle(&self) -> FileHandle {
        self.keys.make(self.root_id)
    }

    /// The write verifier of this server instance.
    pub fn write_verifier(&self) -> [u8; 8] {
        self.write_verf
    }

    /// The identity a credential acts as here (`None`: AUTH_NONE).
    pub fn caller(&self, cred: Option<(u32, u32, &[u32])>) -> Caller {
        squash(self.cfg.squash, self.cfg.anon, cred)
    }

    fn act(&self, caller: &Caller) -> NfsResult<Acting> {
        Acting::start(self.cfg.identity, caller).map_err(|e| {
            tracing::error!(error = %e, uid = caller.uid, "cannot act as the caller");
            NfsError::ServerFault
        })
    }

    fn writable(&self) -> NfsResult<()> {
        if self.cfg.read_only {
            Err(NfsError::Rofs)
        } else {
            Ok(())
        }
    }

    fn attr_of(&self, st: &rustix::fs::Statx) -> Attr {
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

    fn id_of(st: &rustix::fs::Statx) -> NodeId {
        NodeId {
            ino: st.stx_ino,
            gen: generation(st),
        }
    }

    fn same_dev(&self, st: &rustix::fs::Statx) -> bool {
        (st.stx_dev_major, st.stx_dev_minor) == self.dev
    }

    /// Checks that an object found is the one `id` names.
    fn matches(&self, st: &rustix::fs::Statx, id: NodeId) -> bool {
        st.stx_ino == id.ino && generation(st) == id.gen && self.same_dev(st) && st.stx_nlink > 0
    }

    fn root_node(&self) -> NfsResult<Node> {
        let st = statx_fd(&*self.root_fd)?;
        Ok(Node {
            fd: self.root_fd.clone(),
            st,
        })
    }

    /// Resolves a handle to an open object (as the server, before acting
    /// as the caller: resolving a handle is not a permission check).
    fn resolve(&self, fh: &FileHandle) -> NfsResult<Node> {
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
    fn learn(&self, dir: &Node, name: &[u8], st: &rustix::fs::Statx) -> FileHandle {
        lock(&self.nodes).learn(st.stx_ino, dir.ino(), name);
        self.keys.make(Self::id_of(st))
    }

    fn dir_node(&self, fh: &FileHandle) -> NfsResult<Node> {
        let n = self.resolve(fh)?;
        if n.ftype() != FileType::Directory {
            return Err(NfsError::NotDir);
        }
        Ok(n)
    }

    fn post_attr(&self, n: &Node) -> Option<Attr> {
        statx_fd(&*n.fd).ok().map(|st| self.attr_of(&st))
    }

    // ---- Operations -----------------------------------------------------

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

    /// ACCESS: which of `mask` the caller may do, by the mode bits (as the
    /// kernel would decide them), and the attributes.
    pub fn access(&self, caller: &Caller, fh: &FileHandle, mask: u32) -> NfsResult<(u32, Attr)> {
        let n = self.resolve(fh)?;
        let attr = self.attr_of(&n.st);
        let caller = match self.cfg.identity {
            IdentityMode::Switch => caller.clone(),
            IdentityMode::ServerUser => Caller {
                uid: rustix::process::geteuid().as_raw(),
                gid: rustix::process::getegid().as_raw(),
                groups: rustix::process::getgroups()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|g| g.as_raw())
                    .collect(),
            },
        };
        let mut granted = access_by_mode(&attr, &caller, mask);
        if self.cfg.read_only {
            granted &= !(access::MODIFY | access::EXTEND | access::DELETE);
        }
        Ok((granted, attr))
    }

    /// READLINK.
    pub fn readlink(&self, caller: &Caller, fh: &FileHandle) -> NfsResult<(Vec<u8>, Attr)> {
        let n = self.resolve(fh)?;
        if n.ftype() != FileType::Symlink {
            return Err(NfsError::Inval);
        }
        let _act = self.act(caller)?;
        let target = rustix::fs::readlinkat(&*n.fd, c"", Vec::new())?;
        Ok((target.into_bytes(), self.attr_of(&n.st)))
    }

    /// Opens the object for I/O as the caller, with the Linux NFS server's
    /// overrides: the owner may read and write whatever the mode (a file
    /// created read-only is still written by its creator), and a file the
    /// caller may execute may be read (paging in a program).
    fn open_io(&self, act: &Acting, caller: &Caller, n: &Node, write: bool) -> NfsResult<OwnedFd> {
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

    /// READ of at most `count` bytes (capped at [`MAX_IO`]) at `offset`.
    pub fn read(
        &self,
        caller: &Caller,
        fh: &FileHandle,
        offset: u64,
        count: u32,
    ) -> (NfsResult<ReadData>, Option<Attr>) {
        let n = match self.resolve(fh) {
            Ok(n) => n,
            Err(e) => return (Err(e), None),
        };
        let r = self.read_node(caller, &n, offset, count);
        let post = match &r {
            Ok(d) => Some(d.attr),
            Err(_) => self.post_attr(&n),
        };
        (r, post)
    }

    fn read_node(&self, caller: &Caller, n: &Node, offset: u64, count: u32) -> NfsResult<ReadData> {
        match n.ftype() {
            FileType::Regular => {}
            FileType::Directory => return Err(NfsError::IsDir),
            _ => return Err(NfsError::Inval),
        }
        let act = self.act(caller)?;
        let fd = self.open_io(&act, caller, n, false)?;
        drop(act);
        let want = count.min(MAX_IO) as usize;
        let mut buf = BytesMut::zeroed(want);
        let mut got = 0usize;
        while got < want {
            match rustix::io::pread(&fd, &mut buf[got..], offset.saturating_add(got as u64)) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        buf.truncate(got);
        let st = statx_fd(&fd)?;
        let eof = offset.saturating_add(got as u64) >= st.stx_size;
        Ok(ReadData {
            data: buf.freeze(),
            eof,
            attr: self.attr_of(&st),
        })
    }

    /// WRITE of `data` at `offset`.
    pub fn write(
        &self,
        caller: &Caller,
        fh: &FileHandle,
        offset: u64,
        data: &[u8],
        stable: StableHow,
    ) -> Outcome<Written> {
        let n = match self.resolve(fh) {
            Ok(n) => n,
            Err(e) => {
                return Outcome {
                    result: Err(e),
                    wcc: Wcc::default(),
                }
            }
        };
        let before = Some(WccAttr::from(&self.attr_of(&n.st)));
        let result = self.write_node(caller, &n, offset, data, stable);
        Outcome {
            result,
            wcc: Wcc {
                before,
                after: self.post_attr(&n),
            },
        }
    }

    fn write_node(
        &self,
        caller: &Caller,
        n: &Node,
        offset: u64,
        data: &[u8],
        stable: StableHow,
    ) -> NfsResult<Written> {
        self.writable()?;
        match n.ftype() {
            FileType::Regular => {}
            FileType::Directory => return Err(NfsError::IsDir),
            _ => return Err(NfsError::Inval),
        }
        if data.len() > MAX_IO as usize {
            return Err(NfsError::Inval);
        }
        if offset
            .checked_add(data.len() as u64)
            .is_none_or(|end| end > i64::MAX as u64)
        {
            return Err(NfsError::FBig);
        }
        let act = self.act(caller)?;
        let fd = self.open_io(&act, caller, n, true)?;
        let mut done = 0usize;
        while done < data.len() {
            match rustix::io::pwrite(&fd, &data[done..], offset + done as u64) {
                Ok(0) => return Err(NfsError::NoSpc),
                Ok(k) => done += k,
                Err(Errno::INTR) => continue,
                Err(e) if done == 0 => return Err(e.into()),
                Err(_) => break,
            }
        }
        let committed = match stable {
            StableHow::Unstable => StableHow::Unstable,
            StableHow::DataSync => {
                rustix::fs::fdatasync(&fd)?;
                StableHow::DataSync
            }
            StableHow::FileSync => {
                rustix::fs::fsync(&fd)?;
                StableHow::FileSync
            }
        };
        drop(act);
        Ok(Written {
            count: done as u32,
            committed,
            verf: self.write_verf,
        })
    }

    /// COMMIT: everything written to the file reaches stable storage
    /// (`fsync`; the range is not narrowed).
    pub fn commit(&self, caller: &Caller, fh: &FileHandle) -> Outcome<[u8; 8]> {
        let n = match self.resolve(fh) {
            Ok(n) => n,
            Err(e) => {
                return Outcome {
                    result: Err(e),
                    wcc: Wcc::default(),
                }
            }
        };
        let before = Some(WccAttr::from(&self.attr_of(&n.st)));
        let result = (|| {
            if n.ftype() != FileType::Regular {
                return Err(NfsError::Inval);
            }
            let act = self.act(caller)?;
            // Any open descriptor syncs the inode; reading needs the least.
            let fd = self.open_io(&act, caller, &n, false).or_else(|_| {
                act.as_root(|| {
                    rustix::fs::open(
                        n.proc_path().as_str(),
                        OFlags::RDONLY | OFlags::CLOEXEC,
                        Mode::empty(),
                    )
                })
                .map_err(NfsError::from)
            })?;
            drop(act);
            rustix::fs::fsync(&fd)?;
            Ok(self.write_verf)
        })();
        Outcome {
            result,
            wcc: Wcc {
                before,
                after: self.post_attr(&n),
            },
        }
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
            self.writable()?;
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

    fn apply(&self, act: &Acting, caller: &Caller, n: &Node, set: &SetAttr) -> NfsResult<()> {
        let ftype = n.ftype();
        if let Some(size) = set.size {
            match ftype {
                FileType::Regular => {}
                FileType::Directory => return Err(NfsError::IsDir),
                _ => return Err(NfsError::Inval),
            }
            if size > i64::MAX as u64 {
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
                    Mode::from_raw_mode(mode & 0o7777),
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

    /// Runs a change to directory `dir` and collects its wcc data.
    fn in_dir<T>(&self, dir: &FileHandle, f: impl FnOnce(&Node) -> NfsResult<T>) -> Outcome<T> {
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
            self.writable()?;
            let act = self.act(caller)?;
            let (set, verf) = match how {
                CreateHow::Unchecked(s) | CreateHow::Guarded(s) => (s, None),
                CreateHow::Exclusive(v) => (SetAttr::default(), Some(v)),
            };
            let mode = set.mode.unwrap_or(0o644) & 0o7777;
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
            self.writable()?;
            let act = self.act(caller)?;
            let mode = set.mode.unwrap_or(0o755) & 0o7777;
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
            self.writable()?;
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
            self.writable()?;
            let act = self.act(caller)?;
            let mode = set.mode.unwrap_or(0o644) & 0o7777;
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

    /// REMOVE (not a directory).
    pub fn remove(&self, caller: &Caller, dir: &FileHandle, name: &[u8]) -> Outcome<()> {
        self.in_dir(dir, |d| {
            check_name(name, false)?;
            self.writable()?;
            let _act = self.act(caller)?;
            rustix::fs::unlinkat(&*d.fd, name, AtFlags::empty())?;
            lock(&self.nodes).forget_name(d.ino(), name);
            Ok(())
        })
    }

    /// RMDIR.
    pub fn rmdir(&self, caller: &Caller, dir: &FileHandle, name: &[u8]) -> Outcome<()> {
        self.in_dir(dir, |d| {
            if name == b"." {
                return Err(NfsError::Inval);
            }
            if name == b".." {
                return Err(NfsError::NotEmpty);
            }
            check_name(name, false)?;
            self.writable()?;
            let victim = statx_at(&*d.fd, name).ok();
            let _act = self.act(caller)?;
            rustix::fs::unlinkat(&*d.fd, name, AtFlags::REMOVEDIR)?;
            let mut nodes = lock(&self.nodes);
            nodes.forget_name(d.ino(), name);
            if let Some(st) = victim {
                nodes.forget_dir(st.stx_ino);
            }
            Ok(())
        })
    }

    /// RENAME: (result, wcc of the source directory, wcc of the target).
    pub fn rename(
        &self,
        caller: &Caller,
        from_dir: &FileHandle,
        from: &[u8],
        to_dir: &FileHandle,
        to: &[u8],
    ) -> (NfsResult<()>, Wcc, Wcc) {
        let (fd_, td) = match (self.dir_node(from_dir), self.dir_node(to_dir)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => return (Err(e), Wcc::default(), Wcc::default()),
        };
        let fb = Some(WccAttr::from(&self.attr_of(&fd_.st)));
        let tb = Some(WccAttr::from(&self.attr_of(&td.st)));
        let result = (|| {
            check_name(from, false)?;
            check_name(to, false)?;
            self.writable()?;
            let moved = statx_at(&*fd_.fd, from).ok();
            let replaced = statx_at(&*td.fd, to).ok();
            let _act = self.act(caller)?;
            rustix::fs::renameat(&*fd_.fd, from, &*td.fd, to)?;
            let mut nodes = lock(&self.nodes);
            nodes.forget_name(fd_.ino(), from);
            nodes.forget_name(td.ino(), to);
            if let Some(r) = replaced.filter(|r| moved.is_none_or(|m| m.stx_ino != r.stx_ino)) {
                nodes.forget_dir(r.stx_ino);
            }
            if let Some(m) = moved {
                nodes.learn(m.stx_ino, td.ino(), to);
            }
            Ok(())
        })();
        (
            result,
            Wcc {
                before: fb,
                after: self.post_attr(&fd_),
            },
            Wcc {
                before: tb,
                after: self.post_attr(&td),
            },
        )
    }

    /// LINK: (result, the file's attributes, wcc of the directory).
    pub fn link(
        &self,
        caller: &Caller,
        file: &FileHandle,
        dir: &FileHandle,
        name: &[u8],
    ) -> (NfsResult<()>, Option<Attr>, Wcc) {
        let f = match self.resolve(file) {
            Ok(f) => f,
            Err(e) => return (Err(e), None, Wcc::default()),
        };
        let out = self.in_dir(dir, |d| {
            check_name(name, false)?;
            self.writable()?;
            if f.ftype() == FileType::Directory {
                return Err(NfsError::IsDir);
            }
            let _act = self.act(caller)?;
            rustix::fs::linkat(
                rustix::fs::CWD,
                f.proc_path().as_str(),
                &*d.fd,
                name,
                AtFlags::SYMLINK_FOLLOW,
            )?;
            Ok(())
        });
        if out.result.is_ok() {
            if let Ok(d) = self.dir_node(dir) {
                lock(&self.nodes).learn(f.ino(), d.ino(), name);
            }
        }
        (out.result, self.post_attr(&f), out.wcc)
    }

    /// The cookie verifier of a directory.
    fn cookie_verf(&self, st: &rustix::fs::Statx) -> [u8; 8] {
        let id = Self::id_of(st);
        let mut b = [0u8; 12];
        b[..8].copy_from_slice(&id.ino.to_be_bytes());
        b[8..].copy_from_slice(&id.gen.to_be_bytes());
        self.keys.tag64(&b).to_be_bytes()
    }

    /// READDIR (`plus` false) or READDIRPLUS (`plus` true) from `cookie`.
    /// `fits` is asked about each entry in turn and says whether it still
    /// fits the reply; the listing stops at the first that does not.
    pub fn readdir(
        &self,
        caller: &Caller,
        dir: &FileHandle,
        cookie: u64,
        verf: [u8; 8],
        plus: bool,
        mut fits: impl FnMut(&DirEntry) -> bool,
    ) -> (NfsResult<ReadDir>, Option<Attr>) {
        let d = match self.dir_node(dir) {
            Ok(d) => d,
            Err(e) => return (Err(e), None),
        };
        let ours = self.cookie_verf(&d.st);
        let r = (|| {
            if cookie != 0 && verf != [0; 8] && verf != ours {
                return Err(NfsError::BadCookie);
            }
            if cookie > i64::MAX as u64 {
                return Err(NfsError::BadCookie);
            }
            let act = self.act(caller)?;
            let rd = rustix::fs::openat(
                &*d.fd,
                c".",
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            drop(act);
            let mut it = rustix::fs::Dir::new(rd)?;
            if cookie != 0 {
                it.seek(cookie as i64).map_err(|_| NfsError::BadCookie)?;
            }
            let is_root = d.ino() == self.root_id.ino;
            let mut entries = Vec::new();
            let eof = loop {
                let Some(e) = it.read() else { break true };
                let e = e?;
                let name = e.file_name().to_bytes();
                let mut entry = DirEntry {
                    fileid: e.ino(),
                    name: Bytes::copy_from_slice(name),
                    cookie: e.offset() as u64,
                    attr: None,
                    handle: None,
                };
                if name == b".." && is_root {
                    entry.fileid = self.root_id.ino;
                }
                if plus && name != b".." {
                    let st = if name == b"." {
                        Some(d.st)
                    } else {
                        statx_at(&*d.fd, name).ok()
                    };
                    if let Some(st) = st.filter(|s| self.same_dev(s)) {
                        entry.attr = Some(self.attr_of(&st));
                        entry.handle = Some(if name == b"." {
                            self.keys.make(Self::id_of(&st))
                        } else {
                            self.learn(&d, name, &st)
                        });
                    }
                }
                if !fits(&entry) {
                    break false;
                }
                entries.push(entry);
            };
            if entries.is_empty() && !eof {
                return Err(NfsError::TooSmall);
            }
            Ok(ReadDir {
                entries,
                eof,
                verf: ours,
                dir_attr: None,
            })
        })();
        let post = self.post_attr(&d);
        let r = r.map(|mut rd| {
            rd.dir_attr = post;
            rd
        });
        (r, post)
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
            maxfilesize: i64::MAX as u64,
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
