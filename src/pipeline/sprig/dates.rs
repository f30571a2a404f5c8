//! Sprig's date functions. A time is a dict holding its Unix seconds and
//! nanoseconds (`__unix_s`, `__unix_ns`); `date` formats one with a Go
//! layout (`2006-01-02 15:04:05.000 MST`) in the local zone (`TZ`), as
//! Promtail's process would. `toDate` reads a time without an offset as UTC.

use std::collections::HashMap;

use chrono::{DateTime, Datelike, NaiveDateTime, Offset, TimeZone, Timelike, Utc};
use gtmpl::{Func, Value};

use super::{arity, err, string, text, to_i64, Out};

pub(super) const FUNCS: &[(&str, Func)] = &[
    ("now", now),
    ("date", date),
    ("dateInZone", date_in_zone),
    ("date_in_zone", date_in_zone),
    ("htmlDate", html_date),
    ("htmlDateInZone", html_date_in_zone),
    ("toDate", to_date),
    ("mustToDate", must_to_date),
    ("unixEpoch", unix_epoch),
    ("dateModify", date_modify),
    ("date_modify", date_modify),
    ("mustDateModify", must_date_modify),
    ("must_date_modify", must_date_modify),
    ("duration", duration),
    ("durationRound", duration_round),
    ("ago", ago),
];

const S: &str = "__unix_s";
const NS: &str = "__unix_ns";

fn time(t: DateTime<Utc>) -> Value {
    let mut m = HashMap::new();
    m.insert(S.to_string(), Value::from(t.timestamp()));
    m.insert(NS.to_string(), Value::from(i64::from(t.timestamp_subsec_nanos())));
    Value::Map(m)
}

/// The time a value holds, if it is one.
pub(super) fn time_of(v: &Value) -> Option<DateTime<Utc>> {
    let (Value::Map(m) | Value::Object(m)) = v else { return None };
    let (Some(Value::Number(s)), Some(Value::Number(ns)), 2) = (m.get(S), m.get(NS), m.len()) else { return None };
    DateTime::from_timestamp(s.as_i64()?, u32::try_from(ns.as_i64()?).ok()?)
}

/// sprig's time argument: a time, or an integer of Unix seconds; anything else is now.
fn when(v: Option<&Value>) -> DateTime<Utc> {
    match v {
        Some(t @ (Value::Map(_) | Value::Object(_))) => time_of(t).unwrap_or_else(Utc::now),
        Some(Value::Number(n)) => n.as_i64().and_then(|s| DateTime::from_timestamp(s, 0)).unwrap_or_else(Utc::now),
        _ => Utc::now(),
    }
}

/// A time's wall clock, offset and zone name in `zone` (None: local, from `TZ`).
fn zoned(t: DateTime<Utc>, zone: Option<&str>) -> (NaiveDateTime, i32, String) {
    let tz_name = zone.map(String::from).or_else(|| std::env::var("TZ").ok()).unwrap_or_default();
    let name = tz_name.trim_start_matches(':');
    match name.parse::<chrono_tz::Tz>() {
        Ok(tz) if !name.is_empty() && name != "Local" => {
            let z = t.with_timezone(&tz);
            (z.naive_local(), z.offset().fix().local_minus_utc(), z.format("%Z").to_string())
        }
        _ if zone.is_some_and(|z| z != "Local") || name.is_empty() || name == "UTC" => (t.naive_utc(), 0, "UTC".into()),
        _ => {
            let off = chrono::Local.offset_from_utc_datetime(&t.naive_utc()).fix().local_minus_utc();
            let abbr = if off == 0 { "UTC".into() } else { offset(off, false, false, false) };
            (t.naive_utc() + chrono::Duration::seconds(i64::from(off)), off, abbr)
        }
    }
}

/// `+07`, `+0700` or `+07:00` (with `z`: `Z` for UTC).
fn offset(secs: i32, z: bool, colon: bool, minutes: bool) -> String {
    if z && secs == 0 {
        return "Z".into();
    }
    let sign = if secs < 0 { '-' } else { '+' };
    let (h, m) = (secs.abs() / 3600, secs.abs() / 60 % 60);
    match (minutes, colon) {
        (false, _) if m == 0 => format!("{sign}{h:02}"),
        (_, true) => format!("{sign}{h:02}:{m:02}"),
        _ => format!("{sign}{h:02}{m:02}"),
    }
}

