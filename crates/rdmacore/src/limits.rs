//! Device limits and what they imply (sans-IO): queue depths and gather
//! lists clamped to `ibv_query_device`, IRD/ORD negotiation, the RDMA-CM
//! private data limits of each transport, and the access flags a region
//! needs on each transport.

use rpcrdma_verbs::{Access, InvalidConnect, QpCaps, SetupMessage};

/// The RDMA transport a device speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// InfiniBand, or RoCE (InfiniBand transport over Ethernet): rxe,
    /// ConnectX, ...
    Ib,
    /// iWARP (RDMAP/DDP/MPA over TCP): siw, Chelsio, Intel E810 iWARP, ...
    Iwarp,
}

impl Transport {
    /// From `ibv_device.transport_type` (0 IB, 1 iWARP; others are not RC
    /// verbs devices we can drive).
    pub fn from_raw(raw: u32) -> Option<Transport> {
        match raw {
            0 => Some(Transport::Ib),
            1 => Some(Transport::Iwarp),
            _ => None,
        }
    }

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Ib => "InfiniBand/RoCE",
            Transport::Iwarp => "iWARP",
        }
    }

    /// How many octets of private data the RDMA-CM carries, per message.
    ///
    /// * InfiniBand/RoCE: the IB CM's REQ carries 92 octets of private data
    ///   of which the RDMA-CM's own header takes 36, leaving 56; the REP
    ///   carries 196 and the REJ 148 (rdma_connect(3), rdma_accept(3)).
    /// * iWARP: the MPA Request/Reply carries up to 512 octets (RFC 5044),
    ///   but librdmacm's `rdma_conn_param.private_data_len` is one octet,
    ///   so 255 is the most an application can give, and the RFC 6581
    ///   IRD/ORD words the kernel adds come out of the MPA limit, not ours.
    pub fn private_data_limits(self) -> PrivateDataLimits {
        match self {
            Transport::Ib => PrivateDataLimits {
                connect: 56,
                accept: 196,
                reject: 148,
            },
            Transport::Iwarp => PrivateDataLimits {
                connect: 255,
                accept: 255,
                reject: 255,
            },
        }
    }

    /// The `ibv_reg_mr` access bits (our [`Access`] bit layout: 1 local
    /// write, 2 remote write, 4 remote read) a region needs on this
    /// transport for the rights the caller asked:
    ///
    /// * verbs refuses remote write without local write, so remote write
    ///   brings local write;
    /// * on iWARP an RDMA Read's data arrives as tagged Read Response
    ///   messages addressed to the sink's STag (RFC 5040 §4.4), so a Read
    ///   sink (local write) also needs remote write; InfiniBand/RoCE places
    ///   Read responses through the local key and needs nothing more.
    ///
    /// ```
    /// use rpcrdma_rdmacore::Transport;
    /// use rpcrdma_verbs::Access;
    /// assert_eq!(Transport::Iwarp.region_access(Access::LOCAL_WRITE), Access::LOCAL_WRITE | Access::REMOTE_WRITE);
    /// assert_eq!(Transport::Ib.region_access(Access::LOCAL_WRITE), Access::LOCAL_WRITE);
    /// assert_eq!(Transport::Ib.region_access(Access::REMOTE_WRITE), Access::LOCAL_WRITE | Access::REMOTE_WRITE);
    /// ```
    pub fn region_access(self, requested: Access) -> Access {
        let mut a = requested;
        if a.contains(Access::REMOTE_WRITE) {
            a |= Access::LOCAL_WRITE;
        }
        if self == Transport::Iwarp && a.contains(Access::LOCAL_WRITE) {
            a |= Access::REMOTE_WRITE;
        }
        a
    }
}

/// Most octets of RDMA-CM private data per message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PrivateDataLimits {
    /// In the connection request (`rdma_connect`).
    pub connect: usize,
    /// In the acceptance (`rdma_accept`).
    pub accept: usize,
    /// In a rejection (`rdma_reject`).
    pub reject: usize,
}

