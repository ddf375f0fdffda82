//! MPA connection set-up frames: Request, Reply and Reject (RFC 5044 §7.1,
//! enhanced by RFC 6581 §9).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                   Key ("MPA ID Req Frame" or                  |
//! |                        "MPA ID Rep Frame", 16 octets)         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |M|C|R|H| Res   |     Rev       |          PD_Length            |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |A|B|     IRD (rev 2, H set)    |C|D|     ORD                   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ~               Private Data (PD_Length octets in all)          ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! A Reject is a Reply with the R flag set. With revision 2 and the
//! enhanced flag (H), the first four octets of the private data are the
//! RFC 6581 IRD/ORD word ([`IrdOrd`]); [`MpaFrame::private_data`] holds the
//! bytes after it (the Upper Layer's private data, e.g. RFC 8797), and
//! PD_Length on the wire counts both.
//!
//! Parsing keeps every field (unknown revisions, reserved flag bits), so a
//! decoded frame re-encodes to the same bytes. Semantic checks (revision
//! 1 or 2, markers, expected key) belong to the connection state machine.

use bytes::{BufMut, Bytes, BytesMut};

/// The 16-octet key that starts an MPA Request.
pub const MPA_REQUEST_KEY: [u8; 16] = *b"MPA ID Req Frame";
/// The 16-octet key that starts an MPA Reply (and a Reject).
pub const MPA_REPLY_KEY: [u8; 16] = *b"MPA ID Rep Frame";
/// Octets before the private data: key, flags, revision, PD_Length.
pub const MPA_HEADER_LEN: usize = 20;
/// The largest PD_Length RFC 5044 §7.1 allows (it counts the RFC 6581
/// IRD/ORD word when present).
pub const MPA_MAX_PRIVATE_DATA: usize = 512;
/// The largest PD_Length Linux `siw` accepts (`MPA_MAX_PRIVDATA`, 256):
/// siw drops a connection whose MPA frame announces more. With the
/// enhanced word that leaves 252 octets for the Upper Layer.
pub const SIW_MAX_PRIVATE_DATA: usize = 256;
/// Length of the RFC 6581 IRD/ORD word.
pub const IRD_ORD_LEN: usize = 4;
/// The largest IRD or ORD value the 14-bit fields can carry.
pub const IRD_ORD_MAX: u16 = 0x3fff;

/// Which of the two keys a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// `MPA ID Req Frame`, sent by the initiator.
    Request,
    /// `MPA ID Rep Frame`, sent by the responder (accept or reject).
    Reply,
}

impl FrameKind {
    /// The 16-octet key of this kind.
    pub const fn key(self) -> &'static [u8; 16] {
        match self {
            FrameKind::Request => &MPA_REQUEST_KEY,
            FrameKind::Reply => &MPA_REPLY_KEY,
        }
    }
}

/// The flags octet of an MPA Request/Reply. Unknown (reserved) bits are
/// kept so a frame round-trips.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MpaFlags(pub u8);

impl MpaFlags {
    /// M: the sender wants markers (we always refuse them).
    pub const MARKERS: u8 = 0x80;
    /// C: the sender wants CRC32c on every FPDU.
    pub const CRC: u8 = 0x40;
    /// R: Reject (only meaningful in a Reply).
    pub const REJECT: u8 = 0x20;
    /// H: enhanced connection set-up, RFC 6581 (revision 2 only).
    pub const ENHANCED: u8 = 0x10;
    /// A Linux `siw` extension in a reserved bit ("GSO_EXP"): the sender
    /// tolerates FPDUs that span TCP segments. Ignored by us.
    pub const SIW_GSO: u8 = 0x08;
    /// The bits RFC 5044/6581 leave reserved.
    pub const RESERVED: u8 = 0x0f;

    /// Whether every bit of `bits` is set.
    pub const fn has(self, bits: u8) -> bool {
        self.0 & bits == bits
    }

    /// `self` with `bits` set or cleared.
    #[must_use]
    pub const fn with(self, bits: u8, on: bool) -> Self {
        if on {
            MpaFlags(self.0 | bits)
        } else {
            MpaFlags(self.0 & !bits)
        }
    }
}

/// The RFC 6581 enhanced connection set-up word: IRD/ORD and the
/// peer-to-peer (ready-to-receive) controls.
///
/// In a Request, `ird`/`ord` are the initiator's; the responder answers
/// with its own (its IRD should cover the initiator's ORD). In peer-to-peer
/// mode the Request offers one or more ready-to-receive (RTR) message types
/// and the Reply names exactly the one the initiator must send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct IrdOrd {
    /// Inbound RDMA Read queue depth (14 bits).
    pub ird: u16,
    /// Outbound RDMA Read queue depth (14 bits).
    pub ord: u16,
    /// A: peer-to-peer mode (an RTR message follows the Reply).
    pub peer_to_peer: bool,
    /// B: a zero-length Send may serve as the RTR.
    pub send_rtr: bool,
    /// C: a zero-length RDMA Write may serve as the RTR.
    pub write_rtr: bool,
    /// D: a zero-length RDMA Read may serve as the RTR.
    pub read_rtr: bool,
}

