//! The example runs (`cargo test` builds and runs it), and the counters
//! it reads to show that bulk data went by RDMA do tell the forms apart:
//! a PUT small enough to go inline moves nothing by RDMA.

use std::process::Command;
use std::sync::Arc;

use rpcrdma::bytes::Bytes;
use rpcrdma::{Services, Transport};
use rpcrdma_example_bulk::bulk::{bulk_v1, GetArgs, GetRes, PutArgs, BULK_PROG, BULK_V1};
use rpcrdma_example_bulk::{checksum, Store};

#[test]
fn the_example_runs_and_shows_rdma_reads_and_writes() {
    let out = Command::new(env!("CARGO_BIN_EXE_bulk"))
        .arg("1")
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for line in [
        "RPC-over-RDMA: PUT and GET of 1 MiB verified",
        "  client: 1 call(s) with Read chunks (PUT's data), 1 reply(ies) in Write chunks (GET's data)",
        "  server: 1 RDMA Read(s) pulled PUT's data, 1 RDMA Write(s) pushed GET's",
        "ONC RPC over TCP: PUT and GET of 1 MiB verified",
        "  the data went inline in the TCP records",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
}

// tokio through the facade: the example depends on `rpcrdma` alone.
#[rpcrdma::tokio::test(crate = "rpcrdma::tokio", flavor = "multi_thread", worker_threads = 2)]
async fn small_data_goes_inline_and_large_data_by_rdma() {
    let mut services = Services::new();
    bulk_v1::register(&mut services, Arc::new(Store::default()));
    let serving = rpcrdma::serve(services)
        .rdma("127.0.0.1:0")
        .start()
        .await
        .unwrap();
    let rpc = rpcrdma::connect(serving.rdma_addr().unwrap(), Transport::Rdma)
        .await
        .unwrap();
    // Procedure 0 answers though bulk.x does not declare it.
    rpc.null(BULK_PROG, BULK_V1).await.unwrap();
    let bulk = bulk_v1::Client::new(rpc.client().clone());

    // 100 bytes fit the 4 KiB inline threshold: a Short call, no RDMA.
    let small = Bytes::from_static(&[5; 100]);
    let put = bulk
        .put(PutArgs {
            name: "small".into(),
            data: small.clone(),
        })
        .await
        .unwrap();
    assert_eq!(put.checksum, checksum(&small));
    let stats = rpc.rdma_stats().unwrap();
    assert_eq!(stats.calls_chunked, 0);
    assert_eq!(reads_and_writes(&serving), (0, 0));

    // 256 KiB: a Read chunk, pulled with RDMA Read.
    let large = Bytes::from(vec![9; 256 << 10]);
    bulk.put(PutArgs {
        name: "large".into(),
        data: large.clone(),
    })
    .await
    .unwrap();
    assert_eq!(rpc.rdma_stats().unwrap().calls_chunked, 1);
    let (reads, writes) = reads_and_writes(&serving);
    assert!(reads >= 1 && writes == 0, "{reads} {writes}");

    // GET of it: a Write chunk of the call's count, filled by RDMA Write.
    let GetRes::BulkOk(got) = bulk
        .get(GetArgs {
            name: "large".into(),
            count: 256 << 10,
        })
        .await
        .unwrap()
    else {
        panic!("GET failed")
    };
    assert_eq!(got.data, large);
    assert_eq!(rpc.rdma_stats().unwrap().replies_chunked, 1);
    assert!(reads_and_writes(&serving).1 >= 1);

    // Errors of the program travel as its status.
    assert!(matches!(
        bulk.get(GetArgs {
            name: "none".into(),
            count: 1
        })
        .await
        .unwrap(),
        GetRes::Default(rpcrdma_example_bulk::bulk::BulkStat::BulkNoent)
    ));
    serving.shutdown().await;
}

fn reads_and_writes(serving: &rpcrdma::Serving) -> (u64, u64) {
    serving
        .rdma_stats()
        .iter()
        .fold((0, 0), |(r, w), s| (r + s.rdma_reads, w + s.rdma_writes))
}
