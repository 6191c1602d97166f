//! The markdown table, the JSON lines and the latency picture.

use std::fmt::Write as _;

use crate::stats::{percentile, Across};

/// One compared metric: ours against the best of the other side's variants.
pub struct Row {
    pub metric: String,
    pub unit: &'static str,
    /// "lower" or "higher" is better.
    pub better: &'static str,
    pub ours: Across,
    /// The best variant's statistic (rmcp's best configuration for this
    /// metric, or for the stack row our bare make-service).
    pub other: Across,
    /// `rmcp` or `bare`: the JSON key of the other side.
    pub other_kind: &'static str,
    /// Which variant was best.
    pub other_variant: &'static str,
    /// ours / best, per run (paired), as median, min and max.
    pub ratio: Across,
    /// The raw-hyper floor, where one exists, and ours / floor per run.
    pub floor: Option<(Across, Across)>,
}

/// Per-run ratios a / b, paired by run.
fn paired(a: &[f64], b: &[f64]) -> Across {
    let ratios: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(a, b)| if b.abs() < 1e-9 { f64::NAN } else { a / b })
        .collect();
    Across::of(&ratios)
}

impl Row {
    /// Compares `ours` with each of `others` (per-run values, paired by run)
    /// and keeps the best variant: the one with the best median in the
    /// `better` direction.
    pub fn best_of(
        metric: String,
        unit: &'static str,
        better: &'static str,
        ours: &[f64],
        others: Vec<(&'static str, Vec<f64>)>,
        other_kind: &'static str,
    ) -> Row {
        let key = |values: &Vec<f64>| {
            let median = Across::of(values).median;
            if better == "higher" {
                -median
            } else {
                median
            }
        };
        let (variant, best) = others
            .into_iter()
            .min_by(|a, b| key(&a.1).total_cmp(&key(&b.1)))
            .expect("at least one other variant");
        Row {
            metric,
            unit,
            better,
            ours: Across::of(ours),
            other: Across::of(&best),
            other_kind,
            other_variant: variant,
            ratio: paired(ours, &best),
            floor: None,
        }
    }

    /// Adds the floor's per-run values.
    pub fn with_floor(mut self, ours: &[f64], floor: &[f64]) -> Row {
        self.floor = Some((Across::of(floor), paired(ours, floor)));
        self
    }

    /// Whether the per-run ratios all fall on one side of 1.
    pub fn distinguishable(&self) -> bool {
        !self.ratio.median.is_nan() && (self.ratio.max < 1.0 || self.ratio.min > 1.0)
    }

    pub fn json(&self) -> String {
        let number = |v: f64| {
            if v.is_nan() {
                serde_json::Value::Null
            } else {
                v.into()
            }
        };
        let mut object = serde_json::json!({
            "metric": self.metric,
            "unit": self.unit,
            "better": self.better,
            "ours": self.ours.median,
            "ours_min": self.ours.min,
            "ours_max": self.ours.max,
            "ratio": number(self.ratio.median),
            "ratio_min": number(self.ratio.min),
            "ratio_max": number(self.ratio.max),
            "distinguishable": self.distinguishable(),
        });
        let kind = self.other_kind;
        object[kind] = self.other.median.into();
        object[format!("{kind}_min")] = self.other.min.into();
        object[format!("{kind}_max")] = self.other.max.into();
        object[format!("{kind}_variant")] = self.other_variant.into();
        if let Some((floor, ratio)) = self.floor {
            object["floor"] = floor.median.into();
            object["floor_min"] = floor.min.into();
            object["floor_max"] = floor.max.into();
            object["floor_ratio"] = number(ratio.median);
            object["floor_ratio_min"] = number(ratio.min);
            object["floor_ratio_max"] = number(ratio.max);
        }
        object.to_string()
    }
}

fn cell(a: Across) -> String {
    format!("{:.3} ({:.3}–{:.3})", a.median, a.min, a.max)
}

pub fn markdown(rows: &[Row], runs: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Median across {runs} runs of each run's statistic (min–max in brackets). \"other\" is the best variant for that metric (named). Ratio = median of the per-run ratios ours / other (min–max); \"not distinguishable\" when that range crosses 1. \"better\" says which way is good."
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "| metric | unit | ours | other | other is | ratio | better | floor | ours / floor |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
    for row in rows {
        let ratio = if row.ratio.median.is_nan() {
            "n/a".to_owned()
        } else if row.distinguishable() {
            format!(
                "{:.2} ({:.2}–{:.2})",
                row.ratio.median, row.ratio.min, row.ratio.max
            )
        } else {
            format!(
                "{:.2} ({:.2}–{:.2}), not distinguishable",
                row.ratio.median, row.ratio.min, row.ratio.max
            )
        };
        let (floor, floor_ratio) = match row.floor {
            Some((floor, ratio)) => (
                cell(floor),
                format!("{:.2} ({:.2}–{:.2})", ratio.median, ratio.min, ratio.max),
            ),
            None => ("".to_owned(), "".to_owned()),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {ratio} | {} | {floor} | {floor_ratio} |",
            row.metric,
            row.unit,
            cell(row.ours),
            cell(row.other),
            row.other_variant,
            row.better
        );
    }
    out
}

/// Cumulative distributions of establishment latency, as an SVG.
pub fn svg(curves: &[(String, &'static str, Vec<f64>)]) -> String {
    let (width, height, left, bottom, top, right) = (760.0, 420.0, 60.0, 50.0, 30.0, 200.0);
    let max_x = curves
        .iter()
        .map(|(_, _, s)| percentile(s, 0.995))
        .fold(0.0_f64, f64::max)
        .max(0.001);
    let plot_w = width - left - right;
    let plot_h = height - top - bottom;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = write!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = write!(
        out,
        r#"<text x="{}" y="18" text-anchor="middle" font-size="14">Establishment latency, cumulative distribution (last run)</text>"#,
        left + plot_w / 2.0
    );
    let _ = write!(
        out,
        r#"<line x1="{left}" y1="{y}" x2="{x}" y2="{y}" stroke="black"/><line x1="{left}" y1="{top}" x2="{left}" y2="{y}" stroke="black"/>"#,
        y = top + plot_h,
        x = left + plot_w
    );
    for i in 0..=5 {
        let value = max_x * i as f64 / 5.0;
        let x = left + plot_w * i as f64 / 5.0;
        let _ = write!(
            out,
            r#"<text x="{x}" y="{}" text-anchor="middle">{value:.2}</text>"#,
            top + plot_h + 18.0
        );
        let fraction = i as f64 / 5.0;
        let y = top + plot_h * (1.0 - fraction);
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" text-anchor="end">{fraction:.1}</text>"#,
            left - 6.0,
            y + 4.0
        );
    }
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">milliseconds</text>"#,
        left + plot_w / 2.0,
        height - 10.0
    );
    for (n, (name, color, samples)) in curves.iter().enumerate() {
        let mut sorted = samples.clone();
        sorted.sort_by(f64::total_cmp);
        let points: Vec<String> = sorted
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let x = left + plot_w * (v / max_x).min(1.0);
                let y = top + plot_h * (1.0 - (i + 1) as f64 / sorted.len() as f64);
                format!("{x:.1},{y:.1}")
            })
            .collect();
        let dash = if name.starts_with("rmcp") {
            r#" stroke-dasharray="6 3""#
        } else {
            ""
        };
        let _ = write!(
            out,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="{}"/>"#,
            points.join(" ")
        );
        let ly = top + 20.0 + n as f64 * 20.0;
        let lx = left + plot_w + 15.0;
        let _ = write!(
            out,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="2"{dash}/><text x="{}" y="{}">{name}</text>"#,
            lx + 25.0,
            lx + 30.0,
            ly + 4.0
        );
    }
    out.push_str("</svg>\n");
    out
}

