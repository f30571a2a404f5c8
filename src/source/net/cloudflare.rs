//! `type = "cloudflare"`: a zone's HTTP request logs pulled from Cloudflare's
//! Logpull API (`GET /zones/{zone}/logs/received?start&end&fields`, one JSON
//! object per line), as Promtail's `cloudflare` target pulls them: windows
//! of `pull_range` that ended at least a minute ago (Cloudflare's delay),
//! each split over `workers` requests. Each object is a line, stamped with
//! its `EdgeStartTimestamp`, written to the spool.
//!
//! The end of the next window is kept in the spool's directory
//! (`cloudflare-cursor.json`), written once the window is on disk: a restart
//! goes on from there (a first start pulls the minute before the last one).
//! A window is spooled whole or not at all, so a failure part way is pulled
//! again without a line twice; a crash between the spool's fsync and the
//! cursor's write pulls that one window again. A failing API is retried
//! with backoff (1 s to 10 s) for as long as it fails, said once; a window
//! Cloudflare no longer keeps ("too early") is skipped with a warning and
//! counted (Promtail gives up on the target after 5 failed tries).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use backon::BackoffBuilder;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::metrics::NetMetrics;
use super::NetSource;
use crate::client::http::{self, ClientOptions, HttpError};
use crate::relabel::Labels;
use crate::spool::{Record, SourceSpool, SpoolError};
use crate::util::Secret;

/// Cloudflare's logs of the last minute are not complete yet.
const DELAY: Duration = Duration::from_secs(60);
const CURSOR_FILE: &str = "cloudflare-cursor.json";

#[derive(Debug, Serialize, Deserialize)]
struct Cursor {
    zone_id: String,
    /// Unix nanoseconds: the end of the next window.
    next_end: i64,
}

/// Pulls one zone's logs into a source's spool.
pub struct Puller {
    name: Arc<str>,
    spool: Arc<SourceSpool>,
    http: reqwest::Client,
    url: String,
    zone_id: String,
    token: Secret,
    fields: String,
    workers: usize,
    range: Duration,
    labels: Labels,
    tenant: Option<String>,
}

enum Part {
    Lines(Vec<u8>, u64),
    /// Cloudflare no longer keeps this part of the window.
    TooEarly(String),
}

impl Puller {
    pub fn new(s: &NetSource, spool: Arc<SourceSpool>) -> anyhow::Result<Self> {
        let c = s.config.cloudflare.clone().context("no cloudflare settings")?;
        let token = c.api_token.clone().context("no cloudflare.api_token")?;
        let endpoint = c.endpoint.trim_end_matches('/').to_string();
        let opts = ClientOptions {
            timeout: Some(Duration::from_secs(120)),
            plain_http: http::is_plain_http(&endpoint),
            ..Default::default()
        };
        Ok(Self {
            name: s.name.clone(),
            spool,
            http: http::build_client(&opts)?,
            url: format!("{endpoint}/zones/{}/logs/received", c.zone_id),
            fields: c.fields().join(","),
            zone_id: c.zone_id,
            token,
            workers: c.workers.max(1),
            range: c.pull_range.get(),
            labels: s.config.labels.clone(),
            tenant: s.config.tenant_id.clone(),
        })
    }

    fn cursor_path(&self) -> std::path::PathBuf {
        self.spool.dir.join(CURSOR_FILE)
    }

    fn load_cursor(&self) -> Option<i64> {
        let text = std::fs::read(self.cursor_path()).ok()?;
        let c: Cursor = serde_json::from_slice(&text).ok()?;
        (c.zone_id == self.zone_id).then_some(c.next_end)
    }

    fn save_cursor(&self, next_end: i64) -> std::io::Result<()> {
        let c = Cursor { zone_id: self.zone_id.clone(), next_end };
        let json = serde_json::to_vec(&c).map_err(std::io::Error::other)?;
        crate::positions::write_atomically_with(&self.cursor_path(), |f| std::io::Write::write_all(f, &json))
    }

