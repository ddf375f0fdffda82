//! Shared harness of the transport's integration tests: the software iWARP
//! provider behind a wrapper that counts memory regions, a `serve_rdma`
//! server running the demo program, a recording/fault-injecting relay in
//! front of it, and a connector that keeps every connection it opens.
#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use rpcrdma_engine::{EngineConfig, Stats, VersionPolicy};
use rpcrdma_oncrpc::{
    Client, ClientConfig, Connector, Server, ServerConfig, Services, TransportError,
};
use rpcrdma_softiwarp::{Cq, Mr, Options, Pd, Qp, Request, SoftIwarp, SoftListener};
use rpcrdma_testkit::mpa::{fpdu_spans, fpdu_ulpdu, DdpSegment, StartFrame};
use rpcrdma_testkit::relay::{Direction, Recorded, Relay};
use rpcrdma_transport::{serve_rdma, ListenConfig, RdmaConnector, RdmaService, RdmaTransport};
use rpcrdma_verbs::{
    ConnectError, ConnectRequest, Device, Listener, QpCaps, QpParams, ResourceError,
};
use rpcrdma_wire::VersionRange;

/// Generous bound for anything that should happen "soon": it only fails a
/// broken run, it never decides a passing one.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// The software iWARP device, keeping a handle on every protection domain
/// it allocates so a test can count the memory regions still registered
/// in all of them (the provider's own view: what a leak would leave).
#[derive(Clone, Default)]
pub struct CountingDevice {
    inner: SoftIwarp,
    pds: Arc<Mutex<Vec<Pd>>>,
    no_remote_invalidation: bool,
}

impl CountingDevice {
    pub fn new() -> Self {
        Self::default()
    }

    /// A device that says its regions cannot be invalidated remotely (as
    /// the rdma-core provider does).
    pub fn without_remote_invalidation() -> Self {
        CountingDevice {
            no_remote_invalidation: true,
            ..Self::default()
        }
    }

    /// Regions registered in every protection domain of this device.
    pub fn live_regions(&self) -> usize {
        self.pds.lock().unwrap().iter().map(Pd::regions).sum()
    }

    /// Regions per protection domain, in allocation order (one per
    /// connection: the connector and the listener allocate one each).
    pub fn regions_per_pd(&self) -> Vec<usize> {
        self.pds.lock().unwrap().iter().map(Pd::regions).collect()
    }
}

impl Device for CountingDevice {
    type Pd = Pd;
    type Mr = Mr;
    type Cq = Cq;
    type Qp = Qp;
    type Listener = CountingListener;
    type Request = CountingRequest;
    type Options = Options;

    fn remote_invalidation(&self) -> bool {
        !self.no_remote_invalidation
    }

    fn alloc_pd(&self) -> Result<Pd, ResourceError> {
        let pd = self.inner.alloc_pd()?;
        self.pds.lock().unwrap().push(pd.clone());
        Ok(pd)
    }

    fn create_cq(&self, capacity: usize) -> Result<Cq, ResourceError> {
        self.inner.create_cq(capacity)
    }

    async fn listen(
        &self,
        addr: SocketAddr,
        options: Options,
    ) -> std::io::Result<CountingListener> {
        self.inner.listen(addr, options).await.map(CountingListener)
    }

    async fn connect(
        &self,
        addr: SocketAddr,
        params: QpParams<'_, Self>,
        private_data: Bytes,
    ) -> Result<(Qp, Bytes), ConnectError> {
        self.inner
            .connect(addr, convert(params), private_data)
            .await
    }
}

