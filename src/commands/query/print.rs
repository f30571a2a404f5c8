//! How `query`, `tail` and `labels` print: the default lines (coloured on a
//! terminal), `raw` and `jsonl`.
//!
//! Lines, label names and values come from whoever pushed them: on a
//! terminal their control characters are escaped
//! ([`crate::util::escape_controls`], as `tailship top` shows names), so a
//! line cannot set the terminal's title, clear its screen or move its
//! cursor. Into a pipe or a file they are written as stored (`-o raw` is
//! byte-exact); JSON escapes them itself.

use std::borrow::Cow;
use std::io::{self, IsTerminal, Write};

use serde::Serialize;

use crate::cli::OutputFormat;
use crate::client::query::{Entry, Labels, Sample};

/// RFC 3339 in UTC with nanoseconds.
pub(super) fn rfc3339(ts: i64) -> String {
    chrono::DateTime::from_timestamp_nanos(ts).to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
}

/// RFC 3339 with nanoseconds in UTC or the local zone; `go`: trailing zeros
/// of the fraction left out, as Go's RFC3339Nano (logcli's JSON) writes it.
fn time_in(ts: i64, local: bool, go: bool) -> String {
    let utc = chrono::DateTime::from_timestamp_nanos(ts);
    let s = if local {
        utc.with_timezone(&chrono::Local).to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
    } else {
        utc.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
    };
    if !go {
        return s;
    }
    // The fraction is the 9 digits after the seconds' dot.
    match s.find('.') {
        Some(dot) => {
            let (head, rest) = s.split_at(dot);
            let frac = rest[1..10].trim_end_matches('0');
            let zone = &rest[10..];
            if frac.is_empty() {
                format!("{head}{zone}")
            } else {
                format!("{head}.{frac}{zone}")
            }
        }
        None => s,
    }
}

pub(super) fn color_wanted() -> bool {
    io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

const DIM: &str = "\x1b[2m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

/// An entry as logcli's `-o jsonl` writes it (its keys, in its order), and
/// `ts`, the exact Unix nanoseconds.
#[derive(Serialize)]
struct JsonEntry<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    labels: Option<&'a Labels>,
    line: &'a str,
    timestamp: String,
    ts: String,
}

#[derive(Serialize)]
struct JsonSample<'a> {
    ts: String,
    time: String,
    labels: &'a Labels,
    value: &'a str,
}

/// Writes entries, samples and names in the chosen format.
pub(super) struct Printer<W: Write> {
    out: W,
    format: OutputFormat,
    labels: bool,
    color: bool,
    /// Control characters escaped (stdout is a terminal).
    escape: bool,
    /// Times in the local zone (`--timezone Local`).
    pub(super) local: bool,
    /// Labels left out of printed label sets (`--exclude-label`).
    pub(super) exclude: Vec<String>,
}

impl<W: Write> Printer<W> {
    /// `s` as it may be printed: control characters escaped on a terminal.
    fn shown<'a>(&self, s: &'a str) -> Cow<'a, str> {
        if self.escape {
            Cow::Owned(crate::util::escape_controls(s))
        } else {
            Cow::Borrowed(s)
        }
    }

    pub(super) fn entry(&mut self, e: &Entry) -> io::Result<()> {
        let trimmed;
        let (labels, display) = if self.exclude.is_empty() {
            (&e.stream.labels, &e.stream.display)
        } else {
            let kept: Labels = e
                .stream
                .labels
                .iter()
                .filter(|(k, _)| !self.exclude.contains(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            trimmed = crate::client::query::Stream::new(kept);
            (&trimmed.labels, &trimmed.display)
        };
        let (display, line) = (self.shown(display), self.shown(&e.line));
        match self.format {
            OutputFormat::Raw => writeln!(self.out, "{line}"),
            OutputFormat::Jsonl => {
                let j = JsonEntry {
                    labels: self.labels.then_some(labels),
                    line: &e.line,
                    timestamp: time_in(e.ts, self.local, true),
                    ts: e.ts.to_string(),
                };
                self.json(&j)
            }
            OutputFormat::Default => {
                let time = time_in(e.ts, self.local, false);
                match (self.labels, self.color) {
                    (true, true) => writeln!(self.out, "{DIM}{time}{RESET} {CYAN}{display}{RESET} {line}"),
                    (true, false) => writeln!(self.out, "{time} {display} {line}"),
                    (false, true) => writeln!(self.out, "{DIM}{time}{RESET} {line}"),
                    (false, false) => writeln!(self.out, "{time} {line}"),
                }
            }
        }
    }

    pub(super) fn sample(&mut self, s: &Sample) -> io::Result<()> {
        match self.format {
            OutputFormat::Jsonl => {
                let j = JsonSample { ts: s.ts.to_string(), time: rfc3339(s.ts), labels: &s.labels, value: &s.value };
                self.json(&j)
            }
            OutputFormat::Raw => writeln!(self.out, "{}", self.shown(&s.value)),
            OutputFormat::Default => {
                let labels = crate::client::query::Stream::new(s.labels.clone()).display;
                let (labels, value) = (self.shown(&labels), self.shown(&s.value));
                if self.color {
                    writeln!(self.out, "{CYAN}{labels}{RESET} {value}")
                } else {
                    writeln!(self.out, "{labels} {value}")
                }
            }
        }
    }

    pub(super) fn name(&mut self, n: &str) -> io::Result<()> {
        match self.format {
            OutputFormat::Jsonl => self.json(&n),
            OutputFormat::Default | OutputFormat::Raw => writeln!(self.out, "{}", self.shown(n)),
        }
    }

    fn json(&mut self, v: &impl Serialize) -> io::Result<()> {
        let s = serde_json::to_string(v).map_err(io::Error::other)?;
        let mut s = if self.escape { json_for_terminal(s) } else { s };
        s.push('\n');
        self.out.write_all(s.as_bytes())
    }

    pub(super) fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// JSON text with the control characters JSON leaves as they are (DEL and
/// the C1 range, `\u{9b}` among them: CSI to some terminals) written as
/// `\u` escapes, for a terminal; the same JSON values.
pub(super) fn json_for_terminal(s: String) -> String {
    if !s.chars().any(char::is_control) {
        return s;
    }
    s.chars().map(|c| if c.is_control() { format!("\\u{:04x}", c as u32) } else { c.to_string() }).collect()
}

/// Whether what is printed on stdout has its control characters escaped: on a terminal.
pub(super) fn escape_wanted() -> bool {
    io::stdout().is_terminal()
}

pub(super) fn stdout_printer(format: OutputFormat, labels: bool) -> Printer<io::BufWriter<io::StdoutLock<'static>>> {
    Printer {
        out: io::BufWriter::new(io::stdout().lock()),
        format,
        labels,
        color: color_wanted(),
        escape: escape_wanted(),
        local: false,
        exclude: Vec::new(),
    }
}

#[cfg(test)]
#[path = "print_tests.rs"]
mod tests;
