//! The small-calls report: calls per second and CPU per call of every
//! measure, the ratios, and issue 36's goals, as one JSON object or a
//! table.

use std::fmt::Write;

use serde::Serialize;

use super::lanes::Op;
use super::run::{Measure, Outcome, PathFigures, SmallSettings};
use crate::build_info::{pgo_line, PGO_BUILD};
use crate::stats::median;
use crate::wake::Seen;

/// Issue 36's goal for NULL at 32 outstanding on one connection: calls
/// per second.
pub const GOAL_RATE: f64 = 1_000_000.0;
/// Issue 36's goal for NULL at 32 outstanding on one connection: times
/// ONC RPC/TCP's rate.
pub const GOAL_VS_ONCRPC: f64 = 2.0;
/// Issue 36's goal for NULL at 32 outstanding on one connection: times
/// the raw TCP exchange's rate.
pub const GOAL_VS_RAW: f64 = 0.7;

/// How to read the report (said in every text report and in the JSON).
pub const NOTE: &str =
    "Each measure keeps DEPTH calls outstanding per connection (DEPTH tasks calling in \
turn) for --small-secs; with N connections, N times as many. The three paths of a measure run back \
to back (RPC-over-RDMA in the middle, the order flipped every round); the ratios are medians of \
per-round ratios. raw TCP: messages of the same size (NULL: 64 octets) kept DEPTH deep, each side \
reading what has arrived and answering it with one write. ECHO over RPC-over-RDMA with the default \
4096-octet inline thresholds: a 4 KiB ECHO's call and reply do not fit inline (Long messages, an \
RDMA Read and an RDMA Write per call). CPU per call: every thread of this process (both ends, \
with the kernel's work in their system calls) over the calls made.";

/// One path's figures in the JSON.
#[derive(Serialize)]
struct FiguresJson {
    calls_per_s: f64,
    cpu_us_per_call: f64,
    per_round_calls_per_s: Vec<f64>,
}

impl FiguresJson {
    fn of(f: &PathFigures) -> Self {
        FiguresJson {
            calls_per_s: median(f.per_s.clone()),
            cpu_us_per_call: median(f.cpu_us_per_call.clone()),
            per_round_calls_per_s: f.per_s.clone(),
        }
    }
}

/// One measure in the JSON.
#[derive(Serialize)]
struct MeasureJson {
    op: &'static str,
    connections: usize,
    depth: usize,
    rpcrdma: FiguresJson,
    oncrpc_tcp: FiguresJson,
    raw_tcp: FiguresJson,
    rpcrdma_vs_oncrpc_tcp: f64,
    rpcrdma_vs_raw_tcp: f64,
    per_round_rpcrdma_vs_oncrpc_tcp: Vec<f64>,
    per_round_rpcrdma_vs_raw_tcp: Vec<f64>,
}

/// The goals, as text.
#[derive(Serialize)]
struct GoalsJson {
    null_depth32_one_connection_calls_per_s: String,
    null_depth32_one_connection_vs_oncrpc_tcp: String,
    null_depth32_one_connection_vs_raw_tcp: String,
}

/// The figures the goals are about.
#[derive(Serialize)]
struct GoalFiguresJson {
    calls_per_s: f64,
    vs_oncrpc_tcp: f64,
    vs_raw_tcp: f64,
}

/// The small-calls JSON object.
#[derive(Serialize)]
struct SmallJson<'a> {
    bench: &'static str,
    provider: &'a str,
    setup: &'static str,
    rounds: usize,
    secs_per_measure: f64,
    depths: &'a [usize],
    connections: usize,
    echo_size: usize,
    measures: Vec<MeasureJson>,
    goals: GoalsJson,
    goal_figures: Option<GoalFiguresJson>,
    note: &'static str,
    wake_state: Seen,
    pgo_build: bool,
}

/// The report of a small-calls run (`rpcrdma bench --small`):
/// [`SmallReport::json`] or [`SmallReport::text`].
#[derive(Debug, Clone)]
pub struct SmallReport {
    outcome: Outcome,
    settings: SmallSettings,
    label: String,
    seen: Seen,
}

impl SmallReport {
    /// The report of `outcome`, measured with `settings` over the provider
    /// `label`.
    pub fn new(outcome: Outcome, settings: SmallSettings, label: String) -> Self {
        let seen = Seen::from_rtts(&outcome.rtts_us);
        SmallReport {
            outcome,
            settings,
            label,
            seen,
        }
    }

