//! The provider traits. A provider (software iWARP, rdma-core, a test
//! double) implements [`Device`] and the object traits it names.

use std::future::Future;
use std::net::SocketAddr;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};

use crate::error::{ConnectError, DeregisterError, PostError, RegisterError, ResourceError};
use crate::types::{
    Access, DisconnectReason, LocalSge, MrBuffer, QpCaps, RecvWr, RemoteAddr, SendWr,
    WorkCompletion,
};

/// A registered memory region.
///
/// Registration takes ownership of the buffer; [`MemoryRegion::deregister`]
/// gives it back. The key is fresh and unpredictable on every registration
/// (RFC 8166 §10.1.2), and serves as both local key (in [`LocalSge`]) and
/// remote key (advertised to the peer). Invalidation (local, or remote by a
/// Send with Invalidate) kills the key at once; the memory stays owned by
/// the region until deregistration.
pub trait MemoryRegion: Send + Sync + 'static {
    /// The key for local work requests.
    fn lkey(&self) -> u32;
    /// The key to advertise to the peer (STag).
    fn rkey(&self) -> u32;
    /// Address of the first octet in the region's address space; offsets
    /// the peer uses are `addr() + offset`. Not necessarily zero.
    fn addr(&self) -> u64;
    /// Length in octets.
    fn len(&self) -> usize;
    /// Whether the region is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Access rights.
    fn access(&self) -> Access;

    /// A local scatter/gather element for `len` octets at `offset`.
    ///
    /// # Panics
    /// If the range is outside the region or `len` exceeds `u32::MAX`
    /// (API misuse).
    fn sge(&self, offset: usize, len: usize) -> LocalSge {
        assert!(
            offset.checked_add(len).is_some_and(|end| end <= self.len()),
            "sge({offset}, {len}) outside a region of {} octets",
            self.len()
        );
        LocalSge {
            lkey: self.lkey(),
            addr: self.addr() + offset as u64,
            len: u32::try_from(len).expect("sge length fits u32"),
        }
    }

    /// The remote address of `offset` for the peer.
    fn remote(&self, offset: usize) -> RemoteAddr {
        RemoteAddr {
            rkey: self.rkey(),
            addr: self.addr() + offset as u64,
        }
    }

    /// Removes the registration and returns the buffer.
    fn deregister(self) -> Result<MrBuffer, DeregisterError>
    where
        Self: Sized;
}

/// A protection domain: the set of regions a queue pair may touch.
pub trait ProtectionDomain: Send + Sync + 'static {
    /// The region type.
    type Mr: MemoryRegion;

    /// Registers read-only memory (local read, and optionally
    /// [`Access::REMOTE_READ`]): the zero-copy source of Sends, RDMA Writes
    /// and the peer's RDMA Reads. Write rights are refused.
    fn register_bytes(&self, buf: Bytes, access: Access) -> Result<Self::Mr, RegisterError>;

    /// Registers writable memory: receive sinks, RDMA Read sinks
    /// ([`Access::LOCAL_WRITE`]) and RDMA Write targets
    /// ([`Access::REMOTE_WRITE`]).
    fn register_mut(&self, buf: BytesMut, access: Access) -> Result<Self::Mr, RegisterError>;
}

