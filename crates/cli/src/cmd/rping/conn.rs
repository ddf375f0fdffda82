//! One rping connection over any verbs provider: the queue pair with its
//! domain and completion queue, and the helper that waits for completions.

use std::collections::VecDeque;
use std::time::Duration;

use anyhow::Context;
use bytes::{Bytes, BytesMut};
use rpcrdma_verbs::{
    CompletionQueue, Device, DisconnectReason, QpCaps, QueuePair, RecvWr, SendWr, Sge, WcOpcode,
    WcStatus, WorkCompletion,
};

use super::wire::{Info, INFO_LEN};

/// Receive buffers are larger than the 16 octets expected, so a wrong-sized
/// message is reported rather than failing the connection.
const RECV_BUF: usize = 64;

/// Completion queue depth: a handful of outstanding requests at most.
pub(crate) const CQ_DEPTH: usize = 64;

/// Queue sizes of an rping connection.
pub(crate) fn caps() -> QpCaps {
    QpCaps {
        send_depth: 16,
        recv_depth: 4,
        ..QpCaps::default()
    }
}

/// Why waiting for a completion stopped.
#[derive(Debug)]
pub(crate) enum WaitError {
    /// The connection ended (a flushed work request, or closed).
    Closed(DisconnectReason),
    /// Nothing happened in time.
    Timeout(&'static str),
    /// A work request failed.
    Failed(String),
}

impl std::fmt::Display for WaitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WaitError::Closed(r) => write!(f, "the connection ended: {}", reason(r)),
            WaitError::Timeout(what) => write!(
                f,
                "timed out waiting for {what} (is the peer an rping? raise --timeout if it is slow)"
            ),
            WaitError::Failed(s) => f.write_str(s),
        }
    }
}

/// Why a connection ended, in words.
pub(crate) fn reason(r: &DisconnectReason) -> String {
    match r {
        DisconnectReason::Local => "closed locally".into(),
        DisconnectReason::Peer => "the peer disconnected".into(),
        DisconnectReason::RemoteTerminate { layer, etype, code } => format!(
            "the peer sent an iWARP Terminate (layer {layer}, type {etype:#x}, code {code:#04x})"
        ),
        DisconnectReason::ProtocolError { reason } => format!("protocol error: {reason}"),
        DisconnectReason::Transport { reason } => format!("transport error: {reason}"),
        other => format!("{other:?}"),
    }
}

/// One connected queue pair with its domain and completion queue.
pub(crate) struct Conn<D: Device> {
    pub(crate) qp: D::Qp,
    pub(crate) pd: D::Pd,
    cq: D::Cq,
    pub(crate) timeout: Duration,
    wcs: VecDeque<WorkCompletion>,
    next_wr: u64,
}

impl<D: Device> Conn<D> {
    pub(crate) fn new(qp: D::Qp, pd: D::Pd, cq: D::Cq, timeout: Duration) -> Self {
        Conn {
            qp,
            pd,
            cq,
            timeout,
            wcs: VecDeque::new(),
            next_wr: 1,
        }
    }

    pub(crate) fn wr_id(&mut self) -> u64 {
        self.next_wr += 1;
        self.next_wr
    }

    pub(crate) fn post_recv(&mut self) -> anyhow::Result<()> {
        let wr_id = self.wr_id();
        self.qp
            .post_recv(RecvWr {
                wr_id,
                buf: BytesMut::zeroed(RECV_BUF),
            })
            .context("cannot post a receive")
    }

    pub(crate) fn send(&mut self, msg: &[u8]) -> anyhow::Result<()> {
        let wr_id = self.wr_id();
        self.qp
            .post_send(SendWr::send(
                wr_id,
                vec![Sge::Bytes(Bytes::copy_from_slice(msg))],
            ))
            .context("cannot post a Send")
    }

    async fn next_wc(&mut self, what: &'static str) -> Result<WorkCompletion, WaitError> {
        loop {
            if let Some(wc) = self.wcs.pop_front() {
                return Ok(wc);
            }
            let mut got = Vec::new();
            if self.cq.poll(&mut got, CQ_DEPTH) == 0 {
                tokio::time::timeout(self.timeout, self.cq.wait())
                    .await
                    .map_err(|_| WaitError::Timeout(what))?;
                self.cq.poll(&mut got, CQ_DEPTH);
            }
            self.wcs.extend(got);
        }
    }

    /// Waits for the next completion of kind `op`; Send completions met on
    /// the way are consumed (Sends complete on their own schedule).
    pub(crate) async fn wait_for(
        &mut self,
        op: WcOpcode,
        what: &'static str,
    ) -> Result<WorkCompletion, WaitError> {
        loop {
            let wc = self.next_wc(what).await?;
            match wc.status {
                WcStatus::Success => {}
                WcStatus::WrFlush => {
                    let r = tokio::time::timeout(Duration::from_secs(1), self.qp.closed())
                        .await
                        .unwrap_or(DisconnectReason::Peer);
                    return Err(WaitError::Closed(r));
                }
                status => {
                    let r = tokio::time::timeout(Duration::from_millis(200), self.qp.closed())
                        .await
                        .map(|r| format!(" ({})", reason(&r)))
                        .unwrap_or_default();
                    return Err(WaitError::Failed(format!(
                        "{:?} work request failed with {status:?} while waiting for {what}{r}",
                        wc.opcode
                    )));
                }
            }
            if wc.opcode == op {
                return Ok(wc);
            }
            if wc.opcode != WcOpcode::Send {
                return Err(WaitError::Failed(format!(
                    "unexpected {:?} completion while waiting for {what}",
                    wc.opcode
                )));
            }
        }
    }

    /// Waits for a 16-octet message and posts the receive again.
    pub(crate) async fn recv_info(&mut self, what: &'static str) -> Result<Info, WaitError> {
        let wc = self.wait_for(WcOpcode::Recv, what).await?;
        self.post_recv()
            .map_err(|e| WaitError::Failed(format!("{e:#}")))?;
        Info::decode(wc.data().unwrap_or_default()).ok_or_else(|| {
            WaitError::Failed(format!(
                "received bogus data while waiting for {what}: {} octets, expected {INFO_LEN}",
                wc.byte_len
            ))
        })
    }

    pub(crate) async fn close(self) {
        let _ = tokio::time::timeout(self.timeout, self.qp.disconnect()).await;
    }
}
