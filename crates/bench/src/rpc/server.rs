//! The bench server: the demo program over RPC-over-RDMA and over ONC
//! RPC/TCP, the bench's own program beside it, and the raw TCP endpoints
//! (`raw.rs`) every RPC bench measures against, on a thread of its own.

use std::net::{IpAddr, SocketAddr};
use std::sync::mpsc as std_mpsc;
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use bytes::Bytes;
use rpcrdma_demoprog::{serve_demo, WriteArgs, WriteRes};
use rpcrdma_oncrpc::{Server, ServerConfig, Services};
use rpcrdma_transport::{serve_rdma, ListenConfig};
use rpcrdma_verbs::Device;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use super::settings::RdmaSettings;
use crate::aligned::PageAligned;
use crate::raw;
use crate::threads::Spawn;

/// The bench server's own program (a number from ONC RPC's transient
/// range, RFC 5531 section 8.3): its procedure [`BARE_WRITE`] takes the
/// demo WRITE's arguments (the data as a Read chunk over RPC-over-RDMA)
/// and answers the demo WRITE's results without the checksum (`crc32c`
/// 0), so the WRITE measures can be repeated without the demo procedure's
/// own work.
pub const BARE_PROG: u32 = 0x4052_4257;
/// [`BARE_PROG`]'s WRITE without a checksum.
pub const BARE_WRITE: u32 = 1;
/// [`BARE_PROG`]'s ECHO: opaque data of any size up to [`MAX_ECHO`],
/// inline, answered with the same data (the demo ECHO takes at most 1 KiB;
/// `rpcrdma bench --small` echoes 4 KiB).
pub const BARE_ECHO: u32 = 2;

/// Largest ECHO of [`BARE_PROG`] (`--small-echo-size`).
pub const MAX_ECHO: usize = 64 * 1024;

/// The bench's ECHO argument and result: variable-length opaque data,
/// inline (not DDP-eligible), at most [`MAX_ECHO`] octets.
#[derive(Debug, Clone)]
pub struct Opaque(pub Bytes);

impl rpcrdma_oncrpc::Marshal for Opaque {
    fn marshal(&self, enc: &mut rpcrdma_xdr::Encoder<'_>) {
        enc.put_opaque(&self.0);
    }
}

impl rpcrdma_oncrpc::Unmarshal for Opaque {
    fn unmarshal(dec: &mut rpcrdma_xdr::Decoder<'_>) -> Result<Self, rpcrdma_xdr::XdrError> {
        dec.get_opaque_bytes(MAX_ECHO as u32).map(Opaque)
    }
}

/// Where the server thread's endpoints listen.
#[derive(Debug, Clone, Copy)]
pub struct Addrs {
    /// RPC-over-RDMA (the demo program and [`BARE_PROG`]).
    pub rdma: SocketAddr,
    /// ONC RPC over TCP (the same programs).
    pub rpc_tcp: SocketAddr,
    /// Raw TCP: echoes 64-octet messages one by one (the ping-pong).
    pub echo: SocketAddr,
    /// Raw TCP: reads a stream (`raw::sink_into`) and answers one octet.
    pub sink: SocketAddr,
    /// Raw TCP: writes back whatever it reads, one write per read
    /// (`small`'s exchange kept many messages deep).
    pub batch_echo: SocketAddr,
}

/// The bench server ([`server`]) on a thread of its own, listening.
pub struct BenchServer {
    /// Where each of its endpoints listens.
    pub addrs: Addrs,
    thread: std::thread::JoinHandle<anyhow::Result<()>>,
    stop: oneshot::Sender<()>,
}

impl BenchServer {
    /// Starts [`server`] on a thread made by `spawn` and waits (30 s at
    /// most) until it listens; its error if it failed to.
    pub fn start<D: Device + Clone>(
        rdma: &RdmaSettings,
        listen_ip: IpAddr,
        dev: &D,
        options: &D::Options,
        spawn: Spawn,
    ) -> anyhow::Result<BenchServer> {
        let (atx, arx) = std_mpsc::channel();
        let (stop, stop_rx) = oneshot::channel();
        let thread = spawn(
            "bench-server",
            Box::pin(server(
                rdma.clone(),
                listen_ip,
                dev.clone(),
                options.clone(),
                atx,
                stop_rx,
            )),
        );
        let Ok(addrs) = arx.recv_timeout(Duration::from_secs(30)) else {
            return Err(match thread.join() {
                Ok(Err(e)) => e.context("the benchmark server did not start"),
                _ => anyhow!("the benchmark server did not start"),
            });
        };
        Ok(BenchServer {
            addrs,
            thread,
            stop,
        })
    }

    /// Stops the server and waits for its thread.
    pub fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}

/// The server thread: every endpoint the client measures against; sends
/// their addresses on `tx` once they listen, and runs until `stop`.
pub async fn server<D: Device + Clone>(
    rdma: RdmaSettings,
    listen_ip: IpAddr,
    dev: D,
    options: D::Options,
    tx: std_mpsc::Sender<Addrs>,
    stop: oneshot::Receiver<()>,
) -> anyhow::Result<()> {
    let mut services = Services::new();
    serve_demo(&mut services);
    services
        .program(BARE_PROG, 1)
        .null()
        .proc(BARE_WRITE, |_, a: WriteArgs| async move {
            Ok(WriteRes {
                count: u32::try_from(a.data.len()).unwrap_or(u32::MAX),
                crc32c: 0,
            })
        })
        .proc(BARE_ECHO, |_, a: Opaque| async move { Ok(a) });
    let server = Server::new(services, ServerConfig::default());
    let listen = ListenConfig {
        engine: rdma.server,
        options,
        caps: rdma.caps,
        max_connections: rpcrdma_transport::DEFAULT_MAX_CONNECTIONS,
        budget: None,
    };
    let svc = serve_rdma(&server, dev, SocketAddr::new(listen_ip, 0), listen).await?;
    let rpc_tcp = server.serve_tcp("127.0.0.1:0").await?;
    let echo = TcpListener::bind("127.0.0.1:0").await?;
    let sink = TcpListener::bind("127.0.0.1:0").await?;
    let batch_echo = TcpListener::bind("127.0.0.1:0").await?;
    tx.send(Addrs {
        rdma: svc.local_addr(),
        rpc_tcp,
        echo: echo.local_addr()?,
        sink: sink.local_addr()?,
        batch_echo: batch_echo.local_addr()?,
    })?;
    tokio::spawn(async move {
        while let Ok((s, _)) = batch_echo.accept().await {
            let _ = s.set_nodelay(true);
            tokio::spawn(raw::batch_echo(s));
        }
    });
    tokio::spawn(async move {
        while let Ok((s, _)) = echo.accept().await {
            let _ = s.set_nodelay(true);
            tokio::spawn(raw::echo(s));
        }
    });
    // The sink's buffers outlive a stream: the next one reads into memory
    // already mapped, as the RPC paths reuse their pooled sinks, rather
    // than faulting fresh pages in while it is timed.
    let kept: Arc<std::sync::Mutex<Vec<PageAligned>>> = Arc::default();
    tokio::spawn(async move {
        while let Ok((s, _)) = sink.accept().await {
            tokio::spawn(raw::sink(s, kept.clone()));
        }
    });
    let _ = stop.await;
    svc.stop().await;
    server.shutdown().await;
    Ok(())
}
