//! The verbs provider behind the commands: `--provider softiwarp|rdma-core`
//! and `--device NAME`.
//!
//! This is the one place a provider is chosen: [`ProviderOpts::open`]
//! opens the chosen device as an [`AnyDevice`] (the `rpcrdma` facade's
//! provider-neutral device), and a command runs its code once on it. A new
//! command (e.g. an NFS server) takes the same options by flattening
//! [`ProviderOpts`] (or [`super::rdma_opts::RdmaOpts`], which includes it).

use std::future::Future;

use anyhow::bail;
use clap::{Args, ValueEnum};
pub(crate) use rpcrdma::{AnyDevice, AnyListener, AnyOptions, AnyQp, AnyRequest};
use rpcrdma_verbs::Device;

/// Which verbs provider carries the connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ProviderKind {
    /// The software iWARP provider: MPA/DDP/RDMAP over TCP in user space,
    /// no RDMA hardware needed.
    Softiwarp,
    /// An RDMA device through rdma-core (libibverbs/librdmacm): InfiniBand,
    /// RoCE and iWARP adapters, the kernel's rxe and siw (binaries built
    /// with the rdma-core feature).
    #[value(name = "rdma-core")]
    RdmaCore,
}

/// Provider options shared by every command that opens RDMA connections.
#[derive(Debug, Clone, Args)]
pub(crate) struct ProviderOpts {
    /// Verbs provider: softiwarp (software iWARP over TCP) or rdma-core (an
    /// RDMA device through libibverbs/librdmacm).
    #[arg(long, value_enum, default_value = "softiwarp")]
    pub(crate) provider: ProviderKind,
    /// rdma-core: the device to use (as `ibv_devices` lists it, e.g.
    /// mlx5_0, rxe0, siw0); default: the first with an active port.
    #[arg(long, value_name = "NAME")]
    pub(crate) device: Option<String>,
    /// rdma-core: poll completion queues instead of sleeping on the
    /// completion channel (lower latency; keeps a core busy).
    #[arg(long)]
    pub(crate) poll_cq: bool,
}

impl Default for ProviderOpts {
    fn default() -> Self {
        ProviderOpts {
            provider: ProviderKind::Softiwarp,
            device: None,
            poll_cq: false,
        }
    }
}

/// Provider-specific settings a command computes from its own options.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProviderParams {
    /// Software iWARP connection options (MPA revision, CRC, RTR, ...).
    pub(crate) softiwarp: rpcrdma_softiwarp::Options,
    /// The largest message the command expects to receive (the rdma-core
    /// provider's receive slot size).
    #[cfg_attr(not(feature = "rdma-core"), allow(dead_code))]
    pub(crate) recv_size: usize,
}

/// What a command gets besides the device.
#[derive(Debug)]
pub(crate) struct Setup<D: Device = AnyDevice> {
    /// The provider's connection options.
    pub(crate) options: D::Options,
    /// A one-line description of the provider and device, for output.
    pub(crate) label: String,
}

/// A command's work, for any provider: the form the benchmark modules
/// not yet calling [`ProviderOpts::open`] themselves still take
/// ([`ProviderOpts::run`] runs them on the [`AnyDevice`] it opens).
pub(crate) trait WithDevice {
    /// What the job returns.
    type Output;
    /// Runs on `dev`.
    fn run<D: Device + Clone + std::fmt::Debug>(
        self,
        dev: D,
        setup: Setup<D>,
    ) -> impl Future<Output = anyhow::Result<Self::Output>>;
}

impl ProviderOpts {
    /// Whether the provider is the software one.
    pub(crate) fn is_softiwarp(&self) -> bool {
        self.provider == ProviderKind::Softiwarp
    }

