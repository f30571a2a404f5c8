//! Two things Go's templates do that gtmpl's value model cannot, made by
//! rewriting a template's actions before gtmpl parses it:
//!
//! - **Printing**: gtmpl prints a list or dict with Rust's debug form; Go
//!   prints `[a b c]` and `map[a:1 b:2]` (keys sorted). Every action that
//!   prints its value gets ` | _goPrint` at the end of its pipeline, a
//!   function that writes lists and dicts as Go does and passes anything
//!   else on.
//! - **`set` and `unset` in place**: a Go dict is a reference, so
//!   `{{ $_ := set $d "b" 2 }}` changes `$d`; a gtmpl value is a copy,
//!   and a function cannot reach the variable. An action whose pipeline
//!   starts with `set $d ...` or `unset $d ...` (`$d` a variable, not a
//!   field of one) is rewritten to declare `$d` again with the result,
//!   `{{ $d := set $d "b" 2 }}{{ $_ := $d }}`, which gtmpl runs in the same
//!   scope. Inside a `range`, gtmpl drops the variables of an iteration at
//!   its end, so there the change lasts until the iteration's end.
//!
//! And one gtmpl misreads: a quoted string that ends in an escaped
//! backslash (`"\\"`, as in `{{ Replace .Value "\\" "" -1 }}`) does not end
//! there for it; that last backslash is written `\x5c`, which it reads.

use gtmpl::Value;

use super::{arity, strval, Out};

pub(super) const FUNCS: &[(&str, gtmpl::Func)] = &[(PRINT, go_print)];

/// The function the rewritten printing actions end with.
const PRINT: &str = "_goPrint";

/// A value as Go's template prints it.
fn go_print(args: &[Value]) -> Out {
    arity(PRINT, args, 1)?;
    Ok(match &args[0] {
        v @ (Value::Array(_) | Value::Map(_) | Value::Object(_) | Value::Nil) => Value::String(strval(v)),
        v => v.clone(),
    })
}

const KEYWORDS: [&str; 10] = ["if", "else", "end", "range", "with", "define", "template", "block", "break", "continue"];

/// `text` with its actions rewritten (see the module's doc); a template
/// gtmpl would refuse stays refused.
pub fn rewrite(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 32);
    let mut rest = text;
    // The blocks open at this point: true for those where `.` may be other
    // than the extracted map (`range`, `with`, `define`, `block`).
    let mut blocks: Vec<bool> = Vec::new();
    while let Some(at) = rest.find("{{") {
        out.push_str(&rest[..at]);
        let inner_start = &rest[at + 2..];
        let Some(end) = action_end(inner_start) else {
            out.push_str(&rest[at..]);
            return out;
        };
        let inner = &inner_start[..end];
        let dot_is_root = !blocks.contains(&true);
        match keyword(inner) {
            "if" => blocks.push(false),
            "range" | "with" | "define" | "block" => blocks.push(true),
            "end" => drop(blocks.pop()),
            _ => {}
        }
        out.push_str(&action(&backslash_ends(inner), dot_is_root));
        rest = &inner_start[end + 2..];
    }
    out.push_str(rest);
    out
}

