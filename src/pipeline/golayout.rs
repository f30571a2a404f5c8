//! Promtail timestamp formats (Go reference layouts such as
//! `2006-01-02T15:04:05.000Z07:00`, Go's named layouts, and `Unix`,
//! `UnixMs`, `UnixUs`, `UnixNs`) as tailship `timestamp.format` values
//! (`rfc3339`, `unix*` or a strftime pattern chrono parses). `convert`
//! writes the translation; a tailship config may also give the Go layout,
//! which [`super::TimeFormat::parse`] translates here.
//!
//! A layout may lack the year (`Jan _2 15:04:05`, Go's `Stamp`), the date or
//! the time: the pattern then lacks them too, and the time format fills them
//! in as Promtail does (see [`super::TimeFormat`]).
//!
//! Go parses a layout by its reference time, Mon Jan 2 15:04:05 MST 2006:
//! each element of it (`2006`, `Jan`, `_2`, `15`, `.000`, `Z07:00`, ...)
//! stands for a field, and the rest is literal. The translator walks the
//! layout the way Go's `nextStdChunk` does and writes the strftime item of
//! each element. Two Go parsing habits are kept: a fractional second may
//! follow the seconds even when the layout has none (`%S%.f`), and a `Z`
//! offset element accepts `Z` as well as `+07:00` (`%#z`).

/// A translated format, or why there is none.
pub fn translate(format: &str) -> Result<String, String> {
    let named = match format {
        "Unix" => return Ok("unix".into()),
        "UnixMs" => return Ok("unix_ms".into()),
        "UnixUs" => return Ok("unix_us".into()),
        "UnixNs" => return Ok("unix_ns".into()),
        "RFC3339" | "RFC3339Nano" => return Ok("rfc3339".into()),
        "ANSIC" => "Mon Jan _2 15:04:05 2006",
        "UnixDate" => "Mon Jan _2 15:04:05 MST 2006",
        "RubyDate" => "Mon Jan 02 15:04:05 -0700 2006",
        "RFC822" => "02 Jan 06 15:04 MST",
        "RFC822Z" => "02 Jan 06 15:04 -0700",
        "RFC850" => "Monday, 02-Jan-06 15:04:05 MST",
        "RFC1123" => "Mon, 02 Jan 2006 15:04:05 MST",
        "RFC1123Z" => "Mon, 02 Jan 2006 15:04:05 -0700",
        "Kitchen" => "3:04PM",
        "Stamp" => "Jan _2 15:04:05",
        "StampMilli" => "Jan _2 15:04:05.000",
        "StampMicro" => "Jan _2 15:04:05.000000",
        "StampNano" => "Jan _2 15:04:05.000000000",
        layout => layout,
    };
    // The RFC 3339 layouts, with any fraction: chrono's RFC 3339 parser reads them all.
    let rfc = named.strip_prefix("2006-01-02T15:04:05").and_then(|r| r.strip_suffix("Z07:00"));
    if rfc.is_some_and(|frac| frac.is_empty() || is_fraction(frac)) {
        return Ok("rfc3339".into());
    }
    layout(named)
}

fn is_fraction(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && matches!(b[0], b'.' | b',') && b[1..].iter().all(|&c| c == b[1]) && matches!(b[1], b'0' | b'9')
}

/// The strftime pattern of a Go layout.
fn layout(l: &str) -> Result<String, String> {
    let mut out = String::new();
    let (mut year, mut month, mut day, mut hour) = (false, false, false, false);
    let mut rest = l;
    while !rest.is_empty() {
        let (item, len, field): (&str, usize, u8) = chunk(rest)?;
        match field {
            b'y' => year = true,
            b'm' => month = true,
            b'd' => day = true,
            b'h' => hour = true,
            _ => {}
        }
        if item.is_empty() {
            // A literal character.
            let c = rest.chars().next().unwrap_or(' ');
            if c == '%' {
                out.push_str("%%");
            } else {
                out.push(c);
            }
            rest = &rest[c.len_utf8()..];
            continue;
        }
        out.push_str(item);
        rest = &rest[len..];
        if field == b's' && !rest.starts_with(['.', ',']) {
            // Go reads a fraction after the seconds even when the layout has none.
            out.push_str("%.f");
        }
    }
    if !(year || month || day || hour) {
        return Err(format!("`{l}` is not a Go time layout: it has none of 2006, 01, Jan, 02, 15"));
    }
    Ok(out)
}

