//! Every secret value the agent was given, so that any text it logs or
//! prints can be scrubbed of them, whoever wrote the text: a service that
//! echoes the `Authorization` header in its 401 body, a URL with a password
//! in an error message, a webhook URL in a library's error.
//!
//! Secrets are remembered when they are made ([`super::Secret::new`], secret
//! files, a password in a URL's userinfo, the Basic credentials as sent).
//! [`scrub`] replaces each with `<redacted>`; the log writer, command errors,
//! `check` output, `/ready`, `/status.json` and the bodies of refused
//! requests (before they are cut to their first KiB) go through it.
//!
//! A secret is found in every form it takes in output, not only as it is:
//! - escaped for JSON or by Rust's `Debug`, once or twice (`"` as `\"` or
//!   `\\\"`, `\` as `\\` or `\\\\`, `\u0022`), as the JSON log format and a
//!   service's JSON error bodies write it;
//! - percent-encoded (either case of hex digits, a space as `+`), as a
//!   service echoing a URL or a form writes it;
//! - escaped for HTML (`&quot;`, `&amp;`, `&#39;`...);
//! - any mix of these, character by character;
//! - cut: a piece of at least [`MIN_FRAGMENT`] bytes of a secret's start at
//!   the end of a text, or before `...`/`…` (where a text was cut), or of a
//!   secret's end or middle at the start of a text or after `...`/`…`.
//!
//! Text is best scrubbed before it is cut (so that no piece remains to
//! guess at), but a piece that reaches the scrubber is still caught.

use std::borrow::Cow;
use std::sync::RwLock;

/// Shorter values are not scrubbed: they would turn ordinary words into `<redacted>`.
const MIN_LEN: usize = 4;

/// A cut piece of a secret this long (in bytes of the secret) or longer is
/// scrubbed; shorter ones would match ordinary words and URLs.
pub const MIN_FRAGMENT: usize = 8;

/// What a cut text ends with, or a kept tail starts after.
const CUT_MARKERS: [&[u8]; 2] = [b"...", "…".as_bytes()];

/// One remembered secret, with the ways each of its bytes may be written.
struct Known {
    bytes: Vec<u8>,
    /// `spellings[j]`: how byte `j` may appear in output (see [`spellings`]).
    spellings: Vec<Vec<Vec<u8>>>,
    /// The bytes a spelling of the secret's first byte begins with, as a
    /// table and as a list.
    lead: [bool; 256],
    leads: Vec<u8>,
    /// `(byte, j)` for each byte `j` past the first where a tail of at least
    /// [`MIN_FRAGMENT`] bytes begins at a character's first byte, sorted: where a
    /// text cut at its start may resume the secret.
    tails: Vec<(u8, usize)>,
}

/// The first bytes of spellings other than the byte itself: `%`, `\`, `&`, `+`.
fn escape_lead(b: u8) -> bool {
    matches!(b, b'%' | b'\\' | b'&' | b'+')
}

static KNOWN: RwLock<Vec<Known>> = RwLock::new(Vec::new());

/// Remembers `value` as a secret.
pub fn remember(value: &str) {
    if value.len() < MIN_LEN {
        return;
    }
    if let Ok(mut k) = KNOWN.write() {
        if !k.iter().any(|s| s.bytes == value.as_bytes()) {
            let bytes = value.as_bytes().to_vec();
            let spellings: Vec<Vec<Vec<u8>>> = bytes.iter().map(|&b| spellings(b)).collect();
            let mut lead = [false; 256];
            for sp in &spellings[0] {
                lead[sp[0] as usize] = true;
            }
            let leads = (0..=255u8).filter(|&b| lead[b as usize]).collect();
            let mut tails: Vec<(u8, usize)> = (1..bytes.len().saturating_sub(MIN_FRAGMENT - 1))
                .filter(|&j| !(0x80..0xC0).contains(&bytes[j]))
                .map(|j| (bytes[j], j))
                .collect();
            tails.sort_unstable();
            k.push(Known { bytes, spellings, lead, leads, tails });
        }
    }
}