    /// The measure the goals are about: NULL, 32 outstanding, one
    /// connection (if measured).
    fn goal(&self) -> Option<&Measure> {
        self.outcome
            .measures
            .iter()
            .find(|m| m.op == Op::Null && m.connections == 1 && m.depth == 32)
    }

    /// The report as one JSON object.
    pub fn json(&self) -> serde_json::Value {
        let measures = self
            .outcome
            .measures
            .iter()
            .map(|m| MeasureJson {
                op: m.op.name(),
                connections: m.connections,
                depth: m.depth,
                rpcrdma: FiguresJson::of(&m.rdma),
                oncrpc_tcp: FiguresJson::of(&m.oncrpc),
                raw_tcp: FiguresJson::of(&m.raw),
                rpcrdma_vs_oncrpc_tcp: median(m.vs_oncrpc.clone()),
                rpcrdma_vs_raw_tcp: median(m.vs_raw.clone()),
                per_round_rpcrdma_vs_oncrpc_tcp: m.vs_oncrpc.clone(),
                per_round_rpcrdma_vs_raw_tcp: m.vs_raw.clone(),
            })
            .collect();
        let s = &self.settings;
        let v = SmallJson {
            bench: "small",
            provider: &self.label,
            setup: "loopback; the bench server on one thread, every client connection on another, one current-thread tokio runtime each",
            rounds: s.rounds,
            secs_per_measure: s.secs,
            depths: &s.depths,
            connections: s.connections,
            echo_size: s.echo_size,
            measures,
            goals: GoalsJson {
                null_depth32_one_connection_calls_per_s: format!(">= {GOAL_RATE}"),
                null_depth32_one_connection_vs_oncrpc_tcp: format!(">= {GOAL_VS_ONCRPC}"),
                null_depth32_one_connection_vs_raw_tcp: format!(">= {GOAL_VS_RAW}"),
            },
            goal_figures: self.goal().map(|m| GoalFiguresJson {
                calls_per_s: median(m.rdma.per_s.clone()),
                vs_oncrpc_tcp: median(m.vs_oncrpc.clone()),
                vs_raw_tcp: median(m.vs_raw.clone()),
            }),
            note: NOTE,
            wake_state: self.seen.clone(),
            pgo_build: PGO_BUILD,
        };
        serde_json::to_value(v).expect("a report serializes")
    }

    /// The report as a table, ending with the goals and the notes.
    pub fn text(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "Small calls ({}): calls/s (median of {} rounds of {} s per measure) and CPU per call",
            self.label, self.settings.rounds, self.settings.secs
        );
        let _ = writeln!(
            o,
            "{:<5} {:>5} {:>5} {:>11} {:>11} {:>11} {:>9} {:>9} {:>22}",
            "op",
            "conns",
            "depth",
            "RPC/RDMA",
            "ONC/TCP",
            "raw TCP",
            "vs ONC",
            "vs raw",
            "CPU us/call (R/O/raw)"
        );
        for m in &self.outcome.measures {
            let cpu = |f: &PathFigures| median(f.cpu_us_per_call.clone());
            let _ = writeln!(
                o,
                "{:<5} {:>5} {:>5} {:>11.0} {:>11.0} {:>11.0} {:>9.2} {:>9.2} {:>22}",
                m.op.name(),
                m.connections,
                m.depth,
                median(m.rdma.per_s.clone()),
                median(m.oncrpc.per_s.clone()),
                median(m.raw.per_s.clone()),
                median(m.vs_oncrpc.clone()),
                median(m.vs_raw.clone()),
                format!(
                    "{:.2}/{:.2}/{:.2}",
                    cpu(&m.rdma),
                    cpu(&m.oncrpc),
                    cpu(&m.raw)
                ),
            );
        }
        if let Some(m) = self.goal() {
            let _ = writeln!(
                o,
                "goals, NULL at 32 outstanding on one connection: {:.0} calls/s (goal >= {GOAL_RATE:.0}), {:.2} x ONC RPC/TCP (>= {GOAL_VS_ONCRPC}), {:.2} x raw TCP (>= {GOAL_VS_RAW})",
                median(m.rdma.per_s.clone()),
                median(m.vs_oncrpc.clone()),
                median(m.vs_raw.clone())
            );
        }
        let _ = writeln!(o, "{NOTE}");
        let _ = writeln!(o, "{}", self.seen.line());
        let _ = writeln!(o, "{}", pgo_line());
        o
    }
}
