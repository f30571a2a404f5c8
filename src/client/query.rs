//! The query client: range queries, instant (metric) queries, label names and
//! label values, over the shared HTTP layer (auth, TLS, retries); plus the
//! [`Pager`] that turns many bounded `query_range` requests into one ordered
//! stream of entries, for `tailship query` (a fixed window) and `tailship
//! tail` (a window whose end keeps moving).
//!
//! # Paging without repeats or gaps
//!
//! The log API has no cursor: a range query returns at most `limit` entries of
//! `[start, end)` in time order, and the spec says to page by moving `start`
//! just past the last timestamp received. Moving it to `last + 1` would lose
//! entries when several share the last timestamp and the page ended among them
//! (the service orders entries within one timestamp as it likes). So:
//!
//! - A page that came back with fewer entries than asked for holds everything
//!   left in the window: the query is done (a tail moves `start` to the
//!   request's `end` and waits for more).
//! - After a full page whose last entry has timestamp `T`, the next request
//!   starts *at* `T` (forward; backward sets the exclusive `end` to `T + 1`),
//!   and the entries already seen at `T` are remembered as (stream, line)
//!   pairs. The service stores one entry per stream, timestamp and line, so
//!   that pair names an entry exactly; seen ones are skipped when they come
//!   back.
//! - A request asks for `batch` entries while fewer than `batch` were seen at
//!   the boundary, else for `seen + batch`. A full answer of `limit` entries
//!   holds at most `seen` old ones, so at least one new entry (usually nearly a
//!   batch), whatever order the service picks within `T`: paging always moves
//!   on, even when more entries share one timestamp than fit a batch.
//!
//! The cost: each page after the first re-reads the few entries at its
//! boundary. Only a run of more than `batch` entries at one nanosecond makes a
//! request ask for more than `batch`; against a service that caps `limit`
//! (5,000 by default) such a run can end the query with that service's 400.
//!
//! The client-side selector check ([`check_query`]) only finds the `{...}`
//! selectors of a query and asks that each has a matcher that does not match
//! the empty string (the spec's rule); the full grammar stays with the server.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::http::{self, Auth, HttpError, RetryPolicy};
use crate::config::ClientConfig;
use crate::logql;

/// Label names to values, sorted by name.
pub type Labels = BTreeMap<String, String>;

/// Order of a range query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Direction {
    /// Oldest first.
    Forward,
    /// Newest first (the service's default).
    Backward,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Forward => "forward",
            Self::Backward => "backward",
        }
    }
}

/// The labels of one stream, with their display form `{a="x", b="y"}`, shared
/// by every entry of the stream.
#[derive(Debug, PartialEq, Eq)]
pub struct Stream {
    pub labels: Labels,
    /// `{a="x", b="y"}`: printed by the default output and the stream's identity.
    pub display: String,
}

impl Stream {
    pub fn new(labels: Labels) -> Self {
        Self { display: logql::format_selector(labels.iter().map(|(k, v)| (k.as_str(), v.as_str()))), labels }
    }
}

/// One log entry of a range query.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Unix nanoseconds.
    pub ts: i64,
    pub stream: Arc<Stream>,
    pub line: String,
}

impl Entry {
    fn key(&self) -> (String, String) {
        (self.stream.display.clone(), self.line.clone())
    }
}

/// One sample of an instant (metric) query.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub labels: Labels,
    /// Unix nanoseconds (the service sends seconds with millisecond precision).
    pub ts: i64,
    /// The value as the service wrote it.
    pub value: String,
}

/// What kind of query a string is, as far as the client needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryKind {
    /// A stream selector with optional filters: `{job="app"} |= "error"`.
    Log,
    /// Anything else: an aggregation such as `count_over_time({job="app"}[5m])`.
    Metric,
}

/// Errors of the client-side query check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryCheckError {
    #[error("the query is empty; give a stream selector such as {{job=\"app\"}}")]
    Empty,
    #[error(
        "a query needs at least one label matcher that does not match the empty string, such as \
         {{job=\"app\"}}; {0} has none"
    )]
    NoMatcher(String),
    #[error("no stream selector in the query; give one such as {{job=\"app\"}}")]
    NoSelector,
    #[error("cannot read the query at column {col}: {msg}")]
    Syntax { col: usize, msg: String },
}

