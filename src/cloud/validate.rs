//! Every rule the cloud management spec states, checked before a request is
//! sent. Each check names the request field it is about; a [`Checks`]
//! collects every problem of one request so the operator sees them all at once.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use chrono::{DateTime, SecondsFormat, Utc};

use super::model::Realm;

/// The largest `pageSize` of the list endpoints.
pub const MAX_PAGE_SIZE: u32 = 500;
/// Length limits of `name` and `displayName` (characters).
pub const MAX_NAME_CHARS: usize = 255;
/// Labels a stack may carry.
pub const MAX_STACK_LABELS: usize = 10;
/// Scopes that allow label policies (read permissions for metrics and logs).
pub const LABEL_POLICY_SCOPES: [&str; 2] = ["metrics:read", "logs:read"];

/// One or more broken rules; nothing was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Invalid(pub Vec<(String, String)>);

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(k, m)| format!("{k}: {m}")).collect();
        write!(f, "invalid request, nothing sent: {}", parts.join("; "))
    }
}

/// Collects broken rules of one request.
#[derive(Debug, Default)]
pub struct Checks(Vec<(String, String)>);

impl Checks {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn fail(&mut self, field: &str, message: impl Into<String>) {
        self.0.push((field.to_string(), message.into()));
    }

    /// Records the error of `r`, if any, under `field`.
    pub fn check(&mut self, field: &str, r: Result<(), String>) {
        if let Err(m) = r {
            self.fail(field, m);
        }
    }

    pub fn finish(self) -> Result<(), Invalid> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(Invalid(self.0))
        }
    }
}

/// `name` of a policy or token: 1-255 characters of a-z, 0-9, `-` and `_`.
pub fn name(s: &str) -> Result<(), String> {
    let n = s.chars().count();
    if n == 0 || n > MAX_NAME_CHARS {
        return Err(format!("must be 1-{MAX_NAME_CHARS} characters, got {n}"));
    }
    if let Some(c) = s.chars().find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '_')) {
        return Err(format!("`{c}` is not allowed: only lowercase a-z, digits 0-9, `-` and `_`"));
    }
    Ok(())
}

/// `displayName`: 1-255 characters.
pub fn display_name(s: &str) -> Result<(), String> {
    let n = s.chars().count();
    if n == 0 || n > MAX_NAME_CHARS {
        return Err(format!("must be 1-{MAX_NAME_CHARS} characters, got {n}"));
    }
    Ok(())
}

/// `scopes`: required, none empty.
pub fn scopes(checks: &mut Checks, scopes: &[String]) {
    if scopes.is_empty() {
        checks.fail("scopes", "at least one scope is required (such as logs:write)");
    }
    for (i, s) in scopes.iter().enumerate() {
        if s.trim().is_empty() {
            checks.fail(&format!("scopes[{i}]"), "must not be empty");
        }
    }
}

/// `realms`: required; each of type `org` or `stack` with an identifier;
/// label policies only when every scope is a read scope of metrics or logs.
pub fn realms(checks: &mut Checks, realms: &[Realm], scopes: &[String]) {
    if realms.is_empty() {
        checks.fail("realms", "at least one realm is required (--realm org:ID or --realm stack:ID)");
    }
    for (i, r) in realms.iter().enumerate() {
        checks.check(&format!("realms[{i}].type"), realm_type(&r.kind));
        if r.identifier.is_empty() {
            checks.fail(&format!("realms[{i}].identifier"), "must not be empty");
        }
        for (j, lp) in r.label_policies.iter().enumerate() {
            if lp.selector.trim().is_empty() {
                checks.fail(&format!("realms[{i}].labelPolicies[{j}].selector"), "must not be empty");
            }
        }
        if !r.label_policies.is_empty() {
            if let Some(s) = scopes.iter().find(|s| !LABEL_POLICY_SCOPES.contains(&s.as_str())) {
                checks.fail(
                    &format!("realms[{i}].labelPolicies"),
                    format!(
                        "label policies are available only with read scopes for metrics or logs \
                         (metrics:read, logs:read); scope `{s}` is neither"
                    ),
                );
            }
        }
    }
}

/// A realm type: `org` or `stack`.
pub fn realm_type(t: &str) -> Result<(), String> {
    match t {
        "org" | "stack" => Ok(()),
        other => Err(format!("`{other}` is not a realm type: use `org` or `stack`")),
    }
}

