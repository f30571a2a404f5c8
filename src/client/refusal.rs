//! What a push's refusal says: whether its content is at fault, whether
//! the agent is misconfigured, and how much of a partly refused batch the
//! service stored.

use super::http::HttpError;

/// True for a refusal of the batch's content (400, 413, 422): retrying the
/// same content cannot help. Any other 4xx says the agent is misconfigured or
/// not allowed (401, 403, 404, 405, ...): nothing was stored and the data is
/// not at fault, so it is kept and retried.
pub fn refuses_content(e: &HttpError) -> bool {
    e.status().is_some_and(|s| matches!(s.as_u16(), 400 | 413 | 422))
}

/// A 3xx (redirects not followed, or one without a Location) or a 4xx that
/// is not about the content: the agent is misconfigured; the lines wait,
/// never dropped as refused.
pub(super) fn misconfigured(e: &HttpError) -> bool {
    e.status().is_some_and(|s| s.is_client_error() || s.is_redirection()) && !refuses_content(e)
}

/// `(N, M)` of a refusal ending in Loki's `total ignored: N out of M`: the
/// service stored the other M - N entries.
pub(super) fn partly_stored(message: &str) -> Option<(u64, u64)> {
    let rest = &message[message.rfind("total ignored: ")? + "total ignored: ".len()..];
    let (n, rest) = rest.split_once(" out of ")?;
    let m: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let (n, m) = (n.trim().parse().ok()?, m.parse().ok()?);
    (n <= m).then_some((n, m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_refusal_says_how_many_were_stored() {
        let loki =
            "400 from http://l/push: entry for stream '{job=\"a\"}' has timestamp too old; total ignored: 1 out of 500";
        assert_eq!(partly_stored(loki), Some((1, 500)));
        assert_eq!(partly_stored("400 from u: line too long; total ignored: 2 out of 3\n"), Some((2, 3)));
        assert_eq!(partly_stored("400 from u: bad request"), None);
        assert_eq!(partly_stored("total ignored: 5 out of 3"), None);
    }
}
