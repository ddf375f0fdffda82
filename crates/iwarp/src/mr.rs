//! The memory regions of one protection domain: keys (STags), access
//! rights, bounds and the memory itself.
//!
//! The table owns registered buffers. The connection state machine places
//! incoming tagged data straight into them and takes outgoing data from them
//! (zero-copy for [`MrBuffer::Shared`] regions). Every placement and every
//! source range is checked against key, validity, bounds and access first.

use bytes::Bytes;
use rpcrdma_verbs::{Access, MrBuffer, ProtectionFault, RegisterError};

/// A source of fresh keys. Keys must be unpredictable to the peer (RFC 8166
/// §10.1.2): the provider backs this with a cryptographic generator seeded
/// from the operating system; tests use a fixed sequence.
pub trait KeySource {
    /// The next 32 random bits.
    fn next_u32(&mut self) -> u32;
}

impl<F: FnMut() -> u32> KeySource for F {
    fn next_u32(&mut self) -> u32 {
        self()
    }
}

/// Default cap on regions per protection domain.
pub const DEFAULT_MAX_REGIONS: usize = 1 << 16;
/// The largest region (tagged offsets are checked in 64 bits; this keeps
/// `addr + len` far from overflow).
pub const MAX_REGION_LEN: usize = 1 << 40;

/// What a registration produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MrInfo {
    /// Local and remote key (STag).
    pub key: u32,
    /// Address of the first octet (the tagged offset the peer uses).
    pub addr: u64,
    /// Length in octets.
    pub len: usize,
    /// Access rights.
    pub access: Access,
}

/// Why an access to a region was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum AccessError {
    /// No region has this key (never registered, deregistered, or in
    /// another protection domain).
    #[error("no memory region with key {0:#010x}")]
    InvalidKey(u32),
    /// The region was invalidated (locally or by the peer).
    #[error("memory region key {0:#010x} was invalidated")]
    Invalidated(u32),
    /// The range is outside the region.
    #[error("range {addr:#x}+{len} is outside the region with key {key:#010x}")]
    Bounds {
        /// Key.
        key: u32,
        /// Start address.
        addr: u64,
        /// Length.
        len: u64,
    },
    /// `addr + len` overflows 64 bits.
    #[error("range {addr:#x}+{len} wraps around the 64-bit address space")]
    Wrap {
        /// Start address.
        addr: u64,
        /// Length.
        len: u64,
    },
    /// The region lacks a needed right.
    #[error("memory region key {key:#010x} lacks the {needed:?} right")]
    Rights {
        /// Key.
        key: u32,
        /// The right that was needed.
        needed: Access,
    },
}

impl From<AccessError> for ProtectionFault {
    fn from(e: AccessError) -> Self {
        match e {
            AccessError::InvalidKey(k) => ProtectionFault::InvalidKey(k),
            AccessError::Invalidated(k) => ProtectionFault::Invalidated(k),
            AccessError::Bounds { key, addr, len } => ProtectionFault::Bounds { key, addr, len },
            AccessError::Wrap { addr, len } => ProtectionFault::Wrap { addr, len },
            AccessError::Rights { key, needed } => ProtectionFault::Rights { key, needed },
        }
    }
}

#[derive(Debug)]
struct Region {
    access: Access,
    addr: u64,
    valid: bool,
    mem: MrBuffer,
}

/// The regions of one protection domain.
///
/// ```
/// use bytes::{Bytes, BytesMut};
/// use rpcrdma_iwarp::mr::MrTable;
/// use rpcrdma_verbs::{Access, MrBuffer};
/// let mut keys = { let mut n = 0u32; move || { n = n.wrapping_add(0x9e37_79b9); n } };
/// let mut t = MrTable::new(16);
/// let src = t.register(MrBuffer::Shared(Bytes::from_static(b"data")), Access::REMOTE_READ, &mut keys)?;
/// let sink = t.register(MrBuffer::Owned(BytesMut::zeroed(8)), Access::LOCAL_WRITE, &mut keys)?;
/// assert_ne!(src.key, sink.key);
/// assert_eq!(t.deregister(src.key), Some(MrBuffer::Shared(Bytes::from_static(b"data"))));
/// # Ok::<(), rpcrdma_verbs::RegisterError>(())
/// ```
#[derive(Debug)]
pub struct MrTable {
    /// Keyed by STags from our own generator (a peer's STag is only looked
    /// up, never inserted), so the cheap Fx hasher cannot be made to
    /// collide on purpose.
    regions: std::collections::HashMap<u32, Region, rustc_hash::FxBuildHasher>,
    max_regions: usize,
}

impl MrTable {
    /// An empty table holding at most `max_regions` regions.
    pub fn new(max_regions: usize) -> Self {
        MrTable {
            regions: std::collections::HashMap::default(),
            max_regions,
        }
    }

    /// Number of registered regions.
    pub fn len(&self) -> usize {
        self.regions.len()
    }