/// An IPv4 or IPv6 subnet in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`).
pub fn cidr(s: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("`{s}` is not an IPv4 or IPv6 CIDR such as 10.0.0.0/8 or 2001:db8::/32 ({why})"));
    let Some((addr, prefix)) = s.split_once('/') else { return bad("no /prefix length") };
    if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) || prefix.len() > 3 {
        return bad("the prefix length is not a number");
    }
    let len: u32 = match prefix.parse() {
        Ok(n) => n,
        Err(_) => return bad("the prefix length is not a number"),
    };
    let max = match addr.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => 32,
        Ok(IpAddr::V6(_)) => 128,
        Err(_) => return bad("not an IP address"),
    };
    if len > max {
        return bad(&format!("the prefix length is over {max}"));
    }
    Ok(())
}

/// `pageSize`: 1 to 500.
pub fn page_size(n: u32) -> Result<(), String> {
    if n == 0 || n > MAX_PAGE_SIZE {
        return Err(format!("{n} is not between 1 and {MAX_PAGE_SIZE}"));
    }
    Ok(())
}

/// An ISO 8601 UTC timestamp such as `2030-01-31T00:00:00Z`; returned in the
/// `Z` form the service writes.
pub fn utc_time(s: &str) -> Result<String, String> {
    let t = DateTime::parse_from_rfc3339(s)
        .map_err(|e| format!("`{s}` is not an ISO 8601 UTC time such as 2030-01-31T00:00:00Z ({e})"))?;
    if t.offset().local_minus_utc() != 0 {
        return Err(format!("`{s}` is not in UTC: write it with `Z`, such as 2030-01-31T00:00:00Z"));
    }
    Ok(t.with_timezone(&Utc).to_rfc3339_opts(SecondsFormat::AutoSi, true))
}

/// `realmIdentifier` is accepted only together with `realmType`.
/// `fields` are the query names of the type and the identifier.
pub fn realm_filter(checks: &mut Checks, fields: (&str, &str), kind: Option<&str>, id: Option<&str>) {
    let (type_field, id_field) = fields;
    if let Some(t) = kind {
        checks.check(type_field, realm_type(t));
    }
    if id.is_some() && kind.is_none() {
        checks.fail(id_field, format!("is accepted only together with {type_field} (--realm-type)"));
    }
}

/// Create and update requests of stacks accept lowercase characters only.
pub fn lowercase(s: &str) -> Result<(), String> {
    match s.chars().find(|c| c.is_uppercase()) {
        Some(c) => Err(format!("`{c}` is uppercase: stack requests accept lowercase characters only")),
        None => Ok(()),
    }
}

/// Stack labels: up to 10; keys and values of alphanumerics, `.`, `-` and `/`
/// (lowercase, as every stack request).
pub fn stack_labels(checks: &mut Checks, labels: &BTreeMap<String, String>) {
    if labels.len() > MAX_STACK_LABELS {
        checks.fail("labels", format!("{} labels; a stack carries at most {MAX_STACK_LABELS}", labels.len()));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '/');
    for (k, v) in labels {
        if k.is_empty() {
            checks.fail("labels", "a label key must not be empty");
        }
        for (what, s) in [("key", k), ("value", v)] {
            if let Some(c) = s.chars().find(|c| !allowed(*c)) {
                checks.fail(
                    &format!("labels.{k}"),
                    format!("`{c}` in the {what} is not allowed: only alphanumerics, `.`, `-` and `/`"),
                );
            } else if let Err(m) = lowercase(s) {
                checks.fail(&format!("labels.{k}"), format!("{what}: {m}"));
            }
        }
    }
}

/// Parses `TYPE:ID` (a realm flag).
pub fn parse_realm(s: &str) -> Result<Realm, String> {
    let Some((kind, id)) = s.split_once(':') else {
        return Err(format!("`{s}` is not TYPE:ID, such as stack:123 or org:45"));
    };
    realm_type(kind)?;
    if id.is_empty() {
        return Err(format!("`{s}` has an empty identifier"));
    }
    Ok(Realm { kind: kind.to_string(), identifier: id.to_string(), label_policies: Vec::new() })
}

