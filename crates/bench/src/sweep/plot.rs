//! The sweep as a picture (`rpcrdma bench --sweep --plot FILE.svg`; SVG,
//! drawn with `plotters`): on the left throughput against message size
//! (both axes logarithmic), on the right the NULL round-trip percentiles of
//! each path (logarithmic microseconds).

use anyhow::anyhow;
use plotters::prelude::*;

use super::figures::{percentile_name, size_name, Sweep, PERCENTILES};

/// Width and height of the picture, pixels.
pub const SIZE: (u32, u32) = (1280, 520);

/// One color per series, in order (the round-trip paths reuse the first
/// three plus the raw TCP color for raw TCP).
const COLORS: [RGBColor; 5] = [
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0x33, 0x33, 0x33),
];

/// A logarithmic axis range around the finite positive values of `v`.
fn log_range(v: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = v
        .filter(|x| x.is_finite() && *x > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
    if lo.is_finite() && hi > 0.0 {
        lo / 2.0..hi * 2.0
    } else {
        1.0..10.0
    }
}

/// `v[x]` when `x` is (close to) an index of `v`: the label of an axis
/// whose points sit at 0, 1, 2, ...
fn at_index<T: Copy>(x: f64, v: &[T]) -> Option<T> {
    let i = x.round();
    ((x - i).abs() < 0.01 && i >= 0.0)
        .then(|| v.get(i as usize).copied())
        .flatten()
}

/// One series on `chart`: a 2-pixel line through `points` with a dot on
/// each, named `name` in the legend.
fn line_with_dots<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    points: Vec<(f64, f64)>,
    color: RGBColor,
    name: &str,
) -> anyhow::Result<()>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate<From = (f64, f64)>,
{
    let err = |e: &dyn std::fmt::Display| anyhow!("cannot draw the sweep: {e}");
    chart
        .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
        .map_err(|e| err(&e))?
        .label(name)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    chart
        .draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 3, color.filled())),
        )
        .map_err(|e| err(&e))?;
    Ok(())
}

/// The sweep as an SVG document.
pub fn svg(s: &Sweep) -> anyhow::Result<String> {
    let err = |e: &dyn std::fmt::Display| anyhow!("cannot draw the sweep: {e}");
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let (left, right) = root.split_horizontally(SIZE.0 * 3 / 5);

        // Throughput against size: the sizes are powers of 4, equally
        // spaced on a logarithmic axis, each labelled with its size.
        let last_size = s.sizes.len().saturating_sub(1) as f64;
        let y = log_range(
            s.throughput
                .iter()
                .flat_map(|t| t.bytes_per_s.iter().map(|b| b / 1048576.0)),
        );
        let title = format!(
            "Throughput vs message size ({} v{}, loopback)",
            s.label, s.version
        );
        let mut chart = ChartBuilder::on(&left)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.3..last_size + 0.3, y.log_scale())
            .map_err(|e| err(&e))?;
        let sizes = s.sizes.clone();
        chart
            .configure_mesh()
            .x_labels(sizes.len())
            .x_label_formatter(&|x| at_index(*x, &sizes).map(size_name).unwrap_or_default())
            .x_desc("message size (logarithmic)")
            .y_desc("MiB/s")
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()
            .map_err(|e| err(&e))?;
        for (i, t) in s.throughput.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let points: Vec<(f64, f64)> = t
                .bytes_per_s
                .iter()
                .take(s.sizes.len())
                .enumerate()
                .filter(|(_, b)| b.is_finite() && **b > 0.0)
                .map(|(j, b)| (j as f64, b / 1048576.0))
                .collect();
            line_with_dots(&mut chart, points, color, t.name)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;

        // Round-trip percentiles, microseconds.
        let y = log_range(
            s.round_trips
                .iter()
                .flat_map(|d| d.values.iter().map(|v| v * 1e6)),
        );
        let last = (PERCENTILES.len() - 1) as f64;
        let mut chart = ChartBuilder::on(&right)
            .caption(
                format!(
                    "NULL round trip percentiles (wake-ups: {})",
                    s.seen().state.map_or("unknown", |w| w.name())
                ),
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.3..last + 0.3, y.log_scale())
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_labels(PERCENTILES.len())
            .x_label_formatter(&|x| {
                at_index(*x, &PERCENTILES)
                    .map(percentile_name)
                    .unwrap_or_default()
            })
            .x_desc("percentile")
            .y_desc("microseconds")
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()
            .map_err(|e| err(&e))?;
        for (i, d) in s.round_trips.iter().enumerate() {
            // RPC-over-RDMA red, ONC RPC/TCP blue, raw TCP dark grey.
            let color = COLORS[[0, 2, 4][i % 3]];
            let points: Vec<(f64, f64)> = d
                .values
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite() && **v > 0.0)
                .map(|(j, v)| (j as f64, v * 1e6))
                .collect();
            line_with_dots(&mut chart, points, color, d.name)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::figures::tests::sample;
    use crate::sweep::{PATHS, SERIES};

    #[test]
    fn svg_draws_every_series_and_path() {
        let svg = svg(&sample()).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
        assert!(svg.trim_end().ends_with("</svg>"));
        for name in SERIES.iter().chain(PATHS.iter()) {
            assert!(svg.contains(name), "{name} missing from the picture");
        }
        for label in ["p50", "p99.9", "max", "1 KiB", "16 MiB", "MiB/s"] {
            assert!(svg.contains(label), "{label} missing from the picture");
        }
        // Five throughput lines and three round-trip lines (the series
        // are the only lines two pixels wide).
        assert_eq!(svg.matches(r#"stroke-width="2""#).count(), 8, "{svg}");
    }

    #[test]
    fn svg_survives_missing_figures() {
        let mut s = sample();
        for t in &mut s.throughput {
            t.bytes_per_s.iter_mut().for_each(|b| *b = f64::NAN);
        }
        let svg = svg(&s).unwrap();
        assert!(svg.contains("raw TCP stream"));
    }
}
