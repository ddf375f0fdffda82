//! RDMAP (RFC 5040) message bodies: opcodes, the RDMA Read Request header
//! (§4.4), the Terminate message (§4.8) and the table of Terminate error
//! codes (§7, with the DDP codes of RFC 5041 §7 and the MPA codes of
//! RFC 5044 §8 / RFC 6581).

use bytes::{BufMut, Bytes};

use crate::ddp::{DdpHeader, TAGGED_HEADER_LEN, UNTAGGED_HEADER_LEN};

rpcrdma_xdr::open_enum! {
    /// An RDMAP opcode (4 bits), named as RFC 5040 names it.
    pub struct Opcode(u8) {
        /// RDMA Write (tagged).
        WRITE = 0 => "RDMA Write",
        /// RDMA Read Request (untagged, queue 1).
        READ_REQUEST = 1 => "RDMA Read Request",
        /// RDMA Read Response (tagged).
        READ_RESPONSE = 2 => "RDMA Read Response",
        /// Send (untagged, queue 0).
        SEND = 3 => "Send",
        /// Send with Invalidate.
        SEND_INVALIDATE = 4 => "Send with Invalidate",
        /// Send with Solicited Event.
        SEND_SE = 5 => "Send with Solicited Event",
        /// Send with Solicited Event and Invalidate.
        SEND_SE_INVALIDATE = 6 => "Send with Solicited Event and Invalidate",
        /// Terminate (untagged, queue 2).
        TERMINATE = 7 => "Terminate",
    }
}

impl Opcode {
    /// Whether the opcode is one of the four Send variants.
    pub const fn is_send(self) -> bool {
        matches!(self.0, 3..=6)
    }

    /// Whether a Send variant carries an STag to invalidate.
    pub const fn invalidates(self) -> bool {
        matches!(self.0, 4 | 6)
    }

    /// Whether a Send variant asks for a solicited event.
    pub const fn solicited(self) -> bool {
        matches!(self.0, 5 | 6)
    }

    /// Whether RFC 5040 carries this opcode in the tagged buffer model
    /// (`None` for undefined opcodes).
    pub const fn tagged(self) -> Option<bool> {
        match self.0 {
            0 | 2 => Some(true),
            1 | 3..=7 => Some(false),
            _ => None,
        }
    }
}

/// Untagged queue numbers RDMAP uses.
pub mod queue {
    /// Send, Send with Invalidate/SE.
    pub const SEND: u32 = 0;
    /// RDMA Read Request.
    pub const READ_REQUEST: u32 = 1;
    /// Terminate.
    pub const TERMINATE: u32 = 2;
}

/// Octets of the RDMA Read Request header that follows the DDP header.
pub const READ_REQUEST_LEN: usize = 28;

/// The RDMA Read Request header (RFC 5040 §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ReadRequest {
    /// STag of the requester's sink buffer (the Read Response targets it).
    pub sink_stag: u32,
    /// Tagged Offset in the sink buffer.
    pub sink_to: u64,
    /// Octets to read.
    pub size: u32,
    /// STag of the responder's source buffer.
    pub src_stag: u32,
    /// Tagged Offset in the source buffer.
    pub src_to: u64,
}

impl ReadRequest {
    /// Appends the 28 octets.
    pub fn emit(&self, out: &mut impl BufMut) {
        out.put_u32(self.sink_stag);
        out.put_u64(self.sink_to);
        out.put_u32(self.size);
        out.put_u32(self.src_stag);
        out.put_u64(self.src_to);
    }

    /// The 28 octets.
    pub fn to_bytes(&self) -> [u8; READ_REQUEST_LEN] {
        let mut a = [0u8; READ_REQUEST_LEN];
        let mut w = &mut a[..];
        self.emit(&mut w);
        a
    }

