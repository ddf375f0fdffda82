//! The demo program over the RDMA-like in-memory transport (which enforces
//! the Upper Layer Binding: Write chunks, Reply chunks, inline threshold)
//! and over TCP under concurrency, including CALLBACKS and the callback
//! program in the reverse direction.

use bytes::Bytes;
use proptest::prelude::*;
use rpcrdma_demoprog::{
    checksum, pattern, pattern_mismatch, procs, serve_callbacks, serve_demo, ulb, CallbackArgs,
    CallbackCount, CallbackRes, CbEchoData, DemoClient, DemoError, DemoStat, ReadArgs, ReadRes,
    WriteArgs, WriteRes, CB_MAX_ECHO, MAX_CALLBACKS, MAX_DATA, MAX_ECHO, PROGRAM, VERSION,
};
use rpcrdma_demoprog::{xdr, ReadResok};
use rpcrdma_oncrpc::mem::{self, MemConfig, MemConnector};
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{
    CallHints, Client, ClientConfig, Marshal, RpcError, Server, ServerConfig, Services, Unmarshal,
};
use rpcrdma_xdr::{Decoder, Encoder, PayloadEncoder, XdrError};

/// Raw `opaque<>` bytes, for calls that bypass the stubs and their limits.
#[derive(Debug)]
struct Raw(Bytes);

impl Marshal for Raw {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        enc.put_opaque(&self.0);
    }
}

impl Unmarshal for Raw {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        dec.get_opaque_bytes(u32::MAX).map(Raw)
    }
}

fn server() -> Server {
    let mut s = Services::new();
    serve_demo(&mut s);
    Server::new(s, ServerConfig::default())
}

fn mem_rig() -> (Server, MemConnector) {
    let server = server();
    let (connector, mut listener) = mem::listener(MemConfig::default());
    let s = server.clone();
    tokio::spawn(async move {
        while let Some(t) = listener.accept().await {
            s.serve(t);
        }
    });
    (server, connector)
}

const SIZES: [u32; 12] = [
    0,
    1,
    3,
    4,
    5,
    1000,
    1023,
    1024,
    1025,
    4096,
    100_003,
    1 << 20,
];

#[tokio::test]
async fn every_procedure_over_the_rdma_like_transport() {
    let (server, connector) = mem_rig();
    let demo = DemoClient::new(Client::new(connector.clone(), ClientConfig::default()));
    demo.null().await.unwrap();
    for n in [0usize, 1, 5, 1024] {
        let data = pattern(n as u64, n);
        assert_eq!(demo.echo(data.clone()).await.unwrap(), data);
    }
    for (i, &n) in SIZES.iter().enumerate() {
        let data = demo.read_verified(i as u64 + 17, n).await.unwrap();
        assert_eq!(data.len(), n as usize);
        demo.write_verified(pattern(i as u64, n as usize))
            .await
            .unwrap();
    }
    let stats = connector.probes()[0].stats();
    // Large WRITEs moved their data in Read chunks; large READ replies
    // came back in Write chunks (counted on the server side).
    assert!(stats.read_chunks >= 5, "{stats:?}");
    assert_eq!(stats.errors, 0);
    server.shutdown().await;
}

#[tokio::test]
async fn read_too_big_returns_a_status_with_the_write_chunk_unused() {
    let (server, connector) = mem_rig();
    let demo = DemoClient::new(Client::new(connector, ClientConfig::default()));
    match demo.read(1, MAX_DATA + 1).await.unwrap() {
        ReadRes::Default(s) => assert_eq!(s, DemoStat::DemoToobig),
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(
        demo.read_verified(1, MAX_DATA + 1).await,
        Err(DemoError::Status(DemoStat::DemoToobig))
    ));
    server.shutdown().await;
}

#[tokio::test]
async fn limits_are_enforced_on_both_sides() {
    let (server, connector) = mem_rig();
    let client = Client::new(connector, ClientConfig::default());
    let demo = DemoClient::new(client.clone());
    assert!(matches!(
        demo.echo(Bytes::from(vec![0; MAX_ECHO as usize + 1])).await,
        Err(DemoError::TooLarge { .. })
    ));
    // Bypassing the stub: the server refuses an ECHO over 1024 bytes.
    let hints = CallHints::new().max_results(8 + 2048);
    let e = client
        .call::<_, Raw>(
            PROGRAM,
            VERSION,
            procs::ECHO,
            &Raw(Bytes::from(vec![0; 1025])),
            &hints,
        )
        .await
        .unwrap_err();
    assert!(matches!(e, RpcError::GarbageArgs), "{e}");
    server.shutdown().await;
}

