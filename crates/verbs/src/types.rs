//! Plain data types of the verbs interface: access rights, scatter/gather
//! elements, work requests and work completions.

use bytes::{Bytes, BytesMut};

use crate::disconnect_cause::{ProtocolViolation, TransportFailure};

/// Access rights of a memory region. Local read is always granted.
///
/// ```
/// use rpcrdma_verbs::Access;
/// let a = Access::LOCAL_WRITE | Access::REMOTE_WRITE;
/// assert!(a.contains(Access::REMOTE_WRITE));
/// assert!(!a.contains(Access::REMOTE_READ));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Access(u32);

impl Access {
    /// Only local read (the default of every region).
    pub const LOCAL_READ: Access = Access(0);
    /// The local provider may write into the region: receive buffers,
    /// RDMA Read sinks.
    pub const LOCAL_WRITE: Access = Access(1);
    /// The peer may RDMA Write into the region.
    pub const REMOTE_WRITE: Access = Access(2);
    /// The peer may RDMA Read from the region.
    pub const REMOTE_READ: Access = Access(4);
    /// Not a right but the owner's promise about a region the peer may
    /// RDMA Write ([`Access::REMOTE_WRITE`]): the owner reads only the
    /// octets the peer's Writes target, so the provider may change other
    /// octets of the region while the peer writes. Software iWARP then
    /// places the FPDUs of an RDMA Write that follow the current one on a
    /// guess, several per socket read, and a wrong guess may leave octets
    /// past the end of that Write changed (never outside the region, and
    /// never in another region). RPC-over-RDMA's Write and Reply chunk
    /// sinks are such regions: only what the responder wrote is read.
    /// Providers that place by hardware (rdma-core) ignore it.
    pub const SCRATCH: Access = Access(1 << 31);

    /// The raw bits.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Whether every right in `other` is in `self`.
    pub const fn contains(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }

    /// The rights alone, without [`Access::SCRATCH`]: in the bit layout
    /// of rdma-core's `ibv_access_flags` (1 local write, 2 remote write,
    /// 4 remote read).
    ///
    /// ```
    /// use rpcrdma_verbs::Access;
    /// let a = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::SCRATCH;
    /// assert_eq!(a.rights(), Access::LOCAL_WRITE | Access::REMOTE_WRITE);
    /// assert_eq!(a.rights().bits(), 3);
    /// ```
    pub const fn rights(self) -> Access {
        Access(self.0 & (Self::LOCAL_WRITE.0 | Self::REMOTE_WRITE.0 | Self::REMOTE_READ.0))
    }

    /// Whether the region may be written at all (locally or remotely).
    pub const fn is_writable(self) -> bool {
        self.0 & (Self::LOCAL_WRITE.0 | Self::REMOTE_WRITE.0) != 0
    }
}

impl core::ops::BitOr for Access {
    type Output = Access;
    fn bitor(self, rhs: Access) -> Access {
        Access(self.0 | rhs.0)
    }
}

impl core::ops::BitOrAssign for Access {
    fn bitor_assign(&mut self, rhs: Access) {
        self.0 |= rhs.0;
    }
}

impl core::fmt::Debug for Access {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut parts = vec!["LOCAL_READ"];
        for (bit, name) in [
            (Self::LOCAL_WRITE, "LOCAL_WRITE"),
            (Self::REMOTE_WRITE, "REMOTE_WRITE"),
            (Self::REMOTE_READ, "REMOTE_READ"),
            (Self::SCRATCH, "SCRATCH"),
        ] {
            if self.contains(bit) {
                parts.push(name);
            }
        }
        write!(f, "Access({})", parts.join(" | "))
    }
}

/// A range of local memory, as a verbs scatter/gather element names it:
/// a registered region's local key, an address in the region's address
/// space (`mr.addr() + offset`) and a length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LocalSge {
    /// The region's local key (`mr.lkey()`).
    pub lkey: u32,
    /// Start address in the region's address space.
    pub addr: u64,
    /// Length in octets.
    pub len: u32,
}

/// One gather element of a Send or RDMA Write.
///
/// `Region` is the verbs way: memory registered with the protection
/// domain. `Bytes` is inline data: the provider takes the (immutable,
/// reference-counted) buffer with the work request and may copy it at post
/// time, like `IBV_SEND_INLINE`; no registration is needed. The software
/// provider sends either without copying.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sge {
    /// Registered memory.
    Region(LocalSge),
    /// Inline data owned by the work request.
    Bytes(Bytes),
}