    /// Parses exactly 28 octets (`None` if `b` is shorter; extra octets
    /// are the caller's concern).
    pub fn parse(b: &[u8]) -> Option<ReadRequest> {
        let b = b.get(..READ_REQUEST_LEN)?;
        let u32_at = |o: usize| u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u64_at = |o: usize| (u64::from(u32_at(o)) << 32) | u64::from(u32_at(o + 4));
        Some(ReadRequest {
            sink_stag: u32_at(0),
            sink_to: u64_at(4),
            size: u32_at(12),
            src_stag: u32_at(16),
            src_to: u64_at(20),
        })
    }
}

rpcrdma_xdr::open_enum! {
    /// The layer that detected an error (Terminate control, 4 bits).
    pub struct Layer(u8) {
        /// RDMAP (RFC 5040).
        RDMAP = 0,
        /// DDP (RFC 5041).
        DDP = 1,
        /// The lower layer protocol: MPA/TCP (RFC 5044).
        LLP = 2,
    }
}

/// Layer, error type and error code of a Terminate message.
///
/// The associated constants are the table of every code we send or
/// recognise; [`TermError::describe`] names them.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TermError {
    /// Layer (4 bits).
    pub layer: Layer,
    /// Error type within the layer (4 bits).
    pub etype: u8,
    /// Error code (8 bits).
    pub code: u8,
}

