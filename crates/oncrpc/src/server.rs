//! The RPC server: programs, limits, listeners and graceful shutdown.

use parking_lot::Mutex;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::sync::{watch, Semaphore};

use crate::limit::Limit;
use tracing::Instrument;

use crate::backchannel::{Backchannels, DEFAULT_CALLBACK_WAIT};
use crate::budget::{ConnMemory, ReserveFn, DEFAULT_MAX_CONNECTION_MEMORY, DEFAULT_MAX_MEMORY};
use crate::conn::{Connection, OpenAs, ServeLimits, Side};
use crate::service::Services;
use crate::tcp::{TcpConfig, TcpTransport};
use crate::transport::Transport;
use crate::util::lock;
use rpcrdma_sync::{Budget, MemoryAccount};

/// Default of [`ServerConfig::stall_timeout`]: 10 s, as the RPC-over-RDMA
/// engine's.
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Server limits. Defaults are documented on each field.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Calls running at once on one connection (default 64). When
    /// reached, the connection is not read until one finishes.
    pub max_in_flight_per_connection: usize,
    /// Calls running at once on the whole server (default 1024).
    pub max_in_flight: usize,
    /// Connections accepted at once by a TCP listener (default 1024);
    /// further connections wait in the kernel's backlog.
    pub max_connections: usize,
    /// TCP record and fragment settings (maximum record size: 32 MiB).
    pub tcp: TcpConfig,
    /// How long a reverse-direction call from [`Backchannels::client`]
    /// waits for its client to reconnect and declare readiness again
    /// after its connection is lost, or to declare it at all (RFC 8167
    /// §5.4; default [`DEFAULT_CALLBACK_WAIT`], 30 s). The call's own
    /// timeout also applies.
    pub callback_reconnect_wait: Duration,
    /// The first reverse-direction XID (default: a random value). All
    /// reverse-direction calls of the server share one XID space.
    pub first_callback_xid: Option<u32>,
    /// The memory budget the server's TCP connections charge
    /// ([`crate::budget`]): give the one its RPC-over-RDMA listener draws
    /// from (`rpcrdma_engine::MemoryBudget` implements
    /// [`MemoryAccount`]) for one limit over every transport. Default
    /// `None`: a budget of its own of
    /// [`crate::budget::DEFAULT_MAX_MEMORY`] (512 MiB).
    pub memory: Option<Arc<dyn MemoryAccount>>,
    /// Most a TCP connection may hold for its client before no more of
    /// its calls are read (default
    /// [`crate::budget::DEFAULT_MAX_CONNECTION_MEMORY`], 64 MiB).
    pub max_connection_memory: u64,
    /// A TCP connection whose queued replies make no progress (the client
    /// reads none) for this long is dropped with a warning (default
    /// [`DEFAULT_STALL_TIMEOUT`], 10 s).
    pub stall_timeout: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            max_in_flight_per_connection: 64,
            max_in_flight: 1024,
            max_connections: 1024,
            tcp: TcpConfig::default(),
            callback_reconnect_wait: DEFAULT_CALLBACK_WAIT,
            first_callback_xid: None,
            memory: None,
            max_connection_memory: DEFAULT_MAX_CONNECTION_MEMORY,
            stall_timeout: DEFAULT_STALL_TIMEOUT,
        }
    }
}

struct Inner {
    services: Arc<Services>,
    config: ServerConfig,
    global: Arc<Limit>,
    memory: Arc<dyn MemoryAccount>,
    /// A call's reservation for its reply, from the programs' bounds.
    reserve: Arc<ReserveFn>,
    connections: Mutex<Vec<Connection>>,
    stop: watch::Sender<bool>,
    listeners: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    backchannels: Backchannels,
}

