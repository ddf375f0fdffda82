//! The RFC 8797 R bit follows the device: a provider whose regions cannot
//! be invalidated remotely (`Device::remote_invalidation() == false`, the
//! rdma-core provider) advertises R = 0 as client and as server, whatever
//! the engine configuration asks, and remote invalidation is then not used
//! by either end (docs/spec-notes.md C1).

mod common;

use common::{bounded, caps, CountingDevice};
use rpcrdma_demoprog::{serve_demo, DemoClient};
use rpcrdma_engine::EngineConfig;
use rpcrdma_oncrpc::{Client, ClientConfig, Server, ServerConfig, Services};
use rpcrdma_softiwarp::Options;
use rpcrdma_transport::{serve_rdma, ListenConfig, RdmaConnector};

async fn pair(server_dev: CountingDevice, client_dev: CountingDevice) -> (bool, bool, bool, bool) {
    let mut services = Services::new();
    serve_demo(&mut services);
    let server = Server::new(services, ServerConfig::default());
    let engine = EngineConfig::server();
    assert!(engine.remote_invalidate, "the engine asks for R = 1");
    let svc = serve_rdma(
        &server,
        server_dev,
        "127.0.0.1:0".parse().unwrap(),
        ListenConfig {
            engine,
            options: Options::default(),
            caps: caps(),
            max_connections: rpcrdma_transport::DEFAULT_MAX_CONNECTIONS,
            budget: None,
        },
    )
    .await
    .expect("listen");
    let client_engine = EngineConfig::client();
    assert!(client_engine.remote_invalidate);
    let connector = RdmaConnector::new(client_dev, svc.local_addr(), client_engine).caps(caps());
    let handle = connector.handle();
    let client = bounded(
        "connect",
        Client::connect(connector, ClientConfig::default()),
    )
    .await
    .expect("connect");
    let demo = DemoClient::new(client.clone());
    bounded("read", demo.read_verified(1, 64 * 1024))
        .await
        .expect("read");
    let t = handle.transport().expect("connected");
    let info = t.info();
    let peer_r = info
        .peer_private_data
        .as_ref()
        .is_some_and(|p| p.remote_invalidation());
    let s = svc.connections().pop().expect("server connection");
    let sinfo = s.info();
    let out = (
        info.local_private_data.remote_invalidation(),
        peer_r,
        sinfo.local_private_data.remote_invalidation(),
        info.remote_invalidation,
    );
    drop(demo);
    drop(client);
    server.shutdown().await;
    svc.stop().await;
    out
}

#[tokio::test(flavor = "current_thread")]
async fn r_bit_follows_the_device() {
    // Both devices can: R = 1 both ways, remote invalidation in use.
    assert_eq!(
        pair(CountingDevice::new(), CountingDevice::new()).await,
        (true, true, true, true)
    );
    // The client's device cannot: it sends R = 0; nobody uses it.
    assert_eq!(
        pair(
            CountingDevice::new(),
            CountingDevice::without_remote_invalidation()
        )
        .await,
        (false, true, true, false)
    );
    // The server's device cannot: it sends R = 0.
    assert_eq!(
        pair(
            CountingDevice::without_remote_invalidation(),
            CountingDevice::new()
        )
        .await,
        (true, false, false, false)
    );
}
