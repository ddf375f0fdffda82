//! MPA Framed PDUs (RFC 5044 §4): the framing of every DDP segment on the
//! TCP stream once the connection is set up (markers are never used).
//!
//! ```text
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          ULPDU_Length         |                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
//! ~            ULPDU (the DDP segment: header + payload)          ~
//! |                               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                               |  PAD (0-3 octets, zero)       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                     CRC (CRC32c, 4 octets)                    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! The pad makes ULPDU_Length + ULPDU + PAD a multiple of four. The CRC
//! covers ULPDU_Length, ULPDU and PAD. It is CRC32c (Castagnoli) and goes
//! on the wire **least significant octet first**, as Linux (`siw`, via the
//! crypto API's little-endian `crc32c` digest) and Wireshark expect. When CRC
//! was not negotiated the field is present and sent as zero, and ignored on
//! receipt.

use bytes::{BufMut, BytesMut};

/// Octets of the ULPDU_Length field.
pub const MPA_LEN_FIELD: usize = 2;
/// Octets of the CRC field.
pub const MPA_CRC_LEN: usize = 4;
/// The largest ULPDU an FPDU can carry (the 16-bit length field).
pub const MPA_MAX_ULPDU: usize = 0xffff;
/// Smallest allowed `max_ulpdu` of a connection (room for an untagged
/// header, a Read Request and some payload).
pub const MIN_MAX_ULPDU: usize = 64;

/// Number of zero octets between the ULPDU and the CRC.
///
/// ```
/// assert_eq!(rpcrdma_iwarp::fpdu::pad_len(18), 0); // 2 + 18 = 20
/// assert_eq!(rpcrdma_iwarp::fpdu::pad_len(14), 0);
/// assert_eq!(rpcrdma_iwarp::fpdu::pad_len(19), 3);
/// ```
pub const fn pad_len(ulpdu_len: usize) -> usize {
    (4 - (MPA_LEN_FIELD + ulpdu_len) % 4) % 4
}

/// Total octets of an FPDU carrying `ulpdu_len` octets of ULPDU.
pub const fn fpdu_len(ulpdu_len: usize) -> usize {
    MPA_LEN_FIELD + ulpdu_len + pad_len(ulpdu_len) + MPA_CRC_LEN
}

/// Computes the MPA CRC32c over consecutive pieces (length field, ULPDU
/// pieces, pad) without joining them.
pub fn crc32c_of(pieces: &[&[u8]]) -> u32 {
    pieces
        .iter()
        .fold(0u32, |crc, p| crc32c::crc32c_append(crc, p))
}

/// The CRC field as it goes on the wire (least significant octet first).
pub const fn crc_to_wire(crc: u32) -> [u8; 4] {
    crc.to_le_bytes()
}

/// The CRC value from the wire field.
pub const fn crc_from_wire(b: [u8; 4]) -> u32 {
    u32::from_le_bytes(b)
}

/// Appends one complete FPDU carrying the concatenation of `ulpdu` pieces.
///
/// Fails (appending nothing) if the ULPDU is longer than [`MPA_MAX_ULPDU`].
///
/// ```
/// use bytes::BytesMut;
/// use rpcrdma_iwarp::fpdu::{encode_fpdu, parse_fpdu};
/// let mut out = BytesMut::new();
/// encode_fpdu(&[b"hello"], true, &mut out).unwrap();
/// assert_eq!(out.len(), 2 + 5 + 1 + 4);
/// let (f, used) = parse_fpdu(&out, true).unwrap().unwrap();
/// assert_eq!((f.ulpdu, used), (&b"hello"[..], out.len()));
/// ```
pub fn encode_fpdu(ulpdu: &[&[u8]], crc: bool, out: &mut BytesMut) -> Result<(), FpduError> {
    let len: usize = ulpdu.iter().map(|p| p.len()).sum();
    if len > MPA_MAX_ULPDU {
        return Err(FpduError::UlpduTooLong { len });
    }
    let start = out.len();
    out.reserve(fpdu_len(len));
    out.put_u16(len as u16);
    for p in ulpdu {
        out.put_slice(p);
    }
    out.put_bytes(0, pad_len(len));
    let c = if crc {
        crc32c::crc32c(&out[start..])
    } else {
        0
    };
    out.put_slice(&crc_to_wire(c));
    Ok(())
}