/// Checks every `{...}` stream selector of a query (with [`crate::logql::selectors`],
/// the parser the embedded store and alert rules use): each must hold a
/// matcher that does not match the empty string. Returns whether the query is
/// a plain log query or a metric query.
pub fn check_query(query: &str) -> Result<QueryKind, QueryCheckError> {
    let q = query.trim();
    if q.is_empty() {
        return Err(QueryCheckError::Empty);
    }
    let kind = if q.starts_with('{') { QueryKind::Log } else { QueryKind::Metric };
    match logql::selectors(q) {
        Ok(s) if s.is_empty() => Err(QueryCheckError::NoSelector),
        Ok(_) => Ok(kind),
        Err(logql::ParseError::EmptySelector { selector }) => Err(QueryCheckError::NoMatcher(selector)),
        Err(logql::ParseError::Syntax { col, msg }) => Err(QueryCheckError::Syntax { col, msg }),
    }
}

/// One `query_range` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeRequest {
    pub query: String,
    /// Unix nanoseconds, inclusive.
    pub start: i64,
    /// Unix nanoseconds, exclusive.
    pub end: i64,
    pub limit: usize,
    pub direction: Direction,
}

/// The paging state of one query (see the module header).
#[derive(Debug)]
pub struct Pager {
    query: String,
    direction: Direction,
    start: i64,
    end: i64,
    batch: usize,
    /// Entries still to return; `None` returns everything.
    remaining: Option<usize>,
    /// The timestamp the last full page ended on, and the entries seen at it.
    boundary: Option<(i64, HashSet<(String, String)>)>,
    /// A tail: a short page moves `start` to the request's end instead of ending.
    follow: bool,
    done: bool,
}

impl Pager {
    /// Pages through `[start, end)` in `direction`, `batch` entries per request,
    /// returning at most `limit` entries (`None`: all).
    pub fn range(query: &str, direction: Direction, start: i64, end: i64, limit: Option<usize>, batch: usize) -> Self {
        Self {
            query: query.to_string(),
            direction,
            start,
            end,
            batch: batch.max(1),
            remaining: limit,
            boundary: None,
            follow: false,
            done: limit == Some(0),
        }
    }

