//! Latency samples and their percentiles.

use std::time::Duration;

/// Latencies of one subject in one scenario.
#[derive(Debug, Default, Clone)]
pub struct Samples(Vec<Duration>);

impl Samples {
    pub fn push(&mut self, sample: Duration) {
        self.0.push(sample);
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The `q` quantile (0..=1), nearest rank; zero when empty.
    pub fn quantile(&self, q: f64) -> Duration {
        if self.0.is_empty() {
            return Duration::ZERO;
        }
        let mut sorted = self.0.clone();
        sorted.sort_unstable();
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    pub fn p50(&self) -> Duration {
        self.quantile(0.50)
    }

    pub fn p99(&self) -> Duration {
        self.quantile(0.99)
    }
}

/// Times one await.
pub async fn time<T>(future: impl Future<Output = T>) -> (Duration, T) {
    let start = std::time::Instant::now();
    let value = future.await;
    (start.elapsed(), value)
}

/// Times one blocking call.
pub fn time_blocking<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let start = std::time::Instant::now();
    let value = f();
    (start.elapsed(), value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank() {
        let mut s = Samples::default();
        for ms in 1..=100 {
            s.push(Duration::from_millis(ms));
        }
        assert_eq!(s.p50(), Duration::from_millis(50));
        assert_eq!(s.p99(), Duration::from_millis(99));
        assert_eq!(s.quantile(1.0), Duration::from_millis(100));
        assert_eq!(Samples::default().p50(), Duration::ZERO);
    }
}