/// One FPDU parsed from a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fpdu<'a> {
    /// The ULPDU (a DDP segment).
    pub ulpdu: &'a [u8],
    /// The CRC field as received (decoded from least-significant-first).
    pub crc: u32,
}

/// Why an FPDU was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FpduError {
    /// The CRC field does not match the CRC32c of the frame.
    #[error("MPA CRC mismatch: frame carries {received:#010x}, computed {computed:#010x}")]
    BadCrc {
        /// CRC from the wire.
        received: u32,
        /// CRC we computed.
        computed: u32,
    },
    /// An attempt to frame more than [`MPA_MAX_ULPDU`] octets.
    #[error("ULPDU of {len} octets does not fit one FPDU (at most 65535)")]
    UlpduTooLong {
        /// Requested length.
        len: usize,
    },
}

/// Parses one complete FPDU from the start of `buf`.
///
/// Returns `Ok(None)` if `buf` holds only part of it; otherwise the FPDU and
/// the number of octets it used. With `crc` the CRC is checked. (The
/// connection state machine does not use this function: it places payload
/// straight into registered memory. This is for captures, tests and tools.)
pub fn parse_fpdu(buf: &[u8], crc: bool) -> Result<Option<(Fpdu<'_>, usize)>, FpduError> {
    let Some(&[a, b]) = buf.get(..MPA_LEN_FIELD) else {
        return Ok(None);
    };
    let len = usize::from(u16::from_be_bytes([a, b]));
    let total = fpdu_len(len);
    let Some(frame) = buf.get(..total) else {
        return Ok(None);
    };
    let body_end = total - MPA_CRC_LEN;
    let (body, crc_field) = frame.split_at(body_end);
    let mut field = [0u8; 4];
    field.copy_from_slice(crc_field);
    let received = crc_from_wire(field);
    if crc {
        let computed = crc32c::crc32c(body);
        if computed != received {
            return Err(FpduError::BadCrc { received, computed });
        }
    }
    Ok(Some((
        Fpdu {
            ulpdu: &body[MPA_LEN_FIELD..MPA_LEN_FIELD + len],
            crc: received,
        },
        total,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_goes_little_endian() {
        // CRC32c("123456789") = 0xe3069283 (the standard check value).
        assert_eq!(crc32c_of(&[b"1234", b"56789"]), 0xe306_9283);
        assert_eq!(crc_to_wire(0xe306_9283), [0x83, 0x92, 0x06, 0xe3]);
    }

    #[test]
    fn bad_crc_detected() {
        let mut out = BytesMut::new();
        encode_fpdu(&[b"abcd"], true, &mut out).unwrap();
        let n = out.len();
        out[n - 1] ^= 1;
        assert!(matches!(
            parse_fpdu(&out, true),
            Err(FpduError::BadCrc { .. })
        ));
        // Without CRC the field is not looked at.
        assert!(parse_fpdu(&out, false).unwrap().is_some());
    }

    #[test]
    fn partial_and_too_long() {
        let mut out = BytesMut::new();
        encode_fpdu(&[b"abc"], false, &mut out).unwrap();
        for cut in 0..out.len() {
            assert_eq!(parse_fpdu(&out[..cut], false), Ok(None));
        }
        let big = vec![0u8; MPA_MAX_ULPDU + 1];
        assert_eq!(
            encode_fpdu(&[&big], false, &mut out),
            Err(FpduError::UlpduTooLong { len: 65536 })
        );
    }
}
