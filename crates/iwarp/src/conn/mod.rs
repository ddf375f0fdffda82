//! The per-connection state machine: MPA set-up, then DDP/RDMAP data
//! transfer with the verbs semantics (send/receive queues, RDMA Read/Write,
//! invalidation, completions).
//!
//! # Method kinds and call order
//!
//! * Getters: [`Connection::phase`], [`Connection::error`],
//!   [`Connection::negotiated`], ...
//! * Inputs (`handle_*`): [`Connection::recv_buffers`] +
//!   [`Connection::handle_read`] (zero-copy receive: the driver reads the
//!   socket straight into the buffers the connection offers; the first of
//!   them may be registered memory or a posted receive buffer),
//!   [`Connection::handle_bytes`] (same, copying from a slice),
//!   [`Connection::handle_written`], [`Connection::handle_eof`],
//!   [`Connection::handle_timeout`].
//! * Commands: [`Connection::accept`], [`Connection::reject`],
//!   [`Connection::post_send`], [`Connection::post_recv`],
//!   [`Connection::close`], [`Connection::abort`].
//! * Outputs (`poll_*`), to drain after every input or command, in this
//!   order: [`Connection::transmit_iovecs`] (then `handle_written`),
//!   [`Connection::poll_event`], [`Connection::poll_completion`],
//!   [`Connection::poll_timeout`]; finally [`Connection::wants_close`] says
//!   the driver should shut the socket down.
//!
//! Memory regions live in the protection domain's [`MrTable`], passed to
//! every call that may touch registered memory.
//!
//! # Errors are sticky
//!
//! The first error ([`ConnError`]) is kept: a protocol violation first
//! queues its Terminate (RFC 5040 §7 layer/type/code from
//! [`ProtocolError::term_error`]), then flushes every outstanding work
//! request, then stops reading. Later commands are refused with the same
//! state.

mod error;
mod rx;
mod tx;

use std::collections::VecDeque;
use std::io::IoSlice;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rpcrdma_verbs::{
    Access, PostError, QpCaps, RecvWr, SendOp, SendWr, Sge, WcOpcode, WcStatus, WorkCompletion,
};

pub use error::{ApiError, ConfigError, ConnError, ProtocolError, TransportError};

use crate::ddp::{DdpHeader, TAGGED_HEADER_LEN, UNTAGGED_HEADER_LEN};
use crate::fpdu::MPA_MAX_ULPDU;
use crate::mpa::{FrameKind, IrdOrd, MpaFlags, MpaFrame, IRD_ORD_LEN, MPA_MAX_PRIVATE_DATA};
use crate::mr::MrTable;
use crate::rdmap::{queue, Opcode, ReadRequest, Terminate, READ_REQUEST_LEN};
pub use rx::RecvBuffers;
use rx::Rx;
use tx::{push_message, push_small, Mark, Tx, INLINE_COPY_MAX};

/// Default largest ULPDU per FPDU we send: near the 64 KiB MPA maximum, a
/// multiple of 4 so that tagged FPDUs need no pad.
pub const DEFAULT_MAX_ULPDU: usize = 65_532;
/// Smallest allowed `max_ulpdu` (room for an untagged header, a Read
/// Request and some payload).
pub const MIN_MAX_ULPDU: usize = 64;
/// Hard cap on the IRD we grant a peer (the inbound Read queue's bound).
pub const MAX_IRD: u16 = 1024;

/// Which ready-to-receive messages we offer (initiator) in RFC 6581
/// peer-to-peer mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum P2pMode {
    /// No peer-to-peer mode: the initiator sends its first FPDU whenever
    /// it likes (revision 1 always works this way).
    Off,
    /// Offer a zero-length RDMA Write as RTR (what Linux siw prefers).
    #[default]
    Write,
    /// Offer a zero-length RDMA Read as RTR.
    Read,
    /// Offer both; the responder picks.
    Any,
}

/// The RTR message agreed in peer-to-peer mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rtr {
    /// Zero-length RDMA Write.
    Write,
    /// Zero-length RDMA Read (answered by a zero-length Read Response).
    Read,
}

/// Connection parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// MPA revision of our Request (1 or 2). A responder accepts both.
    pub revision: u8,
    /// Ask for CRC32c. CRC is used if either side asks (RFC 5044 §7.1).
    pub crc: bool,
    /// Peer-to-peer RTR offer (initiator, revision 2 only).
    pub p2p: P2pMode,
    /// Queue depths and the IRD/ORD we ask for.
    pub caps: QpCaps,
    /// Largest ULPDU per FPDU we send (MULPDU), at most 65535.
    pub max_ulpdu: usize,
    /// Largest MPA private data (PD_Length, IRD/ORD word included) we send
    /// or accept; at most 512. Linux siw accepts 256.
    pub max_private_data: usize,
    /// How long MPA set-up may take.
    pub mpa_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            revision: 2,
            crc: false,
            p2p: P2pMode::Write,
            caps: QpCaps::default(),
            max_ulpdu: DEFAULT_MAX_ULPDU,
            max_private_data: MPA_MAX_PRIVATE_DATA,
            mpa_timeout: Duration::from_secs(10),
        }
    }
}

