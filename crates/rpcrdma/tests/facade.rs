//! The facade's short paths, the errors they give, and the configuration
//! convention (every configuration struct is built the same way).

use std::time::Duration;

use rpcrdma::oncrpc::mem::MemConfig;
use rpcrdma::oncrpc::tcp::TcpConfig;
use rpcrdma::oncrpc::ReplyCacheConfig;
use rpcrdma::{
    CallHints, CallInfo, ClientConfig, ConnectOptions, EngineConfig, Error, ListenConfig,
    ProcError, RpcError, ServerConfig, Services, Transport, TransportError,
};

const PROGRAM: u32 = 0x2000_0199;
const ECHO: u32 = 1;

fn services() -> Services {
    let mut services = Services::new();
    services.program(PROGRAM, 1).proc(
        ECHO,
        |_: CallInfo, x: u64| async move { Ok::<_, ProcError>(x) },
    );
    services
}

/// Every configuration struct takes struct-update syntax from its
/// default (none is `#[non_exhaustive]`): this compiles only if so.
#[test]
fn configuration_structs_are_built_alike() {
    let client = ClientConfig {
        timeout: Duration::from_secs(5),
        ..Default::default()
    };
    let server = ServerConfig {
        max_in_flight: 16,
        ..Default::default()
    };
    let tcp = TcpConfig {
        max_record: 1 << 20,
        ..Default::default()
    };
    let engine = EngineConfig {
        max_message: 1 << 20,
        ..EngineConfig::client()
    };
    let listen: ListenConfig<rpcrdma::softiwarp::Options> = ListenConfig {
        max_connections: 8,
        ..Default::default()
    };
    let cache = ReplyCacheConfig {
        max_entries: 16,
        ..Default::default()
    };
    let mem = MemConfig {
        inline_threshold: 2048,
        ..Default::default()
    };
    let connect = ConnectOptions {
        transport: Transport::Tcp,
        client: client.clone(),
        ..Default::default()
    };
    let codegen = rpcrdma::codegen::Options {
        strings_as_bytes: true,
        ..Default::default()
    };
    assert_eq!(client.timeout, Duration::from_secs(5));
    assert_eq!(server.max_in_flight, 16);
    assert_eq!(tcp.max_record, 1 << 20);
    assert_eq!(engine.max_message, 1 << 20);
    assert_eq!(listen.max_connections, 8);
    assert_eq!(cache.max_entries, 16);
    assert_eq!(mem.inline_threshold, 2048);
    assert_eq!(connect.transport, Transport::Tcp);
    assert!(codegen.strings_as_bytes);
}

