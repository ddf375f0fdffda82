//! The device: choosing an rdma-core device, its limits, protection
//! domains and memory regions.

use rpcrdma_sync::lock;
use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use rpcrdma_verbs::{
    Access, DeregisterError, Errno, MemoryRegion, MrBuffer, ProtectionDomain, RegisterError,
    ResourceError,
};

use super::ffi;
use crate::limits::{DeviceLimits, Transport};
use crate::status::{is_memlock_failure, memlock_text};
use crate::{DeviceConfig, DeviceInfo, OpenError, PortInfo};

/// An rdma-core RDMA device: an InfiniBand, RoCE or iWARP adapter, or the
/// kernel's soft devices `rxe` and `siw`, through libibverbs and
/// librdmacm. Cheap to clone.
#[derive(Clone)]
pub struct RdmaCore {
    pub(crate) inner: Arc<DevInner>,
}

impl std::fmt::Debug for RdmaCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RdmaCore")
            .field("device", &self.inner.info.name)
            .field("transport", &self.inner.info.limits.transport)
            .finish()
    }
}

impl RdmaCore {
    /// Opens the device named in `config` (or the first with an active
    /// port). Errors say what is missing and how to get it.
    pub fn open(config: &DeviceConfig) -> Result<RdmaCore, OpenError> {
        Ok(RdmaCore {
            inner: open(config)?,
        })
    }

    /// Every device rdma-core sees.
    pub fn devices() -> Result<Vec<DeviceInfo>, OpenError> {
        devices()
    }

    /// What the device is and what it can do.
    pub fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    /// The process's locked-memory limit (`ulimit -l`) in octets, `None`
    /// if unlimited.
    pub fn memlock_limit() -> Option<u64> {
        memlock_limit()
    }
}

/// The opened device (shared by everything made from it).
pub(crate) struct DevInner {
    list: *mut *mut ffi::ibv_context,
    pub(crate) ctx: *mut ffi::ibv_context,
    pub(crate) info: DeviceInfo,
    pub(crate) polling: bool,
}

// SAFETY: the pointers are librdmacm's device list and one of its verbs
// contexts; libibverbs objects may be used from any thread, and the list
// is only freed in Drop, when nothing else can reach it.
unsafe impl Send for DevInner {}
// SAFETY: as above; nothing here is mutated after construction.
unsafe impl Sync for DevInner {}

impl Drop for DevInner {
    fn drop(&mut self) {
        // SAFETY: `list` came from rdma_get_devices and is freed once.
        unsafe { ffi::rdma_free_devices(self.list) };
    }
}

impl std::fmt::Debug for DevInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device").field("info", &self.info).finish()
    }
}

impl DevInner {
    pub(crate) fn limits(&self) -> &DeviceLimits {
        &self.info.limits
    }

    pub(crate) fn transport(&self) -> Transport {
        self.info.limits.transport
    }
}

