//! Order statistics over samples (µs, or any unit).

/// The `p` quantile (0..=1) of `sorted`, nearest rank; NaN when empty.
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((sorted.len() - 1) as f64 * p.clamp(0.0, 1.0)).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn sorted(samples: &[f64]) -> Vec<f64> {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

pub fn median(samples: &[f64]) -> f64 {
    quantile(&sorted(samples), 0.5)
}

#[derive(Debug, Clone, Copy)]
pub struct Summary {
    pub min: f64,
    pub p10: f64,
    pub median: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Summary {
    pub fn of(samples: &[f64]) -> Self {
        let s = sorted(samples);
        Summary {
            min: quantile(&s, 0.0),
            p10: quantile(&s, 0.1),
            median: quantile(&s, 0.5),
            p90: quantile(&s, 0.9),
            p99: quantile(&s, 0.99),
            max: quantile(&s, 1.0),
        }
    }
}

/// The header of a table of per-run summaries: what, median, spread.
pub fn summary_header(out: &mut String, runs: usize) {
    use std::fmt::Write as _;
    let _ = writeln!(out, "| what ({runs} runs) | median | p10–p90 | p99 | min–max |");
    let _ = writeln!(out, "| --- | ---: | ---: | ---: | ---: |");
}

/// One row of that table: `s` in `unit`, with `digits` after the point.
pub fn summary_row(out: &mut String, what: &str, s: Summary, unit: &str, digits: usize) {
    use std::fmt::Write as _;
    let _ = writeln!(
        out,
        "| {what} | {:.digits$} {unit} | {:.digits$}–{:.digits$} | {:.digits$} | {:.digits$}–{:.digits$} |",
        s.median, s.p10, s.p90, s.p99, s.min, s.max
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_one_to_a_hundred_and_one() {
        let v: Vec<f64> = (1..=101).rev().map(f64::from).collect();
        let s = Summary::of(&v);
        assert_eq!(
            (s.min, s.p10, s.median, s.p90, s.p99, s.max),
            (1.0, 11.0, 51.0, 91.0, 100.0, 101.0)
        );
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[3.0]), 3.0);
    }
}
