//! A receiver's byte budget for what it holds in memory before it is on
//! disk: request bodies as they arrive and what they decompress and decode
//! to (HTTP receivers), messages not whole yet on every connection
//! (syslog), chunks waiting for the rest of their message (GELF). One
//! budget per receiver, shared by all its connections: past it, the input
//! that would need more is refused (429, a closed connection, a count)
//! rather than the process growing without bound.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// One receiver's budget.
#[derive(Debug)]
pub struct Budget {
    max: usize,
    used: AtomicUsize,
    gauge: prometheus::IntGauge,
}

impl Budget {
    /// A budget of `max` bytes, shown as `tailship_receiver_pending_bytes{source}`.
    pub fn new(source: &str, max: usize) -> Arc<Self> {
        let gauge = super::metrics::NetMetrics::get().pending_bytes.with_label_values(&[source]);
        Arc::new(Self { max, used: AtomicUsize::new(0), gauge })
    }

    /// The budget's size.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Bytes held now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Takes `n` bytes, if they fit.
    fn try_take(&self, n: usize) -> bool {
        let mut cur = self.used.load(Ordering::Relaxed);
        loop {
            if cur.saturating_add(n) > self.max {
                return false;
            }
            match self.used.compare_exchange_weak(cur, cur + n, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => {
                    self.gauge.add(n as i64);
                    return true;
                }
                Err(now) => cur = now,
            }
        }
    }

    fn give(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
        self.gauge.sub(n as i64);
    }

    /// An empty hold on this budget, to grow as input arrives.
    pub fn hold(self: &Arc<Self>) -> Held {
        Held { budget: self.clone(), n: 0 }
    }
}

/// Bytes taken from a [`Budget`], given back when dropped.
#[derive(Debug)]
pub struct Held {
    budget: Arc<Budget>,
    n: usize,
}

impl Held {
    /// Takes `n` more bytes; false (and nothing taken) when the budget is spent.
    pub fn grow(&mut self, n: usize) -> bool {
        if self.budget.try_take(n) {
            self.n += n;
            true
        } else {
            false
        }
    }

    /// Holds exactly `n` bytes (taking or giving back the difference); false when more do not fit.
    pub fn set(&mut self, n: usize) -> bool {
        if n > self.n {
            self.grow(n - self.n)
        } else {
            self.budget.give(self.n - n);
            self.n = n;
            true
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.n
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.n > 0 {
            self.budget.give(self.n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_share_one_budget_and_give_back_when_dropped() {
        let b = Budget::new("budget-test", 100);
        let mut a = b.hold();
        let mut c = b.hold();
        assert!(a.grow(60));
        assert!(!c.grow(50), "past the budget");
        assert!(c.grow(40));
        assert_eq!(b.used(), 100);
        drop(a);
        assert_eq!(b.used(), 40);
        assert!(c.set(10));
        assert_eq!(b.used(), 10);
    }
}