impl Config {
    fn validate(&self) -> Result<(), ApiError> {
        if !(1..=2).contains(&self.revision) {
            return Err(ConfigError::MpaRevision(self.revision).into());
        }
        if !(MIN_MAX_ULPDU..=MPA_MAX_ULPDU).contains(&self.max_ulpdu) {
            return Err(ConfigError::MaxUlpdu(self.max_ulpdu).into());
        }
        if self.max_private_data > MPA_MAX_PRIVATE_DATA {
            return Err(ConfigError::MaxPrivateData(self.max_private_data).into());
        }
        ConfigError::check_caps(&self.caps)?;
        Ok(())
    }
}

/// Which side of MPA set-up we are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Sent the MPA Request.
    Initiator,
    /// Received it.
    Responder,
}

/// Where the connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Responder: waiting for the MPA Request.
    AwaitRequest,
    /// Responder: Request received ([`Event::ConnectRequest`]), waiting for
    /// [`Connection::accept`] or [`Connection::reject`].
    AwaitAccept,
    /// Initiator: Request sent, waiting for the Reply.
    AwaitReply,
    /// Connected: FPDUs flow.
    Connected,
    /// Graceful close requested: queued data drains, then the stream closes.
    Closing,
    /// Ended; see [`Connection::error`].
    Closed,
}

impl Phase {
    const fn name(self) -> &'static str {
        match self {
            Phase::AwaitRequest => "waiting for the MPA Request",
            Phase::AwaitAccept => "waiting for accept or reject",
            Phase::AwaitReply => "waiting for the MPA Reply",
            Phase::Connected => "connected",
            Phase::Closing => "closing",
            Phase::Closed => "closed",
        }
    }
}

/// What the peer's MPA Request asked for (responder side).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerRequest {
    /// MPA revision.
    pub revision: u8,
    /// The initiator asked for CRC.
    pub crc: bool,
    /// The RFC 6581 word, if sent.
    pub ird_ord: Option<IrdOrd>,
    /// The Upper Layer's private data (after the IRD/ORD word).
    pub private_data: Bytes,
}

/// What was agreed at set-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiated {
    /// MPA revision in use.
    pub revision: u8,
    /// CRC32c on every FPDU.
    pub crc: bool,
    /// Our inbound RDMA Read limit.
    pub ird: u16,
    /// Our outbound RDMA Read limit.
    pub ord: u16,
    /// The peer-to-peer RTR message, if any.
    pub rtr: Option<Rtr>,
    /// The peer's private data (Upper Layer part).
    pub peer_private_data: Bytes,
    /// The peer's IRD/ORD word, if it sent one.
    pub peer_ird_ord: Option<IrdOrd>,
}

/// Something the driver or application must learn about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Responder: a Request arrived; answer with accept or reject.
    ConnectRequest(PeerRequest),
    /// The connection is up (initiator: Reply accepted; responder: accept
    /// called).
    Established(Negotiated),
    /// The connection ended (or was refused); every work request has been
    /// completed or flushed.
    Closed(ConnError),
}

#[derive(Debug)]
struct SqEntry {
    seq: u64,
    wr_id: u64,
    opcode: WcOpcode,
    signaled: bool,
    result: Option<(WcStatus, u32)>,
}

#[derive(Debug)]
struct OrqEntry {
    /// The send-queue entry, or `None` for our RTR zero-length Read.
    seq: Option<u64>,
    sink_stag: u32,
    sink_to: u64,
    len: u64,
    received: u64,
}

#[derive(Debug)]
struct RecvProgress {
    wr: RecvWr,
    msn: u32,
    received: usize,
    opcode: Opcode,
    invalidate: u32,
}

