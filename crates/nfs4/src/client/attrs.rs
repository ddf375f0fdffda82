//! File attributes as the client asks for and reads them (`fattr4`, RFC
//! 8881 §5): a bitmap of the attributes wanted, the values decoded in
//! attribute-number order, and the few a client sets (size, mode).

use bytes::{BufMut, Bytes, BytesMut};
use rpcrdma_xdr::Decoder;

use crate::proto::nfs4 as p;

/// A set of attribute numbers (`bitmap4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AttrSet([u32; 3]);

impl AttrSet {
    /// The set of `list`.
    pub fn of(list: &[u32]) -> Self {
        let mut s = Self::default();
        for n in list {
            if *n < 96 {
                s.0[(*n / 32) as usize] |= 1 << (n % 32);
            }
        }
        s
    }

    /// From the wire.
    pub fn from_words(w: &[u32]) -> Self {
        let mut s = Self::default();
        for (i, x) in w.iter().take(3).enumerate() {
            s.0[i] = *x;
        }
        s
    }

    /// Whether `n` is in the set.
    pub fn has(&self, n: u32) -> bool {
        n < 96 && self.0[(n / 32) as usize] & (1 << (n % 32)) != 0
    }

    /// The words for the wire (trailing zero words dropped).
    pub fn words(&self) -> Vec<u32> {
        let mut n = 3;
        while n > 0 && self.0[n - 1] == 0 {
            n -= 1;
        }
        self.0[..n].to_vec()
    }
}

/// The attributes the client asks for with every file: type, change,
/// size, fsid, fileid, mode, links, owner, group, rawdev, space used and
/// the three times.
pub fn standard() -> AttrSet {
    AttrSet::of(&[
        p::FATTR4_TYPE,
        p::FATTR4_CHANGE,
        p::FATTR4_SIZE,
        p::FATTR4_FSID,
        p::FATTR4_FILEID,
        p::FATTR4_MODE,
        p::FATTR4_NUMLINKS,
        p::FATTR4_OWNER,
        p::FATTR4_OWNER_GROUP,
        p::FATTR4_RAWDEV,
        p::FATTR4_SPACE_USED,
        p::FATTR4_TIME_ACCESS,
        p::FATTR4_TIME_METADATA,
        p::FATTR4_TIME_MODIFY,
    ])
}

/// What READDIR asks for each entry: the standard attributes and
/// `rdattr_error` (an entry whose attributes failed still lists).
pub fn for_entries() -> AttrSet {
    let mut s = standard();
    s.0[0] |= 1 << p::FATTR4_RDATTR_ERROR;
    s
}

/// The file system's limits, asked for once of the root.
pub fn limits() -> AttrSet {
    AttrSet::of(&[
        p::FATTR4_SUPPORTED_ATTRS,
        p::FATTR4_LEASE_TIME,
        p::FATTR4_MAXREAD,
        p::FATTR4_MAXWRITE,
    ])
}

/// A file's type (`nfs_ftype4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FileKind {
    /// A regular file.
    #[default]
    Regular,
    /// A directory.
    Directory,
    /// A block device.
    Block,
    /// A character device.
    Char,
    /// A symbolic link.
    Symlink,
    /// A socket.
    Socket,
    /// A FIFO.
    Fifo,
    /// A named attribute directory or attribute, or an unknown type.
    Other(u32),
}

impl FileKind {
    fn of(n: u32) -> Self {
        match n {
            1 => Self::Regular,
            2 => Self::Directory,
            3 => Self::Block,
            4 => Self::Char,
            5 => Self::Symlink,
            6 => Self::Socket,
            7 => Self::Fifo,
            other => Self::Other(other),
        }
    }
}

/// A time (`nfstime4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Time {
    /// Seconds since the epoch.
    pub seconds: i64,
    /// Nanoseconds.
    pub nseconds: u32,
}

/// Attributes as decoded; those the server did not send keep their
/// defaults ([`Attrs::present`] says which came).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Attrs {
    /// The attributes the server sent.
    pub present: AttrSet,
    /// `type`.
    pub kind: FileKind,
    /// `change`.
    pub change: u64,
    /// `size`.
    pub size: u64,
    /// `fsid` (major, minor).
    pub fsid: (u64, u64),
    /// `fileid`.
    pub fileid: u64,
    /// `mode` (permission bits).
    pub mode: u32,
    /// `numlinks`.
    pub nlink: u32,
    /// `owner` (a name or, as nfsd and our server send with AUTH_SYS, a
    /// number).
    pub owner: Bytes,
    /// `owner_group`.
    pub group: Bytes,
    /// `rawdev` (major, minor).
    pub rawdev: (u32, u32),
    /// `space_used`.
    pub used: u64,
    /// `time_access`.
    pub atime: Time,
    /// `time_metadata`.
    pub ctime: Time,
    /// `time_modify`.
    pub mtime: Time,
    /// `rdattr_error` (READDIR: why this entry has no attributes).
    pub rdattr_error: Option<p::Nfsstat4>,
    /// `supported_attrs`.
    pub supported: AttrSet,
    /// `lease_time` in seconds.
    pub lease_time: u32,
    /// `maxread`.
    pub maxread: u64,
    /// `maxwrite`.
    pub maxwrite: u64,
}

