//! Queue pairs: the send queue and receive slots of a connection,
//! posting work requests, disconnection. Creation and the connection's
//! event task are in `setup.rs`, completions and receive slots in
//! `completion.rs`, gather lists and the bounce pool in `gather.rs`.

mod completion;
mod gather;
mod setup;

use rpcrdma_sync::lock;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use rpcrdma_verbs::{
    DisconnectReason, PostError, QpCaps, QueuePair as _, RecvWr, SendOp, SendWr, WcOpcode,
};
use tokio::sync::{watch, Notify};

pub(crate) use setup::{create, established};

use super::cm_id::CmId;
use super::cq::Cq;
use super::device::{DevInner, OwnBuf, PdInner, TempReg};
use super::ffi;
use crate::recv::RecvMatcher;

/// What a send-queue request holds until it completes.
enum Hold {
    Bytes(#[allow(dead_code)] Bytes),
    Bounce(OwnBuf),
    Temp(#[allow(dead_code)] TempReg),
}

struct SendEntry {
    seq: u64,
    wr_id: u64,
    opcode: WcOpcode,
    signaled: bool,
    len: u32,
    holds: Vec<Hold>,
}

struct Slot {
    buf: OwnBuf,
}

struct QpState {
    closed: bool,
    disconnect_sent: bool,
    seq: u64,
    sq: VecDeque<SendEntry>,
    recv: RecvMatcher,
    slots: Vec<Slot>,
    slot_size: usize,
    pool: Vec<Vec<OwnBuf>>,
}

pub(crate) struct QpShared {
    pub(crate) cm: Arc<CmId>,
    qp: *mut ffi::ibv_qp,
    pub(crate) qp_num: u32,
    pd: Arc<PdInner>,
    send_cq: Cq,
    recv_cq: Cq,
    caps: Mutex<QpCaps>,
    max_sge: u32,
    max_inline: u32,
    state: Mutex<QpState>,
    reason: watch::Sender<Option<DisconnectReason>>,
    stop: Arc<Notify>,
    dev: Arc<DevInner>,
}

// SAFETY: ibv_qp may be used from any thread (libibverbs serialises posts
// per queue); our state is behind mutexes.
unsafe impl Send for QpShared {}
// SAFETY: as above.
unsafe impl Sync for QpShared {}

impl Drop for QpShared {
    fn drop(&mut self) {
        self.stop.notify_one();
        let st = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        // SAFETY: the id is live (this holds it) and has our queue pair;
        // after rdma_destroy_qp the device no longer touches the slots and
        // bounce buffers, which are freed after this (field drops).
        unsafe {
            if !st.disconnect_sent {
                ffi::rdma_disconnect(self.cm.id);
            }
            ffi::rdma_destroy_qp(self.cm.id);
        }
        self.send_cq.detach(self.qp_num);
        self.recv_cq.detach(self.qp_num);
    }
}

impl QpShared {
    fn lock(&self) -> MutexGuard<'_, QpState> {
        lock(&self.state)
    }

    fn set_reason(&self, r: DisconnectReason) {
        self.lock().closed = true;
        self.reason.send_if_modified(|cur| {
            if cur.is_none() {
                tracing::debug!(qp_num = self.qp_num, reason = ?r, "connection ended");
                *cur = Some(r);
                true
            } else {
                false
            }
        });
    }

    fn send_disconnect(&self) {
        let mut st = self.lock();
        if !st.disconnect_sent {
            st.disconnect_sent = true;
            // SAFETY: the id is live; rdma_disconnect moves the queue pair
            // to the error state, flushing what is outstanding.
            unsafe { ffi::rdma_disconnect(self.cm.id) };
        }
    }
}

/// A connected queue pair of an rdma-core device.
pub struct Qp {
    shared: Arc<QpShared>,
}

impl std::fmt::Debug for Qp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Qp")
            .field("qp_num", &self.shared.qp_num)
            .field("caps", &self.caps())
            .finish()
    }
}

impl Qp {
    /// The queue pair number.
    pub fn qp_num(&self) -> u32 {
        self.shared.qp_num
    }

