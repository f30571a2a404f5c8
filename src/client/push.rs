//! Pushing batches: the JSON body (escaped once, straight into per-stream
//! buffers by the batcher), gzip, the request with tenant and auth headers,
//! the client-side rate limit, and retries until delivered.

use std::collections::HashSet;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use governor::{Quota, RateLimiter};
use reqwest::header::{HeaderValue, CONTENT_ENCODING, CONTENT_TYPE};
use tokio_util::sync::CancellationToken;

use super::http::{self, Auth, ClientOptions, HttpError, RetryPolicy};
use crate::config::{ClientConfig, Compression};
use crate::metrics::{Health, Metrics};

/// Escapes `s` as the inside of a JSON string (no quotes) onto `out`.
/// Only `"`, `\` and control characters need escaping. Eight bytes are checked
/// at a time, so a line without any (the usual case) is one scan and one copy.
pub fn escape_json_into(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if i + 8 <= bytes.len() {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[i..i + 8]);
            if !needs_escape(u64::from_le_bytes(w)) {
                i += 8;
                continue;
            }
        }
        let b = bytes[i];
        let esc = ESCAPE[b as usize];
        if esc != 0 {
            out.extend_from_slice(&bytes[start..i]);
            if esc == b'u' {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(b >> 4) as usize], HEX[(b & 0xf) as usize]]);
            } else {
                out.extend_from_slice(&[b'\\', esc]);
            }
            start = i + 1;
        }
        i += 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

/// True when any byte of `w` is below 0x20, a `"` or a `\`.
#[inline]
fn needs_escape(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    (below_space | zero_byte(w ^ (ONES * b'"' as u64)) | zero_byte(w ^ (ONES * b'\\' as u64))) != 0
}

/// For each byte: 0 to copy as is, else the letter of its escape (`u` for `\u00XX`).
static ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[b'\n' as usize] = b'n';
    t[b'\r' as usize] = b'r';
    t[b'\t' as usize] = b't';
    t[0x08] = b'b';
    t[0x0c] = b'f';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

/// Compresses a body with gzip at `level` (1-9).
pub fn gzip(body: &[u8], level: u32) -> Vec<u8> {
    gzip_parts(&[body], level)
}

/// Compresses the concatenation of `parts` without concatenating them first.
pub fn gzip_parts<P: AsRef<[u8]>>(parts: &[P], level: u32) -> Vec<u8> {
    use flate2::write::GzEncoder;
    use std::io::Write;
    let len: usize = parts.iter().map(|p| p.as_ref().len()).sum();
    let mut enc = GzEncoder::new(Vec::with_capacity(len / 4 + 64), flate2::Compression::new(level));
    for p in parts {
        // Writing to a Vec cannot fail.
        let _ = enc.write_all(p.as_ref());
    }
    enc.finish().unwrap_or_default()
}

/// One buffer of the parts; the single-part case (one stream) moves, never copies.
fn concat(mut parts: Vec<Vec<u8>>) -> Vec<u8> {
    if parts.len() == 1 {
        return parts.pop().unwrap_or_default();
    }
    let mut out = Vec::with_capacity(parts.iter().map(Vec::len).sum());
    for p in parts {
        out.extend_from_slice(&p);
    }
    out
}

/// How a batch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushOutcome {
    /// 2xx: delivered.
    Delivered,
    /// A 4xx other than 429 (or retries ran out): dropped on purpose, with the service's message.
    Rejected { status: Option<u16>, message: String },
    /// Shutdown came before delivery: not acknowledged, will be sent again after a restart.
    Aborted,
}

/// Sends push requests for one service.
pub struct Pusher {
    client: reqwest::Client,
    url: String,
    auth: Auth,
    compression: Compression,
    compression_level: u32,
    retry: RetryPolicy,
    limiter: Option<Limiter>,
    health: Arc<Health>,
    /// Statuses whose message was already logged (logged once per status).
    logged: Mutex<HashSet<u16>>,
}

type Limiter =
    (RateLimiter<governor::state::NotKeyed, governor::state::InMemoryState, governor::clock::DefaultClock>, u32);

impl Pusher {
    pub fn new(c: &ClientConfig, health: Arc<Health>) -> Result<Self, HttpError> {
        let client = http::build_client(&ClientOptions {
            ca_file: c.tls.ca_file.clone(),
            insecure_skip_verify: c.tls.insecure_skip_verify,
            timeout: Some(c.timeout.get()),
        })?;
        let auth = match (&c.basic_auth, &c.bearer_token) {
            (Some(b), _) => {
                Auth::Basic { username: b.username.clone(), password: b.password.clone().unwrap_or_default() }
            }
            (None, Some(t)) => Auth::Bearer(t.clone()),
            (None, None) => Auth::None,
        };
        let limiter = NonZeroU32::new(c.rate_limit.bytes_per_second.get().min(u32::MAX as u64) as u32).map(|rate| {
            let burst =
                c.rate_limit.burst_bytes.get().max(c.rate_limit.bytes_per_second.get()).max(c.batch.max_bytes.get());
            let burst = NonZeroU32::new(burst.min(u32::MAX as u64) as u32).unwrap_or(rate);
            (RateLimiter::direct(Quota::per_second(rate).allow_burst(burst)), burst.get())
        });
        Ok(Self {
            client,
            url: http::join_url(&c.url, &c.api_prefix, "push"),
            auth,
            compression: c.compression,
            compression_level: c.compression_level,
            retry: RetryPolicy {
                min_backoff: c.retry.min_backoff.get(),
                max_backoff: c.retry.max_backoff.get(),
                max_retries: c.retry.max_retries,
            },
            limiter,
            health,
            logged: Mutex::new(HashSet::new()),
        })
    }

