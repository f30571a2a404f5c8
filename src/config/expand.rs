//! `${VAR}` references in string values, expanded from the environment.

use serde_json::Value;

/// Expands `${VAR}` and `${VAR:-default}` in every string value; `$$` is a literal `$`,
/// and `${1}` (digits: no variable's name) a group reference left as it is.
pub(super) fn expand_vars(node: &mut Value, key: &str, env: &[(String, String)], report: &mut dyn FnMut(&str, String)) {
    match node {
        Value::String(s) if s.contains('$') => match expand_str(s, env) {
            Ok(v) => *s = v,
            // A secret's text must not reach an error message.
            Err(m) if is_secret_key(key) && m.starts_with("environment variable ") => report(key, m),
            Err(_) if is_secret_key(key) => {
                report(key, "bad `${...}` reference in a secret value (the value is not shown)".into())
            }
            Err(m) => report(key, m),
        },
        Value::Array(items) => {
            for (i, v) in items.iter_mut().enumerate() {
                expand_vars(v, &format!("{key}[{i}]"), env, report);
            }
        }
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                let child = if key.is_empty() { k.clone() } else { format!("{key}.{k}") };
                expand_vars(v, &child, env, report);
            }
        }
        _ => {}
    }
}

/// Keys whose values are secrets (their text never goes into messages).
fn is_secret_key(key: &str) -> bool {
    ["webhook_url", "password", "token", "bearer_token"].iter().any(|s| key.ends_with(s))
}

/// Expands one string (see [`expand_vars`]).
pub fn expand_str(s: &str, env: &[(String, String)]) -> Result<String, String> {
    let lookup = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push('$');
            rest = stripped;
        } else if let Some(body) = after.strip_prefix('{') {
            let Some(end) = body.find('}') else {
                return Err(format!("unterminated `${{` in `{s}`"));
            };
            let inner = &body[..end];
            if !inner.is_empty() && inner.bytes().all(|b| b.is_ascii_digit()) {
                // `${1}`: no variable's name starts with a digit; it is a
                // regex group reference (relabel and replace rules), kept as is.
                out.push_str(&rest[pos..pos + 2 + end + 1]);
                rest = &body[end + 1..];
                continue;
            }
            let (name, default) = match inner.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (inner, None),
            };
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(format!("`${{{inner}}}` is not a valid variable reference"));
            }
            match (lookup(name), default) {
                (Some(v), _) if !v.is_empty() || default.is_none() => out.push_str(&v),
                (_, Some(d)) => out.push_str(d),
                (None, None) => {
                    return Err(format!(
                        "environment variable {name} is not set (use ${{{name}:-default}} for a default)"
                    ))
                }
                (Some(v), None) => out.push_str(&v),
            }
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expand_handles_defaults_and_escapes() {
        let env = vec![("POD".to_string(), "web-1".to_string()), ("EMPTY".to_string(), String::new())];
        assert_eq!(expand_str("pod=${POD}", &env).unwrap(), "pod=web-1");
        assert_eq!(expand_str("${NOPE:-x}", &env).unwrap(), "x");
        assert_eq!(expand_str("${EMPTY:-d}", &env).unwrap(), "d");
        assert_eq!(expand_str("cost $$5", &env).unwrap(), "cost $5");
        assert_eq!(expand_str("ch${1}-${22}$1", &env).unwrap(), "ch${1}-${22}$1");
        assert_eq!(expand_str("a$b", &env).unwrap(), "a$b");
        assert!(expand_str("${NOPE}", &env).unwrap_err().contains("NOPE"));
        assert!(expand_str("${POD", &env).is_err());
    }
}
