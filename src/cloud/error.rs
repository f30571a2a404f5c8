//! Errors of the cloud client: rule violations (exit 2) and the service's
//! error statuses turned into messages that say what to do.

use crate::client::http::HttpError;

use super::validate::Invalid;
use super::Call;

#[derive(Debug, thiserror::Error)]
pub enum CloudError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error("{0}")]
    Usage(String),
    #[error(
        "401 Unauthorized from {url}: the cloud token is missing or invalid; \
         check --token-file or TAILSHIP_CLOUD_TOKEN{}",
        detail(body)
    )]
    Unauthorized { url: String, body: String },
    #[error(
        "403 Forbidden from {url}: the token's access policy lacks the scope needed to {action}; \
         add the scope to the policy of the token{}",
        detail(body)
    )]
    Forbidden { url: String, action: String, body: String },
    #[error("404 Not Found: {what} does not exist{}", detail(body))]
    NotFound { what: String, body: String },
    #[error(
        "409 Conflict: stack `{slug}` has delete protection on; turn it off first with \
         `tailship cloud stacks update {slug} --delete-protection=false`, then delete it{}",
        detail(body)
    )]
    DeleteProtected { slug: String, body: String },
    #[error(
        "409 Conflict: cannot {action}: it conflicts with an existing one \
         (names are unique per org and region){}",
        detail(body)
    )]
    Conflict { action: String, body: String },
    #[error("400 Bad Request: the service refused to {action}{}", detail(body))]
    BadRequest { action: String, body: String },
    #[error("cannot {action}: {source}")]
    Http { action: String, source: HttpError },
    #[error("cannot {action}: {message}")]
    Protocol { action: String, message: String },
}

fn detail(body: &str) -> String {
    if body.is_empty() {
        String::new()
    } else {
        format!(" (service said: {body})")
    }
}

impl CloudError {
    /// True when the error is the caller's (bad flags): exit code 2.
    pub fn is_usage(&self) -> bool {
        matches!(self, Self::Invalid(_) | Self::Usage(_))
    }
}

pub(crate) fn map_error(err: HttpError, call: &Call) -> CloudError {
    let HttpError::Status { url, status, body, .. } = &err else {
        return CloudError::Http { action: call.action.clone(), source: err };
    };
    let (url, body) = (url.clone(), body.clone());
    match status.as_u16() {
        400 => CloudError::BadRequest { action: call.action.clone(), body },
        401 => CloudError::Unauthorized { url, body },
        403 => CloudError::Forbidden { url, action: call.action.clone(), body },
        404 if !call.what.is_empty() => CloudError::NotFound { what: call.what.clone(), body },
        409 => match &call.stack_delete {
            Some(slug) => CloudError::DeleteProtected { slug: slug.clone(), body },
            None => CloudError::Conflict { action: call.action.clone(), body },
        },
        _ => CloudError::Http { action: call.action.clone(), source: err },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::StatusCode;

    #[test]
    fn messages_name_the_fix_and_never_the_token() {
        let e = |code: u16| HttpError::Status {
            url: "http://h/api/instances/s".into(),
            status: StatusCode::from_u16(code).unwrap(),
            body: String::new(),
            retry_after: None,
        };
        let mut call = Call::new("delete stack `s`", "stack `s`");
        call.stack_delete = Some("s".into());
        let m = map_error(e(409), &call).to_string();
        assert!(m.contains("tailship cloud stacks update s --delete-protection=false"), "{m}");
        let m = map_error(e(401), &call).to_string();
        assert!(m.contains("TAILSHIP_CLOUD_TOKEN"), "{m}");
        let m = map_error(e(404), &call).to_string();
        assert!(m.contains("stack `s` does not exist"), "{m}");
    }
}