impl Sge {
    /// Length in octets.
    pub fn len(&self) -> usize {
        match self {
            Sge::Region(s) => s.len as usize,
            Sge::Bytes(b) => b.len(),
        }
    }

    /// Whether the element is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The capacity of a gather list kept for reuse: a thread keeps a few
/// lists it gave back ([`recycle_gather_list`]) for its next
/// [`gather_list`]s. Work requests give their lists back once encoded, so
/// the Sends and RDMA Writes of a thread need no allocation for them.
const KEPT_GATHER_CAPACITY: usize = 8;

/// How many lists a thread keeps: a reply's RDMA Writes and its Send are
/// encoded together, and a driver that writes many Sends at once (a batch
/// of calls or replies kept back to go out with one system call) holds a
/// list per Send until it posts them. 64 lists of 8 elements are a few
/// dozen KiB per thread, kept only once used.
const KEPT_GATHER_LISTS: usize = 64;

thread_local! {
    static KEPT_GATHER_LISTS_OF_THREAD: std::cell::RefCell<Vec<Vec<Sge>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// An empty gather list with room for at least `capacity` elements: one
/// this thread gave back with [`recycle_gather_list`] if `capacity` is
/// small and there is one, else a new one.
///
/// ```
/// use rpcrdma_verbs::{gather_list, recycle_gather_list, Sge};
/// let mut l = gather_list(2);
/// l.push(Sge::Bytes(bytes::Bytes::from_static(b"x")));
/// recycle_gather_list(l);
/// let again = gather_list(2);
/// assert!(again.is_empty() && again.capacity() >= 2);
/// ```
pub fn gather_list(capacity: usize) -> Vec<Sge> {
    if capacity > KEPT_GATHER_CAPACITY {
        return Vec::with_capacity(capacity);
    }
    let kept = KEPT_GATHER_LISTS_OF_THREAD
        .try_with(|k| k.try_borrow_mut().ok().and_then(|mut k| k.pop()))
        .ok()
        .flatten();
    kept.unwrap_or_else(|| Vec::with_capacity(KEPT_GATHER_CAPACITY))
}

/// Gives a gather list back once its work request is done with: its
/// elements are dropped now, and a small list's allocation is kept for
/// the next [`gather_list`] on this thread (a few lists at most; others
/// are freed).
pub fn recycle_gather_list(mut list: Vec<Sge>) {
    if list.capacity() != KEPT_GATHER_CAPACITY {
        return;
    }
    list.clear();
    let _ = KEPT_GATHER_LISTS_OF_THREAD.try_with(|k| {
        if let Ok(mut k) = k.try_borrow_mut() {
            if k.len() < KEPT_GATHER_LISTS {
                if k.capacity() == 0 {
                    k.reserve_exact(KEPT_GATHER_LISTS);
                }
                k.push(list);
            }
        }
    });
}

impl From<Bytes> for Sge {
    fn from(b: Bytes) -> Sge {
        Sge::Bytes(b)
    }
}

impl From<LocalSge> for Sge {
    fn from(s: LocalSge) -> Sge {
        Sge::Region(s)
    }
}

/// A peer's memory: its remote key (STag) and an address (tagged offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RemoteAddr {
    /// The peer's remote key (STag).
    pub rkey: u32,
    /// Address (tagged offset) in the peer's region.
    pub addr: u64,
}

/// What a send-queue work request does.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendOp {
    /// A Send of the gathered elements to the peer's next posted receive.
    Send {
        /// Gather list; the message is their concatenation.
        sges: Vec<Sge>,
        /// Ask the peer for a solicited event.
        solicited: bool,
        /// Invalidate this remote key at the peer (Send with Invalidate).
        invalidate: Option<u32>,
    },
    /// RDMA Write of the gathered elements to the peer's memory.
    Write {
        /// Gather list (the source).
        sges: Vec<Sge>,
        /// Where the data goes.
        remote: RemoteAddr,
    },
    /// RDMA Read from the peer's memory into one local region (which
    /// needs [`Access::LOCAL_WRITE`]).
    Read {
        /// The local sink.
        sink: LocalSge,
        /// The peer's source.
        remote: RemoteAddr,
    },
    /// Local invalidation: the key is dead once this request is
    /// processed (in send-queue order).
    LocalInvalidate {
        /// The local region's key.
        key: u32,
    },
}

/// A send-queue work request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendWr {
    /// Returned in the completion.
    pub wr_id: u64,
    /// The operation.
    pub op: SendOp,
    /// Report a completion on success too (errors always complete).
    pub signaled: bool,
}

