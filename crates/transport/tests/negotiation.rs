//! Version negotiation over the real software iWARP provider
//! (draft-cel-01 §5): v2↔v2, a v2 client against a Version One-only server
//! (ERR_VERS, fallback, and the memory of it across connections), a v1
//! client against a v2 server, and a probe that is never answered.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use rpcrdma_demoprog::{serve_demo, DemoClient};
use rpcrdma_engine::{Engine, EngineConfig, VersionPolicy};
use rpcrdma_oncrpc::{Client, ClientConfig, Server, ServerConfig, Services};
use rpcrdma_softiwarp::{Options, SoftIwarp};
use rpcrdma_transport::{serve_rdma, ListenConfig, RdmaConnector, RdmaTransport, VersionMemory};
use rpcrdma_verbs::{ConnectRequest, Device, Listener, QpCaps, QpParams, QueuePair};
use rpcrdma_wire::VersionRange;

const PATIENCE: Duration = Duration::from_secs(30);

fn no_delay() -> Options {
    // Both ends are ours: no need to wait for a Linux siw listener.
    Options {
        first_fpdu_delay: Duration::ZERO,
        ..Options::default()
    }
}

async fn server(versions: VersionRange) -> (Server, SocketAddr) {
    let mut services = Services::new();
    serve_demo(&mut services);
    let server = Server::new(services, ServerConfig::default());
    let mut engine = EngineConfig::server();
    engine.versions = versions;
    let svc = serve_rdma(
        &server,
        SoftIwarp::new(),
        "127.0.0.1:0".parse().unwrap(),
        ListenConfig {
            engine,
            options: no_delay(),
            caps: QpCaps::default(),
            max_connections: rpcrdma_transport::DEFAULT_MAX_CONNECTIONS,
            budget: None,
        },
    )
    .await
    .expect("listen");
    let addr = svc.local_addr();
    std::mem::forget(svc); // lives until the test's runtime ends
    (server, addr)
}

fn client_cfg(policy: VersionPolicy) -> EngineConfig {
    let mut c = EngineConfig::client();
    c.client_version = policy;
    c
}

async fn null_over(
    addr: SocketAddr,
    policy: VersionPolicy,
    memory: &VersionMemory,
) -> RdmaTransport<SoftIwarp> {
    let connector = RdmaConnector::new(SoftIwarp::new(), addr, client_cfg(policy))
        .options(no_delay())
        .version_memory(memory.clone());
    let handle = connector.handle();
    let client = Client::connect(connector, ClientConfig::default())
        .await
        .expect("connect");
    tokio::time::timeout(PATIENCE, DemoClient::new(client).null())
        .await
        .expect("NULL in time")
        .expect("NULL");
    handle.transport().expect("a connection")
}

#[tokio::test]
async fn v2_client_and_v2_server_settle_on_2() {
    let (_s, addr) = server(VersionRange::V1_AND_V2).await;
    let t = null_over(addr, VersionPolicy::Negotiate, &VersionMemory::new()).await;
    assert_eq!(t.negotiated(), Some((2, false)));
}

#[tokio::test]
async fn v1_client_and_v2_server_settle_on_1() {
    let (_s, addr) = server(VersionRange::V1_AND_V2).await;
    let t = null_over(addr, VersionPolicy::V1, &VersionMemory::new()).await;
    assert_eq!(t.negotiated(), Some((1, false)));
}

#[tokio::test]
async fn v2_client_falls_back_and_remembers_across_connections() {
    let (_s, addr) = server(VersionRange::V1_ONLY).await;
    let memory = VersionMemory::new();
    let t = null_over(addr, VersionPolicy::Negotiate, &memory).await;
    assert_eq!(t.negotiated(), Some((1, true)), "ERR_VERS then fallback");
    assert!(memory.lacks_v2(addr));
    // A later connection to the same responder starts with Version One:
    // no probe, no fallback.
    let t = null_over(addr, VersionPolicy::Negotiate, &memory).await;
    assert_eq!(t.negotiated(), Some((1, false)));
}

