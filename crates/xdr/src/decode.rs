//! A bounded, zero-copy cursor for decoding XDR.

use bytes::Bytes;

use crate::align::round_up;
use crate::error::XdrError;
use crate::payload::{DdpItem, Payload};

/// A cursor over XDR-encoded bytes.
///
/// Every read checks the bytes it needs against what is left first; opaque
/// lengths and array counts are checked against a caller-supplied maximum
/// and against the remaining input before anything is sliced or allocated.
/// Reads return borrowed slices of the input (`&'a [u8]`); when the input is
/// a [`Bytes`], [`Decoder::get_opaque_bytes`] returns reference-counted
/// sub-slices instead of copies.
///
/// A decoder may also carry directly placed data items (RFC 8166 §4.4,
/// [`Decoder::with_ddp`]). Inline reads then stop at the place where the
/// next positioned item belongs, and only [`Decoder::get_opaque_ddp`] may
/// consume an item: a peer cannot smuggle a chunk into a place the Upper
/// Layer did not make DDP-eligible.
///
/// ```
/// use rpcrdma_xdr::{Decoder, XdrError};
///
/// // A length word claiming 1000 bytes when only 4 follow.
/// let bytes = [0, 0, 3, 232, 1, 2, 3, 4];
/// let mut dec = Decoder::new(&bytes);
/// assert!(matches!(dec.get_opaque(4096), Err(XdrError::UnexpectedEnd { .. })));
/// ```
#[derive(Debug, Clone)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Reads may not go past this offset: the inline offset of the next
    /// positioned DDP item, or `buf.len()`.
    limit: usize,
    backing: Option<&'a Bytes>,
    ddp: &'a [DdpItem],
    /// Index of the next unconsumed DDP item.
    next_item: usize,
    /// Payload-stream bytes of items consumed so far (padded lengths).
    placed: usize,
}

impl<'a> Decoder<'a> {
    /// A decoder over a borrowed slice.
    pub fn new(buf: &'a [u8]) -> Self {
        Self {
            buf,
            pos: 0,
            limit: buf.len(),
            backing: None,
            ddp: &[],
            next_item: 0,
            placed: 0,
        }
    }

    /// A decoder over a [`Bytes`], so opaque data can be returned without copying.
    pub fn from_bytes(buf: &'a Bytes) -> Self {
        let mut d = Self::new(buf.as_ref());
        d.backing = Some(buf);
        d
    }

    /// A decoder over a received [`Payload`]: the inline (reduced) stream
    /// plus the data items that arrived in chunks.
    pub fn with_ddp(payload: &'a Payload) -> Self {
        let mut d = Self::from_bytes(payload.inline());
        d.ddp = payload.items();
        d.update_limit();
        d
    }

    //= rfc5666bis-04#section-8.1.1
    //# In the first case, a responder MUST NOT process the Call message.
    //= rfc5666bis-04#section-8.1.1
    //# Both types of violations MUST be reported as described in Section
    //# 5.5.2.
    //= rfc5666bis-04#section-5.5.2
    //# A responder MAY also report the presence of a non-DDP-eligible data
    //# item in a Read or Write chunk using RPC_GARBAGEARGS.
    fn update_limit(&mut self) {
        self.limit = match self.ddp.get(self.next_item) {
            Some(DdpItem {
                inline_offset: Some(off),
                ..
            }) => (*off).min(self.buf.len()),
            _ => self.buf.len(),
        };
    }

    /// Offset of the cursor in the inline input.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Offset of the cursor in the reconstructed Payload stream (inline
    /// bytes plus the padded lengths of the DDP items consumed so far).
    pub fn stream_position(&self) -> usize {
        self.pos + self.placed
    }

    /// Inline bytes left before the end of input (or the next positioned DDP item).
    pub fn remaining(&self) -> usize {
        self.limit.saturating_sub(self.pos)
    }

