//! Meaning of what the device and the RDMA-CM report (sans-IO): work
//! completion statuses, connection manager events and their statuses, and
//! the locked-memory limit behind a failed registration.

use bytes::Bytes;
use rpcrdma_verbs::{
    CmStatus, ConnectError, DeviceFault, DisconnectReason, PeerClosed, TransportFailure,
    TransportFault, Unreachable, WcStatus,
};

use crate::limits::Transport;

/// `enum ibv_wc_status` values (ABI-stable; checked against the headers by
/// the shim's static assertions).
pub mod wc {
    #![allow(missing_docs)]
    pub const SUCCESS: u32 = 0;
    pub const LOC_LEN_ERR: u32 = 1;
    pub const LOC_QP_OP_ERR: u32 = 2;
    pub const LOC_EEC_OP_ERR: u32 = 3;
    pub const LOC_PROT_ERR: u32 = 4;
    pub const WR_FLUSH_ERR: u32 = 5;
    pub const MW_BIND_ERR: u32 = 6;
    pub const BAD_RESP_ERR: u32 = 7;
    pub const LOC_ACCESS_ERR: u32 = 8;
    pub const REM_INV_REQ_ERR: u32 = 9;
    pub const REM_ACCESS_ERR: u32 = 10;
    pub const REM_OP_ERR: u32 = 11;
    pub const RETRY_EXC_ERR: u32 = 12;
    pub const RNR_RETRY_EXC_ERR: u32 = 13;
    pub const LOC_RDD_VIOL_ERR: u32 = 14;
    pub const REM_INV_RD_REQ_ERR: u32 = 15;
    pub const REM_ABORT_ERR: u32 = 16;
    pub const INV_EECN_ERR: u32 = 17;
    pub const INV_EEC_STATE_ERR: u32 = 18;
    pub const FATAL_ERR: u32 = 19;
    pub const RESP_TIMEOUT_ERR: u32 = 20;
    pub const GENERAL_ERR: u32 = 21;
}

/// The verbs status of a raw `ibv_wc_status`.
///
/// | ibv_wc_status | WcStatus |
/// |---|---|
/// | SUCCESS | Success |
/// | LOC_LEN_ERR | LocalLength |
/// | LOC_QP_OP_ERR, LOC_EEC_OP_ERR, INV_EECN_ERR, INV_EEC_STATE_ERR | LocalQpOperation |
/// | LOC_PROT_ERR, LOC_ACCESS_ERR, MW_BIND_ERR, LOC_RDD_VIOL_ERR | LocalProtection |
/// | WR_FLUSH_ERR | WrFlush |
/// | REM_INV_REQ_ERR, REM_INV_RD_REQ_ERR, RNR_RETRY_EXC_ERR | RemoteInvalidRequest |
/// | REM_ACCESS_ERR | RemoteAccess |
/// | REM_OP_ERR, REM_ABORT_ERR, BAD_RESP_ERR | RemoteOperation |
/// | RETRY_EXC_ERR, RESP_TIMEOUT_ERR, FATAL_ERR, GENERAL_ERR, others | Fatal |
///
/// RNR_RETRY_EXC_ERR (the peer had no receive posted, again and again) is
/// what iWARP reports as a DDP "no buffer" Terminate: an invalid request.
pub fn wc_status(raw: u32) -> WcStatus {
    match raw {
        wc::SUCCESS => WcStatus::Success,
        wc::LOC_LEN_ERR => WcStatus::LocalLength,
        wc::LOC_QP_OP_ERR | wc::LOC_EEC_OP_ERR | wc::INV_EECN_ERR | wc::INV_EEC_STATE_ERR => {
            WcStatus::LocalQpOperation
        }
        wc::LOC_PROT_ERR | wc::LOC_ACCESS_ERR | wc::MW_BIND_ERR | wc::LOC_RDD_VIOL_ERR => {
            WcStatus::LocalProtection
        }
        wc::WR_FLUSH_ERR => WcStatus::WrFlush,
        wc::REM_INV_REQ_ERR | wc::REM_INV_RD_REQ_ERR | wc::RNR_RETRY_EXC_ERR => {
            WcStatus::RemoteInvalidRequest
        }
        wc::REM_ACCESS_ERR => WcStatus::RemoteAccess,
        wc::REM_OP_ERR | wc::REM_ABORT_ERR | wc::BAD_RESP_ERR => WcStatus::RemoteOperation,
        _ => WcStatus::Fatal,
    }
}