/// A responder that takes the connection but never answers the Version
/// Two probe (draft §5.2: "a lost or dropped first message"): the client
/// gives up on Version Two after its negotiation timeout, remembers it,
/// reconnects and completes the call in Version One.
#[tokio::test]
async fn unanswered_probe_means_version_one_on_the_next_connection() {
    let dev = SoftIwarp::new();
    let listener = dev
        .listen("127.0.0.1:0".parse().unwrap(), no_delay())
        .await
        .unwrap();
    let addr = listener.local_addr();
    let mut services = Services::new();
    serve_demo(&mut services);
    let server = Server::new(services, ServerConfig::default());
    let srv = server.clone();
    let dev2 = dev.clone();
    let acceptor = tokio::spawn(async move {
        let mut held = Vec::new();
        let mut versions_seen = Vec::new();
        for n in 0..2 {
            let req = listener.accept().await.expect("request");
            let peer = req.peer_addr();
            let peer_pd = req.private_data().clone();
            let pd = dev2.alloc_pd().expect("protection domain");
            let cq = dev2.create_cq(512).expect("completion queue");
            let ours = Bytes::copy_from_slice(&EngineConfig::server().private_data().to_bytes());
            let qp = req
                .accept(QpParams::new(&pd, &cq, no_delay()), ours)
                .await
                .expect("accept");
            if n == 0 {
                // Post receives so the probe lands, then never answer.
                for i in 0..8 {
                    qp.post_recv(rpcrdma_verbs::RecvWr {
                        wr_id: i,
                        buf: bytes::BytesMut::zeroed(4096),
                    })
                    .unwrap();
                }
                held.push((qp, cq, pd));
                continue;
            }
            let engine =
                Engine::new(EngineConfig::server(), pd, qp.caps(), Some(&peer_pd)).unwrap();
            let t: RdmaTransport<SoftIwarp> = RdmaTransport::new(engine, qp, cq, peer, peer_pd);
            srv.serve(t.clone());
            versions_seen.push(t);
        }
        (held, versions_seen)
    });

    let memory = VersionMemory::new();
    let mut cfg = client_cfg(VersionPolicy::Negotiate);
    cfg.negotiation_timeout = Duration::from_millis(300);
    let connector = RdmaConnector::new(dev, addr, cfg)
        .options(no_delay())
        .version_memory(memory.clone());
    let handle = connector.handle();
    let mut ccfg = ClientConfig::default();
    ccfg.reconnect_delay = Duration::from_millis(10);
    let client = Client::connect(connector, ccfg).await.expect("connect");
    let r = tokio::time::timeout(PATIENCE, DemoClient::new(client).null()).await;
    r.expect("NULL in time").expect("NULL after the reconnect");
    assert!(memory.lacks_v2(addr), "the unanswered probe was remembered");
    let t = handle.transport().expect("second connection");
    assert_eq!(t.negotiated(), Some((1, false)));
    let (_held, served) = tokio::time::timeout(PATIENCE, acceptor)
        .await
        .expect("acceptor done")
        .unwrap();
    assert_eq!(served[0].info().version, Some(1));
}

/// Waits for the next receive completion of a hand-driven queue pair and
/// returns the message it holds.
async fn next_message<C: rpcrdma_verbs::CompletionQueue>(cq: &C) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        cq.wait().await;
        cq.poll(&mut out, 16);
        if let Some(i) = out
            .iter()
            .position(|wc| wc.opcode == rpcrdma_verbs::WcOpcode::Recv)
        {
            let wc = out.remove(i);
            assert!(wc.status.is_ok(), "{wc:?}");
            let buf = wc.buf.expect("a receive buffer");
            return buf[..wc.byte_len as usize].to_vec();
        }
        out.clear();
    }
}

