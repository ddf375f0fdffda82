//! The server side: accepting RPC-over-RDMA connections and serving each
//! with an ONC RPC [`Server`].

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rpcrdma_engine::{Charge, Engine, EngineConfig, MemoryBudget, Stats};
use rpcrdma_oncrpc::Server;
use rpcrdma_sync::lock;
use rpcrdma_verbs::{ConnectRequest, Device, Listener, QpCaps, QpParams, QueuePair};
use tokio::sync::watch;

use crate::error::{Chain, RdmaError};
use crate::transport::RdmaTransport;

/// Default [`ListenConfig::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// How to accept connections.
#[derive(Debug, Clone)]
pub struct ListenConfig<O> {
    /// The engine configuration (role server).
    pub engine: EngineConfig,
    /// Provider options for the listener.
    pub options: O,
    /// Queue pair sizes.
    pub caps: QpCaps,
    /// Most connections open at once; further requests are rejected
    /// (default [`DEFAULT_MAX_CONNECTIONS`]). Each also needs its fixed
    /// cost to fit the shared memory budget
    /// ([`EngineConfig::connection_cost`]).
    pub max_connections: usize,
    /// The memory budget every connection draws from; `None` (the
    /// default): a budget of its own of
    /// [`EngineConfig::max_shared_memory`] octets. Give the one the
    /// server's other listeners charge (it implements
    /// [`rpcrdma_sync::MemoryAccount`]: hand a clone to
    /// `rpcrdma_oncrpc::ServerConfig::memory`) to put every transport
    /// under one limit.
    pub budget: Option<MemoryBudget>,
}

impl<O: Default> Default for ListenConfig<O> {
    fn default() -> Self {
        Self {
            engine: EngineConfig::server(),
            options: O::default(),
            caps: QpCaps::default(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            budget: None,
        }
    }
}

/// A running RPC-over-RDMA listener: a handle to look at it and to stop
/// it.
///
/// The listener belongs to its [`Server`], as a TCP listener of
/// [`Server::serve_tcp`] does: it runs until [`Server::shutdown`] (or
/// [`RdmaService::stop`]), whether this handle is kept or dropped.
pub struct RdmaService<D: Device> {
    local: SocketAddr,
    budget: MemoryBudget,
    stop: watch::Sender<bool>,
    /// Closed when the accept loop has ended (its sender dropped).
    done: watch::Receiver<()>,
    connections: Arc<Mutex<Accepted<D>>>,
}

/// The connections a listener accepted: the open ones, and what the closed
/// ones did.
struct Accepted<D: Device> {
    open: Vec<RdmaTransport<D>>,
    /// The counters of the connections that closed, added up.
    closed: Stats,
    /// Connections accepted in all.
    count: u64,
}

impl<D: Device> Accepted<D> {
    /// Forgets the closed connections, keeping their counters.
    fn prune(&mut self) {
        let closed = &mut self.closed;
        self.open.retain(|t| {
            let open = t.is_open();
            if !open {
                *closed += t.stats();
            }
            open
        });
    }
}

/// What a listener's connections did ([`RdmaService::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListenerStats {
    /// Connections accepted since the listener started.
    pub accepted: u64,
    /// Of them, open now.
    pub open: usize,
    /// Credits the open connections grant their peers now.
    pub credits_granted: u64,
    /// The engines' counters added up over every connection accepted
    /// (those of a closed connection as they were when it closed).
    pub engine: Stats,
}

impl<D: Device> RdmaService<D> {
    /// The address listened on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The memory budget every connection of this listener draws from
    /// (its limit is [`EngineConfig::max_shared_memory`]).
    pub fn memory_budget(&self) -> &MemoryBudget {
        &self.budget
    }

    /// The connections accepted so far: the open ones, and those that
    /// closed since the last connection was accepted (a closed one leaves
    /// the list when the next is accepted or [`RdmaService::stats`] runs),
    /// so a connection's counters can still be read just after it ends.
    pub fn connections(&self) -> Vec<RdmaTransport<D>> {
        lock(&self.connections).open.clone()
    }

    /// What the connections did, over every connection accepted: their
    /// engines' counters added up (octets inline and by RDMA Read and
    /// Write, calls and replies by form, errors), how many are open and
    /// the credits they grant now (metrics).
    pub fn stats(&self) -> ListenerStats {
        let (open, mut engine, accepted) = {
            let mut c = lock(&self.connections);
            c.prune();
            (c.open.clone(), c.closed, c.count)
        };
        let mut credits_granted = 0;
        for t in &open {
            engine += t.stats();
            credits_granted += u64::from(t.info().credits_we_grant);
        }
        ListenerStats {
            accepted,
            open: open.len(),
            credits_granted,
            engine,
        }
    }

    /// Stops accepting and returns when the listening socket is closed
    /// (open connections stay until [`Server::shutdown`] closes them).
    /// [`Server::shutdown`] stops the listener too.
    pub async fn stop(&self) {
        self.stop.send_replace(true);
        let mut done = self.done.clone();
        // Ends with an error when the loop is gone, which is what we wait for.
        while done.changed().await.is_ok() {}
    }
}

