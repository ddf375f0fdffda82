//! The file-system layer's own types: what NFSv3 needs to know about files,
//! independent of any wire encoding.

use std::io;

/// An NFSv3 status other than `NFS3_OK` (RFC 1813 §2.6, `nfsstat3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum NfsError {
    /// Not owner (`NFS3ERR_PERM`, 1).
    #[error("NFS3ERR_PERM: not owner")]
    Perm,
    /// No such file or directory (`NFS3ERR_NOENT`, 2).
    #[error("NFS3ERR_NOENT: no such file or directory")]
    NoEnt,
    /// I/O error (`NFS3ERR_IO`, 5).
    #[error("NFS3ERR_IO: I/O error")]
    Io,
    /// No such device or address (`NFS3ERR_NXIO`, 6).
    #[error("NFS3ERR_NXIO: no such device or address")]
    Nxio,
    /// Permission denied (`NFS3ERR_ACCES`, 13).
    #[error("NFS3ERR_ACCES: permission denied")]
    Acces,
    /// File exists (`NFS3ERR_EXIST`, 17).
    #[error("NFS3ERR_EXIST: file exists")]
    Exist,
    /// Cross-device link (`NFS3ERR_XDEV`, 18).
    #[error("NFS3ERR_XDEV: cross-device link")]
    Xdev,
    /// No such device (`NFS3ERR_NODEV`, 19).
    #[error("NFS3ERR_NODEV: no such device")]
    NoDev,
    /// Not a directory (`NFS3ERR_NOTDIR`, 20).
    #[error("NFS3ERR_NOTDIR: not a directory")]
    NotDir,
    /// Is a directory (`NFS3ERR_ISDIR`, 21).
    #[error("NFS3ERR_ISDIR: is a directory")]
    IsDir,
    /// Invalid argument (`NFS3ERR_INVAL`, 22).
    #[error("NFS3ERR_INVAL: invalid argument")]
    Inval,
    /// File too large (`NFS3ERR_FBIG`, 27).
    #[error("NFS3ERR_FBIG: file too large")]
    FBig,
    /// No space left on device (`NFS3ERR_NOSPC`, 28).
    #[error("NFS3ERR_NOSPC: no space left on device")]
    NoSpc,
    /// Read-only file system (`NFS3ERR_ROFS`, 30).
    #[error("NFS3ERR_ROFS: read-only file system")]
    Rofs,
    /// Too many hard links (`NFS3ERR_MLINK`, 31).
    #[error("NFS3ERR_MLINK: too many links")]
    MLink,
    /// Name too long (`NFS3ERR_NAMETOOLONG`, 63).
    #[error("NFS3ERR_NAMETOOLONG: name too long")]
    NameTooLong,
    /// Directory not empty (`NFS3ERR_NOTEMPTY`, 66).
    #[error("NFS3ERR_NOTEMPTY: directory not empty")]
    NotEmpty,
    /// Quota exceeded (`NFS3ERR_DQUOT`, 69).
    #[error("NFS3ERR_DQUOT: quota exceeded")]
    DQuot,
    /// The file handle no longer refers to a file (`NFS3ERR_STALE`, 70).
    #[error("NFS3ERR_STALE: stale file handle")]
    Stale,
    /// Illegal NFS file handle (`NFS3ERR_BADHANDLE`, 10001).
    #[error("NFS3ERR_BADHANDLE: illegal file handle")]
    BadHandle,
    /// SETATTR guard mismatch (`NFS3ERR_NOT_SYNC`, 10002).
    #[error("NFS3ERR_NOT_SYNC: guard check failed")]
    NotSync,
    /// READDIR cookie is stale (`NFS3ERR_BAD_COOKIE`, 10003).
    #[error("NFS3ERR_BAD_COOKIE: stale cookie")]
    BadCookie,
    /// Operation not supported (`NFS3ERR_NOTSUPP`, 10004).
    #[error("NFS3ERR_NOTSUPP: operation not supported")]
    NotSupp,
    /// Buffer or request too small (`NFS3ERR_TOOSMALL`, 10005).
    #[error("NFS3ERR_TOOSMALL: buffer too small")]
    TooSmall,
    /// Server fault (`NFS3ERR_SERVERFAULT`, 10006).
    #[error("NFS3ERR_SERVERFAULT: server fault")]
    ServerFault,
    /// Object type not supported (`NFS3ERR_BADTYPE`, 10007).
    #[error("NFS3ERR_BADTYPE: type not supported")]
    BadType,
    /// Try again later (`NFS3ERR_JUKEBOX`, 10008).
    #[error("NFS3ERR_JUKEBOX: try again later")]
    Jukebox,
}

