//! A time written in a Promtail `timestamp.format` (a Go reference layout
//! such as `02/Jan/2006:15:04:05 -0700`, one of Go's named layouts, or
//! `Unix`, `UnixMs`, `UnixUs`, `UnixNs`), to build input lines a job's
//! timestamp stage parses. Written here from Go's `time.Format` rules, not
//! taken from tailship, so the inputs do not lean on the code under test.

use chrono::{DateTime, Datelike, Timelike, Utc};

/// Go's named layouts.
fn named(format: &str) -> Option<&'static str> {
    Some(match format {
        "ANSIC" => "Mon Jan _2 15:04:05 2006",
        "UnixDate" => "Mon Jan _2 15:04:05 MST 2006",
        "RubyDate" => "Mon Jan 02 15:04:05 -0700 2006",
        "RFC822" => "02 Jan 06 15:04 MST",
        "RFC822Z" => "02 Jan 06 15:04 -0700",
        "RFC850" => "Monday, 02-Jan-06 15:04:05 MST",
        "RFC1123" => "Mon, 02 Jan 2006 15:04:05 MST",
        "RFC1123Z" => "Mon, 02 Jan 2006 15:04:05 -0700",
        "RFC3339" => "2006-01-02T15:04:05Z07:00",
        "RFC3339Nano" => "2006-01-02T15:04:05.999999999Z07:00",
        "Kitchen" => "3:04PM",
        "Stamp" => "Jan _2 15:04:05",
        "StampMilli" => "Jan _2 15:04:05.000",
        "StampMicro" => "Jan _2 15:04:05.000000",
        "StampNano" => "Jan _2 15:04:05.000000000",
        _ => return None,
    })
}

/// `t` written in `format`.
pub fn format(t: DateTime<Utc>, format: &str) -> String {
    let ns = t.timestamp_nanos_opt().unwrap_or(0);
    match format {
        "Unix" => return t.timestamp().to_string(),
        "UnixMs" => return (ns / 1_000_000).to_string(),
        "UnixUs" => return (ns / 1_000).to_string(),
        "UnixNs" => return ns.to_string(),
        _ => {}
    }
    let layout = named(format).unwrap_or(format);
    let mut out = String::new();
    let mut rest = layout;
    while !rest.is_empty() {
        let (text, len) = element(t, rest);
        out.push_str(&text);
        rest = &rest[len..];
    }
    out
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

/// The text of the layout element `rest` starts with, and its length (a
/// literal character where no element starts).
fn element(t: DateTime<Utc>, rest: &str) -> (String, usize) {
    let month = MONTHS[t.month0() as usize];
    let day = DAYS[t.weekday().num_days_from_sunday() as usize];
    let h12 = if t.hour() % 12 == 0 { 12 } else { t.hour() % 12 };
    let table: [(&str, String); 34] = [
        ("January", month.to_string()),
        ("Jan", month[..3].to_string()),
        ("Monday", day.to_string()),
        ("Mon", day[..3].to_string()),
        ("MST", "UTC".into()),
        ("2006", format!("{:04}", t.year())),
        ("-07:00:00", "+00:00:00".into()),
        ("-070000", "+000000".into()),
        ("-07:00", "+00:00".into()),
        ("-0700", "+0000".into()),
        ("-07", "+00".into()),
        ("Z07:00:00", "Z".into()),
        ("Z070000", "Z".into()),
        ("Z07:00", "Z".into()),
        ("Z0700", "Z".into()),
        ("Z07", "Z".into()),
        ("002", format!("{:03}", t.ordinal())),
        ("__2", format!("{:>3}", t.ordinal())),
        ("01", format!("{:02}", t.month())),
        ("02", format!("{:02}", t.day())),
        ("03", format!("{:02}", h12)),
        ("04", format!("{:02}", t.minute())),
        ("05", format!("{:02}", t.second())),
        ("06", format!("{:02}", t.year() % 100)),
        ("_2", format!("{:>2}", t.day())),
        ("15", format!("{:02}", t.hour())),
        ("PM", if t.hour() >= 12 { "PM" } else { "AM" }.into()),
        ("pm", if t.hour() >= 12 { "pm" } else { "am" }.into()),
        ("1", t.month().to_string()),
        ("2", t.day().to_string()),
        ("3", h12.to_string()),
        ("4", t.minute().to_string()),
        ("5", t.second().to_string()),
        ("", String::new()),
    ];
    if let Some((text, len)) = fraction(t, rest) {
        return (text, len);
    }
    for (name, text) in table.iter().filter(|(n, _)| !n.is_empty()) {
        if rest.starts_with(name) {
            return (text.clone(), name.len());
        }
    }
    let c = rest.chars().next().map(|c| c.len_utf8()).unwrap_or(1);
    (rest[..c].to_string(), c)
}

/// `.000` (always that many digits) or `.999` (trailing zeros dropped), with
/// `.` or `,`, right after the seconds.
fn fraction(t: DateTime<Utc>, rest: &str) -> Option<(String, usize)> {
    let sep = rest.chars().next().filter(|c| *c == '.' || *c == ',')?;
    let digits: String = rest[1..].chars().take_while(|c| *c == '0' || *c == '9').collect();
    let next = rest[1 + digits.len()..].chars().next();
    if digits.is_empty()
        || next.is_some_and(|c| c.is_ascii_digit())
        || !digits.chars().all(|c| c == digits.as_bytes()[0] as char)
    {
        return None;
    }
    let nanos = format!("{:09}", t.nanosecond());
    let mut frac = nanos[..digits.len().min(9)].to_string();
    if digits.starts_with('9') {
        frac = frac.trim_end_matches('0').to_string();
        if frac.is_empty() {
            return Some((String::new(), 1 + digits.len()));
        }
    }
    Some((format!("{sep}{frac}"), 1 + digits.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn layouts_as_go_writes_them() {
        let t = Utc.with_ymd_and_hms(2024, 5, 1, 10, 0, 3).unwrap() + chrono::Duration::milliseconds(120);
        assert_eq!(format(t, "RFC3339Nano"), "2024-05-01T10:00:03.12Z");
        assert_eq!(format(t, "02/Jan/2006:15:04:05 -0700"), "01/May/2024:10:00:03 +0000");
        assert_eq!(format(t, "2006-01-02 15:04:05,000"), "2024-05-01 10:00:03,120");
        assert_eq!(format(t, "Stamp"), "May  1 10:00:03");
        assert_eq!(format(t, "UnixMs"), "1714557603120");
    }
}
