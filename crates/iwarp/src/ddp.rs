//! DDP segment headers (RFC 5041 §4) with the RDMAP control octet
//! (RFC 5040 §4.1) they carry.
//!
//! ```text
//! Tagged (14 octets):
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |T|L| Resrv |DV |RV |R| Opcode  |   (MPA ULPDU_Length precedes)
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                              STag                             |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                          Tagged Offset (64 bits)              |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! Untagged (18 octets): control, then
//! | RDMAP word (Invalidate STag for Send with Invalidate, else 0) |
//! |                         Queue Number                          |
//! |                  Message Sequence Number                      |
//! |                       Message Offset                          |
//! ```
//!
//! [`DdpHeader::parse`] keeps every bit (versions, reserved bits, unknown
//! opcodes) so it round-trips; the connection state machine decides what
//! is acceptable.

use bytes::BufMut;

use crate::rdmap::Opcode;

/// Octets of a tagged DDP/RDMAP header (without the MPA length field).
pub const TAGGED_HEADER_LEN: usize = 14;
/// Octets of an untagged DDP/RDMAP header.
pub const UNTAGGED_HEADER_LEN: usize = 18;
/// The DDP version this implementation speaks (RFC 5041).
pub const DDP_VERSION: u8 = 1;
/// The RDMAP version this implementation speaks (RFC 5040).
pub const RDMAP_VERSION: u8 = 1;

/// Byte ranges of the header fields (offsets within the ULPDU).
pub mod field {
    use core::ops::Range;
    /// DDP control octet: T, L, reserved, DV.
    pub const DDP_CONTROL: usize = 0;
    /// RDMAP control octet: RV, reserved, opcode.
    pub const RDMAP_CONTROL: usize = 1;
    /// Tagged: STag.
    pub const STAG: Range<usize> = 2..6;
    /// Tagged: Tagged Offset.
    pub const TO: Range<usize> = 6..14;
    /// Untagged: the 32 bits RDMAP uses (Invalidate STag) or reserves.
    pub const RDMAP_WORD: Range<usize> = 2..6;
    /// Untagged: Queue Number.
    pub const QN: Range<usize> = 6..10;
    /// Untagged: Message Sequence Number.
    pub const MSN: Range<usize> = 10..14;
    /// Untagged: Message Offset.
    pub const MO: Range<usize> = 14..18;
}

/// The two control octets shared by tagged and untagged headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Control {
    /// T: tagged buffer model.
    pub tagged: bool,
    /// L: last segment of the DDP message.
    pub last: bool,
    /// DDP reserved bits (4 bits; sent as zero).
    pub ddp_reserved: u8,
    /// DV: DDP version (2 bits).
    pub ddp_version: u8,
    /// RV: RDMAP version (2 bits).
    pub rdmap_version: u8,
    /// RDMAP reserved bits (2 bits; sent as zero).
    pub rdmap_reserved: u8,
    /// RDMAP opcode (4 bits).
    pub opcode: Opcode,
}

impl Control {
    /// Control octets for our own messages (versions 1, reserved zero).
    pub const fn new(tagged: bool, last: bool, opcode: Opcode) -> Self {
        Control {
            tagged,
            last,
            ddp_reserved: 0,
            ddp_version: DDP_VERSION,
            rdmap_version: RDMAP_VERSION,
            rdmap_reserved: 0,
            opcode,
        }
    }

    /// Decodes the two octets (never fails).
    pub const fn from_bytes(b: [u8; 2]) -> Self {
        Control {
            tagged: b[0] & 0x80 != 0,
            last: b[0] & 0x40 != 0,
            ddp_reserved: (b[0] >> 2) & 0x0f,
            ddp_version: b[0] & 0x03,
            rdmap_version: b[1] >> 6,
            rdmap_reserved: (b[1] >> 4) & 0x03,
            opcode: Opcode(b[1] & 0x0f),
        }
    }

