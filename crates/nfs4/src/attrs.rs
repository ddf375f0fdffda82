//! File attributes (`fattr4`, RFC 8881 §5): the attributes this server
//! supports, their encoding from the export's `statx` attributes, and the
//! decoding of the ones a client may set.
//!
//! Supported: every REQUIRED attribute, and the RECOMMENDED ones a POSIX
//! file system has: mode, numlinks, owner and owner_group (as numeric
//! strings: with AUTH_SYS, ids are what the client sends, RFC 8881 §5.9),
//! rawdev, the space and file counts, the four times (two of them
//! settable, write-only), fileid, mounted_on_fileid, the size limits and
//! the case, link and truncation properties; not ACLs, named attributes,
//! archive/hidden/system bits, quotas or pNFS layouts. Settable: size,
//! mode, owner, owner_group, time_access_set and time_modify_set; setting
//! another read-write attribute is `NFS4ERR_ATTRNOTSUPP`, a read-only one
//! `NFS4ERR_INVAL`.

use bytes::{BufMut, Bytes, BytesMut};
use rpcrdma_nfs3::fs::{Attr, FileType, FsStat, SetAttr, SetTime, Time, MAX_FILE_OFFSET};
use rpcrdma_xdr::Decoder;

use crate::proto::nfs4 as p;

/// The lease time reported (`lease_time`), set by the service from its
/// state configuration.
#[derive(Debug, Clone)]
pub struct Context<'a> {
    /// The object's attributes.
    pub attr: &'a Attr,
    /// Its file handle.
    pub fh: &'a [u8],
    /// The file system's space and file counts, if known.
    pub fs: Option<&'a FsStat>,
    /// The lease in seconds.
    pub lease: u32,
    /// `mounted_on_fileid`: the fileid, or for the export's root the
    /// root's own.
    pub mounted_on: u64,
    /// Largest READ and WRITE.
    pub max_io: u64,
}

/// Attribute numbers, as bits of a [`Bitmap`].
mod a {
    pub(super) use crate::proto::nfs4::{
        FATTR4_ACLSUPPORT as ACLSUPPORT, FATTR4_CANSETTIME as CANSETTIME,
        FATTR4_CASE_INSENSITIVE as CASE_INSENSITIVE, FATTR4_CASE_PRESERVING as CASE_PRESERVING,
        FATTR4_CHANGE as CHANGE, FATTR4_CHOWN_RESTRICTED as CHOWN_RESTRICTED,
        FATTR4_FH_EXPIRE_TYPE as FH_EXPIRE_TYPE, FATTR4_FILEHANDLE as FILEHANDLE,
        FATTR4_FILEID as FILEID, FATTR4_FILES_AVAIL as FILES_AVAIL,
        FATTR4_FILES_FREE as FILES_FREE, FATTR4_FILES_TOTAL as FILES_TOTAL, FATTR4_FSID as FSID,
        FATTR4_HOMOGENEOUS as HOMOGENEOUS, FATTR4_LEASE_TIME as LEASE_TIME,
        FATTR4_LINK_SUPPORT as LINK_SUPPORT, FATTR4_MAXFILESIZE as MAXFILESIZE,
        FATTR4_MAXLINK as MAXLINK, FATTR4_MAXNAME as MAXNAME, FATTR4_MAXREAD as MAXREAD,
        FATTR4_MAXWRITE as MAXWRITE, FATTR4_MODE as MODE,
        FATTR4_MOUNTED_ON_FILEID as MOUNTED_ON_FILEID, FATTR4_NAMED_ATTR as NAMED_ATTR,
        FATTR4_NO_TRUNC as NO_TRUNC, FATTR4_NUMLINKS as NUMLINKS, FATTR4_OWNER as OWNER,
        FATTR4_OWNER_GROUP as OWNER_GROUP, FATTR4_RAWDEV as RAWDEV,
        FATTR4_RDATTR_ERROR as RDATTR_ERROR, FATTR4_SIZE as SIZE,
        FATTR4_SPACE_AVAIL as SPACE_AVAIL, FATTR4_SPACE_FREE as SPACE_FREE,
        FATTR4_SPACE_TOTAL as SPACE_TOTAL, FATTR4_SPACE_USED as SPACE_USED,
        FATTR4_SUPPATTR_EXCLCREAT as SUPPATTR_EXCLCREAT, FATTR4_SUPPORTED_ATTRS as SUPPORTED_ATTRS,
        FATTR4_SYMLINK_SUPPORT as SYMLINK_SUPPORT, FATTR4_TIME_ACCESS as TIME_ACCESS,
        FATTR4_TIME_ACCESS_SET as TIME_ACCESS_SET, FATTR4_TIME_DELTA as TIME_DELTA,
        FATTR4_TIME_METADATA as TIME_METADATA, FATTR4_TIME_MODIFY as TIME_MODIFY,
        FATTR4_TIME_MODIFY_SET as TIME_MODIFY_SET, FATTR4_TYPE as TYPE,
        FATTR4_UNIQUE_HANDLES as UNIQUE_HANDLES,
    };
}

