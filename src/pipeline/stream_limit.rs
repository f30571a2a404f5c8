//! `max_streams`: a bound on the streams a source's stages make.
//!
//! A stage that turns a value with many distinct values into a label (a
//! request id, a user) makes a stream per value; Loki refuses a tenant's
//! streams past its limit and slows down long before. Past `max_streams`
//! distinct label sets, a line whose stages would make a new one keeps its
//! file's stream instead (the stages' labels left off, the line itself
//! unchanged and delivered), counted as repaired (`stream_limit`) and logged
//! once per source. Label sets seen before the limit keep their streams.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The label sets a source's stages made, up to the limit.
pub(super) struct StreamLimit {
    max: usize,
    seen: Mutex<HashSet<u64>>,
    said: AtomicBool,
}

impl StreamLimit {
    /// `max` 0: no limit.
    pub(super) fn new(max: usize) -> Self {
        Self { max, seen: Mutex::new(HashSet::new()), said: AtomicBool::new(false) }
    }

    /// True when the label set of `hash` may have its stream: seen before,
    /// or room left for it.
    pub(super) fn admit(&self, hash: u64, source: &str) -> bool {
        if self.max == 0 {
            return true;
        }
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.contains(&hash) {
            return true;
        }
        if seen.len() < self.max {
            seen.insert(hash);
            return true;
        }
        drop(seen);
        if !self.said.swap(true, Ordering::Relaxed) {
            tracing::warn!(source, max_streams = self.max,
                "the source's stages made max_streams label sets; lines that would make another keep their file's \
                 stream (the stages' labels left off) and are counted in tailship_lines_repaired_total{{reason=\"stream_limit\"}}");
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_sets_past_the_limit_are_refused_and_those_seen_kept() {
        let l = StreamLimit::new(2);
        assert!(l.admit(1, "s") && l.admit(2, "s"));
        assert!(!l.admit(3, "s"));
        assert!(l.admit(1, "s") && l.admit(2, "s"));
        let off = StreamLimit::new(0);
        assert!((0..10_000).all(|h| off.admit(h, "s")));
    }
}
