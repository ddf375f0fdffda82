//! Rough figures for the demo program over ONC RPC/TCP on loopback:
//! NULL round trip (one outstanding), NULL rate (many outstanding), and
//! 1 MiB READ/WRITE throughput. Timing lives here, never in tests.
//!
//! ```text
//! cargo run --release -p rpcrdma-demoprog --example tcp_bench
//! ```

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use rpcrdma_demoprog::{pattern, serve_demo, DemoClient};
use rpcrdma_oncrpc::tcp::TcpConnector;
use rpcrdma_oncrpc::{Client, ClientConfig, Server, ServerConfig, Services};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut services = Services::new();
    serve_demo(&mut services);
    let server = Server::new(services, ServerConfig::default());
    let addr = server.serve_tcp("127.0.0.1:0").await?;
    let client = Client::connect(TcpConnector::new(addr), ClientConfig::default()).await?;
    let demo = DemoClient::new(client.clone());

    // Raw TCP ping-pong (4 bytes each way) for comparison.
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let raw = l.local_addr()?;
    tokio::spawn(async move {
        if let Ok((mut s, _)) = l.accept().await {
            let _ = s.set_nodelay(true);
            let mut b = [0u8; 4];
            while s.read_exact(&mut b).await.is_ok() {
                if s.write_all(&b).await.is_err() {
                    break;
                }
            }
        }
    });
    let mut s = tokio::net::TcpStream::connect(raw).await?;
    s.set_nodelay(true)?;
    let mut b = [0u8; 4];
    for _ in 0..200 {
        s.write_all(&b).await?;
        s.read_exact(&mut b).await?;
    }
    let t = Instant::now();
    for _ in 0..5000 {
        s.write_all(&b).await?;
        s.read_exact(&mut b).await?;
    }
    println!(
        "raw TCP ping-pong:                 {:>8.1} us",
        micros(t.elapsed() / 5000)
    );
    drop(s);

    // Warm up.
    for _ in 0..200 {
        demo.null().await?;
    }

    let n = 5000u32;
    let t = Instant::now();
    for _ in 0..n {
        demo.null().await?;
    }
    let rtt = t.elapsed() / n;
    println!("NULL round trip (1 outstanding):   {:>8.1} us", micros(rtt));

    let t = Instant::now();
    let tasks: Vec<_> = (0..32)
        .map(|_| {
            let d = demo.clone();
            tokio::spawn(async move {
                for _ in 0..1000 {
                    d.null().await.expect("NULL");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await?;
    }
    let rate = 32_000.0 / t.elapsed().as_secs_f64();
    println!("NULL rate (32 outstanding):        {:>8.0} calls/s", rate);

    const MIB: u32 = 1 << 20;
    let iters = 200u32;
    demo.read(1, MIB).await?;
    let t = Instant::now();
    for _ in 0..iters {
        demo.read(1, MIB).await?;
    }
    println!(
        "READ 1 MiB (1 outstanding):        {:>8.0} MiB/s",
        f64::from(iters) / t.elapsed().as_secs_f64()
    );

    let data = pattern(2, MIB as usize);
    let t = Instant::now();
    for _ in 0..iters {
        demo.write(data.clone()).await?;
    }
    println!(
        "WRITE 1 MiB (1 outstanding):       {:>8.0} MiB/s",
        f64::from(iters) / t.elapsed().as_secs_f64()
    );

    server.shutdown().await;
    Ok(())
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
