//! The connection's reader task: it routes received replies to the calls
//! waiting for them ([`super::pending`]), runs received calls against the
//! connection's services within the concurrency limits, sweeps deadlines,
//! and closes the connection when asked or when the transport fails.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::Poll;

use tokio::sync::watch;
use tokio::time::Instant;
use tracing::Instrument;

use super::handle::Connection;
use super::pending::Outcome;
use super::state::{Conn, STOP_ABORT, STOP_NONE};
use crate::limit::{Limit, OwnedSlot};
use crate::service::{Dispatch, Services};
use crate::transport::{Received, Transport};
use crate::util::BoxFuture;
use crate::util::{Chain, Tracker};

/// Limits on the calls a connection runs at once.
#[derive(Debug, Clone)]
pub struct ServeLimits {
    /// Calls from the peer run concurrently on this connection (default
    /// 64). When reached, the connection stops reading until one finishes
    /// — replies included, so a handler that waits for the reply to a
    /// reverse-direction call on its own connection can stall until its
    /// timeout if the peer fills every slot meanwhile. (Over RDMA the
    /// peer's credits bound its calls below this limit.)
    pub per_connection: usize,
    /// A semaphore shared by several connections (a server's global
    /// limit), if any.
    pub global: Option<Arc<crate::Limit>>,
}

impl Default for ServeLimits {
    fn default() -> Self {
        Self {
            per_connection: 64,
            global: None,
        }
    }
}

pub(super) async fn run<T: Transport>(
    conn: Arc<Conn<T>>,
    handle: Connection,
    services: Arc<Services>,
    limits: ServeLimits,
    stop: watch::Receiver<u8>,
) {
    tracing::debug!("connection open");
    let tracker = Tracker::new();
    let local = Arc::new(Limit::new(limits.per_connection));
    let mut aborted = false;
    // The sweep timer lives across messages (registered once, cheap to
    // poll again); control work (stop, re-arm) arrives through `ctl`.
    let sweep = tokio::time::sleep_until(Instant::now());
    tokio::pin!(sweep);
    let mut armed_at: Option<Instant> = None;
    let stopping = |stop: &watch::Receiver<u8>| *stop.borrow() != STOP_NONE;
    let mut rearm = false;
    // The waker this task last gave the inline receive (`inline.rs`).
    let mut task_waker: Option<std::task::Waker> = None;
    macro_rules! rearm {
        () => {{
            let want = conn.pending.armed();
            if want != armed_at {
                if let Some(d) = want {
                    sweep.as_mut().reset(d);
                }
                armed_at = want;
            }
        }};
    }
    'outer: loop {
        if std::mem::take(&mut rearm) {
            rearm!();
        }
        // Control work first, then the sweep, then the next message: the
        // order a biased select would give, but looking at the control
        // flag and the timer's state without registering for them while
        // messages keep coming (registering costs a lock per message);
        // the task registers only when it is about to sleep.
        let step = {
            // A transport polled by any task (`inline.rs`) is polled here
            // with the connection's reader waker; its wake-ups reach this
            // task through `task_waker`. Otherwise through a future.
            let recv = (!conn.inline).then(|| conn.transport.recv());
            tokio::pin!(recv);
            std::future::poll_fn(|cx| {
                if conn.ctl.take() {
                    return Poll::Ready(Step::Ctl);
                }
                if armed_at.is_some() && sweep.is_elapsed() {
                    return Poll::Ready(Step::Sweep);
                }
                match recv.as_mut().as_pin_mut() {
                    Some(recv) => {
                        if let Poll::Ready(r) = recv.poll(cx) {
                            return Poll::Ready(Step::Recv(r));
                        }
                    }
                    None => {
                        if !task_waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                            conn.pending.set_task_waker(cx.waker());
                            task_waker = Some(cx.waker().clone());
                        }
                        if let Poll::Ready(r) = conn.poll_next_inline() {
                            return Poll::Ready(Step::Recv(r));
                        }
                    }
                }
                if conn.ctl.poll_wait(cx).is_ready() {
                    return Poll::Ready(Step::Ctl);
                }
                if armed_at.is_some() && sweep.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Step::Sweep);
                }
                Poll::Pending
            })
            .await
        };
        let received = match step {
            Step::Ctl => {
                conn.flush_if_due();
                if stopping(&stop) {
                    break;
                }
                rearm!();
                continue;
            }
            Step::Sweep => {
                armed_at = conn.pending.sweep(Instant::now());
                if let Some(d) = armed_at {
                    sweep.as_mut().reset(d);
                }
                continue;
            }
            Step::Recv(r) => r,
        };
        let (message, context) = match received {
            Err(e) => {
                tracing::debug!(error = %Chain(&e), "connection ended");
                aborted = true;
                break;
            }
            Ok(Received::Reply { xid, message }) => {
                conn.pending.complete(xid, Outcome::Reply(message));
                continue;
            }
            Ok(Received::CallFailed { xid, error }) => {
                conn.pending.complete(xid, Outcome::Failed(error));
                continue;
            }
            Ok(Received::Call { message, context }) => (message, context),
        };
        // Bound the calls in progress before reading more (a free slot is
        // taken without a future).
        let permits = match try_acquire(&local, limits.global.as_ref()) {
            Some(p) => p,
            None => {
                // Not reading for a while: the transport's own task does
                // its I/O meanwhile.
                conn.transport.recv_paused();
                let acquiring = acquire(&local, limits.global.as_ref());
                tokio::pin!(acquiring);
                loop {
                    tokio::select! {
                        biased;
                        () = conn.ctl.wait() => {
                            conn.flush_if_due();
                            if stopping(&stop) {
                                break 'outer;
                            }
                            // A re-arm request: handled once the permits are
                            // here (this wait is bounded by calls finishing).
                            rearm = true;
                        }
                        p = &mut acquiring => break p,
                    }
                }
            }
        };
        match services.dispatch(&message, &handle) {
            Dispatch::Drop(e) => {
                tracing::debug!(error = %Chain(&e), "dropping an undecodable call");
                // No reply will come: the transport gives back what it
                // holds for the call (an RDMA credit of its grant).
                conn.transport.retire_call(context);
                drop(permits);
            }
            Dispatch::Reply(_) if conn.aborted.load(Ordering::Acquire) => {
                // The handler aborted the connection.
                tracing::debug!("connection aborted; reply dropped");
                drop(permits);
            }
            Dispatch::Reply(reply) => {
                // An error status, or a handler that finished at once:
                // sent from here when the transport need not wait.
                match conn.transport.try_send_reply(context, reply) {
                    Ok(r) => {
                        if let Err(e) = r {
                            tracing::debug!(error = %Chain(&e), "cannot send reply");
                        }
                        drop(permits);
                    }
                    Err((context, reply)) => {
                        let conn = conn.clone();
                        let token = tracker.token();
                        run_or_spawn(Box::pin(
                            async move {
                                if let Err(e) = conn.transport.send_reply(context, reply).await {
                                    tracing::debug!(error = %Chain(&e), "cannot send reply");
                                }
                                drop((permits, token));
                            }
                            .in_current_span(),
                        ));
                    }
                }
            }
            Dispatch::Run { xid, future } => {
                let conn = conn.clone();
                let token = tracker.token();
                let span = tracing::debug_span!("rpc_serve", xid = format_args!("{xid:#010x}"));
                run_or_spawn(Box::pin(
                    async move {
                        let reply = future.await;
                        if conn.aborted.load(Ordering::Acquire) {
                            tracing::debug!("connection aborted; reply dropped");
                        } else if let Err(e) = conn.transport.send_reply(context, reply).await {
                            tracing::debug!(error = %Chain(&e), "cannot send reply");
                        }
                        drop((permits, token));
                    }
                    .instrument(span),
                ));
            }
        }
    }
    conn.transport.recv_paused();
    conn.pending.fail_all();
    // An abort (or a broken transport) closes at once so the peer notices;
    // a graceful stop lets calls in progress send their replies first.
    if aborted || *stop.borrow() == STOP_ABORT {
        conn.transport.close().await;
    } else if tracker.count() > 0 {
        tracing::debug!(in_flight = tracker.count(), "finishing calls in progress");
    }
    tracker.wait().await;
    conn.transport.close().await;
    conn.done.send_replace(true);
    tracing::debug!("connection closed");
}