/// Issue 35, D4: a responder that answers the Version Two probe with
/// `RDMA2_ERR_BAD_HEADER` (not `ERR_VERS`). The client falls back at once
/// on the same connection — the same call, same XID, in Version One — and
/// the call completes; no negotiation timeout runs out (the client's is
/// set far beyond the test's patience), and the responder is not
/// remembered as lacking Version Two (spec note E25). It used to fail the
/// call, time the connection out and mark the responder Version One only.
#[tokio::test]
async fn bad_header_to_the_probe_falls_back_at_once_and_is_not_remembered() {
    let dev = SoftIwarp::new();
    let listener = dev
        .listen("127.0.0.1:0".parse().unwrap(), no_delay())
        .await
        .unwrap();
    let addr = listener.local_addr();
    let dev2 = dev.clone();
    let responder = tokio::spawn(async move {
        let req = listener.accept().await.expect("request");
        let pd = dev2.alloc_pd().expect("protection domain");
        let cq = dev2.create_cq(512).expect("completion queue");
        let ours = Bytes::copy_from_slice(&EngineConfig::server().private_data().to_bytes());
        let qp = req
            .accept(QpParams::new(&pd, &cq, no_delay()), ours)
            .await
            .expect("accept");
        for i in 0..8 {
            qp.post_recv(rpcrdma_verbs::RecvWr {
                wr_id: i,
                buf: bytes::BytesMut::zeroed(4096),
            })
            .unwrap();
        }
        let word = |m: &[u8], i: usize| u32::from_be_bytes(m[4 * i..4 * i + 4].try_into().unwrap());
        let words = |ws: &[u32]| -> Bytes { ws.iter().flat_map(|w| w.to_be_bytes()).collect() };
        // The probe: Version Two. Refused with RDMA2_ERR_BAD_HEADER.
        let probe = next_message(&cq).await;
        let xid = word(&probe, 0);
        assert_eq!(word(&probe, 1), 2, "the probe is Version Two");
        let send = |id: u64, b: Bytes| {
            qp.post_send(rpcrdma_verbs::SendWr::send(
                id,
                vec![rpcrdma_verbs::Sge::Bytes(b)],
            ))
            .unwrap();
        };
        send(100, words(&[xid, 2, 64, 4, 2]));
        // The retry: the same call in Version One, answered (an RPC
        // SUCCESS reply with no results: NULL).
        let retry = next_message(&cq).await;
        assert_eq!((word(&retry, 0), word(&retry, 1)), (xid, 1));
        send(101, words(&[xid, 1, 64, 0, 0, 0, 0, xid, 1, 0, 0, 0, 0]));
        (probe.len(), qp, cq, pd)
    });

    let memory = VersionMemory::new();
    let mut cfg = client_cfg(VersionPolicy::Negotiate);
    cfg.negotiation_timeout = Duration::from_secs(3600);
    let connector = RdmaConnector::new(dev, addr, cfg)
        .options(no_delay())
        .version_memory(memory.clone());
    let handle = connector.handle();
    let client = Client::connect(connector, ClientConfig::default())
        .await
        .expect("connect");
    tokio::time::timeout(PATIENCE, DemoClient::new(client).null())
        .await
        .expect("NULL in time (no negotiation timeout waited for)")
        .expect("NULL answered after the fallback");
    let t = handle.transport().expect("the connection");
    assert_eq!(t.negotiated(), Some((1, true)));
    assert!(!memory.lacks_v2(addr), "a BAD_HEADER is not ERR_VERS");
    let (probe_len, _qp, _cq, _pd) = tokio::time::timeout(PATIENCE, responder)
        .await
        .expect("responder done")
        .unwrap();
    assert!(probe_len <= 1024);
}

/// Issue 35, D7: a connector with the default configuration sizes its
/// receive queue for the credits it asks for plus the reverse-direction
/// calls it grants (128 + 8, RFC 8167 §4.3.1): its first call asks for 128
/// credits (read off the wire through a relay) and the client grants the
/// documented 8 reverse-direction credits. It used to ask for 128 with
/// 127 receives for replies, and grant 1.
#[tokio::test]
async fn the_default_connector_asks_for_128_and_grants_8() {
    use rpcrdma_testkit::mpa;
    use rpcrdma_testkit::relay::{Direction, Relay};

    let (_s, addr) = server(VersionRange::V1_AND_V2).await;
    let relay = Relay::start(addr).unwrap();
    let t = null_over(
        relay.local_addr(),
        VersionPolicy::Negotiate,
        &VersionMemory::new(),
    )
    .await;
    let info = t.info();
    assert_eq!(info.credits_we_grant, 8);
    assert_eq!(info.credits_granted, 64);
    // The NULL round trip is over, so its call (the first Send) went
    // through the relay whole; later Sends may still be on their way.
    let stream = relay.connections().remove(0).stream(Direction::ToServer);
    let (_, start) = mpa::StartFrame::parse(&stream).expect("an MPA Request");
    let (spans, _) = mpa::fpdu_spans(&stream[start..]);
    let seg = spans
        .into_iter()
        .filter_map(|span| mpa::fpdu_ulpdu(&stream[start..][span]).and_then(mpa::DdpSegment::parse))
        .find(|seg| !seg.tagged && (3..=6).contains(&seg.opcode))
        .expect("the first Send");
    assert!(seg.last && seg.mo == 0, "the call is one segment");
    let first = &seg.payload;
    assert_eq!(&first[4..12], &[0, 0, 0, 2, 0, 0, 0, 128]);
}