/// Many clients, every procedure, every byte checked, over TCP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_demo_storm_over_tcp() {
    let server = server();
    let addr = server.serve_tcp("127.0.0.1:0").await.unwrap();
    let client = Client::new(TcpConnector::new(addr), ClientConfig::default());
    let mut tasks = Vec::new();
    for t in 0..16u64 {
        let demo = DemoClient::new(client.clone());
        tasks.push(tokio::spawn(async move {
            let mut done = 0;
            for i in 0..20u64 {
                let seed = t * 1000 + i;
                let n = ((seed * 7919) % 70_000) as u32;
                let data = demo.read_verified(seed, n).await.unwrap();
                demo.write_verified(data).await.unwrap();
                let e = pattern(seed, (seed % 1024) as usize);
                assert_eq!(demo.echo(e.clone()).await.unwrap(), e);
                demo.null().await.unwrap();
                done += 4;
            }
            done
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    assert_eq!(total, 16 * 20 * 4);
    server.shutdown().await;
}

#[tokio::test]
async fn sixteen_mebibytes_over_tcp() {
    let server = server();
    let addr = server.serve_tcp("127.0.0.1:0").await.unwrap();
    let demo = DemoClient::new(Client::new(
        TcpConnector::new(addr),
        ClientConfig::default(),
    ));
    let data = demo.read_verified(99, MAX_DATA).await.unwrap();
    demo.write_verified(data).await.unwrap();
    server.shutdown().await;
}

#[test]
fn pattern_checks_catch_every_byte() {
    let d = pattern(5, 1000);
    assert_eq!(pattern_mismatch(5, &d), None);
    for at in [0usize, 1, 7, 8, 500, 999] {
        let mut v = d.to_vec();
        v[at] ^= 1;
        assert_eq!(pattern_mismatch(5, &v), Some(at));
    }
    assert_eq!(checksum(b"123456789"), 0xe306_9283, "crc32c check value");
}

/// The binding's maximum result sizes are exact for the largest reply.
#[test]
fn ulb_maximum_result_sizes_hold() {
    for n in [0u32, 1, 2, 3, 4, 5, 1023, 1024, 65_537] {
        let res = ReadRes::DemoOk(ReadResok {
            crc32c: 0,
            data: pattern(0, n as usize),
        });
        let mut pe = PayloadEncoder::new();
        res.marshal(&mut pe.encoder());
        let p = pe.finish();
        assert_eq!(p.stream_len() as u32, ulb::read_max_results(n), "count {n}");
        assert_eq!(ulb::read(n).ddp_results(), &[n]);
        // Only the length word and fixed fields stay inline.
        assert_eq!(p.inline().len(), 12);
        // And that is the reduced maximum the binding states (so a READ
        // needs no Reply chunk, spec note N13).
        let h = ulb::read(n);
        let header = h.max_reply_size().unwrap() - h.results_limit().unwrap();
        assert_eq!(
            h.max_reduced_reply_size().unwrap() - header,
            p.inline().len() as u32,
            "count {n}"
        );
    }
    let mut pe = PayloadEncoder::new();
    xdr::encode_echo_data(&Bytes::from(vec![1; 1024]), &mut pe.encoder());
    assert_eq!(
        pe.finish().stream_len() as u32,
        ulb::echo().results_limit().unwrap()
    );
    let mut pe = PayloadEncoder::new();
    WriteRes {
        count: 1,
        crc32c: 2,
    }
    .marshal(&mut pe.encoder());
    assert_eq!(
        pe.finish().stream_len() as u32,
        ulb::write().results_limit().unwrap()
    );
    assert_eq!(ulb::null().results_limit(), Some(0));
}

proptest! {
    #[test]
    fn types_round_trip_through_payloads(seed: u64, count in 0u32..5000, data in proptest::collection::vec(any::<u8>(), 0..3000)) {
        let data = Bytes::from(data);
        let args = ReadArgs { seed, count };
        let mut pe = PayloadEncoder::new();
        args.marshal(&mut pe.encoder());
        let p = pe.finish();
        let mut d = Decoder::with_ddp(&p);
        prop_assert_eq!(ReadArgs::unmarshal(&mut d).unwrap(), args);
        prop_assert!(d.expect_end().is_ok());

        let status = DemoStat::from_value((count % 2 + 1) as i32).unwrap();
        for value in [ReadRes::DemoOk(ReadResok { crc32c: seed as u32, data: data.clone() }), ReadRes::Default(status)] {
            let mut pe = PayloadEncoder::new();
            value.marshal(&mut pe.encoder());
            let p = pe.finish();
            let mut d = Decoder::with_ddp(&p);
            prop_assert_eq!(ReadRes::unmarshal(&mut d).unwrap(), value);
            prop_assert!(d.expect_end().is_ok());
        }

        let w = WriteArgs { data: data.clone() };
        let mut pe = PayloadEncoder::new();
        w.marshal(&mut pe.encoder());
        let p = pe.finish();
        prop_assert_eq!(p.has_items(), !data.is_empty());
        let mut d = Decoder::with_ddp(&p);
        prop_assert_eq!(WriteArgs::unmarshal(&mut d).unwrap(), w);
        prop_assert!(d.expect_end().is_ok());
        // The flattened stream decodes the same way (what TCP carries).
        let flat = p.flatten();
        let mut d = Decoder::from_bytes(&flat);
        prop_assert_eq!(WriteArgs::unmarshal(&mut d).unwrap().data, data);
    }
}

// ----- CALLBACKS and the callback program (reverse direction) ------------

fn callback_client(connector: MemConnector) -> (DemoClient, CallbackCount) {
    let mut services = Services::new();
    let served = serve_callbacks(&mut services);
    let mut config = ClientConfig::default();
    config.services = std::sync::Arc::new(services);
    (DemoClient::new(Client::new(connector, config)), served)
}

/// Every size class of CB_ECHO (Short, around the threshold, Long both
/// ways) and CB_NULL, over the RDMA-like transport, which fails a call
/// whose callback binding is wrong (a reply larger than its Reply chunk).
#[tokio::test]
async fn callbacks_over_the_rdma_like_transport() {
    let (server, connector) = mem_rig();
    let (demo, served) = callback_client(connector.clone());
    assert_eq!(demo.callbacks(5, 0, 0).await.unwrap(), 0, "readiness only");
    assert_eq!(demo.callbacks(5, 3, 0).await.unwrap(), 3, "CB_NULL");
    let mut expected = 3;
    for size in [1u32, 3, 1000, 1015, 1016, 1024, 4096, 20_000, CB_MAX_ECHO] {
        assert_eq!(demo.callbacks(5, 2, size).await.unwrap(), 2, "size {size}");
        expected += 2;
    }
    assert_eq!(served.get(), expected);
    // The server's end sent the callbacks; large ones as Long calls.
    let client_side = connector.probes()[0].stats();
    assert!(client_side.reply_chunks >= 6, "{client_side:?}");
    assert_eq!(client_side.errors, 0);
    // MAX_CALLBACKS at once.
    assert_eq!(
        demo.callbacks(6, MAX_CALLBACKS, 16).await.unwrap(),
        MAX_CALLBACKS
    );
    server.shutdown().await;
}

#[tokio::test]
async fn callbacks_over_tcp() {
    let server = server();
    let addr = server.serve_tcp("127.0.0.1:0").await.unwrap();
    let mut services = Services::new();
    let served = serve_callbacks(&mut services);
    let mut config = ClientConfig::default();
    config.services = std::sync::Arc::new(services);
    let demo = DemoClient::new(Client::new(TcpConnector::new(addr), config));
    assert_eq!(demo.callbacks(9, 16, 3000).await.unwrap(), 16);
    assert_eq!(served.get(), 16);
    // A client that serves nothing: over TCP the calls reach it and are
    // answered PROG_UNAVAIL, so none succeeds.
    let plain = DemoClient::new(Client::new(
        TcpConnector::new(addr),
        ClientConfig::default(),
    ));
    assert_eq!(plain.callbacks(10, 4, 0).await.unwrap(), 0);
    server.shutdown().await;
}

#[tokio::test]
async fn callbacks_limits_are_enforced_on_both_sides() {
    let (server, connector) = mem_rig();
    let (demo, served) = callback_client(connector);
    assert!(matches!(
        demo.callbacks(1, MAX_CALLBACKS + 1, 0).await,
        Err(DemoError::TooLarge { .. })
    ));
    assert!(matches!(
        demo.callbacks(1, 1, CB_MAX_ECHO + 1).await,
        Err(DemoError::TooLarge { .. })
    ));
    // Bypassing the stub: the server refuses them (GARBAGE_ARGS).
    for (count, size) in [(MAX_CALLBACKS + 1, 0), (1, CB_MAX_ECHO + 1), (u32::MAX, 0)] {
        let args = CallbackArgs {
            client_id: 1,
            count,
            size,
        };
        let e = demo
            .client()
            .call::<_, CallbackRes>(PROGRAM, VERSION, procs::CALLBACKS, &args, &ulb::callbacks())
            .await
            .unwrap_err();
        assert!(matches!(e, RpcError::GarbageArgs), "{e}");
    }
    assert_eq!(served.get(), 0);
    server.shutdown().await;
}

/// The callback program's binding and CALLBACKS' results are exact for
/// the largest reply.
#[test]
fn callback_ulb_sizes_hold() {
    for n in [0u32, 1, 2, 3, 4, 5, 1023, 1024, CB_MAX_ECHO] {
        let mut pe = PayloadEncoder::new();
        xdr::encode_cb_echo_data(&pattern(0, n as usize), &mut pe.encoder());
        let p = pe.finish();
        assert!(!p.has_items(), "CB_ECHO has no DDP-eligible item");
        assert_eq!(
            p.stream_len() as u32,
            ulb::cb_echo(n).results_limit().unwrap(),
            "len {n}"
        );
        assert!(ulb::cb_echo(n).ddp_results().is_empty());
    }
    let mut pe = PayloadEncoder::new();
    CallbackRes::DemoOk(7).marshal(&mut pe.encoder());
    assert_eq!(
        pe.finish().stream_len() as u32,
        ulb::callbacks().results_limit().unwrap()
    );
    assert_eq!(ulb::cb_null().results_limit(), Some(0));
}

proptest! {
    #[test]
    fn callback_types_round_trip(client_id: u64, count in 0..=MAX_CALLBACKS, size in 0..=CB_MAX_ECHO, status in 1u32..10, data in proptest::collection::vec(any::<u8>(), 0..2000)) {
        let args = CallbackArgs { client_id, count, size };
        let mut pe = PayloadEncoder::new();
        args.marshal(&mut pe.encoder());
        let p = pe.finish();
        let mut d = Decoder::with_ddp(&p);
        prop_assert_eq!(CallbackArgs::unmarshal(&mut d).unwrap(), args);
        prop_assert!(d.expect_end().is_ok());
        for value in [CallbackRes::DemoOk(count), CallbackRes::Default(DemoStat::from_value((status % 2 + 1) as i32).unwrap())] {
            let mut pe = PayloadEncoder::new();
            value.marshal(&mut pe.encoder());
            let p = pe.finish();
            let mut d = Decoder::with_ddp(&p);
            prop_assert_eq!(CallbackRes::unmarshal(&mut d).unwrap(), value);
            prop_assert!(d.expect_end().is_ok());
        }
        let e: CbEchoData = Bytes::from(data);
        let mut pe = PayloadEncoder::new();
        xdr::encode_cb_echo_data(&e, &mut pe.encoder());
        let p = pe.finish();
        let mut d = Decoder::with_ddp(&p);
        prop_assert_eq!(xdr::decode_cb_echo_data(&mut d).unwrap(), e);
        prop_assert!(d.expect_end().is_ok());
    }

    /// Arbitrary bytes never panic the CALLBACKS argument decoder, and
    /// whatever decodes encodes back to the same bytes (the limits on
    /// count and size are the server's: `callbacks_limits_are_enforced_on_both_sides`).
    #[test]
    fn callback_args_decoder_is_total(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
        let b = Bytes::from(bytes);
        let mut d = Decoder::from_bytes(&b);
        if let Ok(a) = CallbackArgs::unmarshal(&mut d) {
            prop_assert_eq!(&a.to_xdr()[..], &b[..d.position()]);
        }
    }
}