/// A completion queue, shared by any number of queue pairs.
///
/// Completions of one queue pair's send queue arrive in posting order, and
/// so do those of its receive queue.
pub trait CompletionQueue: Clone + Send + Sync + 'static {
    /// Moves up to `max` completions into `out` without blocking; returns
    /// how many.
    fn poll(&self, out: &mut Vec<WorkCompletion>, max: usize) -> usize;

    /// Resolves when at least one completion is waiting (at once if one
    /// already is).
    fn wait(&self) -> impl Future<Output = ()> + Send;

    /// [`CompletionQueue::wait`] as a poll, for the one task that keeps
    /// polling the queue (a connection's reader): `Ready` when at least one
    /// completion is waiting, otherwise `Pending` with `cx` registered to
    /// be woken when one may be. While that task keeps polling, a provider
    /// may do the queue pair's I/O on it (no hand-off between tasks per
    /// completion); the task calls [`CompletionQueue::pause`] before it
    /// stops polling for a while, so the provider does that I/O on its own
    /// again. Not for several tasks at once (use `wait`).
    fn poll_wait(&self, cx: &mut Context<'_>) -> Poll<()>;

    /// [`CompletionQueue::poll`], and when nothing is waiting,
    /// [`CompletionQueue::poll_wait`], for the same one task: `Ready(n)`
    /// with `n > 0` completions moved into `out` (at most `max`), or
    /// `Pending` with `cx` registered as `poll_wait` registers it. A
    /// provider that does the queue pair's I/O on that task may hand it
    /// the completions that I/O produced directly, without a trip through
    /// the queue (the queue's order is kept: only when nothing is queued
    /// before them).
    fn poll_next_batch(
        &self,
        out: &mut Vec<WorkCompletion>,
        max: usize,
        cx: &mut Context<'_>,
    ) -> Poll<usize> {
        loop {
            let n = self.poll(out, max);
            if n > 0 {
                return Poll::Ready(n);
            }
            if self.poll_wait(cx).is_pending() {
                return Poll::Pending;
            }
        }
    }

    /// The task that polls [`CompletionQueue::poll_wait`] stops for a
    /// while (or for good); it may poll again later. Does nothing by
    /// default.
    fn pause(&self) {}

    /// The most completions the queue holds; a queue pair whose completion
    /// would not fit fails with a fatal error, so size it at least as the
    /// sum of the depths of the queues attached to it.
    fn capacity(&self) -> usize;
}

/// A connected queue pair.
///
/// Ordering guarantees (RFC 8166 §3.2.2 relies on them): RDMA Writes
/// posted before a Send are placed at the peer before that Send's receive
/// completes there; an RDMA Read's data is placed in the sink before its
/// completion is reported; completions of each queue are in posting order.
pub trait QueuePair: Send + Sync + 'static {
    /// Posts a send-queue work request.
    fn post_send(&self, wr: SendWr) -> Result<(), PostError>;

    /// Posts several send-queue work requests in order, as one chain (the
    /// verbs interface's linked list of work requests): a provider may put
    /// them on the wire together, e.g. a reply's RDMA Writes and the Send
    /// behind them in one system call. The same as posting each in turn
    /// with [`QueuePair::post_send`] (the default does just that): the
    /// first that fails ends the chain with its error, the ones after it
    /// are not posted.
    fn post_send_chain<I>(&self, wrs: I) -> Result<(), PostError>
    where
        I: IntoIterator<Item = SendWr>,
    {
        for wr in wrs {
            self.post_send(wr)?;
        }
        Ok(())
    }

    /// Posts a receive.
    fn post_recv(&self, wr: RecvWr) -> Result<(), PostError>;

    /// Posts several receives in order (verbs' linked list of receive
    /// work requests), stopping at the first refused; the ones before it
    /// stay posted. By default they are posted in turn; a provider may
    /// take them under one lock (software iWARP does).
    fn post_recv_chain<I>(&self, wrs: I) -> Result<(), PostError>
    where
        I: IntoIterator<Item = RecvWr>,
    {
        for wr in wrs {
            self.post_recv(wr)?;
        }
        Ok(())
    }

    /// Negotiated sizes: queue depths as configured, IRD/ORD as agreed with
    /// the peer.
    fn caps(&self) -> QpCaps;

    /// Graceful disconnect: sends what is already posted, then closes; every
    /// request not yet complete is flushed ([`crate::WcStatus::WrFlush`]).
    /// Resolves when the connection is closed.
    fn disconnect(&self) -> impl Future<Output = ()> + Send;

    /// Abortive disconnect: drops unsent data, resets the connection and
    /// flushes every outstanding request at once.
    fn abort(&self);

    /// Resolves, with the reason, once the connection has ended.
    fn closed(&self) -> impl Future<Output = DisconnectReason> + Send;
}

/// Parameters for creating the queue pair of a new connection.
#[derive(Debug)]
pub struct QpParams<'a, D: Device + ?Sized> {
    /// The protection domain whose regions the queue pair may use.
    pub pd: &'a D::Pd,
    /// Where send-queue completions go.
    pub send_cq: &'a D::Cq,
    /// Where receive completions go (may be the same queue).
    pub recv_cq: &'a D::Cq,
    /// Queue depths and requested IRD/ORD.
    pub caps: QpCaps,
    /// Provider-specific connection options.
    pub options: D::Options,
}

