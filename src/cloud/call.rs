//! One management API call over the shared HTTP layer: retried with
//! `retry::with_retry`, but only where sending again is safe, and answered
//! with the JSON body. Used by the cloud client and the tenant admin client.
//!
//! A 429 means the service did not act, so every call retries it. A 5xx or a
//! transport error may come after the service applied the request, so only
//! idempotent calls (reads, deletes, PUT) retry those: a create is never sent twice.

use std::future::Future;

use reqwest::StatusCode;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::client::http::{self, HttpError};
use crate::client::retry::{self, RetryPolicy};

/// Runs `attempt` until it succeeds or fails for good, then reads the body:
/// `None` when empty (a 204), else JSON.
pub async fn send_json<F, Fut>(
    policy: RetryPolicy,
    idempotent: bool,
    action: &str,
    mut attempt: F,
) -> Result<Option<Value>, HttpError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(reqwest::Response, String), HttpError>>,
{
    // One-off commands end by exiting (Ctrl-C included): nothing cancels a call.
    let never = CancellationToken::new();
    let on_retry = |e: &HttpError, w: std::time::Duration| {
        tracing::warn!(error = %e, wait_ms = w.as_millis() as u64, "{action}: retrying");
    };
    // An error that must not be retried travels as Ok(Err(..)), which ends with_retry.
    let outcome = retry::with_retry(policy, &never, on_retry, || {
        let fut = attempt();
        async move {
            match fut.await {
                Ok(ok) => Ok(Ok(ok)),
                Err(e) if e.status() == Some(StatusCode::TOO_MANY_REQUESTS) || idempotent => Err(e),
                Err(e) => Ok(Err(e)),
            }
        }
    })
    .await;
    let (resp, url) = outcome.and_then(|r| r)?;
    let bytes = crate::client::read::body(resp, crate::client::read::Cap::Small, &url).await?;
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Ok(None);
    }
    serde_json::from_slice(&bytes).map(Some).map_err(|e| HttpError::Decode {
        url: http::redact_url(&url),
        message: format!("the answer is not JSON ({e})"),
    })
}