/// Serves [`Services`] on any number of connections and listeners.
///
/// ```no_run
/// # async fn f() -> std::io::Result<()> {
/// use rpcrdma_oncrpc::{Server, ServerConfig, Services};
/// let mut services = Services::new();
/// services.program(0x2000_0001, 1).null();
/// let server = Server::new(services, ServerConfig::default());
/// let addr = server.serve_tcp("127.0.0.1:0").await?;
/// println!("listening on {addr}");
/// // ...
/// server.shutdown().await; // finishes calls in progress
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("services", &self.inner.services)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server for `services`.
    pub fn new(services: Services, config: ServerConfig) -> Self {
        let (stop, _) = watch::channel(false);
        let backchannels =
            Backchannels::new(config.callback_reconnect_wait, config.first_callback_xid);
        let services = Arc::new(services);
        let memory = config
            .memory
            .clone()
            .unwrap_or_else(|| Arc::new(Budget::new(DEFAULT_MAX_MEMORY)));
        let bounds = services.clone();
        let reserve: Arc<ReserveFn> = Arc::new(move |prog, vers, proc_, args: &[u8]| {
            bounds.reply_reserve(prog, vers, proc_, args)
        });
        Self {
            inner: Arc::new(Inner {
                services,
                global: Arc::new(Limit::new(config.max_in_flight)),
                memory,
                reserve,
                backchannels,
                config,
                connections: Mutex::new(Vec::new()),
                stop,
                listeners: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The programs served.
    pub fn services(&self) -> &Arc<Services> {
        &self.inner.services
    }

    /// The memory budget the server's TCP connections charge
    /// ([`ServerConfig::memory`]).
    pub fn memory(&self) -> &Arc<dyn MemoryAccount> {
        &self.inner.memory
    }

    /// How many connections the server serves now, over every transport
    /// (those of [`Server::serve_tcp`] and those handed to
    /// [`Server::serve`]).
    pub fn connection_count(&self) -> usize {
        lock(&self.inner.connections)
            .iter()
            .filter(|c| c.is_alive())
            .count()
    }

    /// The server's registry of clients ready for reverse-direction calls
    /// ([`Connection::peer_ready_for_callbacks`] binds a connection in
    /// it); [`Backchannels::client`] makes calls that survive the loss of
    /// a client's connection (RFC 8167 §5.4).
    pub fn backchannels(&self) -> &Backchannels {
        &self.inner.backchannels
    }

    /// Serves one connection (any transport) that we accepted. The
    /// returned handle can make calls back to the peer
    /// ([`Connection::client`]) once the Upper Layer declared the peer
    /// ready ([`Connection::peer_ready_for_callbacks`], RFC 8167 §6).
    pub fn serve<T: Transport>(&self, transport: T) -> Connection {
        let backchannels = &self.inner.backchannels;
        let conn = Connection::open_with(
            transport,
            self.inner.services.clone(),
            ServeLimits {
                per_connection: self.inner.config.max_in_flight_per_connection,
                global: Some(self.inner.global.clone()),
            },
            OpenAs {
                side: Side::Server,
                ready: false,
                xids: backchannels.xids().clone(),
                registry: Some(backchannels.clone()),
            },
        );
        let mut conns = lock(&self.inner.connections);
        conns.retain(Connection::is_alive);
        conns.push(conn.clone());
        drop(conns);
        if *self.inner.stop.borrow() {
            conn.ops.shutdown();
        }
        // A connection that ends leaves the list at once (with its
        // transport and buffers), not at the next accept.
        let inner = Arc::downgrade(&self.inner);
        let watch = conn.clone();
        tokio::spawn(async move {
            watch.closed().await;
            let id = watch.id();
            drop(watch);
            if let Some(inner) = inner.upgrade() {
                lock(&inner.connections).retain(|c| c.id() != id);
            }
        });
        conn
    }

    /// Listens for TCP connections on `addr` and serves each; returns the
    /// bound address (useful with port 0).
    pub async fn serve_tcp(&self, addr: impl ToSocketAddrs) -> std::io::Result<SocketAddr> {
        let listener = TcpListener::bind(addr).await?;
        self.serve_tcp_listener(listener)
    }

    /// Serves connections accepted from an already bound listener.
    pub fn serve_tcp_listener(&self, listener: TcpListener) -> std::io::Result<SocketAddr> {
        let local = listener.local_addr()?;
        let server = self.clone();
        let mut stop = self.inner.stop.subscribe();
        let slots = Arc::new(Semaphore::new(self.inner.config.max_connections.max(1)));
        let span = tracing::info_span!("rpc_listen", addr = %local);
        let task = tokio::spawn(
            async move {
                loop {
                    let slot = tokio::select! {
                        _ = stop.wait_for(|s| *s) => break,
                        s = slots.clone().acquire_owned() => s,
                    };
                    let Ok(slot) = slot else { break };
                    let accepted = tokio::select! {
                        _ = stop.wait_for(|s| *s) => break,
                        a = listener.accept() => a,
                    };
                    let (stream, peer) = match accepted {
                        Ok(a) => a,
                        Err(e) => {
                            tracing::warn!(error = %e, "accept failed");
                            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let inner = &server.inner;
                    let Some(memory) = ConnMemory::admit(
                        inner.memory.clone(),
                        inner.config.max_connection_memory,
                        inner.reserve.clone(),
                    ) else {
                        tracing::warn!(
                            %peer,
                            in_use = inner.memory.in_use(),
                            limit = inner.memory.limit(),
                            "refusing a connection: the server's memory budget is full (--max-memory)"
                        );
                        continue;
                    };
                    let transport = match TcpTransport::serving(
                        stream,
                        &inner.config.tcp,
                        memory,
                        inner.config.stall_timeout,
                    ) {
                        Ok(t) => t,
                        Err(e) => {
                            tracing::warn!(%peer, error = %e, "cannot set up connection");
                            continue;
                        }
                    };
                    let conn = server.serve(transport);
                    tokio::spawn(async move {
                        conn.closed().await;
                        drop(slot);
                    });
                }
                tracing::debug!("listener stopped");
            }
            .instrument(span),
        );
        lock(&self.inner.listeners).push(task);
        Ok(local)
    }

    /// Runs a listener's accept loop (`accept_loop`, which hands each
    /// connection it accepts to [`Server::serve`]) on a task the server
    /// owns, as [`Server::serve_tcp`] does for TCP: it runs until
    /// [`Server::shutdown`], which drops the loop (closing its listening
    /// socket) and waits for it before closing the connections; or until
    /// the loop returns by itself. Nothing the caller keeps or drops ends
    /// it. A loop handed to a server already shut down is dropped at once.
    /// `rpcrdma_transport::serve_rdma` runs its RPC-over-RDMA listener
    /// this way.
    pub fn spawn_listener<F>(&self, accept_loop: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let mut stop = self.inner.stop.subscribe();
        let task = tokio::spawn(async move {
            tokio::select! {
                _ = stop.wait_for(|s| *s) => {}
                () = accept_loop => {}
            }
        });
        let mut listeners = lock(&self.inner.listeners);
        listeners.retain(|l| !l.is_finished());
        listeners.push(task);
    }

    /// Graceful shutdown: stops accepting connections, stops reading new
    /// calls, lets every call in progress send its reply, then closes all
    /// connections. Returns when done. Reverse-direction calls waiting for
    /// a client to reconnect fail with [`crate::RpcError::Shutdown`].
    pub async fn shutdown(&self) {
        self.inner.stop.send_replace(true);
        self.inner.backchannels.shut();
        let listeners: Vec<_> = std::mem::take(&mut *lock(&self.inner.listeners));
        for l in listeners {
            let _ = l.await;
        }
        let conns: Vec<_> = std::mem::take(&mut *lock(&self.inner.connections));
        for c in &conns {
            c.ops.shutdown();
        }
        for c in conns {
            c.closed().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem;
    use crate::transport::Transport;

    /// A connection that ends leaves the server's list at once, with its
    /// transport, not when the next one is accepted.
    #[tokio::test]
    async fn an_ended_connection_leaves_the_list() {
        let server = Server::new(Services::new(), ServerConfig::default());
        let (client_end, server_end) = mem::pair(mem::MemConfig::default());
        let conn = server.serve(server_end);
        assert_eq!(lock(&server.inner.connections).len(), 1);
        client_end.close().await;
        conn.closed().await;
        let gone = tokio::time::timeout(std::time::Duration::from_secs(60), async {
            while !lock(&server.inner.connections).is_empty() {
                tokio::task::yield_now().await;
            }
        })
        .await;
        assert!(gone.is_ok(), "the closed connection stayed in the list");
        server.shutdown().await;
    }
}