/// Why attributes could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttrError {
    /// The server sent an attribute this client did not ask for and cannot
    /// skip.
    #[error("attribute {0} was not asked for and cannot be read")]
    Unexpected(u32),
    /// The values do not decode.
    #[error("attribute {0} does not decode")]
    Malformed(u32),
}

fn time(d: &mut Decoder<'_>) -> Result<Time, rpcrdma_xdr::XdrError> {
    Ok(Time {
        seconds: d.get_i64()?,
        nseconds: d.get_u32()?,
    })
}

/// Decodes `f`'s values in attribute order.
pub fn decode(f: &p::Fattr4) -> Result<Attrs, AttrError> {
    let set = AttrSet::from_words(&f.attrmask);
    let mut a = Attrs {
        present: set,
        ..Attrs::default()
    };
    if f.attrmask.iter().skip(3).any(|w| *w != 0) {
        return Err(AttrError::Unexpected(96));
    }
    let mut d = Decoder::from_bytes(&f.attr_vals);
    for n in 0..96 {
        if !set.has(n) {
            continue;
        }
        let bad = |_| AttrError::Malformed(n);
        match n {
            p::FATTR4_SUPPORTED_ATTRS => {
                let w: Vec<u32> = d.get_array(8).map_err(bad)?;
                a.supported = AttrSet::from_words(&w);
            }
            p::FATTR4_TYPE => a.kind = FileKind::of(d.get_u32().map_err(bad)?),
            p::FATTR4_FH_EXPIRE_TYPE
            | p::FATTR4_ACLSUPPORT
            | p::FATTR4_MAXLINK
            | p::FATTR4_MAXNAME => {
                d.get_u32().map_err(bad)?;
            }
            p::FATTR4_CHANGE => a.change = d.get_u64().map_err(bad)?,
            p::FATTR4_SIZE => a.size = d.get_u64().map_err(bad)?,
            p::FATTR4_LINK_SUPPORT
            | p::FATTR4_SYMLINK_SUPPORT
            | p::FATTR4_NAMED_ATTR
            | p::FATTR4_UNIQUE_HANDLES
            | p::FATTR4_CANSETTIME
            | p::FATTR4_CASE_INSENSITIVE
            | p::FATTR4_CASE_PRESERVING
            | p::FATTR4_CHOWN_RESTRICTED
            | p::FATTR4_HOMOGENEOUS
            | p::FATTR4_NO_TRUNC => {
                d.get_bool().map_err(bad)?;
            }
            p::FATTR4_FSID => a.fsid = (d.get_u64().map_err(bad)?, d.get_u64().map_err(bad)?),
            p::FATTR4_LEASE_TIME => a.lease_time = d.get_u32().map_err(bad)?,
            p::FATTR4_RDATTR_ERROR => {
                let v = d.get_u32().map_err(bad)?;
                a.rdattr_error = p::Nfsstat4::from_value(v as i32);
            }
            p::FATTR4_FILEHANDLE => {
                d.get_opaque(128).map_err(bad)?;
            }
            p::FATTR4_FILEID => a.fileid = d.get_u64().map_err(bad)?,
            p::FATTR4_FILES_AVAIL
            | p::FATTR4_FILES_FREE
            | p::FATTR4_FILES_TOTAL
            | p::FATTR4_MAXFILESIZE
            | p::FATTR4_SPACE_AVAIL
            | p::FATTR4_SPACE_FREE
            | p::FATTR4_SPACE_TOTAL
            | p::FATTR4_MOUNTED_ON_FILEID => {
                d.get_u64().map_err(bad)?;
            }
            p::FATTR4_MAXREAD => a.maxread = d.get_u64().map_err(bad)?,
            p::FATTR4_MAXWRITE => a.maxwrite = d.get_u64().map_err(bad)?,
            p::FATTR4_MODE => a.mode = d.get_u32().map_err(bad)? & 0o7777,
            p::FATTR4_NUMLINKS => a.nlink = d.get_u32().map_err(bad)?,
            p::FATTR4_OWNER => a.owner = d.get_opaque_bytes(1024).map_err(bad)?,
            p::FATTR4_OWNER_GROUP => a.group = d.get_opaque_bytes(1024).map_err(bad)?,
            p::FATTR4_RAWDEV => a.rawdev = (d.get_u32().map_err(bad)?, d.get_u32().map_err(bad)?),
            p::FATTR4_SPACE_USED => a.used = d.get_u64().map_err(bad)?,
            p::FATTR4_TIME_ACCESS => a.atime = time(&mut d).map_err(bad)?,
            p::FATTR4_TIME_METADATA => a.ctime = time(&mut d).map_err(bad)?,
            p::FATTR4_TIME_MODIFY => a.mtime = time(&mut d).map_err(bad)?,
            p::FATTR4_TIME_DELTA | p::FATTR4_TIME_CREATE | p::FATTR4_TIME_BACKUP => {
                time(&mut d).map_err(bad)?;
            }
            other => return Err(AttrError::Unexpected(other)),
        }
    }
    d.expect_end().map_err(|_| AttrError::Malformed(96))?;
    Ok(a)
}

