//! Go's `printf`, `print` and `println` over a missing value, as Promtail's
//! templates print it.
//!
//! In Go's text/template, a name the extracted map lacks (`.level` on a
//! line that has none) is nil when it is an argument of a function taking
//! any value, and `fmt` prints nil its own way: `printf "%s" .level` gives
//! `%!s(<nil>)`, `printf "%v"` and `print` give `<nil>`. A label set from
//! such a template carries that text in Promtail, so it does here. Values
//! that are there go to gtmpl's own functions unchanged.

use gtmpl::Value;

use super::Out;

pub(super) const FUNCS: &[(&str, gtmpl::Func)] = &[("printf", printf), ("print", print), ("println", println)];

fn missing(v: &Value) -> bool {
    matches!(v, Value::NoValue | Value::Nil)
}

/// Go's `fmt.Sprintf`: gtmpl's, but for a nil argument, which prints as
/// Go prints it (`%!s(<nil>)`; `<nil>` for `%v` and `%T`).
fn printf(args: &[Value]) -> Out {
    if !args.iter().skip(1).any(missing) {
        return gtmpl::funcs::printf(args);
    }
    let Some(Value::String(format)) = args.first() else {
        return gtmpl::funcs::printf(args);
    };
    // Explicit argument indexes and `*` widths: gtmpl's own reading.
    if format.contains('[') || format.contains('*') {
        return gtmpl::funcs::printf(args);
    }
    let mut out = String::new();
    let mut rest = args[1..].iter();
    let mut chars = format.char_indices();
    while let Some((at, c)) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        // Flags, width and precision, then the verb.
        let mut end = at + 1;
        let mut verb = None;
        for (i, d) in chars.by_ref() {
            end = i + d.len_utf8();
            if !(d.is_ascii_digit() || "+-# 0.".contains(d)) {
                verb = Some(d);
                break;
            }
        }
        let Some(verb) = verb else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        match rest.next() {
            Some(v) if missing(v) && matches!(verb, 'v' | 'T') => out.push_str("<nil>"),
            Some(v) if missing(v) => out.push_str(&format!("%!{verb}(<nil>)")),
            Some(v) => match gtmpl::funcs::printf(&[Value::String(format[at..end].to_string()), v.clone()])? {
                Value::String(s) => out.push_str(&s),
                other => out.push_str(&other.to_string()),
            },
            None => out.push_str(&format!("%!{verb}(MISSING)")),
        }
    }
    Ok(Value::String(out))
}

/// Go's `fmt.Sprint`: a nil operand prints `<nil>`, spaced as a value
/// that is no string (a space between two operands neither of which is a
/// string).
fn print(args: &[Value]) -> Out {
    if !args.iter().any(missing) {
        return gtmpl::funcs::print(args);
    }
    let mut out = String::new();
    let mut after_text = true;
    for v in args {
        let text = matches!(v, Value::String(_));
        if !out.is_empty() && !text && !after_text {
            out.push(' ');
        }
        out.push_str(&shown(v));
        after_text = text;
    }
    Ok(Value::String(out))
}

/// Go's `fmt.Sprintln`: a nil operand prints `<nil>`.
fn println(args: &[Value]) -> Out {
    if !args.iter().any(missing) {
        return gtmpl::funcs::println(args);
    }
    let parts: Vec<String> = args.iter().map(shown).collect();
    Ok(Value::String(parts.join(" ") + "\n"))
}

/// An operand as Go prints it.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v if missing(v) => "<nil>".into(),
        v => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: Out) -> String {
        match v.unwrap() {
            Value::String(s) => s,
            other => other.to_string(),
        }
    }

    #[test]
    fn a_missing_value_prints_as_go_prints_nil() {
        let f = |s: &str| Value::String(s.into());
        assert_eq!(text(printf(&[f("%s"), Value::NoValue])), "%!s(<nil>)");
        assert_eq!(
            text(printf(&[f("a=%v %q %5.2d%%"), Value::NoValue, Value::Nil, Value::NoValue])),
            "a=<nil> %!q(<nil>) %!d(<nil>)%"
        );
        assert_eq!(text(printf(&[f("%s=%s"), f("k"), Value::NoValue])), "k=%!s(<nil>)");
        assert_eq!(text(printf(&[f("%s %s"), Value::NoValue])), "%!s(<nil>) %!s(MISSING)");
        assert_eq!(text(printf(&[f("%s"), f("v")])), "v");
        assert_eq!(text(print(&[Value::NoValue])), "<nil>");
        assert_eq!(text(print(&[f("a"), Value::NoValue, Value::NoValue])), "a<nil> <nil>");
        assert_eq!(text(println(&[f("a"), Value::NoValue])), "a <nil>\n");
    }
}
