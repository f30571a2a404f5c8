//! The line splitter against a model: the same bytes fed in random pieces must
//! give exactly the lines (`\r\n` trimmed, then cut to `max_line_bytes` on a
//! character boundary), file
//! offsets and truncation count of splitting the whole input at once.
//!
//! Input: byte 0 picks `max_line_bytes` (1 to 32, so long lines are common),
//! byte 1 the start offset and whether the partial last line is flushed,
//! byte 2 seeds the piece sizes; the rest is the data.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tailship::source::lines::LineSplitter;

fn trim_cr(l: &[u8]) -> &[u8] {
    l.strip_suffix(b"\r").unwrap_or(l)
}

/// The model's cut: `max` bytes, less the start of a UTF-8 character that
/// would be split (up to 3 continuation bytes).
fn cut(line: &[u8], max: usize) -> &[u8] {
    if line.len() <= max {
        return line;
    }
    let split = line[max.saturating_sub(3)..=max].iter().rev().take_while(|b| *b & 0xC0 == 0x80).count();
    &line[..max - split.min(3).min(max)]
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let max = 1 + (data[0] % 32) as usize;
    let start = u64::from(data[1] >> 1) * 1000;
    let flush = data[1] & 1 == 1;
    let mut seed = u32::from(data[2]) | 1;
    let input = &data[3..];

    // The model: split everything at once.
    let mut expected: Vec<(Vec<u8>, u64, u64)> = Vec::new();
    let mut truncated = 0u64;
    let mut pos = 0usize;
    let mut model_line = |raw: &[u8], a: usize, b: usize, out: &mut Vec<(Vec<u8>, u64, u64)>| {
        let line = trim_cr(raw);
        if line.len() > max {
            truncated += 1;
        }
        out.push((cut(line, max).to_vec(), start + a as u64, start + b as u64));
    };
    for (i, b) in input.iter().enumerate() {
        if *b == b'\n' {
            model_line(&input[pos..i], pos, i + 1, &mut expected);
            pos = i + 1;
        }
    }
    if flush && pos < input.len() {
        model_line(&input[pos..], pos, input.len(), &mut expected);
    }

    // The splitter, fed in pieces.
    let mut s = LineSplitter::new(start, max);
    let mut got: Vec<(Vec<u8>, u64, u64)> = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let n = 1 + (seed >> 16) as usize % (2 * max + 3);
        let (piece, tail) = rest.split_at(n.min(rest.len()));
        s.feed(piece, |l, a, b| got.push((l.to_vec(), a, b)));
        rest = tail;
    }
    if flush {
        s.flush(|l, a, b| got.push((l.to_vec(), a, b)));
    }
    assert_eq!(got, expected, "lines and offsets (max_line_bytes {max})");
    assert_eq!(s.truncated, truncated, "truncated count (max_line_bytes {max})");
    let end = got.last().map_or(start, |l| l.2);
    assert_eq!(s.consumed(), end);
    assert_eq!(s.has_partial(), !flush && pos < input.len());
});