/// One iWARP connection (MPA + DDP + RDMAP) without I/O.
///
/// See the [module documentation](self) for the call order. Example: two
/// connections wired back to back.
///
/// ```
/// use bytes::{Bytes, BytesMut};
/// use std::time::Instant;
/// use rpcrdma_iwarp::conn::{Config, Connection, Event};
/// use rpcrdma_iwarp::mr::MrTable;
/// use rpcrdma_verbs::{RecvWr, SendWr, Sge, WcStatus};
///
/// let now = Instant::now();
/// let (mut ta, mut tb) = (MrTable::new(8), MrTable::new(8));
/// let mut a = Connection::initiator(Config::default(), Bytes::from_static(b"hi"), now).unwrap();
/// let mut b = Connection::responder(Config::default(), now).unwrap();
/// let shuttle = |x: &mut Connection, tx: &mut MrTable, y: &mut Connection, ty: &mut MrTable| {
///     let mut buf = BytesMut::new();
///     x.poll_transmit(&mut buf);
///     y.handle_bytes(&buf, ty);
///     let _ = tx;
/// };
/// shuttle(&mut a, &mut ta, &mut b, &mut tb); // MPA Request
/// assert!(matches!(b.poll_event(), Some(Event::ConnectRequest(r)) if &r.private_data[..] == b"hi"));
/// b.accept(Bytes::from_static(b"ok")).unwrap();
/// b.post_recv(RecvWr { wr_id: 1, buf: BytesMut::zeroed(64) }).unwrap();
/// shuttle(&mut b, &mut tb, &mut a, &mut ta); // MPA Reply
/// assert!(matches!(a.poll_event(), Some(Event::Established(_))));
/// a.post_send(SendWr::send(9, vec![Sge::Bytes(Bytes::from_static(b"ping"))]), &mut ta).unwrap();
/// shuttle(&mut a, &mut ta, &mut b, &mut tb); // RTR + Send
/// let wc = b.poll_completion().unwrap();
/// assert_eq!((wc.wr_id, wc.status, wc.data()), (1, WcStatus::Success, Some(&b"ping"[..])));
/// assert_eq!(a.poll_completion().unwrap().wr_id, 9);
/// ```
#[derive(Debug)]
pub struct Connection {
    cfg: Config,
    role: Role,
    phase: Phase,
    error: Option<ConnError>,
    deadline: Option<Instant>,
    events: VecDeque<Event>,
    completions: VecDeque<WorkCompletion>,
    /// Our Request (initiator) or the peer's (responder).
    request: Option<MpaFrame>,
    negotiated: Option<Negotiated>,
    crc: bool,
    ird: u16,
    ord: u16,
    rx: Rx,
    tx: Tx,
    first_fpdu_seen: bool,
    sq: VecDeque<SqEntry>,
    sq_pending: VecDeque<(u64, SendWr)>,
    next_seq: u64,
    rq: VecDeque<RecvWr>,
    recv_cur: Option<RecvProgress>,
    orq: VecDeque<OrqEntry>,
    irq_outstanding: usize,
    tx_msn: [u32; 3],
    rx_msn: [u32; 3],
    passed: Vec<Mark>,
}

impl Connection {
    fn new(cfg: Config, role: Role, phase: Phase, now: Instant) -> Self {
        let deadline = now.checked_add(cfg.mpa_timeout);
        Connection {
            ird: cfg.caps.ird,
            ord: cfg.caps.ord,
            cfg,
            role,
            phase,
            error: None,
            deadline,
            events: VecDeque::new(),
            completions: VecDeque::new(),
            request: None,
            negotiated: None,
            crc: false,
            rx: Rx::new(),
            tx: Tx::default(),
            first_fpdu_seen: false,
            sq: VecDeque::new(),
            sq_pending: VecDeque::new(),
            next_seq: 0,
            rq: VecDeque::new(),
            recv_cur: None,
            orq: VecDeque::new(),
            irq_outstanding: 0,
            tx_msn: [1; 3],
            rx_msn: [1; 3],
            passed: Vec::new(),
        }
    }

    /// An initiator: queues the MPA Request carrying `private_data` (the
    /// Upper Layer's part; the IRD/ORD word is added for revision 2).
    pub fn initiator(cfg: Config, private_data: Bytes, now: Instant) -> Result<Self, ApiError> {
        cfg.validate()?;
        let rev2 = cfg.revision == 2;
        let pd_len = private_data.len() + if rev2 { IRD_ORD_LEN } else { 0 };
        if pd_len > cfg.max_private_data {
            return Err(ApiError::PrivateDataTooLong {
                len: pd_len,
                max: cfg.max_private_data,
            });
        }
        let mut flags = MpaFlags::default().with(MpaFlags::CRC, cfg.crc);
        let ird_ord = rev2.then(|| {
            flags = flags.with(MpaFlags::ENHANCED, true);
            let (write_rtr, read_rtr) = match cfg.p2p {
                P2pMode::Off => (false, false),
                P2pMode::Write => (true, false),
                P2pMode::Read => (false, true),
                P2pMode::Any => (true, true),
            };
            IrdOrd {
                ird: cfg.caps.ird,
                ord: cfg.caps.ord,
                peer_to_peer: cfg.p2p != P2pMode::Off,
                send_rtr: false,
                write_rtr,
                read_rtr,
            }
        });
        let req = MpaFrame {
            kind: FrameKind::Request,
            flags,
            revision: cfg.revision,
            ird_ord,
            private_data,
        };
        let mut c = Connection::new(cfg, Role::Initiator, Phase::AwaitReply, now);
        c.queue_mpa(&req);
        c.request = Some(req);
        Ok(c)
    }

    /// A responder waiting for the MPA Request.
    pub fn responder(cfg: Config, now: Instant) -> Result<Self, ApiError> {
        cfg.validate()?;
        Ok(Connection::new(
            cfg,
            Role::Responder,
            Phase::AwaitRequest,
            now,
        ))
    }

