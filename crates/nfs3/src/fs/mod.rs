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
//! * File handles ([`FileHandle`], `handle.rs`) are keyed MACs over
//!   (export, inode, generation), stable across restarts; `nodes.rs`
//!   turns them back into open files; a deleted file's handle is
//!   `NFS3ERR_STALE`.
//! * Attributes come from `statx` of the real file system.
//! * Identities ([`Caller`], `ident.rs`): AUTH_SYS with root squashing by default;
//!   a server running as root acts as the caller for each operation.
//! * WRITE with `UNSTABLE` leaves data in the page cache until COMMIT
//!   (`fdatasync`); the write verifier is random per server start, so a
//!   client notices a restart and writes again what was not committed.
//! * READDIR cookies are the file system's own directory offsets
//!   (`d_off`), stable across restarts and across changes to the
//!   directory; the cookie verifier is a keyed hash of the directory's
//!   identity.
//!
//! [`Export`] is one type; its methods are written by concern:
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | the configuration, errors and result types, the accessors |
//! | `open.rs` | opening the export, the handle key |
//! | `resolve.rs` | handles and names to open objects, confined to the export (LOOKUP, MOUNT) |
//! | `attrs.rs` | GETATTR, SETATTR, FSSTAT, FSINFO, PATHCONF |
//! | `permission.rs` | ACCESS by the mode bits; opening for I/O as the caller |
//! | `read_write.rs` | READ, WRITE, COMMIT, READLINK |
//! | `create.rs` | CREATE, MKDIR, SYMLINK, MKNOD |
//! | `links.rs` | REMOVE, RMDIR, RENAME, LINK |
//! | `readdir.rs` | READDIR, READDIRPLUS |

mod attrs;
mod buffers;
mod create;
mod handle;
mod ident;
mod links;
mod nodes;
mod open;
mod permission;
mod read_write;
mod readdir;
mod resolve;
mod types;

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

pub use create::{MAX_MAJOR, MAX_MINOR};
pub use handle::{FileHandle, HandleKey, NodeId, HANDLE_LEN, NFS3_FHSIZE};
pub use ident::{
    squash, squash_in, Caller, ClientAccess, IdMaps, IdRanges, IdentityMode, Squash, INVALID_ID,
};
pub use permission::access_by_mode;
pub use read_write::MAX_FILE_OFFSET;
pub use types::{
    access, fsf, Attr, CreateHow, FileType, FsInfo, FsStat, NfsError, NfsResult, PathConf, SetAttr,
    SetTime, SpecialFile, StableHow, Time, Wcc, WccAttr,
};

use ident::Acting;
use nodes::{open_path, statx_fd, Nodes};

/// Largest READ and WRITE (`FSINFO` rtmax/wtmax): 1 MiB.
pub const MAX_IO: u32 = 1 << 20;
/// Longest name (`PATHCONF` name_max).
pub const NAME_MAX: usize = 255;
/// Longest symbolic link target accepted by SYMLINK.
pub const MAX_LINK_TARGET: usize = 4095;

/// Settings of an export.
#[derive(Debug, Clone)]
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
    #[error("cannot open the export directory {path} (it must be an existing directory)")]
    Root {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The state directory or key cannot be used.
    #[error(
        "cannot use the state directory {path} (give a writable directory outside the export)"
    )]
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
    /// The anonymous user or group is not an id the server can act as.
    #[error("the anonymous {what} {id} is not an id this server can act as ({why}); choose another (--anon-uid/--anon-gid)")]
    BadAnon {
        /// `uid` or `gid`.
        what: &'static str,
        /// The id.
        id: u32,
        /// Why not.
        why: BadId,
    },
    /// `/proc/self/fd` is missing (the server reopens files through it).
    #[error("/proc is not mounted: the NFS server reopens files through /proc/self/fd")]
    NoProc,
}

/// Why an id is not one the server can act as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadId {
    /// `(uid_t)-1`, which the kernel reads as "no change".
    #[error("(uid_t)-1 means \"no change\" to the kernel")]
    NoChange,
    /// Outside the user namespace's id map.
    #[error("it is outside this user namespace's id map")]
    Unmapped,
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

/// See [`set_inline_work`].
static INLINE_WORK: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Whether brief file-system work on memory-backed exports may run on the
/// runtime's threads (on by default). Running it there switches those
/// threads' identity to the caller's and back, and the kernel refuses
/// `write` on a uverbs or rdma_cm file from a thread whose credentials
/// are not those it opened the file with (`ib_safe_file_access`): a
/// server whose verbs provider makes such calls on the runtime's threads
/// (rdma-core) turns it off, and the work stays on the blocking pool.
pub fn set_inline_work(on: bool) {
    INLINE_WORK.store(on, std::sync::atomic::Ordering::Relaxed);
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
    /// The ids this server can act as (its user namespace's).
    ids: IdMaps,
    write_verf: [u8; 8],
    nodes: Mutex<Nodes>,
    /// One tree search at a time.
    searching: Mutex<()>,
    /// READ's buffers, reused.
    read_buffers: buffers::ReadBuffers,
    /// See [`Export::memory_backed`].
    memory_backed: bool,
}

impl Export {
    /// The configuration.
    pub fn config(&self) -> &ExportConfig {
        &self.cfg
    }