    /// Encodes the two octets.
    pub const fn to_bytes(self) -> [u8; 2] {
        let b0 = (if self.tagged { 0x80 } else { 0 })
            | (if self.last { 0x40 } else { 0 })
            | ((self.ddp_reserved & 0x0f) << 2)
            | (self.ddp_version & 0x03);
        let b1 = ((self.rdmap_version & 0x03) << 6)
            | ((self.rdmap_reserved & 0x03) << 4)
            | (self.opcode.0 & 0x0f);
        [b0, b1]
    }
}

/// The buffer-model specific part of a DDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Buffer {
    /// Tagged buffer model: placement at (STag, TO).
    Tagged {
        /// Steering Tag of the target buffer.
        stag: u32,
        /// Tagged Offset of this segment's first octet.
        to: u64,
    },
    /// Untagged buffer model: queue, message and offset.
    Untagged {
        /// The 32 bits RDMAP owns: the STag to invalidate for Send with
        /// Invalidate (with or without SE), otherwise reserved (zero).
        rdmap_word: u32,
        /// Queue Number (0 Send, 1 Read Request, 2 Terminate).
        qn: u32,
        /// Message Sequence Number (each queue starts at 1).
        msn: u32,
        /// Message Offset of this segment's first octet.
        mo: u32,
    },
}

/// A parsed DDP/RDMAP header: the start of every ULPDU.
///
/// ```
/// use rpcrdma_iwarp::ddp::{Buffer, Control, DdpHeader};
/// use rpcrdma_iwarp::rdmap::Opcode;
/// let h = DdpHeader {
///     control: Control::new(false, true, Opcode::SEND),
///     buffer: Buffer::Untagged { rdmap_word: 0, qn: 0, msn: 1, mo: 0 },
/// };
/// let mut wire = Vec::new();
/// h.emit(&mut wire);
/// assert_eq!(wire[..2], [0x41, 0x43]);
/// assert_eq!(DdpHeader::parse(&wire), Ok((h, 18)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DdpHeader {
    /// The control octets.
    pub control: Control,
    /// Tagged or untagged fields (must agree with `control.tagged`).
    pub buffer: Buffer,
}

/// Why a DDP header could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DdpHeaderError {
    /// The ULPDU is shorter than the header its T bit announces.
    #[error("DDP segment of {len} octets is shorter than its {needed}-octet {} header", if *tagged { "tagged" } else { "untagged" })]
    Truncated {
        /// Whether the T bit was set.
        tagged: bool,
        /// Header length required.
        needed: usize,
        /// Octets available.
        len: usize,
    },
}

impl DdpHeader {
    /// A tagged header of our own.
    pub const fn tagged(last: bool, opcode: Opcode, stag: u32, to: u64) -> Self {
        DdpHeader {
            control: Control::new(true, last, opcode),
            buffer: Buffer::Tagged { stag, to },
        }
    }

    /// An untagged header of our own.
    pub const fn untagged(
        last: bool,
        opcode: Opcode,
        rdmap_word: u32,
        qn: u32,
        msn: u32,
        mo: u32,
    ) -> Self {
        DdpHeader {
            control: Control::new(false, last, opcode),
            buffer: Buffer::Untagged {
                rdmap_word,
                qn,
                msn,
                mo,
            },
        }
    }

    /// Header length announced by the first octet of a ULPDU.
    pub const fn len_for_first_octet(b0: u8) -> usize {
        if b0 & 0x80 != 0 {
            TAGGED_HEADER_LEN
        } else {
            UNTAGGED_HEADER_LEN
        }
    }

    /// Exact number of octets [`DdpHeader::emit`] appends.
    pub const fn buffer_len(&self) -> usize {
        match self.buffer {
            Buffer::Tagged { .. } => TAGGED_HEADER_LEN,
            Buffer::Untagged { .. } => UNTAGGED_HEADER_LEN,
        }
    }

    /// Appends the header. The T bit is written from `buffer` (whatever
    /// `control.tagged` says), so the header is always self-consistent.
    pub fn emit(&self, out: &mut impl BufMut) {
        let (b, n) = self.to_array();
        out.put_slice(&b[..n]);
    }

    /// Encodes into a fixed array; returns it and the used length.
    pub fn to_array(&self) -> ([u8; UNTAGGED_HEADER_LEN], usize) {
        let mut b = [0u8; UNTAGGED_HEADER_LEN];
        let n = self.encode_into(&mut b);
        (b, n)
    }

