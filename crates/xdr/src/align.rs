//! XDR's four-octet alignment: the unit and the padding after opaque data.

/// Size in bytes of one XDR unit: every item is a multiple of this.
pub const UNIT: usize = 4;

/// Number of zero bytes XDR appends after `len` bytes of opaque data.
///
/// ```
/// assert_eq!(rpcrdma_xdr::pad_len(5), 3);
/// assert_eq!(rpcrdma_xdr::pad_len(8), 0);
/// ```
#[inline]
pub const fn pad_len(len: usize) -> usize {
    (UNIT - (len % UNIT)) % UNIT
}

/// `len` rounded up to the next multiple of four (the XDR "round-up").
///
/// Saturates instead of overflowing for lengths near `usize::MAX`.
///
/// ```
/// assert_eq!(rpcrdma_xdr::round_up(5), 8);
/// assert_eq!(rpcrdma_xdr::round_up(0), 0);
/// ```
#[inline]
pub const fn round_up(len: usize) -> usize {
    len.saturating_add(pad_len(len))
}
