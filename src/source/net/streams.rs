//! `max_streams` for received label sets: a bound per tenant on the streams
//! a receiver's senders make.
//!
//! A relay takes whatever label sets its senders push; Loki refuses a
//! tenant's streams past its limit (`max_global_streams_per_user`, 5,000 by
//! default) with a 429 that no retry cures. Past `max_streams` distinct label
//! sets of one tenant, a received line whose labels would make another keeps
//! the source's own stream instead (the sender's labels left off, the line
//! itself delivered), counted as repaired (`stream_limit`) and logged once
//! per source. Label sets seen before the limit keep their streams.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use crate::metrics::Metrics;

/// The label sets received per tenant, up to the bound.
pub(super) struct ReceivedStreams {
    max: usize,
    seen: HashMap<Option<String>, HashSet<u64>>,
    said: bool,
}

impl ReceivedStreams {
    /// `max` 0: no bound.
    pub(super) fn new(max: usize) -> Self {
        Self { max, seen: HashMap::new(), said: false }
    }

    /// True when `labels` may have a stream of their own in `tenant`: seen
    /// before, or room left. False: the caller leaves them off (counted here).
    pub(super) fn admit<'a, I>(&mut self, source: &str, tenant: Option<&str>, labels: I) -> bool
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        if self.max == 0 {
            return true;
        }
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let mut n = 0usize;
        for (k, v) in labels {
            (k, v).hash(&mut h);
            n += 1;
        }
        if n == 0 {
            // The source's own stream: always there.
            return true;
        }
        let hash = h.finish();
        let seen = match self.seen.get_mut(&tenant.map(str::to_string)) {
            Some(s) => s,
            None => self.seen.entry(tenant.map(str::to_string)).or_default(),
        };
        if seen.contains(&hash) {
            return true;
        }
        if seen.len() < self.max {
            seen.insert(hash);
            return true;
        }
        Metrics::get().lines_repaired.with_label_values(&[source, "stream_limit"]).inc();
        if !self.said {
            self.said = true;
            tracing::warn!(source, tenant = tenant.unwrap_or(""), max_streams = self.max,
                "senders pushed max_streams label sets for one tenant; lines with another keep the source's own \
                 labels (the sender's left off) and are counted in tailship_lines_repaired_total{{reason=\"stream_limit\"}}");
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_sets_past_the_bound_of_a_tenant_are_refused_and_other_tenants_keep_theirs() {
        let mut s = ReceivedStreams::new(2);
        let set = |v: &'static str| [("app", v)];
        assert!(s.admit("r", Some("a"), set("1")) && s.admit("r", Some("a"), set("2")));
        assert!(!s.admit("r", Some("a"), set("3")));
        assert!(s.admit("r", Some("a"), set("1")), "a label set seen before keeps its stream");
        assert!(s.admit("r", Some("b"), set("3")), "the bound is per tenant");
        assert!(s.admit("r", Some("a"), []), "no labels: the source's own stream");
        let mut off = ReceivedStreams::new(0);
        let ids: Vec<String> = (0..5_000).map(|i| i.to_string()).collect();
        assert!(ids.iter().all(|i| off.admit("r", None, [("id", i.as_str())])));
    }
}
