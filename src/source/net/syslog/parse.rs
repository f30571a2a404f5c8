//! Syslog messages as devices really send them: RFC 5424, and RFC 3164 with
//! or without PRI, year, hostname or tag, with ISO timestamps (rsyslog's
//! high-precision format), and Cisco's sequence-numbered form. A message
//! none of these fit is not parsed (the caller keeps it raw and counts it).

use chrono::{DateTime, Datelike, NaiveDate, TimeZone};

/// A parsed message. Fields a message lacks are `None`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Message<'a> {
    pub facility: Option<u8>,
    pub severity: Option<u8>,
    /// Unix nanoseconds.
    pub ts: Option<i64>,
    pub hostname: Option<&'a str>,
    pub app_name: Option<&'a str>,
    pub proc_id: Option<&'a str>,
    pub msg_id: Option<&'a str>,
    /// Structured data: (SD-ID, param name, value).
    pub structured: Vec<(&'a str, &'a str, String)>,
    pub message: &'a str,
}

pub const SEVERITIES: [&str; 8] =
    ["emergency", "alert", "critical", "error", "warning", "notice", "informational", "debug"];
pub const FACILITIES: [&str; 24] = [
    "kern",
    "user",
    "mail",
    "daemon",
    "auth",
    "syslog",
    "lpr",
    "news",
    "uucp",
    "cron",
    "authpriv",
    "ftp",
    "ntp",
    "security",
    "console",
    "solaris-cron",
    "local0",
    "local1",
    "local2",
    "local3",
    "local4",
    "local5",
    "local6",
    "local7",
];

/// Parses `raw` (one message, framing removed). `now_ns` places RFC 3164
/// timestamps without a year (in the past year, local time).
pub fn parse(raw: &str, now_ns: i64) -> Option<Message<'_>> {
    let raw = raw.trim_end_matches(['\n', '\r', '\0']);
    let (pri, rest) = match pri(raw) {
        Some((p, rest)) => (Some(p), rest),
        None if raw.starts_with('<') => return None,
        None => (None, raw),
    };
    let mut m = if let (Some(_), Some(after)) = (pri, rest.strip_prefix("1 ")) {
        rfc5424(after)?
    } else {
        let m = rfc3164(rest, now_ns)?;
        if pri.is_none() && m.ts.is_none() {
            // No PRI and no timestamp: nothing says this is syslog.
            return None;
        }
        m
    };
    if let Some(p) = pri {
        m.facility = Some(p / 8);
        m.severity = Some(p % 8);
    }
    Some(m)
}

/// `<N>` with N of 0..=191, and what follows.
fn pri(s: &str) -> Option<(u8, &str)> {
    let inner = s.strip_prefix('<')?;
    let end = inner.find('>')?;
    let digits = &inner[..end];
    if digits.is_empty() || digits.len() > 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let p: u16 = digits.parse().ok()?;
    (p <= 191).then_some((p as u8, &inner[end + 1..]))
}

/// The next space-separated field and the rest after one space.
fn field(s: &str) -> (&str, &str) {
    match s.find(' ') {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, ""),
    }
}

fn nil(s: &str) -> Option<&str> {
    (s != "-" && !s.is_empty()).then_some(s)
}

fn rfc5424(s: &str) -> Option<Message<'_>> {
    let (ts, s) = field(s);
    let ts = match ts {
        "-" => None,
        t => Some(DateTime::parse_from_rfc3339(t).ok()?.timestamp_nanos_opt()?),
    };
    let (host, s) = field(s);
    let (app, s) = field(s);
    let (proc_id, s) = field(s);
    let (msg_id, s) = field(s);
    let (structured, s) = structured_data(s)?;
    // rsyslog forwards RFC 3164 messages with their leading space: one more.
    let message = s.trim_start_matches(' ');
    let message = message.strip_prefix('\u{feff}').unwrap_or(message);
    Some(Message {
        ts,
        hostname: nil(host),
        app_name: nil(app),
        proc_id: nil(proc_id),
        msg_id: nil(msg_id),
        structured,
        message,
        ..Default::default()
    })
}

type Structured<'a> = Vec<(&'a str, &'a str, String)>;

/// `-` or `[id name="value" ...]...`, and what follows.
fn structured_data(s: &str) -> Option<(Structured<'_>, &str)> {
    if let Some(rest) = s.strip_prefix('-') {
        return Some((Vec::new(), rest));
    }
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(inner) = rest.strip_prefix('[') {
        let id_end = inner.find([' ', ']'])?;
        let id = &inner[..id_end];
        let mut p = &inner[id_end..];
        loop {
            if let Some(after) = p.strip_prefix(']') {
                rest = after;
                break;
            }
            p = p.strip_prefix(' ')?;
            let eq = p.find('=')?;
            let name = &p[..eq];
            let mut chars = p[eq + 1..].strip_prefix('"')?.char_indices();
            let mut value = String::new();
            let body = &p[eq + 2..];
            let close = loop {
                let (i, c) = chars.next()?;
                match c {
                    '\\' => {
                        let (_, e) = chars.next()?;
                        if !matches!(e, '"' | '\\' | ']') {
                            value.push('\\');
                        }
                        value.push(e);
                    }
                    '"' => break i,
                    c => value.push(c),
                }
            };
            out.push((id, name, value));
            p = &body[close + 1..];
        }
    }
    if out.is_empty() && !s.starts_with("[]") {
        return None;
    }
    Some((out, rest))
}