    /// Gather elements per send work request the device granted.
    pub fn max_send_sge(&self) -> u32 {
        self.shared.max_sge
    }

    /// Inline octets per send work request the device granted.
    pub fn max_inline(&self) -> u32 {
        self.shared.max_inline
    }

    /// The device's name.
    pub fn device_name(&self) -> &str {
        &self.shared.dev.info.name
    }

    /// The local and peer addresses.
    pub fn addrs(&self) -> (Option<std::net::SocketAddr>, Option<std::net::SocketAddr>) {
        self.shared.cm.addrs()
    }

    /// The port of the device the connection uses.
    pub fn port(&self) -> u32 {
        // SAFETY: the id is live.
        unsafe { ffi::rs_id_port(self.shared.cm.id) }
    }
}

/// A send-queue request in the shim's form: its descriptor (its gather
/// list is in the caller's list) and its entry once posted.
struct Prepared {
    d: ffi::rs_send,
    entry: SendEntry,
}

/// The error of a request `ibv_post_send` refused with `rc` (a negative
/// errno).
fn refused(rc: i32, depth: u32) -> PostError {
    match -rc {
        libc::ENOMEM => PostError::QueueFull {
            queue: "send",
            depth,
        },
        libc::EINVAL | libc::EOPNOTSUPP => PostError::Invalid {
            reason: "the device does not support this operation or its parameters (ibv_post_send: EINVAL)",
        },
        _ => PostError::Invalid {
            reason: "the device refused the work request (ibv_post_send)",
        },
    }
}

impl QpShared {
    /// The send queue's depth; if the queue looks full, first reaps the
    /// requests the caller did not signal, which complete only at the
    /// device (lock order: queue, then queue pair).
    fn depth_with_room(&self, more: usize) -> u32 {
        let depth = lock(&self.caps).send_depth;
        if self.lock().sq.len() + more > depth as usize {
            let mut cq = self.send_cq.lock();
            self.send_cq.drain_device(&mut cq);
            let any = !cq.ready.is_empty();
            drop(cq);
            if any {
                self.send_cq.wake();
            }
        }
        depth
    }

    /// Checks `wr` against the state and the queue's depth and turns it
    /// into the shim's form, appending its gather list to `sges`.
    fn prepare(
        &self,
        st: &mut QpState,
        depth: u32,
        wr: &SendWr,
        sges: &mut Vec<ffi::rs_sge>,
    ) -> Result<Prepared, PostError> {
        if st.closed {
            return Err(PostError::NotConnected { state: "closed" });
        }
        if st.sq.len() >= depth as usize {
            return Err(PostError::QueueFull {
                queue: "send",
                depth,
            });
        }
        let mut holds = Vec::new();
        let mut d = ffi::rs_send::default();
        let first = sges.len();
        let mut len = 0u32;
        match &wr.op {
            SendOp::Send {
                sges: list,
                solicited,
                invalidate,
            } => {
                if self.gather(st, list, sges, &mut holds)? {
                    d.flags |= ffi::RS_INLINE;
                }
                if *solicited {
                    d.flags |= ffi::RS_SOLICITED;
                }
                match invalidate {
                    Some(k) => {
                        d.op = ffi::RS_SEND_INV;
                        d.invalidate = *k;
                    }
                    None => d.op = ffi::RS_SEND,
                }
            }
            SendOp::Write { sges: list, remote } => {
                if self.gather(st, list, sges, &mut holds)? {
                    d.flags |= ffi::RS_INLINE;
                }
                d.op = ffi::RS_WRITE;
                d.remote_addr = remote.addr;
                d.rkey = remote.rkey;
            }
            SendOp::Read { sink, remote } => {
                d.op = ffi::RS_READ;
                d.remote_addr = remote.addr;
                d.rkey = remote.rkey;
                len = sink.len;
                sges.push(ffi::rs_sge {
                    addr: sink.addr,
                    length: sink.len,
                    lkey: sink.lkey,
                });
            }
            SendOp::LocalInvalidate { .. } => {
                return Err(PostError::Invalid {
                    reason: "local invalidation needs memory windows or fast registration, which the rdma-core provider does not use; deregister the region instead",
                })
            }
            _ => {
                return Err(PostError::Invalid {
                    reason: "operation not supported by the rdma-core provider",
                })
            }
        }
        st.seq += 1;
        d.wr_id = st.seq;
        d.num_sge = (sges.len() - first) as u32;
        // Every request is signaled at the device, so the provider knows
        // when its buffers are free; unsignaled ones report only errors.
        d.flags |= ffi::RS_SIGNALED;
        Ok(Prepared {
            d,
            entry: SendEntry {
                seq: st.seq,
                wr_id: wr.wr_id,
                opcode: wr.wc_opcode(),
                signaled: wr.signaled,
                len,
                holds,
            },
        })
    }