    /// Follows new entries forward from `start`; the caller moves the end with
    /// each [`Pager::request_until`].
    pub fn follow(query: &str, start: i64, batch: usize) -> Self {
        let mut p = Self::range(query, Direction::Forward, start, start, None, batch);
        p.follow = true;
        p
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Where the next request starts (inclusive).
    pub fn start(&self) -> i64 {
        self.start
    }

    /// The next request of a fixed range, or `None` when paging is over.
    pub fn next_request(&self) -> Option<RangeRequest> {
        if self.done || self.start >= self.end {
            return None;
        }
        let seen = self.boundary.as_ref().map_or(0, |(_, s)| s.len());
        let want = self.remaining.map_or(self.batch, |r| r.min(self.batch));
        Some(RangeRequest {
            query: self.query.clone(),
            start: self.start,
            end: self.end,
            limit: if seen < want { want } else { seen + want },
            direction: self.direction,
        })
    }

    /// For a tail: the next request up to `end`, or `None` when nothing new can
    /// be asked for yet.
    pub fn request_until(&mut self, end: i64) -> Option<RangeRequest> {
        self.end = self.end.max(end);
        self.next_request()
    }

    /// Takes the answer to `req`; returns the entries not returned before, in
    /// order, and whether the page was full (more may be waiting at once).
    pub fn accept(&mut self, req: &RangeRequest, mut entries: Vec<Entry>) -> (Vec<Entry>, bool) {
        // A stable sort keeps the service's order within one timestamp.
        match self.direction {
            Direction::Forward => entries.sort_by_key(|e| e.ts),
            Direction::Backward => entries.sort_by_key(|e| std::cmp::Reverse(e.ts)),
        }
        let full = entries.len() >= req.limit;
        let last_ts = entries.last().map(|e| e.ts);
        let prev = self.boundary.take();
        let mut seen_now = HashSet::new();
        let mut fresh = Vec::with_capacity(entries.len());
        for e in entries {
            let at_prev = prev.as_ref().is_some_and(|(ts, _)| *ts == e.ts);
            let at_last = Some(e.ts) == last_ts;
            let key = if at_prev || at_last { Some(e.key()) } else { None };
            let was_seen = match (&prev, &key) {
                (Some((_, seen)), Some(k)) if at_prev => seen.contains(k),
                _ => false,
            };
            if let (true, Some(k)) = (at_last, key) {
                seen_now.insert(k);
            }
            if !was_seen {
                fresh.push(e);
            }
        }
        if let (Some((ts, seen)), Some(last)) = (prev, last_ts) {
            if ts == last {
                // Entries seen at this timestamp earlier may not all have come back this time.
                seen_now.extend(seen);
            }
        }
        if let Some(r) = &mut self.remaining {
            fresh.truncate(*r);
            *r -= fresh.len();
            if *r == 0 {
                self.done = true;
            }
        }
        match (full, last_ts) {
            (true, Some(ts)) => {
                if fresh.is_empty() {
                    // Cannot happen with a service that honours `limit`; never loop.
                    tracing::warn!("the service returned a full page without new entries; stopping here");
                    self.done = true;
                }
                match self.direction {
                    Direction::Forward => self.start = ts,
                    Direction::Backward => self.end = ts.saturating_add(1),
                }
                self.boundary = Some((ts, seen_now));
            }
            _ if self.follow => {
                self.start = req.end;
                self.boundary = None;
            }
            _ => self.done = true,
        }
        (fresh, full && !self.done)
    }
}

#[derive(Deserialize)]
struct Envelope<T> {
    data: T,
}

#[derive(Deserialize)]
struct ResultData {
    #[serde(rename = "resultType", default)]
    result_type: Option<String>,
    result: serde_json::Value,
}

#[derive(Deserialize)]
struct JsonStream {
    stream: Labels,
    values: Vec<Vec<serde_json::Value>>,
}

#[derive(Deserialize)]
struct JsonSample {
    #[serde(default)]
    metric: Labels,
    value: (serde_json::Value, serde_json::Value),
}

/// A typed client of the log API's query side.
pub struct QueryClient {
    client: reqwest::Client,
    base: String,
    auth: Auth,
    /// `X-Scope-OrgID`; `a|b` queries several tenants.
    org_id: Option<String>,
    retry: RetryPolicy,
}

impl QueryClient {
    /// `retry` bounds the retries of [`QueryClient::range`], [`QueryClient::instant`]
    /// and the label calls; a tail retries on its own.
    pub fn new(c: &ClientConfig, retry: RetryPolicy) -> Result<Self, HttpError> {
        let client = http::client_for(c, &c.url)?;
        let auth = Auth::of(c);
        Ok(Self { client, base: http::join_url(&c.url, &c.api_prefix, ""), auth, org_id: c.tenant_id.clone(), retry })
    }

    fn url(&self, segments: &[&str]) -> Result<reqwest::Url, HttpError> {
        let mut u = reqwest::Url::parse(&self.base)
            .map_err(|e| HttpError::Transport { url: http::redact_url(&self.base), message: e.to_string() })?;
        {
            let mut p = u.path_segments_mut().map_err(|()| HttpError::Transport {
                url: http::redact_url(&self.base),
                message: "the URL cannot have a path".into(),
            })?;
            p.pop_if_empty();
            p.extend(segments);
        }
        Ok(u)
    }