/// Parses `TYPE:ID:SELECTOR` (a label policy flag); the selector may hold `:`.
pub fn parse_label_policy(s: &str) -> Result<(String, String, String), String> {
    let mut it = s.splitn(3, ':');
    match (it.next(), it.next(), it.next()) {
        (Some(t), Some(id), Some(sel)) if !id.is_empty() && !sel.is_empty() => {
            realm_type(t)?;
            Ok((t.to_string(), id.to_string(), sel.to_string()))
        }
        _ => Err(format!("`{s}` is not TYPE:ID:SELECTOR, such as stack:123:{{env=\"prod\"}}")),
    }
}

/// Parses `KEY=VALUE`.
pub fn parse_key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) => Ok((k.to_string(), v.to_string())),
        None => Err(format!("`{s}` is not KEY=VALUE")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::model::LabelPolicy;

    #[test]
    fn names() {
        assert!(name("tailship-logs_1").is_ok());
        assert!(name("").is_err());
        assert!(name("Upper").is_err());
        assert!(name("a.b").is_err());
        assert!(name(&"a".repeat(255)).is_ok());
        assert!(name(&"a".repeat(256)).is_err());
        assert!(display_name(&"é".repeat(255)).is_ok());
        assert!(display_name(&"é".repeat(256)).is_err());
        assert!(display_name("").is_err());
    }

    #[test]
    fn cidrs() {
        for ok in ["10.0.0.0/8", "192.168.1.7/32", "0.0.0.0/0", "2001:db8::/32", "::1/128"] {
            assert!(cidr(ok).is_ok(), "{ok}");
        }
        for bad in ["10.0.0.0", "10.0.0.0/33", "10.0.0/8", "2001:db8::/129", "x/8", "10.0.0.0/+8", "10.0.0.0/", ""] {
            assert!(cidr(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn times() {
        assert_eq!(utc_time("2030-01-31T00:00:00Z").unwrap(), "2030-01-31T00:00:00Z");
        assert_eq!(utc_time("2030-01-31T00:00:00+00:00").unwrap(), "2030-01-31T00:00:00Z");
        assert_eq!(utc_time("2030-01-31T00:00:00.5Z").unwrap(), "2030-01-31T00:00:00.500Z");
        assert!(utc_time("2030-01-31T00:00:00+02:00").is_err());
        assert!(utc_time("2030-01-31").is_err());
        assert!(utc_time("tomorrow").is_err());
    }

    #[test]
    fn label_policies_need_read_scopes() {
        let realm = Realm {
            kind: "stack".into(),
            identifier: "1".into(),
            label_policies: vec![LabelPolicy { selector: "{env=\"prod\"}".into() }],
        };
        let mut c = Checks::new();
        realms(&mut c, std::slice::from_ref(&realm), &["logs:read".into(), "metrics:read".into()]);
        assert!(c.finish().is_ok());
        let mut c = Checks::new();
        realms(&mut c, &[realm], &["logs:read".into(), "logs:write".into()]);
        let e = c.finish().unwrap_err();
        assert_eq!(e.0[0].0, "realms[0].labelPolicies");
    }

    #[test]
    fn stack_label_rules() {
        let mut c = Checks::new();
        let labels: BTreeMap<String, String> = (0..11).map(|i| (format!("k{i}"), "v".into())).collect();
        stack_labels(&mut c, &labels);
        assert_eq!(c.finish().unwrap_err().0[0].0, "labels");
        let mut c = Checks::new();
        stack_labels(&mut c, &BTreeMap::from([("team".into(), "a_b".into()), ("Env".into(), "x".into())]));
        let e = c.finish().unwrap_err();
        assert_eq!(e.0.len(), 2, "{e}");
        let mut c = Checks::new();
        stack_labels(&mut c, &BTreeMap::from([("app.kubernetes.io/name".into(), "web-1".into())]));
        assert!(c.finish().is_ok());
    }

    #[test]
    fn flags_parse() {
        assert_eq!(parse_realm("stack:12").unwrap().identifier, "12");
        assert!(parse_realm("team:12").is_err());
        assert!(parse_realm("stack:").is_err());
        assert_eq!(parse_label_policy("stack:1:{a=\"b:c\"}").unwrap().2, "{a=\"b:c\"}");
        assert!(parse_label_policy("stack:1").is_err());
        assert_eq!(parse_key_value("a=b=c").unwrap(), ("a".into(), "b=c".into()));
    }
}
