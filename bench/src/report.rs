//! The markdown table, the JSON lines and the latency picture.

use std::fmt::Write as _;

use crate::stats::{percentile, Across};

/// One compared metric.
pub struct Row {
    pub metric: String,
    pub unit: &'static str,
    /// "lower" or "higher" is better.
    pub better: &'static str,
    pub ours: Across,
    /// rmcp, or for the stack row our bare make-service.
    pub other: Across,
    pub other_name: &'static str,
}

impl Row {
    /// ours / other; NaN (printed "n/a", JSON null) when other is zero.
    pub fn ratio(&self) -> f64 {
        if self.other.median.abs() < 1e-9 {
            f64::NAN
        } else {
            self.ours.median / self.other.median
        }
    }

    pub fn json(&self) -> String {
        let mut object = serde_json::json!({
            "metric": self.metric,
            "unit": self.unit,
            "ours": self.ours.median,
            "ours_min": self.ours.min,
            "ours_max": self.ours.max,
            "ratio": self.ratio(),
            "better": self.better,
        });
        object[self.other_name] = self.other.median.into();
        object[format!("{}_min", self.other_name)] = self.other.min.into();
        object[format!("{}_max", self.other_name)] = self.other.max.into();
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
        "Median across {runs} runs of each run's statistic (min–max in brackets). Ratio = ours / other; \"better\" says which way is good."
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "| metric | unit | ours | other | other is | ratio | better |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for row in rows {
        let ratio = row.ratio();
        let ratio = if ratio.is_nan() {
            "n/a".to_owned()
        } else {
            format!("{ratio:.2}")
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {ratio} | {} |",
            row.metric,
            row.unit,
            cell(row.ours),
            cell(row.other),
            row.other_name,
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
