//! Looking lines up in the service before they are sent again.
//!
//! Two moments leave the agent unsure whether the service stored a push: a
//! restart after a crash (the lines in flight are read again, see
//! `batch::reconcile`), and a push whose request went out and whose answer
//! never came (the connection dropped or timed out after sending, or a
//! gateway answered 502/504 for a service it may have reached). Sending such
//! lines again as they were is at least once: Loki drops an identical entry
//! only while the stream's head block holds it. Asking first is exactly once:
//! each stream's stretch of the batch is looked up (`query_range` between its
//! first and last timestamp) and the entries found there, same timestamp and
//! text, are not sent again.
//!
//! With `client.reconcile = "auto"` (the default) an answer that says these
//! credentials cannot read (401, 403, 404, ...: a push-only token or
//! endpoint) turns lookups off, said once; lines then go again as they are.

use std::collections::HashSet;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;

use super::http::HttpError;
use super::query::{Direction, Pager, QueryClient};
use super::retry::RetryPolicy;
use crate::config::{ClientConfig, Reconcile};

/// Entries asked for per request.
const PAGE: usize = 1000;

/// True when a push's request may have reached the service although no
/// success came back: its lines may be stored.
pub fn answer_lost(e: &HttpError) -> bool {
    match e {
        HttpError::Transport { connect, .. } => !connect,
        HttpError::Status { status, .. } => matches!(status.as_u16(), 500 | 502 | 504),
        _ => false,
    }
}

/// The lookups of one client (see the module documentation).
pub struct Lookup {
    query: QueryClient,
    /// The client's name, for `tailship_lookup_requests_total`.
    client: String,
    /// The service cannot be read with these credentials.
    off: AtomicBool,
}

/// What a lookup of a push body found.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// None of its entries: send it as it is.
    Nothing,
    /// Some: send `body` (the others, in the same form); `found` were stored.
    Some { body: Vec<u8>, found: u64 },
    /// Every one of its `found` entries: it was delivered.
    All { found: u64 },
}

impl Lookup {
    /// `None` with `reconcile = "off"` (or a client that cannot be built, which pushes report).
    pub fn new(c: &ClientConfig) -> Option<Self> {
        if c.reconcile == Reconcile::Off {
            return None;
        }
        let query = QueryClient::new(c, RetryPolicy::of(c)).ok()?;
        Some(Self { query, client: c.name.clone(), off: AtomicBool::new(false) })
    }

    pub fn is_off(&self) -> bool {
        self.off.load(Ordering::Relaxed)
    }

    /// Turns lookups off after `e`, saying so once.
    fn give_up(&self, e: &HttpError, why: &str) {
        if !self.off.swap(true, Ordering::Relaxed) {
            tracing::info!(error = %e, "cannot query the service to look up {why}; they are sent again as they were");
        }
    }