/// The name of a raw `ibv_wc_status` (as `ibv_wc_status_str` words it).
pub fn wc_status_name(raw: u32) -> &'static str {
    match raw {
        wc::SUCCESS => "success",
        wc::LOC_LEN_ERR => "local length error",
        wc::LOC_QP_OP_ERR => "local QP operation error",
        wc::LOC_EEC_OP_ERR => "local EE context operation error",
        wc::LOC_PROT_ERR => "local protection error",
        wc::WR_FLUSH_ERR => "work request flushed",
        wc::MW_BIND_ERR => "memory window bind error",
        wc::BAD_RESP_ERR => "bad response",
        wc::LOC_ACCESS_ERR => "local access error",
        wc::REM_INV_REQ_ERR => "remote invalid request",
        wc::REM_ACCESS_ERR => "remote access error",
        wc::REM_OP_ERR => "remote operation error",
        wc::RETRY_EXC_ERR => "transport retry counter exceeded",
        wc::RNR_RETRY_EXC_ERR => "RNR retry counter exceeded",
        wc::LOC_RDD_VIOL_ERR => "local RDD violation",
        wc::REM_INV_RD_REQ_ERR => "remote invalid RD request",
        wc::REM_ABORT_ERR => "remote aborted",
        wc::INV_EECN_ERR => "invalid EE context number",
        wc::INV_EEC_STATE_ERR => "invalid EE context state",
        wc::FATAL_ERR => "fatal error",
        wc::RESP_TIMEOUT_ERR => "response timeout",
        wc::GENERAL_ERR => "general error",
        _ => "unknown status",
    }
}

/// `enum rdma_cm_event_type` values.
pub mod cm {
    #![allow(missing_docs)]
    pub const ADDR_RESOLVED: u32 = 0;
    pub const ADDR_ERROR: u32 = 1;
    pub const ROUTE_RESOLVED: u32 = 2;
    pub const ROUTE_ERROR: u32 = 3;
    pub const CONNECT_REQUEST: u32 = 4;
    pub const CONNECT_RESPONSE: u32 = 5;
    pub const CONNECT_ERROR: u32 = 6;
    pub const UNREACHABLE: u32 = 7;
    pub const REJECTED: u32 = 8;
    pub const ESTABLISHED: u32 = 9;
    pub const DISCONNECTED: u32 = 10;
    pub const DEVICE_REMOVAL: u32 = 11;
    pub const MULTICAST_JOIN: u32 = 12;
    pub const MULTICAST_ERROR: u32 = 13;
    pub const ADDR_CHANGE: u32 = 14;
    pub const TIMEWAIT_EXIT: u32 = 15;
}

/// The name of an RDMA-CM event (as `rdma_event_str` words it).
pub fn cm_event_name(event: u32) -> &'static str {
    match event {
        cm::ADDR_RESOLVED => "ADDR_RESOLVED",
        cm::ADDR_ERROR => "ADDR_ERROR",
        cm::ROUTE_RESOLVED => "ROUTE_RESOLVED",
        cm::ROUTE_ERROR => "ROUTE_ERROR",
        cm::CONNECT_REQUEST => "CONNECT_REQUEST",
        cm::CONNECT_RESPONSE => "CONNECT_RESPONSE",
        cm::CONNECT_ERROR => "CONNECT_ERROR",
        cm::UNREACHABLE => "UNREACHABLE",
        cm::REJECTED => "REJECTED",
        cm::ESTABLISHED => "ESTABLISHED",
        cm::DISCONNECTED => "DISCONNECTED",
        cm::DEVICE_REMOVAL => "DEVICE_REMOVAL",
        cm::MULTICAST_JOIN => "MULTICAST_JOIN",
        cm::MULTICAST_ERROR => "MULTICAST_ERROR",
        cm::ADDR_CHANGE => "ADDR_CHANGE",
        cm::TIMEWAIT_EXIT => "TIMEWAIT_EXIT",
        _ => "unknown event",
    }
}

