//! Reverse-direction calls through the ONC RPC API (RFC 8167): readiness
//! on both sides (§6), the server's registry of ready clients, and
//! retransmission after the client reconnects with its bounds (§5.4),
//! over the in-memory RDMA-like transport and TCP. The real RPC-over-RDMA
//! transport is exercised the same way in `crates/transport/tests/bidir.rs`.
//!
//! No test asserts on elapsed time; every outcome is a value.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rpcrdma_oncrpc::mem::{self, MemConfig, MemConnector, MemTransport};
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{
    BackchannelError, CallHints, CallInfo, Client, ClientConfig, ClientKey, Connector, ProcError,
    Received, RpcError, Server, ServerConfig, Services, Transport, TransportError,
};
use rpcrdma_xdr::Payload;
use tokio::sync::{watch, Notify};

const PROG: u32 = 0x2000_4440;
const READY: u32 = 1; // u64 key -> ()
const BACK: u32 = 2; // u32 -> u32: one reverse call without declaring
const CBPROG: u32 = 0x2000_4441;
const GATED: u32 = 1; // u32 -> u32 + 1; x = 0: the first run per xid waits, x = 2: every run waits

#[derive(Default)]
struct Probe {
    gated: Mutex<Vec<u32>>,
    started: Notify,
    release: watch::Sender<bool>,
}

fn server(sc: ServerConfig) -> Server {
    let mut s = Services::new();
    s.program(PROG, 1)
        .proc(READY, |info: CallInfo, key: u64| async move {
            info.connection
                .peer_ready_for_callbacks(key)
                .map_err(|_| ProcError::SystemErr)
        })
        .proc(BACK, |info: CallInfo, x: u32| async move {
            let r: Result<u32, RpcError> = info
                .connection
                .client(ClientConfig::default())
                .call(CBPROG, 1, GATED, &x, &CallHints::new())
                .await;
            match r {
                Ok(v) => Ok(v),
                Err(RpcError::BackchannelNotReady { .. }) => Ok(u32::MAX),
                Err(_) => Err(ProcError::SystemErr),
            }
        });
    Server::new(s, sc)
}

fn callbacks(probe: Arc<Probe>) -> Arc<Services> {
    let mut s = Services::new();
    s.program(CBPROG, 1)
        .proc(GATED, move |info: CallInfo, x: u32| {
            let probe = probe.clone();
            async move {
                let first = {
                    let mut g = probe.gated.lock().unwrap();
                    let first = !g.contains(&info.xid);
                    g.push(info.xid);
                    first
                };
                if (first && x == 0) || x == 2 {
                    let mut gate = probe.release.subscribe();
                    probe.started.notify_one();
                    let _ = gate.wait_for(|o| *o).await;
                }
                Ok::<_, ProcError>(x + 1)
            }
        });
    Arc::new(s)
}

enum Net {
    Mem(MemConnector),
    Tcp(std::net::SocketAddr),
}

async fn rig(sc: ServerConfig, tcp: bool) -> (Server, Net) {
    let server = server(sc);
    if tcp {
        let addr = server.serve_tcp("127.0.0.1:0").await.unwrap();
        return (server, Net::Tcp(addr));
    }
    let (connector, mut listener) = mem::listener(MemConfig::default());
    let s = server.clone();
    tokio::spawn(async move {
        while let Some(t) = listener.accept().await {
            s.serve(t);
        }
    });
    (server, Net::Mem(connector))
}

fn client(net: &Net, services: Option<Arc<Services>>) -> Client {
    let mut cfg = ClientConfig::default();
    cfg.reconnect_delay = Duration::from_millis(1);
    if let Some(s) = services {
        cfg.services = s;
    }
    match net {
        Net::Mem(c) => Client::new(c.clone(), cfg),
        Net::Tcp(a) => Client::new(TcpConnector::new(*a), cfg),
    }
}

async fn bounded<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("the test deadlocked")
}

async fn ready(c: &Client, key: u64) {
    c.call::<_, ()>(PROG, 1, READY, &key, &CallHints::new())
        .await
        .unwrap();
}

