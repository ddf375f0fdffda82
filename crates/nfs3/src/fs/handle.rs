//! File handles: what identifies a file across server restarts, and
//! refuses forgery.
//!
//! Layout (36 bytes, big-endian; NFSv3 allows up to 64):
//!
//! | bytes | field |
//! |---|---|
//! | 0 | format version, 1 |
//! | 1..4 | zero |
//! | 4..8 | export id |
//! | 8..16 | inode number |
//! | 16..20 | generation (the inode's birth time folded to 32 bits; 0 where the file system keeps none) |
//! | 20..36 | SipHash-2-4-128 of bytes 0..20 under the server's 128-bit key |
//!
//! The key is random, made once and kept in the server's state directory
//! ([`super::ExportConfig::state_dir`]), so handles stay valid across
//! restarts and a client cannot make one for a file it was never given.
//! The device number is not part of the handle: an export is one file
//! system (nothing below a mount point inside it is served), and device
//! numbers may change across reboots.

use siphasher::sip128::{Hasher128, SipHasher24};
use std::hash::Hasher;

use super::types::{NfsError, NfsResult};

/// Length of our file handles.
pub const HANDLE_LEN: usize = 36;
/// Largest NFSv3 file handle (`NFS3_FHSIZE`).
pub const NFS3_FHSIZE: usize = 64;
const VERSION: u8 = 1;

/// The identity a handle names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeId {
    /// Inode number.
    pub ino: u64,
    /// Generation (see the module documentation).
    pub gen: u32,
}

/// An NFS file handle as sent on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileHandle(Vec<u8>);

impl FileHandle {
    /// Wraps received bytes (not yet checked: see [`HandleKey::open`]).
    /// More than [`NFS3_FHSIZE`] bytes is refused.
    pub fn from_bytes(b: &[u8]) -> NfsResult<Self> {
        if b.len() > NFS3_FHSIZE {
            return Err(NfsError::BadHandle);
        }
        Ok(Self(b.to_vec()))
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// The server's handle key and export id: makes and checks handles.
#[derive(Clone)]
pub struct HandleKey {
    key: [u8; 16],
    export_id: u32,
}

impl std::fmt::Debug for HandleKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandleKey")
            .field("export_id", &self.export_id)
            .finish_non_exhaustive()
    }
}

impl HandleKey {
    /// A key for one export.
    pub fn new(key: [u8; 16], export_id: u32) -> Self {
        Self { key, export_id }
    }

    /// The export id.
    pub fn export_id(&self) -> u32 {
        self.export_id
    }

    fn mac(&self, body: &[u8]) -> [u8; 16] {
        let mut h = SipHasher24::new_with_key(&self.key);
        h.write(body);
        h.finish128().as_bytes()
    }

    /// A keyed 64-bit value of `data` (cookie verifiers).
    pub(crate) fn tag64(&self, data: &[u8]) -> u64 {
        let mut h = SipHasher24::new_with_key(&self.key);
        h.write(b"rpcrdma-nfs3 tag");
        h.write(data);
        h.finish()
    }

    /// The handle of `id`.
    pub fn make(&self, id: NodeId) -> FileHandle {
        let mut b = Vec::with_capacity(HANDLE_LEN);
        b.extend_from_slice(&[VERSION, 0, 0, 0]);
        b.extend_from_slice(&self.export_id.to_be_bytes());
        b.extend_from_slice(&id.ino.to_be_bytes());
        b.extend_from_slice(&id.gen.to_be_bytes());
        let mac = self.mac(&b);
        b.extend_from_slice(&mac);
        FileHandle(b)
    }

    /// The export id of a received handle, its form and MAC checked
    /// (`NFS3ERR_BADHANDLE` otherwise), whichever export it names: every
    /// export whose key is this one's made it.
    pub fn export_of(&self, fh: &FileHandle) -> NfsResult<u32> {
        let b = self.verified(fh)?;
        Ok(u32::from_be_bytes([b[4], b[5], b[6], b[7]]))
    }

    /// The bytes of a handle whose form and MAC are ours.
    fn verified<'a>(&self, fh: &'a FileHandle) -> NfsResult<&'a [u8]> {
        let b = fh.as_bytes();
        if b.len() != HANDLE_LEN || b[0] != VERSION || b[1..4] != [0, 0, 0] {
            return Err(NfsError::BadHandle);
        }
        let mac = self.mac(&b[..20]);
        // Constant-time comparison of the tag.
        let diff = mac
            .iter()
            .zip(&b[20..36])
            .fold(0u8, |acc, (x, y)| acc | (x ^ y));
        if diff != 0 {
            return Err(NfsError::BadHandle);
        }
        Ok(b)
    }

    /// Checks a received handle: `NFS3ERR_BADHANDLE` unless it is one of
    /// ours (length, version, export and MAC); a handle of another export
    /// of ours, or one made with another key, is `NFS3ERR_STALE` only if
    /// its form is right but the MAC is not ours — it is refused either
    /// way, never opened.
    pub fn open(&self, fh: &FileHandle) -> NfsResult<NodeId> {
        let b = self.verified(fh)?;
        let export_id = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
        if export_id != self.export_id {
            return Err(NfsError::Stale);
        }
        let mut ino = [0u8; 8];
        ino.copy_from_slice(&b[8..16]);
        Ok(NodeId {
            ino: u64::from_be_bytes(ino),
            gen: u32::from_be_bytes([b[16], b[17], b[18], b[19]]),
        })
    }
}
