//! Sprig's string, regex and path functions.

use gtmpl::{Func, Value};

use super::{arity, bool, err, string, strval, text, to_i64, Out};

pub(super) const FUNCS: &[(&str, Func)] = &[
    ("hello", hello),
    ("abbrev", abbrev),
    ("abbrevboth", abbrevboth),
    ("trunc", trunc),
    ("trim", trim),
    ("upper", upper),
    ("lower", lower),
    ("title", title),
    ("untitle", untitle),
    ("substr", substr),
    ("repeat", repeat),
    ("trimall", trim_all),
    ("trimAll", trim_all),
    ("trimSuffix", trim_suffix),
    ("trimPrefix", trim_prefix),
    ("nospace", nospace),
    ("initials", initials),
    ("swapcase", swapcase),
    ("snakecase", snakecase),
    ("camelcase", camelcase),
    ("kebabcase", kebabcase),
    ("contains", contains),
    ("hasPrefix", has_prefix),
    ("hasSuffix", has_suffix),
    ("quote", quote),
    ("squote", squote),
    ("cat", cat),
    ("indent", indent),
    ("nindent", nindent),
    ("replace", replace),
    ("plural", plural),
    ("toString", to_string),
    ("regexMatch", regex_match),
    ("mustRegexMatch", must_regex_match),
    ("regexFindAll", regex_find_all),
    ("mustRegexFindAll", regex_find_all),
    ("regexFind", regex_find),
    ("mustRegexFind", regex_find),
    ("mustRegexReplaceAll", must_regex_replace_all),
    ("mustRegexReplaceAllLiteral", must_regex_replace_all_literal),
    ("regexSplit", regex_split),
    ("mustRegexSplit", regex_split),
    ("regexQuoteMeta", regex_quote_meta),
    ("base", base),
    ("osBase", base),
    ("dir", dir),
    ("osDir", dir),
    ("clean", clean),
    ("osClean", clean),
    ("ext", ext),
    ("osExt", ext),
    ("isAbs", is_abs),
    ("osIsAbs", is_abs),
    ("wrap", wrap),
    ("wrapWith", wrap_with),
    ("shuffle", shuffle),
];

fn one(name: &str, args: &[Value], f: impl Fn(&str) -> String) -> Out {
    arity(name, args, 1)?;
    string(f(&text(name, args, 0)?))
}

fn hello(_: &[Value]) -> Out {
    string("Hello!")
}

fn chars(s: &str) -> Vec<char> {
    s.chars().collect()
}

/// goutils' `AbbreviateFull`.
fn abbreviate(s: &str, offset: i64, width: i64) -> String {
    let c = chars(s);
    let len = c.len() as i64;
    if len <= width {
        return s.to_string();
    }
    let take = |from: i64, to: i64| c[from.max(0) as usize..to.clamp(0, len) as usize].iter().collect::<String>();
    let mut offset = offset.min(len);
    if len - offset < width - 3 {
        offset = len - (width - 3);
    }
    if offset <= 4 {
        return take(0, width - 3) + "...";
    }
    if offset + width - 3 < len {
        return format!("...{}", abbreviate(&take(offset, len), 0, width - 3));
    }
    format!("...{}", take(len - (width - 3), len))
}

fn abbrev(args: &[Value]) -> Out {
    arity("abbrev", args, 2)?;
    let (w, s) = (to_i64(&args[0]), text("abbrev", args, 1)?);
    string(if w < 4 { s } else { abbreviate(&s, 0, w) })
}

fn abbrevboth(args: &[Value]) -> Out {
    arity("abbrevboth", args, 3)?;
    let (l, r, s) = (to_i64(&args[0]), to_i64(&args[1]), text("abbrevboth", args, 2)?);
    string(if r < 4 || (l > 0 && r < 7) { s } else { abbreviate(&s, l, r) })
}

fn trunc(args: &[Value]) -> Out {
    arity("trunc", args, 2)?;
    let (n, s) = (to_i64(&args[0]), text("trunc", args, 1)?);
    let c = chars(&s);
    let len = c.len() as i64;
    string(match n {
        n if n >= 0 && len > n => c[..n as usize].iter().collect(),
        n if n < 0 && len + n > 0 => c[(len + n) as usize..].iter().collect(),
        _ => s,
    })
}

fn trim(args: &[Value]) -> Out {
    one("trim", args, |s| s.trim().to_string())
}

fn upper(args: &[Value]) -> Out {
    one("upper", args, str::to_uppercase)
}

