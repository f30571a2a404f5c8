//! The query client: range queries, instant (metric) queries, label names and
//! label values, over the shared HTTP layer (auth, TLS, retries); plus the
//! [`Pager`] that turns many bounded `query_range` requests into one ordered
//! stream of entries, for `tailship query` (a fixed window) and `tailship
//! tail` (a window whose end keeps moving); see `pager.rs` for how pages
//! follow each other without repeats or gaps.
//!
//! The client-side selector check ([`check_query`]) only finds the `{...}`
//! selectors of a query and asks that each has a matcher that does not match
//! the empty string (the spec's rule); the full grammar stays with the server.

mod pager;
mod series;

pub use pager::{NoProgress, Pager, RangeRequest};
pub use series::Series;

use std::collections::BTreeMap;

use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::auth::Auth;
use super::http::{self, HttpError};
use super::retry::{self, RetryPolicy};
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
        let auth = Auth::of(c)?;
        Ok(Self { client, base: http::join_url(&c.url, c.prefix(), ""), auth, org_id: c.tenant_id.clone(), retry })
    }

    fn url(&self, segments: &[&str]) -> Result<reqwest::Url, HttpError> {
        let mut u = reqwest::Url::parse(&self.base).map_err(|e| HttpError::Transport {
            url: http::redact_url(&self.base),
            message: e.to_string(),
            connect: false,
        })?;
        {
            let mut p = u.path_segments_mut().map_err(|()| HttpError::Transport {
                url: http::redact_url(&self.base),
                message: "the URL cannot have a path".into(),
                connect: false,
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
        self.get_as(segments, params, self.org_id.as_deref()).await
    }

    /// [`QueryClient::get`] as tenant `org`.
    async fn get_as<T: serde::de::DeserializeOwned>(
        &self,
        segments: &[&str],
        params: &[(&str, String)],
        org: Option<&str>,
    ) -> Result<T, HttpError> {
        let url = self.url(segments)?;
        let shown = url.to_string();
        let mut rb = self.client.get(url).query(params);
        if let Some(org) = org {
            rb = rb.header("X-Scope-OrgID", org);
        }
        let span = tracing::info_span!("query", path = %segments.join("/"));
        let resp = async { http::send(self.auth.apply(rb).await?, &shown).await }.instrument(span).await;
        self.auth.answered(&resp);
        let resp = resp?;
        let bytes = super::read::body(resp, super::read::Cap::QueryPage, &shown).await?;
        let env: Envelope<T> = serde_json::from_slice(&bytes)
            .map_err(|e| HttpError::Decode { url: http::redact_url(&shown), message: e.to_string() })?;
        Ok(env.data)
    }

    async fn retrying<T, F, Fut>(&self, cancel: &CancellationToken, op: F) -> Result<T, HttpError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, HttpError>>,
    {
        retry::with_retry(
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
        self.range_once_as(r, self.org_id.as_deref()).await
    }

    /// [`QueryClient::range_once`] as tenant `org` (a stream's own tenant).
    pub async fn range_once_as(&self, r: &RangeRequest, org: Option<&str>) -> Result<Vec<Entry>, HttpError> {
        let params = [
            ("query", r.query.clone()),
            ("start", r.start.to_string()),
            ("end", r.end.to_string()),
            ("limit", r.limit.to_string()),
            ("direction", r.direction.as_str().to_string()),
        ];
        let data: ResultData = self.get_as(&["query_range"], &params, org).await?;
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

    /// [`QueryClient::range_once_as`] retried on 429, 5xx and connection errors.
    pub async fn range_as(
        &self,
        r: &RangeRequest,
        org: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<Vec<Entry>, HttpError> {
        self.retrying(cancel, || self.range_once_as(r, org)).await
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

/// The largest `limit` a service accepts, when it refused a query as asking
/// for too many entries: Loki answers 400 "max entries limit per query
/// exceeded, limit > max_entries_limit_per_query (1000 > 100)", and so does
/// `tailship receive`.
pub fn entries_limit(e: &HttpError) -> Option<usize> {
    let HttpError::Status { status, body, .. } = e else { return None };
    if status.as_u16() != 400 || !body.contains("max entries limit") {
        return None;
    }
    let inside = body.rsplit_once('(')?.1.split_once(')')?.0;
    inside.split_once('>')?.1.trim().parse().ok()
}

/// Waits shown to people, to the millisecond.
pub fn round_ms(d: Duration) -> Duration {
    Duration::from_millis(d.as_millis().min(u128::from(u64::MAX)) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entries_limit_a_service_names_is_read_from_its_400() {
        let e = |code: u16, body: &str| HttpError::Status {
            url: "u".into(),
            status: reqwest::StatusCode::from_u16(code).unwrap(),
            body: body.into(),
            retry_after: None,
        };
        let loki = "max entries limit per query exceeded, limit > max_entries_limit_per_query (1000 > 100)";
        assert_eq!(entries_limit(&e(400, loki)), Some(100));
        assert_eq!(entries_limit(&e(400, "parse error")), None);
        assert_eq!(entries_limit(&e(500, loki)), None);
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
}
