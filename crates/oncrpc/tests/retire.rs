//! A call the server drops (RFC 5531 has no reply for an undecodable
//! header) is handed back to its transport with `Transport::retire_call`,
//! so a transport that holds something per call (an RPC-over-RDMA credit)
//! gets it back; calls it answers are not retired.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rpcrdma_oncrpc::mem::{self, MemCallContext, MemConfig, MemTransport};
use rpcrdma_oncrpc::{
    CallHints, Received, Server, ServerConfig, Services, Transport, TransportError,
};
use rpcrdma_xdr::Payload;

/// The server's end, counting retired calls.
struct Counting {
    inner: MemTransport,
    retired: Arc<AtomicUsize>,
}

impl Transport for Counting {
    type CallContext = MemCallContext;

    async fn send_call(&self, xid: u32, m: Payload, h: &CallHints) -> Result<(), TransportError> {
        self.inner.send_call(xid, m, h).await
    }
    async fn send_reply(&self, c: MemCallContext, m: Payload) -> Result<(), TransportError> {
        self.inner.send_reply(c, m).await
    }
    async fn recv(&self) -> Result<Received<MemCallContext>, TransportError> {
        self.inner.recv().await
    }
    fn retire_call(&self, context: MemCallContext) {
        self.retired.fetch_add(1, Ordering::SeqCst);
        drop(context);
    }
    async fn release(&self, xid: u32) {
        self.inner.release(xid).await;
    }
    async fn close(&self) {
        self.inner.close().await;
    }
    fn peer(&self) -> String {
        self.inner.peer()
    }
}

fn words(ws: &[u32]) -> Payload {
    Payload::inline_only(Bytes::from(
        ws.iter().flat_map(|w| w.to_be_bytes()).collect::<Vec<u8>>(),
    ))
}

#[tokio::test(flavor = "current_thread")]
async fn dropped_calls_are_retired_answered_ones_are_not() {
    let (client_end, server_end) = mem::pair(MemConfig::default());
    let retired = Arc::new(AtomicUsize::new(0));
    let server = Server::new(Services::new(), ServerConfig::default());
    server.serve(Counting {
        inner: server_end,
        retired: retired.clone(),
    });
    // Truncated after the program number: dropped, so retired.
    client_end
        .send_call(1, words(&[1, 0, 2, 7]), &CallHints::new())
        .await
        .unwrap();
    // A complete call to a program nobody serves: answered PROG_UNAVAIL.
    client_end
        .send_call(2, words(&[2, 0, 2, 7, 1, 0, 0, 0, 0, 0]), &CallHints::new())
        .await
        .unwrap();
    let got = tokio::time::timeout(Duration::from_secs(30), client_end.recv())
        .await
        .expect("an answer")
        .expect("a message");
    assert!(matches!(got, Received::Reply { xid: 2, .. }), "{got:?}");
    assert_eq!(retired.load(Ordering::SeqCst), 1);
    server.shutdown().await;
}
