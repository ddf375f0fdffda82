//! Reads and writes through a shared mapping of the file.

use std::fs::File;
use std::io;

use rustix::mm::{self, MapFlags, MsyncFlags, ProtFlags};

/// A shared mapping of the first `len` bytes of a file, unmapped on
/// drop.
struct Map {
    ptr: *mut std::ffi::c_void,
    len: usize,
}

impl Map {
    fn new(f: &File, len: usize, write: bool) -> io::Result<Map> {
        let prot = if write {
            ProtFlags::READ | ProtFlags::WRITE
        } else {
            ProtFlags::READ
        };
        // SAFETY: a new mapping at an address the kernel picks; it
        // aliases no Rust object. The file is not truncated while the
        // mapping lives (the worker is one thread and drops it before
        // its next operation), so every byte of it stays backed.
        let ptr = unsafe { mm::mmap(std::ptr::null_mut(), len, prot, MapFlags::SHARED, f, 0)? };
        Ok(Map { ptr, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes until `self` drops.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` maps `len` writable bytes (made with WRITE)
        // until `self` drops; `&mut self` makes this the only view.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<u8>(), self.len) }
    }

    fn sync(&self) -> io::Result<()> {
        // SAFETY: the range is exactly this live mapping.
        unsafe { mm::msync(self.ptr, self.len, MsyncFlags::SYNC)? };
        Ok(())
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once; no slice
        // of it outlives `self`.
        let _ = unsafe { mm::munmap(self.ptr, self.len) };
    }
}

/// The first `len` bytes of `f`, read through a mapping.
pub(super) fn read(f: &File, len: usize) -> io::Result<Vec<u8>> {
    Ok(Map::new(f, len, false)?.bytes().to_vec())
}

/// Writes `data` at `off` through a mapping of the first `len` bytes
/// (`off + data.len() <= len`), then `msync`s if `sync`.
pub(super) fn write(f: &File, len: usize, off: usize, data: &[u8], sync: bool) -> io::Result<()> {
    let mut m = Map::new(f, len, true)?;
    m.bytes_mut()[off..off + data.len()].copy_from_slice(data);
    if sync {
        m.sync()?;
    }
    Ok(())
}
