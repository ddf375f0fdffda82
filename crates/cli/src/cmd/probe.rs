//! `rpcrdma probe`: connect to an RPC-over-RDMA server and report what it
//! offers.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use rpcrdma_engine::{FeatureInfo, FeatureState, TRANSPORT_PROPERTIES};
use rpcrdma_oncrpc::{ClientConfig, RpcError};
use rpcrdma_wire::PrivateData;

use super::connect::{connect, resolve, TransportKind};
use super::rdma_opts::RdmaOpts;
use crate::cmd::{runtime, Scheduler};

/// Arguments of `rpcrdma probe`.
#[derive(Debug, Args)]
pub(crate) struct ProbeArgs {
    /// Server address, HOST:PORT (20049 is NFS/RDMA).
    addr: String,
    /// Program whose NULL procedure is called to learn the credit grant
    /// (any reply carries it; default NFS).
    #[arg(long, default_value = "100003", value_parser = super::call::parse_u32)]
    prog: u32,
    /// Version for that NULL call.
    #[arg(long, default_value_t = 3)]
    vers: u32,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    rdma: RdmaOpts,
}

fn describe(p: &PrivateData) -> String {
    format!(
        "send {} B, receive {} B, remote invalidation {}",
        p.send_size.bytes(),
        p.recv_size.bytes(),
        if p.remote_invalidation() { "yes" } else { "no" }
    )
}

/// The transport properties line (Version Two optional feature,
/// `docs/v2-transport-properties.md`).
fn describe_properties(f: Option<&FeatureInfo>, version: u32) -> String {
    let Some(f) = f else {
        return "off (not offered)".into();
    };
    if version != 2 {
        return "not used (Version One connection)".into();
    }
    let a = &f.adjustments;
    match (&f.state, a.peer_recv_size, a.peer_send_size, a.peer_limits) {
        (FeatureState::Active, Some(r), Some(s), Some(l)) => format!(
            "active: the peer receives up to {r} B, sends up to {s} B, takes {} Read segments, {} Write chunks, {} segments per chunk, messages up to {} B through chunks",
            l.max_read_segments,
            l.max_write_chunks,
            l.max_segments_per_chunk,
            a.peer_max_message.unwrap_or(0)
        ),
        (state, ..) => state.to_string(),
    }
}

fn properties_json(f: Option<&FeatureInfo>) -> serde_json::Value {
    let Some(f) = f else {
        return serde_json::Value::Null;
    };
    let a = &f.adjustments;
    let peer = match (&f.state, a.peer_recv_size, a.peer_send_size, a.peer_limits) {
        (FeatureState::Active, Some(r), Some(s), Some(l)) => serde_json::json!({
            "recv_size": r,
            "send_size": s,
            "max_read_segments": l.max_read_segments,
            "max_write_chunks": l.max_write_chunks,
            "max_segments_per_chunk": l.max_segments_per_chunk,
            "max_message": a.peer_max_message,
        }),
        _ => serde_json::Value::Null,
    };
    serde_json::json!({
        "opttype": f.opttype.0,
        "state": f.state.name(),
        "peer": peer,
    })
}

/// Runs `rpcrdma probe`.
pub(crate) fn run(a: ProbeArgs) -> anyhow::Result<ExitCode> {
    let addr = resolve(&a.addr)?;
    let rt = runtime(Scheduler::CurrentThread)?;
    rt.block_on(async move {
        let mut config = ClientConfig::default();
        config.timeout = Duration::from_secs(10);
        let c = connect(addr, TransportKind::Rdma, &a.rdma, config).await?;
        let mut null = c.client.null(a.prog, a.vers).await;
        let t = c
            .rdma
            .as_ref()
            .and_then(|h| h.transport())
            .context("no RPC-over-RDMA connection was made")?;
        let offered = |t: &rpcrdma_transport::RdmaTransport<super::provider::AnyDevice>| {
            t.info()
                .feature(TRANSPORT_PROPERTIES)
                .is_some_and(|f| f.state == FeatureState::Offered)
        };
        if null.is_ok() && offered(&t) {
            // The Version Two transport properties offer went out after the
            // first reply; its answer precedes the reply to a second call.
            null = c.client.null(a.prog, a.vers).await;
        }
        let info = t.info();
        let raw = t.peer_private_data().clone();
        let (version, fell_back) = t.negotiated().unwrap_or((0, false));
        let null_desc = match &null {
            Ok(()) => "reply: SUCCESS".to_string(),
            Err(RpcError::ProgUnavail { .. }) => "reply: PROG_UNAVAIL".into(),
            Err(RpcError::ProgMismatch { low, high, .. }) => {
                format!("reply: PROG_MISMATCH (versions {low}..={high})")
            }
            Err(e) => format!("failed: {e}"),
        };
        let null_ok = null.is_ok();
        if a.json {
            let pd = |p: &Option<PrivateData>| match p {
                Some(p) => serde_json::json!({
                    "send_size": p.send_size.bytes(),
                    "recv_size": p.recv_size.bytes(),
                    "remote_invalidation": p.remote_invalidation(),
                }),
                None => serde_json::Value::Null,
            };
            let v = serde_json::json!({
                "addr": addr.to_string(),
                "provider": c.provider,
                "version": version,
                "fell_back": fell_back,
                "peer_private_data_hex": hex::encode(&raw),
                "peer_rfc8797": pd(&info.peer_private_data),
                "our_rfc8797": pd(&Some(info.local_private_data)),
                "thresholds": {"send": info.thresholds.send, "recv": info.thresholds.recv},
                "remote_invalidation": info.remote_invalidation,
                "credits_granted": info.credits_granted,
                "transport_properties": properties_json(info.feature(TRANSPORT_PROPERTIES)),
                "null_call": {"prog": a.prog, "vers": a.vers, "ok": null_ok, "result": null_desc},
            });
            println!("{v}");
        } else {
            println!("peer {addr} (via {})", c.provider);
            println!(
                "  private data ({} bytes): {}",
                raw.len(),
                if raw.is_empty() { "none".into() } else { hex::encode(&raw) }
            );
            match &info.peer_private_data {
                Some(p) => println!("  RFC 8797: {}", describe(p)),
                None => println!("  RFC 8797: absent (defaults apply: 1024-byte thresholds, no remote invalidation)"),
            }
            println!("  we sent: {}", describe(&info.local_private_data));
            println!(
                "  RPC-over-RDMA version: {}{}",
                version,
                if fell_back { " (our Version Two probe drew ERR_VERS; fell back)" } else { "" }
            );
            println!(
                "  inline thresholds: we send up to {} B, the peer sends us up to {} B",
                info.thresholds.send, info.thresholds.recv
            );
            println!(
                "  remote invalidation: {}",
                if info.remote_invalidation { "used (both set R)" } else { "not used" }
            );
            println!("  credits granted: {}", info.credits_granted);
            println!(
                "  transport properties (RDMA2_OPTIONAL {:#010x}): {}",
                TRANSPORT_PROPERTIES.0,
                describe_properties(info.feature(TRANSPORT_PROPERTIES), version)
            );
            println!("  NULL call to program {} v{}: {null_desc}", a.prog, a.vers);
        }
        Ok(if version == 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
    })
}
