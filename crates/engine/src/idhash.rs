//! A hasher for integer keys this end chose itself (work request ids,
//! XIDs of our calls, tokens, memory keys from our generator): a
//! multiply-rotate mix instead of SipHash, several times cheaper per
//! lookup. It gives no protection against keys chosen to collide, so it is
//! used only for tables whose keys the peer cannot choose (a peer's key
//! may be looked up, never inserted).

use std::hash::{BuildHasherDefault, Hasher};

/// See the module documentation.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

/// A `HashMap` keyed by our own ids.
pub(crate) type IdMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_and_strided_keys_spread() {
        use std::hash::BuildHasher;
        let b = BuildHasherDefault::<IdHasher>::default();
        let mut low = std::collections::HashSet::new();
        for k in 0u64..64 {
            low.insert(b.hash_one(k) & 63);
            low.insert(b.hash_one(k << 32) & 63);
        }
        assert!(low.len() > 40, "{}", low.len());
        let mut m: IdMap<u32, u32> = IdMap::default();
        for k in 0..1000 {
            m.insert(k * 7919, k);
        }
        assert!((0..1000).all(|k| m.get(&(k * 7919)) == Some(&k)));
    }
}