    /// One GET, decoded as the `data` of the answer; no retry.
    async fn get<T: serde::de::DeserializeOwned>(
        &self,
        segments: &[&str],
        params: &[(&str, String)],
    ) -> Result<T, HttpError> {
        let url = self.url(segments)?;
        let shown = url.to_string();
        let mut rb = self.client.get(url).query(params);
        if let Some(org) = &self.org_id {
            rb = rb.header("X-Scope-OrgID", org);
        }
        let resp = http::send(self.auth.apply(rb), &shown).await?;
        let bytes = resp.bytes().await.map_err(|e| HttpError::transport(&shown, &e))?;
        let env: Envelope<T> = serde_json::from_slice(&bytes)
            .map_err(|e| HttpError::Decode { url: http::redact_url(&shown), message: e.to_string() })?;
        Ok(env.data)
    }

    async fn retrying<T, F, Fut>(&self, cancel: &CancellationToken, op: F) -> Result<T, HttpError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, HttpError>>,
    {
        http::with_retry(
            self.retry,
            cancel,
            |err, wait| tracing::warn!("{err}; retrying in {}", crate::util::format_duration(round_ms(wait))),
            op,
        )
        .await
    }

    /// One `query_range` request, no retry: the entries of every stream, in the
    /// order the service sent them.
    pub async fn range_once(&self, r: &RangeRequest) -> Result<Vec<Entry>, HttpError> {
        let params = [
            ("query", r.query.clone()),
            ("start", r.start.to_string()),
            ("end", r.end.to_string()),
            ("limit", r.limit.to_string()),
            ("direction", r.direction.as_str().to_string()),
        ];
        let data: ResultData = self.get(&["query_range"], &params).await?;
        let decode = |message: String| HttpError::Decode { url: http::redact_url(&self.base), message };
        if let Some(t) = data.result_type.as_deref() {
            if t != "streams" {
                return Err(decode(format!("expected log streams, got resultType {t:?}")));
            }
        }
        let streams: Vec<JsonStream> = serde_json::from_value(data.result).map_err(|e| decode(e.to_string()))?;
        let mut out = Vec::new();
        for s in streams {
            let stream = Arc::new(Stream::new(s.stream));
            for v in s.values {
                let ts = v.first().and_then(|t| t.as_str()).and_then(|t| t.parse::<i64>().ok());
                let line = v.get(1).and_then(|l| l.as_str());
                match (ts, line) {
                    (Some(ts), Some(line)) => out.push(Entry { ts, stream: stream.clone(), line: line.to_string() }),
                    _ => return Err(decode(format!("bad value in a stream: {}", serde_json::Value::from(v)))),
                }
            }
        }
        Ok(out)
    }

    /// A `query_range` request retried on 429, 5xx and connection errors.
    pub async fn range(&self, r: &RangeRequest, cancel: &CancellationToken) -> Result<Vec<Entry>, HttpError> {
        self.retrying(cancel, || self.range_once(r)).await
    }

    /// An instant (metric) query at `time` (Unix nanoseconds).
    pub async fn instant(&self, query: &str, time: i64, cancel: &CancellationToken) -> Result<Vec<Sample>, HttpError> {
        let params = [("query", query.to_string()), ("time", time.to_string())];
        let data: ResultData = self.retrying(cancel, || self.get(&["query"], &params)).await?;
        let decode = |message: String| HttpError::Decode { url: http::redact_url(&self.base), message };
        match data.result_type.as_deref() {
            Some("scalar") => {
                let (t, v): (serde_json::Value, serde_json::Value) =
                    serde_json::from_value(data.result).map_err(|e| decode(e.to_string()))?;
                Ok(vec![sample(Labels::new(), &t, &v).ok_or_else(|| decode("bad scalar".into()))?])
            }
            None | Some("vector") => {
                let list: Vec<JsonSample> = serde_json::from_value(data.result).map_err(|e| decode(e.to_string()))?;
                list.into_iter()
                    .map(|s| sample(s.metric, &s.value.0, &s.value.1).ok_or_else(|| decode("bad sample".into())))
                    .collect()
            }
            Some(other) => Err(decode(format!("expected a vector of samples, got resultType {other:?}"))),
        }
    }

    /// Label names, optionally of entries in `[start, end)`.
    pub async fn labels(
        &self,
        range: Option<(i64, i64)>,
        cancel: &CancellationToken,
    ) -> Result<Vec<String>, HttpError> {
        let params = range_params(range);
        let mut v: Vec<String> = self.retrying(cancel, || self.get(&["labels"], &params)).await?;
        v.sort();
        Ok(v)
    }

