//! Bidirectional RPC (RFC 8167) through the ONC RPC API, over the software
//! iWARP provider (and over TCP where the rule is not RDMA-specific):
//! readiness on both sides (§6), independent XID spaces (§2.4), reverse
//! calls flowing while every forward credit is held (§4.1), Long messages
//! in the reverse direction (§5.3), and reverse-direction retransmission
//! after the client reconnects, with its bound (§5.4).
//!
//! Nothing here asserts on elapsed time: every outcome is a value (results,
//! XIDs, counters, error kinds). Each test runs under a generous deadline
//! only so that a deadlock fails instead of hanging.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rpcrdma_demoprog::{serve_callbacks, serve_demo, DemoClient};
use rpcrdma_engine::EngineConfig;
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{
    CallHints, CallInfo, Client, ClientConfig, ClientKey, ProcError, RpcError, Server,
    ServerConfig, Services, Transport, TransportError,
};
use rpcrdma_softiwarp::SoftIwarp;
use rpcrdma_transport::{serve_rdma, ConnectorHandle, ListenConfig, RdmaConnector, RdmaService};
use rpcrdma_xdr::{Payload, PayloadEncoder};
use tokio::sync::{watch, Notify};

/// The test program the server serves.
const TPROG: u32 = 0x2000_7770;
mod tp {
    /// u64 key -> (): declares the caller's connection ready under `key`.
    pub(crate) const READY: u32 = 1;
    /// () -> u32: tries a reverse call without declaring readiness;
    /// 1 = refused with BackchannelNotReady, 0 = it went through, 2 = other.
    pub(crate) const TRY_BACK: u32 = 2;
    /// u64 key -> u64: declares readiness, then calls the client's XID
    /// procedure while this call is outstanding; returns this call's XID
    /// (high word) and the reverse call's XID as the client saw it (low).
    pub(crate) const SAME_XID: u32 = 3;
    /// u32 -> u32: waits for the test's gate, holding a forward credit.
    pub(crate) const HOLD: u32 = 4;
    /// u64 key -> (): declares readiness and returns; a task of the
    /// server then waits for the test's gate and calls the client's XID
    /// procedure, recording the outcome (`Probe::later`).
    pub(crate) const LATER: u32 = 5;
}

/// The callback program the clients serve.
const CBPROG: u32 = 0x2000_7771;
mod cb {
    /// () -> u32: the XID of this reverse call.
    pub(crate) const XID: u32 = 1;
    /// u32 -> u32 (+1): the first run of each XID waits for the test's gate
    /// (so the call is outstanding when the connection breaks).
    pub(crate) const GATED: u32 = 2;
}

/// Shared state of the test programs.
#[derive(Default)]
struct Probe {
    /// HOLD calls that started.
    held: watch::Sender<u32>,
    /// Opens every HOLD.
    release_holds: watch::Sender<bool>,
    /// (xid, client connection id) of every GATED run, in order.
    gated: Mutex<Vec<(u32, u64)>>,
    gated_started: Notify,
    release_gated: watch::Sender<bool>,
    /// Opens LATER's reverse call.
    release_later: watch::Sender<bool>,
    /// LATER's reverse call: Some(true) answered, Some(false) failed.
    later: watch::Sender<Option<bool>>,
}

