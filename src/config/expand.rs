//! `${VAR}` references in string values, expanded from the environment.
//!
//! The syntax is Promtail's with `-config.expand-env=true` (the
//! `drone/envsubst` package it uses), so that a Promtail config's
//! references read the same here: `${VAR}`; `${VAR:-default}`,
//! `${VAR:=default}` and `${VAR=default}` (the default when the variable is
//! unset or empty), whose default may hold references of its own
//! (`${A:-${B}}`) and ends at the first `}` outside them; `$$` is a `$`
//! (`$${VAR}` is the text `${VAR}`), except inside a default, where a `$`
//! is a `$` unless it opens a reference. A `$` before anything else stays.
//!
//! Two differences, on purpose: a variable that is unset (or empty) with no
//! default is an error naming it, where Promtail puts an empty value (a
//! DaemonSet's `${HOSTNAME}` unset there would ship every node as one); and
//! `${1}` (digits: no variable's name) is kept as written, for the group
//! references of relabel and replace rules. Bash's string functions, which
//! `drone/envsubst` also has (`${VAR^^}`, `${VAR:1}`, `${VAR/a/b}`, ...),
//! are errors rather than text that silently differs.

use serde_json::Value;

/// References nested deeper than this (`${A:-${B:-${C:-...}}}`) are an
/// error: the parser recurses once per level, and no input may exhaust
/// the stack.
const MAX_DEPTH: usize = 16;

/// Expands the references of every string value (see the module
/// documentation); `report(key, message)` is told of each that fails.
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