    /// The `(timestamp, line)` pairs of stream `selector` within
    /// `[first, last]` the service holds, as tenant `tenant`. With `retrying`,
    /// each page is retried as queries are and any error turns lookups off;
    /// without, an error that may pass (429, 5xx, no connection) is returned
    /// (the caller tries again later) and any other turns lookups off
    /// (`Ok(None)`, as when they are off).
    pub async fn stored(
        &self,
        selector: &str,
        tenant: Option<&str>,
        (first, last): (i64, i64),
        retrying: bool,
        cancel: &CancellationToken,
    ) -> Result<Option<HashSet<(i64, String)>>, HttpError> {
        let mut stored = HashSet::new();
        let mut pager = Pager::range(selector, Direction::Forward, first, last.saturating_add(1), None, PAGE);
        while let Some(req) = pager.next_request() {
            if self.is_off() {
                return Ok(None);
            }
            crate::metrics::Metrics::get().lookups.with_label_values(&[&self.client]).inc();
            let r = if retrying {
                self.query.range_as(&req, tenant, cancel).await
            } else {
                self.query.range_once_as(&req, tenant).await
            };
            match r {
                Ok(entries) => match pager.accept(&req, entries) {
                    Ok((fresh, _)) => stored.extend(fresh.into_iter().map(|e| (e.ts, e.line))),
                    Err(e) => {
                        // A service whose pages cannot be paged through cannot be looked up in.
                        if !self.off.swap(true, Ordering::Relaxed) {
                            tracing::warn!(error = %e, "cannot page through the service's answers to look up lines \
                                whose delivery is unsure; lookups are off and such lines are sent again as they were");
                        }
                        return Ok(None);
                    }
                },
                Err(e) if cancel.is_cancelled() || matches!(e, HttpError::Cancelled) => {
                    return Err(HttpError::Cancelled)
                }
                Err(e) if !retrying && e.is_retriable() => return Err(e),
                Err(e) => {
                    self.give_up(&e, "lines whose delivery is unsure");
                    return Ok(None);
                }
            }
        }
        if pager.outside() > 0 {
            tracing::warn!(
                stream = selector,
                dropped = pager.outside(),
                "the service answered entries outside the range asked for; they were dropped"
            );
        }
        Ok(Some(stored))
    }

