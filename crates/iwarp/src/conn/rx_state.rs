//! The receive side's state, apart from the methods that drive it
//! (`rx.rs`): the staging buffer and the FPDU in progress ([`Rx`]), the
//! guessed further FPDUs of a Read Response or Write ([`Spec`]), and the
//! buffers offered to the driver's read ([`RecvBuffers`]).

use std::io::IoSliceMut;

use rpcrdma_verbs::Access;

use super::place_state::Target;
use crate::ddp::{DdpHeader, TAGGED_HEADER_LEN, UNTAGGED_HEADER_LEN};
use crate::fpdu::{MPA_CRC_LEN, MPA_LEN_FIELD};
use crate::rdmap::{Opcode, READ_REQUEST_LEN};

/// Staging buffer size.
const STAGE_CAP: usize = 16 * 1024;
/// Largest staging read when no direct placement is possible.
pub(super) const STAGE_READ: usize = 4096;
/// Staging offered behind a direct placement (trailer, next header, a bit
/// of the next payload).
pub(super) const SPILL_WITH_DIRECT: usize = 512;
/// Payload remainders at least this long are read in place.
pub(super) const DIRECT_MIN: usize = 1024;
/// Most further FPDUs of a Read Response or Write offered in one read.
pub(super) const MAX_SPEC: usize = 16;
/// Octets between two payloads of a Read Response: pad, CRC, the next
/// FPDU's length field and tagged header.
pub(super) const MAX_GAP: usize = 3 + MPA_CRC_LEN + MPA_LEN_FIELD + TAGGED_HEADER_LEN;

/// The further FPDUs of a Read Response offered by the last
/// [`Connection::recv_buffers`](super::Connection::recv_buffers) (see the
/// module documentation of `rx.rs`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Spec {
    pub(super) count: usize,
    /// The sink's key and the address of the first guessed payload.
    pub(super) stag: u32,
    pub(super) addr: u64,
    /// Octets of each gap (before payload `k`) and each payload.
    pub(super) gaps: [usize; MAX_SPEC],
    pub(super) pays: [usize; MAX_SPEC],
    /// Whether payload `k` would end the message.
    pub(super) lasts: [bool; MAX_SPEC],
    /// The message's opcode (Read Response or RDMA Write) and the right
    /// its placement needs.
    pub(super) opcode: Opcode,
    pub(super) needed: Access,
}

impl Spec {
    const NONE: Spec = Spec {
        count: 0,
        stag: 0,
        addr: 0,
        gaps: [0; MAX_SPEC],
        pays: [0; MAX_SPEC],
        lasts: [false; MAX_SPEC],
        opcode: Opcode::READ_RESPONSE,
        needed: Access::LOCAL_WRITE,
    };

    pub(super) fn payload_len(&self) -> usize {
        self.pays[..self.count].iter().sum()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum St {
    Header,
    Payload,
    Trailer,
}

#[derive(Debug)]
pub(super) struct Rx {
    pub(super) buf: Box<[u8]>,
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) st: St,
    // The FPDU in progress, set by its header (`rx_header`) and read only
    // until its trailer is through: between FPDUs (`St::Header`) they
    // describe nothing, and the whole-FPDU shortcut leaves them as they
    // are.
    pub(super) crc: u32,
    pub(super) ulpdu_len: usize,
    pub(super) hdr: Option<DdpHeader>,
    pub(super) remaining: usize,
    pub(super) target: Target,
    pub(super) ctrl: Vec<u8>,
    pub(super) direct_offered: usize,
    pub(super) dead: bool,
    /// The guessed FPDUs offered with the direct buffer.
    pub(super) spec: Spec,
    /// Where the guessed gaps (trailers and headers) and what follows the
    /// last guessed payload are read.
    pub(super) gapbuf: Box<[u8]>,
    pub(super) tailbuf: Box<[u8]>,
}

impl Rx {
    pub(super) fn new() -> Self {
        Rx {
            buf: vec![0u8; STAGE_CAP].into_boxed_slice(),
            start: 0,
            end: 0,
            st: St::Header,
            crc: 0,
            ulpdu_len: 0,
            hdr: None,
            remaining: 0,
            target: Target::Discard,
            ctrl: Vec::new(),
            direct_offered: 0,
            dead: false,
            spec: Spec::NONE,
            gapbuf: vec![0u8; MAX_SPEC * MAX_GAP].into_boxed_slice(),
            tailbuf: vec![0u8; SPILL_WITH_DIRECT].into_boxed_slice(),
        }
    }

