//! Minimal MPA (RFC 5044, RFC 6581) and DDP/RDMAP (RFC 5041, RFC 5040)
//! framing for tests: enough to read the RDMA Sends out of a captured
//! stream and to frame our own messages for the Wireshark oracle.
//! Markers are not supported. Test support only.

/// The key that starts an MPA Request.
pub const REQ_KEY: &[u8; 16] = b"MPA ID Req Frame";
/// The key that starts an MPA Reply.
pub const REP_KEY: &[u8; 16] = b"MPA ID Rep Frame";
/// MPA flag: markers.
pub const FLAG_M: u8 = 0x80;
/// MPA flag: CRC.
pub const FLAG_C: u8 = 0x40;
/// MPA flag: reject.
pub const FLAG_R: u8 = 0x20;
/// MPA revision 2 (RFC 6581) "enhanced" flag: IRD/ORD words lead the
/// private data.
pub const FLAG_ENHANCED: u8 = 0x10;
/// RDMAP opcode of Send.
pub const OP_SEND: u8 = 3;

/// An MPA Request or Reply frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartFrame {
    /// Whether this is a Request (else a Reply).
    pub request: bool,
    /// The flags byte.
    pub flags: u8,
    /// MPA revision.
    pub rev: u8,
    /// Private data (including the RFC 6581 IRD/ORD words, if any).
    pub private_data: Vec<u8>,
}

impl StartFrame {
    /// Parses the frame at the start of a stream; returns it and its length.
    pub fn parse(stream: &[u8]) -> Option<(Self, usize)> {
        let key = stream.get(..16)?;
        let request = match key {
            k if k == REQ_KEY => true,
            k if k == REP_KEY => false,
            _ => return None,
        };
        let flags = *stream.get(16)?;
        let rev = *stream.get(17)?;
        let pd_len = usize::from(u16::from_be_bytes([*stream.get(18)?, *stream.get(19)?]));
        let private_data = stream.get(20..20 + pd_len)?.to_vec();
        Some((
            Self {
                request,
                flags,
                rev,
                private_data,
            },
            20 + pd_len,
        ))
    }

    /// The frame's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(20 + self.private_data.len());
        v.extend_from_slice(if self.request { REQ_KEY } else { REP_KEY });
        v.push(self.flags);
        v.push(self.rev);
        let len = u16::try_from(self.private_data.len()).expect("private data too long");
        v.extend_from_slice(&len.to_be_bytes());
        v.extend_from_slice(&self.private_data);
        v
    }

    /// A Request/Reply: revision 1 or 2 (with IRD/ORD words `ird`, `ord`
    /// before `private_data` and the enhanced flag), CRC requested or not.
    pub fn new(
        request: bool,
        rev: u8,
        crc: bool,
        ird_ord: Option<(u16, u16)>,
        private_data: &[u8],
    ) -> Self {
        let mut flags = if crc { FLAG_C } else { 0 };
        let mut pd = Vec::new();
        if let Some((ird, ord)) = ird_ord {
            flags |= FLAG_ENHANCED;
            pd.extend_from_slice(&(ird & 0x3fff).to_be_bytes());
            pd.extend_from_slice(&(ord & 0x3fff).to_be_bytes());
        }
        pd.extend_from_slice(private_data);
        Self {
            request,
            flags,
            rev,
            private_data: pd,
        }
    }
}

/// The CRC32c of an FPDU's bytes, as MPA computes it.
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// Frames one ULPDU (a DDP segment) as an FPDU: length, ULPDU, pad to a
/// 4-byte boundary, CRC (CRC32c least significant byte first when `crc`,
/// zero otherwise; the field is always present).
pub fn fpdu(ulpdu: &[u8], crc: bool) -> Vec<u8> {
    let len = u16::try_from(ulpdu.len()).expect("ULPDU too long for one FPDU");
    let mut v = Vec::with_capacity(ulpdu.len() + 9);
    v.extend_from_slice(&len.to_be_bytes());
    v.extend_from_slice(ulpdu);
    while v.len() % 4 != 0 {
        v.push(0);
    }
    let c = if crc { crc32c(&v) } else { 0 };
    v.extend_from_slice(&c.to_le_bytes());
    v
}