fn server_services(probe: Arc<Probe>) -> Services {
    let mut s = Services::new();
    serve_demo(&mut s);
    s.program(TPROG, 1)
        .proc(tp::READY, |info: CallInfo, key: u64| async move {
            info.connection
                .peer_ready_for_callbacks(key)
                .map_err(|_| ProcError::SystemErr)
        })
        .proc(tp::TRY_BACK, |info: CallInfo, ()| async move {
            let back = info.connection.client(ClientConfig::default());
            Ok::<_, ProcError>(match back.null(CBPROG, 1).await {
                Err(RpcError::BackchannelNotReady { .. }) => 1u32,
                Ok(()) => 0,
                Err(_) => 2,
            })
        })
        .proc(tp::SAME_XID, |info: CallInfo, key: u64| async move {
            info.connection
                .peer_ready_for_callbacks(key)
                .map_err(|_| ProcError::SystemErr)?;
            let back = info.connection.client(ClientConfig::default());
            let seen: u32 = back
                .call(CBPROG, 1, cb::XID, &(), &CallHints::new())
                .await
                .map_err(|_| ProcError::SystemErr)?;
            Ok((u64::from(info.xid) << 32) | u64::from(seen))
        })
        .proc(tp::LATER, {
            let probe = probe.clone();
            move |info: CallInfo, key: u64| {
                let probe = probe.clone();
                async move {
                    info.connection
                        .peer_ready_for_callbacks(key)
                        .map_err(|_| ProcError::SystemErr)?;
                    let back = info.connection.client(ClientConfig::default());
                    tokio::spawn(async move {
                        let mut gate = probe.release_later.subscribe();
                        let _ = gate.wait_for(|open| *open).await;
                        let r = back
                            .call::<_, u32>(CBPROG, 1, cb::XID, &(), &CallHints::new())
                            .await;
                        probe.later.send_replace(Some(r.is_ok()));
                    });
                    Ok::<_, ProcError>(())
                }
            }
        })
        .proc(tp::HOLD, move |_, x: u32| {
            let probe = probe.clone();
            async move {
                let mut gate = probe.release_holds.subscribe();
                probe.held.send_modify(|n| *n += 1);
                let _ = gate.wait_for(|open| *open).await;
                Ok::<_, ProcError>(x)
            }
        });
    s
}

fn client_services(probe: Arc<Probe>) -> Services {
    let mut s = Services::new();
    serve_callbacks(&mut s);
    s.program(CBPROG, 1)
        .proc(cb::XID, |info: CallInfo, ()| async move {
            Ok::<_, ProcError>(info.xid)
        })
        .proc(cb::GATED, move |info: CallInfo, x: u32| {
            let probe = probe.clone();
            async move {
                let first = {
                    let mut g = probe.gated.lock().unwrap();
                    let first = !g.iter().any(|(xid, _)| *xid == info.xid);
                    g.push((info.xid, info.connection.id()));
                    first
                };
                if first {
                    let mut gate = probe.release_gated.subscribe();
                    probe.gated_started.notify_one();
                    let _ = gate.wait_for(|open| *open).await;
                }
                Ok::<_, ProcError>(x + 1)
            }
        });
    s
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Net {
    Rdma,
    Tcp,
}

struct Rig {
    net: Net,
    server: Server,
    probe: Arc<Probe>,
    addr: SocketAddr,
    dev: SoftIwarp,
    svc: Option<RdmaService<SoftIwarp>>,
}

impl Rig {
    async fn new(net: Net) -> Self {
        Self::with(net, ServerConfig::default(), EngineConfig::server()).await
    }

    async fn with(net: Net, sc: ServerConfig, engine: EngineConfig) -> Self {
        let probe = Arc::new(Probe::default());
        let server = Server::new(server_services(probe.clone()), sc);
        let dev = SoftIwarp::new();
        let (addr, svc) = match net {
            Net::Rdma => {
                let listen = ListenConfig {
                    engine,
                    ..ListenConfig::default()
                };
                let svc = serve_rdma(&server, dev.clone(), "127.0.0.1:0".parse().unwrap(), listen)
                    .await
                    .unwrap();
                (svc.local_addr(), Some(svc))
            }
            Net::Tcp => (server.serve_tcp("127.0.0.1:0").await.unwrap(), None),
        };
        Self {
            net,
            server,
            probe,
            addr,
            dev,
            svc,
        }
    }

    /// A client serving the callback programs (or nothing, if `serve` is
    /// false), and over RDMA a handle to its current transport.
    fn client(
        &self,
        serve: bool,
        mut config: ClientConfig,
    ) -> (Client, Option<ConnectorHandle<SoftIwarp>>) {
        if serve {
            config.services = Arc::new(client_services(self.probe.clone()));
        }
        config.reconnect_delay = Duration::from_millis(1);
        match self.net {
            Net::Rdma => {
                let c = RdmaConnector::new(self.dev.clone(), self.addr, EngineConfig::client());
                let h = c.handle();
                (Client::new(c, config), Some(h))
            }
            Net::Tcp => (Client::new(TcpConnector::new(self.addr), config), None),
        }
    }

    async fn shutdown(self) {
        self.server.shutdown().await;
        if let Some(svc) = self.svc {
            svc.stop().await;
        }
    }
}

/// Fails a test that deadlocks instead of hanging it (not a timing
/// assertion: the bound is far above any healthy run).
async fn bounded<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(120), f)
        .await
        .expect("the test deadlocked")
}

