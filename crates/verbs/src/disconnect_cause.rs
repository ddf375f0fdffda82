//! The typed causes inside a [`DisconnectReason`](crate::DisconnectReason):
//! which protocol layer the peer broke, and how the transport failed.
//!
//! Each is a kind to match on and the provider's account to read (its
//! text), the way [`SetupViolation`](crate::SetupViolation) is for
//! connection set-up.

use std::fmt;

/// Which layer of the protocol stack a [`ProtocolViolation`] broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProtocolLayer {
    /// The framing layer (iWARP: MPA, the LLP of the Terminate codes).
    Mpa,
    /// Direct data placement (iWARP: DDP).
    Ddp,
    /// The RDMA operations (iWARP: RDMAP, a malformed Terminate included).
    Rdmap,
    /// A local work request failed its protection check when it was
    /// processed (its region was deregistered or invalidated meanwhile).
    LocalAccess,
}

/// The error a Terminate message carries (iWARP: layer, error type, error
/// code), as numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TerminateCode {
    /// Layer (RDMAP 0, DDP 1, LLP 2).
    pub layer: u8,
    /// Error type.
    pub etype: u8,
    /// Error code.
    pub code: u8,
}

/// How a connection broke its protocol
/// ([`DisconnectReason::ProtocolError`](crate::DisconnectReason::ProtocolError)):
/// the layer and the Terminate sent for it, for matching, and the
/// provider's account, for reading (its text is the account).
///
/// ```
/// use rpcrdma_verbs::{ProtocolLayer, ProtocolViolation, TerminateCode};
/// let v = ProtocolViolation::new(
///     ProtocolLayer::Ddp,
///     Some(TerminateCode { layer: 1, etype: 2, code: 1 }),
///     "no receive buffer posted",
/// );
/// assert_eq!(v.layer(), ProtocolLayer::Ddp);
/// assert_eq!(v.terminate().map(|t| t.etype), Some(2));
/// assert_eq!(v.to_string(), "no receive buffer posted");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProtocolViolation {
    layer: ProtocolLayer,
    terminate: Option<TerminateCode>,
    detail: String,
}

impl ProtocolViolation {
    /// A breach in `layer`, answered with `terminate` (if one was sent),
    /// as the provider describes it.
    pub fn new(
        layer: ProtocolLayer,
        terminate: Option<TerminateCode>,
        detail: impl Into<String>,
    ) -> Self {
        ProtocolViolation {
            layer,
            terminate,
            detail: detail.into(),
        }
    }

    /// The layer broken.
    pub fn layer(&self) -> ProtocolLayer {
        self.layer
    }

    /// The Terminate sent to the peer for it, if any.
    pub fn terminate(&self) -> Option<TerminateCode> {
        self.terminate
    }

    /// The provider's account of it.
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

impl fmt::Display for ProtocolViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

/// What kind of transport failure a [`TransportFailure`] is, for matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportFault {
    /// The stream under the connection reported an I/O error of this kind
    /// (reset, broken pipe, ...).
    Io(std::io::ErrorKind),
    /// The stream ended in the middle of a frame or message.
    Truncated,
    /// Connection set-up (iWARP: MPA negotiation) did not finish in time.
    Timeout,
    /// A completion queue overflowed.
    CompletionQueueOverrun,
    /// The device completed a work request with an error (`status` and
    /// `vendor_err` as the device reported them).
    Completion {
        /// The device's completion status.
        status: u32,
        /// The vendor's error code.
        vendor_err: u32,
    },
    /// A message was longer than the posted receive buffer.
    ReceiveOverflow,
    /// The RDMA device was removed.
    DeviceRemoved,
    /// Any other failure of the transport.
    Other,
}

/// How the transport under a connection failed
/// ([`DisconnectReason::Transport`](crate::DisconnectReason::Transport)):
/// the kind, for matching, and the provider's account, for reading (its
/// text is the account).
///
/// ```
/// use rpcrdma_verbs::{TransportFailure, TransportFault};
/// let f = TransportFailure::new(TransportFault::DeviceRemoved, "the RDMA device was removed");
/// assert_eq!(f.fault(), TransportFault::DeviceRemoved);
/// assert_eq!(f.to_string(), "the RDMA device was removed");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TransportFailure {
    fault: TransportFault,
    detail: String,
}

impl TransportFailure {
    /// A failure of kind `fault`, as the provider describes it.
    pub fn new(fault: TransportFault, detail: impl Into<String>) -> Self {
        TransportFailure {
            fault,
            detail: detail.into(),
        }
    }

    /// The kind of failure.
    pub fn fault(&self) -> TransportFault {
        self.fault
    }

    /// The provider's account of it.
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

impl fmt::Display for TransportFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}