/// Remembers the credentials of HTTP Basic authentication, also as the
/// header value carries them (`base64(user:password)`), which a service may echo.
pub fn remember_basic(user: &str, password: &str) {
    remember(password);
    let encoded = super::base64(format!("{user}:{password}").as_bytes());
    // Also without its `=` padding: a service echoing the header may drop it.
    let unpadded = encoded.trim_end_matches('=').to_string();
    remember(&encoded);
    if unpadded.len() != encoded.len() {
        remember(&unpadded);
    }
}

/// The ways byte `b` of a secret is written by the encoders whose output the
/// agent may print: as it is; percent-encoded (`%2F`, `%2f`; `+` for a
/// space); escaped for JSON or `Debug`, once or twice (JSON of a `Debug`
/// string); JSON's `\u00XX` (Go's encoder writes `<`, `>` and `&` so); HTML.
fn spellings(b: u8) -> Vec<Vec<u8>> {
    const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";
    const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";
    let hi = (b >> 4) as usize;
    let lo = (b & 15) as usize;
    let mut out: Vec<Vec<u8>> = vec![vec![b], vec![b'%', HEX_UPPER[hi], HEX_UPPER[lo]]];
    out.push(vec![b'%', HEX_LOWER[hi], HEX_LOWER[lo]]);
    if b.is_ascii() && !b.is_ascii_alphanumeric() {
        out.push([&b"\\u00"[..], &[HEX_LOWER[hi], HEX_LOWER[lo]]].concat());
        out.push([&b"\\u00"[..], &[HEX_UPPER[hi], HEX_UPPER[lo]]].concat());
    }
    let extra: &[&[u8]] = match b {
        b' ' => &[b"+"],
        b'"' => &[b"\\\"", b"\\\\\\\"", b"&quot;", b"&#34;", b"&#x22;"],
        b'\\' => &[b"\\\\", b"\\\\\\\\"],
        b'\'' => &[b"\\'", b"&#39;", b"&#x27;", b"&apos;"],
        b'&' => &[b"&amp;"],
        b'<' => &[b"&lt;"],
        b'>' => &[b"&gt;"],
        b'\n' => &[b"\\n", b"\\\\n"],
        b'\r' => &[b"\\r", b"\\\\r"],
        b'\t' => &[b"\\t", b"\\\\t"],
        _ => &[],
    };
    out.extend(extra.iter().map(|e| e.to_vec()));
    out.dedup();
    out
}

/// True when `rest` (what follows a position) begins with a cut marker.
fn marker_at(rest: &[u8]) -> bool {
    CUT_MARKERS.iter().any(|m| rest.starts_with(m))
}

impl Known {
    /// Whether any spelling of byte `j` starts at `text[p..]`, and where each ends.
    fn step(&self, text: &[u8], p: usize, j: usize, next: &mut Vec<usize>) {
        for sp in &self.spellings[j] {
            if text[p..].starts_with(sp) && !next.contains(&(p + sp.len())) {
                next.push(p + sp.len());
            }
        }
    }

    /// Where `text` is cut at `p`, with byte `j` of the secret due next:
    /// the end of the text or a cut marker, perhaps after the beginning of a
    /// spelling of byte `j` (a cut inside `\"`). The end of what to redact.
    fn cut_end(&self, text: &[u8], p: usize, j: usize) -> Option<usize> {
        let rest = &text[p..];
        for h in 0..=rest.len().min(MIN_FRAGMENT) {
            let cut_here = h == rest.len() || marker_at(&rest[h..]);
            if !cut_here {
                continue;
            }
            let partial = h == 0 || self.spellings[j].iter().any(|sp| sp.len() > h && sp.starts_with(&rest[..h]));
            if partial {
                return Some(p + h);
            }
        }
        None
    }

