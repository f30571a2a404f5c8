//! Splitting a byte stream into lines, with the file offset where each ends.
//!
//! A line ends at `\n` (a `\r` before it is removed). Bytes after the last
//! newline wait as a partial line until more data completes them, or until
//! the caller flushes them (EOF of a one-off read, or the file went idle).
//! A line longer than `max_line_bytes` keeps only its first `max_line_bytes`
//! bytes (one more while it is incomplete, for a `\r` or the rest of a
//! character), so one huge line cannot grow the buffer without bound. The cut
//! never splits a UTF-8 character: it backs off to the character's start.
//!
//! A line is the same whichever way its bytes arrive: `\r\n` is trimmed first,
//! then the line is cut, in one read or across many.

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
                let (line, cut) = cut_line(trim_cr(segment), self.max_line_bytes);
                self.truncated += u64::from(cut);
                emit(line, start, end);
            } else {
                self.keep(segment);
                self.emit_partial(start, end, &mut emit);
            }
            self.consumed = end;
            pos = nl + 1;
        }
        self.keep(&data[pos..]);
    }

    /// Emits the kept bytes of the current line: `\r` trimmed when the line is
    /// whole in `partial`, then cut (a line with overflow is longer than
    /// `partial`, which holds `max_line_bytes + 1` bytes, so it is always cut).
    fn emit_partial(&mut self, start: u64, end: u64, emit: &mut impl FnMut(&[u8], u64, u64)) {
        let mut line = std::mem::take(&mut self.partial);
        if self.overflow == 0 && line.last() == Some(&b'\r') {
            line.pop();
        }
        let (text, cut) = cut_line(&line, self.max_line_bytes);
        self.truncated += u64::from(cut);
        emit(text, start, end);
        line.clear();
        self.partial = line;
        self.overflow = 0;
    }

    fn keep(&mut self, bytes: &[u8]) {
        // One byte past the limit: a `\r` to trim, or the byte that tells
        // whether the cut splits a character.
        let room = (self.max_line_bytes + 1).saturating_sub(self.partial.len());
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
        self.emit_partial(start, end, &mut emit);
        self.consumed = end;
    }
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The first `max` bytes of `line`, backed off (by 3 bytes at most) to the
/// start of a UTF-8 character the cut would split; and whether it was cut.
fn cut_line(line: &[u8], max: usize) -> (&[u8], bool) {
    if line.len() <= max {
        return (line, false);
    }
    let mut end = max;
    while end > 0 && max - end < 3 && line[end] & 0xC0 == 0x80 {
        end -= 1;
    }
    (&line[..end], true)
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

    /// Found writing the model of the `line_splitter` fuzz target: a line of exactly
    /// `max_line_bytes` ending in `\r\n`, read in two pieces, was counted as
    /// truncated (read in one piece it was not), and a flushed partial line
    /// had its `\r` trimmed after the cut instead of before.
    #[test]
    fn crlf_line_of_exactly_max_bytes_split_across_reads_is_not_counted_truncated() {
        let mut one = LineSplitter::new(0, 4);
        assert_eq!(collect(&mut one, b"abcd\r\n"), vec![("abcd".into(), 0, 6)]);
        let mut two = LineSplitter::new(0, 4);
        assert!(collect(&mut two, b"ab").is_empty());
        assert_eq!(collect(&mut two, b"cd\r\n"), vec![("abcd".into(), 0, 6)]);
        assert_eq!((one.truncated, two.truncated), (0, 0));
        let mut s = LineSplitter::new(0, 5);
        collect(&mut s, b"abcd\rxyz");
        let mut out = Vec::new();
        s.flush(|l, a, b| out.push((l.to_vec(), a, b)));
        assert_eq!(out, vec![(b"abcd\r".to_vec(), 0, 8)]);
        assert_eq!(s.truncated, 1);
    }

    /// Found by the 10 MB line of `tests/bad_input/mod.rs`: a cut inside a
    /// multi-byte character left half a character, which the stages then
    /// repaired (counted as invalid UTF-8) and truncated again (counted twice).
    #[test]
    fn long_line_is_cut_on_a_character_boundary() {
        let line = format!("x{}\n", "é".repeat(10));
        let mut one = LineSplitter::new(0, 8);
        assert_eq!(collect(&mut one, line.as_bytes()), vec![("xééé".into(), 0, 22)]);
        let mut pieces = LineSplitter::new(0, 8);
        let (a, b) = line.as_bytes().split_at(3);
        assert!(collect(&mut pieces, a).is_empty());
        assert_eq!(collect(&mut pieces, b), vec![("xééé".into(), 0, 22)]);
        assert_eq!((one.truncated, pieces.truncated), (1, 1));
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
