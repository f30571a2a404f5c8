//! Splitting a byte stream into lines, with the file offset where each ends.
//!
//! A line ends at `\n` (a `\r` before it is removed). Bytes after the last
//! newline wait as a partial line until more data completes them, or until
//! the caller flushes them (EOF of a one-off read, or the file went idle).
//! A line longer than `max_line_bytes` keeps only its first `max_line_bytes`
//! bytes in memory, so one huge line cannot grow the buffer without bound.

use memchr::memchr_iter;

/// Splits bytes into lines; see the module documentation.
#[derive(Debug)]
pub struct LineSplitter {
    partial: Vec<u8>,
    /// Bytes of the current partial line beyond what `partial` keeps.
    overflow: u64,
    /// Offset of the first byte not yet part of an emitted line.
    consumed: u64,
    max_line_bytes: usize,
    /// Lines cut to `max_line_bytes` (counted by the caller).
    pub truncated: u64,
}

impl LineSplitter {
    pub fn new(start_offset: u64, max_line_bytes: usize) -> Self {
        Self {
            partial: Vec::new(),
            overflow: 0,
            consumed: start_offset,
            max_line_bytes: max_line_bytes.max(1),
            truncated: 0,
        }
    }

    /// Offset just after the last emitted line.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// True when bytes of an unfinished line are waiting.
    pub fn has_partial(&self) -> bool {
        !self.partial.is_empty() || self.overflow > 0
    }

    /// Starts again at `offset`, forgetting any partial line.
    pub fn reset(&mut self, offset: u64) {
        self.partial.clear();
        self.overflow = 0;
        self.consumed = offset;
    }

    /// Feeds `data` (the bytes right after everything fed before) and calls
    /// `emit(line, start_offset, end_offset)` for each completed line.
    pub fn feed(&mut self, data: &[u8], mut emit: impl FnMut(&[u8], u64, u64)) {
        let mut pos = 0usize;
        for nl in memchr_iter(b'\n', data) {
            let segment = &data[pos..nl];
            let start = self.consumed;
            let end = self.consumed + self.partial.len() as u64 + self.overflow + segment.len() as u64 + 1;
            if self.partial.is_empty() && self.overflow == 0 {
                let line = trim_cr(segment);
                if line.len() > self.max_line_bytes {
                    self.truncated += 1;
                }
                emit(&line[..line.len().min(self.max_line_bytes)], start, end);
            } else {
                self.keep(segment);
                let cut = self.overflow > 0;
                if cut {
                    self.truncated += 1;
                }
                let mut line = std::mem::take(&mut self.partial);
                if !cut && line.last() == Some(&b'\r') {
                    line.pop();
                }
                emit(&line, start, end);
                line.clear();
                self.partial = line;
                self.overflow = 0;
            }
            self.consumed = end;
            pos = nl + 1;
        }
        self.keep(&data[pos..]);
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = self.max_line_bytes.saturating_sub(self.partial.len());
        let take = room.min(bytes.len());
        self.partial.extend_from_slice(&bytes[..take]);
        self.overflow += (bytes.len() - take) as u64;
    }

    /// Emits the partial line, if any, as a complete line (EOF or idle).
    pub fn flush(&mut self, mut emit: impl FnMut(&[u8], u64, u64)) {
        if !self.has_partial() {
            return;
        }
        let start = self.consumed;
        let end = self.consumed + self.partial.len() as u64 + self.overflow;
        let line = std::mem::take(&mut self.partial);
        if self.overflow > 0 {
            self.truncated += 1;
        }
        emit(trim_cr(&line), start, end);
        self.overflow = 0;
        self.consumed = end;
    }
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(s: &mut LineSplitter, data: &[u8]) -> Vec<(String, u64, u64)> {
        let mut out = Vec::new();
        s.feed(data, |l, a, b| out.push((String::from_utf8_lossy(l).into_owned(), a, b)));
        out
    }

    #[test]
    fn splits_across_feeds_with_offsets() {
        let mut s = LineSplitter::new(100, 1024);
        assert_eq!(collect(&mut s, b"ab\ncd"), vec![("ab".into(), 100, 103)]);
        assert!(s.has_partial());
        assert_eq!(collect(&mut s, b"e\r\nf\n"), vec![("cde".into(), 103, 108), ("f".into(), 108, 110)]);
        assert_eq!(s.consumed(), 110);
        assert!(!s.has_partial());
    }

    #[test]
    fn long_lines_are_cut_but_offsets_stay_exact() {
        let mut s = LineSplitter::new(0, 4);
        let out = collect(&mut s, b"abcdefgh");
        assert!(out.is_empty());
        let out = collect(&mut s, b"ij\nxy\n");
        assert_eq!(out, vec![("abcd".into(), 0, 11), ("xy".into(), 11, 14)]);
        let out = collect(&mut s, b"0123456789\n");
        assert_eq!(out, vec![("0123".into(), 14, 25)]);
        assert_eq!(s.truncated, 2);
    }

    #[test]
    fn flush_emits_partial() {
        let mut s = LineSplitter::new(0, 1024);
        collect(&mut s, b"a\nlast");
        let mut out = Vec::new();
        s.flush(|l, a, b| out.push((l.to_vec(), a, b)));
        assert_eq!(out, vec![(b"last".to_vec(), 2, 6)]);
        assert_eq!(s.consumed(), 6);
    }
}