    fn queue_mpa(&mut self, f: &MpaFrame) {
        let mut b = BytesMut::with_capacity(f.buffer_len());
        // Lengths were checked by the caller; a failure here is a bug in
        // this module, and the frame is then simply not sent.
        if f.emit(&mut b).is_ok() {
            self.tx.push(b.freeze());
        }
    }

    // ---------------------------------------------------------------- getters

    /// Which side of set-up we are.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Where the connection is.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The error that ended the connection, if any.
    pub fn error(&self) -> Option<&ConnError> {
        self.error.as_ref()
    }

    /// What was agreed at set-up (once connected).
    pub fn negotiated(&self) -> Option<&Negotiated> {
        self.negotiated.as_ref()
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Whether the connection can take more input now (the driver should
    /// wait for the socket to be readable only if so).
    pub fn wants_read(&self) -> bool {
        self.error.is_none() && self.phase != Phase::AwaitAccept && self.rx.has_room()
    }

    /// Whether there are octets to write now.
    pub fn wants_write(&self) -> bool {
        self.tx.writable() > 0
    }

    /// Whether the driver should shut the stream down: the connection has
    /// ended and everything it queued (a Reject, a Terminate, the last
    /// messages of a graceful close) has been written.
    pub fn wants_close(&self) -> bool {
        self.phase == Phase::Closed && self.tx.writable() == 0
    }

    /// Send-queue entries not yet completed.
    pub fn send_queue_len(&self) -> usize {
        self.sq.len()
    }

    /// Receives posted and not yet completed.
    pub fn recv_queue_len(&self) -> usize {
        self.rq.len() + usize::from(self.recv_cur.is_some())
    }

    // ---------------------------------------------------------------- outputs

    /// The next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The next work completion (send and receive queues interleaved; each
    /// queue's completions are in posting order).
    pub fn poll_completion(&mut self) -> Option<WorkCompletion> {
        self.completions.pop_front()
    }

    /// When [`Connection::handle_timeout`] must be called next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.phase {
            Phase::AwaitRequest | Phase::AwaitReply => self.deadline,
            _ => None,
        }
    }

    /// Fills `out` with the octets to write now; returns how many slices
    /// were used. Report what was written with
    /// [`Connection::handle_written`].
    pub fn transmit_iovecs<'a>(&'a self, out: &mut [IoSlice<'a>]) -> usize {
        self.tx.iovecs(out)
    }

    /// Appends every octet that may be written now to `out` and treats them
    /// as written (a convenience for tests and simple drivers).
    pub fn poll_transmit(&mut self, out: &mut BytesMut) -> usize {
        let n = self.tx.copy_out(out);
        self.handle_written(n);
        n
    }

    // ---------------------------------------------------------------- inputs

    /// Records that `n` octets from [`Connection::transmit_iovecs`] were
    /// written; completes Sends and Writes whose last octet went out.
    pub fn handle_written(&mut self, n: usize) {
        let mut passed = std::mem::take(&mut self.passed);
        self.tx.advance(n, &mut passed);
        for m in passed.drain(..) {
            match m {
                Mark::Sq(seq) => self.set_sq_result(seq, WcStatus::Success, 0),
                Mark::Irq => self.irq_outstanding = self.irq_outstanding.saturating_sub(1),
            }
        }
        self.passed = passed;
        self.drain_sq();
        if self.phase == Phase::Closing && self.tx.pending() == 0 {
            self.fail(ConnError::LocalClose, None);
        }
    }