/// An untagged DDP segment carrying a complete RDMAP Send (one segment,
/// Last flag set, QN 0, MO 0) with the given MSN.
pub fn send_ulpdu(msn: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(18 + payload.len());
    v.push(0x41); // T=0, L=1, DV=1
    v.push(0x40 | OP_SEND); // RV=1, opcode Send
    v.extend_from_slice(&0u32.to_be_bytes()); // Invalidate STag (unused)
    v.extend_from_slice(&0u32.to_be_bytes()); // QN 0: Send queue
    v.extend_from_slice(&msn.to_be_bytes());
    v.extend_from_slice(&0u32.to_be_bytes()); // MO
    v.extend_from_slice(payload);
    v
}

/// RDMAP opcode of RDMA Write.
pub const OP_WRITE: u8 = 0;
/// RDMAP opcode of RDMA Read Request.
pub const OP_READ_REQUEST: u8 = 1;
/// RDMAP opcode of RDMA Read Response.
pub const OP_READ_RESPONSE: u8 = 2;

/// A tagged DDP segment (RDMA Write or Read Response), one segment, Last set.
pub fn tagged_ulpdu(opcode: u8, stag: u32, to: u64, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(14 + payload.len());
    v.push(0xc1); // T=1, L=1, DV=1
    v.push(0x40 | opcode);
    v.extend_from_slice(&stag.to_be_bytes());
    v.extend_from_slice(&to.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

/// An RDMA Read Request (untagged, QN 1) with the given MSN: read `size`
/// bytes from the peer's `src_stag`/`src_to` into our `sink_stag`/`sink_to`.
pub fn read_request_ulpdu(
    msn: u32,
    sink_stag: u32,
    sink_to: u64,
    size: u32,
    src_stag: u32,
    src_to: u64,
) -> Vec<u8> {
    let mut v = Vec::with_capacity(18 + 28);
    v.push(0x41);
    v.push(0x40 | OP_READ_REQUEST);
    v.extend_from_slice(&0u32.to_be_bytes());
    v.extend_from_slice(&1u32.to_be_bytes()); // QN 1: RDMA Read Request queue
    v.extend_from_slice(&msn.to_be_bytes());
    v.extend_from_slice(&0u32.to_be_bytes());
    v.extend_from_slice(&sink_stag.to_be_bytes());
    v.extend_from_slice(&sink_to.to_be_bytes());
    v.extend_from_slice(&size.to_be_bytes());
    v.extend_from_slice(&src_stag.to_be_bytes());
    v.extend_from_slice(&src_to.to_be_bytes());
    v
}

/// A DDP segment read from an FPDU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DdpSegment {
    /// Tagged (RDMA Write / Read Response) or untagged.
    pub tagged: bool,
    /// Last segment of its message.
    pub last: bool,
    /// RDMAP opcode.
    pub opcode: u8,
    /// Untagged: queue number.
    pub qn: u32,
    /// Untagged: message sequence number.
    pub msn: u32,
    /// Untagged: message offset.
    pub mo: u32,
    /// The segment's payload.
    pub payload: Vec<u8>,
}

impl DdpSegment {
    /// Parses a ULPDU.
    pub fn parse(ulpdu: &[u8]) -> Option<Self> {
        let ctl = *ulpdu.first()?;
        let rdmap = *ulpdu.get(1)?;
        let tagged = ctl & 0x80 != 0;
        let word = |at: usize| -> Option<u32> {
            let b = ulpdu.get(at..at + 4)?;
            Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        };
        let (qn, msn, mo, hdr) = if tagged {
            (0, 0, 0, 14)
        } else {
            (word(6)?, word(10)?, word(14)?, 18)
        };
        Some(Self {
            tagged,
            last: ctl & 0x40 != 0,
            opcode: rdmap & 0x0f,
            qn,
            msn,
            mo,
            payload: ulpdu.get(hdr..)?.to_vec(),
        })
    }
}

/// Splits the post-negotiation part of a stream into ULPDUs. `crc` says
/// whether CRCs were negotiated; when they were, each is checked.
/// Returns the ULPDUs, or a message naming the first bad FPDU.
pub fn split_fpdus(mut data: &[u8], crc: bool) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let Some(lenb) = data.get(..2) else {
            return Err("stream ends inside an FPDU length".into());
        };
        let len = usize::from(u16::from_be_bytes([lenb[0], lenb[1]]));
        let padded = (2 + len).div_ceil(4) * 4;
        let Some(fp) = data.get(..padded + 4) else {
            return Err(format!("stream ends inside an FPDU of {len} bytes"));
        };
        let got = u32::from_le_bytes([fp[padded], fp[padded + 1], fp[padded + 2], fp[padded + 3]]);
        if crc && got != crc32c(&fp[..padded]) {
            return Err(format!("FPDU {} has a bad CRC", out.len()));
        }
        out.push(fp[2..2 + len].to_vec());
        data = &data[padded + 4..];
    }
    Ok(out)
}

