//! The traps a new user fell into (issue 39), each closed and pinned
//! here over software iWARP:
//!
//! * an RPC-over-RDMA listener lives until the server shuts it down,
//!   whether its handle is kept or dropped, and `Server::shutdown` stops
//!   it (as it does the TCP listeners);
//! * a connector has the client defaults (`RdmaConnector::with_defaults`);
//! * a call larger than `EngineConfig::max_message` is refused with an
//!   error that names its size, the limit and the setting;
//! * an ONC RPC/TCP client pointed at the RPC-over-RDMA port is told that
//!   the port speaks RPC-over-RDMA, and a TCP server that merely closes
//!   the connection is not mistaken for one.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rpcrdma_demoprog::{serve_demo, DemoClient, PROGRAM as DEMO_PROG, VERSION as DEMO_V1};
use rpcrdma_engine::EngineConfig;
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{
    Client, ClientConfig, RpcError, Server, ServerConfig, Services, TransportError,
};
use rpcrdma_softiwarp::SoftIwarp;
use rpcrdma_transport::{serve_rdma, ListenConfig, RdmaConnector};

fn demo_server() -> Server {
    let mut services = Services::new();
    serve_demo(&mut services);
    Server::new(services, ServerConfig::default())
}

async fn rdma_client(addr: SocketAddr) -> Result<DemoClient, RpcError> {
    let connector = RdmaConnector::with_defaults(SoftIwarp::new(), addr);
    let client = Client::connect(connector, ClientConfig::default()).await?;
    Ok(DemoClient::new(client))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_listener_handle_keeps_serving_until_shutdown() {
    let server = demo_server();
    let svc = serve_rdma(
        &server,
        SoftIwarp::new(),
        "127.0.0.1:0".parse().unwrap(),
        ListenConfig::default(),
    )
    .await
    .unwrap();
    let addr = svc.local_addr();
    drop(svc);
    // Connections made after the handle is gone are accepted and served.
    for _ in 0..2 {
        let demo = rdma_client(addr)
            .await
            .expect("the listener outlives its handle");
        demo.null().await.unwrap();
    }
    server.shutdown().await;
    // Shut down, the listening socket is closed: nothing accepts.
    let refused = rdma_client(addr).await;
    assert!(
        refused.is_err(),
        "a connection was accepted after Server::shutdown"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_closes_one_listener_and_leaves_the_server() {
    let server = demo_server();
    let dev = SoftIwarp::new();
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let one = serve_rdma(&server, dev.clone(), any, ListenConfig::default())
        .await
        .unwrap();
    let two = serve_rdma(&server, dev, any, ListenConfig::default())
        .await
        .unwrap();
    let demo = rdma_client(one.local_addr()).await.unwrap();
    one.stop().await;
    assert!(rdma_client(one.local_addr()).await.is_err());
    // The connection it accepted and the other listener stay.
    demo.null().await.unwrap();
    rdma_client(two.local_addr())
        .await
        .unwrap()
        .null()
        .await
        .unwrap();
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_over_max_message_names_the_limit_and_the_setting() {
    let server = demo_server();
    let svc = serve_rdma(
        &server,
        SoftIwarp::new(),
        "127.0.0.1:0".parse().unwrap(),
        ListenConfig::default(),
    )
    .await
    .unwrap();
    let mut engine = EngineConfig::client();
    engine.max_message = 1 << 20;
    let connector = RdmaConnector::new(SoftIwarp::new(), svc.local_addr(), engine);
    let demo = DemoClient::new(
        Client::connect(connector, ClientConfig::default())
            .await
            .unwrap(),
    );
    let err = demo
        .write(Bytes::from(vec![7u8; 2 << 20]))
        .await
        .expect_err("a 2 MiB call over a 1 MiB max_message");
    let text = err.to_string();
    assert!(
        text.contains("EngineConfig::max_message") && text.contains("1048576 bytes"),
        "the refusal names neither the setting nor the limit: {text}"
    );
    // The connection is fine and a call within the limit goes through.
    assert_eq!(
        demo.write(Bytes::from(vec![7u8; 1 << 19]))
            .await
            .unwrap()
            .count,
        1 << 19
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tcp_client_on_the_rdma_port_is_told_so() {
    let server = demo_server();
    let svc = serve_rdma(
        &server,
        SoftIwarp::new(),
        "127.0.0.1:0".parse().unwrap(),
        ListenConfig::default(),
    )
    .await
    .unwrap();
    let client = Client::connect(TcpConnector::new(svc.local_addr()), ClientConfig::default())
        .await
        .expect("the TCP handshake itself succeeds");
    let started = Instant::now();
    let err = client
        .null(DEMO_PROG, DEMO_V1)
        .await
        .expect_err("ONC RPC/TCP on an RPC-over-RDMA port");
    let text = err.to_string();
    assert!(
        matches!(
            &err,
            RpcError::Transport {
                source: TransportError::SpeaksRdma { .. },
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        text.contains("speaks RPC-over-RDMA") && text.contains("--transport rdma"),
        "{text}"
    );
    // At once: not after retransmissions on new connections.
    assert!(started.elapsed() < Duration::from_secs(10));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tcp_server_that_closes_is_not_taken_for_rdma() {
    // Accepts, reads the call, closes without a byte: not an MPA
    // responder (the probe's MPA Request gets no MPA Reply either).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        while let Ok((mut s, _)) = listener.accept().await {
            let mut buf = [0u8; 64];
            let _ = s.read(&mut buf).await;
        }
    });
    let mut config = ClientConfig::default();
    config.reconnect_delay = Duration::from_millis(10);
    let client = Client::connect(TcpConnector::new(addr), config)
        .await
        .unwrap();
    let err = client.null(DEMO_PROG, DEMO_V1).await.expect_err("no reply");
    assert!(
        matches!(err, RpcError::ConnectionLost { .. }),
        "a plain close is a lost connection: {err:?}"
    );
}
