//! How `query`, `tail` and `labels` print: the default lines (coloured on a
//! terminal), `raw` and `jsonl`.

use std::io::{self, IsTerminal, Write};

use serde::Serialize;

use crate::cli::OutputFormat;
use crate::client::query::{Entry, Labels, Sample};

/// RFC 3339 in UTC with nanoseconds.
pub(super) fn rfc3339(ts: i64) -> String {
    chrono::DateTime::from_timestamp_nanos(ts).to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
}

pub(super) fn color_wanted() -> bool {
    io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

const DIM: &str = "\x1b[2m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

#[derive(Serialize)]
struct JsonEntry<'a> {
    ts: String,
    time: String,
    labels: &'a Labels,
    line: &'a str,
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
}

impl<W: Write> Printer<W> {
    pub(super) fn entry(&mut self, e: &Entry) -> io::Result<()> {
        match self.format {
            OutputFormat::Raw => writeln!(self.out, "{}", e.line),
            OutputFormat::Jsonl => {
                let j =
                    JsonEntry { ts: e.ts.to_string(), time: rfc3339(e.ts), labels: &e.stream.labels, line: &e.line };
                self.json(&j)
            }
            OutputFormat::Default => {
                let time = rfc3339(e.ts);
                match (self.labels, self.color) {
                    (true, true) => {
                        writeln!(self.out, "{DIM}{time}{RESET} {CYAN}{}{RESET} {}", e.stream.display, e.line)
                    }
                    (true, false) => writeln!(self.out, "{time} {} {}", e.stream.display, e.line),
                    (false, true) => writeln!(self.out, "{DIM}{time}{RESET} {}", e.line),
                    (false, false) => writeln!(self.out, "{time} {}", e.line),
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
            OutputFormat::Raw => writeln!(self.out, "{}", s.value),
            OutputFormat::Default => {
                let labels = crate::client::query::Stream::new(s.labels.clone()).display;
                if self.color {
                    writeln!(self.out, "{CYAN}{labels}{RESET} {}", s.value)
                } else {
                    writeln!(self.out, "{labels} {}", s.value)
                }
            }
        }
    }

    pub(super) fn name(&mut self, n: &str) -> io::Result<()> {
        match self.format {
            OutputFormat::Jsonl => self.json(&n),
            OutputFormat::Default | OutputFormat::Raw => writeln!(self.out, "{n}"),
        }
    }

    fn json(&mut self, v: &impl Serialize) -> io::Result<()> {
        let mut s = serde_json::to_string(v).map_err(io::Error::other)?;
        s.push('\n');
        self.out.write_all(s.as_bytes())
    }

    pub(super) fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

pub(super) fn stdout_printer(format: OutputFormat, labels: bool) -> Printer<io::BufWriter<io::StdoutLock<'static>>> {
    Printer { out: io::BufWriter::new(io::stdout().lock()), format, labels, color: color_wanted() }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::client::query::Stream;

    #[test]
    fn formats() {
        let stream = Arc::new(Stream::new([("job".to_string(), "a".to_string())].into_iter().collect()));
        let e = Entry { ts: 1_700_000_000_000_000_001, stream, line: "hello \"x\"".into() };
        let mut out = Vec::new();
        for (format, labels) in [(OutputFormat::Default, true), (OutputFormat::Default, false)] {
            let mut p = Printer { out: &mut out, format, labels, color: false };
            p.entry(&e).unwrap();
        }
        for format in [OutputFormat::Raw, OutputFormat::Jsonl] {
            let mut p = Printer { out: &mut out, format, labels: true, color: false };
            p.entry(&e).unwrap();
        }
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], r#"2023-11-14T22:13:20.000000001Z {job="a"} hello "x""#);
        assert_eq!(lines[1], r#"2023-11-14T22:13:20.000000001Z hello "x""#);
        assert_eq!(lines[2], r#"hello "x""#);
        assert_eq!(
            lines[3],
            r#"{"ts":"1700000000000000001","time":"2023-11-14T22:13:20.000000001Z","labels":{"job":"a"},"line":"hello \"x\""}"#
        );
    }
}