/// Readiness is explicit on both sides: the server refuses before the
/// declaration (on every transport); a client that serves nothing is
/// refused by the RDMA-like transport, answered PROG_UNAVAIL over TCP.
async fn readiness(tcp: bool) {
    let (server, net) = rig(ServerConfig::default(), tcp).await;
    let probe = Arc::new(Probe::default());
    let c = client(&net, Some(callbacks(probe.clone())));
    let r: u32 = c
        .call(PROG, 1, BACK, &5u32, &CallHints::new())
        .await
        .unwrap();
    assert_eq!(r, u32::MAX, "refused before the declaration");
    assert!(probe.gated.lock().unwrap().is_empty(), "nothing was sent");
    ready(&c, 1).await;
    let r: u32 = c
        .call(PROG, 1, BACK, &5u32, &CallHints::new())
        .await
        .unwrap();
    assert_eq!(r, 6);
    let conn = c.connection().unwrap();
    assert!(conn.backchannel_ready() && !conn.is_server_side());
    assert!(matches!(
        conn.peer_ready_for_callbacks(1u64),
        Err(BackchannelError::ClientSide)
    ));

    let plain = client(&net, None);
    ready(&plain, 2).await;
    assert!(!plain.connection().unwrap().backchannel_ready());
    let e = plain
        .call::<_, u32>(PROG, 1, BACK, &5u32, &CallHints::new())
        .await
        .unwrap_err();
    assert!(matches!(e, RpcError::SystemErr), "{e}");
    server.shutdown().await;
}

//= rfc8167#section-6
//# Therefore, a ULP MUST NOT perform reverse-direction ONC RPC operations
//# until the peer has indicated it is prepared to handle them.
//= rfc5666bis-04#section-7.3.1
//# An Upper Layer Protocol consumer MUST NOT perform backward direction ONC
//# RPC operations unless the peer consumer has indicated it is prepared to
//# handle them.
#[tokio::test]
async fn readiness_is_explicit_over_mem() {
    bounded(readiness(false)).await;
}

#[tokio::test]
async fn readiness_is_explicit_over_tcp() {
    bounded(readiness(true)).await;
}

/// The server's end of an in-memory pair, driven by hand.
#[tokio::test]
async fn refusal_error_names_rfc_8167_section_6() {
    let (_c, s) = mem::pair(MemConfig::default());
    let conn = rpcrdma_oncrpc::Connection::open(
        s,
        Arc::new(Services::new()),
        rpcrdma_oncrpc::ServeLimits::default(),
    );
    let e = conn
        .client(ClientConfig::default())
        .null(CBPROG, 1)
        .await
        .unwrap_err();
    assert!(matches!(e, RpcError::BackchannelNotReady { .. }));
    assert!(e.to_string().contains("RFC 8167 §6"), "{e}");
    assert!(conn.is_alive(), "a refusal does not harm the connection");
    assert_eq!(conn.client_key(), None);
    conn.peer_ready_for_callbacks(b"k".as_slice()).unwrap();
    assert_eq!(conn.client_key(), Some(ClientKey::from(b"k".as_slice())));
    conn.abort();
    conn.closed().await;
    assert!(matches!(
        conn.peer_ready_for_callbacks(1u64),
        Err(BackchannelError::Closed)
    ));
}

/// A transport whose `enable_backchannel` fails (as RPC-over-RDMA does
/// without reverse-direction credits).
struct NoBackchannel(MemTransport);

impl Transport for NoBackchannel {
    type CallContext = <MemTransport as Transport>::CallContext;
    async fn send_call(
        &self,
        xid: u32,
        message: Payload,
        hints: &CallHints,
    ) -> Result<(), TransportError> {
        self.0.send_call(xid, message, hints).await
    }
    async fn send_reply(
        &self,
        context: Self::CallContext,
        message: Payload,
    ) -> Result<(), TransportError> {
        self.0.send_reply(context, message).await
    }
    async fn recv(&self) -> Result<Received<Self::CallContext>, TransportError> {
        self.0.recv().await
    }
    async fn release(&self, xid: u32) {
        self.0.release(xid).await;
    }
    async fn close(&self) {
        self.0.close().await;
    }
    fn peer(&self) -> String {
        self.0.peer()
    }
    fn enable_backchannel(&self) -> Result<(), TransportError> {
        Err(TransportError::BackchannelUnsupported("no reverse credits"))
    }
}