impl NfsError {
    /// The `nfsstat3` value.
    pub fn code(self) -> u32 {
        match self {
            Self::Perm => 1,
            Self::NoEnt => 2,
            Self::Io => 5,
            Self::Nxio => 6,
            Self::Acces => 13,
            Self::Exist => 17,
            Self::Xdev => 18,
            Self::NoDev => 19,
            Self::NotDir => 20,
            Self::IsDir => 21,
            Self::Inval => 22,
            Self::FBig => 27,
            Self::NoSpc => 28,
            Self::Rofs => 30,
            Self::MLink => 31,
            Self::NameTooLong => 63,
            Self::NotEmpty => 66,
            Self::DQuot => 69,
            Self::Stale => 70,
            Self::BadHandle => 10001,
            Self::NotSync => 10002,
            Self::BadCookie => 10003,
            Self::NotSupp => 10004,
            Self::TooSmall => 10005,
            Self::ServerFault => 10006,
            Self::BadType => 10007,
            Self::Jukebox => 10008,
        }
    }

    /// The error for an `nfsstat3` value (`None` for `NFS3_OK` and unknown
    /// values).
    pub fn from_code(code: u32) -> Option<Self> {
        Some(match code {
            1 => Self::Perm,
            2 => Self::NoEnt,
            5 => Self::Io,
            6 => Self::Nxio,
            13 => Self::Acces,
            17 => Self::Exist,
            18 => Self::Xdev,
            19 => Self::NoDev,
            20 => Self::NotDir,
            21 => Self::IsDir,
            22 => Self::Inval,
            27 => Self::FBig,
            28 => Self::NoSpc,
            30 => Self::Rofs,
            31 => Self::MLink,
            63 => Self::NameTooLong,
            66 => Self::NotEmpty,
            69 => Self::DQuot,
            70 => Self::Stale,
            10001 => Self::BadHandle,
            10002 => Self::NotSync,
            10003 => Self::BadCookie,
            10004 => Self::NotSupp,
            10005 => Self::TooSmall,
            10006 => Self::ServerFault,
            10007 => Self::BadType,
            10008 => Self::Jukebox,
            _ => return None,
        })
    }

    /// The NFS status for a system error (as the Linux NFS server maps
    /// them). Anything without an NFS equivalent is `NFS3ERR_IO`.
    pub fn from_errno(e: rustix::io::Errno) -> Self {
        use rustix::io::Errno as E;
        match e {
            E::PERM => Self::Perm,
            E::NOENT => Self::NoEnt,
            E::NXIO => Self::Nxio,
            E::ACCESS => Self::Acces,
            E::EXIST => Self::Exist,
            E::XDEV => Self::Xdev,
            E::NODEV => Self::NoDev,
            E::NOTDIR => Self::NotDir,
            E::ISDIR => Self::IsDir,
            E::INVAL => Self::Inval,
            E::FBIG => Self::FBig,
            E::NOSPC => Self::NoSpc,
            E::ROFS => Self::Rofs,
            E::MLINK => Self::MLink,
            E::NAMETOOLONG => Self::NameTooLong,
            E::NOTEMPTY => Self::NotEmpty,
            E::DQUOT => Self::DQuot,
            E::STALE => Self::Stale,
            E::OPNOTSUPP => Self::NotSupp,
            // A symbolic link where a directory was expected (O_NOFOLLOW):
            // not a directory for NFS.
            E::LOOP => Self::NotDir,
            E::AGAIN => Self::Jukebox,
            E::BADF => Self::Stale,
            _ => Self::Io,
        }
    }
}

impl From<rustix::io::Errno> for NfsError {
    fn from(e: rustix::io::Errno) -> Self {
        Self::from_errno(e)
    }
}

