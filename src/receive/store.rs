//! Where pushed entries go: a bounded in-memory store that answers queries,
//! or a null store that only counts (the benchmark receiver).
//!
//! The memory store keeps, per tenant, one [`Stream`] per exact label set,
//! with entries in a `BTreeMap` keyed by timestamp so range scans in either
//! direction are cheap. An entry sent again is dropped by Loki's rule, no
//! stricter (see [`Head`]). The store is bounded
//! by a count of entries and by the bytes of their lines: a queue in
//! insertion order says which entry to evict first, and evictions are counted.
//! A query's answer is bounded in bytes too.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use serde::Serialize;

use crate::logql::LogSelector;
use crate::lokipush::Validated;

/// A sorted label set.
pub type Labels = Vec<(String, String)>;

/// The label added to each result when a query spans several tenants.
pub const TENANT_LABEL: &str = "__tenant_id__";

/// Most distinct streams the null store remembers (for its `streams` count).
const NULL_STORE_MAX_STREAMS: usize = 1_000_000;

/// Which store backs the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum StoreKind {
    /// Keep entries in memory, bounded by `max_entries`.
    #[default]
    Memory,
    /// Validate and count, keep nothing.
    Null,
}

/// Counters served at `/stats`.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Stats {
    /// Push requests by response status.
    pub requests: BTreeMap<String, u64>,
    /// Entries accepted (stored, or counted by the null store).
    pub entries: u64,
    /// Sum of the line lengths of the accepted entries.
    pub bytes: u64,
    /// Entries evicted to stay under `max_entries` and `max_bytes`.
    pub evicted: u64,
    /// Streams held (memory store: streams with at least one entry), or
    /// distinct streams seen (null store).
    pub streams: u64,
    /// Entries not stored: sent again while Loki would drop them (see [`Head`]).
    pub duplicates: u64,
    /// Alerts received on the formatted webhook.
    pub alerts: u64,
    /// Requests outside the API (a path it does not serve, or a method the
    /// path does not take), by `METHOD /path`.
    pub outside_api: BTreeMap<String, u64>,
}

/// The counters, updated without taking the store lock.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    requests: Mutex<BTreeMap<u16, u64>>,
    entries: AtomicU64,
    bytes: AtomicU64,
    evicted: AtomicU64,
    streams: AtomicU64,
    duplicates: AtomicU64,
    pub(crate) alerts: AtomicU64,
    outside_api: Mutex<BTreeMap<String, u64>>,
}

impl Counters {
    pub(crate) fn count_request(&self, status: u16) {
        if let Ok(mut m) = self.requests.lock() {
            *m.entry(status).or_default() += 1;
        }
    }

    /// Counts a request outside the API; past 100 different ones, as `(others)`.
    pub(crate) fn count_outside_api(&self, what: String) {
        if let Ok(mut m) = self.outside_api.lock() {
            let what = if m.len() < 100 || m.contains_key(&what) { what } else { "(others)".to_string() };
            *m.entry(what).or_default() += 1;
        }
    }

    pub(crate) fn snapshot(&self) -> Stats {
        let requests =
            self.requests.lock().map(|m| m.iter().map(|(k, v)| (k.to_string(), *v)).collect()).unwrap_or_default();
        Stats {
            requests,
            entries: self.entries.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            evicted: self.evicted.load(Ordering::Relaxed),
            streams: self.streams.load(Ordering::Relaxed),
            duplicates: self.duplicates.load(Ordering::Relaxed),
            alerts: self.alerts.load(Ordering::Relaxed),
            outside_api: self.outside_api.lock().map(|m| m.clone()).unwrap_or_default(),
        }
    }
}

/// One stream of a range query result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StreamResult {
    pub labels: Labels,
    /// `(timestamp ns, line)`, ordered by the query direction.
    pub values: Vec<(i64, String)>,
}

/// Per-series totals of a metric query window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    pub labels: Labels,
    pub count: u64,
    pub bytes: u64,
}

