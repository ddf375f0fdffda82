//! Appending XDR items to a caller-owned buffer.

use bytes::{BufMut, Bytes, BytesMut};

use crate::align::pad_len;
use crate::payload::DdpItem;

/// Appends XDR items to a [`BytesMut`] owned by the caller.
///
/// Encoding cannot fail: the buffer grows as needed. Lengths of opaque data
/// and arrays must fit in a `u32`; passing more is API misuse and panics.
///
/// ```
/// use bytes::BytesMut;
/// use rpcrdma_xdr::Encoder;
///
/// let mut buf = BytesMut::new();
/// let mut enc = Encoder::new(&mut buf);
/// let slot = enc.reserve_u32();
/// enc.put_string("abc");
/// let n = enc.len() as u32;
/// enc.patch_u32(slot, n);
/// assert_eq!(&buf[..], &[0, 0, 0, 12, 0, 0, 0, 3, b'a', b'b', b'c', 0]);
/// ```
#[derive(Debug)]
pub struct Encoder<'b> {
    buf: &'b mut BytesMut,
    /// Where DDP-eligible items go when the caller builds a [`crate::Payload`].
    ddp: Option<&'b mut Vec<DdpItem>>,
}

/// A placeholder left by [`Encoder::reserve_u32`], filled in by
/// [`Encoder::patch_u32`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a reserved word must be patched"]
pub struct Slot(usize);

impl<'b> Encoder<'b> {
    /// An encoder appending to `buf` (existing content is kept).
    pub fn new(buf: &'b mut BytesMut) -> Self {
        Self { buf, ddp: None }
    }

    pub(crate) fn with_ddp(buf: &'b mut BytesMut, ddp: &'b mut Vec<DdpItem>) -> Self {
        Self {
            buf,
            ddp: Some(ddp),
        }
    }

    /// Whether DDP-eligible items are recorded out of line
    /// ([`Encoder::put_opaque_ddp`]) rather than encoded inline.
    pub fn records_ddp(&self) -> bool {
        self.ddp.is_some()
    }

    /// Number of bytes in the underlying buffer.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether the underlying buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The underlying buffer.
    pub fn buffer(&mut self) -> &mut BytesMut {
        self.buf
    }

    // Words go through `BytesMut::extend_from_slice` (inlined, a fixed-size
    // copy) rather than `BufMut::put_u32`, whose out-of-line `put_slice`
    // costs a call and a `memcpy` per word.

    /// Appends an unsigned 32-bit integer.
    #[inline]
    pub fn put_u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    /// Appends `N` (at most 16) unsigned 32-bit integers at once (one
    /// capacity check, one copy).
    ///
    /// ```
    /// let mut buf = bytes::BytesMut::new();
    /// rpcrdma_xdr::Encoder::new(&mut buf).put_u32s([1, 2]);
    /// assert_eq!(&buf[..], &[0, 0, 0, 1, 0, 0, 0, 2]);
    /// ```
    #[inline]
    pub fn put_u32s<const N: usize>(&mut self, words: [u32; N]) {
        const { assert!(N <= 16, "put_u32s takes at most 16 words") };
        let mut b = [0u8; 64];
        for (d, w) in b.chunks_exact_mut(4).zip(words) {
            d.copy_from_slice(&w.to_be_bytes());
        }
        self.buf.extend_from_slice(&b[..4 * N]);
    }

    /// Appends a signed 32-bit integer.
    #[inline]
    pub fn put_i32(&mut self, v: i32) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    /// Appends an unsigned 64-bit hyper integer.
    #[inline]
    pub fn put_u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    /// Appends a signed 64-bit hyper integer.
    #[inline]
    pub fn put_i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    /// Appends an XDR boolean (also the optional-data discriminator).
    #[inline]
    pub fn put_bool(&mut self, v: bool) {
        self.buf.extend_from_slice(&u32::from(v).to_be_bytes());
    }

    /// Appends fixed-length opaque data and its padding (no length word).
    pub fn put_fixed_opaque(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        self.buf.reserve(data.len() + 3);
        self.buf.extend_from_slice(data);
        self.put_pad(data.len());
    }

    /// Appends variable-length opaque data: length word, bytes, padding.
    ///
    /// # Panics
    /// If `data` is longer than `u32::MAX` bytes.
    pub fn put_opaque(&mut self, data: &[u8]) {
        self.put_u32(len_u32(data.len()));
        self.put_fixed_opaque(data);
    }

