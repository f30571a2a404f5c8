//! Compiled `[[alerts]]` rules: the stream selector, the line regexes, the
//! templates and the limits, checked once at start. Config validation and the
//! running engine use the same [`Rule::compile`], so anything that starts is
//! known to be valid.
//!
//! The `alert_uid` of a group is the only thing the service groups by, so it
//! must be stable across restarts and independent of line contents:
//!
//! ```text
//! alert_uid = "tailship-" + lowercase hex of xxh3_64(
//!     rule name + "\0" + for each grouping label, sorted by name: name + "=" + value + "\0")
//! ```
//!
//! The grouping labels are all labels of the stream, or only those named in
//! `group_by` (a `group_by` label the stream lacks counts as empty). The
//! tenant does not take part.

use std::time::Duration;

use regex::Regex;

use super::template::Template;
use crate::config::{AlertConfig, AlertSelector, AnnotationsConfig};
use crate::logql::{LabelMatcher, MatchOp};
use crate::util::{is_valid_label_name, Secret};

/// A rule, ready to run.
#[derive(Debug, Clone)]
pub struct Rule {
    pub name: String,
    /// Every matcher must hold; empty selects every stream.
    pub selector: Vec<LabelMatcher>,
    pub pattern: Regex,
    pub exclude: Option<Regex>,
    /// Sorted, deduplicated; `None`: all labels.
    pub group_by: Option<Vec<String>>,
    pub group_interval: Duration,
    pub resolve_after: Duration,
    pub resolve_on_shutdown: bool,
    pub max_per_minute: u32,
    pub webhook_limit: u32,
    pub webhook: Secret,
    pub title: Template,
    pub message: Template,
    pub resolved_title: Template,
    pub resolved_message: Template,
    pub link: Option<Template>,
    pub image_url: Option<Template>,
    pub annotations: Option<Annotations>,
}

/// Where and how to annotate the hosted instance.
#[derive(Debug, Clone)]
pub struct Annotations {
    /// `{url}/api/annotations`.
    pub endpoint: String,
    pub token: Secret,
    pub org_id: Option<i64>,
    pub tags: Vec<String>,
}

/// Problems of one rule: `(key under the rule, message)`, such as `("match", "bad regex: ...")`.
pub type RuleErrors = Vec<(String, String)>;

impl Rule {
    /// Compiles a rule whose secret files were already read into `webhook_url`
    /// and `annotations.token` (see `config::validate`).
    pub fn compile(c: &AlertConfig) -> Result<Rule, RuleErrors> {
        let mut errs: RuleErrors = Vec::new();
        let mut e = |k: &str, m: String| errs.push((k.to_string(), m));
        if c.name.trim().is_empty() {
            e("name", "a rule needs a name".into());
        }
        let selector = match compile_selector(&c.selector) {
            Ok(s) => s,
            Err(m) => {
                e("selector", m);
                Vec::new()
            }
        };
        let pattern = if c.pattern.is_empty() {
            e("match", "a rule needs a `match` regex".into());
            None
        } else {
            regex(&c.pattern).map_err(|m| e("match", m)).ok()
        };
        let exclude = match &c.exclude {
            Some(x) => regex(x).map_err(|m| e("exclude", m)).ok(),
            None => None,
        };
        let group_by = c.group_by.as_ref().map(|g| {
            let mut g = g.clone();
            g.sort();
            g.dedup();
            g
        });
        for l in group_by.iter().flatten() {
            if !is_valid_label_name(l) {
                e("group_by", format!("`{l}` is not a valid label name"));
            }
        }
        let webhook = match &c.webhook_url {
            Some(u) => match check_url(u.expose()) {
                Ok(()) => u.clone(),
                // The URL holds the integration key: never echo it.
                Err(m) => {
                    e("webhook_url", m);
                    Secret::default()
                }
            },
            None => {
                if c.webhook_url_file.is_none() {
                    e("webhook_url", "a rule needs webhook_url or webhook_url_file".into());
                }
                Secret::default()
            }
        };
        if c.group_interval.get().is_zero() {
            e("group_interval", "must be more than 0".into());
        }
        if c.resolve_after.get().is_zero() {
            e("resolve_after", "must be more than 0".into());
        }
        if c.max_per_minute == 0 {
            e("max_per_minute", "must be at least 1".into());
        }
        if c.webhook_limit < 2 {
            e("webhook_limit", "must be at least 2 (requests per 5 minutes)".into());
        } else if c.webhook_limit > 300 {
            e("webhook_limit", "over 300 per 5 minutes: the service answers 429 past about 300".into());
        }
        let mut template = |key: &str, text: &str| match Template::parse(text) {
            Ok(t) => {
                if let Some(g) = &group_by {
                    for l in t.label_names() {
                        if !g.iter().any(|x| x == l) {
                            e(key, format!("`{{{{label.{l}}}}}` is not one of group_by's labels"));
                        }
                    }
                }
                Some(t)
            }
            Err(m) => {
                e(key, m);
                None
            }
        };
        let title = template("title", &c.title);
        let message = template("message", &c.message);
        let resolved_title = template("resolved_title", &c.resolved_title);
        let resolved_message = template("resolved_message", &c.resolved_message);
        let link = c.link.as_deref().map(|l| template("link", l));
        let image_url = c.image_url.as_deref().map(|l| template("image_url", l));
        let annotations = c.annotations.as_ref().and_then(|a| match compile_annotations(a) {
            Ok(a) => Some(a),
            Err((k, m)) => {
                e(&format!("annotations.{k}"), m);
                None
            }
        });
        let (Some(pattern), Some(title), Some(message), Some(resolved_title), Some(resolved_message)) =
            (pattern, title, message, resolved_title, resolved_message)
        else {
            return Err(errs);
        };
        if !errs.is_empty() {
            return Err(errs);
        }
        Ok(Rule {
            name: c.name.clone(),
            selector,
            pattern,
            exclude,
            group_by,
            group_interval: c.group_interval.get(),
            resolve_after: c.resolve_after.get(),
            resolve_on_shutdown: c.resolve_on_shutdown,
            max_per_minute: c.max_per_minute,
            webhook_limit: c.webhook_limit,
            webhook,
            title,
            message,
            resolved_title,
            resolved_message,
            link: link.flatten(),
            image_url: image_url.flatten(),
            annotations,
        })
    }

