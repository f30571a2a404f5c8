//! The `template` stage: Go's text/template syntax (the gtmpl crate) over a
//! line's extracted map, with the functions Promtail registers beside Go's
//! own (`ToLower`, `ToUpper`, `Replace`, `Trim*`, `Hash`, `Sha2Hash`,
//! `regexReplaceAll`, `regexReplaceAllLiteral`) and the sprig library's
//! (see [`super::sprig`]); a template calling a function neither has is
//! refused when it is compiled, naming the function.

use std::collections::HashMap;
use std::sync::Arc;

use gtmpl::{Context, FuncError, Value};
use sha2::Digest;

use super::line::Extracted;

/// A compiled template (shared: a gtmpl template is parsed once).
#[derive(Clone)]
pub struct GoTemplate(Arc<gtmpl::Template>);

impl std::fmt::Debug for GoTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GoTemplate({:?})", self.0.text)
    }
}

/// Promtail's functions, by the names templates call them.
const FUNCS: [(&str, gtmpl::Func); 13] = [
    ("ToLower", to_lower),
    ("ToUpper", to_upper),
    ("Replace", replace),
    ("Trim", trim),
    ("TrimLeft", trim_left),
    ("TrimRight", trim_right),
    ("TrimPrefix", trim_prefix),
    ("TrimSuffix", trim_suffix),
    ("TrimSpace", trim_space),
    ("Hash", hash),
    ("Sha2Hash", sha2_hash),
    ("regexReplaceAll", regex_replace_all),
    ("regexReplaceAllLiteral", regex_replace_all_literal),
];

impl GoTemplate {
    /// Parses `text`; the error says what is wrong (an unknown function among it).
    pub fn parse(text: &str) -> Result<Self, String> {
        // gtmpl 0.7 never returns from an action left open at the end of the
        // text when a space precedes the end (`{{ .a `): refuse it first.
        if text.rfind("{{").is_some_and(|at| !text[at..].contains("}}")) {
            return Err("unclosed action: the last `{{` has no `}}`".into());
        }
        let mut t = gtmpl::Template::default();
        // Promtail's own override sprig's of the same name, as in Promtail.
        t.add_funcs(&super::sprig::funcs());
        t.add_funcs(&FUNCS);
        // Go's printing of lists and dicts, and `set`/`unset` in place.
        let rewritten = super::sprig::rewrite(text);
        // gtmpl 0.7 panics on some strings (a raw string of one backslash):
        // such a template is refused, not a crash.
        let parsed =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.parse(rewritten).map_err(|e| e.to_string())));
        match parsed {
            Ok(r) => r?,
            Err(_) => return Err("a string gtmpl cannot read (write a backslash as \"\\\\\")".into()),
        }
        Ok(Self(Arc::new(t)))
    }

    /// Renders with every extracted value by name, `.Value` (the value of
    /// `source`, when the line has it) and `.Entry` (the line).
    pub fn render(&self, extracted: &Extracted<'_>, source: &str, line: &str) -> Result<String, String> {
        self.render_with(extracted, extracted.get(source), Some(line))
    }

    /// Renders with every extracted value by name, `.Value` = `value` and
    /// `.Entry` = `line` when given (a `replace` template: each capture group).
    pub fn render_with(
        &self,
        extracted: &Extracted<'_>,
        value: Option<&str>,
        line: Option<&str>,
    ) -> Result<String, String> {
        let mut data: HashMap<String, Value> = HashMap::new();
        for (k, v) in extracted.iter() {
            data.insert(k.to_string(), Value::String(v.to_string()));
        }
        if let Some(v) = value {
            data.insert("Value".into(), Value::String(v.to_string()));
        }
        if let Some(l) = line {
            data.insert("Entry".into(), Value::String(l.to_string()));
        }
        let mut out = Bounded { buf: Vec::new(), max: MAX_OUTPUT_BYTES };
        let run = super::sprig::with_budget(RENDER_BUDGET_BYTES, || {
            self.0.execute(&mut out, &Context::from(Value::Map(data))).map_err(|e| e.to_string())
        });
        match run {
            Ok(()) => String::from_utf8(out.buf).map_err(|e| e.to_string()),
            Err(_) if out.buf.len() >= out.max => {
                Err(format!("the template's output passed {MAX_OUTPUT_BYTES} bytes; it is cut off"))
            }
            Err(e) => Err(e),
        }
    }
}

/// The most a template may write for one line (beyond it the rendering
/// fails: a loop that writes without end cannot take the process).
const MAX_OUTPUT_BYTES: usize = 4 << 20;
/// What the functions of one rendering may make, together (see [`super::sprig::with_budget`]).
const RENDER_BUDGET_BYTES: usize = 64 << 20;

