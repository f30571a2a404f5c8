//! The HTTP face of the store: routes, basic auth, tenants, and the handlers
//! of push, query_range, query, labels and label values. Errors are plain
//! text naming the first problem, as Loki answers them.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use super::metric::unix_seconds;
use super::reply::text;
use super::store::{Labels, RangeParams, StreamResult};
use super::{webhook, Shared, SINGLE_TENANT};
use crate::logql::{self, Query as LogQuery};
use crate::lokipush as push;

type Params = Result<Query<HashMap<String, String>>, QueryRejection>;

const HOUR_NS: i64 = 3_600_000_000_000;

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    let prefix = normalize_prefix(&shared.opts.api_prefix);
    let mut api = Router::new()
        .route(&format!("{prefix}/push"), post(push))
        .route(&format!("{prefix}/query_range"), get(query_range))
        .route(&format!("{prefix}/query"), get(query))
        .route(&format!("{prefix}/labels"), get(labels))
        .route(&format!("{prefix}/series"), get(series).post(series))
        .route(&format!("{prefix}/label/{{name}}/values"), get(label_values))
        .fallback(not_found);
    if shared.opts.basic_auth.is_some() {
        api = api.layer(middleware::from_fn_with_state(shared.clone(), require_basic_auth));
    }
    let hook = "/integrations/v1/formatted_webhook/{key}";
    Router::new()
        .route("/stats", get(stats))
        .route(&format!("{hook}/"), post(webhook::post).get(webhook::get))
        .route(hook, post(webhook::post).get(webhook::get))
        .merge(api)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(shared.opts.max_body))
        .with_state(shared)
}

fn normalize_prefix(p: &str) -> String {
    let p = p.trim().trim_end_matches('/');
    if p.is_empty() || p.starts_with('/') {
        p.to_string()
    } else {
        format!("/{p}")
    }
}

/// An error answer: a status and a plain-text message naming the problem.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    msg: String,
}

impl ApiError {
    fn new(status: StatusCode, msg: impl Into<String>) -> Self {
        Self { status, msg: msg.into() }
    }

    fn bad(msg: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, msg)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        text(self.status, self.msg)
    }
}

/// A request outside the API (no such path, or a method the path does not
/// take): logged and counted in `/stats` (`outside_api`), as the spec's log
/// service logs them, so that a client asking what the API does not define shows.
fn outside_api(sh: &Shared, method: &axum::http::Method, uri: &axum::http::Uri, status: StatusCode) {
    let what = format!("{method} {}", crate::util::cut_at_char(uri.path(), 200));
    tracing::warn!(request = %what, status = status.as_u16(), "a request outside the log API");
    sh.counters.count_outside_api(what);
}

async fn not_found(State(sh): State<Arc<Shared>>, method: axum::http::Method, uri: axum::http::Uri) -> Response {
    outside_api(&sh, &method, &uri, StatusCode::NOT_FOUND);
    text(StatusCode::NOT_FOUND, "404 page not found")
}

async fn method_not_allowed(
    State(sh): State<Arc<Shared>>,
    method: axum::http::Method,
    uri: axum::http::Uri,
) -> Response {
    outside_api(&sh, &method, &uri, StatusCode::METHOD_NOT_ALLOWED);
    text(StatusCode::METHOD_NOT_ALLOWED, "405 method not allowed")
}

async fn stats(State(sh): State<Arc<Shared>>) -> Response {
    Json(sh.counters.snapshot()).into_response()
}

// ---- auth and tenants -------------------------------------------------------

/// Compares without an early exit, so timing says nothing about the secret.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn require_basic_auth(State(sh): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let Some(auth) = &sh.opts.basic_auth else { return next.run(req).await };
    let expected = crate::util::base64(format!("{}:{}", auth.user, auth.password.expose()).as_bytes());
    let given = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| {
        let (scheme, token) = v.trim().split_once(' ')?;
        scheme.eq_ignore_ascii_case("basic").then(|| token.trim())
    });
    if given.is_some_and(|g| same_bytes(g.as_bytes(), expected.as_bytes())) {
        return next.run(req).await;
    }
    let mut r = text(StatusCode::UNAUTHORIZED, "unauthorized: basic auth required");
    r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"tailship receive\""));
    r
}