async fn ready(client: &Client, key: u64) {
    client
        .call::<_, ()>(TPROG, 1, tp::READY, &key, &CallHints::new())
        .await
        .unwrap();
}

// ----- readiness (RFC 8167 §6) -------------------------------------------

/// Before the server's Upper Layer declares the client ready, a reverse
/// call fails on our side with a typed error and nothing is sent; after
/// it, reverse calls work.
async fn refused_before_readiness(net: Net) {
    let rig = Rig::new(net).await;
    let (client, _) = rig.client(true, ClientConfig::default());
    let code: u32 = client
        .call(TPROG, 1, tp::TRY_BACK, &(), &CallHints::new())
        .await
        .unwrap();
    assert_eq!(code, 1, "a reverse call before readiness must be refused");
    // The connection is unaffected, and after the declaration reverse
    // calls go through.
    let demo = DemoClient::new(client.clone());
    assert_eq!(demo.callbacks(11, 4, 0).await.unwrap(), 4);
    assert_eq!(demo.callbacks(11, 4, 100).await.unwrap(), 4);
    rig.shutdown().await;
}

#[tokio::test]
async fn reverse_calls_are_refused_before_readiness_over_rdma() {
    bounded(refused_before_readiness(Net::Rdma)).await;
}

#[tokio::test]
async fn reverse_calls_are_refused_before_readiness_over_tcp() {
    bounded(refused_before_readiness(Net::Tcp)).await;
}

/// The RDMA transport itself refuses a reverse call before readiness
/// (the engine's gate, mapped to a typed error), without harming the
/// connection.
#[tokio::test]
async fn rdma_transport_refuses_reverse_calls_before_readiness() {
    bounded(async {
        let rig = Rig::new(Net::Rdma).await;
        let (client, _) = rig.client(true, ClientConfig::default());
        let demo = DemoClient::new(client.clone());
        demo.null().await.unwrap();
        let server_side = rig.svc.as_ref().unwrap().connections();
        let t = server_side.first().expect("one connection");
        // An RPC NULL call to the callback program, xid 5.
        let mut pe = PayloadEncoder::with_capacity(64);
        let mut enc = pe.encoder();
        for w in [5u32, 0, 2, CBPROG, 1, 0, 0, 0, 0, 0] {
            enc.put_u32(w);
        }
        let call: Payload = pe.finish();
        let r = Transport::send_call(t, 5, call, &CallHints::new()).await;
        assert!(
            matches!(r, Err(TransportError::BackchannelNotReady)),
            "{r:?}"
        );
        assert!(t.is_open());
        assert_eq!(t.stats().calls_short + t.stats().calls_long, 0);
        demo.null().await.unwrap();
        rig.shutdown().await;
    })
    .await;
}

/// A client that serves no programs does not enable its backchannel; if
/// the server's Upper Layer calls it anyway, the client's engine refuses
/// each reverse call with RDMA_ERROR (the connection survives).
#[tokio::test]
async fn client_without_programs_refuses_reverse_calls_over_rdma() {
    bounded(async {
        let rig = Rig::new(Net::Rdma).await;
        let (client, handle) = rig.client(false, ClientConfig::default());
        let demo = DemoClient::new(client.clone());
        assert!(!client.connection().is_some_and(|c| c.backchannel_ready()));
        assert_eq!(demo.callbacks(12, 3, 0).await.unwrap(), 0);
        let t = handle.unwrap().transport().unwrap();
        assert_eq!(t.stats().rdma_errors_sent, 3);
        assert_eq!(t.stats().calls_received, 0);
        assert!(!client.connection().unwrap().backchannel_ready());
        demo.null().await.unwrap();
        rig.shutdown().await;
    })
    .await;
}

// ----- independent XID spaces (RFC 8167 §2.4) ----------------------------