/// Where the `}}` closing an action is, outside its strings and comment.
fn action_end(s: &str) -> Option<usize> {
    let body = s.strip_prefix("- ").map_or(s, |b| b.trim_start());
    if body.starts_with("/*") {
        let close = s.find("*/")? + 2;
        return s[close..].find("}}").map(|i| close + i);
    }
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => i = string_end(b, i),
            b'`' => i += s[i + 1..].find('`')? + 1,
            b'}' if b.get(i + 1) == Some(&b'}') => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Where the string opening at `b[open]` (`"` or `'`) ends: the index of
/// its closing quote, past backslash escapes; `b.len()` or more when it is
/// not closed. Actions and pipelines skip their strings alike.
fn string_end(b: &[u8], open: usize) -> usize {
    let q = b[open];
    let mut i = open + 1;
    while i < b.len() && b[i] != q {
        i += if b[i] == b'\\' { 2 } else { 1 };
    }
    i
}

/// `inner` with each quoted string that ends in an escaped backslash
/// (`"\\\\"`) ending in `\x5c` instead (see the module's doc): the same
/// text, which gtmpl reads whole (its `\x` reads well only at a string's
/// end, so only that backslash is written so).
fn backslash_ends(inner: &str) -> String {
    let b = inner.as_bytes();
    let mut out = String::with_capacity(inner.len());
    let (mut i, mut copied) = (0, 0);
    while i < b.len() {
        match b[i] {
            b'`' => i += inner[i + 1..].find('`').map_or(b.len(), |n| n + 2),
            b'"' => {
                i += 1;
                let mut last_escape = None;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        last_escape = Some(i);
                        i += 2;
                    } else {
                        i += 1;
                    }
                }
                if let Some(at) = last_escape.filter(|at| at + 2 == i && b.get(at + 1) == Some(&b'\\')) {
                    out.push_str(&inner[copied..at]);
                    out.push_str("\\x5c");
                    copied = at + 2;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    out.push_str(&inner[copied.min(inner.len())..]);
    out
}

/// An action's text without its trim markers, and whether it has each.
fn trimmed(inner: &str) -> (&str, bool, bool) {
    let left = inner.starts_with("- ") || inner.starts_with("-\t") || inner.starts_with("-\n");
    let right = inner.len() >= 2 && (inner.ends_with(" -") || inner.ends_with("\t-") || inner.ends_with("\n-"));
    let body = inner.get(if left { 2 } else { 0 }..inner.len() - if right { 2 } else { 0 }).unwrap_or("");
    (body.trim(), left, right)
}

/// The action's keyword (`if`, `end`, ...), or "".
fn keyword(inner: &str) -> &str {
    let (body, _, _) = trimmed(inner);
    let word_end = body.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(body.len());
    KEYWORDS.into_iter().find(|k| *k == &body[..word_end]).unwrap_or("")
}

/// One action's text between `{{` and `}}`, rewritten, with its delimiters.
fn action(inner: &str, dot_is_root: bool) -> String {
    let keep = || format!("{{{{{inner}}}}}");
    let (body, left, right) = trimmed(inner);
    if body.is_empty() || body.starts_with("/*") || !keyword(inner).is_empty() {
        return keep();
    }
    let (decl, pipeline) = match declaration(body) {
        Some((var, rest)) => (Some(var), rest),
        None if body.starts_with('$')
            && variable(body).is_some_and(|v| body[v.len()..].trim_start().starts_with([',', '='])) =>
        {
            return keep();
        }
        None => (None, body),
    };
    let open = if left { "{{- " } else { "{{ " };
    let close = if right { " -}}" } else { " }}" };
    let (first, rest) = first_command(pipeline);
    if let Some(dict) = changed_dict(first) {
        let again = format!("{open}{dict} := {} }}}}", first.trim());
        return match decl {
            Some(var) => format!("{again}{{{{ {var} := {dict}{rest}{close}"),
            None => format!("{again}{{{{ {dict}{rest} | {PRINT}{close}"),
        };
    }
    match decl {
        Some(_) => keep(),
        None if prints_text(body, dot_is_root) => keep(),
        None => format!("{open}{body} | {PRINT}{close}"),
    }
}

/// Functions that always give text (Promtail's own and sprig's most used).
const TEXT_FUNCS: [&str; 24] = [
    "ToLower",
    "ToUpper",
    "Replace",
    "Trim",
    "TrimLeft",
    "TrimRight",
    "TrimPrefix",
    "TrimSuffix",
    "TrimSpace",
    "Hash",
    "Sha2Hash",
    "regexReplaceAll",
    "regexReplaceAllLiteral",
    "printf",
    "print",
    "println",
    "join",
    "toJson",
    "quote",
    "upper",
    "lower",
    "trim",
    "replace",
    "toString",
];

/// Whether a pipeline's value is text for sure, so printing it needs no
/// `_goPrint` (the common case costs nothing more per line): an extracted
/// value by name (`.Value`, `.level`: all text) where `.` is the extracted
/// map, or a last command that is a function giving text.
fn prints_text(pipeline: &str, dot_is_root: bool) -> bool {
    let mut last = pipeline;
    loop {
        let (_, rest) = first_command(last);
        match rest.strip_prefix('|') {
            Some(r) => last = r,
            None => break,
        }
    }
    let last = last.trim();
    let field = dot_is_root
        && last.strip_prefix('.').is_some_and(|f| !f.is_empty() && f.chars().all(|c| c.is_alphanumeric() || c == '_'));
    let word_end = last.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(last.len());
    field || TEXT_FUNCS.contains(&&last[..word_end])
}

/// `$name` at the start of `s`.
fn variable(s: &str) -> Option<&str> {
    let rest = s.strip_prefix('$')?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
    Some(&s[..end + 1])
}

/// `$x := pipeline`: the variable and the pipeline.
fn declaration(body: &str) -> Option<(&str, &str)> {
    let var = variable(body)?;
    let rest = body[var.len()..].trim_start().strip_prefix(":=")?;
    Some((var, rest.trim_start()))
}

/// The pipeline's first command and the rest (from its `|` on).
fn first_command(pipeline: &str) -> (&str, &str) {
    let b = pipeline.as_bytes();
    let (mut depth, mut i) = (0usize, 0);
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => i = string_end(b, i),
            b'`' => i += pipeline[i + 1..].find('`').map_or(b.len(), |n| n + 1),
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            b'|' if depth == 0 => return (&pipeline[..i], &pipeline[i..]),
            _ => {}
        }
        i += 1;
    }
    (pipeline, "")
}

/// `$d` when the command is `set $d ...` or `unset $d ...`.
fn changed_dict(command: &str) -> Option<&str> {
    let c = command.trim_start();
    let args = c.strip_prefix("set").or_else(|| c.strip_prefix("unset"))?;
    if !args.starts_with([' ', '\t', '\n']) {
        return None;
    }
    let args = args.trim_start();
    let var = variable(args)?;
    let after = &args[var.len()..];
    (var.len() > 1 && after.starts_with([' ', '\t', '\n'])).then_some(var)
}