    /// Looks up the entries of a push body (JSON, gzipped when `gzipped`).
    /// An error that may pass is returned; a body that cannot be read back
    /// (never one the agent made) is sent as it is.
    pub async fn push_body(
        &self,
        wire: &[u8],
        gzipped: bool,
        tenant: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<Found, HttpError> {
        let Some(mut push) = decode(wire, gzipped) else { return Ok(Found::Nothing) };
        let mut found = 0u64;
        let mut left = 0u64;
        for stream in &mut push.streams {
            let Some((first, last)) = stream.range() else { continue };
            let selector = crate::logql::format_selector(stream.stream.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            let Some(stored) = self.stored(&selector, tenant, (first, last), false, cancel).await? else {
                return Ok(Found::Nothing);
            };
            let before = stream.values.len();
            stream.values.retain(|v| !v.key().is_some_and(|k| stored.contains(&k)));
            found += (before - stream.values.len()) as u64;
            left += stream.values.len() as u64;
        }
        if found == 0 {
            return Ok(Found::Nothing);
        }
        if left == 0 {
            return Ok(Found::All { found });
        }
        push.streams.retain(|s| !s.values.is_empty());
        match serde_json::to_vec(&push) {
            Ok(body) => Ok(Found::Some { body, found }),
            Err(_) => Ok(Found::Nothing),
        }
    }
}

#[derive(serde::Deserialize, serde::Serialize)]
struct PushBody {
    streams: Vec<PushStream>,
}

#[derive(serde::Deserialize, serde::Serialize)]
struct PushStream {
    stream: std::collections::BTreeMap<String, String>,
    values: Vec<PushValue>,
}

/// `[ts, line]` or `[ts, line, {structured metadata}]`, kept as it came.
#[derive(serde::Deserialize, serde::Serialize)]
#[serde(transparent)]
struct PushValue(Vec<serde_json::Value>);

impl PushValue {
    fn key(&self) -> Option<(i64, String)> {
        let ts = self.0.first()?.as_str()?.parse().ok()?;
        Some((ts, self.0.get(1)?.as_str()?.to_string()))
    }
}

impl PushStream {
    fn range(&self) -> Option<(i64, i64)> {
        let mut ts = self.values.iter().filter_map(|v| v.key().map(|k| k.0));
        let first = ts.next()?;
        Some(ts.fold((first, first), |(a, b), t| (a.min(t), b.max(t))))
    }
}

fn decode(wire: &[u8], gzipped: bool) -> Option<PushBody> {
    if !gzipped {
        return serde_json::from_slice(wire).ok();
    }
    let mut json = Vec::with_capacity(wire.len() * 4);
    flate2::read::GzDecoder::new(wire).read_to_end(&mut json).ok()?;
    serde_json::from_slice(&json).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_push_body_reads_back_with_its_metadata_kept() {
        let body =
            br#"{"streams":[{"stream":{"job":"a","host":"h"},"values":[["2","two"],["1","one",{"trace_id":"t"}]]}]}"#;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, body).unwrap();
        let z = gz.finish().unwrap();
        for (wire, gz) in [(&body[..], false), (&z[..], true)] {
            let mut push = decode(wire, gz).unwrap();
            assert_eq!(push.streams[0].range(), Some((1, 2)));
            push.streams[0].values.retain(|v| v.key() != Some((2, "two".into())));
            let again = String::from_utf8(serde_json::to_vec(&push).unwrap()).unwrap();
            assert_eq!(
                again,
                r#"{"streams":[{"stream":{"host":"h","job":"a"},"values":[["1","one",{"trace_id":"t"}]]}]}"#
            );
        }
        assert!(decode(b"not json", false).is_none());
        assert!(decode(b"not gzip", true).is_none());
    }

    #[test]
    fn only_a_request_that_may_have_arrived_is_unsure() {
        let t = |connect| HttpError::Transport { url: "u".into(), message: "m".into(), connect };
        let s = |code| HttpError::Status {
            url: "u".into(),
            status: reqwest::StatusCode::from_u16(code).unwrap(),
            body: String::new(),
            retry_after: None,
        };
        assert!(answer_lost(&t(false)));
        assert!(!answer_lost(&t(true)));
        for (code, lost) in [(500, true), (502, true), (504, true), (503, false), (429, false), (400, false)] {
            assert_eq!(answer_lost(&s(code)), lost, "{code}");
        }
    }

    /// A log API on 127.0.0.1 holding entries at 0, 1, ..., 4999 ns that
    /// answers each range query from `widen` before its `start` to `widen`
    /// past its `end`; returns its URL.
    async fn widening_api(widen: i64) -> String {
        use axum::extract::Query;
        let answer = move |Query(q): Query<std::collections::HashMap<String, String>>| async move {
            let num = |k: &str| q.get(k).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
            let (start, end, limit) = (num("start") - widen, num("end") + widen, num("limit") as usize);
            let values: Vec<serde_json::Value> = (0..5000i64)
                .filter(|t| *t >= start && *t < end)
                .take(limit)
                .map(|t| serde_json::json!([t.to_string(), format!("line {t}")]))
                .collect();
            axum::Json(serde_json::json!({"status": "success", "data": {
                "resultType": "streams", "result": [{"stream": {"job": "a"}, "values": values}]
            }}))
        };
        let app = axum::Router::new().fallback(answer);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        url
    }

    fn lookup(url: &str) -> Lookup {
        let c = ClientConfig { url: url.to_string(), ..ClientConfig::default() };
        Lookup::new(&c).expect("lookups on")
    }

    #[tokio::test]
    async fn a_lookup_keeps_to_its_range_and_stops_on_a_page_it_cannot_pass() {
        let cancel = CancellationToken::new();
        // Widened by 25 ns: entries outside [2000, 2500] come back and are dropped.
        let l = lookup(&widening_api(25).await);
        let found = l.stored(r#"{job="a"}"#, None, (2000, 2500), false, &cancel).await.unwrap().expect("looked up");
        let mut ts: Vec<i64> = found.iter().map(|(t, _)| *t).collect();
        ts.sort_unstable();
        assert_eq!(ts, (2000..=2500).collect::<Vec<_>>());
        assert!(!l.is_off());
        // Widened by more than a page (1,000 entries) before `start`: the
        // pager stops; lookups are off and the lines go again as they were.
        let l = lookup(&widening_api(1500).await);
        let found = tokio::time::timeout(
            std::time::Duration::from_secs(20),
            l.stored(r#"{job="a"}"#, None, (2000, 2500), false, &cancel),
        )
        .await
        .expect("the lookup ends");
        assert_eq!(found.unwrap(), None);
        assert!(l.is_off());
    }
}