/// Where each complete FPDU of a post-negotiation stream lies: byte ranges
/// of `data` (length field to CRC, inclusive of the pad), plus the number
/// of trailing bytes that do not form a complete FPDU (a stream cut short).
/// CRCs are not checked; use [`split_fpdus`] for that.
pub fn fpdu_spans(data: &[u8]) -> (Vec<std::ops::Range<usize>>, usize) {
    let mut spans = Vec::new();
    let mut at = 0usize;
    while let Some(lenb) = data.get(at..at + 2) {
        let len = usize::from(u16::from_be_bytes([lenb[0], lenb[1]]));
        let end = at + (2 + len).div_ceil(4) * 4 + 4;
        if end > data.len() {
            break;
        }
        spans.push(at..end);
        at = end;
    }
    (spans, data.len() - at)
}

/// The ULPDU inside the complete FPDU `fpdu` (as delimited by
/// [`fpdu_spans`]): the bytes after the length field, without pad and CRC.
pub fn fpdu_ulpdu(fpdu: &[u8]) -> Option<&[u8]> {
    let lenb = fpdu.get(..2)?;
    let len = usize::from(u16::from_be_bytes([lenb[0], lenb[1]]));
    fpdu.get(2..2 + len)
}

/// The RDMA Send payloads of one MPA connection, given the two directions
/// of its TCP stream: `(requester→responder, responder→requester)` lists
/// of complete Send messages (multi-segment Sends reassembled by MO).
pub type SendPayloads = (Vec<Vec<u8>>, Vec<Vec<u8>>);

/// Reads an MPA connection: both directions' Request/Reply frames, then
/// their FPDUs; returns the Request, the Reply and every Send payload.
pub fn read_connection(
    initiator: &[u8],
    responder: &[u8],
) -> Result<(StartFrame, StartFrame, SendPayloads), String> {
    let (req, req_len) = StartFrame::parse(initiator)
        .ok_or("initiator stream does not start with an MPA Request")?;
    let (rep, rep_len) =
        StartFrame::parse(responder).ok_or("responder stream does not start with an MPA Reply")?;
    if !req.request || rep.request {
        return Err("MPA Request/Reply in the wrong direction".into());
    }
    if (req.flags | rep.flags) & FLAG_M != 0 {
        return Err("MPA markers are not supported by the test kit".into());
    }
    // CRC is used when either side asks for it (RFC 5044 §7.1).
    let crc = (req.flags | rep.flags) & FLAG_C != 0;
    let sends = |data: &[u8]| -> Result<Vec<Vec<u8>>, String> {
        let mut msgs = Vec::new();
        let mut partial: Vec<u8> = Vec::new();
        for u in split_fpdus(data, crc)? {
            let seg = DdpSegment::parse(&u).ok_or("short DDP segment")?;
            if seg.tagged || !(3..=6).contains(&seg.opcode) {
                continue;
            }
            if seg.mo as usize != partial.len() {
                return Err(format!(
                    "Send MSN {} segment at MO {} out of order",
                    seg.msn, seg.mo
                ));
            }
            partial.extend_from_slice(&seg.payload);
            if seg.last {
                msgs.push(std::mem::take(&mut partial));
            }
        }
        Ok(msgs)
    };
    let a = sends(initiator.get(req_len..).unwrap_or(&[]))?;
    let b = sends(responder.get(rep_len..).unwrap_or(&[]))?;
    Ok((req, rep, (a, b)))
}
