//! Options shared by the commands that open RPC-over-RDMA connections
//! (demo, serve, call, probe, bench), the provider's included.

use clap::{Args, ValueEnum};
use rpcrdma_engine::{EngineConfig, VersionPolicy};
use rpcrdma_softiwarp::Options;
use rpcrdma_verbs::QpCaps;
use rpcrdma_wire::VersionRange;

use super::provider::{ProviderOpts, ProviderParams};

/// Which RPC-over-RDMA version to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum VersionArg {
    /// Version One only (RFC 8166).
    #[value(name = "1")]
    V1,
    /// Version Two only (draft-cel-01).
    #[value(name = "2")]
    V2,
    /// Try Version Two, fall back to One (clients); accept both (servers).
    Negotiate,
}

/// RPC-over-RDMA connection options.
#[derive(Debug, Clone, Args)]
pub(crate) struct RdmaOpts {
    /// RPC-over-RDMA version: 1, 2, or negotiate (client: probe with
    /// Version Two and fall back; server: accept both).
    #[arg(long = "rdma-version", value_enum, default_value = "negotiate")]
    pub(crate) version: VersionArg,
    /// Inline threshold this end advertises (RFC 8797 send and receive
    /// size), 1024..=262144; 4096 is what Linux advertises. A peer that
    /// sends no private data gets the Version One default of 1024. Calls
    /// and replies up to the smaller of the two ends' sizes go in one Send;
    /// larger ones through chunks (a WRITE's data then takes an RDMA Read).
    /// Between two of our ends, a larger size (16384, 65536) speeds up
    /// mid-size WRITEs over software iWARP, at the cost of every receive
    /// buffer growing to it (`serve` prints the memory each connection
    /// holds; docs/performance.md, "Mid-size calls and the inline size").
    #[arg(long, default_value_t = rpcrdma_engine::DEFAULT_INLINE, value_parser = clap::value_parser!(u32).range(1024..=262_144))]
    pub(crate) inline: u32,
    /// Credits: what a client asks for / what a server grants.
    #[arg(long)]
    pub(crate) credits: Option<u32>,
    /// Do not offer remote invalidation (RFC 8797 R bit).
    #[arg(long)]
    pub(crate) no_remote_invalidate: bool,
    /// Ask for MPA CRC32c on every FPDU (software iWARP).
    #[arg(long)]
    pub(crate) crc: bool,
    /// Do not offer or accept the experimental Version Two transport
    /// properties feature (docs/v2-transport-properties.md).
    #[arg(long)]
    pub(crate) no_transport_properties: bool,
    /// MPA revision to request (1 or 2; software iWARP).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub(crate) mpa_revision: u8,
    /// Largest ULPDU per MPA FPDU we send (MULPDU), 64..=65535. The
    /// default (65532) suits loopback; 1448 keeps each FPDU within one
    /// 1500-byte Ethernet segment, as Linux siw sends.
    #[arg(long, value_parser = clap::value_parser!(u32).range(64..=65535))]
    pub(crate) mulpdu: Option<u32>,
    #[command(flatten)]
    pub(crate) provider: ProviderOpts,
}

impl RdmaOpts {
    fn apply(&self, mut c: EngineConfig) -> EngineConfig {
        c.inline_send = self.inline;
        c.inline_recv = self.inline;
        c.remote_invalidate = !self.no_remote_invalidate;
        c.transport_properties = !self.no_transport_properties;
        c.versions = match self.version {
            VersionArg::V1 => VersionRange::V1_ONLY,
            VersionArg::V2 => VersionRange::V2_ONLY,
            VersionArg::Negotiate => VersionRange::V1_AND_V2,
        };
        c.client_version = match self.version {
            VersionArg::V1 => VersionPolicy::V1,
            VersionArg::V2 => VersionPolicy::V2,
            VersionArg::Negotiate => VersionPolicy::Negotiate,
        };
        c
    }

    /// The engine configuration of a client.
    pub(crate) fn client(&self) -> EngineConfig {
        let mut c = self.apply(EngineConfig::client());
        if let Some(n) = self.credits {
            c.credits_request = n.max(1);
        }
        c
    }

    /// The engine configuration of a server.
    pub(crate) fn server(&self) -> EngineConfig {
        let mut c = self.apply(EngineConfig::server());
        if let Some(n) = self.credits {
            c.credits_grant = n.max(1);
        }
        c
    }

    /// Queue pair sizes fitting the credits.
    pub(crate) fn caps(&self) -> QpCaps {
        let credits = self.credits.unwrap_or(128).max(16);
        QpCaps {
            send_depth: (credits * 4).max(128),
            recv_depth: credits + 16,
            ..QpCaps::default()
        }
    }

    /// Software iWARP options.
    pub(crate) fn options(&self) -> Options {
        let mut o = Options {
            revision: self.mpa_revision,
            crc: self.crc,
            ..Options::default()
        };
        if let Some(m) = self.mulpdu {
            o.max_ulpdu = m as usize;
        }
        o
    }

    /// Settings of both providers: software iWARP options, and receive
    /// slots of the inline threshold (the largest message a peer may Send
    /// us) for rdma-core.
    pub(crate) fn params(&self) -> ProviderParams {
        ProviderParams {
            softiwarp: self.options(),
            recv_size: self.inline as usize,
        }
    }

    /// Refuses software iWARP options with another provider.
    pub(crate) fn check(&self) -> anyhow::Result<()> {
        if !self.provider.is_softiwarp()
            && (self.crc || self.mpa_revision != 2 || self.mulpdu.is_some())
        {
            anyhow::bail!("--crc, --mpa-revision and --mulpdu are software iWARP options; an rdma-core device negotiates MPA itself (iWARP) or has none (InfiniBand/RoCE)");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cmd::provider::ProviderKind;

    #[derive(Debug, Parser)]
    struct Cmd {
        #[command(flatten)]
        rdma: RdmaOpts,
    }

    fn parse(args: &[&str]) -> RdmaOpts {
        Cmd::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
            .unwrap()
            .rdma
    }

    #[test]
    fn provider_options_are_shared_and_checked() {
        let o = parse(&[
            "--provider",
            "rdma-core",
            "--device",
            "rxe0",
            "--inline",
            "4096",
        ]);
        assert_eq!(o.provider.provider, ProviderKind::RdmaCore);
        assert_eq!(o.provider.device.as_deref(), Some("rxe0"));
        assert!(o.check().is_ok());
        // Receive slots of the inline threshold (the largest Send a peer
        // may make).
        assert_eq!(o.params().recv_size, 4096);
        for bad in [
            &["--provider", "rdma-core", "--crc"][..],
            &["--provider", "rdma-core", "--mpa-revision", "1"],
        ] {
            let e = parse(bad).check().unwrap_err().to_string();
            assert!(e.contains("software iWARP options"), "{e}");
        }
        let o = parse(&["--crc", "--mpa-revision", "1"]);
        assert_eq!(o.provider.provider, ProviderKind::Softiwarp);
        assert!(o.check().is_ok());
        assert!(o.params().softiwarp.crc);
        assert_eq!(o.params().softiwarp.revision, 1);
    }
}
