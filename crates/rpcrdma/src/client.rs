//! The client's short path: `HOST:PORT` and a transport to an ONC RPC
//! client.

use std::fmt;
use std::net::SocketAddr;
use std::ops::Deref;
use std::sync::Arc;

use rpcrdma_engine::{ConnectionInfo, EngineConfig, Stats};
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{Client, ClientConfig};
use rpcrdma_transport::{ConnectorHandle, LastForms, RdmaConnector};
use rpcrdma_verbs::Device;
use tokio::net::ToSocketAddrs;

use crate::device::{AnyDevice, AnyOptions};
use crate::error::Error;
use crate::provider::Provider;

/// Which transport carries the calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Transport {
    /// RPC-over-RDMA (RFC 8166; Version Two negotiated, Version One
    /// fallback) on the [`Provider`]: software iWARP unless set otherwise.
    #[default]
    Rdma,
    /// ONC RPC over TCP with record marking (RFC 5531 §11).
    Tcp,
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Transport::Rdma => "RPC-over-RDMA",
            Transport::Tcp => "ONC RPC over TCP",
        })
    }
}

/// How [`connect_with`] connects. Defaults: RPC-over-RDMA on software
/// iWARP with the client defaults of the engine
/// ([`EngineConfig::client`]) and of the ONC RPC client
/// ([`ClientConfig::default`]: 30 s per call, two retransmissions on new
/// connections).
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// RPC-over-RDMA or TCP (default RDMA).
    pub transport: Transport,
    /// The verbs provider of an RDMA connection (default software iWARP).
    pub provider: Provider,
    /// The RPC-over-RDMA engine's settings (RDMA only; default
    /// [`EngineConfig::client`]).
    pub engine: EngineConfig,
    /// The ONC RPC client's settings (default [`ClientConfig::default`]).
    pub client: ClientConfig,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            transport: Transport::Rdma,
            provider: Provider::default(),
            engine: EngineConfig::client(),
            client: ClientConfig::default(),
        }
    }
}

/// An ONC RPC client connected by [`connect`]: derefs to the
/// [`Client`] (`call`, `null`, `with_credential`, ...; a generated
/// client takes [`RpcClient::client`]`().clone()`), and tells which
/// transport it uses and, over RDMA, what its connection did.
#[derive(Clone)]
pub struct RpcClient {
    client: Client,
    transport: Transport,
    addr: SocketAddr,
    rdma: Option<Arc<dyn RdmaView>>,
}

impl fmt::Debug for RpcClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RpcClient")
            .field("transport", &self.transport)
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Deref for RpcClient {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl From<RpcClient> for Client {
    fn from(c: RpcClient) -> Client {
        c.client
    }
}

impl RpcClient {
    /// The ONC RPC client (cheap to clone; clones share the connection).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The transport the calls go over.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// The server's address.
    pub fn server_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The counters of the current RPC-over-RDMA connection (its engine's
    /// [`Stats`]): `calls_chunked` counts the calls whose DDP-eligible
    /// data went in Read chunks (the server pulled it by RDMA Read),
    /// `replies_chunked` the replies whose data came in Write chunks (RDMA
    /// Write), `calls_long`/`replies_long` the messages that went whole
    /// through chunks. `None` over TCP. A reconnection starts new counters.
    pub fn rdma_stats(&self) -> Option<Stats> {
        self.rdma.as_ref()?.stats()
    }

    /// What the current RPC-over-RDMA connection negotiated: version,
    /// inline thresholds, credits, the peer's private data. `None` over
    /// TCP.
    pub fn rdma_info(&self) -> Option<ConnectionInfo> {
        self.rdma.as_ref()?.info()
    }

    /// How the most recent call and its reply travelled over RDMA (Short,
    /// Chunked or Long). `None` over TCP or before the first call.
    pub fn rdma_last_forms(&self) -> Option<LastForms> {
        self.rdma.as_ref()?.last_forms()
    }
}

/// The current RDMA connection of a client, whatever its provider.
trait RdmaView: Send + Sync {
    fn stats(&self) -> Option<Stats>;
    fn info(&self) -> Option<ConnectionInfo>;
    fn last_forms(&self) -> Option<LastForms>;
}

impl<D: Device> RdmaView for ConnectorHandle<D> {
    fn stats(&self) -> Option<Stats> {
        self.transport().map(|t| t.stats())
    }
    fn info(&self) -> Option<ConnectionInfo> {
        self.transport().map(|t| t.info())
    }
    fn last_forms(&self) -> Option<LastForms> {
        self.transport().and_then(|t| t.last_forms())
    }
}

/// Connects to `addr` (`"HOST:PORT"`, a `SocketAddr`, ...) over
/// `transport` with the default [`ConnectOptions`], and returns once the
/// connection is up (an unreachable server is reported here).
///
/// ```no_run
/// # async fn f() -> Result<(), rpcrdma::Error> {
/// let client = rpcrdma::connect("server.example:20049", rpcrdma::Transport::Rdma).await?;
/// client.null(100003, 3).await?; // NFSv3's NULL procedure
/// # Ok(()) }
/// ```
pub async fn connect<A>(addr: A, transport: Transport) -> Result<RpcClient, Error>
where
    A: ToSocketAddrs + fmt::Display,
{
    let options = ConnectOptions {
        transport,
        ..ConnectOptions::default()
    };
    connect_with(addr, &options).await
}

/// Connects to `addr` as `options` say.
///
/// ```no_run
/// # async fn f() -> Result<(), rpcrdma::Error> {
/// use std::time::Duration;
/// use rpcrdma::{ClientConfig, ConnectOptions, EngineConfig};
/// let mut engine = EngineConfig::client();
/// engine.max_message = 64 << 20; // calls and replies of up to 64 MiB
/// let options = ConnectOptions {
///     engine,
///     client: ClientConfig { timeout: Duration::from_secs(5), ..Default::default() },
///     ..Default::default()
/// };
/// let client = rpcrdma::connect_with("10.0.0.2:20049", &options).await?;
/// # Ok(()) }
/// ```
pub async fn connect_with<A>(addr: A, options: &ConnectOptions) -> Result<RpcClient, Error>
where
    A: ToSocketAddrs + fmt::Display,
{
    let addr = crate::error::resolve(addr).await?;
    match options.transport {
        Transport::Tcp => {
            let client = Client::connect(TcpConnector::new(addr), options.client.clone()).await?;
            Ok(RpcClient {
                client,
                transport: Transport::Tcp,
                addr,
                rdma: None,
            })
        }
        Transport::Rdma => {
            let dev = AnyDevice::open(&options.provider)?;
            let provider_options = AnyOptions::for_engine(&options.engine);
            connect_rdma(dev, provider_options, addr, options).await
        }
    }
}

async fn connect_rdma<D>(
    device: D,
    provider_options: D::Options,
    addr: SocketAddr,
    options: &ConnectOptions,
) -> Result<RpcClient, Error>
where
    D: Device + Clone,
{
    let connector =
        RdmaConnector::new(device, addr, options.engine.clone()).options(provider_options);
    let handle = connector.handle();
    let client = Client::connect(connector, options.client.clone()).await?;
    Ok(RpcClient {
        client,
        transport: Transport::Rdma,
        addr,
        rdma: Some(Arc::new(handle)),
    })
}
