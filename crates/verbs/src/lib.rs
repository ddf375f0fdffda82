//! The provider-neutral RDMA verbs interface of the RPC-over-RDMA stack.
//!
//! It offers exactly what RPC-over-RDMA needs (RFC 8166 §3.2.2): protection
//! domains, memory regions with access rights and fresh unpredictable keys,
//! local and remote invalidation, queue pairs with Send (plain, with
//! Invalidate, with Solicited Event), RDMA Write and RDMA Read, completion
//! queues with typed statuses, and a connection manager (listen, accept,
//! reject, connect) that carries private data both ways. It is shaped so
//! that both a software provider (`rpcrdma-softiwarp`, iWARP over TCP) and
//! an rdma-core provider (libibverbs/librdmacm) can implement it.
//!
//! # Memory in safe Rust
//!
//! Registration takes ownership of the buffer and deregistration gives it
//! back, so the provider may place data into registered memory (or a NIC may
//! DMA into it) while no Rust reference to it exists elsewhere:
//!
//! * [`ProtectionDomain::register_bytes`] takes immutable [`bytes::Bytes`]:
//!   read-only source memory for Sends, RDMA Writes and the peer's RDMA
//!   Reads; a software provider sends it without copying.
//! * [`ProtectionDomain::register_mut`] takes [`bytes::BytesMut`]: sinks for
//!   the peer's RDMA Writes and for our RDMA Reads.
//! * Receives are owned buffers ([`RecvWr`]): the completion hands them back
//!   filled. (An rdma-core provider receives into its own registered ring and
//!   copies; inline messages are small.)
//! * Send and Write gather lists mix registered memory ([`LocalSge`]) and
//!   inline [`bytes::Bytes`] ([`Sge::Bytes`], like `IBV_SEND_INLINE`).
//!
//! # Ordering
//!
//! See [`QueuePair`]: Writes before a Send are placed at the peer before
//! the Send completes there; Read data is placed before the Read completes;
//! each queue completes in posting order.
//!
//! # Example (types only; a provider supplies the objects)
//!
//! ```
//! use bytes::Bytes;
//! use rpcrdma_verbs::{RemoteAddr, SendOp, SendWr, Sge, WcOpcode};
//! let wr = SendWr {
//!     wr_id: 7,
//!     op: SendOp::Send {
//!         sges: vec![Sge::Bytes(Bytes::from_static(b"header")), Sge::Bytes(Bytes::from_static(b"payload"))],
//!         solicited: false,
//!         invalidate: Some(0x1234_5678),
//!     },
//!     signaled: true,
//! };
//! assert_eq!(wr.wc_opcode(), WcOpcode::Send);
//! let w = SendWr::write(8, vec![], RemoteAddr { rkey: 1, addr: 0 });
//! assert_eq!(w.wc_opcode(), WcOpcode::RdmaWrite);
//! ```
#![forbid(unsafe_code)]

mod connect_cause;
mod disconnect_cause;
mod errno;
mod error;
mod traits;
mod types;

pub use connect_cause::{
    CmStatus, DeviceFault, InvalidConnect, PeerClosed, SetupMessage, Unreachable,
};
pub use disconnect_cause::{
    ProtocolLayer, ProtocolViolation, TerminateCode, TransportFailure, TransportFault,
};
pub use errno::Errno;
pub use error::{
    ConnectError, DeregisterError, PostError, ProtectionFault, RegisterError, ResourceError,
    SetupFault, SetupViolation,
};
pub use traits::{
    CompletionQueue, ConnectRequest, Device, Listener, MemoryRegion, ProtectionDomain, QpParams,
    QueuePair,
};
pub use types::{
    gather_list, recycle_gather_list, Access, DisconnectReason, LocalSge, MrBuffer, QpCaps, RecvWr,
    RemoteAddr, SendOp, SendWr, Sge, WcOpcode, WcStatus, WorkCompletion,
};