impl From<io::Error> for NfsError {
    fn from(e: io::Error) -> Self {
        match e.raw_os_error() {
            Some(n) => Self::from_errno(rustix::io::Errno::from_raw_os_error(n)),
            None => Self::Io,
        }
    }
}

/// A result of the file-system layer.
pub type NfsResult<T> = Result<T, NfsError>;

/// Type of a file (`ftype3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileType {
    /// Regular file (`NF3REG`, 1).
    Regular,
    /// Directory (`NF3DIR`, 2).
    Directory,
    /// Block device (`NF3BLK`, 3).
    BlockDevice,
    /// Character device (`NF3CHR`, 4).
    CharDevice,
    /// Symbolic link (`NF3LNK`, 5).
    Symlink,
    /// Socket (`NF3SOCK`, 6).
    Socket,
    /// Named pipe (`NF3FIFO`, 7).
    Fifo,
}

impl FileType {
    /// The `ftype3` value.
    pub fn code(self) -> u32 {
        match self {
            Self::Regular => 1,
            Self::Directory => 2,
            Self::BlockDevice => 3,
            Self::CharDevice => 4,
            Self::Symlink => 5,
            Self::Socket => 6,
            Self::Fifo => 7,
        }
    }

    /// The type for an `ftype3` value.
    pub fn from_code(code: u32) -> Option<Self> {
        Some(match code {
            1 => Self::Regular,
            2 => Self::Directory,
            3 => Self::BlockDevice,
            4 => Self::CharDevice,
            5 => Self::Symlink,
            6 => Self::Socket,
            7 => Self::Fifo,
            _ => return None,
        })
    }

    /// From the `S_IFMT` bits of a mode.
    pub(crate) fn from_mode(mode: u32) -> Self {
        match mode & 0o170000 {
            0o040000 => Self::Directory,
            0o120000 => Self::Symlink,
            0o060000 => Self::BlockDevice,
            0o020000 => Self::CharDevice,
            0o140000 => Self::Socket,
            0o010000 => Self::Fifo,
            _ => Self::Regular,
        }
    }
}

/// A time (`nfstime3`): seconds and nanoseconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time {
    /// Seconds (`nfstime3.seconds` is unsigned 32-bit).
    pub seconds: u32,
    /// Nanoseconds, below 10⁹.
    pub nseconds: u32,
}

/// File attributes (`fattr3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr {
    /// Type.
    pub ftype: FileType,
    /// Permission bits (`07777`).
    pub mode: u32,
    /// Hard links.
    pub nlink: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Size in bytes.
    pub size: u64,
    /// Bytes of disk used.
    pub used: u64,
    /// Device numbers (major, minor) of a device file.
    pub rdev: (u32, u32),
    /// File system id.
    pub fsid: u64,
    /// File id (inode number).
    pub fileid: u64,
    /// Last access.
    pub atime: Time,
    /// Last modification of the data.
    pub mtime: Time,
    /// Last change of the attributes.
    pub ctime: Time,
}

/// The attributes a weak cache consistency check needs (`wcc_attr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WccAttr {
    /// Size.
    pub size: u64,
    /// Modification time.
    pub mtime: Time,
    /// Change time.
    pub ctime: Time,
}

impl From<&Attr> for WccAttr {
    fn from(a: &Attr) -> Self {
        Self {
            size: a.size,
            mtime: a.mtime,
            ctime: a.ctime,
        }
    }
}

/// Weak cache consistency data (`wcc_data`): attributes before and after
/// an operation that changed an object, where known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Wcc {
    /// Before.
    pub before: Option<WccAttr>,
    /// After.
    pub after: Option<Attr>,
}

/// How SETATTR sets a time (`set_atime`/`set_mtime`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SetTime {
    /// Leave it.
    #[default]
    DontChange,
    /// The server's current time.
    ServerTime,
    /// This time.
    ClientTime(Time),
}

/// Attributes to set (`sattr3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SetAttr {
    /// Permission bits.
    pub mode: Option<u32>,
    /// Owner.
    pub uid: Option<u32>,
    /// Group.
    pub gid: Option<u32>,
    /// Size (truncate or extend).
    pub size: Option<u64>,
    /// Access time.
    pub atime: SetTime,
    /// Modification time.
    pub mtime: SetTime,
}

