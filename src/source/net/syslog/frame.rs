//! Syslog over a stream: octet counting (`<len> <message>`, RFC 6587) or
//! newline framing, told apart per message by its first byte. A message
//! over the size limit is cut there (the rest is skipped) and flagged.

/// Splits a byte stream into messages.
pub struct Framer {
    buf: Vec<u8>,
    max: usize,
    /// Bytes of an octet-counted message past the limit, still to skip.
    skip: usize,
    /// Skipping the rest of a newline-framed message past the limit.
    skip_line: bool,
}

impl Framer {
    pub fn new(max: usize) -> Self {
        Self { buf: Vec::new(), max, skip: 0, skip_line: false }
    }

    /// Adds `data`; calls `out(message, truncated)` for each whole message.
    pub fn feed(&mut self, data: &[u8], out: &mut impl FnMut(&[u8], bool)) {
        self.buf.extend_from_slice(data);
        let mut at = 0;
        loop {
            let rest = &self.buf[at..];
            if self.skip > 0 {
                let n = self.skip.min(rest.len());
                self.skip -= n;
                at += n;
                if self.skip > 0 {
                    break;
                }
                continue;
            }
            if self.skip_line {
                match memchr::memchr(b'\n', rest) {
                    Some(i) => {
                        at += i + 1;
                        self.skip_line = false;
                        continue;
                    }
                    None => {
                        at += rest.len();
                        break;
                    }
                }
            }
            let lead = rest.iter().take_while(|b| matches!(b, b'\n' | b'\r' | b'\0')).count();
            if lead > 0 {
                at += lead;
                continue;
            }
            if rest.is_empty() {
                break;
            }
            if let Some((len, header)) = octet_count(rest) {
                let body = &rest[header..];
                if len > self.max {
                    if body.len() < self.max {
                        break;
                    }
                    out(&body[..self.max], true);
                    self.skip = len - self.max;
                    at += header + self.max;
                    continue;
                }
                if body.len() < len {
                    break;
                }
                out(&body[..len], false);
                at += header + len;
                continue;
            }
            if rest[0].is_ascii_digit() && rest.len() < 10 && !rest.contains(&b' ') {
                break; // maybe an octet count not whole yet
            }
            match memchr::memchr(b'\n', rest) {
                Some(i) if i <= self.max => {
                    out(&rest[..i], false);
                    at += i + 1;
                }
                _ if rest.len() > self.max => {
                    out(&rest[..self.max], true);
                    at += self.max;
                    self.skip_line = true;
                }
                _ => break,
            }
        }
        self.buf.drain(..at);
        // A long message gone leaves no large buffer behind.
        if self.buf.capacity() > 128 << 10 && self.buf.len() < self.buf.capacity() / 4 {
            self.buf.shrink_to(self.buf.len().max(64 << 10));
        }
    }

    /// Bytes held of messages not whole yet.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// The stream ended: a last message without its newline is whole.
    pub fn finish(&mut self, out: &mut impl FnMut(&[u8], bool)) {
        if !self.buf.is_empty() && self.skip == 0 && !self.skip_line {
            let rest = std::mem::take(&mut self.buf);
            // An octet-counted message cut short by the end is kept, flagged as cut.
            let (rest, short) = match octet_count(&rest) {
                Some((len, header)) => (&rest[header..], rest.len() - header < len),
                None => (&rest[..], false),
            };
            if !rest.iter().all(|b| b.is_ascii_whitespace() || *b == 0) {
                out(&rest[..rest.len().min(self.max)], short || rest.len() > self.max);
            }
        }
        self.buf.clear();
    }
}

/// `<digits> ` at the start: the message length and the header's length.
fn octet_count(s: &[u8]) -> Option<(usize, usize)> {
    let digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 9 || s.get(digits) != Some(&b' ') || s[0] == b'0' {
        return None;
    }
    let len: usize = std::str::from_utf8(&s[..digits]).ok()?.parse().ok()?;
    Some((len, digits + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(chunks: &[&[u8]], max: usize) -> Vec<(String, bool)> {
        let mut f = Framer::new(max);
        let mut got = Vec::new();
        let mut out = |m: &[u8], t: bool| got.push((String::from_utf8_lossy(m).into_owned(), t));
        for c in chunks {
            f.feed(c, &mut out);
        }
        f.finish(&mut out);
        got
    }

    #[test]
    fn octet_counting_and_newlines_split_anywhere() {
        let stream = b"11 <13>1 - - x\n<13>hello\n5 abcde<14>last";
        for cut in 0..stream.len() {
            let got = frames(&[&stream[..cut], &stream[cut..]], 100);
            let texts: Vec<&str> = got.iter().map(|(t, _)| t.as_str()).collect();
            assert_eq!(texts, ["<13>1 - - x", "<13>hello", "abcde", "<14>last"], "cut at {cut}");
        }
    }

    #[test]
    fn messages_over_the_limit_are_cut_and_flagged_and_the_stream_goes_on() {
        let got = frames(&[b"20 aaaaaaaaaaaaaaaaaaaa3 bcd", b"xxxxxxxxxxxxxxxx\nok\n"], 8);
        assert_eq!(
            got,
            [("aaaaaaaa".into(), true), ("bcd".into(), false), ("xxxxxxxx".into(), true), ("ok".into(), false)]
        );
    }
}
#[cfg(test)]
mod more {
    #[test]
    fn many_octet_counted_messages_in_pieces() {
        let mut stream = Vec::new();
        for i in 0..300 {
            let msg = format!("<13>1 - h app - - - blocked {i} {}", "z".repeat(100));
            stream.extend_from_slice(format!("{} {msg}", msg.len()).as_bytes());
        }
        for piece in [1usize, 7, 100, 4096] {
            let mut f = super::Framer::new(8 << 20);
            let mut n = 0;
            for c in stream.chunks(piece) {
                f.feed(c, &mut |_m: &[u8], _t| n += 1);
            }
            assert_eq!(n, 300, "pieces of {piece}");
        }
    }
}