fn describe(ctx: *mut ffi::ibv_context) -> Result<DeviceInfo, String> {
    // SAFETY: ctx is a live context from rdma_get_devices; the name is a
    // NUL-terminated string owned by libibverbs for the device's lifetime.
    let name = unsafe {
        let p = ffi::rs_device_name(ctx);
        if p.is_null() {
            "?".to_string()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    // SAFETY: rs_dev_attr is plain data; zeroed is a valid value.
    let mut a: ffi::rs_dev_attr = unsafe { std::mem::zeroed() };
    // SAFETY: ctx is live, `a` is a valid out-pointer.
    let rc = unsafe { ffi::rs_query_device(ctx, &mut a) };
    if rc != 0 {
        return Err(format!(
            "{name}: ibv_query_device failed: {}",
            ffi::err_text(rc)
        ));
    }
    let transport = Transport::from_raw(a.transport).ok_or_else(|| {
        format!(
            "{name}: transport type {} is not InfiniBand, RoCE or iWARP",
            a.transport
        )
    })?;
    let mut ports = Vec::new();
    for p in 1..=a.phys_port_cnt.min(255) {
        let mut pa = ffi::rs_port_attr::default();
        // SAFETY: ctx is live, pa a valid out-pointer, p a port number.
        let rc = unsafe { ffi::rs_query_port(ctx, p as u8, &mut pa) };
        if rc == 0 {
            ports.push(PortInfo {
                port: p as u8,
                active: pa.state == 4,
                link_layer: match (transport, pa.link_layer) {
                    (Transport::Iwarp, _) => "iWARP (Ethernet)",
                    (_, 2) => "RoCE (Ethernet)",
                    _ => "InfiniBand",
                },
                mtu: match pa.active_mtu {
                    1 => 256,
                    2 => 512,
                    3 => 1024,
                    4 => 2048,
                    5 => 4096,
                    _ => 0,
                },
                gids: pa.gid_tbl_len,
            });
        }
    }
    // SAFETY: fw_ver is NUL-terminated by the shim.
    let fw = unsafe { CStr::from_ptr(a.fw_ver.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    Ok(DeviceInfo {
        name,
        firmware: fw,
        vendor_id: a.vendor_id,
        vendor_part_id: a.vendor_part_id,
        ports,
        limits: DeviceLimits {
            transport,
            max_qp_wr: a.max_qp_wr,
            max_sge: a.max_sge,
            max_cqe: a.max_cqe,
            max_qp_rd_atom: a.max_qp_rd_atom,
            max_qp_init_rd_atom: a.max_qp_init_rd_atom,
            max_mr_size: a.max_mr_size,
            mw_type_2: a.mw_type_2 != 0,
        },
    })
}

fn device_list() -> Result<(*mut *mut ffi::ibv_context, Vec<*mut ffi::ibv_context>), OpenError> {
    let mut n: std::ffi::c_int = 0;
    // SAFETY: n is a valid out-pointer.
    let list = unsafe { ffi::rdma_get_devices(&mut n) };
    if list.is_null() {
        let e = std::io::Error::last_os_error();
        return Err(OpenError::NoDevice {
            detail: format!("rdma_get_devices failed: {e}"),
        });
    }
    let ctxs = (0..n.max(0) as usize)
        // SAFETY: the list holds n contexts.
        .map(|i| unsafe { *list.add(i) })
        .filter(|c| !c.is_null())
        .collect::<Vec<_>>();
    if ctxs.is_empty() {
        // SAFETY: list came from rdma_get_devices.
        unsafe { ffi::rdma_free_devices(list) };
        return Err(OpenError::NoDevice {
            detail: "rdma_get_devices found none".into(),
        });
    }
    Ok((list, ctxs))
}

/// Every device rdma-core sees.
pub(crate) fn devices() -> Result<Vec<DeviceInfo>, OpenError> {
    let (list, ctxs) = device_list()?;
    let out = ctxs
        .iter()
        .filter_map(|c| describe(*c).ok())
        .collect::<Vec<_>>();
    // SAFETY: list came from rdma_get_devices; nothing refers to it now.
    unsafe { ffi::rdma_free_devices(list) };
    Ok(out)
}

pub(crate) fn open(cfg: &DeviceConfig) -> Result<Arc<DevInner>, OpenError> {
    let (list, ctxs) = device_list()?;
    let mut described = Vec::new();
    let mut errors = Vec::new();
    for c in &ctxs {
        match describe(*c) {
            Ok(i) => described.push((*c, i)),
            Err(e) => errors.push(e),
        }
    }
    let pick = match &cfg.name {
        Some(name) => described.iter().position(|(_, i)| &i.name == name),
        None => described
            .iter()
            .position(|(_, i)| i.ports.iter().any(|p| p.active))
            .or(if described.is_empty() { None } else { Some(0) }),
    };
    let Some(pick) = pick else {
        let available = described.iter().map(|(_, i)| i.name.clone()).collect();
        // SAFETY: list came from rdma_get_devices; nothing refers to it.
        unsafe { ffi::rdma_free_devices(list) };
        return Err(match &cfg.name {
            Some(name) => OpenError::NotFound {
                name: name.clone(),
                available,
            },
            None => OpenError::NoDevice {
                detail: if errors.is_empty() {
                    "no usable device".into()
                } else {
                    errors.join("; ")
                },
            },
        });
    };
    let (ctx, info) = described.swap_remove(pick);
    if cfg.name.is_none() && ctxs.len() > 1 {
        tracing::info!(device = %info.name, count = ctxs.len(), "several RDMA devices; using the first with an active port (choose with --device)");
    }
    tracing::debug!(?info, "opened RDMA device");
    Ok(Arc::new(DevInner {
        list,
        ctx,
        info,
        polling: cfg.polling,
    }))
}

/// The process's locked-memory limit, or None if unlimited.
pub(crate) fn memlock_limit() -> Option<u64> {
    // SAFETY: rlimit is plain data; getrlimit writes it.
    let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: r is a valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } != 0 {
        return None;
    }
    (r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur)
}

// ------------------------------------------------------------------ PD

pub(crate) struct PdInner {
    pub(crate) pd: *mut ffi::ibv_pd,
    pub(crate) dev: Arc<DevInner>,
    /// Local key -> (address, length) of live regions, to check gather
    /// elements the provider copies itself.
    regions: Mutex<HashMap<u32, (u64, usize)>>,
}

// SAFETY: ibv_pd may be used from any thread; the table is behind a mutex.
unsafe impl Send for PdInner {}
// SAFETY: as above.
unsafe impl Sync for PdInner {}

impl Drop for PdInner {
    fn drop(&mut self) {
        // SAFETY: pd came from ibv_alloc_pd; every region and queue pair
        // holds an Arc to this, so none is left.
        let rc = unsafe { ffi::ibv_dealloc_pd(self.pd) };
        if rc != 0 {
            tracing::warn!(rc, "ibv_dealloc_pd failed");
        }
    }
}

impl PdInner {
    /// Whether `[addr, addr+len)` lies in the live region with local key
    /// `lkey`.
    pub(crate) fn check(&self, lkey: u32, addr: u64, len: u32) -> bool {
        let t = lock(&self.regions);
        t.get(&lkey)
            .is_some_and(|&(base, n)| addr >= base && addr - base + u64::from(len) <= n as u64)
    }

    /// Registers `len` octets at `addr` with raw access bits; the
    /// provider's own buffers use this too.
    pub(crate) fn reg_raw(
        &self,
        addr: *mut u8,
        len: usize,
        access: Access,
    ) -> Result<(*mut ffi::ibv_mr, u32, u32), RegisterError> {
        let (mut lkey, mut rkey) = (0u32, 0u32);
        // SAFETY: the caller owns `len` octets at `addr` for as long as
        // the registration lives (it deregisters before freeing them).
        let mr = unsafe {
            ffi::rs_reg_mr(
                self.pd,
                addr.cast(),
                len,
                // The rights only: SCRATCH is for software placement.
                access.rights().bits(),
                &mut lkey,
                &mut rkey,
            )
        };
        if mr.is_null() {
            let errno = ffi::errno();
            let limit = memlock_limit();
            if is_memlock_failure(errno, limit) {
                return Err(RegisterError::MemlockLimit {
                    len,
                    limit: memlock_text(limit),
                });
            }
            return Err(RegisterError::Device {
                len,
                call: "ibv_reg_mr",
                errno: Errno(errno),
            });
        }
        Ok((mr, lkey, rkey))
    }
}

/// A protection domain of an rdma-core device.
#[derive(Clone)]
pub struct Pd {
    pub(crate) inner: Arc<PdInner>,
}

impl std::fmt::Debug for Pd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pd")
            .field("device", &self.inner.dev.info.name)
            .finish()
    }
}

pub(crate) fn alloc_pd(dev: &Arc<DevInner>) -> Result<Pd, ResourceError> {
    // SAFETY: ctx is the live context of the device.
    let pd = unsafe { ffi::ibv_alloc_pd(dev.ctx) };
    if pd.is_null() {
        return Err(ResourceError::Device {
            what: "a protection domain",
            errno: Errno(ffi::errno()),
        });
    }
    Ok(Pd {
        inner: Arc::new(PdInner {
            pd,
            dev: dev.clone(),
            regions: Mutex::new(HashMap::new()),
        }),
    })
}

impl Pd {
    fn register(&self, mut buf: MrBuffer, access: Access) -> Result<Mr, RegisterError> {
        let len = buf.len();
        let limits = self.inner.dev.limits();
        if len as u64 > limits.max_mr_size {
            return Err(RegisterError::TooLarge {
                len,
                max: limits.max_mr_size as usize,
            });
        }
        let addr: *mut u8 = match &mut buf {
            MrBuffer::Shared(b) => b.as_ptr().cast_mut(),
            MrBuffer::Owned(b) => b.as_mut_ptr(),
        };
        let device_access = self.inner.dev.transport().region_access(access);
        let (mr, lkey, rkey) = if len == 0 {
            // Nothing to pin; zero-length work requests need no key.
            (std::ptr::null_mut(), 0, 0)
        } else {
            self.inner.reg_raw(addr, len, device_access)?
        };
        if !mr.is_null() {
            lock(&self.inner.regions).insert(lkey, (addr as u64, len));
        }
        Ok(Mr {
            mr,
            lkey,
            rkey,
            addr: addr as u64,
            len,
            access,
            buf: Some(buf),
            pd: self.inner.clone(),
        })
    }
}

impl ProtectionDomain for Pd {
    type Mr = Mr;

    fn register_bytes(&self, buf: Bytes, access: Access) -> Result<Mr, RegisterError> {
        if access.is_writable() {
            return Err(RegisterError::ReadOnlyBuffer {
                access: format!("{access:?}"),
            });
        }
        self.register(MrBuffer::Shared(buf), access)
    }

    fn register_mut(&self, buf: BytesMut, access: Access) -> Result<Mr, RegisterError> {
        self.register(MrBuffer::Owned(buf), access)
    }
}

/// A memory region registered with `ibv_reg_mr`. Its address is the
/// buffer's virtual address, as rdma-core peers expect.
pub struct Mr {
    mr: *mut ffi::ibv_mr,
    lkey: u32,
    rkey: u32,
    addr: u64,
    len: usize,
    access: Access,
    buf: Option<MrBuffer>,
    pd: Arc<PdInner>,
}

// SAFETY: the registration may be used and released from any thread; the
// buffer is owned and not touched by us while registered.
unsafe impl Send for Mr {}
// SAFETY: no interior mutability; the region is read only through keys.
unsafe impl Sync for Mr {}

impl std::fmt::Debug for Mr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mr")
            .field("lkey", &format_args!("{:#010x}", self.lkey))
            .field("rkey", &format_args!("{:#010x}", self.rkey))
            .field("addr", &format_args!("{:#x}", self.addr))
            .field("len", &self.len)
            .field("access", &self.access)
            .finish()
    }
}