    /// Whether no region is registered.
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }

    /// Registers `buf` with `access` under a fresh random key (never 0,
    /// never one in use) and a random page-aligned base address.
    pub fn register(
        &mut self,
        buf: MrBuffer,
        access: Access,
        keys: &mut dyn KeySource,
    ) -> Result<MrInfo, RegisterError> {
        if self.regions.len() >= self.max_regions {
            return Err(RegisterError::TooManyRegions {
                max: self.max_regions,
            });
        }
        if matches!(buf, MrBuffer::Shared(_)) && access.is_writable() {
            return Err(RegisterError::ReadOnlyBuffer {
                access: format!("{access:?}"),
            });
        }
        let len = buf.len();
        if len > MAX_REGION_LEN {
            return Err(RegisterError::TooLarge {
                len,
                max: MAX_REGION_LEN,
            });
        }
        // The table is never full of 2^32 keys (max_regions is far below),
        // so a fresh key turns up within a few draws; bound the loop anyway.
        let mut key = 0;
        for _ in 0..64 {
            let k = keys.next_u32();
            if k != 0 && !self.regions.contains_key(&k) {
                key = k;
                break;
            }
        }
        if key == 0 {
            return Err(RegisterError::TooManyRegions {
                max: self.regions.len(),
            });
        }
        // Base address: a random page number below 2^44; with lengths below
        // 2^40 the end never overflows.
        let addr = u64::from(keys.next_u32()) << 12;
        self.regions.insert(
            key,
            Region {
                access,
                addr,
                valid: true,
                mem: buf,
            },
        );
        Ok(MrInfo {
            key,
            addr,
            len,
            access,
        })
    }

    /// Removes a region and returns its buffer (`None` if the key is not
    /// registered).
    pub fn deregister(&mut self, key: u32) -> Option<MrBuffer> {
        self.regions.remove(&key).map(|r| r.mem)
    }

    /// Invalidates a key: every later access through it fails. The buffer
    /// stays registered until [`MrTable::deregister`].
    pub fn invalidate(&mut self, key: u32) -> Result<(), AccessError> {
        match self.regions.get_mut(&key) {
            Some(r) => {
                r.valid = false;
                Ok(())
            }
            None => Err(AccessError::InvalidKey(key)),
        }
    }

    /// Whether `key` names a registered, valid region.
    pub fn is_valid(&self, key: u32) -> bool {
        self.regions.get(&key).is_some_and(|r| r.valid)
    }

    /// Info about a registered region.
    pub fn info(&self, key: u32) -> Option<MrInfo> {
        self.regions.get(&key).map(|r| MrInfo {
            key,
            addr: r.addr,
            len: r.mem.len(),
            access: r.access,
        })
    }

    /// The memory of a registered region, whatever its state (valid or
    /// invalidated): for the region's owner, not for the peer.
    pub fn buffer(&self, key: u32) -> Option<&[u8]> {
        self.regions.get(&key).map(|r| match &r.mem {
            MrBuffer::Shared(b) => &b[..],
            MrBuffer::Owned(b) => &b[..],
        })
    }

    /// Checks that `[addr, addr + len)` lies in a valid region with `needed`
    /// rights; returns the offset into the buffer.
    //= rfc5666bis-04#section-10.1
    //# It is REQUIRED that any RDMA provider used for RPC transport be
    //# conformant to the requirements of [RFC5042] in order to satisfy these
    //# protections.
    pub fn check(
        &self,
        key: u32,
        addr: u64,
        len: u64,
        needed: Access,
    ) -> Result<usize, AccessError> {
        let r = self.regions.get(&key).ok_or(AccessError::InvalidKey(key))?;
        if !r.valid {
            return Err(AccessError::Invalidated(key));
        }
        let end = addr
            .checked_add(len)
            .ok_or(AccessError::Wrap { addr, len })?;
        let bounds = AccessError::Bounds { key, addr, len };
        if addr < r.addr || end - r.addr > r.mem.len() as u64 {
            return Err(bounds);
        }
        if !r.access.contains(needed) {
            return Err(AccessError::Rights { key, needed });
        }
        // addr - r.addr <= len of an in-memory buffer, so it fits usize.
        usize::try_from(addr - r.addr).map_err(|_| bounds)
    }

    /// The writable memory of `[addr, addr + len)` after the same checks
    /// as [`MrTable::check`]. Read-only regions never pass (they cannot be
    /// registered with a write right).
    pub fn slice_mut(
        &mut self,
        key: u32,
        addr: u64,
        len: usize,
        needed: Access,
    ) -> Result<&mut [u8], AccessError> {
        let off = self.check(key, addr, len as u64, needed)?;
        match self.regions.get_mut(&key).map(|r| &mut r.mem) {
            Some(MrBuffer::Owned(b)) => b.get_mut(off..off + len).ok_or(AccessError::Bounds {
                key,
                addr,
                len: len as u64,
            }),
            _ => Err(AccessError::Rights { key, needed }),
        }
    }

    /// The contents of `[addr, addr + len)` after the same checks as
    /// [`MrTable::check`], borrowed (for a copy of a few octets).
    pub fn source_slice(
        &self,
        key: u32,
        addr: u64,
        len: usize,
        needed: Access,
    ) -> Result<&[u8], AccessError> {
        let off = self.check(key, addr, len as u64, needed)?;
        let bounds = AccessError::Bounds {
            key,
            addr,
            len: len as u64,
        };
        let mem = match self.regions.get(&key).map(|r| &r.mem) {
            Some(MrBuffer::Shared(b)) => &b[..],
            Some(MrBuffer::Owned(b)) => &b[..],
            None => return Err(AccessError::InvalidKey(key)),
        };
        mem.get(off..off + len).ok_or(bounds)
    }

    /// The contents of `[addr, addr + len)` after the same checks as
    /// [`MrTable::check`]: a zero-copy slice of a shared region, a copy of an
    /// owned one.
    pub fn source(
        &self,
        key: u32,
        addr: u64,
        len: usize,
        needed: Access,
    ) -> Result<Bytes, AccessError> {
        let off = self.check(key, addr, len as u64, needed)?;
        let bounds = AccessError::Bounds {
            key,
            addr,
            len: len as u64,
        };
        match self.regions.get(&key).map(|r| &r.mem) {
            Some(MrBuffer::Shared(b)) => {
                if off + len <= b.len() {
                    Ok(b.slice(off..off + len))
                } else {
                    Err(bounds)
                }
            }
            Some(MrBuffer::Owned(b)) => b
                .get(off..off + len)
                .map(Bytes::copy_from_slice)
                .ok_or(bounds),
            None => Err(AccessError::InvalidKey(key)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;

    fn keys() -> impl FnMut() -> u32 {
        let mut n = 7u32;
        move || {
            n = n.wrapping_mul(1_103_515_245).wrapping_add(12345);
            n
        }
    }

    #[test]
    fn checks() {
        let mut k = keys();
        let mut t = MrTable::new(4);
        let m = t
            .register(
                MrBuffer::Owned(BytesMut::zeroed(100)),
                Access::REMOTE_WRITE,
                &mut k,
            )
            .unwrap();
        assert_eq!(t.check(m.key, m.addr, 100, Access::REMOTE_WRITE), Ok(0));
        assert_eq!(
            t.check(m.key, m.addr + 10, 90, Access::REMOTE_WRITE),
            Ok(10)
        );
        assert!(matches!(
            t.check(m.key, m.addr + 10, 91, Access::REMOTE_WRITE),
            Err(AccessError::Bounds { .. })
        ));
        assert!(matches!(
            t.check(m.key, m.addr.wrapping_sub(1), 1, Access::REMOTE_WRITE),
            Err(AccessError::Bounds { .. })
        ));
        assert!(matches!(
            t.check(m.key, u64::MAX, 2, Access::REMOTE_WRITE),
            Err(AccessError::Wrap { .. })
        ));
        assert!(matches!(
            t.check(m.key, m.addr, 1, Access::REMOTE_READ),
            Err(AccessError::Rights { .. })
        ));
        assert_eq!(
            t.check(m.key ^ 1, m.addr, 1, Access::REMOTE_WRITE),
            Err(AccessError::InvalidKey(m.key ^ 1))
        );
        t.slice_mut(m.key, m.addr + 1, 2, Access::REMOTE_WRITE)
            .unwrap()
            .copy_from_slice(b"hi");
        t.invalidate(m.key).unwrap();
        assert_eq!(
            t.check(m.key, m.addr, 1, Access::REMOTE_WRITE),
            Err(AccessError::Invalidated(m.key))
        );
        let back = t.deregister(m.key).unwrap().into_owned().unwrap();
        assert_eq!(&back[..3], b"\0hi");
    }

    #[test]
    fn read_only_refuses_write_rights_and_limits_hold() {
        let mut k = keys();
        let mut t = MrTable::new(1);
        assert!(matches!(
            t.register(MrBuffer::Shared(Bytes::new()), Access::LOCAL_WRITE, &mut k),
            Err(RegisterError::ReadOnlyBuffer { .. })
        ));
        t.register(MrBuffer::Shared(Bytes::new()), Access::REMOTE_READ, &mut k)
            .unwrap();
        assert_eq!(
            t.register(MrBuffer::Shared(Bytes::new()), Access::REMOTE_READ, &mut k),
            Err(RegisterError::TooManyRegions { max: 1 })
        );
        // A key source that only yields zeros never produces a key.
        let mut t = MrTable::new(4);
        let mut zero = || 0u32;
        assert!(t
            .register(
                MrBuffer::Shared(Bytes::new()),
                Access::LOCAL_READ,
                &mut zero
            )
            .is_err());
    }
}