    /// True when a stream with these labels (sorted by name) is watched by this rule.
    pub fn selects(&self, labels: &[(String, String)]) -> bool {
        self.selector.iter().all(|m| m.matches(get(labels, &m.name).unwrap_or("")))
    }

    /// True when `line` counts as a match.
    pub fn matches_line(&self, line: &str) -> bool {
        self.pattern.is_match(line) && !self.exclude.as_ref().is_some_and(|x| x.is_match(line))
    }

    /// The labels that identify this stream's alert group (all, or `group_by`'s present ones).
    pub fn group_labels(&self, labels: &[(String, String)]) -> Vec<(String, String)> {
        match &self.group_by {
            None => labels.to_vec(),
            Some(g) => g.iter().filter_map(|n| get(labels, n).map(|v| (n.clone(), v.to_string()))).collect(),
        }
    }

    /// See the module header.
    pub fn alert_uid(&self, labels: &[(String, String)]) -> String {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(self.name.as_bytes());
        h.update(b"\0");
        let mut pair = |k: &str, v: &str| {
            h.update(k.as_bytes());
            h.update(b"=");
            h.update(v.as_bytes());
            h.update(b"\0");
        };
        match &self.group_by {
            None => labels.iter().for_each(|(k, v)| pair(k, v)),
            Some(g) => g.iter().for_each(|n| pair(n, get(labels, n).unwrap_or(""))),
        }
        format!("tailship-{:016x}", h.digest())
    }
}

fn get<'a>(labels: &'a [(String, String)], name: &str) -> Option<&'a str> {
    labels.binary_search_by(|(k, _)| k.as_str().cmp(name)).ok().map(|i| labels[i].1.as_str())
}

fn regex(r: &str) -> Result<Regex, String> {
    Regex::new(r).map_err(|e| format!("bad regex: {}", e.to_string().split_whitespace().collect::<Vec<_>>().join(" ")))
}

fn compile_selector(s: &AlertSelector) -> Result<Vec<LabelMatcher>, String> {
    match s {
        AlertSelector::Labels(map) => map
            .iter()
            .map(|(k, v)| {
                if !is_valid_label_name(k) {
                    return Err(format!("`{k}` is not a valid label name"));
                }
                LabelMatcher::new(k, MatchOp::Eq, v)
            })
            .collect(),
        AlertSelector::Query(q) if q.trim().is_empty() => Ok(Vec::new()),
        AlertSelector::Query(q) => {
            let sel = crate::logql::parse_log_query(q).map_err(|e| format!("bad stream selector: {e}"))?;
            if !sel.filters.is_empty() {
                return Err("line filters do not belong in a selector; use `match` and `exclude`".into());
            }
            Ok(sel.matchers)
        }
    }
}

/// An http(s) URL with a host. The message never contains the URL.
fn check_url(u: &str) -> Result<(), String> {
    match reqwest::Url::parse(u) {
        Ok(p) if (p.scheme() == "http" || p.scheme() == "https") && p.host().is_some() => Ok(()),
        Ok(_) => Err("must be an http or https URL with a host".into()),
        Err(e) => Err(format!("not a URL ({e})")),
    }
}

