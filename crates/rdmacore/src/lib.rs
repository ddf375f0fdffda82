//! An RDMA verbs provider over rdma-core (libibverbs and librdmacm): the
//! [`rpcrdma_verbs`] interface on InfiniBand, RoCE and iWARP adapters and
//! on the Linux kernel's soft devices `rxe` (RoCE v2) and `siw` (iWARP).
//!
//! # Opt-in
//!
//! The provider proper is behind the `rdma-core` cargo feature, which
//! compiles a small C shim (`csrc/shim.c`: libibverbs' fast path is static
//! inline in its headers) and links libibverbs and librdmacm. Debian needs
//! `libibverbs-dev librdmacm-dev` (and a C compiler, which cargo needs
//! anyway). Without the feature this crate is its sans-IO part only (the
//! limits, status mappings, receive matching and gather planning, all
//! tested), the default build needs no C library, and [`OpenError::NotBuilt`]
//! tells how to get the provider.
//!
//! # What differs from the software iWARP provider
//!
//! * Keys are the device's (`ibv_reg_mr`), addresses are virtual
//!   addresses.
//! * Receives land in registered slots of the provider's, posted before
//!   the connection is established, and are copied into the caller's
//!   buffers ([`recv`]).
//! * Inline `Bytes` of a gather list are posted inline, copied into
//!   registered bounce buffers, or registered while the request is
//!   outstanding ([`gather`]).
//! * Regions cannot be invalidated remotely or locally (no memory windows
//!   or fast registration): the provider advertises no remote invalidation
//!   (R = 0) and refuses local invalidation requests.
//! * Device limits ([`DeviceLimits`]) clamp queue depths, gather lists and
//!   IRD/ORD; the RDMA-CM limits private data per transport
//!   ([`Transport::private_data_limits`]).
//! * iWARP RDMA Read sinks get remote write access
//!   ([`Transport::region_access`]).
//!
//! # Example (with the feature and a device)
//!
//! ```no_run
//! # #[cfg(feature = "rdma-core")]
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use rpcrdma_rdmacore::{DeviceConfig, Options, RdmaCore};
//! use rpcrdma_verbs::{Device, Listener};
//! let dev = RdmaCore::open(&DeviceConfig { name: Some("rxe0".into()), ..Default::default() })?;
//! println!("{} ({})", dev.info().name, dev.info().limits.transport.name());
//! let listener = dev.listen("10.0.2.15:20049".parse()?, Options::default()).await?;
//! let request = listener.accept().await?;
//! # Ok(()) }
//! ```
#![deny(unsafe_code)]

pub mod gather;
mod limits;
pub mod recv;
pub mod status;

#[cfg(feature = "rdma-core")]
mod sys;

use std::time::Duration;

pub use limits::{
    check_private_data, negotiate_active, negotiate_passive, DeviceLimits, PrivateDataLimits,
    QpRequest, Transport, CM_RD_ATOM_MAX, WANTED_INLINE, WANTED_SGE,
};
pub use status::{
    cm_event_name, connect_failure, disconnect_reason, is_memlock_failure, memlock_text, wc_status,
    wc_status_name, DEVICE_REMOVED,
};
#[cfg(feature = "rdma-core")]
pub use sys::{Cq, Listener, Mr, Pd, Qp, RdmaCore, Request};

/// Whether this build has the provider (the `rdma-core` feature).
pub const BUILT: bool = cfg!(feature = "rdma-core");

/// How to rebuild with the provider.
pub const HOW_TO_BUILD: &str = "rebuild with the rdma-core feature: \
    `cargo build --release -p rpcrdma-cli --features rdma-core` \
    (Debian/Ubuntu: apt-get install libibverbs-dev librdmacm-dev)";

/// Which device to open and how to drive its completion queues.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceConfig {
    /// The device name (`ibv_devices`, `rdma link`: mlx5_0, rxe0, siw0,
    /// ...); `None`: the first device with an active port.
    pub name: Option<String>,
    /// Poll completion queues instead of sleeping on the completion
    /// channel: lower latency, one core busy per waiting task.
    pub polling: bool,
}

/// Connection options of the provider (`Device::Options`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Size of each receive slot the provider posts before the caller's
    /// buffers are known; slots grow to the largest buffer the caller
    /// posts. Set it to the largest message expected (RPC-over-RDMA: the
    /// inline threshold this end advertises). Default 4096.
    pub recv_size: usize,
    /// Whole connection set-up (address and route resolution, the CM
    /// exchange). Default 10 s.
    pub connect_timeout: Duration,
    /// Address and route resolution, each. Default 2 s.
    pub resolve_timeout: Duration,
    /// Listen backlog. Default 128.
    pub backlog: i32,
    /// InfiniBand/RoCE transport retries (0..=7). Default 7.
    pub retry_count: u8,
    /// InfiniBand/RoCE RNR retries (0..=7, 7 = for ever). Default 7: a
    /// peer whose receives are all in use is waited for, not failed
    /// (iWARP has no RNR: there such a Send ends the connection).
    pub rnr_retry_count: u8,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            recv_size: 4096,
            connect_timeout: Duration::from_secs(10),
            resolve_timeout: Duration::from_secs(2),
            backlog: 128,
            retry_count: 7,
            rnr_retry_count: 7,
        }
    }
}