    /// Posts `batch` (whose gather lists are the first `n` elements of
    /// `sges`, in order) with one `ibv_post_send`, queues the entries of
    /// those the device took and removes those elements from `sges`. The
    /// error is the refused request's; the ones after it are dropped
    /// unposted.
    fn post_list(
        &self,
        st: &mut QpState,
        depth: u32,
        batch: &mut Vec<Prepared>,
        sges: &mut Vec<ffi::rs_sge>,
        n: usize,
    ) -> Result<(), PostError> {
        // The descriptors side by side, as the shim reads them (the caller
        // keeps `batch` within RS_LIST_MAX).
        let mut descs = [ffi::rs_send::default(); ffi::RS_LIST_MAX];
        for (d, p) in descs.iter_mut().zip(batch.iter()) {
            *d = p.d;
        }
        debug_assert!(batch.len() <= ffi::RS_LIST_MAX, "the caller splits chains");
        let count = batch.len().min(ffi::RS_LIST_MAX);
        let mut posted = 0u32;
        // SAFETY: the queue pair is live; the first `count` of `descs` and
        // `sges` are valid for the call, within the shim's limits (RS_LIST_MAX requests,
        // RS_LIST_SGES elements: the caller splits longer chains), and
        // each descriptor's gather list follows the one before in `sges`;
        // the memory they name is registered (or inline) and held by the
        // entries until their completions.
        let rc = unsafe {
            ffi::rs_post_send_list(
                self.qp,
                descs.as_ptr(),
                count as u32,
                sges.as_ptr(),
                &mut posted,
            )
        };
        let posted = (posted as usize).min(batch.len());
        // (Draining the whole batch drops the unposted ones.)
        for p in batch.drain(..).take(posted) {
            st.sq.push_back(p.entry);
        }
        sges.drain(..n);
        if rc != 0 {
            tracing::debug!(
                rc,
                posted,
                "ibv_post_send refused a work request of a chain"
            );
            return Err(refused(rc, depth));
        }
        Ok(())
    }
}

impl rpcrdma_verbs::QueuePair for Qp {
    fn post_send(&self, wr: SendWr) -> Result<(), PostError> {
        let s = &*self.shared;
        let depth = s.depth_with_room(1);
        let mut st = s.lock();
        let mut sges = Vec::with_capacity(4);
        let p = s.prepare(&mut st, depth, &wr, &mut sges)?;
        // SAFETY: the queue pair is live; `p.d` and `sges` are valid for
        // the call; the memory they name is registered (or inline) and
        // held in the entry until the completion.
        let rc = unsafe { ffi::rs_post_send(s.qp, &p.d, sges.as_ptr()) };
        if rc != 0 {
            tracing::debug!(rc, op = p.d.op, "ibv_post_send refused a work request");
            return Err(refused(rc, depth));
        }
        st.sq.push_back(p.entry);
        Ok(())
    }

