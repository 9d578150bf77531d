//! Percentiles over latency samples.

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
}