/// A set of attribute numbers (`bitmap4`), up to 96 of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bitmap([u32; 3]);

impl Bitmap {
    /// The empty set.
    pub const EMPTY: Self = Self([0; 3]);

    /// From the wire (words beyond the third are ignored: no attribute
    /// there is supported).
    pub fn from_words(w: &[u32]) -> Self {
        let mut b = [0; 3];
        for (i, x) in w.iter().take(3).enumerate() {
            b[i] = *x;
        }
        Self(b)
    }

    /// Whether `n` is in the set.
    pub fn has(&self, n: u32) -> bool {
        n < 96 && self.0[(n / 32) as usize] & (1 << (n % 32)) != 0
    }

    /// Adds `n`.
    pub fn set(&mut self, n: u32) {
        if n < 96 {
            self.0[(n / 32) as usize] |= 1 << (n % 32);
        }
    }

    /// The intersection.
    pub fn and(self, o: Self) -> Self {
        Self([self.0[0] & o.0[0], self.0[1] & o.0[1], self.0[2] & o.0[2]])
    }

    /// Whether the set holds anything outside `o`.
    pub fn outside(self, o: Self) -> bool {
        self.0.iter().zip(o.0).any(|(x, y)| x & !y != 0)
    }

    /// The words for the wire (trailing zero words dropped).
    pub fn words(&self) -> Vec<u32> {
        let mut n = 3;
        while n > 0 && self.0[n - 1] == 0 {
            n -= 1;
        }
        self.0[..n].to_vec()
    }

    /// The set numbers, in order.
    pub fn iter(self) -> impl Iterator<Item = u32> {
        (0..96).filter(move |n| self.has(*n))
    }

    fn of(list: &[u32]) -> Self {
        let mut b = Self::EMPTY;
        for n in list {
            b.set(*n);
        }
        b
    }
}

/// Every attribute this server supports (`supported_attrs`).
pub fn supported() -> Bitmap {
    Bitmap::of(&[
        a::SUPPORTED_ATTRS,
        a::TYPE,
        a::FH_EXPIRE_TYPE,
        a::CHANGE,
        a::SIZE,
        a::LINK_SUPPORT,
        a::SYMLINK_SUPPORT,
        a::NAMED_ATTR,
        a::FSID,
        a::UNIQUE_HANDLES,
        a::LEASE_TIME,
        a::RDATTR_ERROR,
        a::ACLSUPPORT,
        a::CANSETTIME,
        a::CASE_INSENSITIVE,
        a::CASE_PRESERVING,
        a::CHOWN_RESTRICTED,
        a::FILEHANDLE,
        a::FILEID,
        a::FILES_AVAIL,
        a::FILES_FREE,
        a::FILES_TOTAL,
        a::HOMOGENEOUS,
        a::MAXFILESIZE,
        a::MAXLINK,
        a::MAXNAME,
        a::MAXREAD,
        a::MAXWRITE,
        a::MODE,
        a::NO_TRUNC,
        a::NUMLINKS,
        a::OWNER,
        a::OWNER_GROUP,
        a::RAWDEV,
        a::SPACE_AVAIL,
        a::SPACE_FREE,
        a::SPACE_TOTAL,
        a::SPACE_USED,
        a::TIME_ACCESS,
        a::TIME_ACCESS_SET,
        a::TIME_DELTA,
        a::TIME_METADATA,
        a::TIME_MODIFY,
        a::TIME_MODIFY_SET,
        a::MOUNTED_ON_FILEID,
        a::SUPPATTR_EXCLCREAT,
    ])
}