/// The parameters of a range query.
#[derive(Debug, Clone, Copy)]
pub struct RangeParams<'q> {
    pub selector: &'q LogSelector,
    /// Inclusive.
    pub start: i64,
    /// Exclusive.
    pub end: i64,
    pub limit: usize,
    pub forward: bool,
    /// The answer stops before its lines pass this many bytes (one entry at
    /// least), so one query cannot take the store's memory again as JSON;
    /// clients that page go on from the last entry.
    pub max_bytes: usize,
}

struct Stream {
    labels: Labels,
    entries: BTreeMap<i64, Vec<StoredLine>>,
    head: Head,
}

/// Bytes of lines a stream's head block holds before Loki cuts it
/// (`chunk_block_size`, 256 KiB by default).
pub const HEAD_BLOCK_BYTES: usize = 256 * 1024;

/// Loki's rule for an entry sent again (3.7.6: `validateEntries` in
/// `pkg/ingester/stream.go`, the unordered head block in
/// `pkg/chunkenc/unordered.go`): it is dropped only when its timestamp,
/// line and structured metadata equal the stream's last accepted entry, or
/// an entry of the stream's current head block (the lines accepted since the
/// block was last cut at [`HEAD_BLOCK_BYTES`]). Anything older is stored
/// again, so a test against `receive` sees what Loki would show.
#[derive(Default)]
struct Head {
    /// The current block's number: stored lines carry the block they went into.
    block: u32,
    /// Bytes of lines in the current block.
    bytes: usize,
    /// The last accepted entry: its timestamp and a hash of its line and metadata.
    last: Option<(i64, u64)>,
}

impl Head {
    fn is_duplicate(&self, ts: i64, hash: u64, line: &str, meta: &Option<StoredMeta>, at: &[StoredLine]) -> bool {
        self.last == Some((ts, hash)) || at.iter().any(|l| l.block == self.block && &*l.text == line && l.meta == *meta)
    }

    /// An entry was accepted into the current block.
    fn accepted(&mut self, ts: i64, hash: u64, bytes: usize) {
        self.last = Some((ts, hash));
        self.bytes += bytes;
        if self.bytes >= HEAD_BLOCK_BYTES {
            self.block = self.block.wrapping_add(1);
            self.bytes = 0;
        }
    }
}

fn entry_hash(line: &str, meta: &Option<StoredMeta>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    line.hash(&mut h);
    meta.hash(&mut h);
    h.finish()
}

/// Structured metadata of a stored line, names sorted.
type StoredMeta = Box<[(Box<str>, Box<str>)]>;

/// A line and its structured metadata.
#[derive(PartialEq, Eq)]
struct StoredLine {
    text: Box<str>,
    meta: Option<StoredMeta>,
    /// The stream's head block it went into (see [`Head`]).
    block: u32,
}

impl std::ops::Deref for StoredLine {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

impl Stream {
    fn get(&self, name: &str) -> Option<&str> {
        self.labels.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn has_entries_in(&self, start: i64, end: i64) -> bool {
        start < end && self.entries.range(start..end).next().is_some()
    }
}

#[derive(Default)]
struct Tenant {
    by_key: HashMap<String, u32>,
    streams: Vec<Stream>,
    /// Slots of streams whose last entry was evicted, for reuse: the number
    /// of slots stays bounded by the number of entries plus live streams.
    free: Vec<u32>,
}

impl Tenant {
    /// Frees the slot of an empty stream. No queue entry refers to it: each
    /// stored entry has one, and the stream is empty only once all were popped.
    fn release(&mut self, si: u32) {
        let stream = &mut self.streams[si as usize];
        let pairs: Vec<(&str, &str)> = stream.labels.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        self.by_key.remove(&stream_key(&pairs));
        stream.labels.clear();
        stream.entries.clear();
        self.free.push(si);
    }
}

#[derive(Default)]
pub(crate) struct Memory {
    max_entries: usize,
    /// Bound of the line bytes held.
    max_bytes: u64,
    held_bytes: u64,
    tenant_ids: HashMap<String, u32>,
    tenants: Vec<(String, Tenant)>,
    /// `(tenant, stream, ts)` in insertion order: the eviction queue.
    order: VecDeque<(u32, u32, i64)>,
}

/// The key of a label set in a tenant's stream index.
fn stream_key(labels: &[(&str, &str)]) -> String {
    let mut k = String::with_capacity(labels.iter().map(|(a, b)| a.len() + b.len() + 2).sum());
    for (a, b) in labels {
        k.push_str(a);
        k.push('\0');
        k.push_str(b);
        k.push('\0');
    }
    k
}

/// The store behind a server.
pub(crate) enum Backend {
    Memory(Mutex<Memory>),
    Null(Mutex<HashSet<u64>>),
}

impl Backend {
    pub(crate) fn new(kind: StoreKind, max_entries: usize, max_bytes: u64) -> Self {
        match kind {
            StoreKind::Memory => Self::Memory(Mutex::new(Memory { max_entries, max_bytes, ..Memory::default() })),
            StoreKind::Null => Self::Null(Mutex::new(HashSet::new())),
        }
    }