    /// Time passed; fails MPA set-up that has not finished by its deadline.
    /// Extra calls are harmless.
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(d) = self.poll_timeout() {
            if now >= d {
                self.fail(ConnError::MpaTimeout, None);
            }
        }
    }

    /// The stream ended (the peer closed its side).
    pub fn handle_eof(&mut self) {
        if self.error.is_some() {
            return;
        }
        let err = match self.phase {
            Phase::AwaitRequest | Phase::AwaitReply | Phase::AwaitAccept => {
                if self.rx.is_empty() && self.phase != Phase::AwaitAccept {
                    ConnError::PeerClosed
                } else {
                    ConnError::Truncated("MPA connection set-up")
                }
            }
            _ if self.rx.at_fpdu_boundary() => ConnError::PeerClosed,
            _ => ConnError::Truncated("an FPDU"),
        };
        self.fail(err, None);
    }

    /// The transport failed (reset, I/O error, completion queue overrun):
    /// the connection ends with [`ConnError::Transport`].
    pub fn handle_transport_failure(&mut self, err: TransportError) {
        self.tx.clear();
        self.fail(ConnError::Transport(err), None);
    }

    /// The transport failed, described only in words
    /// ([`TransportError::Other`]); prefer
    /// [`Connection::handle_transport_failure`].
    pub fn handle_transport_error(&mut self, reason: String) {
        self.handle_transport_failure(TransportError::Other(reason));
    }

    // ---------------------------------------------------------------- commands

    /// Sets queue depths and IRD/ORD before the connection is up (a
    /// responder learns them only when the application accepts).
    pub fn set_caps(&mut self, caps: QpCaps) -> Result<(), ApiError> {
        if !matches!(self.phase, Phase::AwaitRequest | Phase::AwaitAccept) {
            return Err(ApiError::WrongState {
                command: "set_caps",
                state: self.phase.name(),
            });
        }
        ConfigError::check_caps(&caps)?;
        self.cfg.caps = caps;
        self.ird = caps.ird;
        self.ord = caps.ord;
        Ok(())
    }

    /// Responder: accepts the Request, answering with `private_data`.
    pub fn accept(&mut self, private_data: Bytes) -> Result<(), ApiError> {
        if self.phase != Phase::AwaitAccept {
            return Err(ApiError::WrongState {
                command: "accept",
                state: self.phase.name(),
            });
        }
        let Some(req) = self.request.clone() else {
            return Err(ApiError::WrongState {
                command: "accept",
                state: "without a request",
            });
        };
        let enhanced = req.ird_ord.is_some();
        let pd_len = private_data.len() + if enhanced { IRD_ORD_LEN } else { 0 };
        if pd_len > self.cfg.max_private_data {
            return Err(ApiError::PrivateDataTooLong {
                len: pd_len,
                max: self.cfg.max_private_data,
            });
        }
        self.crc = req.flags.has(MpaFlags::CRC) || self.cfg.crc;
        let mut rtr = None;
        let reply_word = req.ird_ord.map(|w| {
            // Linux siw as initiator refuses a Reply whose ORD exceeds its
            // IRD; mirror the initiator: our ORD at most its IRD, our IRD at
            // least its ORD (up to MAX_IRD).
            self.ord = self.cfg.caps.ord.min(w.ird);
            self.ird = self.cfg.caps.ird.max(w.ord).min(MAX_IRD);
            let (mut write_rtr, mut read_rtr) = (false, false);
            if w.peer_to_peer {
                if w.write_rtr || !w.read_rtr {
                    write_rtr = true;
                    rtr = Some(Rtr::Write);
                } else {
                    read_rtr = true;
                    rtr = Some(Rtr::Read);
                }
            }
            IrdOrd {
                ird: self.ird,
                ord: self.ord,
                peer_to_peer: w.peer_to_peer,
                send_rtr: false,
                write_rtr,
                read_rtr,
            }
        });
        let reply = MpaFrame {
            kind: FrameKind::Reply,
            flags: MpaFlags::default()
                .with(MpaFlags::CRC, self.crc)
                .with(MpaFlags::ENHANCED, enhanced),
            revision: req.revision,
            ird_ord: reply_word,
            private_data,
        };
        self.queue_mpa(&reply);
        // RFC 5044 §7.1.3 (and Linux siw as initiator, which drops the
        // connection if anything follows the Reply before its first FPDU):
        // the responder sends no FPDU before it has received one.
        self.tx.close_gate();
        self.connected(req.revision, rtr, req.private_data.clone(), req.ird_ord);
        Ok(())
    }

    /// Responder: rejects the Request, answering with `private_data`; the
    /// connection then closes ([`ConnError::RejectedLocally`]).
    pub fn reject(&mut self, private_data: Bytes) -> Result<(), ApiError> {
        if self.phase != Phase::AwaitAccept {
            return Err(ApiError::WrongState {
                command: "reject",
                state: self.phase.name(),
            });
        }
        self.send_reject(private_data)?;
        self.fail(ConnError::RejectedLocally { markers: false }, None);
        Ok(())
    }

    fn send_reject(&mut self, private_data: Bytes) -> Result<(), ApiError> {
        let (revision, enhanced) = match &self.request {
            Some(r) if (1..=2).contains(&r.revision) => (r.revision, r.ird_ord.is_some()),
            _ => (2, false),
        };
        let pd_len = private_data.len() + if enhanced { IRD_ORD_LEN } else { 0 };
        if pd_len > self.cfg.max_private_data {
            return Err(ApiError::PrivateDataTooLong {
                len: pd_len,
                max: self.cfg.max_private_data,
            });
        }
        let reply = MpaFrame {
            kind: FrameKind::Reply,
            flags: MpaFlags(MpaFlags::REJECT).with(MpaFlags::ENHANCED, enhanced),
            revision,
            ird_ord: enhanced.then(IrdOrd::default),
            private_data,
        };
        self.queue_mpa(&reply);
        Ok(())
    }

    fn connected(
        &mut self,
        revision: u8,
        rtr: Option<Rtr>,
        peer_pd: Bytes,
        peer_word: Option<IrdOrd>,
    ) {
        self.phase = Phase::Connected;
        self.deadline = None;
        let n = Negotiated {
            revision,
            crc: self.crc,
            ird: self.ird,
            ord: self.ord,
            rtr,
            peer_private_data: peer_pd,
            peer_ird_ord: peer_word,
        };
        self.negotiated = Some(n.clone());
        self.events.push_back(Event::Established(n));
    }

    /// Posts a receive buffer (usable size `wr.buf.len()`).
    pub fn post_recv(&mut self, wr: RecvWr) -> Result<(), PostError> {
        if matches!(self.phase, Phase::Closed | Phase::Closing) {
            return Err(PostError::NotConnected {
                state: self.phase.name(),
            });
        }
        let depth = self.cfg.caps.recv_depth;
        if self.recv_queue_len() >= depth as usize {
            return Err(PostError::QueueFull {
                queue: "receive",
                depth,
            });
        }
        self.rq.push_back(wr);
        Ok(())
    }

    /// Posts a send-queue work request. Local keys are checked now (an
    /// invalid one is refused with [`PostError::LocalProtection`] and
    /// nothing is queued).
    pub fn post_send(&mut self, wr: SendWr, mrs: &mut MrTable) -> Result<(), PostError> {
        if self.phase != Phase::Connected {
            return Err(PostError::NotConnected {
                state: self.phase.name(),
            });
        }
        let depth = self.cfg.caps.send_depth;
        if self.sq.len() >= depth as usize {
            return Err(PostError::QueueFull {
                queue: "send",
                depth,
            });
        }
        check_wr(&wr, mrs)?;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.sq.push_back(SqEntry {
            seq,
            wr_id: wr.wr_id,
            opcode: wr.wc_opcode(),
            signaled: wr.signaled,
            result: None,
        });
        self.sq_pending.push_back((seq, wr));
        self.pump(mrs);
        self.drain_sq();
        Ok(())
    }

    /// Graceful close: what is queued is sent, then the connection ends
    /// ([`ConnError::LocalClose`]); everything not complete is flushed.
    pub fn close(&mut self) {
        match self.phase {
            Phase::Connected => {
                self.phase = Phase::Closing;
                // Requests still waiting for an ORD slot are flushed now; the
                // rest were queued for the wire and drain.
                let pending: Vec<u64> = self.sq_pending.drain(..).map(|(s, _)| s).collect();
                for s in pending {
                    self.set_sq_result(s, WcStatus::WrFlush, 0);
                }
                self.drain_sq();
                // A responder that never received an FPDU has nothing it may send.
                if self.tx.gated() {
                    self.tx.clear();
                }
                if self.tx.pending() == 0 {
                    self.fail(ConnError::LocalClose, None);
                }
            }
            Phase::Closing | Phase::Closed => {}
            _ => self.fail(ConnError::LocalClose, None),
        }
    }

    /// Abortive close: drops unsent data and flushes everything.
    pub fn abort(&mut self) {
        self.tx.clear();
        self.fail(ConnError::LocalAbort, None);
    }

    // ---------------------------------------------------------------- send queue

    fn set_sq_result(&mut self, seq: u64, status: WcStatus, len: u32) {
        let Some(front) = self.sq.front() else { return };
        let Some(idx) = seq.checked_sub(front.seq) else {
            return;
        };
        if let Some(e) = self.sq.get_mut(idx as usize) {
            if e.result.is_none() {
                e.result = Some((status, len));
            }
        }
    }

    fn drain_sq(&mut self) {
        while let Some(e) = self.sq.front() {
            let Some((status, len)) = e.result else { break };
            let e = self.sq.pop_front().expect("front exists");
            if e.signaled || status != WcStatus::Success {
                self.completions.push_back(WorkCompletion {
                    wr_id: e.wr_id,
                    opcode: e.opcode,
                    status,
                    byte_len: len,
                    invalidated_rkey: None,
                    solicited: false,
                    buf: None,
                });
            }
        }
    }

    /// Encodes waiting work requests, in order, while the ORD allows.
    fn pump(&mut self, mrs: &mut MrTable) {
        while let Some((_, wr)) = self.sq_pending.front() {
            if matches!(wr.op, SendOp::Read { .. }) && self.orq.len() >= usize::from(self.ord) {
                break;
            }
            let Some((seq, wr)) = self.sq_pending.pop_front() else {
                break;
            };
            if let Err(e) = self.encode_wr(seq, wr, mrs) {
                self.set_sq_result(seq, WcStatus::LocalProtection, 0);
                self.fail(ConnError::LocalProtection(e), None);
                return;
            }
        }
    }

    fn gather(sges: &[Sge], mrs: &MrTable) -> Result<(Vec<Bytes>, usize), crate::mr::AccessError> {
        let mut pieces = Vec::with_capacity(sges.len());
        let mut total = 0usize;
        for s in sges {
            let b = match s {
                Sge::Bytes(b) => b.clone(),
                Sge::Region(r) => mrs.source(r.lkey, r.addr, r.len as usize, Access::LOCAL_READ)?,
            };
            total += b.len();
            pieces.push(b);
        }
        Ok((pieces, total))
    }

    fn encode_wr(
        &mut self,
        seq: u64,
        wr: SendWr,
        mrs: &mut MrTable,
    ) -> Result<(), crate::mr::AccessError> {
        let (crc, max_ulpdu) = (self.crc, self.cfg.max_ulpdu);
        match wr.op {
            SendOp::Send {
                sges,
                solicited,
                invalidate,
            } => {
                let opcode = match (solicited, invalidate.is_some()) {
                    (false, false) => Opcode::SEND,
                    (false, true) => Opcode::SEND_INVALIDATE,
                    (true, false) => Opcode::SEND_SE,
                    (true, true) => Opcode::SEND_SE_INVALIDATE,
                };
                let inv = invalidate.unwrap_or(0);
                let total: usize = sges.iter().map(Sge::len).sum();
                if total <= INLINE_COPY_MAX && total + UNTAGGED_HEADER_LEN <= max_ulpdu {
                    // Small Send: one contiguous FPDU, no payload references.
                    let msn = self.next_tx_msn(queue::SEND);
                    let h = DdpHeader::untagged(true, opcode, inv, queue::SEND, msn, 0);
                    self.push_small_from(&h, &sges, total, mrs)?;
                } else {
                    let (pieces, total) = Self::gather(&sges, mrs)?;
                    let msn = self.next_tx_msn(queue::SEND);
                    push_message(
                        &mut self.tx,
                        crc,
                        max_ulpdu,
                        UNTAGGED_HEADER_LEN,
                        &pieces,
                        total,
                        |off, last| {
                            DdpHeader::untagged(last, opcode, inv, queue::SEND, msn, off as u32)
                        },
                    );
                }
                self.tx.mark(Mark::Sq(seq));
            }
            SendOp::Write { sges, remote } => {
                let (pieces, total) = Self::gather(&sges, mrs)?;
                push_message(
                    &mut self.tx,
                    crc,
                    max_ulpdu,
                    TAGGED_HEADER_LEN,
                    &pieces,
                    total,
                    |off, last| {
                        DdpHeader::tagged(
                            last,
                            Opcode::WRITE,
                            remote.rkey,
                            remote.addr.wrapping_add(off as u64),
                        )
                    },
                );
                self.tx.mark(Mark::Sq(seq));
            }
            SendOp::Read { sink, remote } => {
                mrs.check(
                    sink.lkey,
                    sink.addr,
                    u64::from(sink.len),
                    Access::LOCAL_WRITE,
                )?;
                self.queue_read_request(
                    Some(seq),
                    ReadRequest {
                        sink_stag: sink.lkey,
                        sink_to: sink.addr,
                        size: sink.len,
                        src_stag: remote.rkey,
                        src_to: remote.addr,
                    },
                );
            }
            SendOp::LocalInvalidate { key } => {
                let status = if mrs.invalidate(key).is_ok() {
                    WcStatus::Success
                } else {
                    WcStatus::LocalProtection
                };
                self.set_sq_result(seq, status, 0);
            }
            // Refused by check_wr at post time.
            _ => self.set_sq_result(seq, WcStatus::LocalQpOperation, 0),
        }
        Ok(())
    }

    /// Queues one small FPDU whose payload is gathered from `sges`.
    fn push_small_from(
        &mut self,
        h: &DdpHeader,
        sges: &[Sge],
        total: usize,
        mrs: &MrTable,
    ) -> Result<(), crate::mr::AccessError> {
        let mut owned: [Option<Bytes>; 4] = Default::default();
        let mut slices: [&[u8]; 4] = [&[]; 4];
        if sges.len() <= 4 {
            for (i, s) in sges.iter().enumerate() {
                if let Sge::Region(r) = s {
                    owned[i] =
                        Some(mrs.source(r.lkey, r.addr, r.len as usize, Access::LOCAL_READ)?);
                }
            }
            for (i, s) in sges.iter().enumerate() {
                slices[i] = match (s, &owned[i]) {
                    (Sge::Bytes(b), _) => &b[..],
                    (_, Some(b)) => &b[..],
                    _ => &[],
                };
            }
            push_small(&mut self.tx, self.crc, h, &slices[..sges.len()], total);
        } else {
            let (pieces, _) = Self::gather(sges, mrs)?;
            let refs: Vec<&[u8]> = pieces.iter().map(|b| &b[..]).collect();
            push_small(&mut self.tx, self.crc, h, &refs, total);
        }
        Ok(())
    }

    fn next_tx_msn(&mut self, qn: u32) -> u32 {
        let m = &mut self.tx_msn[qn as usize];
        let v = *m;
        *m = m.wrapping_add(1);
        v
    }

    fn queue_read_request(&mut self, seq: Option<u64>, rr: ReadRequest) {
        let msn = self.next_tx_msn(queue::READ_REQUEST);
        let body = Bytes::copy_from_slice(&rr.to_bytes());
        push_message(
            &mut self.tx,
            self.crc,
            self.cfg.max_ulpdu,
            UNTAGGED_HEADER_LEN,
            &[body],
            READ_REQUEST_LEN,
            |_, _| DdpHeader::untagged(true, Opcode::READ_REQUEST, 0, queue::READ_REQUEST, msn, 0),
        );
        self.orq.push_back(OrqEntry {
            seq,
            sink_stag: rr.sink_stag,
            sink_to: rr.sink_to,
            len: u64::from(rr.size),
            received: 0,
        });
    }

    // ---------------------------------------------------------------- failure

    /// Ends the connection with `err` (sticky): queues `terminate` if given
    /// and FPDUs may flow, flushes every outstanding work request.
    fn fail(&mut self, err: ConnError, terminate: Option<Terminate>) {
        if self.error.is_some() {
            return;
        }
        tracing::debug!(error = %err, "iwarp connection ends");
        self.rx.kill();
        if let Some(t) = terminate {
            if matches!(self.phase, Phase::Connected | Phase::Closing) {
                self.queue_terminate(&t);
            }
        }
        self.flush(err.culprit_status(), &err);
        self.phase = Phase::Closed;
        self.error = Some(err.clone());
        self.events.push_back(Event::Closed(err));
    }

    fn queue_terminate(&mut self, t: &Terminate) {
        let mut body = BytesMut::with_capacity(t.buffer_len());
        t.emit(&mut body);
        let len = body.len();
        let msn = self.next_tx_msn(queue::TERMINATE);
        // The Terminate must go out even if the responder's gate is closed.
        self.tx.open_gate();
        push_message(
            &mut self.tx,
            self.crc,
            self.cfg.max_ulpdu,
            UNTAGGED_HEADER_LEN,
            &[body.freeze()],
            len,
            |_, _| DdpHeader::untagged(true, Opcode::TERMINATE, 0, queue::TERMINATE, msn, 0),
        );
    }

    fn flush(&mut self, culprit: WcStatus, err: &ConnError) {
        let mut first = true;
        for e in self.sq.iter_mut() {
            if e.result.is_none() {
                let status = if first { culprit } else { WcStatus::WrFlush };
                first = false;
                e.result = Some((status, 0));
            }
        }
        self.sq_pending.clear();
        self.orq.clear();
        self.drain_sq();
        if let Some(cur) = self.recv_cur.take() {
            let status = match err {
                ConnError::Protocol(ProtocolError::MessageTooLong { .. }) => WcStatus::LocalLength,
                ConnError::Protocol(ProtocolError::CannotInvalidate(_)) => {
                    WcStatus::RemoteInvalidateFailed
                }
                _ => WcStatus::WrFlush,
            };
            self.complete_recv(cur.wr, status, 0, None, false);
        }
        while let Some(wr) = self.rq.pop_front() {
            self.complete_recv(wr, WcStatus::WrFlush, 0, None, false);
        }
    }

    fn complete_recv(
        &mut self,
        wr: RecvWr,
        status: WcStatus,
        len: usize,
        inv: Option<u32>,
        solicited: bool,
    ) {
        // The buffer keeps its posted length; `byte_len` says how much of
        // it the message filled (verbs semantics).
        let buf = wr.buf;
        self.completions.push_back(WorkCompletion {
            wr_id: wr.wr_id,
            opcode: WcOpcode::Recv,
            status,
            byte_len: len as u32,
            invalidated_rkey: inv,
            solicited,
            buf: Some(buf),
        });
    }
}

