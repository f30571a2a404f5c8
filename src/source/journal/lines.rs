//! Reading journalctl's output and messages line by line, with a bound on
//! a line's length, in a way a timer may interrupt without losing bytes.

use std::sync::Arc;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};

use super::{NO_WATCH, STDERR_LINES_LOGGED, STDERR_LINE_CAP};

/// One line of a child's output.
pub(super) enum Line {
    /// A whole line is in the buffer (this many bytes read, newline included).
    Whole(usize),
    /// A line over the cap was skipped (this many bytes).
    TooLong(usize),
    /// The output ended (a last line without newline is dropped: cut off).
    End,
}

/// A line being read. Kept between calls of [`next_line`], so that a read
/// cut short (the source's timer for `multiline` blocks fired) goes on
/// where it was: nothing is lost at an `await`.
#[derive(Default)]
pub(super) struct LineBuf {
    /// The line so far (without its newline).
    pub(super) bytes: Vec<u8>,
    /// Bytes read for it, newline included.
    total: usize,
    /// Over the cap: skipped.
    over: bool,
    /// The last call returned it whole: the next one starts a new line.
    whole: bool,
}

/// Reads one line into `line`, holding at most `cap` bytes of it.
pub(super) async fn next_line(
    r: &mut (impl AsyncBufRead + Unpin),
    line: &mut LineBuf,
    cap: usize,
) -> std::io::Result<Line> {
    if std::mem::take(&mut line.whole) {
        line.bytes.clear();
        (line.total, line.over) = (0, false);
    }
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Ok(Line::End);
        }
        let (take, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i, true),
            None => (buf.len(), false),
        };
        if !line.over && line.bytes.len() + take <= cap {
            line.bytes.extend_from_slice(&buf[..take]);
        } else if !line.over {
            line.over = true;
            line.bytes.clear();
        }
        let used = if done { take + 1 } else { take };
        line.total += used;
        r.consume(used);
        if done {
            line.whole = true;
            return Ok(if line.over { Line::TooLong(line.total) } else { Line::Whole(line.total) });
        }
    }
}

/// Logs journalctl's messages; returns its last one, whether any concerned
/// the cursor (a refused `--after-cursor`), and whether it could not follow
/// for want of inotify watches (said by the reader, once).
pub(super) async fn collect_stderr(
    stderr: tokio::process::ChildStderr,
    name: Arc<str>,
) -> (Option<String>, bool, bool) {
    let mut r = BufReader::new(stderr);
    let mut line = LineBuf::default();
    let (mut last, mut cursor, mut no_watch, mut n) = (None, false, false, 0usize);
    while let Ok(Line::Whole(_) | Line::TooLong(_)) = next_line(&mut r, &mut line, STDERR_LINE_CAP).await {
        let text = String::from_utf8_lossy(&line.bytes).trim().to_string();
        if text.is_empty() {
            continue;
        }
        if text.to_ascii_lowercase().contains(NO_WATCH) {
            no_watch = true;
            tracing::debug!(source = %name, "journalctl: {text}");
            continue;
        }
        n += 1;
        if n <= STDERR_LINES_LOGGED {
            tracing::warn!(source = %name, "journalctl: {text}");
        } else {
            tracing::debug!(source = %name, "journalctl: {text}");
        }
        cursor |= text.to_ascii_lowercase().contains("cursor");
        last = Some(text);
    }
    (last, cursor, no_watch)
}

/// The inotify limits journalctl ran into, with their values and sysctl.
pub(super) fn no_watch_limits() -> String {
    let value = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/fs/inotify/{name}")).map_or("?".into(), |s| s.trim().to_string())
    };
    format!(
        "fs.inotify.max_user_instances = {}, fs.inotify.max_user_watches = {} (other programs of this user hold \
         them; raise them with sysctl -w and in /etc/sysctl.d/)",
        value("max_user_instances"),
        value("max_user_watches")
    )
}