fn lower(args: &[Value]) -> Out {
    one("lower", args, str::to_lowercase)
}

/// Go's `strings.Title`: each letter after a separator (not a letter, digit, `_` or `'`) upper-cased.
fn title(args: &[Value]) -> Out {
    one("title", args, |s| {
        let mut prev = ' ';
        s.chars()
            .map(|c| {
                let sep = !(prev.is_alphanumeric() || prev == '_' || prev == '\'');
                prev = c;
                if sep {
                    c.to_uppercase().collect::<String>()
                } else {
                    c.to_string()
                }
            })
            .collect()
    })
}

fn untitle(args: &[Value]) -> Out {
    one("untitle", args, |s| {
        let mut prev = ' ';
        s.chars()
            .map(|c| {
                let start = prev.is_whitespace();
                prev = c;
                if start {
                    c.to_lowercase().collect::<String>()
                } else {
                    c.to_string()
                }
            })
            .collect()
    })
}

fn substr(args: &[Value]) -> Out {
    arity("substr", args, 3)?;
    let (start, end, s) = (to_i64(&args[0]), to_i64(&args[1]), text("substr", args, 2)?);
    let b = s.as_bytes();
    let len = b.len() as i64;
    let (from, to) = match (start, end) {
        (s, e) if s < 0 => (0, e.clamp(0, len)),
        (s, e) if e < 0 || e > len => (s.min(len), len),
        (s, e) => (s.min(e), e),
    };
    string(String::from_utf8_lossy(&b[from as usize..to as usize]).into_owned())
}

fn repeat(args: &[Value]) -> Out {
    arity("repeat", args, 2)?;
    let n = to_i64(&args[0]);
    if !(0..=1_000_000).contains(&n) {
        return Err(err("repeat", "a negative or huge count"));
    }
    let s = text("repeat", args, 1)?;
    // Charged before it is made: a million copies of a million bytes are never allocated.
    super::charge("repeat", s.len().saturating_mul(n as usize))?;
    Ok(Value::String(s.repeat(n as usize)))
}

fn two(name: &str, args: &[Value], f: impl Fn(&str, &str) -> String) -> Out {
    arity(name, args, 2)?;
    string(f(&text(name, args, 0)?, &text(name, args, 1)?))
}

fn trim_all(args: &[Value]) -> Out {
    two("trimAll", args, |cut, s| s.trim_matches(|c| cut.contains(c)).to_string())
}

fn trim_suffix(args: &[Value]) -> Out {
    two("trimSuffix", args, |suf, s| s.strip_suffix(suf).unwrap_or(s).to_string())
}

fn trim_prefix(args: &[Value]) -> Out {
    two("trimPrefix", args, |pre, s| s.strip_prefix(pre).unwrap_or(s).to_string())
}

fn nospace(args: &[Value]) -> Out {
    one("nospace", args, |s| s.chars().filter(|c| !c.is_whitespace()).collect())
}

fn initials(args: &[Value]) -> Out {
    one("initials", args, |s| s.split_whitespace().filter_map(|w| w.chars().next()).collect())
}

fn swapcase(args: &[Value]) -> Out {
    one("swapcase", args, |s| {
        s.chars()
            .flat_map(
                |c| {
                    if c.is_uppercase() {
                        c.to_lowercase().collect::<Vec<_>>()
                    } else {
                        c.to_uppercase().collect()
                    }
                },
            )
            .collect()
    })
}

