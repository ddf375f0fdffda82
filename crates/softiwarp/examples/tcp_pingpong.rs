//! The raw TCP baseline of `examples/pingpong.rs`: 64-octet ping-pong
//! between two threads (one current-thread runtime each) over loopback.

use std::sync::mpsc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn main() -> Res<()> {
    let n: usize = std::env::args().nth(1).map_or(Ok(100_000), |s| s.parse())?;
    let (tx, rx) = mpsc::channel();
    let rt = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    };
    let server = std::thread::spawn(move || -> Res<()> {
        rt()?.block_on(async move {
            let l = TcpListener::bind("127.0.0.1:0").await?;
            tx.send(l.local_addr()?)?;
            let (mut s, _) = l.accept().await?;
            s.set_nodelay(true)?;
            let mut m = [0u8; 64];
            for _ in 0..n {
                s.read_exact(&mut m).await?;
                s.write_all(&m).await?;
            }
            Ok(())
        })
    });
    let addr = rx.recv()?;
    rt()?.block_on(async move {
        let mut s = TcpStream::connect(addr).await?;
        s.set_nodelay(true)?;
        let mut m = [7u8; 64];
        let t0 = std::time::Instant::now();
        for _ in 0..n {
            s.write_all(&m).await?;
            s.read_exact(&mut m).await?;
        }
        println!(
            "64 B TCP round trip: {:.2} us",
            t0.elapsed().as_secs_f64() * 1e6 / n as f64
        );
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    })?;
    server.join().map_err(|_| "server thread panicked")??;
    Ok(())
}