impl SendWr {
    /// A signaled Send of `sges`.
    pub fn send(wr_id: u64, sges: Vec<Sge>) -> Self {
        SendWr {
            wr_id,
            op: SendOp::Send {
                sges,
                solicited: false,
                invalidate: None,
            },
            signaled: true,
        }
    }

    /// A signaled RDMA Write.
    pub fn write(wr_id: u64, sges: Vec<Sge>, remote: RemoteAddr) -> Self {
        SendWr {
            wr_id,
            op: SendOp::Write { sges, remote },
            signaled: true,
        }
    }

    /// A signaled RDMA Read.
    pub fn read(wr_id: u64, sink: LocalSge, remote: RemoteAddr) -> Self {
        SendWr {
            wr_id,
            op: SendOp::Read { sink, remote },
            signaled: true,
        }
    }

    /// A signaled local invalidation.
    pub fn local_invalidate(wr_id: u64, key: u32) -> Self {
        SendWr {
            wr_id,
            op: SendOp::LocalInvalidate { key },
            signaled: true,
        }
    }

    /// The completion opcode this request produces.
    pub fn wc_opcode(&self) -> WcOpcode {
        match self.op {
            SendOp::Send { .. } => WcOpcode::Send,
            SendOp::Write { .. } => WcOpcode::RdmaWrite,
            SendOp::Read { .. } => WcOpcode::RdmaRead,
            SendOp::LocalInvalidate { .. } => WcOpcode::LocalInvalidate,
        }
    }
}

/// A receive-queue work request: an owned buffer the next incoming Send
/// fills. Its usable size is `buf.len()` (e.g. `BytesMut::zeroed(4096)`);
/// the completion gives it back with that same length (as verbs does):
/// [`WorkCompletion::byte_len`] says how many leading octets the message
/// filled ([`WorkCompletion::data`]), and the rest is left as it was, so the
/// buffer can be posted again without being cleared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecvWr {
    /// Returned in the completion.
    pub wr_id: u64,
    /// The buffer.
    pub buf: BytesMut,
}

/// What a completed work request did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WcOpcode {
    /// A Send (any variant).
    Send,
    /// An RDMA Write.
    RdmaWrite,
    /// An RDMA Read.
    RdmaRead,
    /// A local invalidation.
    LocalInvalidate,
    /// A receive (an incoming Send).
    Recv,
}

/// The status of a work completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WcStatus {
    /// Done.
    Success,
    /// An incoming message was longer than the posted receive buffer, or a
    /// gather list is longer than the message can be.
    LocalLength,
    /// A local key is invalid, in another protection domain, out of bounds
    /// or lacks the access right the request needs.
    LocalProtection,
    /// The queue pair was in a state (error, closing) that forbids it.
    LocalQpOperation,
    /// The work request was flushed: the connection ended first.
    WrFlush,
    /// The peer refused the request as invalid (e.g. no receive posted,
    /// message too long for its buffer).
    RemoteInvalidRequest,
    /// The peer refused access to its memory (bad key, bounds, rights).
    RemoteAccess,
    /// The peer failed the operation for another reason.
    RemoteOperation,
    /// An invalidation requested by the peer (Send with Invalidate) named
    /// a key that cannot be invalidated.
    RemoteInvalidateFailed,
    /// The connection failed while the request was in progress.
    Fatal,
}

impl WcStatus {
    /// Whether the status is [`WcStatus::Success`].
    pub const fn is_ok(self) -> bool {
        matches!(self, WcStatus::Success)
    }
}

/// One completed work request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkCompletion {
    /// The work request's id.
    pub wr_id: u64,
    /// What it did.
    pub opcode: WcOpcode,
    /// How it ended.
    pub status: WcStatus,
    /// Octets received (receives) or transferred (RDMA Read); 0 otherwise.
    pub byte_len: u32,
    /// For a receive of a Send with Invalidate: the local key the peer
    /// invalidated (it is dead when this completion is seen).
    pub invalidated_rkey: Option<u32>,
    /// For a receive: the Send asked for a solicited event.
    pub solicited: bool,
    /// For a receive: the posted buffer, with its posted length; the
    /// message is its first `byte_len` octets ([`WorkCompletion::data`]).
    pub buf: Option<BytesMut>,
}

