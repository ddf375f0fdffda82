//! Completion queues, driven from tokio through the completion channel's
//! file descriptor (or by polling, in polling mode).

use rpcrdma_sync::{lock, Signal};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::task::{Context, Poll};

use rpcrdma_verbs::{CompletionQueue, Errno, ResourceError, WorkCompletion};
use tokio::io::unix::AsyncFd;
use tokio::sync::Notify;

use super::device::DevInner;
use super::fd::{register, set_nonblocking, FdRef};
use super::ffi;
use super::qp::QpShared;

/// Completions polled from the device per call.
const BATCH: usize = 32;

pub(crate) struct CqState {
    /// Translated completions, in order, waiting for `poll`.
    pub(crate) ready: VecDeque<WorkCompletion>,
    /// Queue pairs feeding this queue, by queue pair number.
    pub(crate) qps: HashMap<u32, Weak<QpShared>>,
}

struct CqRes {
    cq: *mut ffi::ibv_cq,
    ch: *mut ffi::ibv_comp_channel,
    _dev: Arc<DevInner>,
}

impl Drop for CqRes {
    fn drop(&mut self) {
        // SAFETY: every queue pair using the queue holds an Arc to it, so
        // none is left; every event taken was acknowledged.
        unsafe {
            if ffi::ibv_destroy_cq(self.cq) != 0 {
                tracing::warn!("ibv_destroy_cq failed");
            }
            if ffi::ibv_destroy_comp_channel(self.ch) != 0 {
                tracing::warn!("ibv_destroy_comp_channel failed");
            }
        }
    }
}

pub(crate) struct CqInner {
    // Declared first: deregistered from tokio before `res` closes the fd.
    afd: OnceLock<Option<AsyncFd<FdRef>>>,
    notify: Notify,
    /// Wakes the task polling [`CompletionQueue::poll_wait`] (`notify` is
    /// for `wait` futures).
    signal: Signal,
    /// `poll_wait`'s retry timer when the channel could not be registered
    /// with the runtime.
    retry: Mutex<Option<std::pin::Pin<Box<tokio::time::Sleep>>>>,
    state: Mutex<CqState>,
    capacity: usize,
    polling: bool,
    fd: RawFd,
    res: CqRes,
}

// SAFETY: ibv_cq and ibv_comp_channel may be used from any thread; our
// state is behind a mutex.
unsafe impl Send for CqInner {}
// SAFETY: as above.
unsafe impl Sync for CqInner {}

/// A completion queue of an rdma-core device.
#[derive(Clone)]
pub struct Cq {
    pub(crate) inner: Arc<CqInner>,
}

impl std::fmt::Debug for Cq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cq")
            .field("capacity", &self.inner.capacity)
            .field("polling", &self.inner.polling)
            .finish()
    }
}

pub(crate) fn create_cq(dev: &Arc<DevInner>, capacity: usize) -> Result<Cq, ResourceError> {
    dev.limits().check_cq(capacity)?;
    let fail = |what: &'static str| ResourceError::Device {
        what,
        errno: Errno(ffi::errno()),
    };
    // SAFETY: ctx is the device's live context.
    let ch = unsafe { ffi::ibv_create_comp_channel(dev.ctx) };
    if ch.is_null() {
        return Err(fail("a completion channel"));
    }
    let cqe = capacity.max(1) as std::ffi::c_int;
    // SAFETY: ctx and ch are live; no context pointer is used.
    let cq = unsafe { ffi::ibv_create_cq(dev.ctx, cqe, std::ptr::null_mut(), ch, 0) };
    if cq.is_null() {
        let e = fail("a completion queue");
        // SAFETY: ch came from ibv_create_comp_channel and has no CQ.
        unsafe { ffi::ibv_destroy_comp_channel(ch) };
        return Err(e);
    }
    // SAFETY: ch is live.
    let fd = unsafe { ffi::rs_comp_channel_fd(ch) };
    if let Err(e) = set_nonblocking(fd) {
        tracing::warn!(error = %e, "cannot make the completion channel non-blocking");
    }
    Ok(Cq {
        inner: Arc::new(CqInner {
            afd: OnceLock::new(),
            notify: Notify::new(),
            signal: Signal::new(),
            retry: Mutex::new(None),
            state: Mutex::new(CqState {
                ready: VecDeque::new(),
                qps: HashMap::new(),
            }),
            capacity,
            polling: dev.polling,
            fd,
            res: CqRes {
                cq,
                ch,
                _dev: dev.clone(),
            },
        }),
    })
}