    /// Pulls window after window until `stop`.
    pub async fn run(self, stop: CancellationToken) {
        let now = || crate::util::now_ns() as i64;
        let range = self.range.as_nanos() as i64;
        let delay = DELAY.as_nanos() as i64;
        let mut next_end = self.load_cursor().unwrap_or_else(|| now() - delay);
        tracing::info!(source = %self.name, zone = %self.zone_id, "pulling Cloudflare logs");
        while !stop.is_cancelled() {
            let ready_in = next_end + delay - now();
            if ready_in > 0 {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_nanos(ready_in as u64)) => continue,
                    _ = stop.cancelled() => return,
                }
            }
            let Some((out, lines)) = self.window(next_end - range, next_end, &stop).await else { return };
            if !self.spool_all(out, &stop).await {
                return;
            }
            NetMetrics::get().received.with_label_values(&[&self.name]).inc_by(lines);
            next_end += range;
            if let Err(e) = self.save_cursor(next_end) {
                tracing::warn!(source = %self.name, error = %e, "cannot save the cursor; a restart pulls this window again");
            }
        }
    }

    /// One window's lines (each part retried until it answers); None when stopped.
    async fn window(&self, start: i64, end: i64, stop: &CancellationToken) -> Option<(Vec<u8>, u64)> {
        let step = (end - start) / self.workers as i64;
        let parts = (0..self.workers as i64).map(|i| {
            let from = start + i * step;
            let to = if i == self.workers as i64 - 1 { end } else { from + step };
            self.part(from, to, stop)
        });
        let (mut out, mut lines) = (Vec::new(), 0);
        for p in futures_util::future::join_all(parts).await {
            match p? {
                Part::Lines(o, n) => {
                    out.extend_from_slice(&o);
                    lines += n;
                }
                Part::TooEarly(message) => {
                    tracing::warn!(source = %self.name, message = %message, "Cloudflare no longer keeps these logs; the window is skipped");
                    NetMetrics::get().refused.with_label_values(&[&self.name, "too_early"]).inc();
                }
            }
        }
        Some((out, lines))
    }

    /// One request of a window, retried with backoff while it fails; None when stopped.
    async fn part(&self, from: i64, to: i64, stop: &CancellationToken) -> Option<Part> {
        let mut delays = backon::ExponentialBuilder::default()
            .with_min_delay(Duration::from_secs(1))
            .with_max_delay(Duration::from_secs(10))
            .without_max_times()
            .with_jitter()
            .build();
        let mut failing = false;
        loop {
            let r = tokio::select! {
                r = self.get(from, to) => r,
                _ = stop.cancelled() => return None,
            };
            match r {
                Ok(body) => {
                    if failing {
                        tracing::info!(source = %self.name, "Logpull answers again");
                    }
                    return Some(self.records(&body));
                }
                Err(HttpError::Status { body, .. }) if body.contains("too early") => {
                    return Some(Part::TooEarly(body));
                }
                Err(e) => {
                    let wait = delays.next().unwrap_or(Duration::from_secs(10));
                    if !failing {
                        tracing::warn!(source = %self.name, error = %e, retry_in = ?wait, "cannot pull Cloudflare logs; retrying");
                    }
                    failing = true;
                    NetMetrics::get().refused.with_label_values(&[&self.name, "pull_failed"]).inc();
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = stop.cancelled() => return None,
                    }
                }
            }
        }
    }

    async fn get(&self, from: i64, to: i64) -> Result<bytes::Bytes, HttpError> {
        let stamp =
            |ns: i64| chrono::DateTime::from_timestamp_nanos(ns).to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true);
        let rb = self
            .http
            .get(&self.url)
            .query(&[("start", stamp(from)), ("end", stamp(to)), ("fields", self.fields.clone())])
            .bearer_auth(self.token.expose());
        http::fetch(rb, &self.url, crate::client::read::Cap::QueryPage).await
    }

    /// The body's lines as spool records.
    fn records(&self, body: &[u8]) -> Part {
        let now = crate::util::now_ns() as i64;
        let labels: Vec<_> = self.labels.iter().map(|(k, v)| (k.as_str().into(), v.as_str().into())).collect();
        let (mut out, mut n) = (Vec::with_capacity(body.len() + body.len() / 2), 0);
        for line in body.split(|b| *b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let ts = match serde_json::from_slice::<serde_json::Value>(line) {
                Ok(v) => edge_start(&v),
                Err(_) => {
                    NetMetrics::get().unparsed.with_label_values(&[&self.name]).inc();
                    None
                }
            };
            Record {
                ts: ts.unwrap_or(now),
                tenant: self.tenant.as_deref().map(Into::into),
                labels: labels.clone(),
                line: String::from_utf8_lossy(line),
                metadata: Vec::new(),
                stream: None,
            }
            .encode(&mut out);
            n += 1;
        }
        Part::Lines(out, n)
    }

    /// Appends `out` in pieces the spool takes, waiting while it is full;
    /// false when stopped first.
    async fn spool_all(&self, out: Vec<u8>, stop: &CancellationToken) -> bool {
        let max = self.spool.batch_bytes().max(1) as usize;
        let mut rest = &out[..];
        let mut said = false;
        while !rest.is_empty() {
            // Whole records only: cut after the last newline that fits.
            let cut = if rest.len() <= max {
                rest.len()
            } else {
                rest[..max].iter().rposition(|b| *b == b'\n').map_or(rest.len(), |i| i + 1)
            };
            match self.spool.append(rest[..cut].to_vec()).await {
                Ok(()) => rest = &rest[cut..],
                Err(SpoolError::Full { .. }) => {
                    if !said {
                        tracing::warn!(source = %self.name, "spool full; the window waits");
                        said = true;
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                        _ = stop.cancelled() => return false,
                    }
                }
                Err(e) => {
                    tracing::error!(source = %self.name, error = %e, "cannot write the spool; retrying");
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                        _ = stop.cancelled() => return false,
                    }
                }
            }
        }
        true
    }
}

/// `EdgeStartTimestamp` as Unix nanoseconds (Logpull's default) or RFC 3339.
fn edge_start(v: &serde_json::Value) -> Option<i64> {
    match v.get("EdgeStartTimestamp")? {
        serde_json::Value::Number(n) => n.as_i64(),
        serde_json::Value::String(s) => chrono::DateTime::parse_from_rfc3339(s)
            .ok()
            .and_then(|t| t.timestamp_nanos_opt())
            .or_else(|| s.parse().ok()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_start_in_either_form() {
        assert_eq!(
            edge_start(&serde_json::json!({"EdgeStartTimestamp": 1_700_000_000_123_456_789i64})),
            Some(1_700_000_000_123_456_789)
        );
        assert_eq!(
            edge_start(&serde_json::json!({"EdgeStartTimestamp": "2023-11-14T22:13:20.5Z"})),
            Some(1_700_000_000_500_000_000)
        );
        assert_eq!(edge_start(&serde_json::json!({"RayID": "x"})), None);
    }
}