/// What `ibv_query_device` (and the RDMA-CM) tell about a device, as far as
/// this provider uses it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DeviceLimits {
    /// The transport.
    pub transport: Transport,
    /// Most outstanding work requests per queue (`max_qp_wr`).
    pub max_qp_wr: u32,
    /// Most gather/scatter elements per work request (`max_sge`).
    pub max_sge: u32,
    /// Most completion queue entries (`max_cqe`).
    pub max_cqe: u32,
    /// Most inbound RDMA Reads a queue pair serves at once
    /// (`max_qp_rd_atom`, our IRD limit).
    pub max_qp_rd_atom: u32,
    /// Most outbound RDMA Reads a queue pair keeps in flight
    /// (`max_qp_init_rd_atom`, our ORD limit).
    pub max_qp_init_rd_atom: u32,
    /// Largest memory region (`max_mr_size`).
    pub max_mr_size: u64,
    /// Whether the device has type 2 memory windows (which a peer's Send
    /// with Invalidate could invalidate).
    pub mw_type_2: bool,
}

/// Most gather elements we ask a queue pair for: RPC-over-RDMA messages
/// need a header and a few payload pieces; more are coalesced.
pub const WANTED_SGE: u32 = 8;

/// Most inline data we ask a queue pair for (devices grant less or fail).
pub const WANTED_INLINE: u32 = 256;

/// The RDMA-CM carries IRD and ORD in one octet each.
pub const CM_RD_ATOM_MAX: u16 = 255;

/// Queue pair attributes to request from the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QpRequest {
    /// Send queue depth.
    pub send_depth: u32,
    /// Receive queue depth.
    pub recv_depth: u32,
    /// Gather elements per send work request.
    pub send_sge: u32,
    /// Inline data.
    pub inline: u32,
    /// Inbound RDMA Reads (IRD, `responder_resources`).
    pub ird: u16,
    /// Outbound RDMA Reads (ORD, `initiator_depth`).
    pub ord: u16,
}

impl DeviceLimits {
    /// What to ask the device for, given the caller's [`QpCaps`]: depths
    /// at most `max_qp_wr`, gather elements at most `max_sge`, IRD at most
    /// `max_qp_rd_atom` and ORD at most `max_qp_init_rd_atom` (and both at
    /// most 255, the RDMA-CM's field), every value at least 1.
    ///
    /// ```
    /// use rpcrdma_rdmacore::{DeviceLimits, Transport};
    /// use rpcrdma_verbs::QpCaps;
    /// let dev = DeviceLimits { transport: Transport::Iwarp, max_qp_wr: 100, max_sge: 6, max_cqe: 1000,
    ///     max_qp_rd_atom: 8, max_qp_init_rd_atom: 4, max_mr_size: 1 << 30, mw_type_2: false };
    /// let q = dev.qp_request(QpCaps { send_depth: 512, recv_depth: 144, ird: 16, ord: 16 });
    /// assert_eq!((q.send_depth, q.recv_depth, q.send_sge, q.ird, q.ord), (100, 100, 6, 8, 4));
    /// ```
    pub fn qp_request(&self, caps: QpCaps) -> QpRequest {
        let clamp16 = |want: u16, max: u32| -> u16 {
            let max = u16::try_from(max).unwrap_or(u16::MAX).min(CM_RD_ATOM_MAX);
            want.min(max).max(1)
        };
        QpRequest {
            send_depth: caps.send_depth.min(self.max_qp_wr).max(1),
            recv_depth: caps.recv_depth.min(self.max_qp_wr).max(1),
            send_sge: WANTED_SGE.min(self.max_sge).max(1),
            inline: WANTED_INLINE,
            ird: clamp16(caps.ird, self.max_qp_rd_atom),
            ord: clamp16(caps.ord, self.max_qp_init_rd_atom),
        }
    }