/// Tenant ID rules of Loki (dskit): at most 150 of `[a-zA-Z0-9!\-_.*'()]`, not `.` or `..`.
fn valid_tenant(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 150
        && t != "."
        && t != ".."
        && t.bytes().all(|b| b.is_ascii_alphanumeric() || b"!-_.*'()".contains(&b))
}

/// The tenants a request speaks for. Pushes take exactly one.
fn tenants(sh: &Shared, headers: &HeaderMap, for_push: bool) -> Result<Vec<String>, ApiError> {
    if !sh.opts.multi_tenant {
        return Ok(vec![SINGLE_TENANT.to_string()]);
    }
    let raw = headers.get("x-scope-orgid").and_then(|v| v.to_str().ok()).map(str::trim).unwrap_or("");
    if raw.is_empty() {
        return Err(ApiError::new(StatusCode::UNAUTHORIZED, "no org id: the X-Scope-OrgID header is required"));
    }
    if for_push && raw.contains('|') {
        return Err(ApiError::bad("multiple org IDs present: a push goes to exactly one tenant"));
    }
    let mut out: Vec<String> = Vec::new();
    for t in raw.split('|') {
        if !valid_tenant(t) {
            return Err(ApiError::bad(format!("invalid org id {t:?}: use up to 150 of letters, digits and !-_.*'()")));
        }
        if !out.iter().any(|o| o == t) {
            out.push(t.to_string());
        }
    }
    Ok(out)
}

// ---- push -------------------------------------------------------------------

async fn push(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Result<Bytes, BytesRejection>) -> Response {
    let r = push_inner(&sh, &headers, body).await;
    let status = r.status();
    sh.counters.count_request(status.as_u16());
    if !status.is_success() {
        tracing::debug!(status = status.as_u16(), "push refused");
    }
    r
}

async fn push_inner(sh: &Shared, headers: &HeaderMap, body: Result<Bytes, BytesRejection>) -> Response {
    let tenant = match tenants(sh, headers, true) {
        Ok(mut t) => t.remove(0),
        Err(e) => return e.into_response(),
    };
    let f = &sh.opts.faults;
    let n = sh.push_seq.fetch_add(1, Ordering::Relaxed) + 1;
    if !f.latency.is_zero() {
        tokio::time::sleep(f.latency).await;
    }
    if n <= f.fail_first || (f.fail_every > 0 && n % f.fail_every == 0) {
        let status = StatusCode::from_u16(f.fail_status).unwrap_or(StatusCode::TOO_MANY_REQUESTS);
        let mut r = text(status, format!("injected failure of push request {n}"));
        if let Some(s) = f.retry_after {
            r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        return r;
    }
    let ctype = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let mime = ctype.split(';').next().unwrap_or("").trim();
    if !mime.eq_ignore_ascii_case("application/json") {
        let shown = if ctype.is_empty() { "none".to_string() } else { format!("{ctype:?}") };
        return text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("unsupported Content-Type {shown}: only application/json pushes are accepted"),
        );
    }
    let body = match body {
        Ok(b) => b,
        Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return text(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("request body is larger than {} bytes", sh.opts.max_body),
            )
        }
        Err(e) => return text(e.status(), e.body_text()),
    };
    let encoding = headers.get(header::CONTENT_ENCODING).and_then(|v| v.to_str().ok());
    let json = match push::decode(&body, encoding, sh.opts.max_body) {
        Ok(j) => j,
        Err(e @ push::BodyError::TooLarge { .. }) => return text(StatusCode::PAYLOAD_TOO_LARGE, e.to_string()),
        Err(e @ push::BodyError::UnsupportedEncoding(_)) => {
            return text(StatusCode::UNSUPPORTED_MEDIA_TYPE, e.to_string())
        }
        Err(e) => return text(StatusCode::BAD_REQUEST, e.to_string()),
    };
    // Loki stores lines that are not UTF-8; ours are `str`, so such a body is
    // read again with replacement characters (only after a failed parse, to
    // keep the common path at one pass).
    let lossy: Vec<u8>;
    let parsed = match push::parse(&json) {
        Ok(p) => p,
        Err(_) if std::str::from_utf8(&json).is_err() => {
            lossy = String::from_utf8_lossy(&json).into_owned().into_bytes();
            match push::parse(&lossy) {
                Ok(p) => p,
                Err(e) => return text(StatusCode::BAD_REQUEST, e.0),
            }
        }
        Err(e) => return text(StatusCode::BAD_REQUEST, e.0),
    };
    if parsed.streams.is_empty() {
        return text(StatusCode::UNPROCESSABLE_ENTITY, "push request has no streams");
    }
    let valid = match push::validate(&parsed) {
        Ok(v) => v,
        Err(e) => return text(StatusCode::BAD_REQUEST, e.0),
    };
    sh.backend.push(&tenant, &valid, &sh.counters);
    if !f.answer_after_store.is_zero() {
        tokio::time::sleep(f.answer_after_store).await;
    }
    match valid.error_message() {
        Some(msg) => text(StatusCode::BAD_REQUEST, msg),
        None => StatusCode::NO_CONTENT.into_response(),
    }
}