    /// Where a spelling of the secret's bytes from `from` on, starting at
    /// `text[at..]`, ends: the whole rest of the secret, or a piece of at
    /// least [`MIN_FRAGMENT`] bytes of it that runs into a cut.
    fn run(&self, text: &[u8], at: usize, from: usize) -> Option<usize> {
        // Most tries end at the first or second byte: decided before anything is allocated.
        let begins = |p: usize, j: usize| self.spellings[j].iter().any(|sp| text[p..].starts_with(sp));
        let two = from + 1 < self.bytes.len()
            && self.spellings[from].iter().any(|sp| text[at..].starts_with(sp) && begins(at + sp.len(), from + 1));
        if !two {
            return None;
        }
        let mut states = Vec::new();
        self.step(text, at, from, &mut states);
        if states.is_empty() {
            return None;
        }
        let mut cut: Option<usize> = None;
        for j in from + 1..self.bytes.len() {
            if j - from >= MIN_FRAGMENT {
                for &p in &states {
                    if let Some(end) = self.cut_end(text, p, j) {
                        cut = Some(cut.map_or(end, |c| c.max(end)));
                    }
                }
            }
            let mut next = Vec::new();
            for &p in &states {
                self.step(text, p, j, &mut next);
            }
            if next.is_empty() {
                return cut;
            }
            states = next;
        }
        if from == 0 || self.bytes.len() - from >= MIN_FRAGMENT {
            states.into_iter().max()
        } else {
            cut
        }
    }
}

/// Where a kept tail of a cut text may start: its beginning and after each cut marker.
fn cut_starts(text: &[u8]) -> Vec<usize> {
    let mut starts = vec![0];
    for i in memchr::memchr2_iter(CUT_MARKERS[0][0], CUT_MARKERS[1][0], text) {
        for m in CUT_MARKERS {
            if text[i..].starts_with(m) {
                starts.push(i + m.len());
            }
        }
    }
    starts.sort_unstable();
    starts.dedup();
    starts
}

