//! Opening an ONC RPC client over RPC-over-RDMA or TCP (shared by `call`,
//! `probe` and `bench`).

use std::net::SocketAddr;

use anyhow::Context;
use bytes::Bytes;
use clap::ValueEnum;
use rpcrdma_engine::ConnectionInfo;
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{Client, ClientConfig};
use rpcrdma_transport::{ConnectorHandle, RdmaConnector, RdmaTransport};
use rpcrdma_verbs::Device;

use super::provider::{Setup, WithDevice};
use super::rdma_opts::RdmaOpts;

/// Which transport carries the RPCs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TransportKind {
    /// RPC-over-RDMA over the chosen verbs provider (`--provider`).
    Rdma,
    /// ONC RPC over TCP with record marking.
    Tcp,
}

/// What the commands read of an RPC-over-RDMA connection, whatever the
/// provider.
pub(crate) trait TransportView: Send + Sync {
    /// The engine's view of the connection.
    fn info(&self) -> ConnectionInfo;
    /// The version in use and whether the client fell back to it.
    fn negotiated(&self) -> Option<(u32, bool)>;
    /// The peer's private data as received.
    fn peer_private_data(&self) -> Bytes;
}

impl<D: Device> TransportView for RdmaTransport<D> {
    fn info(&self) -> ConnectionInfo {
        RdmaTransport::info(self)
    }
    fn negotiated(&self) -> Option<(u32, bool)> {
        RdmaTransport::negotiated(self)
    }
    fn peer_private_data(&self) -> Bytes {
        RdmaTransport::peer_private_data(self).clone()
    }
}

/// The latest RPC-over-RDMA connection of a client.
pub(crate) trait HandleView: Send + Sync {
    /// The connection, once made.
    fn transport(&self) -> Option<Box<dyn TransportView>>;
}

impl<D: Device> HandleView for ConnectorHandle<D> {
    fn transport(&self) -> Option<Box<dyn TransportView>> {
        ConnectorHandle::transport(self).map(|t| Box::new(t) as Box<dyn TransportView>)
    }
}

/// A connected client and, for RDMA, a handle to its connection.
pub(crate) struct Connected {
    pub(crate) client: Client,
    pub(crate) rdma: Option<Box<dyn HandleView>>,
    /// The provider and device ("software iWARP", "rdma-core rxe0 ...").
    pub(crate) provider: String,
}

struct Connect<'a> {
    addr: SocketAddr,
    rdma: &'a RdmaOpts,
    config: ClientConfig,
}

impl WithDevice for Connect<'_> {
    type Output = Connected;

    async fn run<D: Device + Clone + std::fmt::Debug>(
        self,
        dev: D,
        setup: Setup<D>,
    ) -> anyhow::Result<Connected> {
        let addr = self.addr;
        let connector = RdmaConnector::new(dev, addr, self.rdma.client())
            .options(setup.options)
            .caps(self.rdma.caps());
        let handle = connector.handle();
        let client = Client::connect(connector, self.config)
            .await
            .with_context(|| {
                format!(
                    "cannot open an RPC-over-RDMA connection to {addr} ({}); \
                     is an RPC-over-RDMA server listening there?",
                    setup.label
                )
            })?;
        Ok(Connected {
            client,
            rdma: Some(Box::new(handle)),
            provider: setup.label,
        })
    }
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
            rdma.provider
                .run(rdma.params(), Connect { addr, rdma, config })
                .await
        }
        TransportKind::Tcp => {
            let client = Client::connect(TcpConnector::new(addr), config)
                .await
                .with_context(|| format!("cannot connect over TCP to {addr}"))?;
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
        .with_context(|| format!("cannot resolve {s:?}; give HOST:PORT, e.g. 127.0.0.1:20049"))?
        .next()
        .with_context(|| format!("{s:?} resolves to no address"))
}
