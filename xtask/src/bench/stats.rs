//! Percentiles over latency samples, and the median of a suite's rounds.

use std::time::Duration;

/// The `p`-th percentile (0–100) by nearest rank; zero for no samples.
pub fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort_unstable();
    let rank = ((p / 100.0) * samples.len() as f64).ceil() as usize;
    samples[rank.clamp(1, samples.len()) - 1]
}

/// The middle of `values`, the lower of the two for an even count (a figure one round really had);
/// `None` for no values.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len().saturating_sub(1) / 2).copied()
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let mut s: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&mut s, 50.0), Duration::from_millis(50));
        assert_eq!(percentile(&mut s, 99.0), Duration::from_millis(99));
        assert_eq!(percentile(&mut s, 100.0), Duration::from_millis(100));
        assert_eq!(percentile(&mut [], 50.0), Duration::ZERO);
    }

    #[test]
    fn median_takes_the_lower_middle() {
        for (values, want) in [
            (vec![], None),
            (vec![3.0], Some(3.0)),
            (vec![3.0, 1.0, 2.0], Some(2.0)),
            (vec![4.0, 1.0, 3.0, 2.0], Some(2.0)),
        ] {
            assert_eq!(median(&values), want, "{values:?}");
        }
    }
}
