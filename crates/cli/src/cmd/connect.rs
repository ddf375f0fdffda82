//! Opening an ONC RPC client over RPC-over-RDMA or TCP (shared by `call`,
//! `probe` and `bench`).

use std::net::SocketAddr;

use anyhow::Context;
use clap::ValueEnum;
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{Client, ClientConfig};
use rpcrdma_softiwarp::SoftIwarp;
use rpcrdma_transport::{ConnectorHandle, RdmaConnector};

use super::rdma_opts::RdmaOpts;

/// Which transport carries the RPCs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TransportKind {
    /// RPC-over-RDMA over the software iWARP provider.
    Rdma,
    /// ONC RPC over TCP with record marking.
    Tcp,
}

/// A connected client and, for RDMA, a handle to its connection.
pub(crate) struct Connected {
    pub(crate) client: Client,
    pub(crate) rdma: Option<ConnectorHandle<SoftIwarp>>,
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
            let connector = RdmaConnector::new(SoftIwarp::new(), addr, rdma.client())
                .options(rdma.options())
                .caps(rdma.caps());
            let handle = connector.handle();
            let client = Client::connect(connector, config).await.with_context(|| {
                format!(
                    "cannot open an RPC-over-RDMA (iWARP) connection to {addr}; \
                     is an RPC-over-RDMA server listening there?"
                )
            })?;
            Ok(Connected {
                client,
                rdma: Some(handle),
            })
        }
        TransportKind::Tcp => {
            let client = Client::connect(TcpConnector::new(addr), config)
                .await
                .with_context(|| format!("cannot connect over TCP to {addr}"))?;
            Ok(Connected { client, rdma: None })
        }
    }
}

/// Resolves `host:port` (names allowed).
pub(crate) fn resolve(s: &str) -> anyhow::Result<SocketAddr> {
    use std::net::ToSocketAddrs;
    s.to_socket_addrs()
        .with_context(|| format!("cannot resolve {s:?}; give HOST:PORT, e.g. 127.0.0.1:20049"))?
        .next()
        .with_context(|| format!("{s:?} resolves to no address"))
}