/// Attributes to set at creation or with SETATTR: size and mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SetAttrs {
    /// `size`.
    pub size: Option<u64>,
    /// `mode`.
    pub mode: Option<u32>,
}

impl SetAttrs {
    /// The `fattr4` (size is attribute 4, mode 33: in that order).
    pub fn encode(&self) -> p::Fattr4 {
        let mut list = Vec::new();
        let mut vals = BytesMut::new();
        if let Some(s) = self.size {
            list.push(p::FATTR4_SIZE);
            vals.put_u64(s);
        }
        if let Some(m) = self.mode {
            list.push(p::FATTR4_MODE);
            vals.put_u32(m & 0o7777);
        }
        p::Fattr4 {
            attrmask: AttrSet::of(&list).words(),
            attr_vals: vals.freeze(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_in_attribute_order() {
        let mut v = BytesMut::new();
        v.put_u32(2); // type: directory
        v.put_u64(77); // change
        v.put_u64(4096); // size
        v.put_u64(1); // fileid
        v.put_u32(0o40755); // mode (the type bits are dropped)
        v.put_u32(3); // numlinks
        v.put_u32(4);
        v.put_slice(b"1000"); // owner
        v.put_i64(5);
        v.put_u32(6); // time_modify
        let f = p::Fattr4 {
            attrmask: AttrSet::of(&[
                p::FATTR4_TYPE,
                p::FATTR4_CHANGE,
                p::FATTR4_SIZE,
                p::FATTR4_FILEID,
                p::FATTR4_MODE,
                p::FATTR4_NUMLINKS,
                p::FATTR4_OWNER,
                p::FATTR4_TIME_MODIFY,
            ])
            .words(),
            attr_vals: v.freeze(),
        };
        let a = decode(&f).unwrap();
        assert_eq!(a.kind, FileKind::Directory);
        assert_eq!((a.change, a.size, a.fileid), (77, 4096, 1));
        assert_eq!((a.mode, a.nlink), (0o755, 3));
        assert_eq!(&a.owner[..], b"1000");
        assert_eq!(
            a.mtime,
            Time {
                seconds: 5,
                nseconds: 6
            }
        );
    }

    #[test]
    fn short_or_unknown_values_are_errors() {
        let f = p::Fattr4 {
            attrmask: AttrSet::of(&[p::FATTR4_SIZE]).words(),
            attr_vals: Bytes::from_static(&[0, 0, 0, 1]),
        };
        assert_eq!(decode(&f), Err(AttrError::Malformed(p::FATTR4_SIZE)));
        let f = p::Fattr4 {
            attrmask: AttrSet::of(&[p::FATTR4_ACL]).words(),
            attr_vals: Bytes::new(),
        };
        assert_eq!(decode(&f), Err(AttrError::Unexpected(p::FATTR4_ACL)));
    }

    #[test]
    fn set_encodes_size_then_mode() {
        let f = SetAttrs {
            size: Some(0),
            mode: Some(0o644),
        }
        .encode();
        assert_eq!(
            f.attrmask,
            vec![1 << p::FATTR4_SIZE, 1 << (p::FATTR4_MODE - 32)]
        );
        assert_eq!(&f.attr_vals[..], &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xa4]);
        assert!(standard().has(p::FATTR4_MODE) && !standard().has(p::FATTR4_ACL));
    }
}