/// What the RDMA-CM says when the device goes away (DEVICE_REMOVAL), as a
/// connection attempt's error and as an established connection's end.
pub const DEVICE_REMOVED: &str = "the RDMA device was removed";

/// How an RDMA-CM event on an established connection ends it, if it does:
///
/// * DISCONNECTED (the peer disconnected, or the queue pair left the
///   connected state) is [`DisconnectReason::Peer`];
/// * DEVICE_REMOVAL is [`DisconnectReason::Transport`] ([`DEVICE_REMOVED`]);
/// * every other event (TIMEWAIT_EXIT, ADDR_CHANGE, ...) leaves the
///   connection as it is (`None`).
///
/// A connection that already has a reason (ours, a failed completion)
/// keeps it: the first reason wins.
pub fn disconnect_reason(event: u32) -> Option<DisconnectReason> {
    match event {
        cm::DISCONNECTED => Some(DisconnectReason::Peer),
        cm::DEVICE_REMOVAL => Some(DisconnectReason::Transport {
            reason: TransportFailure::new(TransportFault::DeviceRemoved, DEVICE_REMOVED),
        }),
        _ => None,
    }
}

/// The IB CM's reject reason for a consumer (application) reject.
pub const IB_CM_REJ_CONSUMER_DEFINED: i32 = 28;
/// The IB CM's reject reason when nobody listens on the service (port).
pub const IB_CM_REJ_INVALID_SERVICE_ID: i32 = 8;

/// The error of an active connection attempt that ended with `event`
/// (anything but ESTABLISHED) with `status` and the peer's private data.
///
/// * REJECTED by the peer's application (InfiniBand: reason 28, consumer
///   defined; iWARP: an MPA Reject, which carries private data) is
///   [`ConnectError::Rejected`] with the private data; on InfiniBand the
///   REJ's private data field arrives whole (148 octets, zero padded).
/// * REJECTED otherwise (InfiniBand: no listener for the service; iWARP:
///   the TCP connection was refused) is [`ConnectError::Unreachable`].
/// * UNREACHABLE with a timeout is [`ConnectError::Timeout`]; the address
///   and route errors are [`ConnectError::Unreachable`] (no RDMA device
///   for the address is [`ConnectError::Device`]); CONNECT_ERROR and
///   DISCONNECTED before establishment are [`ConnectError::PeerClosed`];
///   DEVICE_REMOVAL is [`ConnectError::Device`].
pub fn connect_failure(
    transport: Transport,
    event: u32,
    status: i32,
    private_data: &[u8],
) -> ConnectError {
    let name = cm_event_name(event);
    match event {
        cm::REJECTED => {
            let by_consumer = match transport {
                Transport::Ib => status == IB_CM_REJ_CONSUMER_DEFINED,
                Transport::Iwarp => !private_data.is_empty(),
            };
            if by_consumer {
                ConnectError::Rejected {
                    private_data: Bytes::copy_from_slice(private_data),
                }
            } else {
                ConnectError::Unreachable(match (transport, status) {
                    (Transport::Ib, IB_CM_REJ_INVALID_SERVICE_ID) => Unreachable::NoListener,
                    (Transport::Ib, reason) => Unreachable::CmReject { reason },
                    (Transport::Iwarp, s) => Unreachable::Refused {
                        status: CmStatus(s),
                    },
                })
            }
        }
        cm::UNREACHABLE if status == -libc::ETIMEDOUT => ConnectError::Timeout,
        cm::UNREACHABLE => ConnectError::Unreachable(Unreachable::NoRoute {
            event: name,
            status: CmStatus(status),
        }),
        cm::ADDR_ERROR | cm::ROUTE_ERROR
            if status == -libc::ENODEV || status == -libc::EADDRNOTAVAIL =>
        {
            ConnectError::Device(DeviceFault::NoDevice {
                event: name,
                status: CmStatus(status),
            })
        }
        cm::ADDR_ERROR | cm::ROUTE_ERROR if status == -libc::ETIMEDOUT => ConnectError::Timeout,
        cm::ADDR_ERROR | cm::ROUTE_ERROR => ConnectError::Unreachable(Unreachable::NoRoute {
            event: name,
            status: CmStatus(status),
        }),
        cm::DEVICE_REMOVAL => ConnectError::Device(DeviceFault::Removed),
        _ => ConnectError::PeerClosed(PeerClosed::Event {
            event: name,
            status: CmStatus(status),
        }),
    }
}

