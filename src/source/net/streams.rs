//! `max_streams` for received label sets: a bound per tenant on the streams
//! a receiver's senders make, counted as Loki counts them: the active ones.
//!
//! A relay takes whatever label sets its senders push; Loki refuses a
//! tenant's streams past its limit (`max_global_streams_per_user`, 5,000 by
//! default) with a 429 that no retry cures. Past `max_streams` label sets of
//! one tenant, a received line whose labels would make another keeps the
//! source's own stream instead (the sender's labels left off, the line
//! itself delivered), counted as repaired (`stream_limit`) and logged once
//! per source. Label sets already counted keep their streams.
//!
//! Loki's limit is on *active* streams: an ingester drops a stream whose
//! chunks went `chunk_idle_period` (30m by default) without a line and were
//! flushed. So a label set that brings no line for `stream_idle_period`
//! (the same 30m unless set) is forgotten and its room goes to the next new
//! one: short-lived senders (pods, jobs) do not fill the bound for the
//! relay's whole life. Activity is when this reader hands a line on (about
//! when the service receives it), and forgetting is checked every
//! [`sweep_every`] of the period at most, so a set is forgotten between one
//! and about 1.25 periods after its last line.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::metrics::Metrics;

/// How often quiet label sets are looked for: a quarter of the period, at most a second.
fn sweep_every(idle: Duration) -> Duration {
    (idle / 4).min(Duration::from_secs(1))
}

/// Said once per source when a tenant's label sets reach the bound.
const FULL: &str = "senders pushed max_streams label sets for one tenant that are still active; lines with another \
                    keep the source's own labels (the sender's left off) until some go quiet for stream_idle_period, \
                    and are counted in tailship_lines_repaired_total{reason=\"stream_limit\"}";

/// One label set counted: its tenant and when it last brought a line.
struct Counted {
    tenant: Option<Arc<str>>,
    last: Instant,
}

/// The label sets received per tenant, up to the bound (see the module header).
pub(super) struct ReceivedStreams {
    max: usize,
    /// How long a label set that brings no line stays counted; `None`: for ever.
    idle: Option<Duration>,
    /// By [`ReceivedStreams::key`] (tenant and labels).
    sets: HashMap<u64, Counted>,
    /// Label sets counted per tenant; records without one in `untenanted`.
    per_tenant: HashMap<Arc<str>, usize>,
    untenanted: usize,
    /// The time lines are handed on at (set by [`ReceivedStreams::tick`]).
    now: Instant,
    swept: Instant,
    said: bool,
}

impl ReceivedStreams {
    /// `max` 0: no bound. `idle` zero: label sets are never forgotten.
    pub(super) fn new(max: usize, idle: Duration) -> Self {
        let now = Instant::now();
        Self {
            max,
            idle: (!idle.is_zero()).then_some(idle),
            sets: HashMap::new(),
            per_tenant: HashMap::new(),
            untenanted: 0,
            now,
            swept: now,
            said: false,
        }
    }

    /// Label sets counted now, all tenants together.
    #[cfg(test)]
    fn counted(&self) -> usize {
        self.sets.len()
    }

    /// The time lines are handed on at from now; label sets quiet for the
    /// idle period are forgotten (looked for every [`sweep_every`]).
    pub(super) fn tick(&mut self, now: Instant) {
        self.now = now;
        let Some(idle) = self.idle else { return };
        if now.saturating_duration_since(self.swept) < sweep_every(idle) {
            return;
        }
        self.swept = now;
        let before = self.sets.len();
        let (per_tenant, untenanted) = (&mut self.per_tenant, &mut self.untenanted);
        self.sets.retain(|_, c| {
            if now.saturating_duration_since(c.last) < idle {
                return true;
            }
            match &c.tenant {
                Some(t) => {
                    if let Some(n) = per_tenant.get_mut(t) {
                        *n -= 1;
                    }
                }
                None => *untenanted -= 1,
            }
            false
        });
        per_tenant.retain(|_, n| *n > 0);
        let forgotten = before - self.sets.len();
        if forgotten > 0 {
            tracing::debug!(
                forgotten,
                counted = self.sets.len(),
                "received label sets quiet for the idle period forgotten"
            );
        }
    }

