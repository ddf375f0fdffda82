//! Opening an ONC RPC client over RPC-over-RDMA or TCP (shared by `call`,
//! `probe` and `bench`).

use std::net::SocketAddr;

use anyhow::Context;
use clap::ValueEnum;
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{Client, ClientConfig};
use rpcrdma_transport::{ConnectorHandle, RdmaConnector};

use super::error_text::Fix;
use super::provider::AnyDevice;
use super::rdma_opts::RdmaOpts;

/// Which transport carries the RPCs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TransportKind {
    /// RPC-over-RDMA over the chosen verbs provider (`--provider`).
    Rdma,
    /// ONC RPC over TCP with record marking.
    Tcp,
}

/// A connected client and, for RDMA, a handle to its connection.
pub(crate) struct Connected {
    pub(crate) client: Client,
    pub(crate) rdma: Option<ConnectorHandle<AnyDevice>>,
    /// The provider and device ("software iWARP", "rdma-core rxe0 ...").
    pub(crate) provider: String,
}

/// Connects a client to `addr`.
pub(crate) async fn connect(
    addr: SocketAddr,
    kind: TransportKind,
    rdma: &RdmaOpts,
    config: ClientConfig,
) -> anyhow::Result<Connected> {
    match kind {
        TransportKind::Rdma => {
            rdma.check()?;
            let (dev, setup) = rdma.provider.open(rdma.params())?;
            let connector = RdmaConnector::new(dev, addr, rdma.client())
                .options(setup.options)
                .caps(rdma.caps());
            let handle = connector.handle();
            let client = Client::connect(connector, config).await.with_context(|| {
                Fix::new(
                    format!(
                        "cannot open an RPC-over-RDMA connection to {addr} ({})",
                        setup.label
                    ),
                    "is an RPC-over-RDMA server listening there?",
                )
            })?;
            Ok(Connected {
                client,
                rdma: Some(handle),
                provider: setup.label,
            })
        }
        TransportKind::Tcp => {
            let client = Client::connect(TcpConnector::new(addr), config)
                .await
                .with_context(|| {
                    Fix::new(
                        format!("cannot connect over TCP to {addr}"),
                        "is an ONC RPC server listening there?",
                    )
                })?;
            Ok(Connected {
                client,
                rdma: None,
                provider: "TCP".into(),
            })
        }
    }
}

/// Resolves `host:port` (names allowed).
pub(crate) fn resolve(s: &str) -> anyhow::Result<SocketAddr> {
    use std::net::ToSocketAddrs;
    s.to_socket_addrs()
        .with_context(|| {
            Fix::new(
                format!("cannot resolve {s:?}"),
                "give HOST:PORT, e.g. 127.0.0.1:20049",
            )
        })?
        .next()
        .with_context(|| format!("{s:?} resolves to no address"))
}
