//! Streams: a tenant plus a sorted label set, interned once so the hot path
//! compares and hashes a pointer, and carries its labels pre-encoded as JSON.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};

use smallvec::SmallVec;

/// One stream of the log service. Interned: equal label sets share one `Arc`.
#[derive(Debug)]
pub struct Stream {
    /// Tenant (`X-Scope-OrgID`) the stream is pushed as; `None` for single-tenant.
    pub tenant: Option<Arc<str>>,
    /// Labels, sorted by name.
    pub labels: Vec<(String, String)>,
    /// `{"name":"value",...}`, ready to paste into a push body.
    pub labels_json: String,
}

impl Stream {
    /// The stream selector of this stream, e.g. `{filename="/a", job="x"}`.
    pub fn selector(&self) -> String {
        crate::logql::format_selector(self.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        crate::metrics::Metrics::served().streams.dec();
    }
}

/// A shared handle to an interned stream.
pub type StreamRef = Arc<Stream>;

/// Interns streams across every source of the agent, so two sources that
/// produce the same labels share one stream (and one timestamp order).
///
/// Streams are found by a hash of their tenant and label JSON and compared
/// in full, so each label set is stored once, in its stream. The interner
/// holds streams weakly: a stream lives while a file, a queued chunk or a
/// batch holds it, and is freed after (a file deleted, its lines batched).
/// Before, every stream was kept for the agent's lifetime: with files
/// created and deleted all day, one per file name ever seen (#29 item 8).
/// A stream made again later starts a new timestamp order; the agent's own
/// timestamps (the read time) are later than the old stream's anyway, unless
/// the clock was set back.
#[derive(Debug, Default)]
pub struct Interner {
    map: Mutex<Interned>,
}

#[derive(Debug, Default)]
struct Interned {
    /// One stream per hash but for collisions: held inline, not in an
    /// allocation of its own per stream (one per file of 100,000).
    by_hash: HashMap<u64, SmallVec<[Weak<Stream>; 1]>>,
    /// Streams in `by_hash`, dead or alive, and how many lived at the last sweep.
    entries: usize,
    swept: usize,
}

impl Interned {
    /// Forgets the streams freed since the last sweep, once the entries doubled.
    fn sweep_if_grown(&mut self) {
        if self.entries < self.swept.max(SWEEP_MIN) * 2 {
            return;
        }
        self.by_hash.retain(|_, same| {
            same.retain(|w| w.strong_count() > 0);
            !same.is_empty()
        });
        self.entries = self.by_hash.values().map(|v| v.len()).sum();
        self.swept = self.entries;
    }
}

/// Maps of streams are swept of freed ones once they hold twice as many as
/// lived at their last sweep, and never below this many.
const SWEEP_MIN: usize = 512;

fn key_hash(tenant: Option<&Arc<str>>, labels_json: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    tenant.map(|t| &**t).hash(&mut h);
    labels_json.hash(&mut h);
    h.finish()
}

impl Interner {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Returns the stream of these labels and tenant, creating it on first use.
    pub fn intern(&self, tenant: Option<&Arc<str>>, labels: BTreeMap<String, String>) -> StreamRef {
        // A map of strings always serializes.
        let labels_json = serde_json::to_string(&labels).unwrap_or_else(|_| "{}".to_string());
        let hash = key_hash(tenant, &labels_json);
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let map = &mut *map;
        let same = map.by_hash.entry(hash).or_default();
        let before = same.len();
        let mut found = None;
        same.retain(|w| match w.upgrade() {
            Some(s) => {
                if found.is_none() && s.tenant.as_deref() == tenant.map(|t| &**t) && s.labels_json == labels_json {
                    found = Some(s);
                }
                true
            }
            None => false,
        });
        map.entries -= before - same.len();
        if let Some(s) = found {
            return s;
        }
        let s = Arc::new(Stream { tenant: tenant.cloned(), labels: labels.into_iter().collect(), labels_json });
        crate::metrics::Metrics::served().streams.inc();
        same.push(Arc::downgrade(&s));
        map.entries += 1;
        map.sweep_if_grown();
        s
    }

    /// Streams alive now.
    pub fn len(&self) -> usize {
        self.map
            .lock()
            .map(|m| m.by_hash.values().flat_map(|v| v.iter()).filter(|w| w.strong_count() > 0).count())
            .unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A value per stream, by the stream's pointer, while the stream lives:
/// the batcher's last timestamps, the alert tap's rules per stream. The
/// stream is held weakly (its allocation, not its labels: the pointer is not
/// reused while the entry is here), and entries of freed streams are swept
/// once the map doubled since its last sweep.
#[derive(Debug)]
pub struct PerStream<V> {
    map: HashMap<usize, (Weak<Stream>, V)>,
    swept: usize,
}

impl<V> Default for PerStream<V> {
    fn default() -> Self {
        Self { map: HashMap::new(), swept: 0 }
    }
}

impl<V> PerStream<V> {
    #[inline]
    pub fn get(&self, stream: &StreamRef) -> Option<&V> {
        self.map.get(&(Arc::as_ptr(stream) as usize)).map(|(_, v)| v)
    }

    /// The value of `stream`, made by `make` on first use.
    #[inline]
    pub fn get_or_insert_with(&mut self, stream: &StreamRef, make: impl FnOnce() -> V) -> &mut V {
        let key = Arc::as_ptr(stream) as usize;
        if !self.map.contains_key(&key) && self.map.len() >= self.swept.max(SWEEP_MIN) * 2 {
            self.map.retain(|_, (w, _)| w.strong_count() > 0);
            self.swept = self.map.len();
        }
        &mut self.map.entry(key).or_insert_with(|| (Arc::downgrade(stream), make())).1
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn clear(&mut self) {
        self.map.clear();
        self.swept = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_shares_equal_label_sets() {
        let i = Interner::new();
        let mut a = BTreeMap::new();
        a.insert("job".to_string(), "x\"y".to_string());
        let s1 = i.intern(None, a.clone());
        let s2 = i.intern(None, a.clone());
        assert!(Arc::ptr_eq(&s1, &s2));
        let t: Arc<str> = Arc::from("t");
        let s3 = i.intern(Some(&t), a);
        assert!(!Arc::ptr_eq(&s1, &s3));
        assert_eq!(s1.labels_json, r#"{"job":"x\"y"}"#);
        assert_eq!(s1.selector(), r#"{job="x\"y"}"#);
    }

    fn labels(file: usize) -> BTreeMap<String, String> {
        BTreeMap::from([("filename".to_string(), format!("/log/{file}.log"))])
    }

    #[test]
    fn streams_nobody_holds_are_freed_and_forgotten() {
        let i = Interner::new();
        let kept = i.intern(None, labels(0));
        let mut per = PerStream::default();
        *per.get_or_insert_with(&kept, || 0) = 7;
        for f in 1..10_000 {
            let s = i.intern(None, labels(f));
            per.get_or_insert_with(&s, || f);
        }
        assert_eq!(i.len(), 1, "only the stream still held lives");
        let entries = i.map.lock().unwrap().entries;
        assert!(entries <= 2 * SWEEP_MIN, "{entries} entries kept for 1 live stream");
        assert!(per.len() <= 2 * SWEEP_MIN, "{} values kept for 1 live stream", per.len());
        assert_eq!(per.get(&kept), Some(&7));
        assert!(Arc::ptr_eq(&kept, &i.intern(None, labels(0))));
    }
}
