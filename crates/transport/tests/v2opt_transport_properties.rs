//! The Version Two transport properties feature over the real software
//! iWARP provider on loopback (MPA/DDP/RDMAP over TCP), through the ONC RPC
//! client and server: exchanged after the version settles, applied (a call
//! that RFC 8797's 1024-byte units make Long goes Short), and dropped
//! cleanly by a server without the feature.

use std::net::SocketAddr;

use bytes::Bytes;
use rpcrdma_demoprog::{checksum, procs, ulb, WriteArgs, WriteRes, PROGRAM, VERSION};
use rpcrdma_engine::{EngineConfig, FeatureState, MessageForm, TRANSPORT_PROPERTIES};
use rpcrdma_oncrpc::{Client, ClientConfig, Server, ServerConfig, Services};
use rpcrdma_softiwarp::SoftIwarp;
use rpcrdma_transport::{serve_rdma, ConnectorHandle, ListenConfig, RdmaConnector, RdmaService};

/// Receive buffers and Sends of 20000 bytes: RFC 8797 private data can
/// only say 19456 (it counts in KiB); transport properties say 20000.
const INLINE: u32 = 20_000;

fn config(mut c: EngineConfig, properties: bool) -> EngineConfig {
    c.inline_send = INLINE;
    c.inline_recv = INLINE;
    c.transport_properties = properties;
    c
}

async fn start(properties: bool) -> (Server, RdmaService<SoftIwarp>, SoftIwarp, SocketAddr) {
    let mut services = Services::new();
    rpcrdma_demoprog::serve_demo(&mut services);
    let server = Server::new(services, ServerConfig::default());
    let dev = SoftIwarp::new();
    let listen = ListenConfig {
        engine: config(EngineConfig::server(), properties),
        ..ListenConfig::default()
    };
    let svc = serve_rdma(&server, dev.clone(), "127.0.0.1:0".parse().unwrap(), listen)
        .await
        .expect("listen");
    let addr = svc.local_addr();
    (server, svc, dev, addr)
}

async fn connect(
    dev: &SoftIwarp,
    addr: SocketAddr,
    properties: bool,
) -> (Client, ConnectorHandle<SoftIwarp>) {
    let connector = RdmaConnector::new(
        dev.clone(),
        addr,
        config(EngineConfig::client(), properties),
    );
    let handle = connector.handle();
    let client = Client::connect(connector, ClientConfig::default())
        .await
        .expect("connect");
    (client, handle)
}

/// A WRITE whose data may not be reduced: the whole call travels inline
/// (Short) or in a Position-Zero Read chunk (Long).
async fn unreduced_write(client: &Client, data: Bytes) -> WriteRes {
    let hints = ulb::write().no_reduce();
    client
        .call(PROGRAM, VERSION, procs::WRITE, &WriteArgs { data }, &hints)
        .await
        .expect("WRITE")
}

/// About 19.6 KB of call: above 19456, below 20000.
fn data() -> Bytes {
    rpcrdma_demoprog::pattern(5, 19_500)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn properties_are_exchanged_and_raise_the_threshold() {
    let (server, svc, dev, addr) = start(true).await;
    let (client, handle) = connect(&dev, addr, true).await;
    // The first NULL settles Version Two; the offer follows its reply, and
    // its answer arrives before the second NULL's reply.
    client.null(PROGRAM, VERSION).await.unwrap();
    client.null(PROGRAM, VERSION).await.unwrap();
    let t = handle.transport().expect("a connection");
    let info = t.info();
    assert_eq!(info.version, Some(2));
    let f = info.feature(TRANSPORT_PROPERTIES).expect("registered");
    assert_eq!(f.state, FeatureState::Active);
    assert_eq!(f.adjustments.peer_recv_size, Some(INLINE));
    assert_eq!(f.adjustments.peer_send_size, Some(INLINE));
    assert_eq!(info.thresholds.send, INLINE);
    assert_eq!(t.stats().options_sent, 1);
    // The server side applied the client's values as soon as its offer
    // came.
    let server_side = svc.connections();
    let sinfo = server_side.first().expect("accepted").info();
    assert_eq!(
        sinfo.feature(TRANSPORT_PROPERTIES).unwrap().state,
        FeatureState::Active
    );
    assert_eq!(sinfo.thresholds.send, INLINE);

    let d = data();
    let r = unreduced_write(&client, d.clone()).await;
    assert_eq!((r.count, r.crc32c), (d.len() as u32, checksum(&d)));
    let forms = t.last_forms().expect("forms");
    assert_eq!(forms.call, MessageForm::Short);
    assert_eq!(t.stats().calls_long, 0);
    assert_eq!(t.info().calls_in_flight, 0);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_properties_the_same_call_is_long() {
    let (server, _svc, dev, addr) = start(true).await;
    let (client, handle) = connect(&dev, addr, false).await;
    client.null(PROGRAM, VERSION).await.unwrap();
    client.null(PROGRAM, VERSION).await.unwrap();
    let t = handle.transport().expect("a connection");
    assert_eq!(t.info().thresholds.send, 19_456);
    assert!(t.info().feature(TRANSPORT_PROPERTIES).is_none());
    let d = data();
    let r = unreduced_write(&client, d.clone()).await;
    assert_eq!(r.count, d.len() as u32);
    assert_eq!(t.last_forms().expect("forms").call, MessageForm::Long);
    assert_eq!(t.stats().options_sent, 0);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_the_feature_refuses_it_and_calls_carry_on() {
    let (server, svc, dev, addr) = start(false).await;
    let (client, handle) = connect(&dev, addr, true).await;
    client.null(PROGRAM, VERSION).await.unwrap();
    client.null(PROGRAM, VERSION).await.unwrap();
    let t = handle.transport().expect("a connection");
    let info = t.info();
    assert_eq!(
        info.feature(TRANSPORT_PROPERTIES).unwrap().state,
        FeatureState::Unsupported
    );
    // RFC 8797 still decides; nothing was applied.
    assert_eq!(info.thresholds.send, 19_456);
    for _ in 0..20 {
        let d = data();
        let r = unreduced_write(&client, d.clone()).await;
        assert_eq!((r.count, r.crc32c), (d.len() as u32, checksum(&d)));
    }
    assert_eq!(t.last_forms().expect("forms").call, MessageForm::Long);
    let stats = t.stats();
    assert_eq!(stats.options_sent, 1, "never sent again");
    assert_eq!(stats.rdma_errors_received, 1);
    assert_eq!(t.info().calls_in_flight, 0);
    let sstats = svc.connections().first().expect("accepted").stats();
    assert_eq!(sstats.rdma_errors_sent, 1);
    assert_eq!(sstats.options_received, 0);
    server.shutdown().await;
}
