//! The data READ returns and the client checks, and the checksum.

use bytes::{Bytes, BytesMut};

/// The deterministic data READ returns for `seed`: byte `i` is byte
/// `i % 8` (big-endian) of `splitmix64(seed + i / 8)`.
///
/// ```
/// let a = rpcrdma_demoprog::pattern(1, 20);
/// assert_eq!(a.len(), 20);
/// assert_eq!(&a[..12], &rpcrdma_demoprog::pattern(1, 12)[..]);
/// assert_ne!(a, rpcrdma_demoprog::pattern(2, 20));
/// ```
pub fn pattern(seed: u64, len: usize) -> Bytes {
    let mut b = BytesMut::with_capacity(len + 8);
    let mut i = 0u64;
    while b.len() < len {
        b.extend_from_slice(&splitmix64(seed.wrapping_add(i)).to_be_bytes());
        i += 1;
    }
    b.truncate(len);
    b.freeze()
}

/// The offset of the first byte of `data` that differs from
/// [`pattern`]`(seed, data.len())`, if any.
pub fn pattern_mismatch(seed: u64, data: &[u8]) -> Option<usize> {
    data.chunks(8).enumerate().find_map(|(i, chunk)| {
        let want = splitmix64(seed.wrapping_add(i as u64)).to_be_bytes();
        chunk
            .iter()
            .zip(want.iter())
            .position(|(a, b)| a != b)
            .map(|p| i * 8 + p)
    })
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// crc32c, the demo program's checksum.
pub fn checksum(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}