    /// Opens the chosen provider's device, with the connection options of
    /// `params`. Errors name the fix (an option that needs the other
    /// provider, a device that is not there, a binary built without
    /// rdma-core).
    pub(crate) fn open(&self, params: ProviderParams) -> anyhow::Result<(AnyDevice, Setup)> {
        match self.provider {
            ProviderKind::Softiwarp => {
                if let Some(d) = &self.device {
                    bail!("--device {d} needs --provider rdma-core; the software iWARP provider has no device");
                }
                if self.poll_cq {
                    bail!("--poll-cq needs --provider rdma-core");
                }
                let mut options = AnyOptions::default();
                options.softiwarp = params.softiwarp;
                let dev = AnyDevice::open(&rpcrdma::Provider::SoftIwarp)?;
                let label = dev.provider_name().to_owned();
                Ok((dev, Setup { options, label }))
            }
            ProviderKind::RdmaCore => self.open_rdmacore(params),
        }
    }

    /// Opens the chosen provider and runs `job` on it (see [`WithDevice`]),
    /// on the provider's own device type: `bench loop`'s NULL round trip,
    /// which scripts/check-null-instructions.sh counts with the committed
    /// PGO profile, keeps the code that profile was recorded on (with
    /// [`AnyDevice`] and that profile it counted 12.5k instructions, above
    /// the 12k budget; a profile recorded on `AnyDevice` is still to be
    /// made).
    pub(crate) async fn run<J: WithDevice>(
        &self,
        params: ProviderParams,
        job: J,
    ) -> anyhow::Result<J::Output> {
        let (dev, setup) = self.open(params)?;
        let label = setup.label;
        match dev {
            AnyDevice::SoftIwarp(dev) => {
                let options = setup.options.softiwarp;
                job.run(dev, Setup { options, label }).await
            }
            #[cfg(feature = "rdma-core")]
            AnyDevice::RdmaCore(dev) => {
                let options = setup.options.rdmacore;
                job.run(dev, Setup { options, label }).await
            }
        }
    }

    #[cfg(feature = "rdma-core")]
    fn open_rdmacore(&self, params: ProviderParams) -> anyhow::Result<(AnyDevice, Setup)> {
        use rpcrdma_rdmacore::{memlock_text, DeviceConfig, Options, RdmaCore};
        let dev = RdmaCore::open(&DeviceConfig {
            name: self.device.clone(),
            polling: self.poll_cq,
        })?;
        let limit = RdmaCore::memlock_limit();
        // Root (CAP_IPC_LOCK) is not bound by the limit.
        if limit.is_some_and(|l| l < 64 << 20) && !is_root() {
            eprintln!(
                "rpcrdma: warning: the locked-memory limit is {}; registrations beyond it fail \
                 (raise it with `ulimit -l unlimited` or memlock in /etc/security/limits.conf)",
                memlock_text(limit)
            );
        }
        tracing::info!(device = %dev.info(), "rdma-core device");
        let setup = Setup {
            options: AnyOptions {
                rdmacore: Options {
                    recv_size: params.recv_size.max(1024),
                    ..Options::default()
                },
                ..AnyOptions::default()
            },
            label: format!(
                "rdma-core {} ({})",
                dev.info().name,
                dev.info().limits.transport.name()
            ),
        };
        Ok((AnyDevice::RdmaCore(dev), setup))
    }

    #[cfg(not(feature = "rdma-core"))]
    fn open_rdmacore(&self, _params: ProviderParams) -> anyhow::Result<(AnyDevice, Setup)> {
        Err(rpcrdma_rdmacore::OpenError::NotBuilt.into())
    }
}

/// Describes a connected queue pair (negotiated parameters), for output.
pub(crate) fn describe_qp(qp: &AnyQp) -> String {
    match qp {
        AnyQp::SoftIwarp(qp) => describe_soft(qp),
        #[cfg(feature = "rdma-core")]
        AnyQp::RdmaCore(qp) => describe_rdmacore(qp),
    }
}

/// Describes an incoming connection request, for output.
pub(crate) fn describe_request(req: &AnyRequest) -> String {
    match req {
        AnyRequest::SoftIwarp(req) => describe_soft_request(req),
        #[cfg(feature = "rdma-core")]
        AnyRequest::RdmaCore(req) => describe_rdmacore_request(req),
    }
}