/// The attributes a client may set.
pub fn settable() -> Bitmap {
    Bitmap::of(&[
        a::SIZE,
        a::MODE,
        a::OWNER,
        a::OWNER_GROUP,
        a::TIME_ACCESS_SET,
        a::TIME_MODIFY_SET,
    ])
}

/// The attributes that may be set by an `EXCLUSIVE4_1` create
/// (`suppattr_exclcreat`): not the times, which hold the verifier.
pub fn exclcreat() -> Bitmap {
    Bitmap::of(&[a::SIZE, a::MODE, a::OWNER, a::OWNER_GROUP])
}

/// Write-only attributes: never returned.
fn write_only() -> Bitmap {
    Bitmap::of(&[a::TIME_ACCESS_SET, a::TIME_MODIFY_SET])
}

/// Whether a GETATTR request names a write-only attribute
/// (`NFS4ERR_INVAL`, RFC 8881 §18.7.3).
pub fn asks_write_only(request: Bitmap) -> bool {
    request.and(write_only()) != Bitmap::EMPTY
}

/// Whether encoding `request` needs the file system's counts.
pub fn needs_fsstat(request: Bitmap) -> bool {
    [
        a::FILES_AVAIL,
        a::FILES_FREE,
        a::FILES_TOTAL,
        a::SPACE_AVAIL,
        a::SPACE_FREE,
        a::SPACE_TOTAL,
    ]
    .iter()
    .any(|n| request.has(*n))
}

/// The `change` attribute: the ctime in nanoseconds.
pub fn change_of(ctime: Time) -> u64 {
    u64::from(ctime.seconds) * 1_000_000_000 + u64::from(ctime.nseconds)
}

fn ftype(t: FileType) -> u32 {
    match t {
        FileType::Regular => 1,
        FileType::Directory => 2,
        FileType::BlockDevice => 3,
        FileType::CharDevice => 4,
        FileType::Symlink => 5,
        FileType::Socket => 6,
        FileType::Fifo => 7,
    }
}

fn put_time(b: &mut BytesMut, t: Time) {
    b.put_i64(i64::from(t.seconds));
    b.put_u32(t.nseconds);
}

fn put_opaque(b: &mut BytesMut, v: &[u8]) {
    b.put_u32(v.len() as u32);
    b.put_slice(v);
    b.put_bytes(0, (4 - v.len() % 4) % 4);
}