    /// The chain as linked lists of work requests: one `ibv_post_send`
    /// (one doorbell) for up to 16 requests and 64 gather elements, as a
    /// reply's RDMA Writes and its Send.
    fn post_send_chain<I>(&self, wrs: I) -> Result<(), PostError>
    where
        I: IntoIterator<Item = SendWr>,
    {
        let wrs: Vec<SendWr> = wrs.into_iter().collect();
        if wrs.len() == 1 {
            return wrs.into_iter().try_for_each(|wr| self.post_send(wr));
        }
        let s = &*self.shared;
        let depth = s.depth_with_room(wrs.len());
        let mut st = s.lock();
        let mut batch: Vec<Prepared> = Vec::with_capacity(wrs.len().min(ffi::RS_LIST_MAX));
        let mut sges = Vec::with_capacity(ffi::RS_LIST_SGES);
        for wr in &wrs {
            // The depth counts what this chain has prepared too. Each
            // request's gather list goes straight after the ones before.
            let start = sges.len();
            let p = if st.sq.len() + batch.len() >= depth as usize {
                Err(PostError::QueueFull {
                    queue: "send",
                    depth,
                })
            } else {
                s.prepare(&mut st, depth, wr, &mut sges)
            };
            let p = match p {
                Ok(p) => p,
                Err(e) => {
                    // What was prepared before it goes; the chain ends.
                    sges.truncate(start);
                    if !batch.is_empty() {
                        s.post_list(&mut st, depth, &mut batch, &mut sges, start)?;
                    }
                    return Err(e);
                }
            };
            if !batch.is_empty()
                && (batch.len() == ffi::RS_LIST_MAX || sges.len() > ffi::RS_LIST_SGES)
            {
                // The list so far goes without this request, whose gather
                // list moves to the front for the next one.
                s.post_list(&mut st, depth, &mut batch, &mut sges, start)?;
            }
            batch.push(p);
        }
        if !batch.is_empty() {
            let n = sges.len();
            s.post_list(&mut st, depth, &mut batch, &mut sges, n)?;
        }
        Ok(())
    }

    fn post_recv(&self, wr: RecvWr) -> Result<(), PostError> {
        let s = &*self.shared;
        // Lock order: completion queue, then queue pair (as when polling).
        let mut cq = s.recv_cq.lock();
        let mut st = s.lock();
        let st = &mut *st;
        if wr.buf.len() > st.slot_size {
            st.slot_size = wr.buf.len();
        }
        let slots = &st.slots;
        let matched = st
            .recv
            .post(wr, |i| slots.get(i).map_or(&[][..], |s| &s.buf.buf[..]))?;
        if let Some(m) = matched {
            let overflow = s.finish_receives(st, vec![m], &mut cq.ready);
            drop(cq);
            s.recv_cq.wake();
            if overflow {
                st.closed = true;
            }
        }
        Ok(())
    }

    fn caps(&self) -> QpCaps {
        *lock(&self.shared.caps)
    }

    async fn disconnect(&self) {
        let s = &*self.shared;
        // Let what is posted go out (the device completes it in order).
        for _ in 0..1000 {
            {
                let mut cq = s.send_cq.lock();
                s.send_cq.drain_device(&mut cq);
            }
            let done = {
                let st = s.lock();
                st.sq.is_empty() || st.closed
            };
            if done {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        s.send_cq.wake();
        s.set_reason(DisconnectReason::Local);
        s.send_disconnect();
        self.flush_receives();
        let mut rx = s.reason.subscribe();
        let _ = rx.wait_for(Option::is_some).await;
    }

    fn abort(&self) {
        self.shared.set_reason(DisconnectReason::Local);
        self.shared.send_disconnect();
        self.flush_receives();
    }

    async fn closed(&self) -> DisconnectReason {
        let mut rx = self.shared.reason.subscribe();
        let r = match rx.wait_for(Option::is_some).await {
            Ok(r) => r.clone().unwrap_or(DisconnectReason::Local),
            Err(_) => DisconnectReason::Local,
        };
        r
    }
}

impl Qp {
    /// Flushes the caller's receives that no message can fill any more.
    fn flush_receives(&self) {
        let s = &*self.shared;
        let mut cq = s.recv_cq.lock();
        let out = s.lock().recv.flush();
        let any = !out.is_empty();
        for m in out {
            cq.ready.push_back(m.wc);
        }
        drop(cq);
        if any {
            s.recv_cq.wake();
        }
    }
}
