//! Joining multiline entries (stack traces): a line matching `start` begins a
//! new entry; other lines join the current one with `\n`. An entry is emitted
//! when the next one starts, when it reaches `max_lines`, or when no line came
//! for `max_wait`. Lines before the first start line of a file pass one by
//! one, as Promtail's multiline stage passes them (it starts joining a
//! stream at its first start line).
//!
//! While an entry is held, the file position must not pass its first line, so
//! [`Joiner::safe_offset`] tells the tailer how far lines are really handled.

use std::time::{Duration, Instant};

use regex::bytes::Regex;

/// A compiled `multiline` setting (made once by `plan`, shared by every file of the source).
#[derive(Debug, Clone)]
pub struct MultilineRule {
    pub start: Regex,
    pub max_lines: usize,
    pub max_wait: Duration,
}

impl MultilineRule {
    /// Compiles the `start` regex; the error is the regex's own message.
    pub fn compile(start: &str, max_lines: usize, max_wait: Duration) -> Result<Self, regex::Error> {
        Ok(Self { start: Regex::new(start)?, max_lines, max_wait })
    }
}

/// See the module documentation.
#[derive(Debug)]
pub struct Joiner {
    start: Regex,
    max_lines: usize,
    max_wait: Duration,
    max_bytes: usize,
    buf: Vec<u8>,
    lines: usize,
    start_offset: u64,
    last_line_at: Instant,
    /// A start line was seen: from then on, every line joins an entry.
    started: bool,
    /// Entries cut at `max_lines` (counted by the caller).
    pub cut: u64,
    /// Entries that lost bytes past `max_bytes` (counted by the caller as
    /// truncated, as a single line cut at `max_line_bytes` is).
    pub truncated: u64,
    /// The held entry lost bytes.
    losing: bool,
}

impl Joiner {
    pub fn new(start: Regex, max_lines: usize, max_wait: Duration, max_bytes: usize) -> Self {
        Self {
            start,
            max_lines: max_lines.max(1),
            max_wait,
            max_bytes,
            buf: Vec::new(),
            lines: 0,
            start_offset: 0,
            last_line_at: Instant::now(),
            started: false,
            cut: 0,
            truncated: 0,
            losing: false,
        }
    }

    /// Adds one line; calls `emit(entry, start_offset)` for each entry it completes.
    pub fn push(&mut self, line: &[u8], start: u64, now: Instant, mut emit: impl FnMut(&[u8], u64)) {
        let begins = self.start.is_match(line);
        self.started |= begins;
        if !self.started {
            emit(line, start);
            return;
        }
        if self.lines > 0 && (begins || self.lines >= self.max_lines) {
            if !begins {
                self.cut += 1;
            }
            self.emit_held(&mut emit);
        }
        if self.lines == 0 {
            self.start_offset = start;
        } else if self.buf.len() < self.max_bytes {
            self.buf.push(b'\n');
        } else {
            self.losing = true;
        }
        let room = self.max_bytes.saturating_sub(self.buf.len());
        self.losing |= line.len() > room;
        self.buf.extend_from_slice(&line[..line.len().min(room)]);
        self.lines += 1;
        self.last_line_at = now;
    }

    fn emit_held(&mut self, emit: &mut impl FnMut(&[u8], u64)) {
        emit(&self.buf, self.start_offset);
        self.buf.clear();
        self.lines = 0;
        if std::mem::take(&mut self.losing) {
            self.truncated += 1;
        }
    }

    /// Emits the held entry if no line came for `max_wait` (or always, with `force`).
    pub fn flush(&mut self, now: Instant, force: bool, mut emit: impl FnMut(&[u8], u64)) {
        if self.lines > 0 && (force || now.duration_since(self.last_line_at) >= self.max_wait) {
            self.emit_held(&mut emit);
        }
    }

    /// When the held entry becomes due, if one is held.
    pub fn due_at(&self) -> Option<Instant> {
        (self.lines > 0).then(|| self.last_line_at + self.max_wait)
    }

    /// The position up to which every line has left the joiner.
    pub fn safe_offset(&self, consumed: u64) -> u64 {
        if self.lines > 0 {
            self.start_offset
        } else {
            consumed
        }
    }

    /// Forgets the held entry (the file was truncated).
    pub fn reset(&mut self) {
        self.buf.clear();
        self.lines = 0;
        self.losing = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_until_next_start_or_max_lines_or_wait() {
        let t0 = Instant::now();
        let mut j = Joiner::new(Regex::new(r"^\d").unwrap(), 3, Duration::from_secs(1), 1 << 20);
        let mut out: Vec<(String, u64)> = Vec::new();
        let mut e = |b: &[u8], off: u64| out.push((String::from_utf8_lossy(b).into_owned(), off));
        j.push(b"orphan", 0, t0, &mut e);
        j.push(b"  another", 7, t0, &mut e);
        assert_eq!(j.safe_offset(17), 17, "lines before the first start line are not held");
        j.push(b"1 first", 7, t0, &mut e);
        assert_eq!(j.safe_offset(15), 7);
        j.push(b"  at a", 15, t0, &mut e);
        j.push(b"2 second", 22, t0, &mut e);
        j.push(b"  x", 31, t0, &mut e);
        j.push(b"  y", 35, t0, &mut e);
        j.push(b"  z", 39, t0, &mut e);
        j.flush(t0 + Duration::from_millis(10), false, &mut e);
        j.flush(t0 + Duration::from_secs(2), false, &mut e);
        assert_eq!(j.safe_offset(43), 43);
        assert_eq!(
            out,
            vec![
                ("orphan".into(), 0),
                ("  another".into(), 7),
                ("1 first\n  at a".into(), 7),
                ("2 second\n  x\n  y".into(), 22),
                ("  z".into(), 39)
            ]
        );
        assert_eq!(j.cut, 1);
    }
}