/// Formats `t` with Go layout `layout` in `zone`.
pub(super) fn go_format(layout: &str, t: DateTime<Utc>, zone: Option<&str>) -> String {
    let (d, off, abbr) = zoned(t, zone);
    let mut out = String::new();
    let mut rest = layout;
    let h12 = |h: u32| if h % 12 == 0 { 12 } else { h % 12 };
    while let Some(c) = rest.chars().next() {
        let starts = |p: &str| rest.starts_with(p);
        let (text, len): (String, usize) = if starts("January") {
            (d.format("%B").to_string(), 7)
        } else if starts("Jan") {
            (d.format("%b").to_string(), 3)
        } else if starts("Monday") {
            (d.format("%A").to_string(), 6)
        } else if starts("Mon") {
            (d.format("%a").to_string(), 3)
        } else if starts("MST") {
            (abbr.clone(), 3)
        } else if starts("2006") {
            (format!("{:04}", d.year()), 4)
        } else if starts("002") {
            (format!("{:03}", d.ordinal()), 3)
        } else if starts("__2") {
            (format!("{:>3}", d.ordinal()), 3)
        } else if starts("_2") {
            (format!("{:>2}", d.day()), 2)
        } else if starts("01") {
            (format!("{:02}", d.month()), 2)
        } else if starts("02") {
            (format!("{:02}", d.day()), 2)
        } else if starts("03") {
            (format!("{:02}", h12(d.hour())), 2)
        } else if starts("04") {
            (format!("{:02}", d.minute()), 2)
        } else if starts("05") {
            (format!("{:02}", d.second()), 2)
        } else if starts("06") {
            (format!("{:02}", d.year() % 100), 2)
        } else if starts("15") {
            (format!("{:02}", d.hour()), 2)
        } else if starts("PM") {
            ((if d.hour() >= 12 { "PM" } else { "AM" }).into(), 2)
        } else if starts("pm") {
            ((if d.hour() >= 12 { "pm" } else { "am" }).into(), 2)
        } else if let Some((z, colon, minutes, len)) = zone_element(rest) {
            (offset(off, z, colon, minutes), len)
        } else if let Some(len) = fraction(rest) {
            let digits = len - 1;
            let nanos = format!("{:09}", d.nanosecond() % 1_000_000_000);
            let mut frac = nanos[..digits.min(9)].to_string();
            if rest.as_bytes()[1] == b'9' {
                frac = frac.trim_end_matches('0').to_string();
                (if frac.is_empty() { String::new() } else { format!("{}{frac}", &rest[..1]) }, len)
            } else {
                (format!("{}{frac}", &rest[..1]), len)
            }
        } else {
            match c {
                '1' => (d.month().to_string(), 1),
                '2' => (d.day().to_string(), 1),
                '3' => (h12(d.hour()).to_string(), 1),
                '4' => (d.minute().to_string(), 1),
                '5' => (d.second().to_string(), 1),
                c => (c.to_string(), c.len_utf8()),
            }
        };
        out.push_str(&text);
        rest = &rest[len..];
    }
    out
}

/// A zone element at the start: (`Z` form, with a colon, minutes always, length).
fn zone_element(s: &str) -> Option<(bool, bool, bool, usize)> {
    for (p, colon, minutes) in [("07:00", true, true), ("0700", false, true), ("07", false, false)] {
        for (lead, z) in [('Z', true), ('-', false)] {
            if s.starts_with(lead) && s[1..].starts_with(p) {
                return Some((z, colon, minutes, 1 + p.len()));
            }
        }
    }
    None
}

/// A fractional second element (`.000`, `,999`) at the start: its length.
fn fraction(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.len() < 2 || !matches!(b[0], b'.' | b',') || !matches!(b[1], b'0' | b'9') {
        return None;
    }
    let n = 1 + b[1..].iter().take_while(|&&c| c == b[1]).count();
    (!b.get(n).is_some_and(u8::is_ascii_digit)).then_some(n)
}

/// Go's `Time.String()`.
pub(super) fn go_string(t: DateTime<Utc>) -> String {
    go_format("2006-01-02 15:04:05.999999999 -0700 MST", t, None)
}

/// RFC 3339 with nanoseconds (Go's JSON of a time).
pub(super) fn rfc3339(t: DateTime<Utc>) -> String {
    go_format("2006-01-02T15:04:05.999999999Z07:00", t, None)
}

fn now(args: &[Value]) -> Out {
    arity("now", args, 0)?;
    Ok(time(Utc::now()))
}

fn date(args: &[Value]) -> Out {
    arity("date", args, 2)?;
    string(go_format(&text("date", args, 0)?, when(args.get(1)), None))
}

fn date_in_zone(args: &[Value]) -> Out {
    arity("dateInZone", args, 3)?;
    let zone = text("dateInZone", args, 2)?;
    string(go_format(&text("dateInZone", args, 0)?, when(args.get(1)), Some(&zone)))
}

fn html_date(args: &[Value]) -> Out {
    arity("htmlDate", args, 1)?;
    string(go_format("2006-01-02", when(args.first()), None))
}

fn html_date_in_zone(args: &[Value]) -> Out {
    arity("htmlDateInZone", args, 2)?;
    let zone = text("htmlDateInZone", args, 1)?;
    string(go_format("2006-01-02", when(args.first()), Some(&zone)))
}