/// `text` with every remembered secret, in any of its forms (see the module
/// docs), replaced by `<redacted>`.
pub fn scrub(text: &str) -> Cow<'_, str> {
    let Ok(known) = KNOWN.read() else { return Cow::Borrowed(text) };
    if known.is_empty() {
        return Cow::Borrowed(text);
    }
    let t = text.as_bytes();
    let starts = cut_starts(t);
    let mut found: Vec<(usize, usize)> = Vec::new();
    for k in known.iter() {
        // Where a spelling of the secret may begin: a byte that begins a
        // spelling of its first byte (found fast), or a cut.
        let mut at: Vec<usize> = match k.leads[..] {
            [a] => memchr::memchr_iter(a, t).collect(),
            [a, b] => memchr::memchr2_iter(a, b, t).collect(),
            [a, b, c] => memchr::memchr3_iter(a, b, c, t).collect(),
            _ => (0..t.len()).collect(),
        };
        at.extend(starts.iter().filter(|&&s| s < t.len()));
        at.sort_unstable();
        at.dedup();
        // Bytes before this are in a range already found for this secret.
        let mut free = 0;
        for i in at {
            if i < free {
                continue;
            }
            let c = t[i];
            let mut end = if k.lead[c as usize] { k.run(t, i, 0) } else { None };
            if end.is_none() && starts.binary_search(&i).is_ok() {
                // A tail of the secret (or a middle, running into a cut) where a text was cut:
                // tried from each byte of the secret a spelling of which may begin here.
                let tails = if escape_lead(c) {
                    &k.tails[..]
                } else {
                    let from = k.tails.partition_point(|&(b, _)| b < c);
                    let to = k.tails.partition_point(|&(b, _)| b <= c);
                    &k.tails[from..to]
                };
                let mut from: Vec<usize> = tails.iter().map(|&(_, j)| j).collect();
                // The longest tail first.
                from.sort_unstable();
                end = from.into_iter().find_map(|from| k.run(t, i, from));
            }
            if let Some(e) = end.filter(|&e| e > i) {
                found.push((i, e));
                free = e;
            }
        }
    }
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    found.sort_unstable();
    let mut out = String::with_capacity(text.len());
    // The end of the last range replaced; a range that overlaps or touches it makes it longer.
    let mut done: Option<usize> = None;
    for (start, end) in found {
        let (start, end) = (floor_char(text, start), ceil_char(text, end));
        match done {
            Some(d) if end <= d => continue,
            Some(d) if start <= d => {}
            _ => {
                out.push_str(&text[done.unwrap_or(0)..start]);
                out.push_str("<redacted>");
            }
        }
        done = Some(end);
    }
    let done = done.unwrap_or(0);
    out.push_str(&text[done..]);
    Cow::Owned(out)
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_values_are_scrubbed_wherever_they_appear() {
        remember("s3cr3t-token-value");
        remember("abc");
        let text = "401 from http://u:s3cr3t-token-value@h/: bad credentials: Bearer s3cr3t-token-value (abc)";
        assert_eq!(scrub(text), "401 from http://u:<redacted>@h/: bad credentials: Bearer <redacted> (abc)");
        assert!(matches!(scrub("nothing secret"), Cow::Borrowed(_)));
    }

    #[test]
    fn escaped_and_encoded_forms_are_scrubbed() {
        let secret = r#"q"u\o te&d<x>'y z/9"#;
        remember(secret);
        let json = serde_json::to_string(secret).unwrap();
        let json = &json[1..json.len() - 1];
        let debug = format!("{secret:?}");
        let debug = &debug[1..debug.len() - 1];
        let json_of_debug = serde_json::to_string(debug).unwrap();
        let json_of_debug = &json_of_debug[1..json_of_debug.len() - 1];
        let url: String = secret
            .bytes()
            .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
            .collect();
        let form: String = secret
            .bytes()
            .map(|b| match b {
                b' ' => "+".to_string(),
                b if b.is_ascii_alphanumeric() => (b as char).to_string(),
                b => format!("%{b:02x}"),
            })
            .collect();
        let html = secret.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;").replace('>', "&gt;");
        let go_json = json.replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026");
        for form in [secret, json, debug, json_of_debug, &url, &form, &html, &go_json] {
            let text = format!("{{\"msg\":\"bad token {form} here\"}}");
            assert_eq!(scrub(&text), "{\"msg\":\"bad token <redacted> here\"}", "{form}");
        }
    }

    #[test]
    fn a_piece_of_a_secret_at_a_cut_is_scrubbed_at_every_length_from_8() {
        let secret = "TOKEN-cut-0123456789abcdefghijklmnopqrstu";
        remember(secret);
        for n in MIN_FRAGMENT..secret.len() {
            let piece = &secret[..n];
            for text in [format!("Bearer {piece}"), format!("x: Bearer {piece}... (more)")] {
                let clean = scrub(&text);
                assert!(clean.contains("Bearer <redacted>"), "{n}: {clean}");
                assert!(!clean.contains(&secret[..MIN_FRAGMENT]), "{n}: {clean}");
            }
            let tail = &secret[secret.len() - n..];
            for text in [tail.to_string(), format!("...{tail} and more"), format!("…{tail}")] {
                assert!(!scrub(&text).contains(&tail[tail.len() - MIN_FRAGMENT..]), "{n}: {}", scrub(&text));
            }
        }
        // Escaped, then cut inside an escape.
        remember(r#"esc"ape\d-sec"ret-value"#);
        assert_eq!(scrub(r#"token esc\"ape\\d-se"#), "token <redacted>");
        assert_eq!(scrub(r#"token esc\"ape\\d-sec\"#), "token <redacted>");
        assert_eq!(scrub(r#"{"m":"token esc\\\"ape\\\\d-sec\\..."}"#), r#"{"m":"token <redacted>..."}"#);
        // Shorter pieces, and pieces in the middle of a text, are ordinary words.
        assert_eq!(scrub("TOKEN-c..."), "TOKEN-c...");
        assert_eq!(scrub("the TOKEN-cut-0 and more"), "the TOKEN-cut-0 and more");
    }

    #[test]
    fn overlapping_secrets_and_multibyte_text_stay_whole() {
        remember("pässwörd-überall");
        remember("wörd-überall-und-mehr");
        let text = "é pässwörd-überall-und-mehr ü";
        assert_eq!(scrub(text), "é <redacted> ü");
        assert_eq!(scrub("日本 pässwörd-üb"), "日本 <redacted>");
    }
}