impl Mr {
    /// Deregisters; true if the device let go of the memory.
    fn release(&mut self) -> bool {
        if self.mr.is_null() {
            return true;
        }
        lock(&self.pd.regions).remove(&self.lkey);
        // SAFETY: mr came from ibv_reg_mr and is deregistered once.
        let rc = unsafe { ffi::ibv_dereg_mr(self.mr) };
        self.mr = std::ptr::null_mut();
        if rc != 0 {
            tracing::error!(
                rc,
                lkey = self.lkey,
                "ibv_dereg_mr failed; the buffer is leaked"
            );
            return false;
        }
        true
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        if !self.release() {
            // The device may still write into it: never free it.
            std::mem::forget(self.buf.take());
        }
    }
}

impl MemoryRegion for Mr {
    fn lkey(&self) -> u32 {
        self.lkey
    }
    fn rkey(&self) -> u32 {
        self.rkey
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
    fn deregister(mut self) -> Result<MrBuffer, DeregisterError> {
        if !self.release() {
            std::mem::forget(self.buf.take());
            return Err(DeregisterError::NotRegistered { key: self.lkey });
        }
        self.buf
            .take()
            .ok_or(DeregisterError::NotRegistered { key: self.lkey })
    }
}

/// A registered buffer of the provider's own (receive slots, bounce
/// buffers).
pub(crate) struct OwnBuf {
    pub(crate) buf: BytesMut,
    mr: *mut ffi::ibv_mr,
    pub(crate) lkey: u32,
    pd: Arc<PdInner>,
}

// SAFETY: as for Mr.
unsafe impl Send for OwnBuf {}
// SAFETY: as for Mr.
unsafe impl Sync for OwnBuf {}

impl OwnBuf {
    pub(crate) fn new(
        pd: &Arc<PdInner>,
        len: usize,
        access: Access,
    ) -> Result<OwnBuf, RegisterError> {
        let mut buf = BytesMut::zeroed(len.max(1));
        let (mr, lkey, _) = pd.reg_raw(buf.as_mut_ptr(), buf.len(), access)?;
        lock(&pd.regions).insert(lkey, (buf.as_ptr() as u64, buf.len()));
        Ok(OwnBuf {
            buf,
            mr,
            lkey,
            pd: pd.clone(),
        })
    }