/// A forward call and a reverse call with the same XID, outstanding at
/// the same time, are distinct transactions: the client starts its XIDs
/// where the server starts its reverse XIDs.
async fn same_xid_both_ways(net: Net) {
    const X: u32 = 0x5eed_0001;
    let mut sc = ServerConfig::default();
    sc.first_callback_xid = Some(X);
    let rig = Rig::with(net, sc, EngineConfig::server()).await;
    let mut cc = ClientConfig::default();
    cc.first_xid = Some(X);
    let (client, _) = rig.client(true, cc);
    let both: u64 = client
        .call(TPROG, 1, tp::SAME_XID, &21u64, &CallHints::new())
        .await
        .unwrap();
    let (forward, reverse) = ((both >> 32) as u32, both as u32);
    assert_eq!(forward, X, "the forward call's XID");
    assert_eq!(
        reverse, X,
        "the reverse call's XID, made while it was outstanding"
    );
    rig.shutdown().await;
}

//= rfc5666bis-04#section-7.1.4
//# In other words, a forward direction requester MAY use the same xid value
//# at the same time as a backward direction requester on the same transport
//# connection, but such concurrent requests represent distinct ONC RPC
//# transactions.
//= rfc8167#section-2.4.1
//# Therefore, a forward-direction Requester MAY use the same XID value at the
//# same time as a reverse-direction Requester on the same transport
//# connection.
#[tokio::test]
async fn forward_and_reverse_calls_share_an_xid_over_rdma() {
    bounded(same_xid_both_ways(Net::Rdma)).await;
}

#[tokio::test]
async fn forward_and_reverse_calls_share_an_xid_over_tcp() {
    bounded(same_xid_both_ways(Net::Tcp)).await;
}

// ----- no head-of-line blocking (RFC 8167 §4.1) --------------------------

/// The server grants two forward credits. The client fills both with
/// calls the server does not answer and queues a third; while they are
/// held, the server completes reverse calls — more of them than the one
/// reverse credit this client is configured to grant, so they also queue
/// and flow in their own direction. Only then are the forward calls
/// released.
#[tokio::test]
async fn reverse_calls_flow_while_forward_credits_are_exhausted() {
    bounded(async {
        let mut engine = EngineConfig::server();
        engine.credits_grant = 2;
        let rig = Rig::with(Net::Rdma, ServerConfig::default(), engine).await;
        let mut client_engine = EngineConfig::client();
        client_engine.backchannel_credits = 1;
        let connector = RdmaConnector::new(rig.dev.clone(), rig.addr, client_engine);
        let handle = connector.handle();
        let mut config = ClientConfig::default();
        config.services = Arc::new(client_services(rig.probe.clone()));
        config.reconnect_delay = Duration::from_millis(1);
        let client = Client::new(connector, config);
        ready(&client, 31).await; // also learns the grant of 2
        let t = handle.transport().unwrap();
        assert_eq!(t.info().credits_granted, 2);

        let mut holds = Vec::new();
        for i in 0..3u32 {
            let c = client.clone();
            holds.push(tokio::spawn(async move {
                c.call::<_, u32>(TPROG, 1, tp::HOLD, &i, &CallHints::new())
                    .await
            }));
        }
        let mut held = rig.probe.held.subscribe();
        held.wait_for(|n| *n == 2).await.unwrap();
        // Every forward credit is taken by an unanswered call; the third
        // call waits for a credit inside the client's engine.
        assert_eq!(t.info().calls_in_flight, 2);
        assert!(t.stats().credit_waits >= 1);

        // The server calls back meanwhile.
        let back = rig
            .server
            .backchannels()
            .client(31u64, ClientConfig::default());
        let mut calls = tokio::task::JoinSet::new();
        for i in 0..8u32 {
            let b = back.clone();
            calls.spawn(async move {
                b.call::<_, u32>(CBPROG, 1, cb::XID, &(), &CallHints::new())
                    .await
                    .map(|_| i)
            });
        }
        let mut done = 0;
        while let Some(r) = calls.join_next().await {
            r.unwrap().unwrap();
            done += 1;
        }
        assert_eq!(done, 8);
        // The forward calls are still held: none answered, the third one
        // never reached the server.
        assert_eq!(*rig.probe.held.borrow(), 2);
        for h in &mut holds {
            if h.is_finished() {
                panic!("a held forward call ended: {:?}", h.await);
            }
        }
        assert_eq!(t.info().calls_in_flight, 2);
        // The server received the 8 reverse replies and has sent only the
        // reply to READY.
        let server_t = rig.svc.as_ref().unwrap().connections()[0].clone();
        let s = server_t.stats();
        assert_eq!((s.replies_short, s.replies_sent), (8, 1), "{s:?}");
        // The client grants one reverse credit (configured; the default
        // is 8), so the reverse calls queued for it too, in their own
        // direction.
        assert_eq!(server_t.info().credits_granted, 1);
        assert!(s.credit_waits >= 7, "{s:?}");

        rig.probe.release_holds.send_replace(true);
        for (i, h) in holds.into_iter().enumerate() {
            assert_eq!(h.await.unwrap().unwrap(), i as u32);
        }
        rig.shutdown().await;
    })
    .await;
}

