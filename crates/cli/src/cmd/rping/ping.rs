//! The ping loop both roles share: one run's settings and summary, what a
//! role does for one ping, and the loop that counts, prints and times
//! them.

use std::io::Write;
use std::time::{Duration, Instant};

use rpcrdma_verbs::Device;

use super::conn::{Conn, WaitError};

/// What one run needs, independent of the command line.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) count: u32,
    pub(crate) size: u32,
    pub(crate) verify: bool,
    pub(crate) verbose: bool,
    pub(crate) timeout: Duration,
}

/// How a run ended.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Summary {
    /// Pings completed (all steps done).
    pub(crate) pings: u32,
    /// Of those, how many had their data verified.
    pub(crate) verified: u32,
    /// What went wrong (empty on success).
    pub(crate) failure: Option<String>,
}

impl Summary {
    /// Whether the run did what was asked: every ping, verified.
    pub(crate) fn ok(&self, s: &Settings) -> bool {
        self.failure.is_none()
            && self.pings > 0
            && (s.count == 0 || self.pings == s.count)
            && (!s.verify || self.verified == self.pings)
    }
}

/// What one ping produced, for output.
pub(crate) struct Pinged {
    /// The ping data line printed with -v.
    pub(crate) verbose: Option<String>,
    /// What was done.
    pub(crate) line: String,
    /// Whether the data was verified.
    pub(crate) verified: bool,
}

/// One side of rping (client or server), one ping at a time.
pub(crate) trait Role<D: Device> {
    /// Whether another ping follows `done` of them.
    fn more(&self, done: u32, s: &Settings) -> bool;

    /// Ping number `n`; `Ok(None)` when the peer is done.
    async fn ping(
        &mut self,
        conn: &mut Conn<D>,
        n: u32,
        s: &Settings,
        out: &mut dyn Write,
    ) -> Result<Option<Pinged>, WaitError>;
}

/// The ping loop both sides share: counts, prints and times each ping, and
/// stops at the first failure.
pub(crate) async fn ping_loop<D: Device, R: Role<D>>(
    role: &mut R,
    conn: &mut Conn<D>,
    s: &Settings,
    out: &mut dyn Write,
) -> Summary {
    let mut summary = Summary::default();
    let mut n = 0u32;
    while role.more(n, s) {
        let t = Instant::now();
        match role.ping(conn, n, s, out).await {
            Ok(Some(p)) => {
                summary.pings += 1;
                summary.verified += u32::from(p.verified);
                if let Some(v) = p.verbose.filter(|_| s.verbose) {
                    let _ = writeln!(out, "{v}");
                }
                let _ = writeln!(
                    out,
                    "ping {n}: {} ({:.3} ms)",
                    p.line,
                    t.elapsed().as_secs_f64() * 1e3
                );
            }
            Ok(None) => break,
            Err(e) => {
                summary.failure = Some(format!("ping {n}: {e}"));
                break;
            }
        }
        n = n.wrapping_add(1);
    }
    summary
}
