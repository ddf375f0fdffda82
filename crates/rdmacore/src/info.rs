//! What a device is ([`DeviceInfo`], [`PortInfo`]), whether this build has
//! the provider, and why it cannot be opened ([`OpenError`]).

use crate::limits::DeviceLimits;

/// Whether this build has the provider (the `rdma-core` feature).
pub const BUILT: bool = cfg!(feature = "rdma-core");

/// How to rebuild with the provider.
pub const HOW_TO_BUILD: &str = "rebuild with the rdma-core feature: \
    `cargo build --release -p rpcrdma-cli --features rdma-core` \
    (Debian/Ubuntu: apt-get install libibverbs-dev librdmacm-dev)";

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
    use crate::config::Options;
    use crate::limits::Transport;

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