/// One line of a scaling plot: a name and its (x, y) points.
pub type Series = (String, Vec<(f64, f64)>);

/// One panel of a scaling plot.
pub struct Panel {
    pub title: &'static str,
    pub x_label: &'static str,
    pub y_label: &'static str,
    pub series: Vec<Series>,
}

/// Panels side by side, x on a log scale (concurrency, sessions held).
pub fn scaling_svg(panels: &[Panel]) -> String {
    const COLORS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"];
    let (panel_w, height, margin) = (340.0, 360.0, 55.0);
    let width = panel_w * panels.len() as f64;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11"><rect width="100%" height="100%" fill="white"/>"#
    );
    for (p, panel) in panels.iter().enumerate() {
        let x0 = panel_w * p as f64 + margin;
        let (plot_w, plot_h, top) = (panel_w - margin - 15.0, height - 130.0, 30.0);
        let points = panel.series.iter().flat_map(|(_, pts)| pts.iter());
        let (mut min_x, mut max_x, mut max_y) = (f64::INFINITY, 0.0_f64, 0.0_f64);
        for (x, y) in points {
            min_x = min_x.min(*x);
            max_x = max_x.max(*x);
            max_y = max_y.max(*y);
        }
        let (lx0, lx1) = (min_x.max(1.0).log10(), max_x.max(10.0).log10());
        let span = (lx1 - lx0).max(1e-9);
        let max_y = max_y.max(1e-9) * 1.1;
        let at = |x: f64, y: f64| {
            (
                x0 + plot_w * (x.max(1.0).log10() - lx0) / span,
                top + plot_h * (1.0 - y / max_y),
            )
        };
        let _ = write!(
            out,
            r#"<text x="{}" y="18" text-anchor="middle" font-size="13">{}</text>"#,
            x0 + plot_w / 2.0,
            panel.title
        );
        let _ = write!(
            out,
            r#"<line x1="{x0}" y1="{b}" x2="{r}" y2="{b}" stroke="black"/><line x1="{x0}" y1="{top}" x2="{x0}" y2="{b}" stroke="black"/>"#,
            b = top + plot_h,
            r = x0 + plot_w
        );
        for i in 0..=4 {
            let y_value = max_y * i as f64 / 4.0;
            let y = top + plot_h * (1.0 - i as f64 / 4.0);
            let _ = write!(
                out,
                r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
                x0 - 4.0,
                y + 4.0,
                short(y_value)
            );
        }
        let mut decade = 10f64.powf(lx0.floor());
        while decade <= max_x * 1.0001 {
            if decade >= min_x * 0.9999 {
                let (x, _) = at(decade, 0.0);
                let _ = write!(
                    out,
                    r#"<text x="{x}" y="{}" text-anchor="middle">{}</text>"#,
                    top + plot_h + 15.0,
                    short(decade)
                );
            }
            decade *= 10.0;
        }
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text><text x="{}" y="{}" text-anchor="middle" transform="rotate(-90 {} {})">{}</text>"#,
            x0 + plot_w / 2.0,
            top + plot_h + 32.0,
            panel.x_label,
            x0 - 42.0,
            top + plot_h / 2.0,
            x0 - 42.0,
            top + plot_h / 2.0,
            panel.y_label
        );
        for (n, (name, pts)) in panel.series.iter().enumerate() {
            let color = COLORS[n % COLORS.len()];
            let path: Vec<String> = pts
                .iter()
                .map(|(x, y)| {
                    let (x, y) = at(*x, *y);
                    format!("{x:.1},{y:.1}")
                })
                .collect();
            let _ = write!(
                out,
                r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
                path.join(" ")
            );
            for (x, y) in pts {
                let (x, y) = at(*x, *y);
                let _ = write!(
                    out,
                    r#"<circle cx="{x:.1}" cy="{y:.1}" r="3" fill="{color}"/>"#
                );
            }
            let _ = write!(
                out,
                r#"<text x="{x0}" y="{}" fill="{color}">{name}</text>"#,
                top + plot_h + 50.0 + 14.0 * n as f64
            );
        }
    }
    out.push_str("</svg>\n");
    out
}

fn short(value: f64) -> String {
    if value >= 1000.0 {
        format!("{:.1}k", value / 1000.0).replace(".0k", "k")
    } else if value >= 10.0 || value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.2}")
    }
}