/// Synchronous checks of a work request's local keys.
fn check_wr(wr: &SendWr, mrs: &MrTable) -> Result<(), PostError> {
    let prot = |key: u32, e: crate::mr::AccessError| PostError::LocalProtection {
        key,
        reason: e.to_string(),
    };
    let check_sges = |sges: &[Sge]| -> Result<u64, PostError> {
        let mut total = 0u64;
        for s in sges {
            if let Sge::Region(r) = s {
                mrs.check(r.lkey, r.addr, u64::from(r.len), Access::LOCAL_READ)
                    .map_err(|e| prot(r.lkey, e))?;
            }
            total += s.len() as u64;
        }
        Ok(total)
    };
    match &wr.op {
        SendOp::Send { sges, .. } | SendOp::Write { sges, .. } => {
            if check_sges(sges)? > u64::from(u32::MAX) {
                return Err(PostError::Invalid {
                    reason: "message longer than 4 GiB",
                });
            }
        }
        SendOp::Read { sink, .. } => {
            mrs.check(
                sink.lkey,
                sink.addr,
                u64::from(sink.len),
                Access::LOCAL_WRITE,
            )
            .map_err(|e| prot(sink.lkey, e))?;
        }
        SendOp::LocalInvalidate { .. } => {}
        #[allow(unreachable_patterns)]
        _ => {
            return Err(PostError::Invalid {
                reason: "unsupported work request",
            })
        }
    }
    Ok(())
}
