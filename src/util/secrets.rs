//! Every secret value the agent was given, so that any text it logs or
//! prints can be scrubbed of them, whoever wrote the text: a service that
//! echoes the `Authorization` header in its 401 body, a URL with a password
//! in an error message, a webhook URL in a library's error.
//!
//! Secrets are remembered when they are made ([`super::Secret::new`], secret
//! files, a password in a URL's userinfo, the Basic credentials as sent).
//! [`scrub`] replaces each with `<redacted>`; the log writer, command errors,
//! `check` output and `/ready` go through it.

use std::borrow::Cow;
use std::sync::RwLock;

/// Shorter values are not scrubbed: they would turn ordinary words into `<redacted>`.
const MIN_LEN: usize = 4;

static KNOWN: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Remembers `value` as a secret.
pub fn remember(value: &str) {
    if value.len() < MIN_LEN {
        return;
    }
    if let Ok(mut k) = KNOWN.write() {
        if !k.iter().any(|s| s == value) {
            k.push(value.to_string());
            // Longest first, so a secret that contains another is replaced whole.
            k.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }
}

/// Remembers the credentials of HTTP Basic authentication, also as the
/// header value carries them (`base64(user:password)`), which a service may echo.
pub fn remember_basic(user: &str, password: &str) {
    remember(password);
    let encoded = super::base64(format!("{user}:{password}").as_bytes());
    // Also without its `=` padding: a service echoing the header may drop it.
    let unpadded = encoded.trim_end_matches('=').to_string();
    remember(&encoded);
    if unpadded.len() != encoded.len() {
        remember(&unpadded);
    }
}

/// `text` with every remembered secret replaced by `<redacted>`.
pub fn scrub(text: &str) -> Cow<'_, str> {
    let Ok(known) = KNOWN.read() else { return Cow::Borrowed(text) };
    let mut out = Cow::Borrowed(text);
    for s in known.iter() {
        if out.contains(s.as_str()) {
            out = Cow::Owned(out.replace(s.as_str(), "<redacted>"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_values_are_scrubbed_wherever_they_appear() {
        remember("s3cr3t-token-value");
        remember("abc");
        let text = "401 from http://u:s3cr3t-token-value@h/: bad credentials: Bearer s3cr3t-token-value (abc)";
        assert_eq!(scrub(text), "401 from http://u:<redacted>@h/: bad credentials: Bearer <redacted> (abc)");
        assert!(matches!(scrub("nothing secret"), Cow::Borrowed(_)));
    }
}