/// Listens on `addr` with `device` and serves every accepted connection
/// with `server`, until [`Server::shutdown`] or [`RdmaService::stop`]
/// (dropping the returned handle does not stop it: the listener belongs
/// to `server`, as those of [`Server::serve_tcp`] do). Each connection's
/// RFC 8797 private data is parsed and
/// answered with ours. All connections draw from one memory budget of
/// [`EngineConfig::max_shared_memory`] octets, each at most
/// [`EngineConfig::max_memory`] for its peer's calls (spec note E21).
///
/// Each connection's fixed cost ([`EngineConfig::connection_cost`]: its
/// receive buffers, one inline reply per credit, its queue pair) is
/// charged to that budget when it is accepted, and given back when it
/// ends; a connection request whose fixed cost does not fit (leaving
/// [`MemoryBudget::connection_reserve`] free for calls), or beyond
/// [`ListenConfig::max_connections`]
/// open connections, is rejected (the connection manager's reject: an MPA
/// Reply with the reject flag on software iWARP) with a warning naming
/// the limit (`--max-memory`, `--max-connections`).
pub async fn serve_rdma<D: Device + Clone>(
    server: &Server,
    device: D,
    addr: SocketAddr,
    config: ListenConfig<D::Options>,
) -> Result<RdmaService<D>, RdmaError> {
    config.engine.validate()?;
    let listener = device
        .listen(addr, config.options.clone())
        .await
        .map_err(|source| RdmaError::Listen { addr, source })?;
    let local = listener.local_addr();
    let budget = config
        .budget
        .clone()
        .unwrap_or_else(|| MemoryBudget::new(config.engine.max_shared_memory));
    let shared = budget.clone();
    let cost = config.engine.connection_cost(config.caps);
    let (stop, mut stop_rx) = watch::channel(false);
    let (done_tx, done) = watch::channel(());
    let connections = Arc::new(Mutex::new(Accepted {
        open: Vec::new(),
        closed: Stats::default(),
        count: 0,
    }));
    let conns = connections.clone();
    let owner = server;
    let server = server.clone();
    let span = tracing::info_span!("rdma_listen", addr = %local);
    let accept_loop = tracing::Instrument::instrument(
        async move {
            // Dropped with the loop, which tells `RdmaService::stop`.
            let _done = done_tx;
            // `Ok` once `RdmaService::stop` was called; a handle dropped
            // without it (`Err`) leaves the listener running.
            let stopped = async move {
                if stop_rx.wait_for(|s| *s).await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            tokio::pin!(stopped);
            loop {
                let req = tokio::select! {
                    () = &mut stopped => break,
                    r = listener.accept() => r,
                };
                let req = match req {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::warn!(error = %Chain(&e), "connection request failed");
                        continue;
                    }
                };
                let Some(charge) = admit(&req, &config, &shared, &conns, cost) else {
                    let peer = req.peer_addr();
                    if let Err(e) = req.reject(Bytes::new()).await {
                        tracing::debug!(%peer, error = %Chain(&e), "rejecting a connection request");
                    }
                    continue;
                };
                match accept_one(&device, req, &config, &shared, charge).await {
                    Ok(t) => {
                        server.serve(t.clone());
                        let mut c = lock(&conns);
                        c.prune();
                        c.open.push(t);
                        c.count += 1;
                    }
                    Err(e) => tracing::warn!(error = %Chain(&e), "accept failed"),
                }
            }
            tracing::debug!("listener stopped");
        },
        span,
    );
    owner.spawn_listener(accept_loop);
    Ok(RdmaService {
        local,
        budget,
        stop,
        done,
        connections,
    })
}

/// Whether a connection request may be accepted: fewer than
/// `max_connections` are open and its fixed cost `cost` fits the budget
/// (the charge, held by its engine from then on). Otherwise a warning
/// says which limit refused it.
fn admit<D: Device>(
    req: &D::Request,
    config: &ListenConfig<D::Options>,
    budget: &MemoryBudget,
    conns: &Mutex<Accepted<D>>,
    cost: u64,
) -> Option<Charge> {
    let peer = req.peer_addr();
    let open = {
        let mut c = lock(conns);
        c.prune();
        c.open.len()
    };
    if open >= config.max_connections {
        tracing::warn!(
            %peer,
            open,
            "connection refused: {open} connections are open, the most --max-connections ({}) allows",
            config.max_connections
        );
        return None;
    }
    let charge = budget.try_charge(cost);
    if charge.is_none() {
        let mib = |v: u64| v as f64 / f64::from(1u32 << 20);
        tracing::warn!(
            %peer,
            open,
            "connection refused: its fixed cost ({:.2} MiB: receive buffers, inline replies, queue pair) does not fit the memory budget (--max-memory {:.1} MiB, {:.1} MiB in use by {open} connections and their calls, a sixteenth kept for calls); raise --max-memory or retry when connections close",
            mib(cost),
            mib(budget.limit()),
            mib(budget.in_use())
        );
    }
    charge
}

async fn accept_one<D: Device>(
    device: &D,
    req: D::Request,
    config: &ListenConfig<D::Options>,
    budget: &MemoryBudget,
    charge: Charge,
) -> Result<RdmaTransport<D>, RdmaError> {
    let peer = req.peer_addr();
    let peer_private = req.private_data().clone();
    // R = 1 only where the device's regions can be invalidated remotely.
    let mut engine_config = config.engine.clone();
    engine_config.remote_invalidate &= device.remote_invalidation();
    let pd = device.alloc_pd()?;
    let cq = device.create_cq((config.caps.send_depth + config.caps.recv_depth) as usize + 16)?;
    let ours = Bytes::copy_from_slice(&engine_config.private_data().to_bytes());
    let params = QpParams::new(&pd, &cq, config.options.clone()).with_caps(config.caps);
    let qp = req
        .accept(params, ours)
        .await
        .map_err(|source| RdmaError::Connect { addr: peer, source })?;
    let mut engine = Engine::with_budget(
        engine_config,
        pd,
        qp.caps(),
        Some(&peer_private),
        budget.clone(),
    )?;
    // Its fixed cost stays charged until the connection ends.
    engine.hold_charge(charge);
    tracing::debug!(%peer, "RPC-over-RDMA connection accepted");
    Ok(RdmaTransport::new(engine, qp, cq, peer, peer_private))
}