/// Encodes the supported attributes of `request` for `cx` (in
/// ascending order, as `fattr4` requires), with `rdattr_error` as OK.
/// The counts of the file system are left out when `cx.fs` is `None`.
pub fn encode(cx: &Context<'_>, request: Bitmap) -> p::Fattr4 {
    let mut want = request.and(supported());
    want = Bitmap([want.0[0], want.0[1] & !write_only().0[1], want.0[2]]);
    if cx.fs.is_none() {
        for n in [
            a::FILES_AVAIL,
            a::FILES_FREE,
            a::FILES_TOTAL,
            a::SPACE_AVAIL,
            a::SPACE_FREE,
            a::SPACE_TOTAL,
        ] {
            want.0[(n / 32) as usize] &= !(1 << (n % 32));
        }
    }
    let at = cx.attr;
    let mut b = BytesMut::with_capacity(256);
    let mut put = Bitmap::EMPTY;
    for n in want.iter() {
        match n {
            a::SUPPORTED_ATTRS => {
                let w = supported().words();
                b.put_u32(w.len() as u32);
                for x in w {
                    b.put_u32(x);
                }
            }
            a::TYPE => b.put_u32(ftype(at.ftype)),
            a::FH_EXPIRE_TYPE => b.put_u32(p::FH4_PERSISTENT),
            a::CHANGE => b.put_u64(change_of(at.ctime)),
            a::SIZE => b.put_u64(at.size),
            a::LINK_SUPPORT | a::SYMLINK_SUPPORT | a::UNIQUE_HANDLES | a::CANSETTIME => {
                b.put_u32(1)
            }
            a::CASE_PRESERVING | a::CHOWN_RESTRICTED | a::HOMOGENEOUS | a::NO_TRUNC => b.put_u32(1),
            a::NAMED_ATTR | a::CASE_INSENSITIVE => b.put_u32(0),
            a::FSID => {
                b.put_u64(at.fsid);
                b.put_u64(0);
            }
            a::LEASE_TIME => b.put_u32(cx.lease),
            a::RDATTR_ERROR => b.put_u32(0),
            a::ACLSUPPORT => b.put_u32(0),
            a::FILEHANDLE => put_opaque(&mut b, cx.fh),
            a::FILEID => b.put_u64(at.fileid),
            a::FILES_AVAIL => b.put_u64(cx.fs.map_or(0, |f| f.afiles)),
            a::FILES_FREE => b.put_u64(cx.fs.map_or(0, |f| f.ffiles)),
            a::FILES_TOTAL => b.put_u64(cx.fs.map_or(0, |f| f.tfiles)),
            a::MAXFILESIZE => b.put_u64(MAX_FILE_OFFSET),
            a::MAXLINK => b.put_u32(65000),
            a::MAXNAME => b.put_u32(rpcrdma_nfs3::fs::NAME_MAX as u32),
            a::MAXREAD | a::MAXWRITE => b.put_u64(cx.max_io),
            a::MODE => b.put_u32(at.mode & 0o7777),
            a::NUMLINKS => b.put_u32(at.nlink),
            a::OWNER => put_opaque(&mut b, at.uid.to_string().as_bytes()),
            a::OWNER_GROUP => put_opaque(&mut b, at.gid.to_string().as_bytes()),
            a::RAWDEV => {
                b.put_u32(at.rdev.0);
                b.put_u32(at.rdev.1);
            }
            a::SPACE_AVAIL => b.put_u64(cx.fs.map_or(0, |f| f.abytes)),
            a::SPACE_FREE => b.put_u64(cx.fs.map_or(0, |f| f.fbytes)),
            a::SPACE_TOTAL => b.put_u64(cx.fs.map_or(0, |f| f.tbytes)),
            a::SPACE_USED => b.put_u64(at.used),
            a::TIME_ACCESS => put_time(&mut b, at.atime),
            a::TIME_DELTA => put_time(
                &mut b,
                Time {
                    seconds: 0,
                    nseconds: 1,
                },
            ),
            a::TIME_METADATA => put_time(&mut b, at.ctime),
            a::TIME_MODIFY => put_time(&mut b, at.mtime),
            a::MOUNTED_ON_FILEID => b.put_u64(cx.mounted_on),
            a::SUPPATTR_EXCLCREAT => {
                let w = exclcreat().words();
                b.put_u32(w.len() as u32);
                for x in w {
                    b.put_u32(x);
                }
            }
            _ => continue,
        }
        put.set(n);
    }
    p::Fattr4 {
        attrmask: put.words(),
        attr_vals: b.freeze(),
    }
}

/// Why a client's attributes cannot be set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetError {
    /// An attribute this server does not support (`NFS4ERR_ATTRNOTSUPP`).
    NotSupported,
    /// A read-only attribute, or a bad value (`NFS4ERR_INVAL`).
    Inval,
    /// An owner or group that is not a number (`NFS4ERR_BADOWNER`).
    BadOwner,
    /// The values do not decode (`NFS4ERR_BADXDR`).
    BadXdr,
}

impl SetError {
    /// The status.
    pub fn status(self) -> p::Nfsstat4 {
        match self {
            Self::NotSupported => p::Nfsstat4::Nfs4errAttrnotsupp,
            Self::Inval => p::Nfsstat4::Nfs4errInval,
            Self::BadOwner => p::Nfsstat4::Nfs4errBadowner,
            Self::BadXdr => p::Nfsstat4::Nfs4errBadxdr,
        }
    }
}

