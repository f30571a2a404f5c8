//! The push body decoder: Content-Encoding (first byte: none, gzip, deflate),
//! bounded decompression, JSON shape, then validation. Any input either decodes
//! or is refused with an error; a decoded body never exceeds the bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tailship::receive::push;

const MAX: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, body)) = data.split_first() else { return };
    let encoding = match kind % 3 {
        0 => None,
        1 => Some("gzip"),
        _ => Some("deflate"),
    };
    let Ok(json) = push::decode(body, encoding, MAX) else { return };
    assert!(json.len() <= MAX, "decoded {} bytes past the bound", json.len());
    let Ok(parsed) = push::parse(&json) else { return };
    if let Ok(valid) = push::validate(&parsed) {
        for s in &valid.streams {
            assert!(!s.labels.is_empty());
            for (_, line) in &s.entries {
                assert!(line.len() <= push::MAX_LINE_BYTES);
            }
        }
    }
});