macro_rules! term_table {
    ($( $(#[$m:meta])* $name:ident = ($layer:ident, $etype:expr, $code:expr, $desc:expr); )*) => {
        impl TermError {
            $( $(#[$m])* pub const $name: TermError = TermError { layer: Layer::$layer, etype: $etype, code: $code }; )*

            /// Every error in the table, with its description.
            pub const TABLE: &'static [(TermError, &'static str)] = &[
                $( (TermError::$name, $desc), )*
            ];
        }
    };
}

term_table! {
    /// RDMAP local catastrophic error.
    RDMAP_LOCAL_CATASTROPHIC = (RDMAP, 0, 0x00, "RDMAP: local catastrophic error");
    /// RDMAP remote protection: invalid STag.
    RDMAP_INVALID_STAG = (RDMAP, 1, 0x00, "RDMAP remote protection: invalid STag");
    /// RDMAP remote protection: base or bounds violation.
    RDMAP_BASE_BOUNDS = (RDMAP, 1, 0x01, "RDMAP remote protection: base or bounds violation");
    /// RDMAP remote protection: access rights violation.
    RDMAP_ACCESS_RIGHTS = (RDMAP, 1, 0x02, "RDMAP remote protection: access rights violation");
    /// RDMAP remote protection: STag not associated with this RDMAP stream.
    RDMAP_STAG_NOT_ASSOCIATED = (RDMAP, 1, 0x03, "RDMAP remote protection: STag not associated with RDMAP stream");
    /// RDMAP remote protection: tagged offset wrap.
    RDMAP_TO_WRAP = (RDMAP, 1, 0x04, "RDMAP remote protection: TO wrap");
    /// RDMAP remote protection: STag cannot be invalidated.
    RDMAP_CANNOT_INVALIDATE_PROTECTION = (RDMAP, 1, 0x09, "RDMAP remote protection: STag cannot be invalidated");
    /// RDMAP remote operation: invalid RDMAP version.
    RDMAP_INVALID_VERSION = (RDMAP, 2, 0x05, "RDMAP remote operation: invalid RDMAP version");
    /// RDMAP remote operation: unexpected opcode.
    RDMAP_UNEXPECTED_OPCODE = (RDMAP, 2, 0x06, "RDMAP remote operation: unexpected opcode");
    /// RDMAP remote operation: catastrophic error localized to this stream.
    RDMAP_CATASTROPHIC_STREAM = (RDMAP, 2, 0x07, "RDMAP remote operation: catastrophic error, localized to RDMAP stream");
    /// RDMAP remote operation: global catastrophic error.
    RDMAP_CATASTROPHIC_GLOBAL = (RDMAP, 2, 0x08, "RDMAP remote operation: catastrophic error, global");
    /// RDMAP remote operation: STag cannot be invalidated.
    RDMAP_CANNOT_INVALIDATE = (RDMAP, 2, 0x09, "RDMAP remote operation: STag cannot be invalidated");
    /// RDMAP remote operation: unspecified error.
    RDMAP_UNSPECIFIED = (RDMAP, 2, 0xff, "RDMAP remote operation: unspecified error");
    /// DDP local catastrophic error.
    DDP_LOCAL_CATASTROPHIC = (DDP, 0, 0x00, "DDP: local catastrophic error");
    /// DDP tagged buffer: invalid STag.
    DDP_TAGGED_INVALID_STAG = (DDP, 1, 0x00, "DDP tagged buffer: invalid STag");
    /// DDP tagged buffer: base or bounds violation.
    DDP_TAGGED_BASE_BOUNDS = (DDP, 1, 0x01, "DDP tagged buffer: base or bounds violation");
    /// DDP tagged buffer: STag not associated with this DDP stream.
    DDP_TAGGED_STAG_NOT_ASSOCIATED = (DDP, 1, 0x02, "DDP tagged buffer: STag not associated with DDP stream");
    /// DDP tagged buffer: tagged offset wrap.
    DDP_TAGGED_TO_WRAP = (DDP, 1, 0x03, "DDP tagged buffer: TO wrap");
    /// DDP tagged buffer: invalid DDP version.
    DDP_TAGGED_INVALID_VERSION = (DDP, 1, 0x04, "DDP tagged buffer: invalid DDP version");
    /// DDP untagged buffer: invalid queue number.
    DDP_UNTAGGED_INVALID_QN = (DDP, 2, 0x01, "DDP untagged buffer: invalid QN");
    /// DDP untagged buffer: invalid MSN, no buffer available.
    DDP_UNTAGGED_NO_BUFFER = (DDP, 2, 0x02, "DDP untagged buffer: invalid MSN, no buffer available");
    /// DDP untagged buffer: invalid MSN, MSN range not valid.
    DDP_UNTAGGED_MSN_RANGE = (DDP, 2, 0x03, "DDP untagged buffer: invalid MSN, MSN range is not valid");
    /// DDP untagged buffer: invalid message offset.
    DDP_UNTAGGED_INVALID_MO = (DDP, 2, 0x04, "DDP untagged buffer: invalid MO");
    /// DDP untagged buffer: message too long for the available buffer.
    DDP_UNTAGGED_TOO_LONG = (DDP, 2, 0x05, "DDP untagged buffer: DDP message too long for available buffer");
    /// DDP untagged buffer: invalid DDP version.
    DDP_UNTAGGED_INVALID_VERSION = (DDP, 2, 0x06, "DDP untagged buffer: invalid DDP version");
    /// MPA: TCP connection closed, terminated or lost.
    LLP_STREAM_LOST = (LLP, 0, 0x01, "MPA: TCP connection closed, terminated or lost");
    /// MPA: received MPA CRC does not match.
    LLP_BAD_CRC = (LLP, 0, 0x02, "MPA: received MPA CRC does not match");
    /// MPA: marker and ULPDU length fields do not agree.
    LLP_BAD_FPDU = (LLP, 0, 0x03, "MPA: received marker and ULPDU length do not agree");
    /// MPA: invalid Request or Reply frame.
    LLP_INVALID_REQUEST_REPLY = (LLP, 0, 0x04, "MPA: invalid MPA Request or Reply");
    /// MPA (RFC 6581): local catastrophic error during enhanced set-up.
    LLP_LOCAL_CATASTROPHIC = (LLP, 0, 0x05, "MPA: local catastrophic error");
    /// MPA (RFC 6581): insufficient IRD resources.
    LLP_INSUFFICIENT_IRD = (LLP, 0, 0x06, "MPA: insufficient IRD resources");
    /// MPA (RFC 6581): no matching RTR model.
    LLP_NO_MATCHING_RTR = (LLP, 0, 0x07, "MPA: no matching RTR model");
}

impl TermError {
    /// The description from the table, or `None` for a combination it lacks.
    pub fn describe(self) -> Option<&'static str> {
        Self::TABLE
            .iter()
            .find(|(e, _)| *e == self)
            .map(|(_, d)| *d)
    }

    /// The 32-bit Terminate Control word with header-control bits.
    pub const fn control_word(self, m: bool, d: bool, r: bool) -> u32 {
        ((self.layer.0 as u32 & 0xf) << 28)
            | ((self.etype as u32 & 0xf) << 24)
            | ((self.code as u32) << 16)
            | (if m { 0x8000 } else { 0 })
            | (if d { 0x4000 } else { 0 })
            | (if r { 0x2000 } else { 0 })
    }
}

impl core::fmt::Debug for TermError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "TermError(layer {}, etype {}, code {:#04x}",
            self.layer.0, self.etype, self.code
        )?;
        if let Some(d) = self.describe() {
            write!(f, ": {d}")?;
        }
        write!(f, ")")
    }
}