fn compile_annotations(a: &AnnotationsConfig) -> Result<Annotations, (String, String)> {
    match reqwest::Url::parse(&a.url) {
        Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {}
        _ => return Err(("url".into(), format!("`{}` is not an http or https URL", a.url))),
    }
    let Some(token) = a.token.clone().filter(|t| !t.is_empty()) else {
        return Err(("token_file".into(), "annotations need a service-account token (token_file)".into()));
    };
    Ok(Annotations {
        endpoint: crate::client::http::join_url(&a.url, "", "api/annotations"),
        token,
        org_id: a.org_id,
        tags: a.tags.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut v: Vec<_> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        v.sort();
        v
    }

    fn config(name: &str) -> AlertConfig {
        AlertConfig {
            name: name.into(),
            pattern: "ERROR".into(),
            webhook_url: Some(Secret::new("http://h:1/integrations/v1/formatted_webhook/KEY/")),
            ..Default::default()
        }
    }

    #[test]
    fn alert_uid_is_stable_and_depends_on_rule_and_group_labels() {
        let r = Rule::compile(&config("errs")).unwrap();
        let a = labels(&[("job", "app"), ("filename", "/a")]);
        let b = labels(&[("job", "app"), ("filename", "/b")]);
        // Pinned: a change of this value breaks grouping at the service after an upgrade.
        assert_eq!(r.alert_uid(&a), r.alert_uid(&a.clone()));
        assert_ne!(r.alert_uid(&a), r.alert_uid(&b));
        assert!(r.alert_uid(&a).starts_with("tailship-") && r.alert_uid(&a).len() == 25);
        let other = Rule::compile(&config("other")).unwrap();
        assert_ne!(r.alert_uid(&a), other.alert_uid(&a));
        let mut c = config("errs");
        c.group_by = Some(vec!["job".into()]);
        let g = Rule::compile(&c).unwrap();
        assert_eq!(g.alert_uid(&a), g.alert_uid(&b));
        assert_eq!(g.group_labels(&a), labels(&[("job", "app")]));
    }

    #[test]
    fn alert_uid_is_pinned() {
        // A change of this value splits every open alert group at the service after an upgrade.
        let r = Rule::compile(&config("errs")).unwrap();
        assert_eq!(r.alert_uid(&labels(&[("job", "app")])), "tailship-6fc97c6cab8175f2");
    }

    #[test]
    fn selectors_tables_and_strings() {
        let mut c = config("x");
        c.selector = AlertSelector::Labels([("job".to_string(), "app".to_string())].into());
        let r = Rule::compile(&c).unwrap();
        assert!(r.selects(&labels(&[("job", "app"), ("host", "h")])));
        assert!(!r.selects(&labels(&[("job", "db")])));
        c.selector = AlertSelector::Query(r#"{job=~"app|web", level!="debug"}"#.into());
        let r = Rule::compile(&c).unwrap();
        assert!(r.selects(&labels(&[("job", "web")])));
        assert!(!r.selects(&labels(&[("job", "web"), ("level", "debug")])));
        assert!(!r.selects(&labels(&[("job", "webx")])));
        c.selector = AlertSelector::Query(r#"{job="a"} |= "x""#.into());
        assert!(Rule::compile(&c).is_err());
        c.selector = AlertSelector::Query(r#"{job="#.into());
        assert_eq!(Rule::compile(&c).unwrap_err()[0].0, "selector");
    }

    #[test]
    fn match_and_exclude() {
        let mut c = config("x");
        c.exclude = Some("expected".into());
        let r = Rule::compile(&c).unwrap();
        assert!(r.matches_line("an ERROR here"));
        assert!(!r.matches_line("an expected ERROR"));
        assert!(!r.matches_line("fine"));
    }

    #[test]
    fn errors_name_the_key_and_never_the_url() {
        let mut c = config("x");
        c.pattern = "(".into();
        c.exclude = Some("[".into());
        c.webhook_url = Some(Secret::new("not a url SECRETKEY"));
        c.title = "{{oops}}".into();
        c.group_by = Some(vec!["job".into()]);
        c.message = "{{label.host}}".into();
        c.max_per_minute = 0;
        c.webhook_limit = 1000;
        let errs = Rule::compile(&c).unwrap_err();
        let keys: Vec<&str> = errs.iter().map(|(k, _)| k.as_str()).collect();
        for k in ["match", "exclude", "webhook_url", "title", "message", "max_per_minute", "webhook_limit"] {
            assert!(keys.contains(&k), "{k} in {errs:?}");
        }
        assert!(!format!("{errs:?}").contains("SECRETKEY"));
    }
}