impl<'a, D: Device + ?Sized> QpParams<'a, D> {
    /// Parameters with one completion queue for both queues and the
    /// default capacities ([`QpCaps::default`]).
    pub fn new(pd: &'a D::Pd, cq: &'a D::Cq, options: D::Options) -> Self {
        QpParams {
            pd,
            send_cq: cq,
            recv_cq: cq,
            caps: QpCaps::default(),
            options,
        }
    }

    /// The same parameters with other queue depths and IRD/ORD.
    pub fn with_caps(self, caps: QpCaps) -> Self {
        QpParams { caps, ..self }
    }
}

/// An incoming connection request, to accept or reject.
pub trait ConnectRequest: Send + 'static {
    /// The device type.
    type Device: Device;

    /// The initiator's private data (the Upper Layer's part, e.g. RFC 8797).
    fn private_data(&self) -> &Bytes;

    /// The initiator's IRD and ORD, when it sent them.
    fn ird_ord(&self) -> Option<(u16, u16)>;

    /// The initiator's address.
    fn peer_addr(&self) -> SocketAddr;

    /// Accepts, answering with `private_data`.
    fn accept(
        self,
        params: QpParams<'_, Self::Device>,
        private_data: Bytes,
    ) -> impl Future<Output = Result<<Self::Device as Device>::Qp, ConnectError>> + Send;

    /// Rejects, answering with `private_data`.
    fn reject(self, private_data: Bytes) -> impl Future<Output = Result<(), ConnectError>> + Send;
}

/// A listening endpoint.
pub trait Listener: Send + Sync + 'static {
    /// The device type.
    type Device: Device;

    /// Waits for the next connection request.
    fn accept(
        &self,
    ) -> impl Future<Output = Result<<Self::Device as Device>::Request, ConnectError>> + Send;

    /// The address listened on.
    fn local_addr(&self) -> SocketAddr;
}

/// An RDMA device: the factory of every other object, and the connection
/// manager.
pub trait Device: Send + Sync + 'static {
    /// Protection domain type.
    type Pd: ProtectionDomain<Mr = Self::Mr>;
    /// Memory region type.
    type Mr: MemoryRegion;
    /// Completion queue type.
    type Cq: CompletionQueue;
    /// Queue pair type.
    type Qp: QueuePair;
    /// Listener type.
    type Listener: Listener<Device = Self>;
    /// Connection request type.
    type Request: ConnectRequest<Device = Self>;
    /// Provider-specific connection options.
    type Options: Clone + Default + Send + Sync + core::fmt::Debug + 'static;

    /// Whether a peer's Send with Invalidate can invalidate the remote keys
    /// of regions this device registers (the RFC 8797 R bit). A provider
    /// whose regions cannot be invalidated remotely (plain verbs memory
    /// regions, without memory windows or fast registration) says `false`,
    /// and the transport then advertises R = 0. Default: `true`.
    fn remote_invalidation(&self) -> bool {
        true
    }

    /// A new protection domain. A software provider never fails; a device
    /// may run out of resources.
    fn alloc_pd(&self) -> Result<Self::Pd, ResourceError>;

    /// A new completion queue holding up to `capacity` completions; fails
    /// if the device cannot hold that many ([`ResourceError::Limit`]).
    fn create_cq(&self, capacity: usize) -> Result<Self::Cq, ResourceError>;

    /// Listens for connection requests on `addr`.
    fn listen(
        &self,
        addr: SocketAddr,
        options: Self::Options,
    ) -> impl Future<Output = std::io::Result<Self::Listener>> + Send;

    /// Connects to `addr`, offering `private_data`; returns the queue pair
    /// and the peer's private data.
    fn connect(
        &self,
        addr: SocketAddr,
        params: QpParams<'_, Self>,
        private_data: Bytes,
    ) -> impl Future<Output = Result<(Self::Qp, Bytes), ConnectError>> + Send;
}
