//! The rping server: accepts one client and serves its pings (RDMA Read
//! of the client's source, check, RDMA Write back) until it disconnects.

use std::io::Write;
use std::time::Duration;

use anyhow::{anyhow, Context};
use bytes::{Bytes, BytesMut};
use rpcrdma_verbs::{
    Access, ConnectRequest, Device, DisconnectReason, Listener, MemoryRegion, ProtectionDomain,
    QpParams, QueuePair, SendWr, Sge, WcOpcode,
};

use super::conn::{caps, Conn, WaitError, CQ_DEPTH};
use super::ping::{ping_loop, Pinged, Role, Settings, Summary};
use super::wire::{c_string, c_string_len, mismatch, pattern, Info, INFO_LEN};
use crate::cmd::provider::{describe_qp, describe_request, AnyDevice, AnyListener, Setup};

/// Accepts one client on `listener` and serves its pings until it
/// disconnects.
pub(crate) async fn run_server(
    dev: &AnyDevice,
    setup: &Setup,
    listener: &AnyListener,
    accept_timeout: Option<Duration>,
    s: &Settings,
    out: &mut dyn Write,
) -> anyhow::Result<Summary> {
    let _ = writeln!(
        out,
        "rping server: listening on {} ({})",
        listener.local_addr(),
        setup.label
    );
    let _ = out.flush();
    let req = match accept_timeout {
        Some(t) => tokio::time::timeout(t, listener.accept())
            .await
            .map_err(|_| anyhow!("no client connected within {} s", t.as_secs()))?,
        None => listener.accept().await,
    }
    .context("waiting for a connection request failed")?;
    let peer = req.peer_addr();
    let request = describe_request(&req);
    let (pd, cq) = (dev.alloc_pd()?, dev.create_cq(CQ_DEPTH)?);
    let params = QpParams::new(&pd, &cq, setup.options.clone()).with_caps(caps());
    let qp = tokio::time::timeout(s.timeout, req.accept(params, Bytes::new()))
        .await
        .map_err(|_| anyhow!("accepting the connection from {peer} timed out"))?
        .with_context(|| format!("cannot accept the connection from {peer}"))?;
    let mut conn: Conn<AnyDevice> = Conn::new(qp, pd, cq, s.timeout);
    // Posted before anything else runs on this (single-threaded) runtime,
    // so before the client's first Send can be processed.
    conn.post_recv()?;
    let _ = writeln!(
        out,
        "rping server: connection from {peer}: {request}; accepted ({})",
        describe_qp(&conn.qp)
    );
    let summary = ping_loop(&mut ServerRole, &mut conn, s, out).await;
    conn.close().await;
    Ok(summary)
}

/// The server's side of the ping loop.
pub(crate) struct ServerRole;

impl<D: Device> Role<D> for ServerRole {
    fn more(&self, _done: u32, _s: &Settings) -> bool {
        // Until the client leaves; too many pings are a failure (below).
        true
    }

    async fn ping(
        &mut self,
        conn: &mut Conn<D>,
        n: u32,
        s: &Settings,
        out: &mut dyn Write,
    ) -> Result<Option<Pinged>, WaitError> {
        let src = match conn.recv_info("the client's source advertisement").await {
            Ok(i) => i,
            // The client is done: rping clients disconnect after their count.
            Err(WaitError::Closed(DisconnectReason::Peer)) => return Ok(None),
            Err(WaitError::Closed(DisconnectReason::Transport { reason })) => {
                let _ = writeln!(out, "rping server: the client left ({reason})");
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        if s.count > 0 && n >= s.count {
            return Err(WaitError::Failed(format!(
                "the client sent more than the {} pings expected (-C)",
                s.count
            )));
        }
        let (data, verified) = server_ping(conn, n, src, s).await?;
        Ok(Some(Pinged {
            verbose: Some(format!("server ping data: {}", c_string(&data))),
            line: format!(
                "RDMA Read {} octets, RDMA Write {} octets back: {}",
                data.len(),
                c_string_len(&data),
                if verified {
                    "rping pattern verified"
                } else {
                    "not verified"
                }
            ),
            verified,
        }))
    }
}

/// One ping, from the source advertisement on. Returns the data read and
/// whether it was verified.
async fn server_ping<D: Device>(
    conn: &mut Conn<D>,
    ping: u32,
    src: Info,
    s: &Settings,
) -> Result<(Bytes, bool), WaitError> {
    let failed = |what: &str, e: &dyn std::fmt::Display| WaitError::Failed(format!("{what}: {e}"));
    if src.size > s.size {
        return Err(WaitError::Failed(format!(
            "the client's buffer ({} octets) is larger than ours ({}); run the server with -S {} or more",
            src.size, s.size, src.size
        )));
    }
    let len = src.size as usize;
    // RDMA Read the client's source into our sink.
    let sink = conn
        .pd
        .register_mut(BytesMut::zeroed(len), Access::LOCAL_WRITE)
        .map_err(|e| failed("cannot register the read sink", &e))?;
    let wr_id = conn.wr_id();
    let posted = conn.qp.post_send(SendWr::read(
        wr_id,
        sink.sge(0, len),
        rpcrdma_verbs::RemoteAddr {
            rkey: src.rkey,
            addr: src.addr,
        },
    ));
    let done = match posted {
        Ok(()) => conn
            .wait_for(WcOpcode::RdmaRead, "our RDMA Read of the client's source")
            .await
            .map(|_| ()),
        Err(e) => Err(failed("cannot post the RDMA Read", &e)),
    };
    let data = sink
        .deregister()
        .map_err(|e| failed("cannot deregister the read sink", &e))?
        .freeze();
    done?;
    let verified = if s.verify {
        if let Some(m) = mismatch(&data, &pattern(ping, len)) {
            return Err(WaitError::Failed(format!(
                "the data read is not rping's pattern for ping {ping}: {m}"
            )));
        }
        true
    } else {
        false
    };

    // Go ahead (rping sends its never-filled send buffer: 16 zero octets).
    conn.send(&[0u8; INFO_LEN])
        .map_err(|e| failed("go-ahead", &format!("{e:#}")))?;
    let dst = conn.recv_info("the client's sink advertisement").await?;

    // RDMA Write the data back, up to and including its NUL.
    let wlen = c_string_len(&data);
    if wlen > dst.size as usize {
        return Err(WaitError::Failed(format!(
            "the client's sink ({} octets) is smaller than the {wlen} octets to write back",
            dst.size
        )));
    }
    let source = conn
        .pd
        .register_bytes(data.slice(..wlen), Access::LOCAL_READ)
        .map_err(|e| failed("cannot register the write source", &e))?;
    let wr_id = conn.wr_id();
    let posted = conn.qp.post_send(SendWr::write(
        wr_id,
        vec![Sge::Region(source.sge(0, wlen))],
        rpcrdma_verbs::RemoteAddr {
            rkey: dst.rkey,
            addr: dst.addr,
        },
    ));
    let done = match posted {
        Ok(()) => conn
            .wait_for(WcOpcode::RdmaWrite, "our RDMA Write into the client's sink")
            .await
            .map(|_| ()),
        Err(e) => Err(failed("cannot post the RDMA Write", &e)),
    };
    let _ = source.deregister();
    done?;
    conn.send(&[0u8; INFO_LEN])
        .map_err(|e| failed("go-ahead", &format!("{e:#}")))?;
    Ok((data, verified))
}
