//! A new queue pair holds incoming traffic until its consumer starts it
//! (first receive or send posted, or a completion-queue wait): a Send that
//! arrives between `accept` returning and the consumer's first `post_recv`
//! must find the receive, even on a multi-threaded runtime where the
//! queue pair's I/O task may run before the consumer's next line.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use rpcrdma_softiwarp::{Options, P2pMode, SoftIwarp};
use rpcrdma_verbs::{
    CompletionQueue, ConnectRequest, Device, Listener, QpParams, QueuePair, RecvWr, SendWr, Sge,
    WcOpcode,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_racing_the_first_post_recv_is_held_not_dropped() {
    // No initiator delay and no RTR: the client's Send leaves right after
    // the MPA Reply.
    let options = Options {
        p2p: P2pMode::Off,
        first_fpdu_delay: Duration::ZERO,
        ..Options::default()
    };
    let dev = SoftIwarp::new();
    let listener = dev
        .listen("127.0.0.1:0".parse().unwrap(), options.clone())
        .await
        .unwrap();
    let addr = listener.local_addr();
    let server = {
        let dev = dev.clone();
        tokio::spawn(async move {
            let req = listener.accept().await.unwrap();
            let (pd, cq) = (
                dev.alloc_pd().expect("protection domain"),
                dev.create_cq(16).expect("completion queue"),
            );
            let params = QpParams::new(&pd, &cq, Options::default());
            let qp = req.accept(params, Bytes::new()).await.unwrap();
            // The consumer is slow to post its receive: the client's Send
            // is already in the socket by then.
            tokio::time::sleep(Duration::from_millis(30)).await;
            qp.post_recv(RecvWr {
                wr_id: 1,
                buf: BytesMut::zeroed(64),
            })
            .unwrap();
            let mut wcs = Vec::new();
            while wcs.is_empty() {
                cq.wait().await;
                cq.poll(&mut wcs, 4);
            }
            (qp, wcs.remove(0))
        })
    };
    let (pd, cq) = (
        dev.alloc_pd().expect("protection domain"),
        dev.create_cq(16).expect("completion queue"),
    );
    let params = QpParams::new(&pd, &cq, options);
    let (qp, _) = dev.connect(addr, params, Bytes::new()).await.unwrap();
    qp.post_send(SendWr::send(
        7,
        vec![Sge::Bytes(Bytes::from_static(b"early"))],
    ))
    .unwrap();
    let (_sqp, wc) = tokio::time::timeout(Duration::from_secs(30), server)
        .await
        .expect("server done in time")
        .unwrap();
    assert_eq!(wc.opcode, WcOpcode::Recv);
    assert!(wc.status.is_ok(), "{:?}", wc.status);
    assert_eq!(wc.data(), Some(&b"early"[..]));
    drop(qp);
}
