//! What keeps the calls and messages of a small-calls measure in flight:
//! `k` tasks per connection calling in turn (RPC), or `k` messages deep
//! per stream (raw TCP), until the measure's time is up.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rpcrdma_oncrpc::{CallHints, Client, RpcError};
use tokio::net::TcpStream;

use crate::cpu::Stopwatch;
use crate::raw::raw_until;
use crate::rpc::{Opaque, BARE_ECHO, BARE_PROG};

/// The operation of a measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// NULL calls (raw TCP: 64-octet messages).
    Null,
    /// ECHO calls of the echo size (raw TCP: messages of that size).
    Echo,
}

impl Op {
    /// The operation's name in the reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Op::Null => "null",
            Op::Echo => "echo",
        }
    }
}

/// Calls per second and CPU per call of one measure.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rate {
    pub(crate) per_s: f64,
    pub(crate) cpu_us_per_call: f64,
}

pub(crate) fn rate(calls: usize, t: Stopwatch) -> Rate {
    let e = t.elapsed();
    let calls = calls.max(1) as f64;
    Rate {
        per_s: calls / e.wall.as_secs_f64().max(1e-9),
        cpu_us_per_call: e.cpu.as_secs_f64() * 1e6 / calls,
    }
}

/// `n` NULL calls on `c`, `k` outstanding (`k` tasks calling in turn).
pub async fn null_lanes(c: &Client, n: usize, k: usize) -> anyhow::Result<()> {
    let k = k.clamp(1, n.max(1));
    let mut tasks = Vec::with_capacity(k);
    for w in 0..k {
        let c = c.clone();
        let count = n / k + usize::from(w < n % k);
        tasks.push(tokio::spawn(async move {
            for _ in 0..count {
                c.null(rpcrdma_demoprog::PROGRAM, rpcrdma_demoprog::VERSION)
                    .await?;
            }
            Ok::<_, RpcError>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

/// The hints of the bench's ECHO: its results are at most as large as its
/// arguments.
pub(crate) fn echo_hints(size: usize) -> CallHints {
    CallHints::new().max_results(u32::try_from(size + 4).unwrap_or(u32::MAX))
}

/// Calls on every client of `clients`, `k` outstanding on each, until
/// `secs` have passed; the number that completed.
pub(crate) async fn rpc_lanes(
    clients: &[Client],
    op: Op,
    k: usize,
    secs: f64,
    data: &Bytes,
) -> anyhow::Result<usize> {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let hints = Arc::new(echo_hints(data.len()));
    let data = Opaque(data.clone());
    let mut tasks = Vec::with_capacity(k * clients.len());
    for c in clients {
        for _ in 0..k {
            let (c, data, hints) = (c.clone(), data.clone(), hints.clone());
            tasks.push(tokio::spawn(async move {
                let mut done = 0usize;
                while Instant::now() < end {
                    match op {
                        Op::Null => {
                            c.null(rpcrdma_demoprog::PROGRAM, rpcrdma_demoprog::VERSION)
                                .await?
                        }
                        Op::Echo => {
                            let r: Opaque = c.call(BARE_PROG, 1, BARE_ECHO, &data, &hints).await?;
                            anyhow::ensure!(r.0.len() == data.0.len(), "ECHO: wrong length");
                        }
                    }
                    done += 1;
                }
                Ok::<_, anyhow::Error>(done)
            }));
        }
    }
    let mut done = 0;
    for t in tasks {
        done += t.await??;
    }
    Ok(done)
}

/// Raw exchanges on every stream of `streams`, `k` deep each, for `secs`;
/// the messages answered.
pub(crate) async fn raw_lanes(
    streams: &mut Vec<TcpStream>,
    size: usize,
    k: usize,
    secs: f64,
) -> anyhow::Result<usize> {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut tasks = Vec::with_capacity(streams.len());
    for mut s in streams.drain(..) {
        tasks.push(tokio::spawn(async move {
            let r = raw_until(&mut s, size, k, None, Some(end)).await;
            (s, r)
        }));
    }
    let mut done = 0;
    let mut err = None;
    for t in tasks {
        let (s, r) = t.await?;
        streams.push(s);
        match r {
            Ok(d) => done += d,
            Err(e) => err = Some(e),
        }
    }
    match err {
        Some(e) => Err(e),
        None => Ok(done),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_hints_cover_the_results() {
        assert_eq!(echo_hints(4096).results_limit(), Some(4100));
    }
}
