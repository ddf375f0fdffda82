//! The RPC layer's side of sends written together
//! ([`Transport::try_send_call_batched`]): which calls it keeps back, and
//! that its reader flushes them even when the task whose turn justified
//! keeping them back never runs again. Over a transport whose wire is a
//! list the test reads and answers.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use parking_lot::Mutex;
use rpcrdma_xdr::{Encoder, Payload};

use super::{Connection, OpenAs, ServeLimits, Side, XidAlloc};
use crate::client::{Client, ClientConfig};
use crate::error::TransportError;
use crate::msg::{peek_kind, ReplyHeader};
use crate::service::Services;
use crate::transport::{CallHints, Received, Transport};

#[derive(Default)]
struct Wire {
    /// Calls on the wire (xids), in order.
    sent: Vec<u32>,
    /// Calls kept back, not yet on the wire.
    held: Vec<u32>,
    /// Every call ever kept back.
    ever_held: Vec<u32>,
    /// Flushes that put something on the wire.
    flushes: usize,
    /// Replies for the reader.
    replies: VecDeque<u32>,
    reader: Option<Waker>,
}

#[derive(Clone, Default)]
struct Fake(Arc<Mutex<Wire>>);

fn xid_of(message: &Payload) -> u32 {
    peek_kind(message.inline()).expect("a call header").0
}

impl Fake {
    fn sent(&self) -> Vec<u32> {
        self.0.lock().sent.clone()
    }

    /// The peer answers `xid`.
    fn answer(&self, xid: u32) {
        let w = {
            let mut w = self.0.lock();
            w.replies.push_back(xid);
            w.reader.take()
        };
        if let Some(w) = w {
            w.wake();
        }
    }
}

impl Transport for Fake {
    type CallContext = ();

    async fn send_call(
        &self,
        xid: u32,
        _message: Payload,
        _hints: &CallHints,
    ) -> Result<(), TransportError> {
        self.0.lock().sent.push(xid);
        Ok(())
    }

    fn try_send_call(
        &self,
        xid: u32,
        message: Payload,
        _hints: &CallHints,
    ) -> Result<Result<(), TransportError>, Payload> {
        assert_eq!(xid, xid_of(&message));
        let mut w = self.0.lock();
        // A send that is not kept back puts what was on the wire first.
        let held = std::mem::take(&mut w.held);
        w.sent.extend(held);
        w.sent.push(xid);
        Ok(Ok(()))
    }

    fn batches_sends(&self) -> bool {
        true
    }

    fn try_send_call_batched(
        &self,
        xid: u32,
        _message: Payload,
        _hints: &CallHints,
    ) -> Result<Result<(), TransportError>, Payload> {
        let mut w = self.0.lock();
        w.held.push(xid);
        w.ever_held.push(xid);
        Ok(Ok(()))
    }

    fn flush(&self) {
        let mut w = self.0.lock();
        if !w.held.is_empty() {
            let held = std::mem::take(&mut w.held);
            w.sent.extend(held);
            w.flushes += 1;
        }
    }

    async fn send_reply(&self, _context: (), _message: Payload) -> Result<(), TransportError> {
        Ok(())
    }

    async fn recv(&self) -> Result<Received<()>, TransportError> {
        std::future::poll_fn(|cx| {
            let mut w = self.0.lock();
            match w.replies.pop_front() {
                Some(xid) => {
                    let mut buf = bytes::BytesMut::new();
                    ReplyHeader::success(xid).encode(&mut Encoder::new(&mut buf));
                    Poll::Ready(Ok(Received::Reply {
                        xid,
                        message: Payload::inline_only(buf.freeze()),
                    }))
                }
                None => {
                    w.reader = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await
    }

    async fn release(&self, _xid: u32) {}

    fn try_release(&self, _xid: u32) -> bool {
        true
    }

    async fn close(&self) {}

    fn peer(&self) -> String {
        "fake".into()
    }
}

fn client_over(fake: &Fake) -> Client {
    let conn = Connection::open_with(
        fake.clone(),
        Arc::new(Services::new()),
        ServeLimits::default(),
        OpenAs {
            side: Side::Client,
            ready: false,
            xids: XidAlloc::shared(Some(100)),
            registry: None,
        },
    );
    let mut config = ClientConfig::default();
    config.timeout = Duration::from_secs(600);
    conn.client(config)
}

/// Lets every runnable task run (a current-thread runtime).
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_call_sent_while_another_reply_waits_for_its_task_is_kept_back_then_flushed() {
    let fake = Fake::default();
    let client = client_over(&fake);

    // A call alone goes to the wire at once.
    let first = tokio::spawn({
        let c = client.clone();
        async move { c.null(1, 1).await }
    });
    settle().await;
    let sent = fake.sent();
    assert_eq!(sent.len(), 1);
    fake.answer(sent[0]);
    first.await.unwrap().unwrap();
    assert!(fake.0.lock().ever_held.is_empty());

    // Call A is polled once and then never again: its reply lands in its
    // slot, and its task (this one) does not take it.
    let mut a = Box::pin(client.null(1, 1));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(a.as_mut().poll(&mut cx).is_pending());
    let xa = *fake.sent().last().unwrap();
    fake.answer(xa);
    settle().await;

    // Call B, sent meanwhile, is kept back (A's task is expected to send
    // next), and the reader, woken after the tasks already runnable,
    // flushes it although A's task never runs.
    let b = tokio::spawn({
        let c = client.clone();
        async move { c.null(1, 1).await }
    });
    settle().await;
    let (xb, flushes) = {
        let w = fake.0.lock();
        assert_eq!(w.ever_held.len(), 1, "B was kept back");
        assert!(w.held.is_empty(), "and flushed");
        (w.ever_held[0], w.flushes)
    };
    assert_eq!(flushes, 1);
    assert_eq!(*fake.sent().last().unwrap(), xb);
    fake.answer(xb);
    b.await.unwrap().unwrap();

    // A's outcome is still there for it.
    assert!(matches!(a.as_mut().poll(&mut cx), Poll::Ready(Ok(()))));

    // Nothing waits now: the next call goes at once.
    let c = tokio::spawn({
        let c = client.clone();
        async move { c.null(1, 1).await }
    });
    settle().await;
    let xc = *fake.sent().last().unwrap();
    fake.answer(xc);
    c.await.unwrap().unwrap();
    assert_eq!(fake.0.lock().ever_held.len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn the_calls_of_tasks_woken_by_one_batch_of_replies_go_out_together() {
    let fake = Fake::default();
    let client = client_over(&fake);
    // Eight tasks, each making two calls in turn.
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let c = client.clone();
            tokio::spawn(async move {
                c.null(1, 1).await?;
                c.null(1, 1).await
            })
        })
        .collect();
    settle().await;
    let first: Vec<u32> = fake.sent();
    assert_eq!(first.len(), 8);
    // The eight replies arrive together.
    for &x in &first {
        fake.answer(x);
    }
    settle().await;
    // Each task's second call: all but the last task's are kept back (a
    // reply still waited for its task when they were sent) and go out
    // with the last one, which is not kept back.
    let second: Vec<u32> = {
        let w = fake.0.lock();
        assert_eq!(w.sent.len(), 16);
        assert_eq!(w.ever_held.len(), 7);
        assert!(w.held.is_empty());
        w.sent[8..].to_vec()
    };
    for x in second {
        fake.answer(x);
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
}