/// Formats a locked-memory limit in octets (or unlimited).
pub fn memlock_text(limit: Option<u64>) -> String {
    match limit {
        None => "unlimited".into(),
        Some(n) if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        Some(n) if n >= 1024 && n % 1024 == 0 => format!("{} KiB", n >> 10),
        Some(n) => format!("{n} octets"),
    }
}

/// Whether a registration that failed with `errno` most likely hit the
/// locked-memory limit: ENOMEM or EAGAIN (or EPERM) while the limit is
/// finite.
pub fn is_memlock_failure(errno: i32, limit: Option<u64>) -> bool {
    limit.is_some() && matches!(errno, libc::ENOMEM | libc::EAGAIN | libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_maps() {
        let expect = [
            (wc::SUCCESS, WcStatus::Success),
            (wc::LOC_LEN_ERR, WcStatus::LocalLength),
            (wc::LOC_QP_OP_ERR, WcStatus::LocalQpOperation),
            (wc::LOC_EEC_OP_ERR, WcStatus::LocalQpOperation),
            (wc::LOC_PROT_ERR, WcStatus::LocalProtection),
            (wc::WR_FLUSH_ERR, WcStatus::WrFlush),
            (wc::MW_BIND_ERR, WcStatus::LocalProtection),
            (wc::BAD_RESP_ERR, WcStatus::RemoteOperation),
            (wc::LOC_ACCESS_ERR, WcStatus::LocalProtection),
            (wc::REM_INV_REQ_ERR, WcStatus::RemoteInvalidRequest),
            (wc::REM_ACCESS_ERR, WcStatus::RemoteAccess),
            (wc::REM_OP_ERR, WcStatus::RemoteOperation),
            (wc::RETRY_EXC_ERR, WcStatus::Fatal),
            (wc::RNR_RETRY_EXC_ERR, WcStatus::RemoteInvalidRequest),
            (wc::LOC_RDD_VIOL_ERR, WcStatus::LocalProtection),
            (wc::REM_INV_RD_REQ_ERR, WcStatus::RemoteInvalidRequest),
            (wc::REM_ABORT_ERR, WcStatus::RemoteOperation),
            (wc::INV_EECN_ERR, WcStatus::LocalQpOperation),
            (wc::INV_EEC_STATE_ERR, WcStatus::LocalQpOperation),
            (wc::FATAL_ERR, WcStatus::Fatal),
            (wc::RESP_TIMEOUT_ERR, WcStatus::Fatal),
            (wc::GENERAL_ERR, WcStatus::Fatal),
            (22, WcStatus::Fatal),
            (u32::MAX, WcStatus::Fatal),
        ];
        for (raw, want) in expect {
            assert_eq!(wc_status(raw), want, "status {raw}");
            assert!(!wc_status_name(raw).is_empty());
        }
        for e in 0..=15 {
            assert!(!cm_event_name(e).contains("unknown"), "event {e}");
        }
        assert_eq!(cm_event_name(99), "unknown event");
    }

    #[test]
    fn connect_failures() {
        let pd = [0xf6, 0xab, 0x0e, 0x18, 1, 0, 0, 0];
        match connect_failure(Transport::Ib, cm::REJECTED, 28, &pd) {
            ConnectError::Rejected { private_data } => assert_eq!(&private_data[..], &pd[..]),
            e => panic!("{e:?}"),
        }
        let e = connect_failure(Transport::Ib, cm::REJECTED, 8, &[0; 148]);
        assert!(
            matches!(e, ConnectError::Unreachable(Unreachable::NoListener)) && e.is_transient(),
            "{e:?}"
        );
        assert!(e.to_string().contains("nobody listens"), "{e}");
        match connect_failure(Transport::Iwarp, cm::REJECTED, -libc::ECONNREFUSED, &pd) {
            ConnectError::Rejected { private_data } => assert_eq!(&private_data[..], &pd[..]),
            e => panic!("{e:?}"),
        }
        let e = connect_failure(Transport::Iwarp, cm::REJECTED, -libc::ECONNREFUSED, &[]);
        assert!(e.is_transient(), "{e:?}");
        assert!(
            matches!(
                e,
                ConnectError::Unreachable(Unreachable::Refused { status })
                    if status.errno().and_then(|e| e.raw_os_error()) == Some(libc::ECONNREFUSED)
            ),
            "{e:?}"
        );
        assert!(matches!(
            connect_failure(Transport::Ib, cm::UNREACHABLE, -libc::ETIMEDOUT, &[]),
            ConnectError::Timeout
        ));
        assert!(
            connect_failure(Transport::Ib, cm::UNREACHABLE, -libc::EHOSTUNREACH, &[])
                .is_transient()
        );
        let e = connect_failure(Transport::Ib, cm::ADDR_ERROR, -libc::ENODEV, &[]);
        assert!(
            matches!(e, ConnectError::Device(DeviceFault::NoDevice { .. })),
            "{e:?}"
        );
        assert!(e.to_string().contains("rdma link"), "{e}");
        assert!(matches!(
            connect_failure(Transport::Iwarp, cm::ROUTE_ERROR, -libc::ETIMEDOUT, &[]),
            ConnectError::Timeout
        ));
        assert!(
            connect_failure(Transport::Iwarp, cm::CONNECT_ERROR, -libc::ECONNRESET, &[])
                .is_transient()
        );
        assert!(matches!(
            connect_failure(Transport::Ib, cm::DEVICE_REMOVAL, 0, &[]),
            ConnectError::Device(DeviceFault::Removed)
        ));
    }

    #[test]
    fn connection_events() {
        assert_eq!(
            disconnect_reason(cm::DISCONNECTED),
            Some(DisconnectReason::Peer)
        );
        assert_eq!(
            disconnect_reason(cm::DEVICE_REMOVAL),
            Some(DisconnectReason::Transport {
                reason: TransportFailure::new(TransportFault::DeviceRemoved, DEVICE_REMOVED)
            })
        );
        for e in (0..=15).filter(|e| ![cm::DISCONNECTED, cm::DEVICE_REMOVAL].contains(e)) {
            assert_eq!(disconnect_reason(e), None, "{}", cm_event_name(e));
        }
        // The same removal fails a connection attempt, with the same words.
        let e = connect_failure(Transport::Iwarp, cm::DEVICE_REMOVAL, 0, &[]);
        assert!(e.to_string().contains(DEVICE_REMOVED), "{e}");
    }

    #[test]
    fn memlock() {
        assert_eq!(memlock_text(None), "unlimited");
        assert_eq!(memlock_text(Some(64 << 10)), "64 KiB");
        assert_eq!(memlock_text(Some(8 << 20)), "8 MiB");
        assert_eq!(memlock_text(Some(1000)), "1000 octets");
        assert!(is_memlock_failure(libc::ENOMEM, Some(65536)));
        assert!(!is_memlock_failure(libc::ENOMEM, None));
        assert!(!is_memlock_failure(libc::EINVAL, Some(65536)));
    }
}
