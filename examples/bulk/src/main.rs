//! The BULK program end to end: served over RPC-over-RDMA (software
//! iWARP) and ONC RPC over TCP, called with the client generated from
//! `bulk.x`, and the connections' counters read to show that PUT's data
//! went by RDMA Read (a Read chunk) and GET's by RDMA Write (a Write
//! chunk).
//!
//! `cargo run -p rpcrdma-example-bulk [SIZE_IN_MIB]` (default 4).

use std::error::Error;
use std::sync::Arc;

use rpcrdma::bytes::Bytes;
use rpcrdma::{Services, Transport};
use rpcrdma_example_bulk::bulk::{bulk_v1, GetArgs, GetRes, PutArgs, BULK_PROG, BULK_V1};
use rpcrdma_example_bulk::{checksum, Store};

fn main() -> Result<(), Box<dyn Error>> {
    let mib: usize = match std::env::args().nth(1) {
        Some(a) => a
            .parse()
            .map_err(|_| format!("SIZE_IN_MIB: a number, not {a:?}"))?,
        None => 4,
    };
    rpcrdma::block_on(run(mib << 20))
}

async fn run(size: usize) -> Result<(), Box<dyn Error>> {
    // The server: the generated `register` puts the Store behind BULK v1.
    let mut services = Services::new();
    bulk_v1::register(&mut services, Arc::new(Store::default()));
    let serving = rpcrdma::serve(services)
        .rdma("127.0.0.1:0")
        .tcp("127.0.0.1:0")
        .start()
        .await?;

    let data = Bytes::from(
        (0..size)
            .map(|i| (i * 7 + i / 4096) as u8)
            .collect::<Vec<u8>>(),
    );
    for (transport, addr) in [
        (Transport::Rdma, serving.rdma_addr()),
        (Transport::Tcp, serving.tcp_addr()),
    ] {
        let rpc = rpcrdma::connect(addr.ok_or("not listening")?, transport).await?;
        // NULL: bulk.x does not declare procedure 0; the server answers it.
        rpc.null(BULK_PROG, BULK_V1).await?;

        let bulk = bulk_v1::Client::new(rpc.client().clone());
        let put = bulk
            .put(PutArgs {
                name: "blob".into(),
                data: data.clone(),
            })
            .await?;
        if put.size as usize != size || put.checksum != checksum(&data) {
            return Err(format!(
                "{transport}: PUT stored {} bytes, checksum {:#x}",
                put.size, put.checksum
            )
            .into());
        }
        let got = match bulk
            .get(GetArgs {
                name: "blob".into(),
                count: size as u32,
            })
            .await?
        {
            GetRes::BulkOk(ok) => ok,
            GetRes::Default(status) => {
                return Err(format!("{transport}: GET answered {status:?}").into())
            }
        };
        if got.data != data || got.checksum != checksum(&data) {
            return Err(format!("{transport}: GET gave back other data").into());
        }
        println!("{transport}: PUT and GET of {} MiB verified", size >> 20);

        // How the data travelled: the client's counters of its RDMA
        // connection (None over TCP, where it went inline in the records)
        // and the server's of its RPC-over-RDMA connections.
        let Some(stats) = rpc.rdma_stats() else {
            println!("  the data went inline in the TCP records");
            continue;
        };
        println!(
            "  client: {} call(s) with Read chunks (PUT's data), {} reply(ies) in Write chunks (GET's data), {} short call(s)",
            stats.calls_chunked, stats.replies_chunked, stats.calls_short
        );
        let (reads, writes) = serving
            .rdma_stats()
            .iter()
            .fold((0, 0), |(r, w), s| (r + s.rdma_reads, w + s.rdma_writes));
        println!(
            "  server: {reads} RDMA Read(s) pulled PUT's data, {writes} RDMA Write(s) pushed GET's"
        );
        if stats.calls_chunked != 1 || stats.replies_chunked != 1 || reads == 0 || writes == 0 {
            return Err("the bulk data did not go by RDMA".into());
        }
    }
    serving.shutdown().await;
    Ok(())
}