/// An owner or group string: a number, optionally `@domain`.
fn id_of(s: &[u8]) -> Result<u32, SetError> {
    let s = std::str::from_utf8(s).map_err(|_| SetError::BadOwner)?;
    let num = s.split('@').next().unwrap_or("");
    if num.is_empty() || !num.bytes().all(|c| c.is_ascii_digit()) {
        return Err(SetError::BadOwner);
    }
    num.parse().map_err(|_| SetError::BadOwner)
}

fn set_time(d: &mut Decoder<'_>) -> Result<SetTime, SetError> {
    match d.get_u32().map_err(|_| SetError::BadXdr)? {
        0 => Ok(SetTime::ServerTime),
        1 => {
            let secs = d.get_i64().map_err(|_| SetError::BadXdr)?;
            let ns = d.get_u32().map_err(|_| SetError::BadXdr)?;
            if ns > 999_999_999 {
                return Err(SetError::Inval);
            }
            let seconds = u32::try_from(secs).map_err(|_| SetError::Inval)?;
            Ok(SetTime::ClientTime(Time {
                seconds,
                nseconds: ns,
            }))
        }
        _ => Err(SetError::BadXdr),
    }
}

/// Decodes the attributes a client sets (SETATTR, CREATE, OPEN's
/// `createattrs`): what to set, and the bitmap of what was asked (the
/// `attrsset` of a success).
pub fn decode_set(f: &p::Fattr4) -> Result<(SetAttr, Bitmap), SetError> {
    if f.attrmask.len() > 3 && f.attrmask[3..].iter().any(|w| *w != 0) {
        return Err(SetError::NotSupported);
    }
    let mask = Bitmap::from_words(&f.attrmask);
    if mask.outside(supported()) {
        return Err(SetError::NotSupported);
    }
    if mask.outside(settable()) {
        return Err(SetError::Inval);
    }
    let mut d = Decoder::from_bytes(&f.attr_vals);
    let mut s = SetAttr::default();
    for n in mask.iter() {
        match n {
            a::SIZE => s.size = Some(d.get_u64().map_err(|_| SetError::BadXdr)?),
            a::MODE => {
                let m = d.get_u32().map_err(|_| SetError::BadXdr)?;
                if m & !0o7777 != 0 {
                    return Err(SetError::Inval);
                }
                s.mode = Some(m);
            }
            a::OWNER => s.uid = Some(id_of(d.get_opaque(1024).map_err(|_| SetError::BadXdr)?)?),
            a::OWNER_GROUP => {
                s.gid = Some(id_of(d.get_opaque(1024).map_err(|_| SetError::BadXdr)?)?)
            }
            a::TIME_ACCESS_SET => s.atime = set_time(&mut d)?,
            a::TIME_MODIFY_SET => s.mtime = set_time(&mut d)?,
            _ => return Err(SetError::Inval),
        }
    }
    if !d.is_empty() {
        return Err(SetError::BadXdr);
    }
    Ok((s, mask))
}

/// The attributes of VERIFY/NVERIFY compared with the object's: whether
/// they are the same (`Err` for an unsupported or write-only attribute or
/// a malformed list).
pub fn same(cx: &Context<'_>, f: &p::Fattr4) -> Result<bool, SetError> {
    let mask = Bitmap::from_words(&f.attrmask);
    if mask.outside(supported()) {
        return Err(SetError::NotSupported);
    }
    if asks_write_only(mask) || mask.has(a::RDATTR_ERROR) {
        return Err(SetError::Inval);
    }
    let ours = encode(cx, mask);
    if Bitmap::from_words(&ours.attrmask) != mask {
        // A count we could not give (no file system counts): not the same.
        return Ok(false);
    }
    Ok(ours.attr_vals == f.attr_vals)
}