fn must_to_date(args: &[Value]) -> Out {
    arity("toDate", args, 2)?;
    let (layout, s) = (text("toDate", args, 0)?, text("toDate", args, 1)?);
    let f = crate::pipeline::TimeFormat::parse(&layout).map_err(|e| err("toDate", e))?;
    let ns = f.to_unix_ns(&s).ok_or_else(|| err("toDate", format!("cannot parse {s:?} as {layout:?}")))?;
    let t = DateTime::from_timestamp((ns.div_euclid(1_000_000_000)) as i64, ns.rem_euclid(1_000_000_000) as u32);
    t.map(time).ok_or_else(|| err("toDate", "out of range"))
}

/// A time that does not read is Go's zero time.
fn to_date(args: &[Value]) -> Out {
    must_to_date(args).or_else(|_| Ok(time(DateTime::from_timestamp(-62_135_596_800, 0).unwrap_or_default())))
}

fn unix_epoch(args: &[Value]) -> Out {
    arity("unixEpoch", args, 1)?;
    string(when(args.first()).timestamp().to_string())
}

fn must_date_modify(args: &[Value]) -> Out {
    arity("dateModify", args, 2)?;
    let d = parse_go_duration(&text("dateModify", args, 0)?).ok_or_else(|| err("dateModify", "not a duration"))?;
    let t = when(args.get(1));
    Ok(time(t + chrono::Duration::nanoseconds(d as i64)))
}

fn date_modify(args: &[Value]) -> Out {
    must_date_modify(args).or_else(|_| Ok(time(when(args.get(1)))))
}

/// Go's `time.ParseDuration`, in nanoseconds.
fn parse_go_duration(s: &str) -> Option<i128> {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(0);
    }
    let mut total: f64 = 0.0;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let n = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let v: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let u = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let unit = match &rest[..u] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[u..];
        total += v * unit;
    }
    Some(if neg { -(total.round() as i128) } else { total.round() as i128 })
}

/// Go's `Duration.String()`.
fn go_duration(ns: i128) -> String {
    if ns == 0 {
        return "0s".into();
    }
    let (sign, u) = (if ns < 0 { "-" } else { "" }, ns.unsigned_abs());
    let frac = |v: u128, div: u128, digits: usize| {
        let f = format!("{:0digits$}", v % div);
        let f = f.trim_end_matches('0');
        if f.is_empty() {
            format!("{}", v / div)
        } else {
            format!("{}.{f}", v / div)
        }
    };
    if u < 1_000 {
        return format!("{sign}{u}ns");
    }
    if u < 1_000_000 {
        return format!("{sign}{}µs", frac(u, 1_000, 3));
    }
    if u < 1_000_000_000 {
        return format!("{sign}{}ms", frac(u, 1_000_000, 6));
    }
    let secs = frac(u % 60_000_000_000, 1_000_000_000, 9);
    let mins = u / 60_000_000_000;
    match (mins / 60, mins % 60) {
        (0, 0) => format!("{sign}{secs}s"),
        (0, m) => format!("{sign}{m}m{secs}s"),
        (h, m) => format!("{sign}{h}h{m}m{secs}s"),
    }
}

/// `duration SECONDS`: Go's text of that many seconds (`1m30s`).
fn duration(args: &[Value]) -> Out {
    arity("duration", args, 1)?;
    let secs = match &args[0] {
        Value::String(s) => s.trim().parse::<i64>().unwrap_or(0),
        v => to_i64(v),
    };
    string(go_duration(i128::from(secs) * 1_000_000_000))
}

/// `durationRound D`: the largest whole unit (`2h`, `3mo`, `1y`).
fn duration_round(args: &[Value]) -> Out {
    arity("durationRound", args, 1)?;
    let ns: i128 = match &args[0] {
        Value::String(s) => parse_go_duration(s).unwrap_or(0),
        v @ (Value::Map(_) | Value::Object(_)) => {
            time_of(v).map_or(0, |t| (Utc::now() - t).num_nanoseconds().map_or(0, i128::from))
        }
        v => i128::from(to_i64(v)),
    };
    let u = ns.unsigned_abs();
    const H: u128 = 3_600_000_000_000;
    for (unit, name) in [(H * 24 * 365, "y"), (H * 24 * 30, "mo"), (H * 24, "d"), (H, "h"), (60_000_000_000, "m")] {
        if u > unit {
            return string(format!("{}{name}", u / unit));
        }
    }
    string(if u > 1_000_000_000 { format!("{}s", u / 1_000_000_000) } else { "0s".into() })
}

/// `ago T`: the time since T, to the second.
fn ago(args: &[Value]) -> Out {
    arity("ago", args, 1)?;
    let since = (Utc::now() - when(args.first())).num_nanoseconds().unwrap_or(0);
    let secs = (since as f64 / 1e9).round() as i128;
    string(go_duration(secs * 1_000_000_000))
}
