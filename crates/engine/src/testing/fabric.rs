//! The in-memory RDMA fabric: registered regions and the RDMA operations
//! on them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use rpcrdma_verbs::{
    Access, DeregisterError, LocalSge, MemoryRegion, MrBuffer, ProtectionDomain, RegisterError,
    RemoteAddr, Sge, WcStatus,
};

#[derive(Debug)]
struct Region {
    owner: u32,
    addr: u64,
    access: Access,
    buf: MrBuffer,
    valid: bool,
}

#[derive(Debug)]
struct FabricInner {
    regions: HashMap<u32, Region>,
    seed: u64,
    next_addr: u64,
    /// Deregistrations still to refuse (fault injection).
    failing_deregistrations: usize,
}

impl FabricInner {
    fn next_key(&mut self) -> u32 {
        loop {
            // xorshift64*: fixed seed, so runs are reproducible, but keys
            // are not sequential.
            self.seed ^= self.seed >> 12;
            self.seed ^= self.seed << 25;
            self.seed ^= self.seed >> 27;
            let k = (self.seed.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32;
            if k != 0 && !self.regions.contains_key(&k) {
                return k;
            }
        }
    }
}

/// An in-memory RDMA fabric shared by the protection domains of a
/// [`Pair`](super::Pair).
#[derive(Debug, Clone)]
pub struct Fabric {
    inner: Arc<Mutex<FabricInner>>,
}

impl Fabric {
    /// A fabric whose keys come from `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            inner: Arc::new(Mutex::new(FabricInner {
                regions: HashMap::new(),
                seed: seed | 1,
                next_addr: 0x1000_0000,
                failing_deregistrations: 0,
            })),
        }
    }

    /// A protection domain of connection end `owner`.
    pub fn pd(&self, owner: u32) -> TestPd {
        TestPd {
            fabric: self.clone(),
            owner,
        }
    }

    /// Regions currently registered by `owner`.
    pub fn live_regions(&self, owner: u32) -> usize {
        let g = self.inner.lock().expect("fabric lock");
        g.regions.values().filter(|r| r.owner == owner).count()
    }

    /// Fault injection: the next `n` deregistrations fail (the provider
    /// cannot invalidate the region; it stays registered and reachable).
    pub fn fail_next_deregistrations(&self, n: usize) {
        self.lock().failing_deregistrations = n;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FabricInner> {
        self.inner.lock().expect("fabric lock")
    }
}

/// A protection domain on a [`Fabric`].
#[derive(Debug, Clone)]
pub struct TestPd {
    fabric: Fabric,
    owner: u32,
}

/// A memory region on a [`Fabric`].
#[derive(Debug)]
pub struct TestMr {
    fabric: Fabric,
    key: u32,
    addr: u64,
    len: usize,
    access: Access,
}

impl MemoryRegion for TestMr {
    fn lkey(&self) -> u32 {
        self.key
    }
    fn rkey(&self) -> u32 {
        self.key
    }
    fn addr(&self) -> u64 {
        self.addr
    }
    fn len(&self) -> usize {
        self.len
    }
    fn access(&self) -> Access {
        self.access
    }
    fn deregister(self) -> Result<MrBuffer, DeregisterError> {
        let mut g = self.fabric.lock();
        if g.failing_deregistrations > 0 {
            g.failing_deregistrations -= 1;
            return Err(DeregisterError::NotRegistered { key: self.key });
        }
        g.regions
            .remove(&self.key)
            .map(|r| r.buf)
            .ok_or(DeregisterError::NotRegistered { key: self.key })
    }
}

impl TestPd {
    fn register(&self, buf: MrBuffer, access: Access) -> TestMr {
        let mut g = self.fabric.lock();
        let key = g.next_key();
        let addr = g.next_addr;
        let len = buf.len();
        g.next_addr += (len as u64 + 0xfff) & !0xfff;
        g.regions.insert(
            key,
            Region {
                owner: self.owner,
                addr,
                access,
                buf,
                valid: true,
            },
        );
        TestMr {
            fabric: self.fabric.clone(),
            key,
            addr,
            len,
            access,
        }
    }
}

impl ProtectionDomain for TestPd {
    type Mr = TestMr;

    fn register_bytes(&self, buf: Bytes, access: Access) -> Result<TestMr, RegisterError> {
        if access.is_writable() {
            return Err(RegisterError::ReadOnlyBuffer {
                access: format!("{access:?}"),
            });
        }
        Ok(self.register(MrBuffer::Shared(buf), access))
    }