/// A writer that refuses past `max` bytes.
struct Bounded {
    buf: Vec<u8>,
    max: usize,
}

impl std::io::Write for Bounded {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + data.len() > self.max {
            return Err(std::io::Error::other("template output over its limit"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Argument `i` of `name` as text (a number as written).
fn text(args: &[Value], i: usize) -> Result<String, FuncError> {
    match args.get(i) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(Value::Bool(b)) => Ok(b.to_string()),
        _ => Err(FuncError::UnableToConvertFromValue),
    }
}

fn arity(name: &str, args: &[Value], n: usize) -> Result<(), FuncError> {
    if args.len() == n {
        Ok(())
    } else {
        Err(FuncError::ExactlyXArgs(name.into(), n))
    }
}

fn one(name: &str, args: &[Value], f: impl Fn(&str) -> String) -> Result<Value, FuncError> {
    arity(name, args, 1)?;
    Ok(Value::String(f(&text(args, 0)?)))
}

fn two(name: &str, args: &[Value], f: impl Fn(&str, &str) -> String) -> Result<Value, FuncError> {
    arity(name, args, 2)?;
    Ok(Value::String(f(&text(args, 0)?, &text(args, 1)?)))
}

fn to_lower(args: &[Value]) -> Result<Value, FuncError> {
    one("ToLower", args, str::to_lowercase)
}

fn to_upper(args: &[Value]) -> Result<Value, FuncError> {
    one("ToUpper", args, str::to_uppercase)
}

fn trim_space(args: &[Value]) -> Result<Value, FuncError> {
    one("TrimSpace", args, |s| s.trim().to_string())
}

/// Go's `strings.Replace(s, old, new, n)`: the first `n` matches, all when `n < 0`.
fn replace(args: &[Value]) -> Result<Value, FuncError> {
    arity("Replace", args, 4)?;
    let (s, old, new) = (text(args, 0)?, text(args, 1)?, text(args, 2)?);
    let n = match args.get(3) {
        Some(Value::Number(n)) => n.as_i64().ok_or(FuncError::UnableToConvertFromValue)?,
        _ => text(args, 3)?.parse().map_err(|_| FuncError::UnableToConvertFromValue)?,
    };
    Ok(Value::String(match usize::try_from(n) {
        Ok(n) => s.replacen(&old, &new, n),
        Err(_) => s.replace(&old, &new),
    }))
}

fn trim(args: &[Value]) -> Result<Value, FuncError> {
    two("Trim", args, |s, cut| s.trim_matches(|c| cut.contains(c)).to_string())
}

fn trim_left(args: &[Value]) -> Result<Value, FuncError> {
    two("TrimLeft", args, |s, cut| s.trim_start_matches(|c| cut.contains(c)).to_string())
}

fn trim_right(args: &[Value]) -> Result<Value, FuncError> {
    two("TrimRight", args, |s, cut| s.trim_end_matches(|c| cut.contains(c)).to_string())
}

fn trim_prefix(args: &[Value]) -> Result<Value, FuncError> {
    two("TrimPrefix", args, |s, p| s.strip_prefix(p).unwrap_or(s).to_string())
}

fn trim_suffix(args: &[Value]) -> Result<Value, FuncError> {
    two("TrimSuffix", args, |s, p| s.strip_suffix(p).unwrap_or(s).to_string())
}

/// SHA3-256 of salt + input, in hex.
fn hash(args: &[Value]) -> Result<Value, FuncError> {
    two("Hash", args, |salt, input| hex::encode(sha3::Sha3_256::digest(format!("{salt}{input}"))))
}

/// SHA-256 of salt + input, in hex.
fn sha2_hash(args: &[Value]) -> Result<Value, FuncError> {
    two("Sha2Hash", args, |salt, input| hex::encode(sha2::Sha256::digest(format!("{salt}{input}"))))
}

fn regex_args(name: &str, args: &[Value]) -> Result<(regex::Regex, String, String), FuncError> {
    arity(name, args, 3)?;
    let re = regex::Regex::new(&text(args, 0)?).map_err(|e| FuncError::Generic(format!("{name}: {e}")))?;
    Ok((re, text(args, 1)?, text(args, 2)?))
}

/// Every match of the regex in s replaced, `$1` / `${name}` expanded.
fn regex_replace_all(args: &[Value]) -> Result<Value, FuncError> {
    let (re, s, with) = regex_args("regexReplaceAll", args)?;
    Ok(Value::String(re.replace_all(&s, with.as_str()).into_owned()))
}

fn regex_replace_all_literal(args: &[Value]) -> Result<Value, FuncError> {
    let (re, s, with) = regex_args("regexReplaceAllLiteral", args)?;
    Ok(Value::String(re.replace_all(&s, regex::NoExpand(&with)).into_owned()))
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    fn render(t: &str, value: &str) -> String {
        let mut e = Extracted::default();
        e.set(Cow::Borrowed("app"), value.to_string());
        e.set(Cow::Borrowed("level"), "WARN".to_string());
        GoTemplate::parse(t).unwrap().render(&e, "app", "the line").unwrap()
    }

    #[test]
    fn a_quoted_escaped_backslash_is_read_as_go_reads_it() {
        assert_eq!(render(r#"{{ Replace .Value "\\" "" -1 }}"#, r#"{\"a\":1}"#), r#"{"a":1}"#);
        assert_eq!(render(r#"{{ Replace .Value "\\\"" "'" -1 }}"#, r#"x\"y"#), "x'y");
        assert_eq!(render(r#"{{ printf "%s\\n" .Value }}"#, "v"), r"v\n");
        assert_eq!(render(r#"{{ printf "a\tb" }}"#, "v"), "a\tb");
        assert!(GoTemplate::parse(r"{{ Replace .Value `\` `` -1 }}").is_err(), "refused, no panic");
    }

    #[test]
    fn promtails_functions_and_values() {
        assert_eq!(render("{{ .Value | ToUpper }}-{{ .level | ToLower }}", "web"), "WEB-warn");
        assert_eq!(render(r#"{{ Replace .Value "o" "0" -1 }}"#, "foo"), "f00");
        assert_eq!(render(r#"{{ Replace .Value "o" "0" 1 }}"#, "foo"), "f0o");
        assert_eq!(render(r#"{{ Trim .Value "!" }}|{{ TrimSpace "  x " }}"#, "!!a!"), "a|x");
        assert_eq!(render(r#"{{ TrimLeft .Value "!" }}|{{ TrimRight .Value "!" }}"#, "!a!"), "a!|!a");
        assert_eq!(render(r#"{{ TrimPrefix .Value "ab" }}{{ TrimSuffix .Value "cd" }}"#, "abcd"), "cdab");
        assert_eq!(render(r#"{{ regexReplaceAll "(\\d+)" .Value "<$1>" }}"#, "a1b22"), "a<1>b<22>");
        assert_eq!(render(r#"{{ regexReplaceAllLiteral "\\d" .Value "$1" }}"#, "a1"), "a$1");
        assert_eq!(render("{{ .Entry }}", "x"), "the line");
        assert_eq!(render(r#"{{ if eq .Value "web" }}yes{{ else }}no{{ end }}"#, "web"), "yes");
        // Promtail's test vectors (template_test.go).
        let pii = "this is PII data";
        let sha2 = "5526fd6f8ad457279cf8ff06453c6cb61bf479fa826e3b099caa6c846f9376f2";
        assert_eq!(render(r#"{{ Sha2Hash .Value "salt" }}"#, pii), sha2);
        let sha3 = "0807ea24e992127128b38e4930f7155013786a4999c73a25910318a793847658";
        assert_eq!(render(r#"{{ Hash .Value "salt" }}"#, pii), sha3);
        let silly = "Some Silly Value With Lots Of Spaces";
        let under = render(r#"{{ Replace .Value " " "_" -1 | ToLower }}"#, silly);
        assert_eq!(under, "some_silly_value_with_lots_of_spaces");
        assert_eq!(
            render(r#"{{ regexReplaceAll "(Silly)" .Value "${1}foo" }}"#, silly),
            "Some Sillyfoo Value With Lots Of Spaces"
        );
        assert_eq!(
            render(r#"{{ regexReplaceAll "( |Of)" .Value "_" }}"#, silly),
            "Some_Silly_Value_With_Lots___Spaces"
        );
        assert_eq!(render(r#"{{ Trim .Value "!" }}"#, "!!!!!WOOOOO!!!!!"), "WOOOOO");
    }

    #[test]
    fn unknown_functions_are_refused_at_parse() {
        assert!(GoTemplate::parse("{{ .Value | nosuchfn }}").is_err());
        // Each of these made gtmpl spin forever before the check above.
        for open in ["{{ .Value ", "{{ .a }} {{ .b ", "{{- .a "] {
            assert!(GoTemplate::parse(open).is_err(), "{open}");
        }
    }
}