    /// Stores (or counts) the good part of a push for `tenant`.
    pub(crate) fn push(&self, tenant: &str, v: &Validated<'_>, c: &Counters) {
        match self {
            Self::Null(seen) => {
                let mut entries = 0u64;
                let mut bytes = 0u64;
                let mut new_streams = 0;
                let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
                for s in &v.streams {
                    entries += s.entries.len() as u64;
                    bytes += s.entries.iter().map(|(_, l, _)| l.len() as u64).sum::<u64>();
                    if seen.len() < NULL_STORE_MAX_STREAMS {
                        let h = xxhash_rust::xxh3::xxh3_64(format!("{tenant}\0{}", stream_key(&s.labels)).as_bytes());
                        new_streams += u64::from(seen.insert(h));
                    }
                }
                c.entries.fetch_add(entries, Ordering::Relaxed);
                c.bytes.fetch_add(bytes, Ordering::Relaxed);
                c.streams.fetch_add(new_streams, Ordering::Relaxed);
            }
            Self::Memory(m) => {
                let mut m = m.lock().unwrap_or_else(|p| p.into_inner());
                m.push(tenant, v, c);
            }
        }
    }

    fn with_memory<T: Default>(&self, f: impl FnOnce(&Memory) -> T) -> T {
        match self {
            Self::Null(_) => T::default(),
            Self::Memory(m) => f(&m.lock().unwrap_or_else(|p| p.into_inner())),
        }
    }

    /// Entries matching a log query, at most `limit` across all streams.
    pub(crate) fn query_range(&self, tenants: &[String], tag: bool, p: RangeParams<'_>) -> Vec<StreamResult> {
        self.with_memory(|m| m.query_range(tenants, tag, p))
    }

    /// Per-stream count and bytes of matching entries in `(start, end]`.
    pub(crate) fn sample(
        &self,
        tenants: &[String],
        tag: bool,
        selector: &LogSelector,
        start: i64,
        end: i64,
    ) -> Vec<Sample> {
        self.with_memory(|m| m.sample(tenants, tag, selector, start, end))
    }

    /// Label names of streams with entries in `[start, end)`.
    pub(crate) fn label_names(&self, tenants: &[String], start: i64, end: i64) -> BTreeSet<String> {
        self.with_memory(|m| {
            let mut out = BTreeSet::new();
            m.each_stream(tenants, |_, s| {
                if s.has_entries_in(start, end) {
                    out.extend(s.labels.iter().map(|(k, _)| k.clone()));
                }
            });
            out
        })
    }