impl core::fmt::Display for TermError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.describe() {
            Some(d) => write!(f, "{d}"),
            None => write!(
                f,
                "layer {} error type {} code {:#04x}",
                self.layer.0, self.etype, self.code
            ),
        }
    }
}

/// The body of a Terminate message (after its untagged DDP header).
///
/// ```text
/// | Layer | EType | Error Code |M|D|R|      Reserved (13)          |
/// | DDP Segment Length (16, if D) | Terminated DDP header (if D)  ~
/// ~ Terminated RDMA Read Request header (28 octets, if R)         ~
/// ```
///
/// The terminated DDP header is the header of the offending segment,
/// 14 or 18 octets as its own T bit says; DDP Segment Length is its MPA
/// ULPDU_Length, valid when M is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terminate {
    /// Layer/type/code.
    pub error: TermError,
    /// M: `ddp_segment_length` is valid.
    pub segment_length_valid: bool,
    /// Reserved bits of the control word (13 bits), kept for round trips.
    pub reserved: u16,
    /// ULPDU_Length of the offending segment (present when D is set).
    pub ddp_segment_length: Option<u16>,
    /// The offending segment's DDP header (D).
    pub ddp_header: Option<Bytes>,
    /// The offending RDMA Read Request header (R).
    pub read_request: Option<[u8; READ_REQUEST_LEN]>,
}

/// Why a Terminate body could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TerminateParseError {
    /// Fewer octets than the control word and the headers it announces.
    #[error("Terminate message of {len} octets is shorter than the {needed} its header-control bits announce")]
    Truncated {
        /// Needed.
        needed: usize,
        /// Available.
        len: usize,
    },
}

impl Terminate {
    /// A Terminate carrying only the error (no offending headers).
    pub const fn bare(error: TermError) -> Self {
        Terminate {
            error,
            segment_length_valid: false,
            reserved: 0,
            ddp_segment_length: None,
            ddp_header: None,
            read_request: None,
        }
    }

    /// A Terminate that quotes the offending segment's headers.
    pub fn quoting(
        error: TermError,
        ulpdu_len: u16,
        header: &DdpHeader,
        read_request: Option<&ReadRequest>,
    ) -> Self {
        let (a, n) = header.to_array();
        Terminate {
            error,
            segment_length_valid: true,
            reserved: 0,
            ddp_segment_length: Some(ulpdu_len),
            ddp_header: Some(Bytes::copy_from_slice(&a[..n])),
            read_request: read_request.map(ReadRequest::to_bytes),
        }
    }

    /// Exact number of octets [`Terminate::emit`] appends.
    pub fn buffer_len(&self) -> usize {
        4 + self.ddp_header.as_ref().map_or(0, |h| 2 + h.len())
            + self.read_request.map_or(0, |_| READ_REQUEST_LEN)
    }