/// Expands one string (see the module documentation).
pub fn expand_str(s: &str, env: &[(String, String)]) -> Result<String, String> {
    let lookup = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let at = &rest[pos..];
        if let Some(after) = at.strip_prefix("$$") {
            out.push('$');
            rest = after;
        } else if at.starts_with("${") {
            let (len, value) = reference(at, Some(&lookup), 0).map_err(|m| m.replace("{whole}", s))?;
            out.push_str(&value);
            rest = &at[len..];
        } else {
            out.push('$');
            rest = &at[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The length of the reference tailship expands at the start of `s` (a
/// `${VAR...}` of the forms above, not a `${1}`), or `None`.
pub fn reference_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix("${")?;
    let digits = body.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && body[digits..].starts_with('}') {
        return None;
    }
    reference(s, None, 0).ok().map(|(len, _)| len)
}

type Lookup<'a> = &'a dyn Fn(&str) -> Option<&'a str>;

/// The reference at the start of `s` (which starts with `${`): its length
/// and its value, looked up with `lookup` (`None`: only its length is
/// wanted, nothing is looked up). An error's `{whole}` stands for the
/// string the reference is in.
fn reference(s: &str, lookup: Option<Lookup<'_>>, depth: usize) -> Result<(usize, String), String> {
    let body = &s[2..];
    let digits = body.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && body[digits..].starts_with('}') {
        // `${1}`: a regex group reference (relabel and replace rules), kept as is.
        return Ok((2 + digits + 1, s[..2 + digits + 1].to_string()));
    }
    if depth >= MAX_DEPTH {
        return Err(format!("references nested more than {MAX_DEPTH} deep in `{{whole}}`"));
    }
    let name_len = body.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
    let name = &body[..name_len];
    let after = &body[name_len..];
    if name.is_empty() {
        return Err(not_a_reference(body, name_len));
    }
    let value = lookup.map(|l| l(name));
    if after.starts_with('}') {
        let len = 2 + name_len + 1;
        return match value {
            None => Ok((len, String::new())),
            Some(Some(v)) => Ok((len, v.to_string())),
            Some(None) => {
                Err(format!("environment variable {name} is not set (use ${{{name}:-default}} for a default)"))
            }
        };
    }
    let op = [":-", ":=", "="].into_iter().find(|op| after.starts_with(op));
    let Some(op) = op else {
        return Err(if after.is_empty() {
            "unterminated `${` in `{whole}`".to_string()
        } else {
            not_a_reference(body, name_len)
        });
    };
    // The default is evaluated only when the variable gives no value.
    let wanted = match value {
        Some(Some(v)) if !v.is_empty() => None,
        Some(_) => lookup,
        None => None,
    };
    let (end, default) = default_text(s, 2 + name_len + op.len(), wanted, depth)?;
    let v = match value {
        Some(Some(v)) if !v.is_empty() => v.to_string(),
        _ => default,
    };
    Ok((end, v))
}

/// The error for `${` followed by something tailship does not expand;
/// `body` is the text after `${`, whose first `name_len` bytes are a name.
fn not_a_reference(body: &str, name_len: usize) -> String {
    let shown = body[name_len..].find('}').map_or(body, |e| &body[..name_len + e]);
    let forms = "(${VAR}, ${VAR:-default}, ${VAR:=default}); write $${ for a literal `${`";
    format!("`${{{shown}}}` is not a reference tailship expands {forms}")
}

/// A reference's default, which starts at `s[start..]`: text and
/// references up to the first `}` outside them. Returns where it ends
/// (past that `}`) and its value, with the references in it looked up
/// with `lookup` (`None`: not looked up).
fn default_text(s: &str, start: usize, lookup: Option<Lookup<'_>>, depth: usize) -> Result<(usize, String), String> {
    let mut default = String::new();
    let mut i = start;
    loop {
        let rest = &s[i..];
        let Some(pos) = rest.find(['}', '$']) else {
            return Err("unterminated `${` in `{whole}`".to_string());
        };
        default.push_str(&rest[..pos]);
        i += pos;
        if s[i..].starts_with('}') {
            return Ok((i + 1, default));
        }
        if s[i..].starts_with("${") {
            let (len, v) = reference(&s[i..], lookup, depth + 1)?;
            default.push_str(&v);
            i += len;
        } else {
            default.push('$');
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Vec<(String, String)> {
        vec![("POD".to_string(), "web-1".to_string()), ("EMPTY".to_string(), String::new())]
    }

    #[test]
    fn expand_handles_defaults_and_escapes() {
        let env = env();
        assert_eq!(expand_str("pod=${POD}", &env).unwrap(), "pod=web-1");
        assert_eq!(expand_str("${NOPE:-x}", &env).unwrap(), "x");
        assert_eq!(expand_str("${EMPTY:-d}", &env).unwrap(), "d");
        assert_eq!(expand_str("cost $$5", &env).unwrap(), "cost $5");
        assert_eq!(expand_str("ch${1}-${22}$1", &env).unwrap(), "ch${1}-${22}$1");
        assert_eq!(expand_str("a$b", &env).unwrap(), "a$b");
        assert!(expand_str("${NOPE}", &env).unwrap_err().contains("NOPE"));
        assert!(expand_str("${POD", &env).is_err());
    }

    /// What the real Promtail 3.6.15 gives with `-config.expand-env=true`
    /// (POD=web-1, EMPTY set and empty, NOPE unset), but for the unset
    /// variable without a default, an error here.
    #[test]
    fn expand_reads_references_as_promtails_expand_env_does() {
        let env = env();
        let cases = [
            ("$${POD}", "${POD}"),
            ("$$$${POD}", "$${POD}"),
            ("$$${POD}", "$web-1"),
            ("x$$y", "x$y"),
            ("$$", "$"),
            ("$", "$"),
            ("end$", "end$"),
            ("$POD", "$POD"),
            ("${NOPE:-${POD}}", "web-1"),
            ("${NOPE:-${NADA:-deep}}", "deep"),
            ("${NOPE:-a${POD}b}c", "aweb-1bc"),
            ("${NOPE:-$${POD}}", "$web-1"),
            ("${NOPE:-x$$y}", "x$$y"),
            ("${NOPE:-a$b}", "a$b"),
            ("${NOPE:-$}", "$"),
            ("${NOPE:-a}b}", "ab}"),
            ("${NOPE:-{x}}", "{x}"),
            ("${NOPE:-a:b}", "a:b"),
            ("${NOPE:-}", ""),
            ("${NOPE:-}}", "}"),
            ("${NOPE:=eq}", "eq"),
            ("${NOPE=eq}", "eq"),
            ("${EMPTY=eq}", "eq"),
            ("${EMPTY:=eq}", "eq"),
            ("${POD:-x}", "web-1"),
            ("${POD}${POD}", "web-1web-1"),
            ("$${NOPE:-${POD}}", "${NOPE:-web-1}"),
            ("${POD:-${NOPE}}", "web-1"),
        ];
        for (text, want) in cases {
            assert_eq!(expand_str(text, &env).as_deref(), Ok(want), "{text}");
        }
        for (text, says) in [
            ("${NOPE:-${NADA}}", "NADA is not set"),
            ("${}", "is not a reference"),
            ("${POD^^}", "`${POD^^}` is not a reference"),
            ("${POD:1}", "is not a reference"),
            ("${POD-x}", "is not a reference"),
            ("${NOPE:-${POD}", "unterminated"),
        ] {
            let err = expand_str(text, &env).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
        let deep = format!("{}x{}", "${NOPE:-".repeat(100_000), "}".repeat(100_000));
        assert!(expand_str(&deep, &env).unwrap_err().contains("nested"), "bounded, not a stack overflow");
    }

    #[test]
    fn reference_len_names_what_is_expanded() {
        assert_eq!(reference_len("${A}x"), Some(4));
        assert_eq!(reference_len("${A:-${B}}x"), Some(10));
        assert_eq!(reference_len("${A:=b}"), Some(7));
        assert_eq!(reference_len("${1}"), None);
        assert_eq!(reference_len("${a b}"), None);
        assert_eq!(reference_len("${A"), None);
        assert_eq!(reference_len("x${A}"), None);
        assert_eq!(reference_len("\n"), None);
    }
}