// ---- query parameters -------------------------------------------------------

/// Reads a time: Unix nanoseconds, fractional Unix seconds (`1700000000.5`), or RFC 3339.
pub(crate) fn parse_time(s: &str) -> Result<i64, String> {
    let t = s.trim();
    if let Ok(ns) = t.parse::<i64>() {
        return Ok(ns);
    }
    if let Some((secs, frac)) = t.split_once('.') {
        if let (Ok(secs), true) = (secs.parse::<i64>(), !frac.is_empty() && frac.bytes().all(|b| b.is_ascii_digit())) {
            let mut digits: String = frac.chars().take(9).collect();
            while digits.len() < 9 {
                digits.push('0');
            }
            let f: i64 = digits.parse().unwrap_or(0);
            if let Some(ns) = secs.checked_mul(1_000_000_000).and_then(|v| v.checked_add(f)) {
                return Ok(ns);
            }
        }
    }
    chrono::DateTime::parse_from_rfc3339(t)
        .ok()
        .and_then(|d| d.timestamp_nanos_opt())
        .ok_or_else(|| format!("invalid time {s:?}: use Unix nanoseconds or RFC 3339"))
}

struct QueryParams {
    map: HashMap<String, String>,
}

impl QueryParams {
    fn new(p: Params) -> Result<Self, ApiError> {
        match p {
            Ok(Query(map)) => Ok(Self { map }),
            Err(e) => Err(ApiError::bad(e.body_text())),
        }
    }

    fn get(&self, k: &str) -> Option<&str> {
        self.map.get(k).map(String::as_str).filter(|v| !v.is_empty())
    }

    fn time(&self, k: &str) -> Result<Option<i64>, ApiError> {
        self.get(k).map(parse_time).transpose().map_err(|e| ApiError::bad(format!("parameter {k}: {e}")))
    }

    /// `start` and `end`: end defaults to now, start to end minus `default_span`
    /// (or minus `since` when given).
    fn range(&self, default_span: i64) -> Result<(i64, i64), ApiError> {
        let end = self.time("end")?.unwrap_or_else(|| crate::util::now_ns() as i64);
        let span = match self.get("since") {
            Some(s) => logql::parse_duration_ns(s).map_err(|e| ApiError::bad(format!("since: {e}")))?,
            None => default_span,
        };
        let start = self.time("start")?.unwrap_or(end.saturating_sub(span));
        if end < start {
            return Err(ApiError::bad("end timestamp must not be before start time"));
        }
        Ok((start, end))
    }

    fn query(&self) -> Result<LogQuery, ApiError> {
        let q = self.get("query").ok_or_else(|| ApiError::bad("missing parameter: query"))?;
        logql::parse(q).map_err(|e| ApiError::bad(e.to_string()))
    }
}

// ---- response bodies ----------------------------------------------------------

#[derive(Serialize)]
struct Envelope<T: Serialize> {
    status: &'static str,
    data: T,
}

fn success<T: Serialize>(data: T) -> Response {
    Json(Envelope { status: "success", data }).into_response()
}