    /// Appends the body.
    pub fn emit(&self, out: &mut impl BufMut) {
        let d = self.ddp_header.is_some();
        let r = self.read_request.is_some();
        let w = self.error.control_word(self.segment_length_valid, d, r)
            | u32::from(self.reserved & 0x1fff);
        out.put_u32(w);
        if let Some(h) = &self.ddp_header {
            out.put_u16(self.ddp_segment_length.unwrap_or(0));
            out.put_slice(h);
        }
        if let Some(rr) = &self.read_request {
            out.put_slice(rr);
        }
    }

    /// Parses a Terminate body. Octets after what the control bits
    /// announce are ignored (a peer may pad).
    pub fn parse(b: &[u8]) -> Result<Terminate, TerminateParseError> {
        let trunc = |needed: usize| TerminateParseError::Truncated {
            needed,
            len: b.len(),
        };
        let Some(&[w0, w1, w2, w3]) = b.get(..4) else {
            return Err(trunc(4));
        };
        let w = u32::from_be_bytes([w0, w1, w2, w3]);
        let error = TermError {
            layer: Layer((w >> 28) as u8),
            etype: ((w >> 24) & 0xf) as u8,
            code: ((w >> 16) & 0xff) as u8,
        };
        let m = w & 0x8000 != 0;
        let d = w & 0x4000 != 0;
        let r = w & 0x2000 != 0;
        let mut at = 4;
        let (mut seg_len, mut ddp_header) = (None, None);
        if d {
            let Some(&[l0, l1, first]) = b.get(at..at + 3) else {
                return Err(trunc(at + 3));
            };
            seg_len = Some(u16::from_be_bytes([l0, l1]));
            let hl = if first & 0x80 != 0 {
                TAGGED_HEADER_LEN
            } else {
                UNTAGGED_HEADER_LEN
            };
            let Some(h) = b.get(at + 2..at + 2 + hl) else {
                return Err(trunc(at + 2 + hl));
            };
            ddp_header = Some(Bytes::copy_from_slice(h));
            at += 2 + hl;
        }
        let mut read_request = None;
        if r {
            let Some(rr) = b.get(at..at + READ_REQUEST_LEN) else {
                return Err(trunc(at + READ_REQUEST_LEN));
            };
            let mut a = [0u8; READ_REQUEST_LEN];
            a.copy_from_slice(rr);
            read_request = Some(a);
        }
        Ok(Terminate {
            error,
            segment_length_valid: m,
            reserved: (w & 0x1fff) as u16,
            ddp_segment_length: seg_len,
            ddp_header,
            read_request,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_unique_and_described() {
        for (i, (a, _)) in TermError::TABLE.iter().enumerate() {
            for (b, _) in &TermError::TABLE[i + 1..] {
                assert_ne!(a, b, "duplicate table entry");
            }
            assert!(a.describe().is_some());
        }
        assert_eq!(
            TermError::RDMAP_ACCESS_RIGHTS.control_word(false, false, false),
            0x0102_0000
        );
        assert_eq!(
            TermError::LLP_BAD_CRC.control_word(true, true, false),
            0x2002_c000
        );
    }

    #[test]
    fn read_request_round_trip() {
        let rr = ReadRequest {
            sink_stag: 1,
            sink_to: 2,
            size: 3,
            src_stag: 4,
            src_to: u64::MAX,
        };
        assert_eq!(ReadRequest::parse(&rr.to_bytes()), Some(rr));
        assert_eq!(ReadRequest::parse(&rr.to_bytes()[..27]), None);
    }

    #[test]
    fn terminate_round_trip_with_headers() {
        let h = DdpHeader::untagged(true, Opcode::READ_REQUEST, 0, 1, 7, 0);
        let rr = ReadRequest::default();
        let t = Terminate::quoting(TermError::RDMAP_INVALID_STAG, 46, &h, Some(&rr));
        let mut v = Vec::new();
        t.emit(&mut v);
        assert_eq!(v.len(), t.buffer_len());
        assert_eq!(v.len(), 4 + 2 + 18 + 28);
        assert_eq!(Terminate::parse(&v), Ok(t));
        for cut in 0..v.len() {
            assert!(Terminate::parse(&v[..cut]).is_err(), "cut at {cut}");
        }
    }
}