    /// Values of label `name`, optionally of entries in `[start, end)`.
    pub async fn label_values(
        &self,
        name: &str,
        range: Option<(i64, i64)>,
        cancel: &CancellationToken,
    ) -> Result<Vec<String>, HttpError> {
        let params = range_params(range);
        let segments = ["label", name, "values"];
        let mut v: Vec<String> = self.retrying(cancel, || self.get(&segments, &params)).await?;
        v.sort();
        Ok(v)
    }
}

fn range_params(range: Option<(i64, i64)>) -> Vec<(&'static str, String)> {
    match range {
        Some((s, e)) => vec![("start", s.to_string()), ("end", e.to_string())],
        None => Vec::new(),
    }
}

/// A sample from its `[time, "value"]` pair; time in (fractional) Unix seconds.
fn sample(labels: Labels, t: &serde_json::Value, v: &serde_json::Value) -> Option<Sample> {
    let secs = match t {
        serde_json::Value::Number(n) => n.as_f64()?,
        serde_json::Value::String(s) => s.parse::<f64>().ok()?,
        _ => return None,
    };
    let value = match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => return None,
    };
    Some(Sample { labels, ts: (secs * 1e9).round() as i64, value })
}

/// Waits shown to people, to the millisecond.
pub fn round_ms(d: Duration) -> Duration {
    Duration::from_millis(d.as_millis().min(u128::from(u64::MAX)) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(stream: &Arc<Stream>, ts: i64, line: &str) -> Entry {
        Entry { ts, stream: stream.clone(), line: line.to_string() }
    }

    fn stream(v: &str) -> Arc<Stream> {
        Arc::new(Stream::new([("job".to_string(), v.to_string())].into_iter().collect()))
    }

    #[test]
    fn check_query_rules() {
        assert_eq!(check_query(r#"{job="app"}"#), Ok(QueryKind::Log));
        assert_eq!(check_query(r#"{job="app", x=~".*"} |= "}{""#), Ok(QueryKind::Log));
        assert_eq!(check_query(r#"sum by (job) (count_over_time({job=~"a.+"}[5m]))"#), Ok(QueryKind::Metric));
        assert_eq!(check_query(r#"{job=`a\d`}"#), Ok(QueryKind::Log));
        assert_eq!(check_query("  "), Err(QueryCheckError::Empty));
        assert!(matches!(check_query("{}"), Err(QueryCheckError::NoMatcher(s)) if s == "{}"));
        assert!(matches!(check_query(r#"{job=~".*"}"#), Err(QueryCheckError::NoMatcher(_))));
        assert!(matches!(check_query(r#"{job=""}"#), Err(QueryCheckError::NoMatcher(_))));
        assert!(matches!(check_query(r#"rate({a=~".*"}[1m])"#), Err(QueryCheckError::NoMatcher(_))));
        assert_eq!(check_query(r#"{job!=""}"#), Ok(QueryKind::Log));
        assert_eq!(check_query("rate(x[1m])"), Err(QueryCheckError::NoSelector));
        assert!(matches!(check_query(r#"{job="app""#), Err(QueryCheckError::Syntax { .. })));
        assert!(matches!(check_query(r#"{job app}"#), Err(QueryCheckError::Syntax { .. })));
        assert!(matches!(check_query(r#"{job="a\"pp"}"#), Ok(QueryKind::Log)));
    }

    #[test]
    fn stream_display() {
        let s = Stream::new([("b", "2"), ("a", "x\"y")].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        assert_eq!(s.display, r#"{a="x\"y", b="2"}"#);
    }

    /// A model service: entries sorted by ts; within a ts, `shuffle` picks an
    /// order per request so the pager cannot rely on it.
    fn serve(all: &[Entry], r: &RangeRequest, flip: bool) -> Vec<Entry> {
        let mut v: Vec<Entry> = all.iter().filter(|e| e.ts >= r.start && e.ts < r.end).cloned().collect();
        v.sort_by_key(|e| e.ts);
        if r.direction == Direction::Backward {
            v.reverse();
        }
        if flip {
            // Reverse the order inside each timestamp.
            let mut out = Vec::new();
            let mut i = 0;
            while i < v.len() {
                let mut j = i;
                while j < v.len() && v[j].ts == v[i].ts {
                    j += 1;
                }
                out.extend(v[i..j].iter().rev().cloned());
                i = j;
            }
            v = out;
        }
        v.truncate(r.limit);
        v
    }

    fn drain(p: &mut Pager, all: &[Entry]) -> Vec<String> {
        let mut got = Vec::new();
        let mut n = 0;
        while let Some(r) = p.next_request() {
            n += 1;
            assert!(n < 10_000, "pager loops");
            let (fresh, _) = p.accept(&r, serve(all, &r, n % 2 == 0));
            got.extend(fresh.into_iter().map(|e| e.line));
        }
        got
    }

    fn data() -> Vec<Entry> {
        let (a, b) = (stream("a"), stream("b"));
        let mut all = Vec::new();
        for i in 0..50i64 {
            // Runs of equal timestamps, longer than a batch, over two streams.
            let ts = 1000 + i / 7;
            let s = if i % 2 == 0 { &a } else { &b };
            all.push(entry(s, ts, &format!("l{i:03}")));
        }
        all
    }

    #[test]
    fn pager_returns_each_entry_once_in_both_directions() {
        let all = data();
        for batch in [1, 2, 3, 5, 100] {
            let mut p = Pager::range("{}", Direction::Forward, 0, 5000, None, batch);
            let mut got = drain(&mut p, &all);
            let mut want: Vec<String> = all.iter().map(|e| e.line.clone()).collect();
            assert_eq!(got.len(), want.len(), "forward batch {batch}");
            got.sort();
            want.sort();
            assert_eq!(got, want);
            let mut p = Pager::range("{}", Direction::Backward, 0, 5000, None, batch);
            let got = drain(&mut p, &all);
            assert_eq!(got.len(), all.len(), "backward batch {batch}");
            let ts: Vec<i64> = got.iter().map(|l| all.iter().find(|e| &e.line == l).unwrap().ts).collect();
            assert!(ts.windows(2).all(|w| w[0] >= w[1]), "backward order");
        }
    }

    #[test]
    fn requests_stay_within_the_batch_unless_one_timestamp_holds_more() {
        // Runs of 7 at one timestamp, batch 10: a service capping `limit` at 10 never sees more.
        let all = data();
        let mut p = Pager::range("{}", Direction::Forward, 0, 5000, None, 10);
        let mut n = 0;
        while let Some(r) = p.next_request() {
            assert!(r.limit <= 10, "{r:?}");
            n += p.accept(&r, serve(&all, &r, false)).0.len();
        }
        assert_eq!(n, all.len());
    }

    #[test]
    fn pager_honours_limit() {
        let all = data();
        let mut p = Pager::range("{}", Direction::Forward, 0, 5000, Some(17), 5);
        assert_eq!(drain(&mut p, &all).len(), 17);
        let p = Pager::range("{}", Direction::Forward, 0, 5000, Some(0), 5);
        assert!(p.next_request().is_none());
    }

    #[test]
    fn follow_moves_start_to_end_after_a_short_page() {
        let all = data();
        let mut p = Pager::follow("{}", 1000, 4);
        let mut got = Vec::new();
        let mut end = 1001;
        let mut n = 0;
        while end <= 1010 {
            n += 1;
            assert!(n < 1000);
            match p.request_until(end) {
                Some(r) => {
                    let (fresh, full) = p.accept(&r, serve(&all, &r, n % 3 == 0));
                    got.extend(fresh.into_iter().map(|e| e.line));
                    if !full {
                        end += 1;
                    }
                }
                None => end += 1,
            }
        }
        assert_eq!(got.len(), all.len());
        let set: HashSet<_> = got.iter().collect();
        assert_eq!(set.len(), all.len());
    }
}