// ----- chunks in the reverse direction (RFC 8167 §5.3) -------------------

/// A reverse call and reply too large for the inline threshold travel as
/// Long messages: the server's call in a Position-Zero Read chunk that the
/// client pulls, the client's reply through the Reply chunk the server
/// provided.
//= rfc8167#section-5.3
//# Chunks MAY be used in the reverse direction.
#[tokio::test]
async fn reverse_long_call_and_long_reply_over_rdma() {
    bounded(async {
        let rig = Rig::new(Net::Rdma).await;
        let (client, handle) = rig.client(true, ClientConfig::default());
        let demo = DemoClient::new(client.clone());
        let size = 20_000;
        assert_eq!(demo.callbacks(41, 3, size).await.unwrap(), 3);
        let server_t = rig.svc.as_ref().unwrap().connections()[0].clone();
        let s = server_t.stats();
        assert_eq!((s.calls_long, s.replies_long), (3, 3), "{s:?}");
        let c = handle.unwrap().transport().unwrap().stats();
        assert_eq!(c.calls_received, 3);
        assert!(c.rdma_reads >= 3 && c.rdma_writes >= 3, "{c:?}");
        // Small ones stay Short.
        assert_eq!(demo.callbacks(41, 2, 100).await.unwrap(), 2);
        let s = server_t.stats();
        assert_eq!((s.calls_short, s.replies_short), (2, 2), "{s:?}");
        assert_eq!(s.live_registrations(), 0);
        rig.shutdown().await;
    })
    .await;
}

// ----- retransmission after reconnect (RFC 8167 §5.4) --------------------

/// Starts a GATED reverse call to client `key` that will be outstanding
/// when the test breaks the connection.
async fn start_gated(rig: &Rig, key: u64) -> tokio::task::JoinHandle<Result<u32, RpcError>> {
    let back = rig
        .server
        .backchannels()
        .client(key, ClientConfig::default());
    let started = rig.probe.gated_started.notified();
    let h = tokio::spawn(async move {
        back.call::<_, u32>(CBPROG, 1, cb::GATED, &41u32, &CallHints::new())
            .await
    });
    started.await;
    h
}

/// The client's connection breaks while a reverse call is outstanding;
/// the client reconnects (its next forward call) and declares readiness
/// again under the same key; the reverse call is sent again there with
/// the same XID and completes.
async fn retransmitted_after_reconnect(net: Net) {
    let rig = Rig::new(net).await;
    let (client, _) = rig.client(true, ClientConfig::default());
    ready(&client, 51).await;
    let first_conn = client.connection().unwrap();
    assert!(first_conn.backchannel_ready());
    let call = start_gated(&rig, 51).await;

    // (`closed()` would wait for the gated handler; `is_alive` is false
    // at once.)
    first_conn.abort();
    assert!(!first_conn.is_alive());
    ready(&client, 51).await; // reconnects, declares again
    let second_conn = client.connection().unwrap();
    assert_ne!(first_conn.id(), second_conn.id());

    assert_eq!(call.await.unwrap().unwrap(), 42);
    let gated = rig.probe.gated.lock().unwrap().clone();
    assert_eq!(gated.len(), 2, "{gated:?}");
    assert_eq!(gated[0].0, gated[1].0, "retransmitted with the same XID");
    assert_eq!(gated[0].1, first_conn.id());
    assert_eq!(gated[1].1, second_conn.id());
    rig.probe.release_gated.send_replace(true);
    // The key is bound to the server's end of the new connection.
    let bound = rig
        .server
        .backchannels()
        .connection(&ClientKey::from(51u64))
        .expect("bound");
    assert!(bound.is_alive() && bound.is_server_side());
    assert_eq!(bound.client_key(), Some(ClientKey::from(51u64)));
    rig.shutdown().await;
}