impl Cq {
    pub(crate) fn raw(&self) -> *mut ffi::ibv_cq {
        self.inner.res.cq
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, CqState> {
        lock(&self.inner.state)
    }

    /// Wakes waiters after completions were queued outside a poll.
    pub(crate) fn wake(&self) {
        self.inner.notify.notify_waiters();
        self.inner.signal.notify();
    }

    pub(crate) fn attach(&self, qp_num: u32, qp: Weak<QpShared>) {
        self.lock().qps.insert(qp_num, qp);
    }

    pub(crate) fn detach(&self, qp_num: u32) {
        self.lock().qps.remove(&qp_num);
    }

    /// Moves every completion the device has into `st.ready`, translated
    /// by the queue pair that posted the request.
    pub(crate) fn drain_device(&self, st: &mut CqState) {
        let mut raw = [ffi::rs_wc::default(); BATCH];
        loop {
            // SAFETY: the CQ is live; raw holds BATCH entries.
            let got = unsafe { ffi::rs_poll_cq(self.raw(), BATCH as i32, raw.as_mut_ptr()) };
            if got < 0 {
                tracing::error!(rc = got, "ibv_poll_cq failed");
                return;
            }
            for wc in &raw[..got as usize] {
                let qp = st.qps.get(&wc.qp_num).and_then(Weak::upgrade);
                match qp {
                    Some(qp) => qp.on_completion(wc, &mut st.ready),
                    None => tracing::debug!(
                        qp_num = wc.qp_num,
                        "completion of a queue pair that is gone"
                    ),
                }
            }
            if (got as usize) < BATCH {
                return;
            }
        }
    }

    fn has_ready(&self) -> bool {
        let mut st = self.lock();
        self.drain_device(&mut st);
        !st.ready.is_empty()
    }

    fn afd(&self) -> Option<&AsyncFd<FdRef>> {
        self.inner
            .afd
            .get_or_init(|| match register(self.inner.fd) {
                Ok(a) => Some(a),
                Err(e) => {
                    tracing::error!(error = %e, "cannot watch the completion channel; polling instead");
                    None
                }
            })
            .as_ref()
    }

    /// Takes and acknowledges every event on the channel; WouldBlock once
    /// there is none.
    fn take_events(&self) -> std::io::Result<()> {
        loop {
            let mut cq: *mut ffi::ibv_cq = std::ptr::null_mut();
            let mut ctx: *mut std::ffi::c_void = std::ptr::null_mut();
            // SAFETY: the channel is live and non-blocking; out-pointers valid.
            let rc = unsafe { ffi::ibv_get_cq_event(self.inner.res.ch, &mut cq, &mut ctx) };
            if rc != 0 {
                let e = std::io::Error::last_os_error();
                return Err(if e.kind() == std::io::ErrorKind::WouldBlock {
                    e
                } else {
                    tracing::warn!(error = %e, "ibv_get_cq_event failed");
                    std::io::ErrorKind::WouldBlock.into()
                });
            }
            // SAFETY: cq is the queue the event was for (ours); one event.
            unsafe { ffi::ibv_ack_cq_events(cq, 1) };
        }
    }
}

impl CompletionQueue for Cq {
    fn poll(&self, out: &mut Vec<WorkCompletion>, max: usize) -> usize {
        let mut st = self.lock();
        if st.ready.len() < max {
            self.drain_device(&mut st);
        }
        let n = max.min(st.ready.len());
        out.extend(st.ready.drain(..n));
        n
    }

    async fn wait(&self) {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.has_ready() {
                return;
            }
            if self.inner.polling {
                tokio::task::yield_now().await;
                continue;
            }
            // Arm, then look again: a completion that arrived before the
            // arming raises no event.
            // SAFETY: the CQ is live.
            let rc = unsafe { ffi::rs_req_notify_cq(self.raw()) };
            if rc != 0 {
                tracing::warn!(rc, "ibv_req_notify_cq failed");
            }
            if self.has_ready() {
                return;
            }
            let Some(afd) = self.afd() else {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                continue;
            };
            tokio::select! {
                r = afd.readable() => {
                    if let Ok(mut guard) = r {
                        let _ = guard.try_io(|_| self.take_events());
                    }
                }
                () = &mut notified => {}
            }
        }
    }

    fn poll_wait(&self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            // Registered before looking, as `wait` enables its `Notified`.
            self.inner.signal.register(cx.waker());
            self.inner.signal.take();
            if self.has_ready() {
                return Poll::Ready(());
            }
            if self.inner.polling {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            // Arm, then look again: a completion that arrived before the
            // arming raises no event.
            // SAFETY: the CQ is live.
            let rc = unsafe { ffi::rs_req_notify_cq(self.raw()) };
            if rc != 0 {
                tracing::warn!(rc, "ibv_req_notify_cq failed");
            }
            if self.has_ready() {
                return Poll::Ready(());
            }
            let Some(afd) = self.afd() else {
                let mut retry = lock(&self.inner.retry);
                let sleep = retry.get_or_insert_with(|| {
                    Box::pin(tokio::time::sleep(std::time::Duration::from_millis(1)))
                });
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                *retry = None;
                continue;
            };
            match afd.poll_read_ready(cx) {
                Poll::Ready(Ok(mut guard)) => {
                    let _ = guard.try_io(|_| self.take_events());
                }
                Poll::Ready(Err(_)) => return Poll::Ready(()),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    fn capacity(&self) -> usize {
        self.inner.capacity
    }
}