impl IrdOrd {
    /// Decodes the 4-octet word (never fails: every bit pattern is a value).
    pub fn from_bytes(b: [u8; 4]) -> Self {
        let ird = u16::from_be_bytes([b[0], b[1]]);
        let ord = u16::from_be_bytes([b[2], b[3]]);
        IrdOrd {
            ird: ird & IRD_ORD_MAX,
            ord: ord & IRD_ORD_MAX,
            peer_to_peer: ird & 0x8000 != 0,
            send_rtr: ird & 0x4000 != 0,
            write_rtr: ord & 0x8000 != 0,
            read_rtr: ord & 0x4000 != 0,
        }
    }

    /// Encodes the 4-octet word. IRD and ORD above [`IRD_ORD_MAX`] are
    /// clamped to it.
    pub fn to_bytes(self) -> [u8; 4] {
        let mut ird = self.ird.min(IRD_ORD_MAX);
        let mut ord = self.ord.min(IRD_ORD_MAX);
        if self.peer_to_peer {
            ird |= 0x8000;
        }
        if self.send_rtr {
            ird |= 0x4000;
        }
        if self.write_rtr {
            ord |= 0x8000;
        }
        if self.read_rtr {
            ord |= 0x4000;
        }
        let i = ird.to_be_bytes();
        let o = ord.to_be_bytes();
        [i[0], i[1], o[0], o[1]]
    }
}

/// One MPA Request or Reply (accept or reject).
///
/// ```
/// use bytes::{Bytes, BytesMut};
/// use rpcrdma_iwarp::mpa::{FrameKind, IrdOrd, MpaFlags, MpaFrame};
///
/// let req = MpaFrame {
///     kind: FrameKind::Request,
///     flags: MpaFlags(MpaFlags::CRC | MpaFlags::ENHANCED),
///     revision: 2,
///     ird_ord: Some(IrdOrd { ird: 16, ord: 16, peer_to_peer: true, write_rtr: true, ..Default::default() }),
///     private_data: Bytes::from_static(&[0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3]),
/// };
/// let mut wire = BytesMut::new();
/// req.emit(&mut wire)?;
/// assert_eq!(wire.len(), req.buffer_len());
/// let (back, used) = MpaFrame::parse(&wire)?.expect("complete");
/// assert_eq!((back, used), (req, wire.len()));
/// # Ok::<(), rpcrdma_iwarp::mpa::MpaError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpaFrame {
    /// Request or Reply.
    pub kind: FrameKind,
    /// The flags octet (the ENHANCED bit is kept as given; see `ird_ord`).
    pub flags: MpaFlags,
    /// The revision octet (1 or 2 are defined; others are kept as read).
    pub revision: u8,
    /// The RFC 6581 word: present exactly when `revision == 2` and the
    /// ENHANCED flag is set.
    pub ird_ord: Option<IrdOrd>,
    /// The Upper Layer's private data (after the IRD/ORD word, if any).
    pub private_data: Bytes,
}

/// Why an MPA Request/Reply could not be parsed or built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MpaError {
    /// The first 16 octets are neither MPA key: the peer does not speak MPA.
    #[error("not an MPA frame: the first 16 octets are neither \"MPA ID Req Frame\" nor \"MPA ID Rep Frame\"")]
    BadKey,
    /// PD_Length exceeds the RFC 5044 limit.
    #[error("MPA private data length {len} exceeds the limit of {max} octets")]
    PrivateDataTooLong {
        /// PD_Length from the frame (or requested).
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Revision 2 with the enhanced flag, but fewer than 4 octets of
    /// private data to hold the IRD/ORD word.
    #[error("MPA revision 2 frame with the enhanced flag carries only {pd_len} octets of private data, fewer than the 4-octet IRD/ORD word")]
    MissingIrdOrd {
        /// PD_Length from the frame.
        pd_len: usize,
    },
    /// `ird_ord` disagrees with revision/flags (API misuse when emitting).
    #[error(
        "the IRD/ORD word must be present exactly when revision is 2 and the enhanced flag is set"
    )]
    IrdOrdMismatch,
}

impl MpaFrame {
    /// Whether this frame carries the IRD/ORD word on the wire.
    fn enhanced_on_wire(revision: u8, flags: MpaFlags) -> bool {
        revision == 2 && flags.has(MpaFlags::ENHANCED)
    }

    /// Whether this is a Reply with the Reject flag.
    pub fn is_reject(&self) -> bool {
        self.kind == FrameKind::Reply && self.flags.has(MpaFlags::REJECT)
    }

    /// PD_Length as it goes on the wire (IRD/ORD word included).
    pub fn pd_length(&self) -> usize {
        self.private_data.len()
            + if self.ird_ord.is_some() {
                IRD_ORD_LEN
            } else {
                0
            }
    }

