//! Streams: a tenant plus a sorted label set, interned once so the hot path
//! compares and hashes a pointer, and carries its labels pre-encoded as JSON.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

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

/// A shared handle to an interned stream.
pub type StreamRef = Arc<Stream>;

/// Interns streams across every source of the agent, so two sources that
/// produce the same labels share one stream (and one timestamp order).
///
/// Streams are found by a hash of their tenant and label JSON and compared
/// in full, so each label set is stored once, in its stream. Streams are
/// never forgotten: a stream's timestamp order must hold for the agent's
/// lifetime, and a stream costs a few hundred bytes.
#[derive(Debug, Default)]
pub struct Interner {
    map: Mutex<HashMap<u64, Vec<StreamRef>>>,
}

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
        let same = map.entry(hash).or_default();
        if let Some(s) =
            same.iter().find(|s| s.tenant.as_deref() == tenant.map(|t| &**t) && s.labels_json == labels_json)
        {
            return s.clone();
        }
        let s = Arc::new(Stream { tenant: tenant.cloned(), labels: labels.into_iter().collect(), labels_json });
        same.push(s.clone());
        s
    }

    pub fn len(&self) -> usize {
        self.map.lock().map(|m| m.values().map(Vec::len).sum()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
}