    /// Values of one label over streams with entries in `[start, end)`, optionally selected.
    pub(crate) fn label_values(
        &self,
        tenants: &[String],
        name: &str,
        start: i64,
        end: i64,
        selector: Option<&LogSelector>,
    ) -> BTreeSet<String> {
        self.with_memory(|m| {
            let mut out = BTreeSet::new();
            m.each_stream(tenants, |_, s| {
                if let Some(v) = s.get(name) {
                    if selector.is_none_or(|sel| sel.matches_labels(|n| s.get(n))) && s.has_entries_in(start, end) {
                        out.insert(v.to_string());
                    }
                }
            });
            out
        })
    }
}

impl Memory {
    fn push(&mut self, tenant: &str, v: &Validated<'_>, c: &Counters) {
        let ti = match self.tenant_ids.get(tenant) {
            Some(&i) => i,
            None => {
                let i = self.tenants.len() as u32;
                self.tenant_ids.insert(tenant.to_string(), i);
                self.tenants.push((tenant.to_string(), Tenant::default()));
                i
            }
        };
        let (mut entries, mut bytes, mut dups) = (0u64, 0u64, 0u64);
        for s in &v.streams {
            let t = &mut self.tenants[ti as usize].1;
            let key = stream_key(&s.labels);
            let si = match t.by_key.get(&key) {
                Some(&i) => i,
                None => {
                    let labels = s.labels.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
                    let stream = Stream { labels, entries: BTreeMap::new(), head: Head::default() };
                    let i = match t.free.pop() {
                        Some(i) => {
                            t.streams[i as usize] = stream;
                            i
                        }
                        None => {
                            t.streams.push(stream);
                            (t.streams.len() - 1) as u32
                        }
                    };
                    t.by_key.insert(key, i);
                    c.streams.fetch_add(1, Ordering::Relaxed);
                    i
                }
            };
            let stream = &mut t.streams[si as usize];
            for (ts, line, meta) in &s.entries {
                let (ts, line) = (*ts, *line);
                let at = stream.entries.entry(ts).or_default();
                let meta: Option<StoredMeta> =
                    meta.as_ref().map(|m| m.iter().map(|(k, v)| (Box::from(*k), Box::from(*v))).collect());
                let hash = entry_hash(line, &meta);
                if stream.head.is_duplicate(ts, hash, line, &meta, at) {
                    dups += 1;
                    if at.is_empty() {
                        stream.entries.remove(&ts);
                    }
                    continue;
                }
                at.push(StoredLine { text: line.into(), meta, block: stream.head.block });
                stream.head.accepted(ts, hash, line.len());
                self.order.push_back((ti, si, ts));
                entries += 1;
                bytes += line.len() as u64;
                self.held_bytes += line.len() as u64;
            }
            if stream.entries.is_empty() {
                t.release(si);
                c.streams.fetch_sub(1, Ordering::Relaxed);
            }
        }
        c.entries.fetch_add(entries, Ordering::Relaxed);
        c.bytes.fetch_add(bytes, Ordering::Relaxed);
        c.duplicates.fetch_add(dups, Ordering::Relaxed);
        let (evicted, released) = self.evict();
        c.evicted.fetch_add(evicted, Ordering::Relaxed);
        c.streams.fetch_sub(released, Ordering::Relaxed);
    }

    /// Drops the oldest-inserted entries until the store is within its bound.
    /// Returns how many entries were evicted and how many streams emptied.
    fn evict(&mut self) -> (u64, u64) {
        let (mut n, mut released) = (0, 0);
        while self.order.len() > self.max_entries || (self.held_bytes > self.max_bytes && !self.order.is_empty()) {
            let Some((ti, si, ts)) = self.order.pop_front() else { break };
            let tenant = &mut self.tenants[ti as usize].1;
            let stream = &mut tenant.streams[si as usize];
            if let Some(lines) = stream.entries.get_mut(&ts) {
                // Lines at one timestamp are kept in insertion order, so the
                // oldest one is first.
                if !lines.is_empty() {
                    let gone = lines.remove(0);
                    self.held_bytes = self.held_bytes.saturating_sub(gone.len() as u64);
                }
                if lines.is_empty() {
                    stream.entries.remove(&ts);
                }
            }
            if stream.entries.is_empty() {
                tenant.release(si);
                released += 1;
            }
            n += 1;
        }
        (n, released)
    }

    fn each_stream<'s>(&'s self, tenants: &[String], mut f: impl FnMut(&'s str, &'s Stream)) {
        for t in tenants {
            if let Some(&ti) = self.tenant_ids.get(t) {
                let (name, tenant) = &self.tenants[ti as usize];
                for s in &tenant.streams {
                    f(name, s);
                }
            }
        }
    }

