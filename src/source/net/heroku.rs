//! `type = "heroku_drain"`: Heroku's HTTPS log drains, as Promtail's
//! `heroku_drain` target takes them: `POST /heroku/api/v1/drain` with an
//! `application/logplex-1` body of octet-counted RFC 5424 frames
//! (`LEN <PRI>1 TIMESTAMP HOST APP PROC ID MESSAGE`, no structured data).
//! Each frame becomes a spooled line (its message), labelled through the
//! source's `relabel` rules from `__heroku_drain_host`, `_app`, `_proc`,
//! `_log_id` and the URL's query parameters as `__heroku_drain_param_<name>`
//! (repeated ones joined with `,`). The tenant is the source's `tenant_id`,
//! else the request's `X-Scope-OrgID`. A body with a frame that does not
//! read is refused whole (400, nothing spooled, counted); 204 once spooled.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::http::HttpReceiver;
use super::push::Refused;

/// A drain receiver: the HTTP side and what labels its lines.
pub struct HerokuReceiver {
    pub http: HttpReceiver,
    pub labels: crate::relabel::Labels,
    pub relabel: Option<Arc<crate::relabel::Rules>>,
    pub use_incoming_timestamp: bool,
}

/// The routes of a drain receiver.
pub fn router(rx: Arc<HerokuReceiver>) -> axum::Router {
    axum::Router::new()
        .route("/heroku/api/v1/drain", axum::routing::post(drain))
        .route("/ready", axum::routing::get(|| async { "ready\n" }))
        .with_state(rx)
}

async fn drain(
    State(rx): State<Arc<HerokuReceiver>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let http = &rx.http;
    let (tenant, body, _held) = match http.accept(&headers, body).await {
        Ok(a) => a,
        Err(r) => return *r,
    };
    let params = params(query.as_deref().unwrap_or(""));
    match rx.records(&body, &params, tenant.as_deref()) {
        Ok((encoded, lines, dropped)) => {
            if dropped > 0 {
                super::metrics::NetMetrics::get()
                    .refused
                    .with_label_values(&[&http.name, "relabel_drop"])
                    .inc_by(dropped);
            }
            http.spool(encoded, lines, StatusCode::NO_CONTENT).await
        }
        Err(Refused::Bad(message)) => http.refuse(StatusCode::BAD_REQUEST, "bad_request", &message),
        Err(Refused::TooLarge(message)) => http.refuse(StatusCode::PAYLOAD_TOO_LARGE, "too_large", &message),
    }
}

/// The query's parameters as `__heroku_drain_param_<name>` labels.
fn params(query: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        let name = format!("__heroku_drain_param_{}", crate::util::sanitize_label_name(&k));
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some((_, all)) => {
                all.push(',');
                all.push_str(&v);
            }
            None => out.push((name, v.into_owned())),
        }
    }
    out
}

/// One logplex frame's message.
#[derive(Debug, PartialEq)]
pub struct Frame<'a> {
    pub ts: Option<i64>,
    pub host: &'a str,
    pub app: &'a str,
    pub proc_id: &'a str,
    pub log_id: &'a str,
    pub message: &'a str,
}

/// Splits a logplex body into its frames; an error names the first one that does not read.
pub fn frames(body: &str) -> Result<Vec<Frame<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = body;
    loop {
        rest = rest.trim_start_matches(['\n', '\r', ' ']);
        if rest.is_empty() {
            return Ok(out);
        }
        let n = out.len() + 1;
        let (len, after) = rest.split_once(' ').ok_or_else(|| format!("frame {n}: no length"))?;
        let len: usize = len.parse().map_err(|_| format!("frame {n}: `{len}` is not a length"))?;
        let msg = after.get(..len).ok_or_else(|| format!("frame {n}: shorter than its length {len}"))?;
        rest = &after[len..];
        out.push(frame(msg).ok_or_else(|| format!("frame {n}: not an RFC 5424 message: {msg:?}"))?);
    }
}

fn frame(msg: &str) -> Option<Frame<'_>> {
    let msg = msg.trim_end_matches(['\n', '\r']);
    let mut f = msg.splitn(7, ' ');
    let head = f.next()?;
    let version = head.strip_prefix('<')?.split_once('>')?.1;
    if version.is_empty() || !version.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let ts = f.next()?;
    let ts = (ts != "-").then(|| chrono::DateTime::parse_from_rfc3339(ts).ok()?.timestamp_nanos_opt()).flatten();
    let (host, app, proc_id, log_id) = (f.next()?, f.next()?, f.next()?, f.next()?);
    Some(Frame { ts, host, app, proc_id, log_id, message: f.next().unwrap_or("") })
}

impl HerokuReceiver {
    /// A body's frames as spool records: (records, lines, lines relabelling dropped).
    fn records(
        &self,
        body: &[u8],
        params: &[(String, String)],
        tenant: Option<&str>,
    ) -> Result<(Vec<u8>, u64, u64), Refused> {
        let text = std::str::from_utf8(body).map_err(|e| Refused::Bad(format!("the body is not UTF-8: {e}")))?;
        let now = crate::util::now_ns() as i64;
        let mut enc = crate::spool::Encoder::new(&self.http.stamps, self.http.expand_limit());
        let mut dropped = 0;
        for f in frames(text).map_err(Refused::Bad)? {
            let mut labels = self.labels.clone();
            for (k, v) in [
                ("__heroku_drain_host", f.host),
                ("__heroku_drain_app", f.app),
                ("__heroku_drain_proc", f.proc_id),
                ("__heroku_drain_log_id", f.log_id),
            ] {
                labels.insert(k.into(), v.into());
            }
            for (k, v) in params {
                labels.insert(k.clone(), v.clone());
            }
            if let Some(rules) = &self.relabel {
                if !rules.apply(&mut labels) {
                    dropped += 1;
                    continue;
                }
            }
            crate::relabel::strip_internal(&mut labels);
            let ts = if self.use_incoming_timestamp { f.ts.unwrap_or(now) } else { now };
            let labels: Vec<_> = labels.iter().map(|(k, v)| (k.as_str().into(), v.as_str().into())).collect();
            let stream = enc.stream(tenant, &labels)?;
            enc.line(stream, ts, f.message, Vec::new())?;
        }
        let (out, lines) = enc.finish();
        Ok((out, lines, dropped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logplex_frames_as_heroku_sends_them() {
        let body = "83 <40>1 2012-11-30T06:45:29+00:00 host app web.3 - State changed from starting to up\n\
                    119 <40>1 2012-11-30T06:45:26+00:00 host app web.3 - Starting process with command `bundle exec rackup config.ru -p 24405`\n";
        let f = frames(body).unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].message, "State changed from starting to up");
        assert_eq!((f[0].host, f[0].app, f[0].proc_id, f[0].log_id), ("host", "app", "web.3", "-"));
        assert_eq!(f[0].ts, Some(1_354_257_929_000_000_000));
        assert_eq!(f[1].message, "Starting process with command `bundle exec rackup config.ru -p 24405`");
    }

    #[test]
    fn frames_that_do_not_read() {
        assert!(frames("83 <40>1 2012").unwrap_err().contains("shorter"));
        assert!(frames("x <40>1").unwrap_err().contains("not a length"));
        assert!(frames("9 hello you").unwrap_err().contains("RFC 5424"));
        assert_eq!(frames("\n").unwrap(), Vec::new());
        assert_eq!(
            params("a=1&b=x%20y&a=2"),
            vec![("__heroku_drain_param_a".into(), "1,2".into()), ("__heroku_drain_param_b".into(), "x y".into())]
        );
    }
}