const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

fn rfc3164(s: &str, now_ns: i64) -> Option<Message<'_>> {
    let mut s = s.trim_start();
    // Cisco: `123: *Mar  1 00:00:05.123: ...` (a sequence number, `*` or `.` before the time).
    if let Some(i) = s.find(": ") {
        if i > 0 && s[..i].bytes().all(|b| b.is_ascii_digit()) {
            s = &s[i + 2..];
        }
    }
    let s = s.trim_start_matches(['*', '.']);
    let (ts, s) = match timestamp(s, now_ns) {
        Some((ts, rest)) => (Some(ts), rest.strip_prefix(':').unwrap_or(rest).trim_start()),
        None => (None, s),
    };
    let mut m = Message { ts, ..Default::default() };
    let (first, after_first) = field(s);
    if let Some((app, pid)) = tag(first) {
        m.app_name = Some(app);
        m.proc_id = pid;
        m.message = after_first.trim_start_matches(' ');
        return Some(m);
    }
    if ts.is_some() && !first.is_empty() && !first.ends_with(':') && looks_like_host(first) {
        m.hostname = Some(first);
        let (second, after_second) = field(after_first);
        if let Some((app, pid)) = tag(second) {
            m.app_name = Some(app);
            m.proc_id = pid;
            m.message = after_second.trim_start_matches(' ');
        } else {
            m.message = after_first;
        }
        return Some(m);
    }
    m.message = s;
    Some(m)
}

/// `app:` or `app[pid]:` as an RFC 3164 TAG.
fn tag(s: &str) -> Option<(&str, Option<&str>)> {
    let t = s.strip_suffix(':')?;
    let (app, pid) = match t.find('[') {
        Some(i) => (&t[..i], Some(t[i + 1..].strip_suffix(']')?)),
        None => (t, None),
    };
    let ok = !app.is_empty()
        && app.len() <= 48
        && app.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/' | b'@'));
    ok.then_some((app, pid))
}

fn looks_like_host(s: &str) -> bool {
    s.len() <= 255 && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

/// An RFC 3164 timestamp (`Mmm dd hh:mm:ss`, optional fraction, optional
/// year before or after the time) or an RFC 3339 one, and what follows.
fn timestamp(s: &str, now_ns: i64) -> Option<(i64, &str)> {
    if s.len() >= 19 && s.as_bytes()[4] == b'-' && s.as_bytes()[10] == b'T' {
        let (t, rest) = field(s);
        let t = t.strip_suffix(':').unwrap_or(t);
        return Some((DateTime::parse_from_rfc3339(t).ok()?.timestamp_nanos_opt()?, rest));
    }
    let month = MONTHS.iter().position(|m| s.starts_with(m))? as u32 + 1;
    let s = s.get(3..)?.strip_prefix(' ')?;
    let s = s.trim_start();
    let (day, s) = field(s);
    let day: u32 = day.parse().ok()?;
    let (mut part, mut s) = field(s);
    let mut year = None;
    if part.len() == 4 && part.bytes().all(|b| b.is_ascii_digit()) {
        year = part.parse::<i32>().ok();
        (part, s) = field(s);
    }
    let part = part.strip_suffix(':').unwrap_or(part);
    let (hms, frac) = part.split_once('.').unwrap_or((part, ""));
    let mut hms_it = hms.split(':').map(|x| x.parse::<u32>().ok());
    let (h, mi, se) = (hms_it.next()??, hms_it.next()??, hms_it.next()??);
    if hms_it.next().is_some() || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let nanos: u32 = if frac.is_empty() { 0 } else { format!("{frac:0<9}")[..9].parse().ok()? };
    let (next, after) = field(s);
    if year.is_none() && next.len() == 4 && next.bytes().all(|b| b.is_ascii_digit()) {
        year = next.parse().ok();
        s = after;
    }
    let now = chrono::Local.timestamp_nanos(now_ns);
    let at = |y: i32| {
        let d = NaiveDate::from_ymd_opt(y, month, day)?.and_hms_nano_opt(h, mi, se, nanos)?;
        chrono::Local.from_local_datetime(&d).earliest()?.timestamp_nanos_opt()
    };
    let ts = match year {
        Some(y) => at(y)?,
        None => {
            // No year: this year, unless that is more than a day ahead (December's line read in January).
            let this = at(now.year())?;
            if this > now_ns + 86_400_000_000_000 {
                at(now.year() - 1)?
            } else {
                this
            }
        }
    };
    Some((ts, s))
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