/// A port of a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortInfo {
    /// Port number (1-based).
    pub port: u8,
    /// Whether the port is active.
    pub active: bool,
    /// InfiniBand, RoCE (Ethernet) or iWARP (Ethernet).
    pub link_layer: &'static str,
    /// Active MTU in octets (0 if unknown).
    pub mtu: u32,
    /// GID table length (RoCE: one entry per address and RoCE version).
    pub gids: u32,
}

/// What a device is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Name (`ibv_devices`).
    pub name: String,
    /// Firmware version.
    pub firmware: String,
    /// PCI vendor id (0 for soft devices).
    pub vendor_id: u32,
    /// Vendor part id.
    pub vendor_part_id: u32,
    /// Ports.
    pub ports: Vec<PortInfo>,
    /// Limits.
    pub limits: DeviceLimits,
}

impl std::fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let l = &self.limits;
        write!(
            f,
            "{} ({}; max_qp_wr {}, max_sge {}, max_cqe {}, max_qp_rd_atom {}, max_qp_init_rd_atom {}, memory windows type 2: {}",
            self.name,
            l.transport.name(),
            l.max_qp_wr,
            l.max_sge,
            l.max_cqe,
            l.max_qp_rd_atom,
            l.max_qp_init_rd_atom,
            if l.mw_type_2 { "yes" } else { "no" }
        )?;
        for p in &self.ports {
            write!(
                f,
                "; port {}: {}, {}, MTU {}",
                p.port,
                if p.active { "active" } else { "down" },
                p.link_layer,
                p.mtu
            )?;
        }
        write!(f, ")")
    }
}

/// Why the provider cannot be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The binary was built without the `rdma-core` feature.
    #[error("this binary was built without the rdma-core provider; {HOW_TO_BUILD}")]
    NotBuilt,
    /// rdma-core sees no device.
    #[error(
        "no RDMA device found ({detail}); check `ibv_devices` and `rdma link`: load the adapter's \
         driver, or create a soft device (`rdma link add rxe0 type rxe netdev eth0` for RoCE, \
         `rdma link add siw0 type siw netdev eth0` for iWARP), and make sure /dev/infiniband/ \
         exists (modules ib_uverbs and rdma_ucm)"
    )]
    NoDevice {
        /// What rdma-core said.
        detail: String,
    },
    /// No device has that name.
    #[error("no RDMA device named {name:?}; available: {}", if available.is_empty() { "none".to_string() } else { available.join(", ") })]
    NotFound {
        /// The name asked for.
        name: String,
        /// The names there are.
        available: Vec<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_what_to_do() {
        let e = OpenError::NotBuilt.to_string();
        assert!(
            e.contains("--features rdma-core") && e.contains("libibverbs-dev"),
            "{e}"
        );
        let e = OpenError::NoDevice {
            detail: "none".into(),
        }
        .to_string();
        assert!(e.contains("rdma link add rxe0"), "{e}");
        let e = OpenError::NotFound {
            name: "mlx5_9".into(),
            available: vec!["rxe0".into(), "siw0".into()],
        }
        .to_string();
        assert!(e.contains("\"mlx5_9\"") && e.contains("rxe0, siw0"), "{e}");
        let e = OpenError::NotFound {
            name: "x".into(),
            available: vec![],
        }
        .to_string();
        assert!(e.contains("available: none"), "{e}");
        assert_eq!(BUILT, cfg!(feature = "rdma-core"));
    }

    #[test]
    fn options_default() {
        let o = Options::default();
        assert_eq!(o.recv_size, 4096);
        assert_eq!(o.rnr_retry_count, 7);
        assert!(o.connect_timeout > o.resolve_timeout);
    }

    #[test]
    fn device_info_display() {
        let i = DeviceInfo {
            name: "rxe0".into(),
            firmware: String::new(),
            vendor_id: 0,
            vendor_part_id: 0,
            ports: vec![PortInfo {
                port: 1,
                active: true,
                link_layer: "RoCE (Ethernet)",
                mtu: 1024,
                gids: 2,
            }],
            limits: DeviceLimits {
                transport: Transport::Ib,
                max_qp_wr: 16384,
                max_sge: 32,
                max_cqe: 32767,
                max_qp_rd_atom: 128,
                max_qp_init_rd_atom: 128,
                max_mr_size: u64::MAX,
                mw_type_2: true,
            },
        };
        let s = i.to_string();
        assert!(
            s.starts_with("rxe0 (InfiniBand/RoCE;")
                && s.contains("port 1: active, RoCE (Ethernet), MTU 1024"),
            "{s}"
        );
    }
}