struct LabelMap<'a>(&'a Labels);

impl Serialize for LabelMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

struct Values<'a>(&'a [(i64, String)]);

impl Serialize for Values<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for (ts, line) in self.0 {
            seq.serialize_element(&(ts.to_string(), line))?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct JsonStream<'a> {
    stream: LabelMap<'a>,
    values: Values<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StreamsData<'a> {
    result_type: &'static str,
    result: Vec<JsonStream<'a>>,
    stats: serde_json::Map<String, serde_json::Value>,
}

#[derive(Serialize)]
struct JsonSample {
    metric: BTreeMap<String, String>,
    value: (serde_json::Number, String),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct VectorData {
    result_type: &'static str,
    result: Vec<JsonSample>,
    stats: serde_json::Map<String, serde_json::Value>,
}

// ---- query handlers -----------------------------------------------------------

/// Answers a read request for its tenants (from `X-Scope-OrgID`); an error
/// from either becomes the answer.
fn for_tenants(
    sh: &Shared,
    headers: &HeaderMap,
    read: impl FnOnce(&[String]) -> Result<Response, ApiError>,
) -> Response {
    tenants(sh, headers, false).and_then(|t| read(&t)).unwrap_or_else(IntoResponse::into_response)
}

async fn query_range(State(sh): State<Arc<Shared>>, headers: HeaderMap, params: Params) -> Response {
    for_tenants(&sh, &headers, |tenants| {
        let p = QueryParams::new(params)?;
        if let LogQuery::Metric(m) = p.query()? {
            let (start, end) = p.range(HOUR_NS)?;
            let step = step_ns(&p, start, end)?;
            return Ok(success(super::metric::matrix(&sh, tenants, &m, (start, end, step))));
        }
        let result = query_range_inner(&sh, tenants, p)?;
        Ok(success(StreamsData {
            result_type: "streams",
            result: result
                .iter()
                .map(|s| JsonStream { stream: LabelMap(&s.labels), values: Values(&s.values) })
                .collect(),
            stats: serde_json::Map::new(),
        }))
    })
}

fn query_range_inner(sh: &Shared, tenants: &[String], p: QueryParams) -> Result<Vec<StreamResult>, ApiError> {
    let LogQuery::Log(selector) = p.query()? else {
        return Err(ApiError::bad("a metric query is answered as a matrix"));
    };
    let limit = match p.get("limit") {
        None => 100,
        Some(l) => match l.parse::<i64>() {
            Ok(n) if n > 0 => n as usize,
            _ => return Err(ApiError::bad(format!("limit must be a positive integer, got {l:?}"))),
        },
    };
    if limit > sh.opts.max_query_limit {
        return Err(ApiError::bad(format!(
            "max entries limit per query exceeded, limit > max_entries_limit_per_query ({limit} > {})",
            sh.opts.max_query_limit
        )));
    }
    let forward = match p.get("direction").map(str::to_ascii_lowercase).as_deref() {
        None | Some("backward") => false,
        Some("forward") => true,
        Some(other) => return Err(ApiError::bad(format!("invalid direction {other:?}: use forward or backward"))),
    };
    let (start, end) = p.range(HOUR_NS)?;
    let params = RangeParams { selector: &selector, start, end, limit, forward, max_bytes: sh.opts.max_query_bytes };
    Ok(sh.backend.query_range(tenants, tenants.len() > 1, params))
}

async fn query(State(sh): State<Arc<Shared>>, headers: HeaderMap, params: Params) -> Response {
    for_tenants(&sh, &headers, |tenants| query_inner(&sh, tenants, params))
}

fn query_inner(sh: &Shared, tenants: &[String], params: Params) -> Result<Response, ApiError> {
    let p = QueryParams::new(params)?;
    let m = match p.query()? {
        LogQuery::Metric(m) => m,
        LogQuery::Log(_) => {
            return Err(ApiError::bad(
                "log queries are not supported as an instant query: a metric query is needed, such as \
                 count_over_time({job=\"app\"}[5m]); use query_range for log lines",
            ))
        }
    };
    let time = p.time("time")?.unwrap_or_else(|| crate::util::now_ns() as i64);
    let series = super::metric::evaluate(sh, tenants, &m, time);
    let ts = unix_seconds(time);
    let result = series
        .into_iter()
        .map(|(labels, v)| JsonSample { metric: labels.into_iter().collect(), value: (ts.clone(), v.to_string()) })
        .collect();
    Ok(success(VectorData { result_type: "vector", result, stats: serde_json::Map::new() }))
}

const SIX_HOURS_NS: i64 = 6 * HOUR_NS;

/// `step` of a range metric query: seconds (`15`, `0.5`) or a duration
/// (`15s`); default: the range in about 250 steps, at least a second (as Loki).
fn step_ns(p: &QueryParams, start: i64, end: i64) -> Result<i64, ApiError> {
    let step = match p.get("step") {
        None => ((end - start) / 250).max(1_000_000_000),
        Some(s) => match s.parse::<f64>() {
            Ok(secs) => (secs * 1e9) as i64,
            Err(_) => logql::parse_duration_ns(s).map_err(|e| ApiError::bad(format!("step: {e}")))?,
        },
    };
    if step <= 0 {
        return Err(ApiError::bad("zero or negative query resolution step widths are not accepted"));
    }
    if (end - start) / step > super::metric::MAX_STEPS {
        return Err(ApiError::bad(format!(
            "exceeded maximum resolution of {} points per timeseries: try decreasing the query resolution (?step=XX)",
            super::metric::MAX_STEPS
        )));
    }
    Ok(step)
}

/// `/series?match[]=SELECTOR&start=&end=`: the label sets of the streams with
/// entries in the range that the selector matches.
async fn series(State(sh): State<Arc<Shared>>, headers: HeaderMap, params: Params) -> Response {
    for_tenants(&sh, &headers, |tenants| {
        let p = QueryParams::new(params)?;
        let (start, end) = p.range(SIX_HOURS_NS)?;
        let m =
            p.get("match[]").or_else(|| p.get("match")).ok_or_else(|| ApiError::bad("missing parameter: match[]"))?;
        match logql::parse(m).map_err(|e| ApiError::bad(e.to_string()))? {
            LogQuery::Log(s) => Ok(success(super::metric::series(&sh, tenants, &s, start, end))),
            LogQuery::Metric(_) => Err(ApiError::bad("match[] must be a stream selector")),
        }
    })
}

async fn labels(State(sh): State<Arc<Shared>>, headers: HeaderMap, params: Params) -> Response {
    for_tenants(&sh, &headers, |tenants| {
        let p = QueryParams::new(params)?;
        let (start, end) = p.range(SIX_HOURS_NS)?;
        Ok(success(sh.backend.label_names(tenants, start, end)))
    })
}

async fn label_values(
    State(sh): State<Arc<Shared>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    params: Params,
) -> Response {
    for_tenants(&sh, &headers, |tenants| {
        let p = QueryParams::new(params)?;
        let (start, end) = p.range(SIX_HOURS_NS)?;
        let selector = match p.get("query") {
            None => None,
            Some(_) => match p.query()? {
                LogQuery::Log(s) => Some(s),
                LogQuery::Metric(_) => {
                    return Err(ApiError::bad("query must be a stream selector"));
                }
            },
        };
        Ok(success(sh.backend.label_values(tenants, &name, start, end, selector.as_ref())))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_known_values() {
        use crate::util::base64;
        assert_eq!(base64(b"user:pass"), "dXNlcjpwYXNz");
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b""), "");
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("1500").unwrap(), 1500);
        assert_eq!(parse_time("1.5").unwrap(), 1_500_000_000);
        assert_eq!(parse_time("1970-01-01T00:00:02Z").unwrap(), 2_000_000_000);
        assert!(parse_time("yesterday").is_err());
        assert_eq!(unix_seconds(1_500_000_000).to_string(), "1.5");
        assert_eq!(unix_seconds(2_000_000_000).to_string(), "2");
    }

    #[test]
    fn tenant_ids() {
        assert!(valid_tenant("team-a.prod_1"));
        assert!(!valid_tenant("a b"));
        assert!(!valid_tenant(".."));
        assert!(!valid_tenant(""));
    }
}