struct NoBcConnector(MemConnector);

impl Connector for NoBcConnector {
    type Transport = NoBackchannel;
    async fn connect(&self) -> Result<NoBackchannel, TransportError> {
        self.0.connect().await.map(NoBackchannel)
    }
}

/// A client with reverse programs whose transport cannot take reverse
/// calls fails to connect with that reason, instead of pretending.
#[tokio::test]
async fn client_with_programs_needs_a_backchannel() {
    let (server, net) = rig(ServerConfig::default(), false).await;
    let Net::Mem(connector) = net else {
        unreachable!()
    };
    let mut cfg = ClientConfig::default();
    cfg.services = callbacks(Arc::new(Probe::default()));
    let e = Client::connect(NoBcConnector(connector.clone()), cfg)
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            RpcError::Connect(TransportError::BackchannelUnsupported(_))
        ),
        "{e}"
    );
    // Without programs it connects.
    let c = Client::connect(NoBcConnector(connector), ClientConfig::default())
        .await
        .unwrap();
    ready(&c, 3).await;
    server.shutdown().await;
}

/// Starts a GATED reverse call (argument 0: its first run waits) to
/// client `key` through the server's registry.
async fn start_gated(
    server: &Server,
    probe: &Probe,
    key: u64,
    x: u32,
    cfg: ClientConfig,
) -> tokio::task::JoinHandle<Result<u32, RpcError>> {
    let back = server.backchannels().client(key, cfg);
    let h = tokio::spawn(async move {
        back.call::<_, u32>(CBPROG, 1, GATED, &x, &CallHints::new())
            .await
    });
    probe.started.notified().await;
    h
}

/// The connection breaks under an outstanding reverse call; the client
/// reconnects and declares again; the call is sent again with the same XID.
async fn retransmit(tcp: bool) {
    let (server, net) = rig(ServerConfig::default(), tcp).await;
    let probe = Arc::new(Probe::default());
    let c = client(&net, Some(callbacks(probe.clone())));
    ready(&c, 9).await;
    let first = c.connection().unwrap();
    let call = start_gated(&server, &probe, 9, 0, ClientConfig::default()).await;
    // (The aborted connection's `closed()` would wait for the gated
    // handler; `is_alive` is false at once.)
    first.abort();
    assert!(!first.is_alive());
    ready(&c, 9).await;
    assert_ne!(c.connection().unwrap().id(), first.id());
    assert_eq!(call.await.unwrap().unwrap(), 1);
    let xids = probe.gated.lock().unwrap().clone();
    assert_eq!(xids.len(), 2);
    assert_eq!(xids[0], xids[1]);
    probe.release.send_replace(true);
    server.shutdown().await;
}

#[tokio::test]
async fn reverse_call_is_retransmitted_after_reconnect_over_mem() {
    bounded(retransmit(false)).await;
}

#[tokio::test]
async fn reverse_call_is_retransmitted_after_reconnect_over_tcp() {
    bounded(retransmit(true)).await;
}

/// `max_retransmits` bounds the number of connections a reverse call is
/// sent on.
#[tokio::test]
async fn reverse_retransmissions_are_bounded() {
    bounded(async {
        let (server, net) = rig(ServerConfig::default(), false).await;
        let probe = Arc::new(Probe::default());
        let c = client(&net, Some(callbacks(probe.clone())));
        ready(&c, 4).await;
        let mut cfg = ClientConfig::default();
        cfg.max_retransmits = 1;
        // Every run waits: the call is outstanding whenever its
        // connection breaks.
        let call = start_gated(&server, &probe, 4, 2, cfg).await;
        c.connection().unwrap().abort();
        ready(&c, 4).await;
        probe.started.notified().await; // sent again on the second connection
        c.connection().unwrap().abort();
        ready(&c, 4).await; // a third connection: no third send
        let e = call.await.unwrap().unwrap_err();
        let xids = probe.gated.lock().unwrap().clone();
        assert_eq!(xids.len(), 2);
        assert_eq!(xids[0], xids[1]);
        assert!(
            matches!(e, RpcError::ConnectionLost { attempts: 2, .. }),
            "{e}"
        );
        probe.release.send_replace(true);
        server.shutdown().await;
    })
    .await;
}

