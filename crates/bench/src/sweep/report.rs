//! The sweep's report: one JSON object (`--json`) or tables.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use super::figures::{percentile_name, size_name, Sweep, MAX_BYTES_IN_FLIGHT, PERCENTILES};
use crate::wake::Seen;

const MIB: f64 = (1u64 << 20) as f64;

/// A round-trip distribution in the JSON: each percentile by its name
/// (microseconds) and the number of samples.
#[derive(Serialize)]
struct Percentiles {
    #[serde(flatten)]
    values: BTreeMap<String, f64>,
    samples: usize,
}

/// The sweep's JSON object.
#[derive(Serialize)]
struct SweepJson<'a> {
    bench: &'static str,
    provider: &'a str,
    rpcrdma_version: u32,
    setup: &'static str,
    seconds_per_measure: f64,
    outstanding: usize,
    max_bytes_in_flight: usize,
    sizes: &'a [usize],
    throughput_mib_per_s: BTreeMap<&'static str, Vec<f64>>,
    null_rtt_us: BTreeMap<&'static str, Percentiles>,
    wake_state: Seen,
}

impl Sweep {
    /// The sweep as one JSON object: MiB/s per series and size,
    /// microseconds per path and percentile.
    pub fn json(&self) -> serde_json::Value {
        let v = SweepJson {
            bench: "sweep",
            provider: &self.label,
            rpcrdma_version: self.version,
            setup: "loopback; client and server on two threads (the raw TCP stream's receiver on a third), one current-thread tokio runtime each",
            seconds_per_measure: self.settings.secs,
            outstanding: self.settings.outstanding,
            max_bytes_in_flight: MAX_BYTES_IN_FLIGHT,
            sizes: &self.sizes,
            throughput_mib_per_s: self
                .throughput
                .iter()
                .map(|t| (t.name, t.bytes_per_s.iter().map(|x| x / MIB).collect()))
                .collect(),
            null_rtt_us: self
                .round_trips
                .iter()
                .map(|d| {
                    let values = PERCENTILES
                        .iter()
                        .zip(&d.values)
                        .map(|(q, v)| (percentile_name(*q), v * 1e6))
                        .collect();
                    (
                        d.name,
                        Percentiles {
                            values,
                            samples: d.samples,
                        },
                    )
                })
                .collect(),
            wake_state: self.seen(),
        };
        serde_json::to_value(v).expect("a report serializes")
    }

    /// The sweep as tables.
    pub fn text(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "sweep: RPC-over-RDMA v{} ({}) vs ONC RPC/TCP vs raw TCP, loopback",
            self.version, self.label
        );
        let _ = write!(o, "{:<10}", "size");
        for series in &self.throughput {
            let _ = write!(o, " {:>20}", series.name);
        }
        let _ = writeln!(o, "   (MiB/s)");
        for (i, size) in self.sizes.iter().enumerate() {
            let _ = write!(o, "{:<10}", size_name(*size));
            for series in &self.throughput {
                let v = series.bytes_per_s.get(i).copied().unwrap_or(f64::NAN);
                let _ = write!(o, " {:>20.0}", v / MIB);
            }
            let _ = writeln!(o);
        }
        let _ = writeln!(o);
        let _ = write!(o, "{:<20}", "round trip (us)");
        for q in PERCENTILES {
            let _ = write!(o, " {:>8}", percentile_name(q));
        }
        let _ = writeln!(o, " {:>8}", "samples");
        for d in &self.round_trips {
            let _ = write!(o, "{:<20}", d.name);
            for v in &d.values {
                let _ = write!(o, " {:>8.1}", v * 1e6);
            }
            let _ = writeln!(o, " {:>8}", d.samples);
        }
        let _ = writeln!(o, "{}", self.seen().line());
        o
    }
}

#[cfg(test)]
mod tests {
    use crate::sweep::figures::tests::sample;
    use crate::sweep::{PATHS, SERIES};

    #[test]
    fn text_and_json_name_every_series_and_path() {
        let s = sample();
        let t = s.text();
        for name in SERIES.iter().chain(PATHS.iter()) {
            assert!(t.contains(name), "{name} missing from\n{t}");
        }
        assert!(t.contains("16 MiB"));
        assert!(t.contains("wake-up state:"));
        let j = s.json();
        assert_eq!(j["sizes"].as_array().map(Vec::len), Some(8));
        assert_eq!(j["throughput_mib_per_s"]["raw TCP stream"][0], 200.0);
        assert_eq!(j["null_rtt_us"]["raw TCP 64 B"]["samples"], 1000);
        assert!(j["null_rtt_us"]["RPC-over-RDMA NULL"]["p99.9"].is_number());
        assert_eq!(j["wake_state"]["state"], "slow");
        assert_eq!(j["seconds_per_measure"], 0.5);
        assert_eq!(j["outstanding"], 8);
    }
}