    pub(crate) fn addr(&self) -> u64 {
        self.buf.as_ptr() as u64
    }
}

impl Drop for OwnBuf {
    fn drop(&mut self) {
        lock(&self.pd.regions).remove(&self.lkey);
        // SAFETY: mr came from ibv_reg_mr and is deregistered once.
        if unsafe { ffi::ibv_dereg_mr(self.mr) } != 0 {
            tracing::error!("ibv_dereg_mr of a provider buffer failed; leaking it");
            std::mem::forget(std::mem::take(&mut self.buf));
        }
    }
}

/// A `Bytes` registered for the life of one work request.
pub(crate) struct TempReg {
    _bytes: Bytes,
    mr: *mut ffi::ibv_mr,
}

// SAFETY: as for Mr.
unsafe impl Send for TempReg {}
// SAFETY: as for Mr.
unsafe impl Sync for TempReg {}

impl TempReg {
    pub(crate) fn new(pd: &Arc<PdInner>, bytes: Bytes) -> Result<(TempReg, u32), RegisterError> {
        let (mr, lkey, _) =
            pd.reg_raw(bytes.as_ptr().cast_mut(), bytes.len(), Access::LOCAL_READ)?;
        Ok((TempReg { _bytes: bytes, mr }, lkey))
    }
}

impl Drop for TempReg {
    fn drop(&mut self) {
        // SAFETY: mr came from ibv_reg_mr and is deregistered once.
        if unsafe { ffi::ibv_dereg_mr(self.mr) } != 0 {
            tracing::error!("ibv_dereg_mr of a send buffer failed; leaking it");
            std::mem::forget(std::mem::take(&mut self._bytes));
        }
    }
}