/// An empty `fattr4`.
pub fn none() -> p::Fattr4 {
    p::Fattr4 {
        attrmask: Vec::new(),
        attr_vals: Bytes::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr() -> Attr {
        Attr {
            ftype: FileType::Regular,
            mode: 0o640,
            nlink: 1,
            uid: 1000,
            gid: 100,
            size: 5,
            used: 4096,
            rdev: (0, 0),
            fsid: 9,
            fileid: 77,
            atime: Time {
                seconds: 1,
                nseconds: 2,
            },
            mtime: Time {
                seconds: 3,
                nseconds: 4,
            },
            ctime: Time {
                seconds: 5,
                nseconds: 6,
            },
        }
    }

    #[test]
    fn attributes_come_out_in_order_with_only_what_was_asked() {
        let at = attr();
        let cx = Context {
            attr: &at,
            fh: &[1, 2, 3],
            fs: None,
            lease: 90,
            mounted_on: 77,
            max_io: 1 << 20,
        };
        let mut req = Bitmap::EMPTY;
        for n in [
            a::SIZE,
            a::TYPE,
            a::OWNER,
            a::SPACE_TOTAL,
            200,
            a::TIME_MODIFY_SET,
        ] {
            req.set(n);
        }
        let f = encode(&cx, req);
        // No counts without an FSSTAT; nothing write-only; nothing beyond.
        assert_eq!(
            Bitmap::from_words(&f.attrmask),
            Bitmap::of(&[a::TYPE, a::SIZE, a::OWNER])
        );
        let mut want = BytesMut::new();
        want.put_u32(1);
        want.put_u64(5);
        put_opaque(&mut want, b"1000");
        assert_eq!(f.attr_vals, want.freeze());
        assert!(same(&cx, &f).unwrap());
        let mut other = f.clone();
        other.attr_vals = Bytes::from_static(&[
            0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 4, b'1', b'0', b'0', b'0',
        ]);
        assert!(!same(&cx, &other).unwrap());
    }

    #[test]
    fn settable_attributes_decode_and_others_are_refused() {
        let mut vals = BytesMut::new();
        vals.put_u64(7); // size
        vals.put_u32(0o755); // mode
        put_opaque(&mut vals, b"1000@example"); // owner
        vals.put_u32(1); // time_modify_set: client time
        vals.put_i64(10);
        vals.put_u32(20);
        let f = p::Fattr4 {
            attrmask: Bitmap::of(&[a::SIZE, a::MODE, a::OWNER, a::TIME_MODIFY_SET]).words(),
            attr_vals: vals.freeze(),
        };
        let (s, mask) = decode_set(&f).unwrap();
        assert_eq!((s.size, s.mode, s.uid), (Some(7), Some(0o755), Some(1000)));
        assert_eq!(
            s.mtime,
            SetTime::ClientTime(Time {
                seconds: 10,
                nseconds: 20
            })
        );
        assert!(mask.has(a::OWNER));
        // Read-only, unsupported, non-numeric owner, truncated, too long.
        let ro = p::Fattr4 {
            attrmask: Bitmap::of(&[a::TYPE]).words(),
            attr_vals: Bytes::from_static(&[0, 0, 0, 1]),
        };
        assert_eq!(decode_set(&ro), Err(SetError::Inval));
        let acl = p::Fattr4 {
            attrmask: vec![1 << 12],
            attr_vals: Bytes::new(),
        };
        assert_eq!(decode_set(&acl), Err(SetError::NotSupported));
        let mut v = BytesMut::new();
        put_opaque(&mut v, b"alice");
        let named = p::Fattr4 {
            attrmask: Bitmap::of(&[a::OWNER]).words(),
            attr_vals: v.freeze(),
        };
        assert_eq!(decode_set(&named), Err(SetError::BadOwner));
        let short = p::Fattr4 {
            attrmask: Bitmap::of(&[a::SIZE]).words(),
            attr_vals: Bytes::from_static(&[0, 0, 0, 1]),
        };
        assert_eq!(decode_set(&short), Err(SetError::BadXdr));
        let long = p::Fattr4 {
            attrmask: Bitmap::of(&[a::MODE]).words(),
            attr_vals: Bytes::from_static(&[0, 0, 1, 0xed, 0, 0, 0, 0]),
        };
        assert_eq!(decode_set(&long), Err(SetError::BadXdr));
        let bad_mode = p::Fattr4 {
            attrmask: Bitmap::of(&[a::MODE]).words(),
            attr_vals: Bytes::from_static(&[0, 1, 0, 0]),
        };
        assert_eq!(decode_set(&bad_mode), Err(SetError::Inval));
    }
}