    fn result_labels(s: &Stream, tenant: &str, tag: bool) -> Labels {
        let mut labels = s.labels.clone();
        if tag {
            labels.push((TENANT_LABEL.to_string(), tenant.to_string()));
            labels.sort();
        }
        labels
    }

    fn query_range(&self, tenants: &[String], tag: bool, p: RangeParams<'_>) -> Vec<StreamResult> {
        let mut picked: Vec<(&Stream, &str)> = Vec::new();
        // (ts, index into picked, line)
        let mut candidates: Vec<(i64, usize, &StoredLine)> = Vec::new();
        if p.start < p.end && p.limit > 0 {
            self.each_stream(tenants, |tenant, s| {
                if !p.selector.matches_labels(|n| s.get(n)) {
                    return;
                }
                let idx = picked.len();
                let range = s.entries.range(p.start..p.end);
                let matching = |&(_, l): &(i64, &StoredLine)| p.selector.matches_line(l);
                let before = candidates.len();
                if p.forward {
                    let it = range.flat_map(|(ts, v)| v.iter().map(move |l| (*ts, l)));
                    let it = it.filter(matching).take(p.limit);
                    candidates.extend(it.map(|(ts, l)| (ts, idx, l)));
                } else {
                    let it = range.rev().flat_map(|(ts, v)| v.iter().rev().map(move |l| (*ts, l)));
                    candidates.extend(it.filter(matching).take(p.limit).map(|(ts, l)| (ts, idx, l)));
                }
                if candidates.len() > before {
                    picked.push((s, tenant));
                }
            });
        }
        // A stable sort keeps each stream's own order for equal timestamps.
        if p.forward {
            candidates.sort_by_key(|c| c.0);
        } else {
            candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
        }
        candidates.truncate(p.limit);
        let mut size = 0usize;
        let fits = candidates
            .iter()
            .position(|c| {
                size += c.2.len();
                size > p.max_bytes
            })
            .unwrap_or(candidates.len());
        candidates.truncate(fits.max(1));
        // Lines with structured metadata come back in streams of their own,
        // the metadata added to the labels (as Loki 3 answers by default).
        type Group<'m> = (usize, Option<&'m [(Box<str>, Box<str>)]>);
        let mut grouped: BTreeMap<Group<'_>, Vec<(i64, String)>> = BTreeMap::new();
        for (ts, idx, line) in candidates {
            grouped.entry((idx, line.meta.as_deref())).or_default().push((ts, line.text.to_string()));
        }
        let mut out: Vec<StreamResult> = grouped
            .into_iter()
            .map(|((idx, meta), values)| {
                let (s, tenant) = picked[idx];
                let mut labels = Self::result_labels(s, tenant, tag);
                if let Some(meta) = meta {
                    for (k, v) in meta {
                        if !labels.iter().any(|(n, _)| **n == **k) {
                            labels.push((k.to_string(), v.to_string()));
                        }
                    }
                    labels.sort();
                }
                StreamResult { labels, values }
            })
            .collect();
        out.sort_by(|a, b| a.labels.cmp(&b.labels));
        out
    }

    fn sample(&self, tenants: &[String], tag: bool, selector: &LogSelector, start: i64, end: i64) -> Vec<Sample> {
        let mut out = Vec::new();
        if start >= end {
            return out;
        }
        self.each_stream(tenants, |tenant, s| {
            if !selector.matches_labels(|n| s.get(n)) {
                return;
            }
            let (mut count, mut bytes) = (0u64, 0u64);
            for (_, lines) in s.entries.range((Bound::Excluded(start), Bound::Included(end))) {
                for l in lines.iter().filter(|l| selector.matches_line(l)) {
                    count += 1;
                    bytes += l.len() as u64;
                }
            }
            if count > 0 {
                out.push(Sample { labels: Self::result_labels(s, tenant, tag), count, bytes });
            }
        });
        out
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
