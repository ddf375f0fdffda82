//! Sends written together ("Sends written together" in the transport's
//! module docs): calls kept back by `try_send_call_batched` stay in the
//! engine's queue until a flush, a send that is not kept back or a poll
//! of the receive side, a release does not post them, and every one is
//! answered once posted.

mod common;

use bytes::BytesMut;
use common::{bounded, caps, client_config, Harness};
use rpcrdma_oncrpc::msg::{CallHeader, OpaqueAuth};
use rpcrdma_oncrpc::{CallHints, Received, Transport};
use rpcrdma_transport::{RdmaConnector, RdmaTransport};
use rpcrdma_xdr::{Encoder, Payload};

fn null_call(xid: u32) -> Payload {
    let mut b = BytesMut::new();
    CallHeader {
        xid,
        prog: rpcrdma_demoprog::PROGRAM,
        vers: rpcrdma_demoprog::VERSION,
        proc_: 0,
        cred: OpaqueAuth::none(),
        verf: OpaqueAuth::none(),
    }
    .encode(&mut Encoder::new(&mut b));
    Payload::inline_only(b.freeze())
}

/// The replies to `n` calls, in any order (their xids, sorted).
async fn replies<D: rpcrdma_verbs::Device>(t: &RdmaTransport<D>, n: usize) -> Vec<u32> {
    let mut got = Vec::new();
    while got.len() < n {
        match bounded("a reply", t.recv()).await.expect("recv") {
            Received::Reply { xid, .. } => got.push(xid),
            other => panic!("unexpected {other:?}"),
        }
    }
    got.sort_unstable();
    got
}

#[tokio::test]
async fn calls_kept_back_go_out_at_the_flush_and_are_answered() {
    let h = Harness::start().await;
    let t = RdmaConnector::new(h.client_dev.clone(), h.svc.local_addr(), client_config(2))
        .caps(caps())
        .open()
        .await
        .expect("connect");
    assert!(t.batches_sends());
    let hints = CallHints::new().max_results(0);

    // Eight calls kept back; a release of a call that is not there does
    // not post them.
    for xid in 1..=8 {
        t.try_send_call_batched(xid, null_call(xid), &hints)
            .expect("taken at once")
            .expect("sent");
        assert!(t.sends_held());
    }
    assert!(t.try_release(1000));
    assert!(t.sends_held(), "a release leaves them kept back");
    t.flush();
    assert!(!t.sends_held());
    assert_eq!(replies(&t, 8).await, (1..=8).collect::<Vec<_>>());

    // A call that is not kept back takes the ones kept back with it.
    t.try_send_call_batched(9, null_call(9), &hints)
        .expect("taken")
        .expect("sent");
    assert!(t.sends_held());
    t.try_send_call(10, null_call(10), &hints)
        .expect("taken")
        .expect("sent");
    assert!(!t.sends_held());
    assert_eq!(replies(&t, 2).await, vec![9, 10]);

    // A poll of the receive side posts them too.
    t.try_send_call_batched(11, null_call(11), &hints)
        .expect("taken")
        .expect("sent");
    assert!(t.sends_held());
    assert_eq!(replies(&t, 1).await, vec![11]);
    assert!(!t.sends_held());

    // Without anything kept back, a flush does nothing.
    t.flush();
    assert!(!t.sends_held());
    t.close().await;
}

#[tokio::test]
async fn many_calls_in_flight_are_all_answered() {
    // The RPC layer keeps calls back while other calls' replies wait for
    // their tasks, and the server keeps replies back while its reader
    // hands up a batch of calls: 64 tasks of 40 calls each, end to end.
    let h = Harness::start().await;
    let mut cfg = common::client_settings();
    cfg.max_in_flight = 256;
    let (client, _) = h.client(client_config(2), cfg);
    let tasks: Vec<_> = (0..64)
        .map(|_| {
            let c = client.clone();
            tokio::spawn(async move {
                for _ in 0..40 {
                    c.null(rpcrdma_demoprog::PROGRAM, rpcrdma_demoprog::VERSION)
                        .await?;
                }
                Ok::<_, rpcrdma_oncrpc::RpcError>(())
            })
        })
        .collect();
    for t in tasks {
        bounded("64 tasks of 40 NULL calls", t)
            .await
            .expect("task")
            .expect("calls");
    }
}