/// The layout element at the start of `s`: its strftime item, its length in
/// the layout, and the field it sets (`y`ear, `m`onth, `d`ay, `h`our,
/// `s`econd); an empty item is a literal character.
fn chunk(s: &str) -> Result<(&'static str, usize, u8), String> {
    const TABLE: &[(&str, &str, u8)] = &[
        ("January", "%B", b'm'),
        ("Jan", "%b", b'm'),
        ("Monday", "%A", 0),
        ("Mon", "%a", 0),
        ("MST", "%Z", 0),
        ("2006", "%Y", b'y'),
        ("002", "%j", b'd'),
        ("01", "%m", b'm'),
        ("02", "%d", b'd'),
        ("03", "%I", b'h'),
        ("04", "%M", 0),
        ("05", "%S", b's'),
        ("06", "%y", b'y'),
        ("15", "%H", b'h'),
        ("__2", "%j", b'd'),
        ("_2", "%e", b'd'),
        ("1", "%m", b'm'),
        ("2", "%d", b'd'),
        ("3", "%I", b'h'),
        ("4", "%M", 0),
        ("5", "%S", b's'),
        ("PM", "%p", 0),
        ("pm", "%p", 0),
        ("Z07:00:00", "", b'!'),
        ("-07:00:00", "", b'!'),
        ("Z070000", "", b'!'),
        ("-070000", "", b'!'),
        ("Z07:00", "%#z", 0),
        ("-07:00", "%#z", 0),
        ("Z0700", "%#z", 0),
        ("-0700", "%#z", 0),
        ("Z07", "%#z", 0),
        ("-07", "%#z", 0),
    ];
    // `_2006` is `_` and a year, as in Go.
    if s.starts_with("_2006") {
        return Ok(("", 1, 0));
    }
    for (go, item, field) in TABLE {
        if s.starts_with(go) {
            if *field == b'!' {
                return Err(format!("the offset `{go}` (with seconds) has no strftime equivalent"));
            }
            return Ok((item, go.len(), *field));
        }
    }
    let b = s.as_bytes();
    if matches!(b[0], b'.' | b',') && b.len() > 1 && matches!(b[1], b'0' | b'9') {
        let n = b[1..].iter().take_while(|&&c| c == b[1]).count();
        if !b.get(1 + n).is_some_and(u8::is_ascii_digit) {
            let item = match (b[0], b[1], n) {
                (b'.', b'0', 3) => "%.3f",
                (b'.', b'0', 6) => "%.6f",
                (b'.', b'0', 9) => "%.9f",
                (b',', b'0', 3) => ",%3f",
                (b',', b'0', 6) => ",%6f",
                (b',', b'0', 9) => ",%9f",
                // Other widths, and Go's `.999` (trailing zeros dropped): any digits.
                (b'.', _, _) => "%.f",
                _ => return Err(format!("the fraction `{}` has no strftime equivalent", &s[..=n])),
            };
            return Ok((item, 1 + n, 0));
        }
    }
    Ok(("", 0, 0))
}

#[cfg(test)]
mod tests {
    use super::translate;
    use crate::pipeline::TimeFormat;

    /// Translates `go` and reads `value` with the result.
    fn read(go: &str, value: &str) -> Option<i128> {
        let f = translate(go).unwrap_or_else(|e| panic!("{go}: {e}"));
        TimeFormat::parse(&f).unwrap_or_else(|e| panic!("{go} -> {f}: {e}")).to_unix_ns(value)
    }