/// The wait for the client is bounded; forgetting the key or shutting the
/// server down ends it at once.
#[tokio::test]
async fn waiting_reverse_calls_end_at_the_bound_on_forget_and_on_shutdown() {
    bounded(async {
        let mut sc = ServerConfig::default();
        sc.callback_reconnect_wait = Duration::from_millis(50);
        let (server, _net) = rig(sc, false).await;
        let e = server
            .backchannels()
            .client(1u64, ClientConfig::default())
            .null(CBPROG, 1)
            .await
            .unwrap_err();
        match &e {
            RpcError::ClientGone {
                key,
                attempts,
                waited,
                ..
            } => {
                assert_eq!(*key, ClientKey::from(1u64));
                assert_eq!(*attempts, 0);
                assert!(*waited >= Duration::from_millis(50));
            }
            other => panic!("{other}"),
        }
        assert!(e.to_string().contains("RFC 8167 §5.4"));

        // Forget: with the default (30 s) wait, the call ends at once.
        let (server, _net) = rig(ServerConfig::default(), false).await;
        let back = server.backchannels().client(2u64, ClientConfig::default());
        let call = tokio::spawn(async move { back.null(CBPROG, 1).await });
        while server.backchannels().waiting(&ClientKey::from(2u64)) == 0 {
            tokio::task::yield_now().await;
        }
        server.backchannels().forget(&ClientKey::from(2u64));
        let e = call.await.unwrap().unwrap_err();
        assert!(matches!(e, RpcError::ClientGone { attempts: 0, .. }), "{e}");

        // Shutdown.
        let back = server.backchannels().client(3u64, ClientConfig::default());
        let call = tokio::spawn(async move { back.null(CBPROG, 1).await });
        while server.backchannels().waiting(&ClientKey::from(3u64)) == 0 {
            tokio::task::yield_now().await;
        }
        server.shutdown().await;
        let e = call.await.unwrap().unwrap_err();
        assert!(matches!(e, RpcError::Shutdown), "{e}");
    })
    .await;
}

/// Rebinding a connection to another key releases the old key; a
/// binding whose connection is gone is not handed out.
#[tokio::test]
async fn bindings_follow_the_declarations() {
    bounded(async {
        let (server, net) = rig(ServerConfig::default(), false).await;
        let probe = Arc::new(Probe::default());
        let c = client(&net, Some(callbacks(probe)));
        let bc = server.backchannels().clone();
        let (k1, k2) = (ClientKey::from(1u64), ClientKey::from(2u64));
        ready(&c, 1).await;
        assert!(bc.connection(&k1).is_some());
        ready(&c, 2).await;
        assert!(bc.connection(&k1).is_none());
        let bound = bc.connection(&k2).unwrap();
        assert_eq!(bound.client_key(), Some(k2.clone()));
        c.connection().unwrap().abort();
        bound.closed().await;
        assert!(bc.connection(&k2).is_none());
        server.shutdown().await;
    })
    .await;
}

#[test]
fn client_keys_display_and_compare() {
    assert_eq!(ClientKey::from(0xabu64).to_string(), "00000000000000ab");
    assert_eq!(ClientKey::from(vec![1, 2]), ClientKey::new(&[1u8, 2][..]));
    assert_ne!(ClientKey::from(1u64), ClientKey::from(&[1u8][..]));
    assert_eq!(
        format!("{:?}", ClientKey::from(&b"\xff"[..])),
        "ClientKey(ff)"
    );
}