impl WorkCompletion {
    /// For a receive: the octets the message filled (the first `byte_len`
    /// octets of [`WorkCompletion::buf`]). `None` if there is no buffer or
    /// `byte_len` exceeds it.
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use rpcrdma_verbs::{WcOpcode, WcStatus, WorkCompletion};
    /// let mut buf = BytesMut::zeroed(8);
    /// buf[..2].copy_from_slice(b"hi");
    /// let wc = WorkCompletion {
    ///     wr_id: 1,
    ///     opcode: WcOpcode::Recv,
    ///     status: WcStatus::Success,
    ///     byte_len: 2,
    ///     invalidated_rkey: None,
    ///     solicited: false,
    ///     buf: Some(buf),
    /// };
    /// assert_eq!(wc.data(), Some(&b"hi"[..]));
    /// assert_eq!(wc.buf.as_ref().map(|b| b.len()), Some(8));
    /// ```
    pub fn data(&self) -> Option<&[u8]> {
        self.buf.as_ref()?.get(..self.byte_len as usize)
    }
}

/// A registered region's memory, as given back by deregistration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MrBuffer {
    /// Registered from [`Bytes`] (read-only source memory).
    Shared(Bytes),
    /// Registered from [`BytesMut`] (writable memory).
    Owned(BytesMut),
}

impl MrBuffer {
    /// Length in octets.
    pub fn len(&self) -> usize {
        match self {
            MrBuffer::Shared(b) => b.len(),
            MrBuffer::Owned(b) => b.len(),
        }
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The writable buffer, if the region was registered from one.
    pub fn into_owned(self) -> Option<BytesMut> {
        match self {
            MrBuffer::Owned(b) => Some(b),
            MrBuffer::Shared(_) => None,
        }
    }

    /// The contents as [`Bytes`] (no copy).
    pub fn freeze(self) -> Bytes {
        match self {
            MrBuffer::Shared(b) => b,
            MrBuffer::Owned(b) => b.freeze(),
        }
    }
}

/// Queue sizes and RDMA Read resources of a queue pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QpCaps {
    /// Send-queue depth: work requests posted but not yet completed.
    pub send_depth: u32,
    /// Receive-queue depth: receives posted but not yet completed.
    pub recv_depth: u32,
    /// Inbound RDMA Read requests we serve at once (IRD, "responder
    /// resources").
    pub ird: u16,
    /// Outbound RDMA Read requests we keep in flight (ORD, "initiator
    /// depth"); further Reads wait in the send queue, in order.
    pub ord: u16,
}

impl Default for QpCaps {
    fn default() -> Self {
        QpCaps {
            send_depth: 128,
            recv_depth: 128,
            ird: 16,
            ord: 16,
        }
    }
}

/// Why a connection ended.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DisconnectReason {
    /// We disconnected.
    Local,
    /// The peer closed the connection at a message boundary.
    Peer,
    /// The peer sent a Terminate (iWARP layer, error type, error code).
    RemoteTerminate {
        /// Layer (RDMAP 0, DDP 1, LLP 2).
        layer: u8,
        /// Error type.
        etype: u8,
        /// Error code.
        code: u8,
    },
    /// We detected a protocol violation and terminated the connection.
    ProtocolError {
        /// What went wrong: the layer, for matching, and its account.
        reason: ProtocolViolation,
    },
    /// The transport failed (reset, truncated stream, I/O error).
    Transport {
        /// What went wrong: the kind, for matching, and its account.
        reason: TransportFailure,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_keeps_a_few_small_gather_lists_and_frees_the_rest() {
        // A thread of its own: the kept lists are per thread.
        std::thread::spawn(|| {
            let lists: Vec<Vec<Sge>> = (0..KEPT_GATHER_LISTS + 2).map(|_| gather_list(3)).collect();
            let addrs: Vec<*const Sge> = lists.iter().map(|l| l.as_ptr()).collect();
            for mut l in lists {
                l.push(Sge::Bytes(Bytes::from_static(b"x")));
                recycle_gather_list(l);
            }
            // Only the first KEPT_GATHER_LISTS given back are kept...
            let kept = || KEPT_GATHER_LISTS_OF_THREAD.with(|k| k.borrow().len());
            assert_eq!(kept(), KEPT_GATHER_LISTS);
            // ... and handed out again, emptied.
            let again: Vec<Vec<Sge>> = (0..KEPT_GATHER_LISTS).map(|_| gather_list(2)).collect();
            for l in &again {
                assert!(l.is_empty() && addrs[..KEPT_GATHER_LISTS].contains(&l.as_ptr()));
            }
            assert_eq!(kept(), 0);
            // Large lists and lists of another capacity are not kept.
            let big = gather_list(KEPT_GATHER_CAPACITY + 1);
            assert!(big.capacity() > KEPT_GATHER_CAPACITY);
            recycle_gather_list(big);
            recycle_gather_list(Vec::with_capacity(2));
            assert_eq!(kept(), 0);
        })
        .join()
        .unwrap();
    }
}