fn describe_soft_request(req: &rpcrdma_softiwarp::Request) -> String {
    let info = req.info();
    format!(
        "MPA request revision {}{}{}, {} octets of private data",
        info.revision,
        if info.crc { ", CRC" } else { "" },
        match info.ird_ord {
            Some(w) => format!(
                ", IRD {} ORD {}{}",
                w.ird,
                w.ord,
                if w.peer_to_peer { ", peer-to-peer" } else { "" }
            ),
            None => String::new(),
        },
        info.private_data.len(),
    )
}

fn describe_soft(qp: &rpcrdma_softiwarp::Qp) -> String {
    match qp.negotiated() {
        Some(n) => format!(
            "MPA revision {}, CRC {}, IRD {} ORD {}, RTR {}",
            n.revision,
            if n.crc { "on" } else { "off" },
            n.ird,
            n.ord,
            match n.rtr {
                Some(r) => format!("{r:?}").to_lowercase(),
                None => "none".into(),
            }
        ),
        None => "not connected".into(),
    }
}

#[cfg(feature = "rdma-core")]
fn describe_rdmacore(qp: &rpcrdma_rdmacore::Qp) -> String {
    use rpcrdma_verbs::QueuePair;
    let c = qp.caps();
    format!(
        "device {} port {}, QP {:#x}, IRD {} ORD {}, {} send / {} receive work requests, {} gather elements, {} inline octets",
        qp.device_name(),
        qp.port(),
        qp.qp_num(),
        c.ird,
        c.ord,
        c.send_depth,
        c.recv_depth,
        qp.max_send_sge(),
        qp.max_inline()
    )
}

#[cfg(feature = "rdma-core")]
fn describe_rdmacore_request(req: &rpcrdma_rdmacore::Request) -> String {
    use rpcrdma_verbs::ConnectRequest;
    let (ird, ord) = req.ird_ord().unwrap_or((0, 0));
    format!(
        "RDMA-CM request, IRD {ird} ORD {ord}, {} octets of private data",
        req.private_data().len()
    )
}

#[cfg(feature = "rdma-core")]
fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Label;

    impl WithDevice for Label {
        type Output = String;
        async fn run<D: Device + Clone + std::fmt::Debug>(
            self,
            _dev: D,
            setup: Setup<D>,
        ) -> anyhow::Result<String> {
            Ok(setup.label)
        }
    }

    fn block<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn softiwarp_opens_with_the_commands_options() {
        let p = ProviderOpts::default();
        let mut params = ProviderParams::default();
        params.softiwarp.crc = true;
        let (dev, setup) = p.open(params).unwrap();
        assert!(matches!(dev, AnyDevice::SoftIwarp(_)));
        assert_eq!(setup.label, "software iWARP");
        assert!(setup.options.softiwarp.crc);
    }

    #[test]
    fn softiwarp_runs_the_job() {
        let p = ProviderOpts::default();
        assert_eq!(
            block(p.run(ProviderParams::default(), Label)).unwrap(),
            "software iWARP"
        );
    }

    #[test]
    fn device_options_need_rdma_core() {
        let p = ProviderOpts {
            device: Some("rxe0".into()),
            ..ProviderOpts::default()
        };
        let e = p.open(ProviderParams::default()).unwrap_err();
        assert!(e.to_string().contains("--provider rdma-core"), "{e}");
        let p = ProviderOpts {
            poll_cq: true,
            ..ProviderOpts::default()
        };
        assert!(p.open(ProviderParams::default()).is_err());
    }

    #[test]
    fn rdma_core_without_the_feature_or_a_device_is_a_clear_error() {
        let p = ProviderOpts {
            provider: ProviderKind::RdmaCore,
            device: Some("no-such-device0".into()),
            poll_cq: false,
        };
        let e = p.open(ProviderParams::default()).unwrap_err();
        let s = e.to_string();
        if cfg!(feature = "rdma-core") {
            assert!(
                s.contains("no-such-device0") || s.contains("no RDMA device"),
                "{s}"
            );
        } else {
            assert!(s.contains("--features rdma-core"), "{s}");
        }
    }
}