#[tokio::test]
async fn reverse_call_is_retransmitted_after_the_client_reconnects_over_rdma() {
    bounded(retransmitted_after_reconnect(Net::Rdma)).await;
}

#[tokio::test]
async fn reverse_call_is_retransmitted_after_the_client_reconnects_over_tcp() {
    bounded(retransmitted_after_reconnect(Net::Tcp)).await;
}

/// If the client does not come back within the bound, the call fails
/// with an error naming the client and the wait.
#[tokio::test]
async fn reverse_call_fails_at_the_reconnect_bound_over_rdma() {
    bounded(async {
        let mut sc = ServerConfig::default();
        sc.callback_reconnect_wait = Duration::from_millis(200);
        let rig = Rig::with(Net::Rdma, sc, EngineConfig::server()).await;
        let (client, _) = rig.client(true, ClientConfig::default());
        ready(&client, 61).await;
        let conn = client.connection().unwrap();
        let call = start_gated(&rig, 61).await;
        conn.abort();
        let e = call.await.unwrap().unwrap_err();
        match &e {
            RpcError::ClientGone {
                key,
                attempts,
                waited,
                ..
            } => {
                assert_eq!(*key, ClientKey::from(61u64));
                assert_eq!(*attempts, 1);
                assert!(*waited >= Duration::from_millis(200), "{e}");
            }
            other => panic!("expected ClientGone, got {other}"),
        }
        assert!(e.to_string().contains("RFC 8167 §5.4"), "{e}");
        rig.probe.release_gated.send_replace(true);
        rig.shutdown().await;
    })
    .await;
}

/// The demo program's CALLBACKS with the demo client's callback program,
/// as `rpcrdma demo` runs it: every call answered, every one served.
#[tokio::test]
async fn demo_callbacks_over_rdma() {
    bounded(async {
        let rig = Rig::new(Net::Rdma).await;
        let mut services = Services::new();
        let served = serve_callbacks(&mut services);
        let mut cc = ClientConfig::default();
        cc.services = Arc::new(services);
        let connector = RdmaConnector::new(rig.dev.clone(), rig.addr, EngineConfig::client());
        let demo = DemoClient::new(Client::new(connector, cc));
        assert_eq!(demo.callbacks(71, 16, 0).await.unwrap(), 16);
        assert_eq!(demo.callbacks(71, 16, 512).await.unwrap(), 16);
        assert_eq!(served.get(), 32);
        rig.shutdown().await;
    })
    .await;
}

/// A call that stops waiting (its future dropped at a timeout) while it is
/// the one the RDMA transport's next wake-up goes to (the inline receive:
/// a waiting call reads the transport itself) hands the transport back to
/// the connection's reader task: a reverse call that arrives afterwards,
/// with no forward call waiting, is still served.
#[tokio::test]
async fn a_call_dropped_while_waiting_leaves_the_reverse_direction_served() {
    bounded(async {
        let rig = Rig::new(Net::Rdma).await;
        let (client, _) = rig.client(true, ClientConfig::default());
        client
            .call::<_, ()>(TPROG, 1, tp::LATER, &7u64, &CallHints::new())
            .await
            .unwrap();
        // Waits (reading the transport itself) until the timeout drops it.
        let held = tokio::time::timeout(
            Duration::from_millis(100),
            client.call::<_, u32>(TPROG, 1, tp::HOLD, &1u32, &CallHints::new()),
        )
        .await;
        assert!(held.is_err(), "HOLD must still be held: {held:?}");
        // Nothing of ours waits now: the reverse call must reach the
        // client's reader task.
        rig.probe.release_later.send_replace(true);
        let mut later = rig.probe.later.subscribe();
        let answered = *later.wait_for(Option::is_some).await.unwrap();
        assert_eq!(answered, Some(true), "the reverse call must be answered");
        // And forward calls still work.
        ready(&client, 7).await;
        rig.probe.release_holds.send_replace(true);
        rig.shutdown().await;
    })
    .await;
}

// ----- reverse-direction calls towards a client without chunks (issue 35, D3)

