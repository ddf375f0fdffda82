//! rping's wire format: the `rping_rdma_info` message, the ping pattern
//! and the checks on what comes back.

/// Size of `struct rping_rdma_info` on the wire: addr (8), rkey (4), size (4).
pub(crate) const INFO_LEN: usize = 16;
/// rping's smallest buffer (`RPING_MIN_BUFSIZE`: room for the longest
/// `rdma-ping-%d: ` prefix).
pub(crate) const MIN_SIZE: u32 = 26;
/// rping's largest buffer (`RPING_BUFSIZE - 1`).
pub(crate) const MAX_SIZE: u32 = 65_535;

/// `struct rping_rdma_info`: where a buffer is, big endian.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Info {
    pub(crate) addr: u64,
    pub(crate) rkey: u32,
    pub(crate) size: u32,
}

impl Info {
    pub(crate) fn encode(&self) -> [u8; INFO_LEN] {
        let mut b = [0u8; INFO_LEN];
        b[..8].copy_from_slice(&self.addr.to_be_bytes());
        b[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        b[12..].copy_from_slice(&self.size.to_be_bytes());
        b
    }

    /// Decodes exactly 16 octets; anything else is refused, as rping does
    /// ("Received bogus data").
    pub(crate) fn decode(b: &[u8]) -> Option<Info> {
        let b: &[u8; INFO_LEN] = b.try_into().ok()?;
        let [a0, a1, a2, a3, a4, a5, a6, a7, k0, k1, k2, k3, s0, s1, s2, s3] = *b;
        Some(Info {
            addr: u64::from_be_bytes([a0, a1, a2, a3, a4, a5, a6, a7]),
            rkey: u32::from_be_bytes([k0, k1, k2, k3]),
            size: u32::from_be_bytes([s0, s1, s2, s3]),
        })
    }
}

/// The data rping's client puts in its source buffer for ping number
/// `ping` (counted from 0): `rdma-ping-<ping>: `, then letters from
/// `'A' + ping % 58` cycling through `'A'..='z'`, and a NUL as last octet.
pub(crate) fn pattern(ping: u32, size: usize) -> Vec<u8> {
    let mut buf = vec![0u8; size];
    if size == 0 {
        return buf;
    }
    let prefix = format!("rdma-ping-{ping}: ");
    let n = prefix.len().min(size - 1);
    buf[..n].copy_from_slice(&prefix.as_bytes()[..n]);
    let mut c = b'A' + (ping % 58) as u8;
    for b in buf.iter_mut().skip(prefix.len()) {
        *b = c;
        c = if c >= b'z' { b'A' } else { c + 1 };
    }
    buf[size - 1] = 0;
    buf
}

/// The length rping's server writes back: up to and including the first
/// NUL (`strlen + 1`), or everything if there is none.
pub(crate) fn c_string_len(b: &[u8]) -> usize {
    b.iter().position(|&c| c == 0).map_or(b.len(), |p| p + 1)
}

/// `b` up to its first NUL, for printing.
pub(crate) fn c_string(b: &[u8]) -> String {
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..n]).into_owned()
}

/// Describes the first difference between `got` and `want`.
pub(crate) fn mismatch(got: &[u8], want: &[u8]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} octets, expected {}", got.len(), want.len()));
    }
    got.iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .map(|i| format!("octet {i} is {:#04x}, expected {:#04x}", got[i], want[i]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_is_rpings() {
        // What `rping -c -v -S 64` prints for its first ping.
        let p = pattern(0, 64);
        assert_eq!(
            &p[..],
            &b"rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr\0"[..]
        );
        assert_eq!(
            c_string(&p),
            "rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr"
        );
        // Each ping starts one letter later; after 'z' comes 'A'.
        assert!(pattern(1, 64).starts_with(b"rdma-ping-1: BCD"));
        let p = pattern(57, 40);
        assert!(p.starts_with(b"rdma-ping-57: zAB"), "{:?}", c_string(&p));
        assert!(pattern(58, 40).starts_with(b"rdma-ping-58: ABC"));
        // The letters wrap inside one buffer too.
        let p = pattern(0, 200);
        assert_eq!(&p[13 + 57..13 + 60], b"zAB");
        assert_eq!((p.len(), p[199]), (200, 0));
        // A buffer shorter than the prefix holds what snprintf leaves.
        assert_eq!(&pattern(3, 5)[..], b"rdma\0");
        assert!(pattern(3, 0).is_empty());
        assert_eq!(pattern(i32::MAX as u32, MIN_SIZE as usize).len(), 26);
    }

    #[test]
    fn info_layout_is_big_endian_16_octets() {
        let i = Info {
            addr: 0x0102_0304_0506_0708,
            rkey: 0x0a0b_0c0d,
            size: 64,
        };
        let b = i.encode();
        assert_eq!(b, [1, 2, 3, 4, 5, 6, 7, 8, 0xa, 0xb, 0xc, 0xd, 0, 0, 0, 64]);
        assert_eq!(Info::decode(&b), Some(i));
        assert_eq!(Info::decode(&b[..15]), None);
        assert_eq!(Info::decode(&[0u8; 17]), None);
        assert_eq!(Info::decode(&[]), None);
    }

    #[test]
    fn helpers() {
        assert_eq!(c_string_len(b"ab\0cd"), 3);
        assert_eq!(c_string_len(b"abc"), 3);
        assert_eq!(c_string_len(b""), 0);
        assert_eq!(mismatch(b"abc", b"abc"), None);
        assert_eq!(
            mismatch(b"abd", b"abc").as_deref(),
            Some("octet 2 is 0x64, expected 0x63")
        );
        assert_eq!(
            mismatch(b"ab", b"abc").as_deref(),
            Some("2 octets, expected 3")
        );
    }
}
