//! The server's short path: a set of programs served on RPC-over-RDMA
//! and TCP.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use rpcrdma_engine::{EngineConfig, MemoryBudget, Stats};
use rpcrdma_oncrpc::{Server, ServerConfig, Services};
use rpcrdma_transport::{serve_rdma, ListenConfig, RdmaService, DEFAULT_MAX_CONNECTIONS};
use rpcrdma_verbs::Device;

use crate::device::{AnyDevice, AnyOptions};
use crate::error::{resolve, Error};
use crate::provider::Provider;

/// Serves `services` (every program registered in them: by hand with
/// [`Services::program`], or a generated server's `register`): name the
/// addresses with [`ServeBuilder::rdma`] and [`ServeBuilder::tcp`], then
/// [`ServeBuilder::start`].
///
/// ```no_run
/// # async fn f() -> Result<(), rpcrdma::Error> {
/// let mut services = rpcrdma::Services::new();
/// services.program(0x2000_0199, 1).null();
/// let serving = rpcrdma::serve(services)
///     .rdma("0.0.0.0:20049")
///     .tcp("0.0.0.0:2049")
///     .start()
///     .await?;
/// // ... until it is time to stop:
/// serving.shutdown().await;
/// # Ok(()) }
/// ```
pub fn serve(services: Services) -> ServeBuilder {
    ServeBuilder {
        services,
        rdma: None,
        tcp: None,
        provider: Provider::default(),
        server: ServerConfig::default(),
        engine: EngineConfig::server(),
        max_connections: DEFAULT_MAX_CONNECTIONS,
    }
}

/// What [`serve`] listens on and how; [`ServeBuilder::start`] opens the
/// listeners.
#[must_use = "a ServeBuilder does nothing until start() is awaited"]
pub struct ServeBuilder {
    services: Services,
    rdma: Option<String>,
    tcp: Option<String>,
    provider: Provider,
    server: ServerConfig,
    engine: EngineConfig,
    max_connections: usize,
}

impl fmt::Debug for ServeBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServeBuilder")
            .field("rdma", &self.rdma)
            .field("tcp", &self.tcp)
            .field("provider", &self.provider)
            .finish_non_exhaustive()
    }
}

impl ServeBuilder {
    /// Listens for RPC-over-RDMA on `addr` (`"HOST:PORT"`; port 0 picks
    /// one, [`Serving::rdma_addr`] tells which).
    pub fn rdma(mut self, addr: impl Into<String>) -> Self {
        self.rdma = Some(addr.into());
        self
    }

    /// Listens for ONC RPC over TCP on `addr`.
    pub fn tcp(mut self, addr: impl Into<String>) -> Self {
        self.tcp = Some(addr.into());
        self
    }

    /// The verbs provider of the RPC-over-RDMA listener (default software
    /// iWARP).
    pub fn provider(mut self, provider: Provider) -> Self {
        self.provider = provider;
        self
    }

    /// The ONC RPC server's settings (default [`ServerConfig::default`]).
    /// Unless it names a memory budget, the server's TCP connections
    /// charge the RPC-over-RDMA listener's, so one limit
    /// ([`EngineConfig::max_shared_memory`]) covers both transports.
    pub fn server_config(mut self, config: ServerConfig) -> Self {
        self.server = config;
        self
    }

    /// The RPC-over-RDMA engine's settings (default
    /// [`EngineConfig::server`]).
    pub fn engine_config(mut self, config: EngineConfig) -> Self {
        self.engine = config;
        self
    }