/// The words of a name: split at `_`, `-`, spaces and where a lower-case
/// letter or digit meets an upper-case one.
fn words(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut prev: Option<char> = None;
    for c in s.chars() {
        if c == '_' || c == '-' || c.is_whitespace() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev = None;
            continue;
        }
        if c.is_uppercase() && prev.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit()) {
            out.push(std::mem::take(&mut cur));
        }
        cur.push(c);
        prev = Some(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn snakecase(args: &[Value]) -> Out {
    one("snakecase", args, |s| words(s).iter().map(|w| w.to_lowercase()).collect::<Vec<_>>().join("_"))
}

fn kebabcase(args: &[Value]) -> Out {
    one("kebabcase", args, |s| words(s).iter().map(|w| w.to_lowercase()).collect::<Vec<_>>().join("-"))
}

/// xstrings' `ToCamelCase`: words split at `_` (and spaces, `-`), each capitalized.
fn camelcase(args: &[Value]) -> Out {
    one("camelcase", args, |s| {
        s.split(['_', '-', ' '])
            .map(|w| {
                let mut c = w.chars();
                c.next().map(|f| f.to_uppercase().chain(c).collect::<String>()).unwrap_or_default()
            })
            .collect()
    })
}

fn test(name: &str, args: &[Value], f: impl Fn(&str, &str) -> bool) -> Out {
    arity(name, args, 2)?;
    bool(f(&text(name, args, 1)?, &text(name, args, 0)?))
}

fn contains(args: &[Value]) -> Out {
    test("contains", args, |s, sub| s.contains(sub))
}

fn has_prefix(args: &[Value]) -> Out {
    test("hasPrefix", args, |s, p| s.starts_with(p))
}

fn has_suffix(args: &[Value]) -> Out {
    test("hasSuffix", args, |s, p| s.ends_with(p))
}

/// Each argument that is not nil, quoted, joined by spaces.
fn quoted(args: &[Value], q: impl Fn(&str) -> String) -> Out {
    let parts: Vec<String> =
        args.iter().filter(|a| !matches!(a, Value::Nil | Value::NoValue)).map(|a| q(&strval(a))).collect();
    string(parts.join(" "))
}

/// Go's `%q`: JSON's escapes are Go's for text without control bytes beyond them.
fn quote(args: &[Value]) -> Out {
    quoted(args, |s| serde_json::Value::String(s.to_string()).to_string())
}

fn squote(args: &[Value]) -> Out {
    quoted(args, |s| format!("'{s}'"))
}

fn cat(args: &[Value]) -> Out {
    let parts: Vec<String> = args.iter().filter(|a| !matches!(a, Value::Nil | Value::NoValue)).map(strval).collect();
    string(parts.join(" "))
}

fn indent(args: &[Value]) -> Out {
    arity("indent", args, 2)?;
    let pad = " ".repeat(to_i64(&args[0]).clamp(0, 10_000) as usize);
    string(format!("{pad}{}", text("indent", args, 1)?.replace('\n', &format!("\n{pad}"))))
}

fn nindent(args: &[Value]) -> Out {
    let Value::String(s) = indent(args)? else { return Err(err("nindent", "no text")) };
    string(format!("\n{s}"))
}

fn replace(args: &[Value]) -> Out {
    arity("replace", args, 3)?;
    let (old, new, s) = (text("replace", args, 0)?, text("replace", args, 1)?, text("replace", args, 2)?);
    string(s.replace(&old, &new))
}

fn plural(args: &[Value]) -> Out {
    arity("plural", args, 3)?;
    let i = if to_i64(&args[2]) == 1 { 0 } else { 1 };
    string(text("plural", args, i)?)
}

fn to_string(args: &[Value]) -> Out {
    arity("toString", args, 1)?;
    string(strval(&args[0]))
}

/// The regex of argument 0, read as RE2 (Go's dialect, as sprig's).
fn regex(name: &str, args: &[Value]) -> Result<regex::Regex, gtmpl::FuncError> {
    let re = text(name, args, 0)?;
    crate::pipeline::re2::compile(&re).map_err(|e| err(name, e))
}

fn regex_match(args: &[Value]) -> Out {
    arity("regexMatch", args, 2)?;
    bool(regex("regexMatch", args).is_ok_and(|re| text("regexMatch", args, 1).is_ok_and(|s| re.is_match(&s))))
}

fn must_regex_match(args: &[Value]) -> Out {
    arity("mustRegexMatch", args, 2)?;
    bool(regex("mustRegexMatch", args)?.is_match(&text("mustRegexMatch", args, 1)?))
}

/// `n` < 0: every match.
fn limit(n: i64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

fn regex_find_all(args: &[Value]) -> Out {
    arity("regexFindAll", args, 3)?;
    let (re, s, n) = (regex("regexFindAll", args)?, text("regexFindAll", args, 1)?, to_i64(&args[2]));
    let found = re.find_iter(&s).take(limit(n)).map(|m| Value::String(m.as_str().to_string())).collect();
    Ok(Value::Array(found))
}

fn regex_find(args: &[Value]) -> Out {
    arity("regexFind", args, 2)?;
    let (re, s) = (regex("regexFind", args)?, text("regexFind", args, 1)?);
    string(re.find(&s).map_or("", |m| m.as_str()))
}

fn must_regex_replace_all(args: &[Value]) -> Out {
    arity("mustRegexReplaceAll", args, 3)?;
    let (re, s, with) = (regex("mustRegexReplaceAll", args)?, text("", args, 1)?, text("", args, 2)?);
    string(re.replace_all(&s, with.as_str()).into_owned())
}

fn must_regex_replace_all_literal(args: &[Value]) -> Out {
    arity("mustRegexReplaceAllLiteral", args, 3)?;
    let (re, s, with) = (regex("mustRegexReplaceAllLiteral", args)?, text("", args, 1)?, text("", args, 2)?);
    string(re.replace_all(&s, regex::NoExpand(&with)).into_owned())
}

/// Go's `Regexp.Split(s, n)`: n > 0 at most n parts, 0 none, < 0 all.
fn regex_split(args: &[Value]) -> Out {
    arity("regexSplit", args, 3)?;
    let (re, s, n) = (regex("regexSplit", args)?, text("regexSplit", args, 1)?, to_i64(&args[2]));
    let parts: Vec<Value> = match n {
        0 => Vec::new(),
        n if n > 0 => re.splitn(&s, n as usize).map(|p| Value::String(p.to_string())).collect(),
        _ => re.split(&s).map(|p| Value::String(p.to_string())).collect(),
    };
    Ok(Value::Array(parts))
}

fn regex_quote_meta(args: &[Value]) -> Out {
    one("regexQuoteMeta", args, regex::escape)
}

/// Go's `path.Clean`.
fn clean_path(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." if out.last().is_some_and(|l| *l != "..") => {
                out.pop();
            }
            ".." if rooted => {}
            other => out.push(other),
        }
    }
    let joined = out.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