/// A reverse-direction call made through `Connection::client()` with no
/// `max_results` hint (how an NFSv4.1 server's CB_NULL and CB_COMPOUND are
/// made) goes, over RDMA, as a Short `RDMA_MSG` whose three chunk lists
/// are empty: what the Linux client takes as a reverse call
/// (`rpcrdma_is_bcall`; it offers no reverse-direction chunks). It used to
/// carry a Reply chunk of `max_message` (16 MiB), which the Linux client
/// does not recognise as a call (spec note E28). Both ways of calling
/// back are checked (`Connection::client()` in a procedure, and
/// `Server::backchannels()`); the bytes are read off the wire through a
/// relay, both when Version Two is negotiated and on Version One.
//= rfc5666bis-04#section-7.3.4
//# The ONC RPC Call header MUST follow immediately, starting with the same
//# XID value that is present in the RPC-over-RDMA header.
//= rfc5666bis-04#section-7.3.4
//# The Call header's msg_type field MUST contain the value CALL.
//= rfc8167#section-5.1
//# The rdma_vers field MUST contain the same value in reverse- and
//# forward-direction Call messages on the same connection.
//= rfc8167#section-5.1
//# Whether presented inline or as a separate chunk, the ONC RPC Call header
//# MUST start with the same XID value that is present in the RPC-over-RDMA
//# header, and the RPC header's msg_type field MUST contain the value CALL.
#[tokio::test]
async fn reverse_call_without_max_results_goes_inline_over_rdma() {
    use rpcrdma_engine::VersionPolicy;
    use rpcrdma_testkit::mpa;
    use rpcrdma_testkit::relay::{Direction, Relay};

    for policy in [VersionPolicy::Negotiate, VersionPolicy::V1] {
        let (reverse_xids, rec) = bounded(async {
            let rig = Rig::new(Net::Rdma).await;
            let relay = Relay::start(rig.addr).unwrap();
            let mut cfg = EngineConfig::client();
            cfg.client_version = policy;
            let connector = RdmaConnector::new(rig.dev.clone(), relay.local_addr(), cfg);
            let mut config = ClientConfig::default();
            config.services = Arc::new(client_services(rig.probe.clone()));
            let client = Client::new(connector, config);
            // SAME_XID declares readiness and calls back with
            // `CallHints::new()`: no maximum stated.
            let seen: u64 = client
                .call(TPROG, 1, tp::SAME_XID, &35u64, &CallHints::new())
                .await
                .unwrap();
            // And through `Backchannels`, the same way.
            let back = rig
                .server
                .backchannels()
                .client(35u64, ClientConfig::default());
            let seen_too: u32 = back
                .call(CBPROG, 1, cb::XID, &(), &CallHints::new())
                .await
                .unwrap();
            let server_side = rig.svc.as_ref().unwrap().connections();
            let stats = server_side.first().expect("one connection").stats();
            assert_eq!(stats.calls_short, 2, "{policy:?}: {stats:?}");
            assert_eq!(stats.registrations, 0, "{policy:?}: {stats:?}");
            drop(server_side);
            drop(client);
            rig.shutdown().await;
            while !relay.connections().first().is_some_and(|c| c.finished) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            ([seen as u32, seen_too], relay.connections().remove(0))
        })
        .await;
        let (_, _, (_, to_client)) = mpa::read_connection(
            &rec.stream(Direction::ToServer),
            &rec.stream(Direction::ToClient),
        )
        .expect("an MPA connection");
        let word = |m: &[u8], i: usize| u32::from_be_bytes(m[4 * i..4 * i + 4].try_into().unwrap());
        for reverse_xid in reverse_xids {
            let call = to_client
                .iter()
                .find(|m| m.len() >= 16 && word(m, 0) == reverse_xid && word(m, 3) == 0)
                .expect("the reverse call on the wire");
            let vers = word(call, 1);
            // xid, vers, credits, RDMA_MSG, [rdma_direction CALL], three
            // empty chunk lists, then the RPC call: its XID and CALL.
            let lists_at = if vers == 1 { 4 } else { 5 };
            if vers == 2 {
                assert_eq!(word(call, 4), 0, "rdma_direction CALL");
            }
            assert_eq!(
                (0..5).map(|i| word(call, lists_at + i)).collect::<Vec<_>>(),
                vec![0, 0, 0, reverse_xid, 0],
                "{policy:?}: no chunk lists; got {call:02x?}"
            );
            assert_eq!(vers, if policy == VersionPolicy::V1 { 1 } else { 2 });
            // It asks for the server's reverse-direction credits (8).
            assert_eq!(word(call, 2), 8);
        }
    }
}