    /// Appends a DDP-eligible variable-length opaque item (RFC 8166 §4.4).
    ///
    /// The length word always goes inline. When this encoder builds a
    /// [`crate::Payload`] (see [`crate::PayloadEncoder`]) the data itself is
    /// recorded as a [`DdpItem`] without copying, so a transport can move it
    /// by RDMA or write it vectored; otherwise it is encoded inline exactly
    /// like [`Encoder::put_opaque`].
    ///
    /// # Panics
    /// If `data` is longer than `u32::MAX` bytes.
    pub fn put_opaque_ddp(&mut self, data: Bytes) {
        //= rfc5666bis-04#section-4.4.4.1
        //# If a chunk contains a counted array data type, the count of array
        //# elements MUST remain in the Payload stream, while the array
        //# elements MUST be moved to the chunk.
        self.put_u32(len_u32(data.len()));
        match &mut self.ddp {
            Some(items) if !data.is_empty() => items.push(DdpItem {
                inline_offset: Some(self.buf.len()),
                data,
            }),
            _ => self.put_fixed_opaque(&data),
        }
    }

    /// Appends an XDR string (same encoding as variable-length opaque).
    pub fn put_string(&mut self, s: &str) {
        self.put_opaque(s.as_bytes());
    }

    /// Appends the zero padding that follows `data_len` bytes of opaque data.
    #[inline]
    pub fn put_pad(&mut self, data_len: usize) {
        match pad_len(data_len) {
            0 => {}
            1 => self.buf.put_u8(0),
            2 => self.buf.put_u16(0),
            _ => {
                self.buf.put_u16(0);
                self.buf.put_u8(0);
            }
        }
    }

    /// Appends any [`Encode`] value.
    #[inline]
    pub fn put<T: Encode + ?Sized>(&mut self, v: &T) {
        v.encode(self);
    }

    /// Appends a variable-length array: count word, then each element.
    ///
    /// # Panics
    /// If there are more than `u32::MAX` elements.
    pub fn put_array<T: Encode>(&mut self, items: &[T]) {
        self.put_u32(len_u32(items.len()));
        for item in items {
            item.encode(self);
        }
    }

    /// Appends XDR optional-data (`*T`): a discriminator, then the value if present.
    pub fn put_optional<T: Encode>(&mut self, v: Option<&T>) {
        self.put_bool(v.is_some());
        if let Some(v) = v {
            v.encode(self);
        }
    }

    /// Appends a zero word to be overwritten later with [`Encoder::patch_u32`].
    pub fn reserve_u32(&mut self) -> Slot {
        let at = self.buf.len();
        self.put_u32(0);
        Slot(at)
    }

    /// Overwrites a word reserved with [`Encoder::reserve_u32`].
    pub fn patch_u32(&mut self, slot: Slot, v: u32) {
        self.buf[slot.0..slot.0 + 4].copy_from_slice(&v.to_be_bytes());
    }
}

pub(crate) fn len_u32(len: usize) -> u32 {
    u32::try_from(len).expect("XDR length exceeds u32::MAX (API misuse)")
}

/// A type with an XDR encoding.
///
/// Implementors write [`Encode::encode`] and [`Encode::encoded_len`]; the
/// buffer-level methods come with the trait.
///
/// ```
/// use rpcrdma_xdr::Encode;
/// let v: u64 = 0x0102_0304_0506_0708;
/// assert_eq!(v.encoded_len(), 8);
/// assert_eq!(&v.to_bytes()[..], &[1, 2, 3, 4, 5, 6, 7, 8]);
/// ```
pub trait Encode {
    /// Appends the XDR encoding of `self`.
    fn encode(&self, enc: &mut Encoder<'_>);

    /// The exact number of bytes [`Encode::encode`] appends, known before
    /// encoding (for size decisions such as inline thresholds).
    fn encoded_len(&self) -> usize;

    /// Appends the encoding to `buf` (existing content is kept).
    fn encode_into(&self, buf: &mut bytes::BytesMut) {
        self.encode(&mut Encoder::new(buf));
    }

    /// The encoding as a fresh buffer of exactly
    /// [`Encode::encoded_len`] bytes.
    fn to_bytes(&self) -> bytes::Bytes {
        let mut buf = bytes::BytesMut::with_capacity(self.encoded_len());
        self.encode_into(&mut buf);
        buf.freeze()
    }
}

impl Encode for u32 {
    fn encode(&self, enc: &mut Encoder<'_>) {
        enc.put_u32(*self);
    }
    fn encoded_len(&self) -> usize {
        4
    }
}

impl Encode for u64 {
    fn encode(&self, enc: &mut Encoder<'_>) {
        enc.put_u64(*self);
    }
    fn encoded_len(&self) -> usize {
        8
    }
}

impl Encode for bool {
    fn encode(&self, enc: &mut Encoder<'_>) {
        enc.put_bool(*self);
    }
    fn encoded_len(&self) -> usize {
        4
    }
}