    /// Encodes into the start of `b` (as [`DdpHeader::emit`]); returns
    /// the length used ([`DdpHeader::buffer_len`]).
    pub fn encode_into(&self, b: &mut [u8; UNTAGGED_HEADER_LEN]) -> usize {
        let mut c = self.control;
        c.tagged = matches!(self.buffer, Buffer::Tagged { .. });
        // One store per field (a call per field through `BufMut` costs
        // more than the header).
        b[..2].copy_from_slice(&c.to_bytes());
        match self.buffer {
            Buffer::Tagged { stag, to } => {
                b[field::STAG].copy_from_slice(&stag.to_be_bytes());
                b[field::TO].copy_from_slice(&to.to_be_bytes());
                TAGGED_HEADER_LEN
            }
            Buffer::Untagged {
                rdmap_word,
                qn,
                msn,
                mo,
            } => {
                b[field::RDMAP_WORD].copy_from_slice(&rdmap_word.to_be_bytes());
                b[field::QN].copy_from_slice(&qn.to_be_bytes());
                b[field::MSN].copy_from_slice(&msn.to_be_bytes());
                b[field::MO].copy_from_slice(&mo.to_be_bytes());
                UNTAGGED_HEADER_LEN
            }
        }
    }

    /// Parses the header at the start of a ULPDU; returns it and its length.
    pub fn parse(ulpdu: &[u8]) -> Result<(DdpHeader, usize), DdpHeaderError> {
        let Some(&[b0, b1]) = ulpdu.get(..2) else {
            let tagged = ulpdu.first().is_some_and(|b| b & 0x80 != 0);
            return Err(DdpHeaderError::Truncated {
                tagged,
                needed: if tagged {
                    TAGGED_HEADER_LEN
                } else {
                    UNTAGGED_HEADER_LEN
                },
                len: ulpdu.len(),
            });
        };
        let control = Control::from_bytes([b0, b1]);
        let needed = Self::len_for_first_octet(b0);
        let Some(h) = ulpdu.get(..needed) else {
            return Err(DdpHeaderError::Truncated {
                tagged: control.tagged,
                needed,
                len: ulpdu.len(),
            });
        };
        let u32_at = |r: core::ops::Range<usize>| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&h[r]);
            u32::from_be_bytes(b)
        };
        let buffer = if control.tagged {
            let mut to = [0u8; 8];
            to.copy_from_slice(&h[field::TO]);
            Buffer::Tagged {
                stag: u32_at(field::STAG),
                to: u64::from_be_bytes(to),
            }
        } else {
            Buffer::Untagged {
                rdmap_word: u32_at(field::RDMAP_WORD),
                qn: u32_at(field::QN),
                msn: u32_at(field::MSN),
                mo: u32_at(field::MO),
            }
        };
        Ok((DdpHeader { control, buffer }, needed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tagged_write_layout() {
        let h = DdpHeader::tagged(true, Opcode::WRITE, 0x0102_0304, 0x1122_3344_5566_7788);
        let mut v = Vec::new();
        h.emit(&mut v);
        assert_eq!(
            v,
            [0xc1, 0x40, 1, 2, 3, 4, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        );
        assert_eq!(DdpHeader::parse(&v), Ok((h, 14)));
    }

    #[test]
    fn truncated_headers() {
        assert!(DdpHeader::parse(&[]).is_err());
        assert!(DdpHeader::parse(&[0xc1]).is_err());
        assert_eq!(
            DdpHeader::parse(&[0x41, 0x43, 0, 0]),
            Err(DdpHeaderError::Truncated {
                tagged: false,
                needed: 18,
                len: 4
            })
        );
    }

    #[test]
    fn reserved_bits_round_trip() {
        let raw = [0xbd, 0x7f];
        let c = Control::from_bytes(raw);
        assert_eq!(c.to_bytes(), raw);
        assert_eq!(c.ddp_version, 1);
        assert_eq!(c.rdmap_version, 1);
        assert_eq!(c.opcode, Opcode(0xf));
    }
}