    /// Whether a completion queue of `capacity` entries fits the device.
    pub fn check_cq(&self, capacity: usize) -> Result<(), rpcrdma_verbs::ResourceError> {
        if capacity > self.max_cqe as usize {
            return Err(rpcrdma_verbs::ResourceError::Limit {
                what: "completion queue entries",
                requested: capacity,
                max: self.max_cqe as usize,
            });
        }
        Ok(())
    }
}

/// IRD/ORD of the passive side: given what the initiator asked
/// (`peer_ird` = its `responder_resources`, `peer_ord` = its
/// `initiator_depth`) and ours (already clamped to the device), answer with
/// our IRD (`responder_resources`) and ORD (`initiator_depth`). Our ORD may
/// not exceed the initiator's IRD (it could not serve more Reads); our IRD
/// stays ours (at least what the device lets us serve). An initiator that
/// announces no IRD (0: some iWARP peers without the RFC 6581 words) is
/// taken at our ORD, as siw does.
///
/// ```
/// use rpcrdma_rdmacore::negotiate_passive;
/// assert_eq!(negotiate_passive(16, 16, 4, 32), (16, 4));
/// assert_eq!(negotiate_passive(16, 16, 0, 0), (16, 16));
/// ```
pub fn negotiate_passive(our_ird: u16, our_ord: u16, peer_ird: u16, _peer_ord: u16) -> (u16, u16) {
    let ord = if peer_ird == 0 {
        our_ord
    } else {
        our_ord.min(peer_ird)
    };
    (our_ird, ord.max(1))
}

/// IRD/ORD of the active side once the peer accepted: our ORD is at most
/// the responder's IRD (its `responder_resources`); our IRD is what we
/// offered. A responder that reports no value (0) leaves ours as offered.
///
/// ```
/// use rpcrdma_rdmacore::negotiate_active;
/// assert_eq!(negotiate_active(16, 16, 8, 4), (16, 8));
/// assert_eq!(negotiate_active(16, 16, 0, 0), (16, 16));
/// ```
pub fn negotiate_active(our_ird: u16, our_ord: u16, peer_ird: u16, _peer_ord: u16) -> (u16, u16) {
    let ord = if peer_ird == 0 {
        our_ord
    } else {
        our_ord.min(peer_ird)
    };
    (our_ird, ord.max(1))
}

