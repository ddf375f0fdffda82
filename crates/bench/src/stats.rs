//! The statistics every bench reports: medians, per-round series and
//! their spread, nearest-rank percentiles.

/// Octets in a MiB.
pub(crate) const MIB: usize = 1 << 20;

/// The median of `v` (of an even count, the mean of the two middle
/// values), or NaN (reported as null) when nothing was measured.
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let mid = v.len() / 2;
    if v.len() % 2 == 0 {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    }
}

/// One figure per round.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerRound(pub Vec<f64>);

impl PerRound {
    /// The median over the rounds (NaN if none).
    pub fn median(&self) -> f64 {
        median(self.0.clone())
    }

    /// The figures multiplied by `scale` (a change of unit).
    pub fn scaled(&self, scale: f64) -> Vec<f64> {
        self.0.iter().map(|x| x * scale).collect()
    }

    /// The lowest and highest round, as "min-max" (empty: "-").
    pub fn spread(&self) -> String {
        spread(&self.0)
    }
}

/// The lowest and highest finite value of `v`, as "min-max" with two
/// decimals (none: "-").
pub fn spread(v: &[f64]) -> String {
    let mut v = v.iter().copied().filter(|x| x.is_finite());
    let Some(first) = v.next() else {
        return "-".into();
    };
    let (lo, hi) = v.fold((first, first), |(lo, hi), x| (lo.min(x), hi.max(x)));
    format!("{lo:.2}-{hi:.2}")
}

/// The nearest-rank percentile `q` (0 < q <= 100) of `sorted` (ascending):
/// the smallest sample at least q% of the samples do not exceed. NaN for
/// no samples.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![0.46, 1.05]), 0.755);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(vec![]).is_nan());
    }

    #[test]
    fn a_series_spread_is_its_lowest_and_highest_round() {
        assert_eq!(PerRound(vec![1.1, 0.873, 1.25]).spread(), "0.87-1.25");
        assert_eq!(PerRound(vec![0.9]).spread(), "0.90-0.90");
        assert_eq!(PerRound(vec![f64::NAN, 1.0]).spread(), "1.00-1.00");
        assert_eq!(PerRound(vec![]).spread(), "-");
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 90.0), 90.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&v, 99.9), 100.0);
        assert_eq!(percentile(&v, 100.0), 100.0);
        assert_eq!(percentile(&v, 0.0), 1.0);
        assert_eq!(percentile(&[7.0], 50.0), 7.0);
        assert!(percentile(&[], 50.0).is_nan());
    }
}
