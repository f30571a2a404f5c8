//! What every client does with a redirect (one policy, set by
//! [`super::http::build_client`]).
//!
//! A redirect is followed only when it keeps the request as it was and stays
//! where the credentials were meant to go:
//! - **307 and 308** keep the method and the body: followed, up to
//!   [`MAX_REDIRECTS`], unless `follow_redirects = false`.
//! - **301, 302 and 303** are never followed: an HTTP client turns the
//!   request that gets them into a GET without its body, so a push would be
//!   "delivered" to a login page. The answer is a misconfiguration the agent
//!   names (the lines wait on disk), as with `follow_redirects = false`.
//! - **Another origin** (scheme, host or port): never followed, whatever
//!   the status. The request carries credentials, `client.headers`, the
//!   tenant and the data, all meant for the configured service only; the
//!   operator sets the URL to where it should go instead.
//!
//! No `Referer` is ever sent: a webhook's URL (and its key) stays with the agent.

use reqwest::redirect::{Attempt, Policy};
use reqwest::StatusCode;

/// Redirects followed for one request at most.
pub const MAX_REDIRECTS: usize = 10;

/// The policy of a client: `follow` is `follow_redirects`.
pub fn policy(follow: bool) -> Policy {
    if !follow {
        return Policy::none();
    }
    Policy::custom(decide)
}

fn decide(attempt: Attempt<'_>) -> reqwest::redirect::Action {
    if attempt.previous().len() > MAX_REDIRECTS {
        return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
    }
    let keeps_request = matches!(attempt.status(), StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT);
    let same_origin = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
    if keeps_request && same_origin {
        attempt.follow()
    } else {
        attempt.stop()
    }
}

/// Why a 3xx answer to a request of `url` was not followed, for the
/// error the caller sees (the target's credentials and query left out).
pub fn refusal(status: StatusCode, location: Option<&str>, url: &str) -> String {
    let Some(location) = location else {
        return "a redirect without a Location: set the URL to the service's own".to_string();
    };
    let Some(target) = reqwest::Url::parse(url).ok().and_then(|u| u.join(location).ok().map(|t| (u, t))) else {
        return format!("a redirect to `{}`, which is not a URL", crate::util::secrets::scrub(location));
    };
    let (from, to) = target;
    let shown = super::http::redact_url(to.as_str());
    if from.origin() != to.origin() {
        format!(
            "redirected to {shown}, another scheme, host or port: not followed, so that no credential, header, \
             tenant or data goes there; set the URL to where it should go"
        )
    } else if matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND | StatusCode::SEE_OTHER) {
        format!(
            "redirected to {shown} with {}: not followed, as it would turn the request into a GET without its \
             body; set the URL to the one it redirects to",
            status.as_u16()
        )
    } else {
        format!(
            "redirected to {shown}: not followed (follow_redirects = false); set the URL to the one it redirects to"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_says_why_and_shows_no_credentials() {
        let other =
            refusal(StatusCode::TEMPORARY_REDIRECT, Some("https://u:pw@elsewhere:443/p?k=key"), "http://h:3100/x");
        assert!(other.contains("another scheme, host or port") && other.contains("https://elsewhere/p"), "{other}");
        assert!(!other.contains("pw") && !other.contains("key"), "{other}");
        let get = refusal(StatusCode::FOUND, Some("/login"), "http://h:3100/loki/api/v1/push");
        assert!(get.contains("http://h:3100/login") && get.contains("302") && get.contains("GET"), "{get}");
        let off = refusal(StatusCode::PERMANENT_REDIRECT, Some("/v2/push"), "http://h:3100/push");
        assert!(off.contains("follow_redirects = false"), "{off}");
        assert!(refusal(StatusCode::FOUND, None, "http://h/").contains("without a Location"));
    }
}
