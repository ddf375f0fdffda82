//! The rping client: connects, then pings (source advertisement, the
//! server's RDMA Read, sink advertisement, the server's RDMA Write, check).

use std::io::Write;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use bytes::{Bytes, BytesMut};
use rpcrdma_verbs::{Access, Device, MemoryRegion, ProtectionDomain, QpParams};

use super::conn::{caps, Conn, WaitError, CQ_DEPTH};
use super::ping::{ping_loop, Pinged, Role, Settings, Summary};
use super::wire::{c_string, mismatch, pattern, Info};
use crate::cmd::provider::{describe_qp, AnyDevice, Setup};

/// Connects to an rping server at `addr` and makes `s.count` pings
/// (forever if 0). Errors are set-up failures; failures during the pings
/// are in the summary.
pub(crate) async fn run_client(
    dev: &AnyDevice,
    setup: &Setup,
    addr: SocketAddr,
    connect_wait: Duration,
    s: &Settings,
    out: &mut dyn Write,
) -> anyhow::Result<Summary> {
    let mut conn = connect(dev, setup, addr, connect_wait, s).await?;
    let _ = writeln!(
        out,
        "rping client: connected to {addr} ({})",
        describe_qp(&conn.qp)
    );
    let summary = ping_loop(&mut ClientRole, &mut conn, s, out).await;
    conn.close().await;
    Ok(summary)
}

pub(crate) async fn connect(
    dev: &AnyDevice,
    setup: &Setup,
    addr: SocketAddr,
    wait: Duration,
    s: &Settings,
) -> anyhow::Result<Conn<AnyDevice>> {
    let deadline = Instant::now() + wait;
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        let pd = dev.alloc_pd()?;
        let cq = dev.create_cq(CQ_DEPTH)?;
        let params = QpParams::new(&pd, &cq, setup.options.clone()).with_caps(caps());
        let res = tokio::time::timeout(s.timeout, dev.connect(addr, params, Bytes::new())).await;
        match res {
            Ok(Ok((qp, _private))) => {
                let mut conn: Conn<AnyDevice> = Conn::new(qp, pd, cq, s.timeout);
                // The server sends nothing before our first message.
                conn.post_recv()?;
                return Ok(conn);
            }
            Ok(Err(e)) if e.is_transient() && Instant::now() < deadline => {
                tracing::debug!(error = %e, attempts, "server not ready; retrying");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Ok(Err(e)) => {
                return Err(anyhow!(e)).with_context(|| {
                    format!("cannot connect to the rping server at {addr} ({attempts} attempt(s))")
                })
            }
            Err(_) => bail!(
                "connecting to {addr} timed out after {} s (is an rping server listening there?)",
                s.timeout.as_secs()
            ),
        }
    }
}

/// The client's side of the ping loop.
pub(crate) struct ClientRole;

impl<D: Device> Role<D> for ClientRole {
    fn more(&self, done: u32, s: &Settings) -> bool {
        s.count == 0 || done < s.count
    }

    async fn ping(
        &mut self,
        conn: &mut Conn<D>,
        n: u32,
        s: &Settings,
        _out: &mut dyn Write,
    ) -> Result<Option<Pinged>, WaitError> {
        let verified = client_ping(conn, n, s).await?;
        Ok(Some(Pinged {
            verbose: verified
                .as_deref()
                .map(|d| format!("ping data: {}", c_string(d))),
            line: format!(
                "{} octets: Send source, server RDMA Read, Send sink, server RDMA Write: {}",
                s.size,
                if verified.is_some() {
                    "verified"
                } else {
                    "not verified"
                }
            ),
            verified: verified.is_some(),
        }))
    }
}

/// One ping. Returns the data written back if it was verified.
pub(crate) async fn client_ping<D: Device>(
    conn: &mut Conn<D>,
    ping: u32,
    s: &Settings,
) -> Result<Option<Vec<u8>>, WaitError> {
    let failed = |what: &str, e: &dyn std::fmt::Display| WaitError::Failed(format!("{what}: {e}"));
    let size = s.size as usize;
    let data = Bytes::from(pattern(ping, size));
    // The source: the server RDMA Reads it.
    let src = conn
        .pd
        .register_bytes(data.clone(), Access::REMOTE_READ)
        .map_err(|e| failed("cannot register the source buffer", &e))?;
    let info = Info {
        addr: src.addr(),
        rkey: src.rkey(),
        size: s.size,
    };
    conn.send(&info.encode())
        .map_err(|e| failed("source advertisement", &format!("{e:#}")))?;
    let go = conn
        .recv_info("the server's go-ahead after its RDMA Read")
        .await;
    // The region is done with either way.
    let _ = src.deregister();
    go?;

    // The sink: the server RDMA Writes into it; zeroed, so stale data
    // cannot pass the check.
    let sink = conn
        .pd
        .register_mut(
            BytesMut::zeroed(size),
            Access::LOCAL_WRITE | Access::REMOTE_WRITE,
        )
        .map_err(|e| failed("cannot register the sink buffer", &e))?;
    let info = Info {
        addr: sink.addr(),
        rkey: sink.rkey(),
        size: s.size,
    };
    conn.send(&info.encode())
        .map_err(|e| failed("sink advertisement", &format!("{e:#}")))?;
    let go = conn
        .recv_info("the server's go-ahead after its RDMA Write")
        .await;
    let back = sink
        .deregister()
        .map_err(|e| failed("cannot deregister the sink buffer", &e))?
        .freeze();
    go?;
    if !s.verify {
        return Ok(None);
    }
    match mismatch(&back, &data) {
        None => Ok(Some(back.to_vec())),
        Some(m) => Err(WaitError::Failed(format!(
            "data mismatch: the sink does not hold what the source did ({m})"
        ))),
    }
}
