//! JSON string escaping for push bodies: each line is measured when it is
//! batched and escaped once, straight into the push body, when it is sent.

/// Escapes `s` as the inside of a JSON string (no quotes) onto `out`.
/// Only `"`, `\` and control characters need escaping. The search for the
/// next such byte looks at 16 bytes at a time (SSE2 on x86_64, 8 bytes as
/// integers elsewhere), so a line without any (the usual case) is one scan
/// and one copy.
pub fn escape_json_into(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len());
    let mut start = 0;
    while let Some(i) = find_escape(bytes, start) {
        out.extend_from_slice(&bytes[start..i]);
        let b = bytes[i];
        match ESCAPE[b as usize] {
            b'u' => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(b >> 4) as usize], HEX[(b & 0xf) as usize]]);
            }
            esc => out.extend_from_slice(&[b'\\', esc]),
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

/// The length of `s` escaped by [`escape_json_into`], without writing it.
pub fn escaped_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    let mut n = bytes.len();
    let mut from = 0;
    while let Some(i) = find_escape(bytes, from) {
        n += if ESCAPE[bytes[i] as usize] == b'u' { 5 } else { 1 };
        from = i + 1;
    }
    n
}

/// The index of the first byte at or after `from` that JSON needs escaped.
#[cfg(target_arch = "x86_64")]
#[inline]
fn find_escape(b: &[u8], from: usize) -> Option<usize> {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    if b.len() < 16 {
        return b[from.min(b.len())..].iter().position(|&c| ESCAPE[c as usize] != 0).map(|p| p + from);
    }
    // SAFETY: SSE2 is part of the x86_64 baseline, so these intrinsics are
    // always available; every load reads 16 bytes at `i` or `b.len() - 16`,
    // both with `b.len() >= 16` and `i + 16 <= b.len()`, so inside `b`.
    unsafe {
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        let below_space = _mm_set1_epi8(0x1f);
        let mask_at = |i: usize| {
            let v = _mm_loadu_si128(b.as_ptr().add(i) as *const __m128i);
            // A byte is a control character when min(byte, 0x1f) == byte (unsigned).
            let ctl = _mm_cmpeq_epi8(_mm_min_epu8(v, below_space), v);
            let special = _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash));
            _mm_movemask_epi8(_mm_or_si128(ctl, special)) as u32
        };
        let mut i = from;
        while i + 16 <= b.len() {
            let m = mask_at(i);
            if m != 0 {
                return Some(i + m.trailing_zeros() as usize);
            }
            i += 16;
        }
        if i < b.len() {
            // The last 16 bytes, overlapping what was checked: skip the bytes before `i`.
            let last = b.len() - 16;
            let m = mask_at(last) >> (i - last);
            if m != 0 {
                return Some(i + m.trailing_zeros() as usize);
            }
        }
    }
    None
}

/// The index of the first byte at or after `from` that JSON needs escaped.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn find_escape(b: &[u8], from: usize) -> Option<usize> {
    find_escape_swar(b, from)
}

/// [`find_escape`] for any target: eight bytes at a time as one integer.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline]
fn find_escape_swar(b: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i + 8 <= b.len() {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[i..i + 8]);
        if needs_escape(u64::from_le_bytes(w)) {
            break;
        }
        i += 8;
    }
    b[i.min(b.len())..].iter().position(|&c| ESCAPE[c as usize] != 0).map(|p| p + i)
}

/// True when any byte of `w` is below 0x20, a `"` or a `\`.
#[inline]
fn needs_escape(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    (below_space | zero_byte(w ^ (ONES * b'"' as u64)) | zero_byte(w ^ (ONES * b'\\' as u64))) != 0
}

/// For each byte: 0 to copy as is, else the letter of its escape (`u` for `\u00XX`).
static ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[b'\n' as usize] = b'n';
    t[b'\r' as usize] = b'r';
    t[b'\t' as usize] = b't';
    t[0x08] = b'b';
    t[0x0c] = b'f';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_matches_serde_json() {
        for s in [
            "plain",
            "quote \" and \\ back",
            "ctl \u{1}\u{1f}\n\r\t\u{8}\u{c}",
            "üñí €",
            "",
            "a long line of plain text with a \" late quote",
            "\u{7f}\u{80} eight by\\tes\u{0}",
            "exactly8",
            "1234567\"",
        ] {
            let mut out = Vec::new();
            escape_json_into(&mut out, s);
            let ours = format!("\"{}\"", String::from_utf8(out).unwrap());
            let back: String = serde_json::from_str(&ours).unwrap();
            assert_eq!(back, s);
        }
    }

    #[test]
    fn escaping_random_strings_round_trips() {
        let alphabet = ['a', ' ', '"', '\\', '\n', '\u{1}', '\u{1f}', 'é', '€', '\u{7f}', 'z', '/'];
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 100) as usize;
            let s: String = (0..len).map(|k| alphabet[((x >> (k % 60)) as usize + k * 7) % alphabet.len()]).collect();
            let mut out = Vec::new();
            escape_json_into(&mut out, &s);
            assert_eq!(escaped_len(&s), out.len(), "{s:?}");
            let back: String = serde_json::from_str(&format!("\"{}\"", String::from_utf8(out).unwrap())).unwrap();
            assert_eq!(back, s);
        }
    }

    #[test]
    fn both_escape_searches_find_the_first_byte_to_escape() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 70) as usize;
            let mut b: Vec<u8> = (0..len).map(|k| b'a' + ((x >> (k % 50)) as u8 % 26)).collect();
            if len > 0 && x % 3 != 0 {
                let at = (x >> 20) as usize % len;
                b[at] = [b'"', b'\\', 0, 0x1f, b'\n', 0x7f, 0x80, 0xff][(x >> 40) as usize % 8];
            }
            let from = if len > 0 { (x >> 30) as usize % (len + 1) } else { 0 };
            let naive = b[from..].iter().position(|&c| c < 0x20 || c == b'"' || c == b'\\').map(|p| p + from);
            assert_eq!(find_escape(&b, from), naive, "{b:?} from {from}");
            assert_eq!(find_escape_swar(&b, from), naive, "{b:?} from {from}");
        }
    }
}
