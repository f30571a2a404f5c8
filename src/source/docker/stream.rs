//! The body of `GET /containers/{id}/logs?timestamps=1`, message by message.
//!
//! A container without a TTY has two streams, multiplexed: each message is
//! one frame, an 8-byte header (stream: 1 stdout, 2 stderr; three zero
//! bytes; the payload's length, big-endian u32) then the payload. A TTY
//! container's log is one raw stream (stdout), a message per line. Either
//! way a payload is `<RFC 3339 time with ns> <message>`, the message ending
//! with `\n` unless Docker split a long line (the first parts of a line over
//! 16 KiB have none; the docker stage joins them).

/// Which stream a message came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// One message of a container's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub stream: Stream,
    /// Docker's time as it gave it (RFC 3339, up to nanoseconds).
    pub time: String,
    /// That time in Unix nanoseconds (None when it does not read).
    pub ts: Option<i64>,
    /// The message, with its `\n` when it ends a line.
    pub text: Vec<u8>,
}

impl Message {
    /// The message as a line of Docker's json-file log, which the `docker`
    /// stage reads: `{"log":...,"stream":...,"time":...}` (invalid UTF-8
    /// replaced, as Docker's json-file driver does).
    pub fn json_file_line(&self) -> String {
        let log = String::from_utf8_lossy(&self.text);
        serde_json::json!({ "log": log, "stream": self.stream.name(), "time": self.time }).to_string()
    }
}

/// The largest frame accepted: Docker's messages are at most 16 KiB plus
/// the time; anything far larger means the stream is not what it seems.
const MAX_FRAME: usize = 1 << 20;

/// Why a stream cannot be read further.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StreamError {
    #[error("a frame header names stream {0}, not stdout or stderr")]
    BadStream(u8),
    #[error("a frame of {0} bytes is over the 1 MiB a Docker log message can be")]
    TooLong(usize),
}

/// Splits a log body into messages; holds an unfinished frame or line.
#[derive(Debug, Default)]
pub struct Demux {
    tty: bool,
    buf: Vec<u8>,
}

impl Demux {
    pub fn new(tty: bool) -> Self {
        Self { tty, buf: Vec::new() }
    }

    /// Takes `chunk` of the body; returns the messages it completes.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<Message>, StreamError> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        let mut used = 0;
        if self.tty {
            while let Some(i) = memchr::memchr(b'\n', &self.buf[used..]) {
                out.push(parse(Stream::Stdout, &self.buf[used..used + i + 1]));
                used += i + 1;
            }
            if self.buf.len() - used > MAX_FRAME {
                // A line without end over the cap: passed on as it is.
                out.push(parse(Stream::Stdout, &self.buf[used..]));
                used = self.buf.len();
            }
        } else {
            while self.buf.len() - used >= 8 {
                let h = &self.buf[used..used + 8];
                let stream = match h[0] {
                    1 => Stream::Stdout,
                    2 => Stream::Stderr,
                    other => return Err(StreamError::BadStream(other)),
                };
                let len = u32::from_be_bytes([h[4], h[5], h[6], h[7]]) as usize;
                if len > MAX_FRAME {
                    return Err(StreamError::TooLong(len));
                }
                if self.buf.len() - used - 8 < len {
                    break;
                }
                out.push(parse(stream, &self.buf[used + 8..used + 8 + len]));
                used += 8 + len;
            }
        }
        self.buf.drain(..used);
        Ok(out)
    }
}

/// `<time> <message>` into a message (no time: the whole payload is the message).
fn parse(stream: Stream, payload: &[u8]) -> Message {
    let (time, text) = match memchr::memchr(b' ', payload) {
        Some(i) => (String::from_utf8_lossy(&payload[..i]).into_owned(), payload[i + 1..].to_vec()),
        None => (String::new(), payload.to_vec()),
    };
    let ts = chrono::DateTime::parse_from_rfc3339(&time).ok().and_then(|t| t.timestamp_nanos_opt());
    match ts {
        Some(_) => Message { stream, time, ts, text },
        None => Message { stream, time: String::new(), ts: None, text: payload.to_vec() },
    }
}

/// Unix nanoseconds as the Engine's `since` reads them: `seconds.nanoseconds`.
pub fn since_param(ns: i64) -> String {
    format!("{}.{:09}", ns.div_euclid(1_000_000_000), ns.rem_euclid(1_000_000_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(stream: u8, payload: &str) -> Vec<u8> {
        let mut f = vec![stream, 0, 0, 0];
        f.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        f.extend_from_slice(payload.as_bytes());
        f
    }

    #[test]
    fn frames_split_anywhere_give_whole_messages() {
        let mut body = frame(1, "2024-05-01T10:00:00.123456789Z hello\n");
        body.extend(frame(2, "2024-05-01T10:00:01Z oops\n"));
        body.extend(frame(1, "2024-05-01T10:00:02.5Z part"));
        for cut in 0..body.len() {
            let mut d = Demux::new(false);
            let mut got = d.push(&body[..cut]).unwrap();
            got.extend(d.push(&body[cut..]).unwrap());
            assert_eq!(got.len(), 3, "cut at {cut}");
            assert_eq!(got[0].stream, Stream::Stdout);
            assert_eq!(got[0].text, b"hello\n");
            assert_eq!(got[0].ts, Some(1_714_557_600_123_456_789));
            assert_eq!(got[1].stream, Stream::Stderr);
            assert_eq!(got[1].ts, Some(1_714_557_601_000_000_000));
            assert_eq!(got[2].text, b"part");
        }
        let line = Demux::new(false).push(&frame(1, "2024-05-01T10:00:00Z a\"b\n")).unwrap()[0].json_file_line();
        assert_eq!(line, r#"{"log":"a\"b\n","stream":"stdout","time":"2024-05-01T10:00:00Z"}"#);
    }

    #[test]
    fn a_tty_log_is_lines_and_a_bad_header_is_an_error() {
        let mut d = Demux::new(true);
        let got = d.push(b"2024-05-01T10:00:00Z one\r\n2024-05-01T10:00:01Z tw").unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].text, b"one\r\n");
        assert_eq!(d.push(b"o\n").unwrap()[0].text, b"two\n");
        assert_eq!(Demux::new(false).push(&frame(7, "x")), Err(StreamError::BadStream(7)));
        assert_eq!(since_param(1_714_557_600_000_000_005), "1714557600.000000005");
    }
}