    /// Exact number of octets [`MpaFrame::emit`] appends.
    pub fn buffer_len(&self) -> usize {
        MPA_HEADER_LEN + self.pd_length()
    }

    /// Appends the frame to `out`.
    ///
    /// Fails (appending nothing) if the private data is over
    /// [`MPA_MAX_PRIVATE_DATA`] or `ird_ord` disagrees with revision/flags.
    pub fn emit(&self, out: &mut BytesMut) -> Result<(), MpaError> {
        if Self::enhanced_on_wire(self.revision, self.flags) != self.ird_ord.is_some() {
            return Err(MpaError::IrdOrdMismatch);
        }
        let pd_len = self.pd_length();
        if pd_len > MPA_MAX_PRIVATE_DATA {
            return Err(MpaError::PrivateDataTooLong {
                len: pd_len,
                max: MPA_MAX_PRIVATE_DATA,
            });
        }
        out.reserve(self.buffer_len());
        out.put_slice(self.kind.key());
        out.put_u8(self.flags.0);
        out.put_u8(self.revision);
        // pd_len <= 512 checked above.
        out.put_u16(pd_len as u16);
        if let Some(w) = self.ird_ord {
            out.put_slice(&w.to_bytes());
        }
        out.put_slice(&self.private_data);
        Ok(())
    }

    /// Parses one frame from the start of `buf`.
    ///
    /// Returns `Ok(None)` when `buf` holds only part of a frame (call again
    /// with more bytes), or the frame and the number of octets it used.
    /// Bytes after the frame are not looked at. The key is checked as soon
    /// as 16 octets are there, PD_Length as soon as 20 are.
    pub fn parse(buf: &[u8]) -> Result<Option<(MpaFrame, usize)>, MpaError> {
        let Some(key) = buf.get(..16) else {
            // A prefix of a key that is neither key can be refused early.
            let n = buf.len();
            if MPA_REQUEST_KEY[..n] != buf[..n] && MPA_REPLY_KEY[..n] != buf[..n] {
                return Err(MpaError::BadKey);
            }
            return Ok(None);
        };
        let kind = if key == MPA_REQUEST_KEY {
            FrameKind::Request
        } else if key == MPA_REPLY_KEY {
            FrameKind::Reply
        } else {
            return Err(MpaError::BadKey);
        };
        let Some(&[flags, revision, l0, l1]) = buf.get(16..20) else {
            return Ok(None);
        };
        let flags = MpaFlags(flags);
        let pd_len = usize::from(u16::from_be_bytes([l0, l1]));
        if pd_len > MPA_MAX_PRIVATE_DATA {
            return Err(MpaError::PrivateDataTooLong {
                len: pd_len,
                max: MPA_MAX_PRIVATE_DATA,
            });
        }
        let enhanced = Self::enhanced_on_wire(revision, flags);
        if enhanced && pd_len < IRD_ORD_LEN {
            return Err(MpaError::MissingIrdOrd { pd_len });
        }
        let total = MPA_HEADER_LEN + pd_len;
        let Some(pd) = buf.get(MPA_HEADER_LEN..total) else {
            return Ok(None);
        };
        let (ird_ord, private_data) = match pd.split_first_chunk::<4>() {
            Some((word, rest)) if enhanced => (Some(IrdOrd::from_bytes(*word)), rest),
            _ => (None, pd),
        };
        Ok(Some((
            MpaFrame {
                kind,
                flags,
                revision,
                ird_ord,
                private_data: Bytes::copy_from_slice(private_data),
            },
            total,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rev1_reply_layout() {
        let f = MpaFrame {
            kind: FrameKind::Reply,
            flags: MpaFlags(MpaFlags::CRC),
            revision: 1,
            ird_ord: None,
            private_data: Bytes::from_static(b"ab"),
        };
        let mut out = BytesMut::new();
        f.emit(&mut out).unwrap();
        assert_eq!(&out[..16], b"MPA ID Rep Frame");
        assert_eq!(&out[16..], &[0x40, 1, 0, 2, b'a', b'b']);
    }

    #[test]
    fn ird_ord_bits() {
        let w = IrdOrd {
            ird: 0x80,
            ord: 1,
            peer_to_peer: true,
            send_rtr: false,
            write_rtr: true,
            read_rtr: false,
        };
        assert_eq!(w.to_bytes(), [0x80, 0x80, 0x80, 0x01]);
        assert_eq!(IrdOrd::from_bytes(w.to_bytes()), w);
    }

    #[test]
    fn early_bad_key_and_partial() {
        assert_eq!(MpaFrame::parse(b"MPA ID R"), Ok(None));
        assert_eq!(MPA_REQUEST_KEY.len(), 16);
        assert_eq!(MpaFrame::parse(b"GET / HTTP"), Err(MpaError::BadKey));
        assert_eq!(MpaFrame::parse(b""), Ok(None));
    }
}