/// Checks private data against the transport's limit for `message`.
///
/// ```
/// use rpcrdma_rdmacore::{check_private_data, Transport};
/// use rpcrdma_verbs::{InvalidConnect, SetupMessage};
/// assert!(check_private_data(Transport::Ib, SetupMessage::Connect, 56).is_ok());
/// assert!(matches!(
///     check_private_data(Transport::Ib, SetupMessage::Connect, 57),
///     Err(InvalidConnect::PrivateDataTooLong { len: 57, max: 56, .. })
/// ));
/// ```
pub fn check_private_data(
    transport: Transport,
    message: SetupMessage,
    len: usize,
) -> Result<(), InvalidConnect> {
    let l = transport.private_data_limits();
    let max = match message {
        SetupMessage::Connect => l.connect,
        SetupMessage::Accept => l.accept,
        SetupMessage::Reject => l.reject,
    };
    if len > max {
        return Err(InvalidConnect::PrivateDataTooLong {
            message,
            len,
            max,
            transport: transport.name(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rxe() -> DeviceLimits {
        // rxe in Linux 6.1 (rxe_param.h).
        DeviceLimits {
            transport: Transport::Ib,
            max_qp_wr: 0x4000,
            max_sge: 32,
            max_cqe: 32767,
            max_qp_rd_atom: 128,
            max_qp_init_rd_atom: 128,
            max_mr_size: u64::MAX,
            mw_type_2: true,
        }
    }

    #[test]
    fn requests_fit_the_device() {
        let q = rxe().qp_request(QpCaps {
            send_depth: 512,
            recv_depth: 144,
            ird: 300,
            ord: 16,
        });
        assert_eq!(q.send_depth, 512);
        assert_eq!(q.recv_depth, 144);
        assert_eq!(q.send_sge, WANTED_SGE);
        assert_eq!(q.ird, 128, "IRD clamped to max_qp_rd_atom");
        assert_eq!(q.ord, 16);
        let tiny = DeviceLimits {
            max_qp_wr: 0,
            max_sge: 0,
            max_qp_rd_atom: 0,
            max_qp_init_rd_atom: 0,
            ..rxe()
        };
        let q = tiny.qp_request(QpCaps::default());
        assert_eq!(
            (q.send_depth, q.recv_depth, q.send_sge, q.ird, q.ord),
            (1, 1, 1, 1, 1),
            "never zero"
        );
        let big = DeviceLimits {
            max_qp_rd_atom: 100_000,
            max_qp_init_rd_atom: 100_000,
            ..rxe()
        };
        let q = big.qp_request(QpCaps {
            ird: 1000,
            ord: 1000,
            ..QpCaps::default()
        });
        assert_eq!((q.ird, q.ord), (255, 255), "the RDMA-CM field is one octet");
    }

    #[test]
    fn cq_limit() {
        assert!(rxe().check_cq(32767).is_ok());
        let e = rxe().check_cq(40000).unwrap_err();
        assert!(e.to_string().contains("at most 32767"), "{e}");
    }

    #[test]
    fn private_data_limits_per_transport() {
        assert_eq!(Transport::Ib.private_data_limits().connect, 56);
        assert_eq!(Transport::Ib.private_data_limits().accept, 196);
        assert_eq!(Transport::Ib.private_data_limits().reject, 148);
        assert_eq!(Transport::Iwarp.private_data_limits().connect, 255);
        assert!(check_private_data(Transport::Ib, SetupMessage::Connect, 56).is_ok());
        let e = check_private_data(Transport::Ib, SetupMessage::Connect, 57).unwrap_err();
        assert!(e.to_string().contains("at most 56"), "{e}");
        assert!(check_private_data(Transport::Iwarp, SetupMessage::Accept, 255).is_ok());
        assert!(check_private_data(Transport::Iwarp, SetupMessage::Reject, 256).is_err());
        // RFC 8797's message is 8 octets: it fits everywhere.
        for t in [Transport::Ib, Transport::Iwarp] {
            for w in [
                SetupMessage::Connect,
                SetupMessage::Accept,
                SetupMessage::Reject,
            ] {
                assert!(check_private_data(t, w, 8).is_ok());
            }
        }
    }

    #[test]
    fn access_per_transport() {
        use Access as A;
        for t in [Transport::Ib, Transport::Iwarp] {
            assert_eq!(t.region_access(A::LOCAL_READ), A::LOCAL_READ);
            assert_eq!(t.region_access(A::REMOTE_READ), A::REMOTE_READ);
            assert_eq!(
                t.region_access(A::LOCAL_WRITE | A::REMOTE_WRITE),
                A::LOCAL_WRITE | A::REMOTE_WRITE
            );
        }
        assert_eq!(
            Transport::Iwarp.region_access(A::LOCAL_WRITE),
            A::LOCAL_WRITE | A::REMOTE_WRITE,
            "iWARP Read sinks take tagged Read Responses"
        );
        assert_eq!(Transport::Ib.region_access(A::LOCAL_WRITE), A::LOCAL_WRITE);
        assert_eq!(Transport::from_raw(0), Some(Transport::Ib));
        assert_eq!(Transport::from_raw(1), Some(Transport::Iwarp));
        assert_eq!(Transport::from_raw(2), None);
    }

    #[test]
    fn ird_ord() {
        // Passive: our ORD never above the initiator's IRD.
        assert_eq!(negotiate_passive(16, 16, 8, 2), (16, 8));
        assert_eq!(negotiate_passive(4, 16, 128, 128), (4, 16));
        assert_eq!(negotiate_passive(16, 16, 0, 0), (16, 16));
        // Active: our ORD never above the responder's IRD.
        assert_eq!(negotiate_active(16, 16, 1, 1), (16, 1));
        assert_eq!(negotiate_active(16, 4, 128, 128), (16, 4));
    }
}
