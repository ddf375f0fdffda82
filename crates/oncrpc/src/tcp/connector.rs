//! Making TCP connections: the [`TcpConnector`] of a [`Client`], and
//! [`answers_mpa`], which tells a port that speaks RPC-over-RDMA.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpStream;

use super::{TcpConfig, TcpTransport};
use crate::client::{Client, ClientConfig};
use crate::error::{RpcError, TransportError};
use crate::transport::Connector;

/// Whether the server at `addr` answers an MPA Request (RFC 5044 §7.1:
/// the 16-octet key "MPA ID Req Frame", no markers, no CRC, revision 1,
/// no private data) with an MPA Reply or Reject (its key "MPA ID Rep
/// Frame") within 2 s: then it is an iWARP responder (software iWARP,
/// Linux `siw`, an iWARP adapter), serving RPC-over-RDMA. Asked only on
/// the failure path, when a server closed a client's connection without a
/// byte of answer.
pub async fn answers_mpa(addr: SocketAddr) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const REQUEST: &[u8; 20] = b"MPA ID Req Frame\x00\x01\x00\x00";
    const REPLY_KEY: &[u8; 16] = b"MPA ID Rep Frame";
    let probe = async {
        let mut s = TcpStream::connect(addr).await.ok()?;
        s.write_all(REQUEST).await.ok()?;
        let mut key = [0u8; 16];
        s.read_exact(&mut key).await.ok()?;
        Some(&key == REPLY_KEY)
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(2), probe).await,
        Ok(Some(true))
    )
}

/// Makes TCP connections to one address, for [`Client::new`].
#[derive(Debug, Clone)]
pub struct TcpConnector {
    addr: SocketAddr,
    config: TcpConfig,
}

impl TcpConnector {
    /// Connects to `addr` with default settings.
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            config: TcpConfig::default(),
        }
    }

    /// Connects to `addr` with `config`.
    pub fn with_config(addr: SocketAddr, config: TcpConfig) -> Self {
        Self { addr, config }
    }
}

impl Connector for TcpConnector {
    type Transport = TcpTransport;

    async fn connect(&self) -> Result<TcpTransport, TransportError> {
        TcpTransport::connect(self.addr, &self.config).await
    }
}

/// Connects a client to an RPC server over TCP now.
///
/// ```no_run
/// # async fn f() -> Result<(), rpcrdma_oncrpc::RpcError> {
/// let client = rpcrdma_oncrpc::tcp::connect("127.0.0.1:111".parse().unwrap(),
///     Default::default()).await?;
/// client.null(100000, 2).await?;
/// # Ok(()) }
/// ```
pub async fn connect(addr: SocketAddr, config: ClientConfig) -> Result<Client, RpcError> {
    Client::connect(TcpConnector::new(addr), config).await
}