/// `rpcrdma::codegen::builder` writes code that names only this crate.
#[test]
fn generated_code_names_only_the_facade() {
    let x = std::env::temp_dir().join(format!("rpcrdma-facade-{}.x", std::process::id()));
    std::fs::write(
        &x,
        "struct blob { opaque data<>; /* @ddp */ };\n\
         program P { version V { blob ECHO(blob) = 1; } = 1; } = 0x20000199;\n",
    )
    .unwrap();
    let code = rpcrdma::codegen::builder(&x).generate().unwrap();
    std::fs::remove_file(&x).unwrap();
    assert!(code.contains("::rpcrdma::oncrpc::"));
    assert!(code.contains("::rpcrdma::bytes::Bytes"));
    assert!(!code.contains("::rpcrdma_oncrpc") && !code.contains("::rpcrdma_xdr"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_transports_from_one_builder() {
    let serving = rpcrdma::serve(services())
        .rdma("127.0.0.1:0")
        .tcp("127.0.0.1:0")
        .start()
        .await
        .unwrap();
    let rdma = rpcrdma::connect(serving.rdma_addr().unwrap(), Transport::Rdma)
        .await
        .unwrap();
    let tcp = rpcrdma::connect(serving.tcp_addr().unwrap(), Transport::Tcp)
        .await
        .unwrap();
    for client in [&rdma, &tcp] {
        let x: u64 = client
            .call(PROGRAM, 1, ECHO, &7u64, &CallHints::new())
            .await
            .unwrap();
        assert_eq!(x, 7);
    }
    assert_eq!(rdma.transport(), Transport::Rdma);
    assert_eq!(tcp.transport(), Transport::Tcp);
    // Counters over RDMA only: one short call each way.
    let stats = rdma.rdma_stats().expect("an RDMA connection");
    assert_eq!((stats.calls_short, stats.replies_short), (1, 1));
    assert!(rdma.rdma_info().and_then(|i| i.version).is_some());
    assert!(tcp.rdma_stats().is_none());
    let server_side = serving.rdma_stats();
    assert_eq!(server_side.len(), 1);
    assert_eq!(server_side[0].calls_received, 1);
    // One memory budget for both transports: the TCP side charges the
    // RPC-over-RDMA listener's.
    assert_eq!(
        serving.server().memory().limit(),
        EngineConfig::server().max_shared_memory
    );
    serving.shutdown().await;
    // Shut down: both listeners are closed.
    assert!(
        rpcrdma::connect(serving.tcp_addr().unwrap(), Transport::Tcp)
            .await
            .is_err()
    );
    assert!(
        rpcrdma::connect(serving.rdma_addr().unwrap(), Transport::Rdma)
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tcp_client_on_the_rdma_port_is_told_to_use_rdma() {
    let serving = rpcrdma::serve(services())
        .rdma("127.0.0.1:0")
        .start()
        .await
        .unwrap();
    let client = rpcrdma::connect(serving.rdma_addr().unwrap(), Transport::Tcp)
        .await
        .unwrap();
    let err = client.null(PROGRAM, 1).await.unwrap_err();
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
    let text = Error::from(err).to_string();
    assert!(text.contains("not ONC RPC over TCP"), "{text}");
    assert!(text.contains("rpcrdma::Transport::Rdma"), "{text}");
    serving.shutdown().await;
}

#[tokio::test]
async fn errors_say_what_to_do() {
    let none = rpcrdma::serve(services()).start().await.unwrap_err();
    assert!(matches!(none, Error::NoListener));
    assert!(none.to_string().contains("ServeBuilder::rdma(ADDR)"));

    let bad = rpcrdma::connect("no-port-given", Transport::Tcp)
        .await
        .unwrap_err();
    assert!(matches!(bad, Error::Resolve { .. }), "{bad:?}");
    assert!(bad.to_string().contains("HOST:PORT"), "{bad}");

    // A TCP port in use: the listener error names the address.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let busy = rpcrdma::serve(services())
        .tcp(addr.to_string())
        .start()
        .await
        .unwrap_err();
    assert!(matches!(busy, Error::ListenTcp { .. }), "{busy:?}");
    assert!(busy.to_string().contains(&addr.to_string()), "{busy}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_with_takes_the_settings() {
    let serving = rpcrdma::serve(services())
        .rdma("127.0.0.1:0")
        .start()
        .await
        .unwrap();
    let options = ConnectOptions {
        engine: EngineConfig {
            max_message: 64 << 10,
            ..EngineConfig::client()
        },
        client: ClientConfig {
            timeout: Duration::from_secs(10),
            ..Default::default()
        },
        ..Default::default()
    };
    let client = rpcrdma::connect_with(serving.rdma_addr().unwrap(), &options)
        .await
        .unwrap();
    // A call above this client's max_message is refused locally, naming it.
    let big = rpcrdma::bytes::Bytes::from(vec![0u8; 128 << 10]);
    let err = client
        .call::<_, ()>(PROGRAM, 1, 9, &Opaque(big), &CallHints::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("EngineConfig::max_message (65536 bytes)"),
        "{err}"
    );
    serving.shutdown().await;
}

/// Variable-length opaque data as an argument.
struct Opaque(rpcrdma::bytes::Bytes);

impl rpcrdma::Marshal for Opaque {
    fn marshal(&self, enc: &mut rpcrdma::xdr::Encoder<'_>) {
        enc.put_opaque(&self.0);
    }
}
