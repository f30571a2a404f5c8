//! Writing what a receiver took as spool lines: each stream's labels once
//! per request (see [`super::StreamDef`]), the whole held to a byte limit
//! as it grows (a request of small lines with large labels or attributes
//! cannot expand without bound), and equal timestamps of a stream made
//! distinct ([`Stamps`]) so that the service keeps every line.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use super::{Record, StreamDef};

/// Streams whose last timestamp [`Stamps`] keeps, at most (past it, it starts over).
const MAX_STAMPED_STREAMS: usize = 65_536;

/// A pair of strings as records carry labels and metadata.
pub type Pair<'a> = (Cow<'a, str>, Cow<'a, str>);

/// A request came to more spool bytes than its receiver allows.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the request comes to more than {limit} bytes once decoded")]
pub struct Overflow {
    pub limit: usize,
}

/// The last timestamp given to each stream of a receiver: a line stamped
/// at or before its stream's last gets the last + 1 ns, as long as that
/// stays within the millisecond the sender stamped (a sender's time is
/// kept to the millisecond). Loki keeps only one of two entries of a stream
/// with the same timestamp and line; a receiver's senders often stamp to
/// the second or the millisecond.
#[derive(Debug, Default)]
pub struct Stamps {
    last: Mutex<HashMap<u64, i64>>,
}

impl Stamps {
    pub fn new() -> Self {
        Self::default()
    }

    /// The timestamp for one more line of stream `key` (see [`stream_key`]) stamped `ts`.
    pub fn stamp(&self, key: u64, ts: i64) -> i64 {
        let mut m = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if m.len() >= MAX_STAMPED_STREAMS && !m.contains_key(&key) {
            m.clear();
        }
        let last = m.entry(key).or_insert(i64::MIN);
        let mut t = ts;
        if t <= *last {
            let next = last.saturating_add(1);
            if next.div_euclid(1_000_000) == ts.div_euclid(1_000_000) {
                t = next;
            }
        }
        if t > *last {
            *last = t;
        }
        t
    }
}

/// A stream's identity for [`Stamps`]: its tenant and labels.
pub fn stream_key<K: AsRef<str>, V: AsRef<str>>(tenant: Option<&str>, labels: &[(K, V)]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    tenant.hash(&mut h);
    for (k, v) in labels {
        k.as_ref().hash(&mut h);
        v.as_ref().hash(&mut h);
    }
    h.finish()
}

/// A stream of one [`Encoder`]: its id in the request and its key.
#[derive(Debug, Clone, Copy)]
pub struct Stream {
    id: u32,
    key: u64,
}

/// One request's spool lines.
pub struct Encoder<'s> {
    out: Vec<u8>,
    ids: HashMap<u64, u32>,
    lines: u64,
    limit: usize,
    stamps: &'s Stamps,
    /// Every line's time instead of its own (a receiver that stamps the time
    /// it received a request, as Promtail's push API without
    /// `use_incoming_timestamp`).
    at: Option<i64>,
}

impl<'s> Encoder<'s> {
    /// An encoder whose output may not pass `limit` bytes.
    pub fn new(stamps: &'s Stamps, limit: usize) -> Self {
        Self { out: Vec::new(), ids: HashMap::new(), lines: 0, limit, stamps, at: None }
    }

    /// This encoder giving every line the time `at` (where `Some`).
    pub fn at(mut self, at: Option<i64>) -> Self {
        self.at = at;
        self
    }

    fn check(&self) -> Result<(), Overflow> {
        if self.out.len() > self.limit {
            Err(Overflow { limit: self.limit })
        } else {
            Ok(())
        }
    }

    /// The stream of `tenant` and `labels`: its stream line is written the first time.
    pub fn stream(&mut self, tenant: Option<&str>, labels: &[Pair<'_>]) -> Result<Stream, Overflow> {
        let key = stream_key(tenant, labels);
        if let Some(&id) = self.ids.get(&key) {
            return Ok(Stream { id, key });
        }
        let id = self.ids.len() as u32;
        self.ids.insert(key, id);
        StreamDef { id, tenant: tenant.map(Cow::Borrowed), labels: labels.to_vec() }.encode(&mut self.out);
        self.check()?;
        Ok(Stream { id, key })
    }

    /// One line of stream `s`; its timestamp made distinct within the stream.
    pub fn line(&mut self, s: Stream, ts: i64, line: &str, metadata: Vec<Pair<'_>>) -> Result<(), Overflow> {
        let ts = self.stamps.stamp(s.key, self.at.unwrap_or(ts));
        Record { ts, stream: Some(s.id), line: Cow::Borrowed(line), metadata, ..Default::default() }
            .encode(&mut self.out);
        self.lines += 1;
        self.check()
    }

    /// The lines written so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// The spool lines and how many records they hold.
    pub fn finish(self) -> (Vec<u8>, u64) {
        (self.out, self.lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_timestamps_of_a_stream_become_distinct_within_their_millisecond() {
        let s = Stamps::new();
        let a = stream_key(None, &[("job", "a")]);
        let b = stream_key(None, &[("job", "b")]);
        let t = 1_700_000_000_000_000_000;
        assert_eq!(s.stamp(a, t), t);
        assert_eq!(s.stamp(a, t), t + 1);
        assert_eq!(s.stamp(a, t), t + 2);
        assert_eq!(s.stamp(b, t), t, "another stream keeps its own");
        assert_eq!(s.stamp(a, t + 500), t + 500, "a later time is kept");
        // At the end of a millisecond, the sender's time is kept rather than cross it.
        let end = t + 999_999;
        assert_eq!(s.stamp(a, end), end);
        assert_eq!(s.stamp(a, end), end);
    }

    #[test]
    fn labels_are_written_once_per_stream_and_the_limit_holds() {
        let stamps = Stamps::new();
        let mut e = Encoder::new(&stamps, 10_000);
        let labels: Vec<Pair<'_>> = vec![("job".into(), "x".repeat(500).into())];
        for i in 0..10 {
            let s = e.stream(Some("t"), &labels).unwrap();
            e.line(s, i, "l", Vec::new()).unwrap();
        }
        let (out, n) = e.finish();
        assert_eq!(n, 10);
        assert!(out.len() < 1_000, "{}", out.len());
        let mut e = Encoder::new(&stamps, 10_000);
        let s = e.stream(None, &labels).unwrap();
        let mut failed = false;
        for i in 0..10_000 {
            if e.line(s, i, "a line of some length", Vec::new()).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed, "an encoder refuses past its limit");
    }
}