fn base(args: &[Value]) -> Out {
    one("base", args, |p| {
        let t = p.trim_end_matches('/');
        match (p.is_empty(), t.is_empty()) {
            (true, _) => ".".into(),
            (false, true) => "/".into(),
            _ => t.rsplit('/').next().unwrap_or(t).to_string(),
        }
    })
}

fn dir(args: &[Value]) -> Out {
    one("dir", args, |p| clean_path(p.rfind('/').map_or("", |i| &p[..=i])))
}

fn clean(args: &[Value]) -> Out {
    one("clean", args, clean_path)
}

fn ext(args: &[Value]) -> Out {
    one("ext", args, |p| {
        let last = p.rsplit('/').next().unwrap_or(p);
        last.rfind('.').map_or(String::new(), |i| last[i..].to_string())
    })
}

fn is_abs(args: &[Value]) -> Out {
    arity("isAbs", args, 1)?;
    bool(text("isAbs", args, 0)?.starts_with('/'))
}

/// goutils' `WrapCustom`: lines of at most `width` characters, broken at
/// the last space that fits; a longer word is cut (`cut`) or left whole.
fn wrap_text(s: &str, width: i64, newline: &str, cut: bool) -> String {
    let c = chars(s);
    let width = width.max(1) as usize;
    let (len, mut at) = (c.len(), 0);
    let mut out = String::new();
    let take = |from: usize, to: usize| c[from..to.min(len)].iter().collect::<String>();
    while len - at > width {
        if c[at] == ' ' {
            at += 1;
            continue;
        }
        let end = (width + at + 1).min(len);
        if let Some(space) = c[at..end].iter().rposition(|&ch| ch == ' ') {
            out.push_str(&take(at, at + space));
            out.push_str(newline);
            at += space + 1;
        } else if cut {
            out.push_str(&take(at, at + width));
            out.push_str(newline);
            at += width;
        } else {
            match c[at + width..].iter().position(|&ch| ch == ' ') {
                None => {
                    out.push_str(&take(at, len));
                    at = len;
                }
                Some(i) => {
                    out.push_str(&take(at, at + width + i));
                    out.push_str(newline);
                    at += width + i + 1;
                }
            }
        }
    }
    out.push_str(&take(at, len));
    out
}

fn wrap(args: &[Value]) -> Out {
    arity("wrap", args, 2)?;
    string(wrap_text(&text("wrap", args, 1)?, to_i64(&args[0]), "\n", false))
}

fn wrap_with(args: &[Value]) -> Out {
    arity("wrapWith", args, 3)?;
    string(wrap_text(&text("wrapWith", args, 2)?, to_i64(&args[0]), &text("wrapWith", args, 1)?, true))
}

fn shuffle(args: &[Value]) -> Out {
    one("shuffle", args, |s| {
        let mut c = chars(s);
        fastrand::shuffle(&mut c);
        c.into_iter().collect()
    })
}