    fn register_mut(&self, buf: BytesMut, access: Access) -> Result<TestMr, RegisterError> {
        Ok(self.register(MrBuffer::Owned(buf), access))
    }
}

/// Why the fabric refused an access.
fn check_access(
    g: &FabricInner,
    key: u32,
    owner: u32,
    addr: u64,
    len: usize,
    need: Access,
) -> Result<(), WcStatus> {
    let r = g.regions.get(&key).ok_or(WcStatus::RemoteAccess)?;
    let off = addr.checked_sub(r.addr).ok_or(WcStatus::RemoteAccess)? as usize;
    if !r.valid || r.owner != owner || !r.access.contains(need) || off + len > r.buf.len() {
        return Err(WcStatus::RemoteAccess);
    }
    Ok(())
}

fn region_bytes(g: &FabricInner, key: u32, addr: u64, len: usize) -> Vec<u8> {
    let r = &g.regions[&key];
    let off = (addr - r.addr) as usize;
    match &r.buf {
        MrBuffer::Shared(b) => b[off..off + len].to_vec(),
        MrBuffer::Owned(b) => b[off..off + len].to_vec(),
    }
}

fn region_write(g: &mut FabricInner, key: u32, addr: u64, data: &[u8]) {
    let r = g.regions.get_mut(&key).expect("checked region");
    let off = (addr - r.addr) as usize;
    if let MrBuffer::Owned(b) = &mut r.buf {
        b[off..off + data.len()].copy_from_slice(data);
    }
}

fn gather(g: &FabricInner, owner: u32, sges: &[Sge]) -> Result<Vec<u8>, WcStatus> {
    let mut out = Vec::new();
    for s in sges {
        match s {
            Sge::Bytes(b) => out.extend_from_slice(b),
            Sge::Region(LocalSge { lkey, addr, len }) => {
                check_access(g, *lkey, owner, *addr, *len as usize, Access::LOCAL_READ)
                    .map_err(|_| WcStatus::LocalProtection)?;
                out.extend(region_bytes(g, *lkey, *addr, *len as usize));
            }
        }
    }
    Ok(out)
}

impl Fabric {
    /// The bytes of a Send's (or Write's) gather list, as `owner` posted it.
    pub(super) fn gather(&self, owner: u32, sges: &[Sge]) -> Result<Vec<u8>, WcStatus> {
        gather(&self.lock(), owner, sges)
    }

    /// Send With Invalidate at the receiver `peer`: kills `key` if `peer`
    /// owns it.
    pub(super) fn remote_invalidate(&self, key: u32, peer: u32) -> bool {
        match self.lock().regions.get_mut(&key) {
            Some(reg) if reg.owner == peer => {
                reg.valid = false;
                true
            }
            _ => false,
        }
    }

    /// An RDMA Write of `me`'s gather list into `peer`'s memory.
    pub(super) fn rdma_write(
        &self,
        me: u32,
        sges: &[Sge],
        remote: RemoteAddr,
        peer: u32,
    ) -> WcStatus {
        let mut g = self.lock();
        match gather(&g, me, sges) {
            Err(s) => s,
            Ok(data) => {
                let RemoteAddr { rkey, addr } = remote;
                match check_access(&g, rkey, peer, addr, data.len(), Access::REMOTE_WRITE) {
                    Ok(()) => {
                        region_write(&mut g, rkey, addr, &data);
                        WcStatus::Success
                    }
                    Err(s) => s,
                }
            }
        }
    }

    /// An RDMA Read by `me` of `peer`'s memory into `sink`.
    pub(super) fn rdma_read(
        &self,
        me: u32,
        sink: LocalSge,
        remote: RemoteAddr,
        peer: u32,
    ) -> WcStatus {
        let mut g = self.lock();
        let len = sink.len as usize;
        if let Err(s) = check_access(&g, remote.rkey, peer, remote.addr, len, Access::REMOTE_READ) {
            return s;
        }
        if check_access(&g, sink.lkey, me, sink.addr, len, Access::LOCAL_WRITE).is_err() {
            return WcStatus::LocalProtection;
        }
        let data = region_bytes(&g, remote.rkey, remote.addr, len);
        region_write(&mut g, sink.lkey, sink.addr, &data);
        WcStatus::Success
    }

    /// A local invalidation by `me` of its own `key`.
    pub(super) fn local_invalidate(&self, key: u32, me: u32) -> WcStatus {
        match self.lock().regions.get_mut(&key) {
            Some(r) if r.owner == me => {
                r.valid = false;
                WcStatus::Success
            }
            _ => WcStatus::LocalProtection,
        }
    }
}
