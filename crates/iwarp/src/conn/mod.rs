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
//!   [`Connection::close`], [`Connection::abort`]; and
//!   [`Connection::post_send_now`], which hands a small Send to the
//!   driver's write function at once when nothing is queued before it
//!   (the driver does the I/O, the connection only sees what was written).
//! * Outputs (`poll_*`), to drain after every input or command, in this
//!   order: [`Connection::transmit_iovecs`] (then `handle_written`),
//!   [`Connection::poll_event`], [`Connection::poll_completion`],
//!   [`Connection::poll_timeout`]; finally [`Connection::wants_close`] says
//!   the driver should shut the socket down.
//!
//! Memory regions live in the protection domain's
//! [`MrTable`](crate::mr::MrTable), passed to every call that may touch
//! registered memory.
//!
//! # Where each mechanism lives
//!
//! * `setup.rs`: MPA set-up in both directions (Request, Reply, Reject,
//!   IRD/ORD, the peer-to-peer RTR);
//! * `sq.rs`: the send queue (posting, encoding as the ORD allows,
//!   completion in order);
//! * `rx.rs`: receive framing (FPDU header, payload, trailer and CRC;
//!   zero-copy read buffers);
//! * `place.rs`: where each segment's payload goes, and what completes
//!   when a message ends (a whole small Send in one step included);
//! * `inbound_read.rs`: answering the peer's RDMA Read Requests;
//! * `tx.rs`: the transmit queue of encoded FPDUs;
//! * `error.rs`: errors and their Terminate codes.
//!
//! The state the [`Connection`] holds lives in low files that import
//! nothing from this one (`rx_state.rs`: the receive framing's buffers and
//! the FPDU in progress; `place_state.rs`: the placement target and the
//! Send being received; `sq_state.rs`: send-queue and outbound Read
//! entries), so that the files above (which add `impl Connection`
//! methods) point at this file and at them, and this file only at them
//! and at the other low files (`tx.rs`, `error.rs`).
//!
//! # Errors are sticky
//!
//! The first error ([`ConnError`]) is kept: a protocol violation first
//! queues its Terminate (RFC 5040 §7 layer/type/code from
//! [`ProtocolError::term_error`]), then flushes every outstanding work
//! request, then stops reading. Later commands are refused with the same
//! state.

mod error;
mod inbound_read;
mod place;
mod place_state;
mod rx;
mod rx_state;
mod setup;
mod sq;
mod sq_state;
mod tx;

use std::collections::VecDeque;
use std::io::IoSlice;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rpcrdma_verbs::{PostError, QpCaps, RecvWr, SendWr, WcOpcode, WcStatus, WorkCompletion};

pub use error::{ApiError, ConfigError, ConnError, ProtocolError, TransportError};

use crate::ddp::{DdpHeader, UNTAGGED_HEADER_LEN};
use crate::fpdu::MPA_MAX_ULPDU;
use crate::mpa::{IrdOrd, MpaFrame, MPA_MAX_PRIVATE_DATA};
use crate::rdmap::{queue, Opcode, Terminate};
use place_state::RecvProgress;
use rx_state::Rx;
pub use rx_state::{RecvBuffers, MAX_RECV_SLICES};
use sq_state::{OrqEntry, SqEntry};
use tx::{push_message, Mark, Tx};

/// Default largest ULPDU per FPDU we send: near the 64 KiB MPA maximum, a
/// multiple of 4 so that tagged FPDUs need no pad.
pub const DEFAULT_MAX_ULPDU: usize = 65_532;
pub use crate::fpdu::MIN_MAX_ULPDU;
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

    /// Events waiting for [`Connection::poll_event`].
    pub fn events_pending(&self) -> usize {
        self.events.len()
    }

    /// Work completions waiting for [`Connection::poll_completion`].
    pub fn completions_pending(&self) -> usize {
        self.completions.len()
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

    /// At most how many slices [`Connection::transmit_iovecs`] would fill
    /// given room for all of them (a driver sizes its slice array by it:
    /// a small message needs a few, a large Read Response many).
    pub fn transmit_slices(&self) -> usize {
        self.tx.slices()
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
        self.tx.advance(n);
        let written = self.tx.written();
        while let Some(&(at, m)) = self.tx.marks.front() {
            if at > written {
                break;
            }
            self.tx.marks.pop_front();
            match m {
                Mark::Sq(seq) => self.set_sq_result(seq, WcStatus::Success, 0),
                Mark::Irq => self.irq_outstanding = self.irq_outstanding.saturating_sub(1),
            }
        }
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

    // ---------------------------------------------------------------- commands

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