    /// Encodes and sends one batch body until it is delivered, refused, or `abort` fires.
    /// Returns the outcome and the bytes sent on the wire.
    /// `body` is the JSON in parts, sent back to back.
    pub async fn push(
        &self,
        tenant: Option<&str>,
        body: Vec<Vec<u8>>,
        abort: &CancellationToken,
    ) -> (PushOutcome, usize) {
        let (wire, gzipped) = match self.compression {
            Compression::Gzip => {
                let level = self.compression_level;
                match tokio::task::spawn_blocking(move || gzip_parts(&body, level)).await {
                    Ok(z) => (Bytes::from(z), true),
                    Err(e) => {
                        return (PushOutcome::Rejected { status: None, message: format!("compression failed: {e}") }, 0)
                    }
                }
            }
            Compression::None => (Bytes::from(concat(body)), false),
        };
        let wire_len = wire.len();
        if let Some((limiter, burst)) = &self.limiter {
            let mut left = wire_len as u64;
            while left > 0 {
                let n = left.min(*burst as u64) as u32;
                if let Some(n) = NonZeroU32::new(n) {
                    let _ = limiter.until_n_ready(n).await;
                }
                left -= n as u64;
            }
        }
        let tenant_header = tenant.and_then(|t| HeaderValue::from_str(t).ok());
        let m = Metrics::get();
        let result = http::with_retry(
            self.retry,
            abort,
            |err, wait| {
                m.push_retries.inc();
                tracing::warn!(error = %err, retry_in = ?wait, "push failed; retrying");
            },
            || {
                let mut rb = self.client.post(&self.url).header(CONTENT_TYPE, "application/json").body(wire.clone());
                if gzipped {
                    rb = rb.header(CONTENT_ENCODING, "gzip");
                }
                if let Some(t) = &tenant_header {
                    rb = rb.header("X-Scope-OrgID", t.clone());
                }
                let rb = self.auth.apply(rb);
                async move {
                    let started = Instant::now();
                    let r = http::send(rb, &self.url).await;
                    m.push_duration.observe(started.elapsed().as_secs_f64());
                    let label = match &r {
                        Ok(resp) => resp.status().as_u16().to_string(),
                        Err(HttpError::Status { status, .. }) => status.as_u16().to_string(),
                        Err(_) => "error".to_string(),
                    };
                    m.push_requests.with_label_values(&[&label]).inc();
                    self.health.last_push_ok.store(r.is_ok(), std::sync::atomic::Ordering::Relaxed);
                    r.map(|_| ())
                }
            },
        )
        .await;
        let outcome = match result {
            Ok(()) => PushOutcome::Delivered,
            Err(HttpError::Cancelled) => PushOutcome::Aborted,
            Err(e) => {
                let status = e.status().map(|s| s.as_u16());
                let first = self.logged.lock().map(|mut l| l.insert(status.unwrap_or(0))).unwrap_or(true);
                if first {
                    tracing::error!(error = %e, "the service refused a batch; its lines are dropped and counted (further refusals with this status are counted, not logged)");
                }
                PushOutcome::Rejected { status, message: e.to_string() }
            }
        };
        (outcome, wire_len)
    }

    /// The push URL (without credentials).
    pub fn url(&self) -> String {
        http::redact_url(&self.url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_matches_serde_json() {
        for s in [
            "plain",
            "quote \" and \\ back",
            "ctl \u{1}\u{1f}\n\r\t\u{8}\u{c}",
            "üñí €",
            "",
            "a long line of plain text with a \" late quote",
            "\u{7f}\u{80} eight by\\tes\u{0}",
            "exactly8",
            "1234567\"",
        ] {
            let mut out = Vec::new();
            escape_json_into(&mut out, s);
            let ours = format!("\"{}\"", String::from_utf8(out).unwrap());
            let back: String = serde_json::from_str(&ours).unwrap();
            assert_eq!(back, s);
        }
    }

    #[test]
    fn escaping_random_strings_round_trips() {
        let alphabet = ['a', ' ', '"', '\\', '\n', '\u{1}', '\u{1f}', 'é', '€', '\u{7f}', 'z', '/'];
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 40) as usize;
            let s: String = (0..len).map(|k| alphabet[((x >> (k % 60)) as usize + k * 7) % alphabet.len()]).collect();
            let mut out = Vec::new();
            escape_json_into(&mut out, &s);
            let back: String = serde_json::from_str(&format!("\"{}\"", String::from_utf8(out).unwrap())).unwrap();
            assert_eq!(back, s);
        }
    }

    #[test]
    fn gzip_round_trips() {
        use std::io::Read;
        let z = gzip(b"hello hello hello", 1);
        let mut out = String::new();
        flate2::read::GzDecoder::new(&z[..]).read_to_string(&mut out).unwrap();
        assert_eq!(out, "hello hello hello");
    }
}