    /// The key `admit` takes for `labels` of `tenant`; `None` when there is
    /// no bound or no labels (the source's own stream, always there).
    pub(super) fn key<'a, I>(&self, tenant: Option<&str>, labels: I) -> Option<u64>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        if self.max == 0 {
            return None;
        }
        let mut h = std::collections::hash_map::DefaultHasher::new();
        tenant.hash(&mut h);
        let mut n = 0usize;
        for (k, v) in labels {
            (k, v).hash(&mut h);
            n += 1;
        }
        (n > 0).then(|| h.finish())
    }

    /// True when the label set of `key` (see [`ReceivedStreams::key`]) may
    /// have a stream of its own in `tenant`: counted already (it is active
    /// again), or room left. False: the caller leaves the labels off
    /// (counted here).
    pub(super) fn admit(&mut self, source: &str, tenant: Option<&str>, key: Option<u64>) -> bool {
        let Some(key) = key else { return true };
        if let Some(c) = self.sets.get_mut(&key) {
            c.last = self.now;
            return true;
        }
        let count = match tenant {
            Some(t) => self.per_tenant.get(t).copied().unwrap_or(0),
            None => self.untenanted,
        };
        if count < self.max {
            self.count(key, tenant);
            return true;
        }
        self.refuse(source, tenant);
        false
    }

    /// Counts the new label set of `key` in `tenant` (the tenant's name
    /// shared with its count when it has one already).
    fn count(&mut self, key: u64, tenant: Option<&str>) {
        let tenant = match tenant {
            Some(t) => match self.per_tenant.get_key_value(t) {
                Some((name, _)) => Some(name.clone()),
                None => Some(Arc::from(t)),
            },
            None => None,
        };
        match &tenant {
            Some(t) => *self.per_tenant.entry(t.clone()).or_default() += 1,
            None => self.untenanted += 1,
        }
        self.sets.insert(key, Counted { tenant, last: self.now });
    }

    /// A line whose label set found no room in `tenant`: counted as
    /// repaired, and said once per source.
    fn refuse(&mut self, source: &str, tenant: Option<&str>) {
        Metrics::get().lines_repaired.with_label_values(&[source, "stream_limit"]).inc();
        if !self.said {
            self.said = true;
            let idle = self.idle.map_or_else(|| "never".to_string(), crate::util::format_duration);
            tracing::warn!(source, tenant = tenant.unwrap_or(""), max_streams = self.max, stream_idle_period = %idle,
                "{FULL}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDLE: Duration = Duration::from_secs(60);

    fn admit(s: &mut ReceivedStreams, tenant: Option<&str>, labels: &[(&str, &str)]) -> bool {
        let key = s.key(tenant, labels.iter().copied());
        s.admit("r", tenant, key)
    }

    #[test]
    fn label_sets_past_the_bound_of_a_tenant_are_refused_and_other_tenants_keep_theirs() {
        let mut s = ReceivedStreams::new(2, IDLE);
        let set = |v: &'static str| [("app", v)];
        assert!(admit(&mut s, Some("a"), &set("1")) && admit(&mut s, Some("a"), &set("2")));
        assert!(!admit(&mut s, Some("a"), &set("3")));
        assert!(admit(&mut s, Some("a"), &set("1")), "a label set counted keeps its stream");
        assert!(admit(&mut s, Some("b"), &set("3")), "the bound is per tenant");
        assert!(admit(&mut s, None, &set("3")) && admit(&mut s, None, &set("4")), "no tenant is a tenant of its own");
        assert!(!admit(&mut s, None, &set("5")));
        assert!(admit(&mut s, Some("a"), &[]), "no labels: the source's own stream");
        let mut off = ReceivedStreams::new(0, IDLE);
        let ids: Vec<String> = (0..5_000).map(|i| i.to_string()).collect();
        assert!(ids.iter().all(|i| admit(&mut off, None, &[("id", i.as_str())])));
        assert_eq!(off.counted(), 0, "no bound: nothing is kept");
    }

    #[test]
    fn label_sets_quiet_for_the_idle_period_are_forgotten_and_active_ones_kept() {
        let t0 = Instant::now();
        let mut s = ReceivedStreams::new(2, IDLE);
        s.tick(t0);
        assert!(admit(&mut s, Some("a"), &[("pod", "1")]) && admit(&mut s, Some("a"), &[("pod", "2")]));
        assert!(!admit(&mut s, Some("a"), &[("pod", "3")]), "full");
        // Pod 2 goes on pushing; pod 1 stops.
        s.tick(t0 + IDLE / 2);
        assert!(admit(&mut s, Some("a"), &[("pod", "2")]));
        s.tick(t0 + IDLE + Duration::from_secs(1));
        assert!(admit(&mut s, Some("a"), &[("pod", "3")]), "pod 1's room went to pod 3");
        assert!(!admit(&mut s, Some("a"), &[("pod", "4")]), "pod 2 is still active");
        assert_eq!(s.counted(), 2);
        // Everything quiet: every tenant's count goes back to nothing.
        s.tick(t0 + 3 * IDLE);
        assert_eq!((s.counted(), s.per_tenant.len(), s.untenanted), (0, 0, 0));
        // Never forgotten with a zero period.
        let mut s = ReceivedStreams::new(1, Duration::ZERO);
        s.tick(t0);
        assert!(admit(&mut s, None, &[("pod", "1")]));
        s.tick(t0 + 1000 * IDLE);
        assert!(!admit(&mut s, None, &[("pod", "2")]));
    }

    #[test]
    fn five_thousand_short_lived_label_sets_leave_room_for_the_next() {
        // The relay's case: a pod pushes one line and stops, 5,000 times, then a new pod.
        let t0 = Instant::now();
        let mut s = ReceivedStreams::new(5000, IDLE);
        for i in 0..5000u64 {
            s.tick(t0 + Duration::from_millis(i));
            assert!(admit(&mut s, None, &[("pod", &format!("p{i}"))]));
        }
        s.tick(t0 + Duration::from_secs(10));
        assert!(!admit(&mut s, None, &[("pod", "new")]), "all 5,000 still active");
        s.tick(t0 + IDLE + Duration::from_secs(6));
        assert!(admit(&mut s, None, &[("pod", "new")]), "the quiet ones were forgotten");
    }
}
