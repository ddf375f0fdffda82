//! 64-octet Send/Recv ping-pong between two threads (one current-thread
//! runtime each) over loopback, for profiling the provider's per-message
//! cost: `cargo run --release -p rpcrdma-softiwarp --example pingpong -- 100000`
//! (under `valgrind --tool=callgrind`, two counts give the instructions
//! per round trip).

use std::sync::mpsc;

use bytes::{Bytes, BytesMut};
use rpcrdma_softiwarp::{Options, SoftIwarp};
use rpcrdma_verbs::{
    CompletionQueue, ConnectRequest, Device, Listener, QpParams, QueuePair, RecvWr, SendWr, Sge,
    WorkCompletion,
};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The next completion, as a connection's reader waits for it: poll the
/// queue, and when it is empty wait with `poll_wait` (the provider reads
/// the socket on this task), as the RPC-over-RDMA transport does.
async fn next(cq: &rpcrdma_softiwarp::Cq, out: &mut Vec<WorkCompletion>) -> WorkCompletion {
    loop {
        if let Some(wc) = out.pop() {
            return wc;
        }
        if cq.poll(out, 16) == 0 {
            std::future::poll_fn(|cx| cq.poll_wait(cx)).await;
        }
    }
}

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
            let dev = SoftIwarp::new();
            let l = dev
                .listen("127.0.0.1:0".parse()?, Options::default())
                .await?;
            tx.send(l.local_addr())?;
            let (pd, cq) = (
                dev.alloc_pd().expect("protection domain"),
                dev.create_cq(256).expect("completion queue"),
            );
            let params = QpParams::new(&pd, &cq, Options::default());
            let qp = l.accept().await?.accept(params, Bytes::new()).await?;
            for i in 0..8 {
                qp.post_recv(RecvWr {
                    wr_id: i,
                    buf: BytesMut::zeroed(64),
                })?;
            }
            let msg = Bytes::from(vec![1u8; 64]);
            let mut out = Vec::new();
            for _ in 0..n {
                let wc = next(&cq, &mut out).await;
                let buf = wc.buf.unwrap_or_else(|| BytesMut::zeroed(64));
                qp.post_recv(RecvWr {
                    wr_id: wc.wr_id,
                    buf,
                })?;
                let mut wr = SendWr::send(0, vec![Sge::Bytes(msg.clone())]);
                wr.signaled = false;
                qp.post_send(wr)?;
            }
            // The I/O task reads again (it sees the peer's close).
            cq.pause();
            qp.closed().await;
            Ok(())
        })
    });
    let addr = rx.recv()?;
    rt()?.block_on(async move {
        let dev = SoftIwarp::new();
        let (pd, cq) = (
            dev.alloc_pd().expect("protection domain"),
            dev.create_cq(256).expect("completion queue"),
        );
        let params = QpParams::new(&pd, &cq, Options::default());
        let (qp, _) = dev.connect(addr, params, Bytes::new()).await?;
        for i in 0..8 {
            qp.post_recv(RecvWr {
                wr_id: i,
                buf: BytesMut::zeroed(64),
            })?;
        }
        let msg = Bytes::from(vec![2u8; 64]);
        let mut out = Vec::new();
        let t0 = std::time::Instant::now();
        for _ in 0..n {
            let mut wr = SendWr::send(0, vec![Sge::Bytes(msg.clone())]);
            wr.signaled = false;
            qp.post_send(wr)?;
            let wc = next(&cq, &mut out).await;
            let buf = wc.buf.unwrap_or_else(|| BytesMut::zeroed(64));
            qp.post_recv(RecvWr {
                wr_id: wc.wr_id,
                buf,
            })?;
        }
        println!(
            "64 B Send/Recv round trip: {:.2} us",
            t0.elapsed().as_secs_f64() * 1e6 / n as f64
        );
        cq.pause();
        qp.disconnect().await;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    })?;
    server.join().map_err(|_| "server thread panicked")??;
    Ok(())
}