    pub(super) fn has_room(&self) -> bool {
        !self.dead && self.end - self.start < self.buf.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.start == self.end
    }

    pub(super) fn at_fpdu_boundary(&self) -> bool {
        self.st == St::Header && self.start == self.end
    }

    pub(super) fn kill(&mut self) {
        self.dead = true;
        self.start = 0;
        self.end = 0;
    }

    pub(super) fn compact(&mut self) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 && self.buf.len() - self.end < STAGE_READ {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
    }
}

/// The buffers to read the socket into, in order (see
/// [`Connection::recv_buffers`](super::Connection::recv_buffers)):
/// `direct`, then the guessed further FPDUs of a Read Response if any,
/// then `staging`.
/// [`RecvBuffers::io_slices`] lists them all for a vectored read.
#[derive(Debug)]
pub struct RecvBuffers<'a> {
    /// The final place of the next payload octets (registered memory or a
    /// posted receive buffer), when there is one worth reading into.
    pub direct: Option<&'a mut [u8]>,
    /// Staging for whatever follows.
    pub staging: &'a mut [u8],
    /// Guessed further FPDUs: gap scratch, the sink after `direct`, and
    /// their layout.
    pub(super) spec: Option<(&'a mut [u8], &'a mut [u8], Spec)>,
}

/// Most slices [`RecvBuffers::io_slices`] fills.
pub const MAX_RECV_SLICES: usize = 2 + 2 * MAX_SPEC;

impl<'a> RecvBuffers<'a> {
    /// Total octets the buffers can take.
    pub fn len(&self) -> usize {
        let spec = self.spec.as_ref().map_or(0, |(_, _, l)| {
            l.gaps[..l.count].iter().sum::<usize>() + l.payload_len()
        });
        self.direct.as_ref().map_or(0, |d| d.len()) + spec + self.staging.len()
    }

    /// Whether no octet can be taken now.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every buffer, in the order the octets go, as slices for one
    /// vectored read; returns how many of `out` were filled (at most
    /// [`MAX_RECV_SLICES`]).
    pub fn io_slices<'b>(&'b mut self, out: &mut [IoSliceMut<'b>]) -> usize {
        let mut n = 0;
        let mut push = |s: &'b mut [u8], out: &mut [IoSliceMut<'b>]| {
            if !s.is_empty() && n < out.len() {
                out[n] = IoSliceMut::new(s);
                n += 1;
            }
        };
        if let Some(d) = self.direct.as_deref_mut() {
            push(d, out);
        }
        if let Some((gaps, pays, l)) = self.spec.as_mut() {
            let (mut gaps, mut pays): (&'b mut [u8], &'b mut [u8]) = (gaps, pays);
            for k in 0..l.count {
                let (g, rest) = std::mem::take(&mut gaps).split_at_mut(MAX_GAP);
                gaps = rest;
                push(&mut g[..l.gaps[k]], out);
                let (p, rest) = std::mem::take(&mut pays).split_at_mut(l.pays[k]);
                pays = rest;
                push(p, out);
            }
        }
        push(self.staging, out);
        n
    }
}

#[allow(dead_code)]
const _: () = assert!(UNTAGGED_HEADER_LEN + READ_REQUEST_LEN < STAGE_READ);