/// How CREATE creates (`createhow3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateHow {
    /// Create, or open an existing file and apply the attributes.
    Unchecked(SetAttr),
    /// Create; `NFS3ERR_EXIST` if the name exists.
    Guarded(SetAttr),
    /// Exclusive create with a verifier (retransmissions of the same
    /// create succeed; the client sets attributes afterwards).
    Exclusive([u8; 8]),
}

/// How a WRITE was or must be committed to stable storage (`stable_how`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StableHow {
    /// May stay in the server's memory until COMMIT.
    Unstable,
    /// Data on stable storage before the reply; metadata may follow.
    DataSync,
    /// Data and metadata on stable storage before the reply.
    FileSync,
}

impl StableHow {
    /// The `stable_how` value.
    pub fn code(self) -> u32 {
        match self {
            Self::Unstable => 0,
            Self::DataSync => 1,
            Self::FileSync => 2,
        }
    }

    /// From a `stable_how` value.
    pub fn from_code(code: u32) -> Option<Self> {
        Some(match code {
            0 => Self::Unstable,
            1 => Self::DataSync,
            2 => Self::FileSync,
            _ => return None,
        })
    }
}

/// What MKNOD creates (`mknoddata3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecialFile {
    /// Character device (major, minor).
    Char(u32, u32),
    /// Block device (major, minor).
    Block(u32, u32),
    /// Socket.
    Socket,
    /// Named pipe.
    Fifo,
}

/// ACCESS bits (RFC 1813 §3.3.4).
pub mod access {
    /// Read data or list a directory.
    pub const READ: u32 = 0x0001;
    /// Look up a name in a directory.
    pub const LOOKUP: u32 = 0x0002;
    /// Rewrite data or change a directory's entries.
    pub const MODIFY: u32 = 0x0004;
    /// Write past the end or add directory entries.
    pub const EXTEND: u32 = 0x0008;
    /// Delete directory entries.
    pub const DELETE: u32 = 0x0010;
    /// Execute a file.
    pub const EXECUTE: u32 = 0x0020;
    /// Every bit.
    pub const ALL: u32 = 0x003f;
}

/// File system statistics (`FSSTAT3resok`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsStat {
    /// Total bytes.
    pub tbytes: u64,
    /// Free bytes.
    pub fbytes: u64,
    /// Bytes free to the caller.
    pub abytes: u64,
    /// Total file slots.
    pub tfiles: u64,
    /// Free file slots.
    pub ffiles: u64,
    /// Slots free to the caller.
    pub afiles: u64,
    /// Seconds the values stay valid (0: volatile).
    pub invarsec: u32,
}

/// Static file system information (`FSINFO3resok`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsInfo {
    /// Maximum READ size.
    pub rtmax: u32,
    /// Preferred READ size.
    pub rtpref: u32,
    /// READ size multiple.
    pub rtmult: u32,
    /// Maximum WRITE size.
    pub wtmax: u32,
    /// Preferred WRITE size.
    pub wtpref: u32,
    /// WRITE size multiple.
    pub wtmult: u32,
    /// Preferred READDIR size.
    pub dtpref: u32,
    /// Largest file size.
    pub maxfilesize: u64,
    /// Time granularity.
    pub time_delta: Time,
    /// `FSF3_*` bits.
    pub properties: u32,
}

/// `FSINFO` property bits.
pub mod fsf {
    /// Hard links supported.
    pub const LINK: u32 = 0x0001;
    /// Symbolic links supported.
    pub const SYMLINK: u32 = 0x0002;
    /// PATHCONF is the same for every file.
    pub const HOMOGENEOUS: u32 = 0x0008;
    /// SETATTR can set times to client values.
    pub const CANSETTIME: u32 = 0x0010;
}

/// POSIX information (`PATHCONF3resok`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathConf {
    /// Maximum hard links.
    pub linkmax: u32,
    /// Maximum name length.
    pub name_max: u32,
    /// Long names are refused, not truncated.
    pub no_trunc: bool,
    /// Only a privileged user may change ownership.
    pub chown_restricted: bool,
    /// Names are compared without case.
    pub case_insensitive: bool,
    /// Case is preserved.
    pub case_preserving: bool,
}
