//! Protection domains and memory regions.

use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use bytes::{Bytes, BytesMut};
use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};
use rpcrdma_iwarp::mr::{KeySource, MrInfo, MrTable, DEFAULT_MAX_REGIONS};
use rpcrdma_verbs::{
    Access, DeregisterError, MemoryRegion, MrBuffer, ProtectionDomain, RegisterError,
};

/// Fresh keys from a cryptographic generator (ChaCha, seeded by the OS):
/// the peer cannot predict the next key from the ones it has seen.
#[derive(Debug, Clone)]
pub(crate) struct Keys(Arc<Mutex<StdRng>>);

impl Keys {
    pub(crate) fn from_os() -> Self {
        Keys(Arc::new(Mutex::new(StdRng::from_entropy())))
    }
}

struct KeyGuard<'a>(MutexGuard<'a, StdRng>);

impl KeySource for KeyGuard<'_> {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
}

#[derive(Debug)]
pub(crate) struct PdInner {
    table: Mutex<MrTable>,
    keys: Keys,
}

impl PdInner {
    /// Locks the region table. A poisoned lock (a panic elsewhere while it
    /// was held) still yields the table: its state is consistent after
    /// every call.
    pub(crate) fn table(&self) -> MutexGuard<'_, MrTable> {
        self.table.lock()
    }
}

/// A protection domain: its regions are what its queue pairs may touch.
#[derive(Debug, Clone)]
pub struct Pd {
    pub(crate) inner: Arc<PdInner>,
}

impl Pd {
    pub(crate) fn new(keys: Keys) -> Self {
        Pd {
            inner: Arc::new(PdInner {
                table: Mutex::new(MrTable::new(DEFAULT_MAX_REGIONS)),
                keys,
            }),
        }
    }

    fn register(&self, buf: MrBuffer, access: Access) -> Result<Mr, RegisterError> {
        let mut keys = KeyGuard(self.inner.keys.0.lock());
        let info = self.inner.table().register(buf, access, &mut keys)?;
        Ok(Mr {
            pd: Some(self.inner.clone()),
            info,
        })
    }

    /// Number of registered regions.
    pub fn regions(&self) -> usize {
        self.inner.table().len()
    }
}

impl ProtectionDomain for Pd {
    type Mr = Mr;

    fn register_bytes(&self, buf: Bytes, access: Access) -> Result<Mr, RegisterError> {
        self.register(MrBuffer::Shared(buf), access)
    }

    fn register_mut(&self, buf: BytesMut, access: Access) -> Result<Mr, RegisterError> {
        self.register(MrBuffer::Owned(buf), access)
    }
}

/// A registered memory region. Dropping it without
/// [`MemoryRegion::deregister`] deregisters it (and drops the buffer).
#[derive(Debug)]
pub struct Mr {
    pd: Option<Arc<PdInner>>,
    info: MrInfo,
}

impl Mr {
    /// Whether the key is still valid (not invalidated locally or by the
    /// peer, not deregistered).
    pub fn is_valid(&self) -> bool {
        self.pd
            .as_ref()
            .is_some_and(|pd| pd.table().is_valid(self.info.key))
    }
}

impl MemoryRegion for Mr {
    fn lkey(&self) -> u32 {
        self.info.key
    }

    fn rkey(&self) -> u32 {
        self.info.key
    }

    fn addr(&self) -> u64 {
        self.info.addr
    }

    fn len(&self) -> usize {
        self.info.len
    }

    fn access(&self) -> Access {
        self.info.access
    }

    fn deregister(mut self) -> Result<MrBuffer, DeregisterError> {
        let key = self.info.key;
        let pd = self
            .pd
            .take()
            .ok_or(DeregisterError::NotRegistered { key })?;
        let buf = pd.table().deregister(key);
        buf.ok_or(DeregisterError::NotRegistered { key })
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        if let Some(pd) = self.pd.take() {
            pd.table().deregister(self.info.key);
        }
    }
}