/// What woke the reader.
enum Step<R> {
    /// Control work: a stop, or a sweep timer to set earlier.
    Ctl,
    /// The sweep timer fired.
    Sweep,
    /// The transport's next message (or its failure).
    Recv(R),
}

type Permits = (OwnedSlot, Option<OwnedSlot>);

/// The slots of a call, if both are free now.
fn try_acquire(local: &Arc<Limit>, global: Option<&Arc<Limit>>) -> Option<Permits> {
    let a = local.try_take_owned()?;
    let b = match global {
        Some(g) => Some(g.try_take_owned()?),
        None => None,
    };
    Some((a, b))
}

async fn acquire(local: &Arc<Limit>, global: Option<&Arc<Limit>>) -> Permits {
    let a = local.clone().take_owned().await;
    let b = match global {
        Some(g) => Some(g.clone().take_owned().await),
        None => None,
    };
    (a, b)
}

/// Runs a call to completion right here if it never has to wait (a NULL
/// call, a quick handler, a reply the transport takes at once), saving a
/// task switch; otherwise hands it to a new task, which polls it again with
/// a real waker.
fn run_or_spawn(mut task: BoxFuture<'static, ()>) {
    static NOOP: std::sync::OnceLock<std::task::Waker> = std::sync::OnceLock::new();
    let waker = NOOP.get_or_init(|| std::task::Waker::from(Arc::new(NoopWake)));
    let mut cx = std::task::Context::from_waker(waker);
    if task.as_mut().poll(&mut cx).is_pending() {
        tokio::spawn(task);
    }
}

struct NoopWake;

impl std::task::Wake for NoopWake {
    fn wake(self: Arc<Self>) {}
}
