//! The multiline joiner against its contract: every line ends up in exactly one
//! entry, in order; an entry holds at most `max_lines` lines and `max_bytes`
//! bytes; an entry starts at a start line, after a `max_lines` cut, or is one
//! line before the first start line (passed alone); its offset is its last line's end;
//! and the safe offset never passes the first line of the held entry.
//!
//! Input: byte 0 picks the start regex and `max_lines` (1 to 8), byte 1
//! `max_bytes` (or unbounded); the rest are lines separated by `\n`, each fed
//! at a time that may pass `max_wait` (a line starting with `~` waits).
#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use regex::bytes::Regex;
use tailship::source::multiline::Joiner;

const STARTS: [&str; 4] = [r"^\d", r"^\S", r"^[A-Z]{2}", r"^$"];

/// Compiled once: compiling a regex per input would be most of the work.
fn starts() -> &'static [Regex] {
    static RES: std::sync::OnceLock<Vec<Regex>> = std::sync::OnceLock::new();
    RES.get_or_init(|| STARTS.iter().map(|s| Regex::new(s).unwrap()).collect())
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let start = starts()[(data[0] & 3) as usize].clone();
    let max_lines = 1 + ((data[0] >> 2) % 8) as usize;
    let bounded = data[1] & 0x80 != 0;
    let max_bytes = if bounded { 1 + (data[1] & 0x7f) as usize } else { usize::MAX / 2 };
    let wait = Duration::from_secs(1);
    let lines: Vec<&[u8]> = data[2..].split(|b| *b == b'\n').collect();

    let t0 = Instant::now();
    let mut now = t0;
    let mut j = Joiner::new(start.clone(), max_lines, wait, max_bytes);
    let mut entries: Vec<(Vec<u8>, u64)> = Vec::new();
    // (first line index, line count) of each entry, from the ends reported.
    let mut offset = 0u64;
    let mut ends: Vec<u64> = Vec::new();
    for l in &lines {
        let (a, b) = (offset, offset + l.len() as u64 + 1);
        ends.push(b);
        if l.first() == Some(&b'~') {
            now += wait;
            j.flush(now, false, |e, off| entries.push((e.to_vec(), off)));
        }
        j.push(l, a, b, now, |e, off| entries.push((e.to_vec(), off)));
        offset = b;
        let safe = j.safe_offset(offset);
        assert!(safe <= offset);
        let done = entries.last().map_or(0, |e| e.1);
        assert!(safe >= done, "safe offset {safe} behind an emitted entry's end {done}");
    }
    j.flush(now, true, |e, off| entries.push((e.to_vec(), off)));
    assert_eq!(j.safe_offset(offset), offset);

    // Map each entry back onto the input lines through its end offset.
    let mut first = 0usize;
    let mut previous_count = 0usize;
    let first_start = lines.iter().position(|l| start.is_match(l)).unwrap_or(lines.len());
    for (text, off) in &entries {
        let last = ends.iter().position(|e| e == off).expect("an entry ends where a line ends");
        assert!(last >= first, "entries out of order");
        let count = last - first + 1;
        assert!(count <= max_lines, "{count} lines in an entry, max {max_lines}");
        assert!(text.len() <= max_bytes, "{} bytes in an entry, max {max_bytes}", text.len());
        if first > 0 {
            let l = lines[first];
            assert!(
                start.is_match(l) || previous_count == max_lines || l.first() == Some(&b'~') || first <= first_start,
                "an entry began at a line that is no start line, with no cut and no wait"
            );
        }
        previous_count = count;
        if !bounded {
            let want: Vec<u8> = lines[first..=last].join(&b'\n');
            assert_eq!(text, &want, "an entry is its lines joined with \\n");
        }
        first = last + 1;
    }
    assert_eq!(first, lines.len(), "every line is in an entry");
});
