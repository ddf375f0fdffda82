//! `rpcrdma call`: make RPC calls to a server over RPC-over-RDMA or TCP.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use bytes::Bytes;
use clap::Args;
use rpcrdma_demoprog::{pattern, DemoClient};
use rpcrdma_oncrpc::{CallHints, ClientConfig, Marshal, Unmarshal};
use rpcrdma_xdr::{Decoder, Encoder, XdrError};

use super::connect::{connect, resolve, TransportKind};
use super::error_text::Causes;
use super::rdma_opts::RdmaOpts;
use crate::cmd::{runtime, Scheduler};

/// Arguments of `rpcrdma call`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  rpcrdma call 127.0.0.1:20049 100003 3 0            NFSv3 NULL over RPC-over-RDMA
  rpcrdma call 127.0.0.1:20049 demo read --size 1048576
  rpcrdma call 127.0.0.1:2049 100003 3 0 --transport tcp")]
pub(crate) struct CallArgs {
    /// Server address, HOST:PORT.
    addr: String,
    /// Program number, or `demo` for the demo program (then the next
    /// argument is the operation: null, echo, read or write).
    program: String,
    /// Version number (or the demo operation).
    #[arg(value_name = "VERSION|OP")]
    vers: String,
    /// Procedure number (not used with `demo`).
    procedure: Option<u32>,
    /// Raw XDR arguments in hex (a multiple of 4 bytes).
    #[arg(long, default_value = "")]
    args: String,
    /// Bytes for demo echo/read/write.
    #[arg(long, default_value_t = 1024)]
    size: u32,
    /// Calls to make (timings are summarised).
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Transport.
    #[arg(long, value_enum, default_value = "rdma")]
    transport: TransportKind,
    /// Per-call timeout in seconds.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    #[command(flatten)]
    rdma: RdmaOpts,
}

/// Raw XDR arguments.
struct RawArgs(Bytes);

impl Marshal for RawArgs {
    fn marshal(&self, enc: &mut Encoder<'_>) {
        enc.put_fixed_opaque(&self.0);
    }
}

/// Raw XDR results.
struct RawResults(Bytes);

impl Unmarshal for RawResults {
    fn unmarshal(dec: &mut Decoder<'_>) -> Result<Self, XdrError> {
        Ok(Self(dec.take_rest_bytes()))
    }
}

enum Op {
    Raw { prog: u32, vers: u32, proc_: u32 },
    Demo(String),
}

/// Runs `rpcrdma call`.
pub(crate) fn run(a: CallArgs) -> anyhow::Result<ExitCode> {
    let addr = resolve(&a.addr)?;
    let op = if a.program.eq_ignore_ascii_case("demo") {
        let o = a.vers.to_ascii_lowercase();
        if !["null", "echo", "read", "write"].contains(&o.as_str()) {
            bail!("unknown demo operation {o:?}; use null, echo, read or write");
        }
        Op::Demo(o)
    } else {
        let num = |s: &str, what: &str| -> anyhow::Result<u32> {
            parse_u32(s).map_err(|e| anyhow::anyhow!("{what}: {e}"))
        };
        Op::Raw {
            prog: num(&a.program, "program")?,
            vers: num(&a.vers, "version")?,
            proc_: a
                .procedure
                .context("give the procedure number after the version, e.g. `100003 3 0`")?,
        }
    };
    let raw =
        hex::decode(a.args.replace([' ', ':'], "")).context("--args must be hex, e.g. 00000001")?;
    if raw.len() % 4 != 0 {
        bail!(
            "--args has {} bytes; XDR arguments are a multiple of 4 bytes",
            raw.len()
        );
    }
    let rt = runtime(Scheduler::CurrentThread)?;
    rt.block_on(call(a, addr, op, Bytes::from(raw)))
}

async fn call(
    a: CallArgs,
    addr: std::net::SocketAddr,
    op: Op,
    raw: Bytes,
) -> anyhow::Result<ExitCode> {
    let mut config = ClientConfig::default();
    config.timeout = Duration::from_secs(a.timeout);
    let c = connect(addr, a.transport, &a.rdma, config).await?;
    // The results of a raw call are unknown (an RDMA requester then
    // provides for the largest message, spec note E16), except procedure
    // 0, NULL by convention (RFC 5531 §12.1): void.
    let raw_hints = match &op {
        Op::Raw { proc_: 0, .. } if raw.is_empty() => CallHints::new().max_results(0),
        _ => CallHints::new(),
    };
    let mut times = Vec::new();
    let mut outcome = Ok(String::new());
    for _ in 0..a.repeat.max(1) {
        let t = Instant::now();
        outcome = match &op {
            Op::Raw { prog, vers, proc_ } => c
                .client
                .call::<_, RawResults>(*prog, *vers, *proc_, &RawArgs(raw.clone()), &raw_hints)
                .await
                .map(|r| {
                    format!(
                        "MSG_ACCEPTED SUCCESS, {} bytes of results{}{}",
                        r.0.len(),
                        if r.0.is_empty() { "" } else { ": " },
                        hex::encode(&r.0)
                    )
                })
                .map_err(anyhow::Error::from),
            Op::Demo(o) => demo_op(&DemoClient::new(c.client.clone()), o, a.size).await,
        };
        times.push(t.elapsed());
        if outcome.is_err() {
            break;
        }
    }
    let via = match &c.rdma {
        Some(h) => match h.transport() {
            Some(t) => {
                let info = t.info();
                let v = match t.negotiated() {
                    Some((v, true)) => format!("RPC-over-RDMA v{v}, fell back from v2"),
                    Some((v, false)) => format!("RPC-over-RDMA v{v}"),
                    None => "RPC-over-RDMA".into(),
                };
                format!(
                    "{v}, inline {}/{} B, {} credits, {}",
                    info.thresholds.send, info.thresholds.recv, info.credits_granted, c.provider
                )
            }
            None => "RPC-over-RDMA".into(),
        },
        None => "TCP".into(),
    };
    let code = match outcome {
        Ok(desc) => {
            println!("reply from {addr} ({via}): {desc}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("call to {addr} ({via}) failed: {}", Causes(&e));
            ExitCode::from(1)
        }
    };
    if !times.is_empty() {
        times.sort();
        let total: Duration = times.iter().sum();
        println!(
            "{} call(s): min {:.1} us, median {:.1} us, mean {:.1} us",
            times.len(),
            times[0].as_secs_f64() * 1e6,
            times[times.len() / 2].as_secs_f64() * 1e6,
            total.as_secs_f64() * 1e6 / times.len() as f64
        );
    }
    Ok(code)
}

async fn demo_op(d: &DemoClient, op: &str, size: u32) -> anyhow::Result<String> {
    Ok(match op {
        "null" => {
            d.null().await?;
            "NULL ok".into()
        }
        "echo" => {
            let data = pattern(9, size.min(rpcrdma_demoprog::MAX_ECHO) as usize);
            let back = d.echo(data.clone()).await?;
            if back != data {
                bail!("ECHO returned different bytes");
            }
            format!("ECHO of {} bytes verified", data.len())
        }
        "read" => {
            let got = d.read_verified(9, size).await?;
            format!("READ of {} bytes verified", got.len())
        }
        _ => {
            d.write_verified(pattern(10, size as usize)).await?;
            format!("WRITE of {size} bytes verified by the server's checksum")
        }
    })
}

/// Parses a decimal or `0x` hexadecimal `u32` (for clap and positionals).
pub(crate) fn parse_u32(s: &str) -> Result<u32, String> {
    let s = s.trim();
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("{s:?} is not a number (decimal or 0x-hex)"))
}
