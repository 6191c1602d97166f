//! Percentiles, and the median of a statistic across runs.

use std::time::Duration;

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The `p` quantile (0..=1) of `samples`, nearest rank.
pub fn percentile(samples: &[f64], p: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

/// A statistic measured once per run: its median, min and max over runs.
#[derive(Debug, Clone, Copy)]
pub struct Across {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Across {
    pub fn of(per_run: &[f64]) -> Across {
        Across {
            median: percentile(per_run, 0.5),
            min: per_run.iter().copied().fold(f64::INFINITY, f64::min),
            max: per_run.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}