    /// Most RPC-over-RDMA connections open at once (default
    /// [`DEFAULT_MAX_CONNECTIONS`]).
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n;
        self
    }

    /// Opens the listeners and serves. What it returns runs until
    /// [`Serving::shutdown`] (dropping it does not stop the server).
    pub async fn start(self) -> Result<Serving, Error> {
        if self.rdma.is_none() && self.tcp.is_none() {
            return Err(Error::NoListener);
        }
        let rdma_at = match &self.rdma {
            Some(a) => Some(resolve(a.as_str()).await?),
            None => None,
        };
        let tcp_at = match &self.tcp {
            Some(a) => Some(resolve(a.as_str()).await?),
            None => None,
        };
        let budget = MemoryBudget::new(self.engine.max_shared_memory);
        let mut server_config = self.server;
        if server_config.memory.is_none() && rdma_at.is_some() {
            server_config.memory = Some(Arc::new(budget.clone()));
        }
        let server = Server::new(self.services, server_config);
        let listen = Listen {
            engine: self.engine,
            budget,
            max_connections: self.max_connections,
        };
        let rdma = match rdma_at {
            None => None,
            Some(addr) => {
                let options = AnyOptions::for_engine(&listen.engine);
                let started = match AnyDevice::open(&self.provider) {
                    Ok(dev) => listen.start(&server, dev, options, addr).await,
                    Err(e) => Err(e),
                };
                match started {
                    Ok(r) => Some(r),
                    Err(e) => {
                        server.shutdown().await;
                        return Err(e);
                    }
                }
            }
        };
        let tcp = match tcp_at {
            None => None,
            Some(addr) => match server.serve_tcp(addr).await {
                Ok(a) => Some(a),
                Err(source) => {
                    server.shutdown().await;
                    return Err(Error::ListenTcp { addr, source });
                }
            },
        };
        Ok(Serving { server, rdma, tcp })
    }
}

/// How the RPC-over-RDMA listener is set up.
struct Listen {
    engine: EngineConfig,
    budget: MemoryBudget,
    max_connections: usize,
}

impl Listen {
    async fn start<D>(
        &self,
        server: &Server,
        device: D,
        options: D::Options,
        addr: SocketAddr,
    ) -> Result<Arc<dyn RdmaListening>, Error>
    where
        D: Device + Clone,
    {
        let config = ListenConfig {
            engine: self.engine.clone(),
            options,
            max_connections: self.max_connections,
            budget: Some(self.budget.clone()),
            ..ListenConfig::default()
        };
        let service = serve_rdma(server, device, addr, config).await?;
        Ok(Arc::new(service))
    }
}

/// An RPC-over-RDMA listener, whatever its provider.
trait RdmaListening: Send + Sync {
    fn local_addr(&self) -> SocketAddr;
    fn stats(&self) -> Vec<Stats>;
}

impl<D: Device> RdmaListening for RdmaService<D> {
    fn local_addr(&self) -> SocketAddr {
        RdmaService::local_addr(self)
    }
    fn stats(&self) -> Vec<Stats> {
        self.connections().iter().map(|t| t.stats()).collect()
    }
}

/// A running server (from [`ServeBuilder::start`]): its addresses, its
/// RPC-over-RDMA connections' counters, and [`Serving::shutdown`]. The
/// listeners belong to the [`Server`]: they run until `shutdown`, whether
/// this is kept or dropped.
pub struct Serving {
    server: Server,
    rdma: Option<Arc<dyn RdmaListening>>,
    tcp: Option<SocketAddr>,
}

impl fmt::Debug for Serving {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Serving")
            .field("rdma", &self.rdma_addr())
            .field("tcp", &self.tcp)
            .finish_non_exhaustive()
    }
}

impl Serving {
    /// The ONC RPC server (its services, backchannels, memory budget).
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The address the RPC-over-RDMA listener is bound to.
    pub fn rdma_addr(&self) -> Option<SocketAddr> {
        self.rdma.as_ref().map(|r| r.local_addr())
    }

    /// The address the TCP listener is bound to.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp
    }

    /// The counters of each open RPC-over-RDMA connection: `rdma_reads`
    /// counts the RDMA Reads that pulled calls' Read chunks (DDP-eligible
    /// arguments), `rdma_writes` the RDMA Writes that filled Write and
    /// Reply chunks, `calls_received` and `replies_sent` the messages.
    pub fn rdma_stats(&self) -> Vec<Stats> {
        self.rdma.as_ref().map(|r| r.stats()).unwrap_or_default()
    }

    /// Graceful shutdown: stops both listeners, lets every call in
    /// progress send its reply, closes the connections; returns when done.
    pub async fn shutdown(&self) {
        self.server.shutdown().await;
    }
}