fn convert(p: QpParams<'_, CountingDevice>) -> QpParams<'_, SoftIwarp> {
    QpParams {
        pd: p.pd,
        send_cq: p.send_cq,
        recv_cq: p.recv_cq,
        caps: p.caps,
        options: p.options,
    }
}

pub struct CountingListener(SoftListener);

impl Listener for CountingListener {
    type Device = CountingDevice;

    async fn accept(&self) -> Result<CountingRequest, ConnectError> {
        self.0.accept().await.map(CountingRequest)
    }

    fn local_addr(&self) -> SocketAddr {
        self.0.local_addr()
    }
}

pub struct CountingRequest(Request);

impl ConnectRequest for CountingRequest {
    type Device = CountingDevice;

    fn private_data(&self) -> &Bytes {
        self.0.private_data()
    }

    fn ird_ord(&self) -> Option<(u16, u16)> {
        self.0.ird_ord()
    }

    fn peer_addr(&self) -> SocketAddr {
        self.0.peer_addr()
    }

    async fn accept(
        self,
        params: QpParams<'_, CountingDevice>,
        private_data: Bytes,
    ) -> Result<Qp, ConnectError> {
        self.0.accept(convert(params), private_data).await
    }

    async fn reject(self, private_data: Bytes) -> Result<(), ConnectError> {
        self.0.reject(private_data).await
    }
}

/// Transports opened by a [`Recording`] connector, in order.
pub type Opened = Arc<Mutex<Vec<RdmaTransport<CountingDevice>>>>;

/// A connector that keeps every connection it opens.
pub struct Recording {
    inner: RdmaConnector<CountingDevice>,
    opened: Opened,
}

impl Connector for Recording {
    type Transport = RdmaTransport<CountingDevice>;

    async fn connect(&self) -> Result<RdmaTransport<CountingDevice>, TransportError> {
        let t = self.inner.connect().await?;
        self.opened.lock().unwrap().push(t.clone());
        Ok(t)
    }
}

/// Queue sizes fitting the default credits.
pub fn caps() -> QpCaps {
    QpCaps {
        send_depth: 512,
        recv_depth: 144,
        ..QpCaps::default()
    }
}

/// A client engine configuration speaking `version` (1 or 2).
pub fn client_config(version: u32) -> EngineConfig {
    let mut c = EngineConfig::client();
    match version {
        1 => {
            c.client_version = VersionPolicy::V1;
            c.versions = VersionRange::V1_ONLY;
        }
        _ => {
            c.client_version = VersionPolicy::V2;
            c.versions = VersionRange::V2_ONLY;
        }
    }
    c
}

/// A demo-program server over software iWARP with a relay in front.
pub struct Harness {
    pub server_dev: CountingDevice,
    pub client_dev: CountingDevice,
    pub server: Server,
    pub svc: RdmaService<CountingDevice>,
    pub relay: Relay,
}

impl Harness {
    /// Starts the server (accepting Versions One and Two) and the relay.
    pub async fn start() -> Self {
        let server_dev = CountingDevice::new();
        let mut services = Services::new();
        rpcrdma_demoprog::serve_demo(&mut services);
        let server = Server::new(services, ServerConfig::default());
        let listen = ListenConfig {
            engine: EngineConfig::server(),
            options: Options::default(),
            caps: caps(),
            max_connections: rpcrdma_transport::DEFAULT_MAX_CONNECTIONS,
            budget: None,
        };
        let svc = serve_rdma(
            &server,
            server_dev.clone(),
            "127.0.0.1:0".parse().unwrap(),
            listen,
        )
        .await
        .expect("listen");
        let relay = Relay::start(svc.local_addr()).expect("relay");
        Self {
            server_dev,
            client_dev: CountingDevice::new(),
            server,
            svc,
            relay,
        }
    }

    /// A client through the relay (connects lazily, on its first call),
    /// and the list of connections it opens.
    pub fn client(&self, engine: EngineConfig, config: ClientConfig) -> (Client, Opened) {
        let opened: Opened = Arc::default();
        let connector = Recording {
            inner: RdmaConnector::new(self.client_dev.clone(), self.relay.local_addr(), engine)
                .caps(caps()),
            opened: opened.clone(),
        };
        (Client::new(connector, config), opened)
    }

    /// The server's transport whose peer is `addr` (the relay's upstream
    /// side of one connection), once the listener has registered it.
    pub async fn server_transport(&self, addr: SocketAddr) -> RdmaTransport<CountingDevice> {
        let mut found = None;
        eventually(
            &format!("the server to list its connection from {addr}"),
            || {
                found = self
                    .svc
                    .connections()
                    .into_iter()
                    .find(|t| t.peer_addr() == addr);
                found.is_some()
            },
        )
        .await;
        found.expect("found")
    }

    /// Waits until both ends have closed every relayed connection (the
    /// relay's waits block a thread, so this polls instead).
    pub async fn relayed_closed(&self, what: &str) {
        eventually(&format!("{what}: every relayed connection closed"), || {
            self.relay.connections().iter().all(|c| c.finished)
        })
        .await;
    }

    /// Waits until no memory region is registered on either side.
    pub async fn no_live_regions(&self, what: &str) {
        eventually(
            &format!(
                "{what}: every memory region deregistered (client PDs {:?}, server PDs {:?})",
                self.client_dev.regions_per_pd(),
                self.server_dev.regions_per_pd()
            ),
            || self.client_dev.live_regions() == 0 && self.server_dev.live_regions() == 0,
        )
        .await;
    }
}

/// Client settings for the fault tests: quick reconnects, bounded waits.
pub fn client_settings() -> ClientConfig {
    let mut c = ClientConfig::default();
    c.timeout = PATIENCE;
    c.reconnect_delay = Duration::from_millis(2);
    c.max_retransmits = 2;
    c
}

/// Polls `cond` until it holds; panics naming `what` after [`PATIENCE`].
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !cond() {
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out after {PATIENCE:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Runs `fut` with a bound; panics naming `what` if it does not finish.
pub async fn bounded<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(PATIENCE * 2, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what} did not finish within {:?}", PATIENCE * 2),
    }
}

/// Sum of the replies a client engine received, in every form.
pub fn replies(s: &Stats) -> u64 {
    s.replies_short + s.replies_chunked + s.replies_long
}

/// One RDMA Send found in a recorded stream.
#[derive(Debug, Clone)]
pub struct SendMsg {
    /// Whether it was a Send with Invalidate.
    pub invalidate: bool,
    /// The message (RPC-over-RDMA header and payload).
    pub bytes: Vec<u8>,
}

impl SendMsg {
    /// The 32-bit big-endian word `i` of the message.
    pub fn word(&self, i: usize) -> Option<u32> {
        let b = self.bytes.get(i * 4..i * 4 + 4)?;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// The complete RDMA Sends (reassembled by message offset) in one
/// direction of a recorded MPA connection, skipping the MPA Request or
/// Reply at its start. A stream cut short yields the Sends completed
/// before the cut.
pub fn sends(stream: &[u8]) -> Vec<SendMsg> {
    let Some((_, start)) = StartFrame::parse(stream) else {
        return Vec::new();
    };
    let body = &stream[start..];
    let (spans, _) = fpdu_spans(body);
    let mut out = Vec::new();
    let mut partial: Vec<u8> = Vec::new();
    for span in spans {
        let Some(seg) = fpdu_ulpdu(&body[span]).and_then(DdpSegment::parse) else {
            break;
        };
        if seg.tagged || !(3..=6).contains(&seg.opcode) || seg.qn != 0 {
            continue;
        }
        if seg.mo as usize != partial.len() {
            partial.clear();
            continue;
        }
        partial.extend_from_slice(&seg.payload);
        if seg.last {
            out.push(SendMsg {
                invalidate: seg.opcode == 4 || seg.opcode == 6,
                bytes: std::mem::take(&mut partial),
            });
        }
    }
    out
}

/// XIDs of the RPC-over-RDMA calls (RDMA_MSG / RDMA_NOMSG of any version)
/// a client sent on one recorded connection.
pub fn call_xids(rec: &Recorded) -> Vec<u32> {
    sends(&rec.stream(Direction::ToServer))
        .iter()
        .filter(|m| matches!(m.word(3), Some(0 | 1)))
        .filter_map(|m| m.word(0))
        .collect()
}