    #[test]
    fn go_layouts_become_strftime_patterns() {
        assert_eq!(translate("2006-01-02 15:04:05").unwrap(), "%Y-%m-%d %H:%M:%S%.f");
        assert_eq!(translate("2006-01-02T15:04:05.000Z").unwrap(), "%Y-%m-%dT%H:%M:%S%.3fZ");
        assert_eq!(translate("02/Jan/2006:15:04:05 -0700").unwrap(), "%d/%b/%Y:%H:%M:%S%.f %#z");
        assert_eq!(translate("2006-01-02 15:04:05,000").unwrap(), "%Y-%m-%d %H:%M:%S,%3f");
        assert_eq!(translate("RFC1123Z").unwrap(), "%a, %d %b %Y %H:%M:%S%.f %#z");
        // Go reads the `1` of `100` as a month, as here.
        assert_eq!(translate("at% 2006-01-02 15").unwrap(), "at%% %Y-%m-%d %H");
        assert_eq!(translate("100 2006-01-02 15").unwrap(), "%m00 %Y-%m-%d %H");
    }

    #[test]
    fn named_layouts_and_unix_forms() {
        for (go, ours) in [
            ("RFC3339", "rfc3339"),
            ("RFC3339Nano", "rfc3339"),
            ("2006-01-02T15:04:05.999999999Z07:00", "rfc3339"),
            ("2006-01-02T15:04:05.000Z07:00", "rfc3339"),
            ("Unix", "unix"),
            ("UnixMs", "unix_ms"),
            ("UnixUs", "unix_us"),
            ("UnixNs", "unix_ns"),
        ] {
            assert_eq!(translate(go).unwrap(), ours, "{go}");
        }
        for go in ["2006-01-02T15:04:05-07:00:00", "nope", "04:05"] {
            assert!(translate(go).is_err(), "{go} should not translate");
        }
        assert_eq!(translate("Stamp").unwrap(), "%b %e %H:%M:%S%.f");
        assert_eq!(translate("2006-01-02").unwrap(), "%Y-%m-%d");
    }

    #[test]
    fn translated_layouts_read_the_times_go_would() {
        // 2024-03-05T07:08:09Z = 1709622489 s.
        let s = 1_709_622_489_000_000_000_i128;
        assert_eq!(read("2006-01-02 15:04:05", "2024-03-05 07:08:09"), Some(s));
        assert_eq!(read("2006-01-02 15:04:05", "2024-03-05 07:08:09.25"), Some(s + 250_000_000));
        assert_eq!(read("2006-01-02T15:04:05.000Z", "2024-03-05T07:08:09.123Z"), Some(s + 123_000_000));
        assert_eq!(read("02/Jan/2006:15:04:05 -0700", "05/Mar/2024:09:08:09 +0200"), Some(s));
        assert_eq!(read("2006-01-02 15:04:05.000 Z07:00", "2024-03-05 07:08:09.000 Z"), Some(s));
        assert_eq!(read("2006-01-02 15:04:05.000 Z07:00", "2024-03-05 08:08:09.000 +01:00"), Some(s));
        assert_eq!(read("2006-01-02 15:04:05,000", "2024-03-05 07:08:09,500"), Some(s + 500_000_000));
        assert_eq!(read("ANSIC", "Tue Mar  5 07:08:09 2024"), Some(s));
        assert_eq!(read("RFC1123", "Tue, 05 Mar 2024 07:08:09 UTC"), Some(s));
        assert_eq!(read("RFC1123Z", "Tue, 05 Mar 2024 07:08:09 +0000"), Some(s));
        assert_eq!(read("RFC822Z", "05 Mar 24 07:08 +0000"), Some(s - 9_000_000_000));
        assert_eq!(read("Jan 2, 2006 at 3:04:05pm", "Mar 5, 2024 at 7:08:09am"), Some(s));
        assert_eq!(read("2006-01-02T15:04:05.999999Z07:00", "2024-03-05T07:08:09.5Z"), Some(s + 500_000_000));
        assert_eq!(read("UnixMs", "1709622489000"), Some(s));
    }
}