    /// The export's directory, canonical.
    pub fn root_path(&self) -> &Path {
        &self.canon
    }

    /// Whether the export's file system keeps everything in memory
    /// (tmpfs or ramfs, told by `fstatfs` when the export was opened; an
    /// export never crosses onto another file system): no operation on
    /// it waits for a device, so a server may run brief ones on the task
    /// that decoded the call rather than hand them to a blocking thread
    /// (docs/nfs.md, "Where the work runs").
    pub fn memory_backed(&self) -> bool {
        self.memory_backed
    }

    /// Whether brief work on this export may run on the task that decoded
    /// the call: [`Export::memory_backed`], and [`set_inline_work`] has not
    /// turned it off.
    pub fn runs_brief_work_inline(&self) -> bool {
        self.memory_backed && INLINE_WORK.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The handle of the export's root.
    pub fn root_handle(&self) -> FileHandle {
        self.keys.make(self.root_id)
    }

    /// The write verifier of this server instance.
    pub fn write_verifier(&self) -> [u8; 8] {
        self.write_verf
    }

    /// The identity a credential acts as here (`None`: AUTH_NONE): ids
    /// validated against the server's user namespace, then squashed
    /// ([`squash_in`]) as the export's configuration says.
    pub fn caller(&self, cred: Option<(u32, u32, &[u32])>) -> Caller {
        self.caller_with(&self.default_access(), cred)
    }

    /// What the export's own configuration lets every client do
    /// (`read_only`, `squash`, `anon`).
    pub fn default_access(&self) -> ClientAccess {
        ClientAccess {
            read_only: self.cfg.read_only,
            squash: self.cfg.squash,
            anon: self.cfg.anon,
        }
    }

    /// The identity a credential acts as for a client with `access` (its
    /// line of the exports file): validated, then squashed as `access`
    /// says, and read-only if it says so. Its anonymous ids must be valid
    /// here ([`Self::valid_anon`]); invalid ones are replaced by the
    /// export's own.
    pub fn caller_with(&self, access: &ClientAccess, cred: Option<(u32, u32, &[u32])>) -> Caller {
        let anon = if self.valid_anon(access.anon).is_ok() {
            access.anon
        } else {
            self.cfg.anon
        };
        let mut c = squash_in(&self.ids, access.squash, anon, cred);
        c.read_only = access.read_only || self.cfg.read_only;
        c
    }

    /// Whether the anonymous ids `anon` are ids this server can act as;
    /// `Err` says which is not and why.
    pub fn valid_anon(&self, anon: (u32, u32)) -> Result<(), ExportError> {
        for (what, id, ok) in [
            ("uid", anon.0, self.ids.uids.contains(anon.0)),
            ("gid", anon.1, self.ids.gids.contains(anon.1)),
        ] {
            if !ok {
                return Err(ExportError::BadAnon {
                    what,
                    id,
                    why: if id == INVALID_ID {
                        BadId::NoChange
                    } else {
                        BadId::Unmapped
                    },
                });
            }
        }
        Ok(())
    }

    /// The export id in this export's handles (a keyed hash of its
    /// canonical path).
    pub fn export_id(&self) -> u32 {
        self.keys.export_id()
    }

    /// The export id a handle of ours names, its MAC checked
    /// (`NFS3ERR_BADHANDLE` if it is not one of ours; every export of one
    /// state directory shares the key).
    pub fn export_of(&self, fh: &FileHandle) -> NfsResult<u32> {
        self.keys.export_of(fh)
    }

    /// Whether `uid` is one this server could act as (SETATTR's owner).
    pub(crate) fn valid_uid(&self, uid: u32) -> bool {
        self.ids.uids.contains(uid)
    }

    /// Whether `gid` is one this server could act as (SETATTR's group).
    pub(crate) fn valid_gid(&self, gid: u32) -> bool {
        self.ids.gids.contains(gid)
    }

    /// The mode bits a caller may set (`docs/nfs.md`, "What a client's
    /// numbers may do"): the set-user-ID bit, and the set-group-ID bit of
    /// anything but a directory, are dropped when the caller acts as the
    /// anonymous user (squashed, or AUTH_NONE) and whenever the server
    /// runs as its own user (every caller is then that user, and a file it
    /// could run set-user-ID would lend that user to anyone on the host).
    pub(crate) fn settable_mode(&self, caller: &Caller, mode: u32, dir: bool) -> u32 {
        let mode = mode & 0o7777;
        let untrusted = self.cfg.identity == IdentityMode::ServerUser || caller.anonymous;
        if !untrusted {
            return mode;
        }
        let strip = if dir { 0o4000 } else { 0o6000 };
        mode & !strip
    }

    fn act(&self, caller: &Caller) -> NfsResult<Acting> {
        Acting::start(self.cfg.identity, caller).map_err(|e| {
            tracing::error!(
                error = %e,
                uid = caller.uid,
                gid = caller.gid,
                groups = ?caller.groups,
                "cannot act as the caller; refusing the call"
            );
            NfsError::ServerFault
        })
    }

    fn writable(&self, caller: &Caller) -> NfsResult<()> {
        if self.cfg.read_only || caller.read_only {
            Err(NfsError::Rofs)
        } else {
            Ok(())
        }
    }
}
