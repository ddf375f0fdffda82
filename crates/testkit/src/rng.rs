//! A small reproducible pseudo-random generator for bounded fuzz runs and
//! randomized tests (test support only): xorshift64, the same sequence on
//! every machine, no dependency. Not for keys or anything secret.

/// xorshift64 (shifts 13, 7, 17).
///
/// ```
/// use rpcrdma_testkit::rng::XorShift;
/// let mut a = XorShift::new(42);
/// let mut b = XorShift::new(42);
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(a.below(10) < 10);
/// ```
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator starting from `seed`.
    ///
    /// # Panics
    /// If `seed` is 0 (xorshift would produce only zeros).
    pub fn new(seed: u64) -> Self {
        assert_ne!(seed, 0, "an xorshift seed must not be 0");
        XorShift(seed)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// The next octet.
    pub fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }
}