    /// Whether every inline byte has been consumed.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// The unread inline bytes, without consuming them.
    pub fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }

    /// Consumes and returns the unread inline bytes as [`Bytes`] (zero-copy
    /// when the decoder is backed by `Bytes`).
    pub fn take_rest_bytes(&mut self) -> Bytes {
        let rest = self.rest();
        self.pos = self.buf.len();
        self.to_bytes(rest)
    }

    fn check(&self, needed: usize) -> Result<(), XdrError> {
        let remaining = self.remaining();
        if needed > remaining {
            if self.limit < self.buf.len() && self.pos + needed > self.limit {
                return Err(XdrError::DdpMisplaced {
                    position: self.limit + self.placed,
                });
            }
            return Err(XdrError::UnexpectedEnd {
                offset: self.pos,
                needed,
                remaining,
            });
        }
        Ok(())
    }

    /// Takes exactly `n` bytes (no padding).
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], XdrError> {
        self.check(n)?;
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Skips `n` bytes.
    pub fn skip(&mut self, n: usize) -> Result<(), XdrError> {
        self.take(n).map(|_| ())
    }

    #[inline]
    fn word(&mut self) -> Result<[u8; 4], XdrError> {
        let s = self.take(4)?;
        Ok([s[0], s[1], s[2], s[3]])
    }

    /// Reads an unsigned 32-bit integer.
    #[inline]
    pub fn get_u32(&mut self) -> Result<u32, XdrError> {
        self.word().map(u32::from_be_bytes)
    }

    /// Reads `N` unsigned 32-bit integers at once (one bounds check).
    ///
    /// ```
    /// let mut d = rpcrdma_xdr::Decoder::new(&[0, 0, 0, 1, 0, 0, 0, 2, 9]);
    /// assert_eq!(d.get_u32s::<2>().unwrap(), [1, 2]);
    /// assert!(d.get_u32s::<1>().is_err());
    /// ```
    #[inline]
    pub fn get_u32s<const N: usize>(&mut self) -> Result<[u32; N], XdrError> {
        let s = self.take(4 * N)?;
        let mut out = [0u32; N];
        for (o, w) in out.iter_mut().zip(s.chunks_exact(4)) {
            *o = u32::from_be_bytes([w[0], w[1], w[2], w[3]]);
        }
        Ok(out)
    }

    /// Reads a signed 32-bit integer.
    #[inline]
    pub fn get_i32(&mut self) -> Result<i32, XdrError> {
        self.word().map(i32::from_be_bytes)
    }

    /// Reads the next 32-bit word without consuming it.
    pub fn peek_u32(&self) -> Result<u32, XdrError> {
        self.clone().get_u32()
    }

    /// Reads an unsigned 64-bit hyper integer.
    pub fn get_u64(&mut self) -> Result<u64, XdrError> {
        let s = self.take(8)?;
        let mut b = [0u8; 8];
        b.copy_from_slice(s);
        Ok(u64::from_be_bytes(b))
    }

    /// Reads a signed 64-bit hyper integer.
    pub fn get_i64(&mut self) -> Result<i64, XdrError> {
        self.get_u64().map(|v| v as i64)
    }

    /// Reads an XDR boolean; anything but 0 or 1 is an error.
    pub fn get_bool(&mut self) -> Result<bool, XdrError> {
        let offset = self.pos;
        match self.get_u32()? {
            0 => Ok(false),
            1 => Ok(true),
            value => Err(XdrError::BadBool { offset, value }),
        }
    }

    /// Reads `len` bytes of fixed-length opaque data and skips its padding.
    pub fn get_fixed_opaque(&mut self, len: usize) -> Result<&'a [u8], XdrError> {
        self.check(round_up(len))?;
        let s = &self.buf[self.pos..self.pos + len];
        self.pos += round_up(len);
        Ok(s)
    }

    /// Reads a length word and checks it against `max`.
    pub fn get_len(&mut self, max: u32) -> Result<u32, XdrError> {
        let offset = self.pos;
        let len = self.get_u32()?;
        if len > max {
            return Err(XdrError::TooLong { offset, len, max });
        }
        Ok(len)
    }

    /// Reads variable-length opaque data of at most `max` bytes.
    pub fn get_opaque(&mut self, max: u32) -> Result<&'a [u8], XdrError> {
        let len = self.get_len(max)?;
        self.get_fixed_opaque(len as usize)
    }

    /// Like [`Decoder::get_opaque`], returning [`Bytes`] (zero-copy when backed by `Bytes`).
    pub fn get_opaque_bytes(&mut self, max: u32) -> Result<Bytes, XdrError> {
        let s = self.get_opaque(max)?;
        Ok(self.to_bytes(s))
    }

    /// Reads an XDR string of at most `max` bytes that must be UTF-8.
    pub fn get_string(&mut self, max: u32) -> Result<&'a str, XdrError> {
        let offset = self.pos;
        let s = self.get_opaque(max)?;
        std::str::from_utf8(s).map_err(|_| XdrError::BadUtf8 { offset })
    }

    /// Reads an array count of at most `max` elements, each of which takes
    /// at least `min_elem_len` bytes on the wire.
    ///
    /// The count is also checked against the remaining input, so a caller may
    /// safely `Vec::with_capacity(count)` afterwards.
    pub fn get_count(&mut self, max: u32, min_elem_len: usize) -> Result<u32, XdrError> {
        let offset = self.pos;
        let count = self.get_len(max)?;
        let needed = (count as usize).saturating_mul(min_elem_len);
        if needed > self.remaining() {
            return Err(XdrError::UnexpectedEnd {
                offset,
                needed,
                remaining: self.remaining(),
            });
        }
        Ok(count)
    }

    /// Reads a variable-length array of at most `max` elements.
    ///
    /// Each element is assumed to take at least four bytes on the wire.
    pub fn get_array<T: Decode<'a>>(&mut self, max: u32) -> Result<Vec<T>, XdrError> {
        let n = self.get_count(max, 4)?;
        let mut v = Vec::with_capacity(n as usize);
        for _ in 0..n {
            v.push(T::decode(self)?);
        }
        Ok(v)
    }

    /// Reads XDR optional-data (`*T`).
    pub fn get_optional<T: Decode<'a>>(&mut self) -> Result<Option<T>, XdrError> {
        if self.get_bool()? {
            T::decode(self).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Decodes any [`Decode`] value.
    #[inline]
    pub fn get<T: Decode<'a>>(&mut self) -> Result<T, XdrError> {
        T::decode(self)
    }

    /// A decoder over the next `len` inline bytes; this cursor skips them.
    pub fn sub(&mut self, len: usize) -> Result<Decoder<'a>, XdrError> {
        let s = self.take(len)?;
        let mut d = Decoder::new(s);
        d.backing = self.backing;
        Ok(d)
    }

    /// Fails unless every inline byte and every DDP item has been consumed.
    pub fn expect_end(&self) -> Result<(), XdrError> {
        if self.next_item < self.ddp.len() {
            return Err(XdrError::DdpUnconsumed {
                count: self.ddp.len() - self.next_item,
            });
        }
        if self.pos < self.buf.len() {
            return Err(XdrError::TrailingBytes {
                offset: self.pos,
                count: self.buf.len() - self.pos,
            });
        }
        Ok(())
    }

    /// Reads a DDP-eligible variable-length opaque item of at most `max` bytes.
    ///
    /// The length word is always inline (RFC 8166 §4.4.4.1). The data is
    /// taken from a directly placed item when one belongs here — a
    /// positioned item (Read chunk) whose position is the current stream
    /// position, or the next unpositioned item (Write chunk) if it carries
    /// data — and from the inline stream otherwise. A chunk whose length
    /// differs from the length word is an error.
    pub fn get_opaque_ddp(&mut self, max: u32) -> Result<Bytes, XdrError> {
        let offset = self.pos;
        let len = self.get_len(max)?;
        if let Some(item) = self.ddp.get(self.next_item) {
            let here = match item.inline_offset {
                Some(off) => off == self.pos,
                // An unused Write chunk comes back with zero length: the
                // data (if any) is then inline.
                None => !item.data.is_empty() || len == 0,
            };
            if here {
                //= rfc5666bis-04#section-4.4.4.1
                //# Any byte count left in the Payload stream MUST match the
                //# sum of the lengths of the segments making up the chunk.
                if item.data.len() != len as usize {
                    return Err(XdrError::DdpLengthMismatch {
                        offset,
                        xdr: len,
                        chunk: item.data.len(),
                    });
                }
                let data = item.data.clone();
                self.placed += round_up(data.len());
                self.next_item += 1;
                self.update_limit();
                return Ok(data);
            }
        }
        let s = self.get_fixed_opaque(len as usize)?;
        Ok(self.to_bytes(s))
    }

    fn to_bytes(&self, s: &'a [u8]) -> Bytes {
        match self.backing {
            Some(b) if !s.is_empty() => b.slice_ref(s),
            _ => Bytes::copy_from_slice(s),
        }
    }
}

/// A type that can be decoded from XDR, possibly borrowing from the input.
pub trait Decode<'a>: Sized {
    /// Decodes one value, advancing the cursor past it.
    fn decode(dec: &mut Decoder<'a>) -> Result<Self, XdrError>;
}

impl Decode<'_> for u32 {
    fn decode(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        dec.get_u32()
    }
}

impl Decode<'_> for u64 {
    fn decode(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        dec.get_u64()
    }
}

impl Decode<'_> for bool {
    fn decode(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        dec.get_bool()
    }
}
