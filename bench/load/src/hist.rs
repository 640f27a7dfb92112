//! A log-linear latency histogram in the manner of HdrHistogram: 64 linear sub-buckets per
//! power of two, so any value is kept within 1/64 (1.6%) of itself, over the whole u64 range,
//! in a fixed table allocated once. Recording is an index computation and an increment.

/// Linear sub-buckets per power of two, as a power of two.
const SUB_BITS: u32 = 6;
const SUB: usize = 1 << SUB_BITS;
/// Values below SUB exactly, then SUB sub-buckets for each exponent from SUB_BITS to 63.
const BUCKETS: usize = SUB * (64 - SUB_BITS as usize + 1);

/// Counts of values (nanoseconds here) by bucket.
#[derive(Clone)]
pub struct Histogram {
    counts: Box<[u64]>,
    total: u64,
    max: u64,
    sum: u128,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            total: 0,
            max: 0,
            sum: 0,
        }
    }
}

/// The bucket of `value`.
fn index(value: u64) -> usize {
    if value < SUB as u64 {
        return value as usize;
    }
    let exponent = 63 - value.leading_zeros();
    let shift = exponent - SUB_BITS;
    let mantissa = (value >> shift) as usize - SUB;
    SUB + shift as usize * SUB + mantissa
}

/// The smallest value of bucket `i`, and its width.
fn bounds(i: usize) -> (u64, u64) {
    if i < SUB {
        return (i as u64, 1);
    }
    let shift = (i - SUB) / SUB;
    let mantissa = (i - SUB) % SUB;
    (((SUB + mantissa) as u64) << shift, 1u64 << shift)
}

impl Histogram {
    pub fn record(&mut self, value: u64) {
        if let Some(count) = self.counts.get_mut(index(value)) {
            *count += 1;
        }
        self.total += 1;
        self.max = self.max.max(value);
        self.sum += u128::from(value);
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts.iter()) {
            *mine += theirs;
        }
        self.total += other.total;
        self.max = self.max.max(other.max);
        self.sum += other.sum;
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    pub fn mean(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.sum as f64 / self.total as f64
        }
    }

    /// The value below which a fraction `q` (0..=1) of the recorded values lie: the middle of
    /// the bucket holding that rank, never above the largest value recorded.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                let (low, width) = bounds(i);
                return (low + width / 2).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_in_order() {
        let mut last = 0;
        for value in (0..10_000u64).chain([u64::MAX / 3, u64::MAX - 1, u64::MAX]) {
            let i = index(value);
            assert!(i < BUCKETS);
            assert!(i >= last, "{value}");
            last = i;
            let (low, width) = bounds(i);
            assert!(
                low <= value && value - low < width,
                "{value} in {low}+{width}"
            );
        }
    }

    #[test]
    fn quantiles_are_within_the_bucket_precision() {
        let mut h = Histogram::default();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        for (q, exact) in [
            (0.5, 50_000_000u64),
            (0.99, 99_000_000),
            (0.999, 99_900_000),
        ] {
            let got = h.quantile(q);
            let error = got.abs_diff(exact) as f64 / exact as f64;
            assert!(error < 1.0 / 64.0, "q{q}: {got} vs {exact}");
        }
        assert_eq!(h.quantile(1.0), 100_000_000);
        assert_eq!(h.count(), 100_000);
        assert!((h.mean() - 50_000_500.0).abs() < 1.0);
    }

    #[test]
    fn merging_adds_counts() {
        let mut a = Histogram::default();
        let mut b = Histogram::default();
        for v in 0..100 {
            a.record(v);
            b.record(1_000_000 + v);
        }
        a.merge(&b);
        assert_eq!(a.count(), 200);
        assert!(a.quantile(0.25) < 100);
        assert!(a.quantile(0.75) >= 1_000_000);
        assert_eq!(a.max(), 1_000_099);
    }
}