/// Of the same kind as issue 35's D4: a Version One responder that drops
/// the connection when it sees a version it does not know (instead of
/// answering `ERR_VERS`). The probe is then lost with its connection; the
/// client remembers the responder as lacking Version Two (draft-cel-01
/// §5.2: "if the initial negotiation message is lost or dropped"), and its
/// reconnection speaks Version One, where the call completes. Without the
/// memory every reconnection probed again and was dropped again, until the
/// call gave up.
#[tokio::test]
async fn a_responder_dropping_the_probe_gets_version_one_next() {
    let dev = SoftIwarp::new();
    let listener = dev
        .listen("127.0.0.1:0".parse().unwrap(), no_delay())
        .await
        .unwrap();
    let addr = listener.local_addr();
    let dev2 = dev.clone();
    let responder = tokio::spawn(async move {
        let mut versions = Vec::new();
        loop {
            let req = listener.accept().await.expect("request");
            let pd = dev2.alloc_pd().expect("protection domain");
            let cq = dev2.create_cq(512).expect("completion queue");
            let ours = Bytes::copy_from_slice(&EngineConfig::server().private_data().to_bytes());
            let qp = req
                .accept(QpParams::new(&pd, &cq, no_delay()), ours)
                .await
                .expect("accept");
            for i in 0..8 {
                qp.post_recv(rpcrdma_verbs::RecvWr {
                    wr_id: i,
                    buf: bytes::BytesMut::zeroed(4096),
                })
                .unwrap();
            }
            let word =
                |m: &[u8], i: usize| u32::from_be_bytes(m[4 * i..4 * i + 4].try_into().unwrap());
            let first = next_message(&cq).await;
            let (xid, vers) = (word(&first, 0), word(&first, 1));
            versions.push(vers);
            if vers != 1 {
                // Not a version it knows: it drops the connection.
                qp.disconnect().await;
                continue;
            }
            let reply: Bytes = [xid, 1, 64, 0, 0, 0, 0, xid, 1, 0, 0, 0, 0]
                .iter()
                .flat_map(|w| w.to_be_bytes())
                .collect();
            qp.post_send(rpcrdma_verbs::SendWr::send(
                100,
                vec![rpcrdma_verbs::Sge::Bytes(reply)],
            ))
            .unwrap();
            return (versions, qp, cq, pd);
        }
    });

    let memory = VersionMemory::new();
    let mut cfg = client_cfg(VersionPolicy::Negotiate);
    cfg.negotiation_timeout = Duration::from_secs(3600);
    let connector = RdmaConnector::new(dev, addr, cfg)
        .options(no_delay())
        .version_memory(memory.clone());
    let handle = connector.handle();
    let mut ccfg = ClientConfig::default();
    ccfg.reconnect_delay = Duration::from_millis(10);
    let client = Client::connect(connector, ccfg).await.expect("connect");
    tokio::time::timeout(PATIENCE, DemoClient::new(client).null())
        .await
        .expect("NULL in time")
        .expect("NULL answered on the reconnection");
    assert!(memory.lacks_v2(addr), "the lost probe was remembered");
    let t = handle.transport().expect("the second connection");
    assert_eq!(t.negotiated(), Some((1, false)));
    let (versions, _qp, _cq, _pd) = tokio::time::timeout(PATIENCE, responder)
        .await
        .expect("responder done")
        .unwrap();
    assert_eq!(versions, vec![2, 1]);
}
