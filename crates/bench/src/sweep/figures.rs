//! What a sweep measured: its message sizes, throughput series and
//! round-trip distributions.

use crate::stats::percentile;
use crate::wake::Seen;

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

/// Smallest message size of the sweep.
pub const SMALLEST: usize = KIB;
/// Largest message size of the sweep (the demo program's READ/WRITE limit).
pub const LARGEST: usize = 16 * MIB;
/// Most octets of calls kept in flight per path (the server's default
/// per-connection memory is 64 MiB): 16 MiB calls go 4 at a time.
pub const MAX_BYTES_IN_FLIGHT: usize = 64 * MIB;

/// What a sweep is asked to do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepSettings {
    /// Seconds per throughput measure (5 measures per size).
    pub secs: f64,
    /// NULL round trips per path.
    pub round_trips: usize,
    /// Calls kept in flight (fewer for the largest sizes).
    pub outstanding: usize,
}

/// The message sizes of the sweep: 1 KiB to 16 MiB, powers of 4.
pub fn sizes() -> Vec<usize> {
    std::iter::successors(Some(SMALLEST), |s| Some(s * 4))
        .take_while(|&s| s <= LARGEST)
        .collect()
}

/// Calls of `size` octets kept in flight, `wanted` at most.
pub fn outstanding_for(size: usize, wanted: usize) -> usize {
    wanted.clamp(1, (MAX_BYTES_IN_FLIGHT / size.max(1)).max(1))
}

/// A human name for a size: "1 KiB", "16 MiB".
pub fn size_name(size: usize) -> String {
    if size >= MIB && size % MIB == 0 {
        format!("{} MiB", size / MIB)
    } else if size >= KIB && size % KIB == 0 {
        format!("{} KiB", size / KIB)
    } else {
        format!("{size} B")
    }
}

/// The percentiles a round-trip distribution is reported by.
pub const PERCENTILES: [f64; 5] = [50.0, 90.0, 99.0, 99.9, 100.0];

/// A round-trip distribution: [`PERCENTILES`] of its samples (seconds).
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    /// The path ("RPC-over-RDMA NULL", ...).
    pub name: &'static str,
    /// Samples taken.
    pub samples: usize,
    /// One value per entry of [`PERCENTILES`], seconds.
    pub values: Vec<f64>,
}

impl Distribution {
    /// The distribution of `samples` (seconds).
    pub fn of(name: &'static str, mut samples: Vec<f64>) -> Self {
        samples.retain(|x| x.is_finite());
        samples.sort_by(|a, b| a.total_cmp(b));
        Distribution {
            name,
            samples: samples.len(),
            values: PERCENTILES
                .iter()
                .map(|&q| percentile(&samples, q))
                .collect(),
        }
    }

    /// The median, seconds.
    pub fn p50(&self) -> f64 {
        self.values[0]
    }
}

/// The name of a percentile: "p50", "p99.9", "max".
pub fn percentile_name(q: f64) -> String {
    if q >= 100.0 {
        "max".into()
    } else {
        format!("p{q}")
    }
}

/// One throughput series: a figure (octets per second) per size.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// What moved ("RPC-over-RDMA READ", ...).
    pub name: &'static str,
    /// One figure per entry of [`Sweep::sizes`], octets per second.
    pub bytes_per_s: Vec<f64>,
}

/// Names of the throughput series, in the order of [`Sweep::throughput`].
pub const SERIES: [&str; 5] = [
    "RPC-over-RDMA READ",
    "RPC-over-RDMA WRITE",
    "ONC RPC/TCP READ",
    "ONC RPC/TCP WRITE",
    "raw TCP stream",
];

/// Names of the round-trip distributions, in the order of
/// [`Sweep::round_trips`].
pub const PATHS: [&str; 3] = ["RPC-over-RDMA NULL", "ONC RPC/TCP NULL", "raw TCP 64 B"];

/// Everything a sweep measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// The provider's label.
    pub label: String,
    /// The RPC-over-RDMA version negotiated.
    pub version: u32,
    /// What the sweep was asked to do.
    pub settings: SweepSettings,
    /// Message sizes, octets.
    pub sizes: Vec<usize>,
    /// One series per entry of [`SERIES`].
    pub throughput: Vec<Series>,
    /// One distribution per entry of [`PATHS`].
    pub round_trips: Vec<Distribution>,
}

impl Sweep {
    /// The wake-up state the raw TCP round trips say.
    pub fn seen(&self) -> Seen {
        let raw = self.round_trips.iter().find(|d| d.name == PATHS[2]);
        let rtts: Vec<f64> = raw.map(|d| d.p50() * 1e6).into_iter().collect();
        Seen::from_rtts(&rtts)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A sweep with made-up figures, for the output and picture tests.
    pub(crate) fn sample() -> Sweep {
        let sizes = sizes();
        Sweep {
            label: "soft-iWARP".into(),
            version: 2,
            settings: SweepSettings {
                secs: 0.5,
                round_trips: 3000,
                outstanding: 8,
            },
            throughput: SERIES
                .iter()
                .enumerate()
                .map(|(j, &name)| Series {
                    name,
                    bytes_per_s: (0..sizes.len())
                        .map(|i| ((i + 1) * (j + 1) * 40 * MIB) as f64)
                        .collect(),
                })
                .collect(),
            sizes,
            round_trips: PATHS
                .iter()
                .enumerate()
                .map(|(j, &name)| {
                    Distribution::of(name, (1..=1000).map(|i| (i + j) as f64 * 1e-7).collect())
                })
                .collect(),
        }
    }

    #[test]
    fn sizes_are_powers_of_four_from_1_kib_to_16_mib() {
        assert_eq!(
            sizes(),
            vec![
                KIB,
                4 * KIB,
                16 * KIB,
                64 * KIB,
                256 * KIB,
                MIB,
                4 * MIB,
                16 * MIB
            ]
        );
        assert_eq!(size_name(KIB), "1 KiB");
        assert_eq!(size_name(256 * KIB), "256 KiB");
        assert_eq!(size_name(16 * MIB), "16 MiB");
        assert_eq!(size_name(100), "100 B");
    }

    #[test]
    fn outstanding_keeps_in_flight_octets_bounded() {
        assert_eq!(outstanding_for(KIB, 8), 8);
        assert_eq!(outstanding_for(4 * MIB, 8), 8);
        assert_eq!(outstanding_for(16 * MIB, 8), 4);
        assert_eq!(outstanding_for(16 * MIB, 0), 1);
        assert_eq!(outstanding_for(usize::MAX, 8), 1);
    }

    #[test]
    fn distributions_sort_and_drop_nan() {
        // Unsorted input with a NaN: sorted, the NaN dropped.
        let d = Distribution::of("x", vec![3.0, f64::NAN, 1.0, 2.0]);
        assert_eq!(d.samples, 3);
        assert_eq!(d.values, vec![2.0, 3.0, 3.0, 3.0, 3.0]);
        assert_eq!(percentile_name(99.9), "p99.9");
        assert_eq!(percentile_name(100.0), "max");
    }
}
