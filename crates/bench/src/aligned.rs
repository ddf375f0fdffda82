//! Page-aligned receive buffers for the raw TCP baselines.
//!
//! The kernel copies a socket's data to user space with `rep movsb` on
//! CPUs that have fast short `rep movsb` (FSRM). On the AMD EPYC of the
//! machines these benches run on, that copy runs about ten times slower
//! when the destination lies 1 to 31 octets past the source modulo 4096
//! (the store of each line falsely aliases the load of the next). A
//! `vec![0u8; 1 << 20]` is served by `mmap` and starts 16 octets into a
//! page, and a stream whose data the sending thread put at the start of a
//! fresh page fragment lands exactly there: the raw TCP stream of `rpcrdma
//! bench loop` ran at 0.6 of its speed that way, every run
//! (`docs/performance.md`, "The raw stream's buffer, aligned"). A
//! baseline that is slow by the luck of an allocator flatters what it is
//! compared with, so the raw streams read into buffers that start on a
//! page, as a careful program would.

/// The page size the buffers are aligned to.
const PAGE: usize = 4096;

/// A zeroed buffer of a fixed length that starts on a page boundary.
///
/// No `unsafe`: it over-allocates by a page and hands out the aligned
/// part.
pub(crate) struct PageAligned {
    v: Vec<u8>,
    off: usize,
    len: usize,
}

impl PageAligned {
    /// A zeroed buffer of `len` octets starting on a page boundary.
    pub(crate) fn zeroed(len: usize) -> Self {
        let v = vec![0u8; len + PAGE];
        let off = (PAGE - v.as_ptr() as usize % PAGE) % PAGE;
        Self { v, off, len }
    }

    /// The buffer.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.v[self.off..self.off + self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_aligned_buffer_starts_on_a_page_and_has_its_length() {
        for len in [1, 4095, 4096, 1 << 20] {
            let mut b = PageAligned::zeroed(len);
            let s = b.as_mut_slice();
            assert_eq!(s.len(), len);
            assert_eq!(s.as_ptr() as usize % PAGE, 0, "len {len}");
            assert!(s.iter().all(|&x| x == 0));
        }
    }
}
