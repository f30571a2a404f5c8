//! `tailship top`'s views of a [`Report`]: one plain-text snapshot (stdout
//! is not a terminal) and a full-screen frame (ratatui). Both list the files
//! most behind first. Names and messages come from the agent's host and may
//! hold control characters: they are shown escaped, never sent raw to a terminal.

use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Gauge, Paragraph, Row, Sparkline, Table};
use ratatui::Frame;

use super::report::Report;

/// `s` with control characters escaped (`\n`, `\u{1b}`), safe to print on a terminal.
pub use crate::util::escape_controls as clean;

/// Bytes with a binary unit: `512 B`, `1.5 KiB`.
pub fn bytes(n: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let (mut v, mut i) = (n, 0);
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} {}", UNITS[0])
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

/// A rate, short: `0.5`, `42`, `1.6k`, `2.0M`.
pub fn rate(n: f64) -> String {
    if n >= 1e6 {
        format!("{:.1}M", n / 1e6)
    } else if n >= 1e3 {
        format!("{:.1}k", n / 1e3)
    } else if n >= 10.0 {
        format!("{n:.0}")
    } else {
        format!("{n:.1}")
    }
}

/// How long before `now_ms` `at_ms` was: `5s`, `3m 2s`, `1h 4m`.
pub fn ago(at_ms: u64, now_ms: u64) -> String {
    let s = now_ms.saturating_sub(at_ms) / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {}s", s / 60, s % 60),
        _ => format!("{}h {}m", s / 3600, (s % 3600) / 60),
    }
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| if v < 10.0 { format!("{v:.1}") } else { format!("{v:.0}") })
}

/// The summary above the files: version, readiness, throughput, push, queue, positions, alerts.
fn summary(r: &Report) -> Vec<(String, bool)> {
    let (read_lines, read_bytes) = r.sources.iter().fold((0.0, 0.0), |a, s| (a.0 + s.lines_per_s, a.1 + s.bytes_per_s));
    let p = &r.push;
    let q = &r.queue;
    let ready = match &r.not_ready {
        None => "ready".to_string(),
        Some(why) => format!("NOT READY: {}", clean(why)),
    };
    let mut out = vec![
        (
            format!("tailship {} · up {} · {ready}", clean(&r.version), ago(r.started_ms, r.now_ms)),
            r.not_ready.is_some(),
        ),
        (
            format!(
                "read {} lines/s ({}/s) · pushed {} lines/s ({}/s), {} lines in all",
                rate(read_lines),
                bytes(read_bytes),
                rate(p.lines_per_s),
                bytes(p.bytes_per_s),
                p.lines_total
            ),
            false,
        ),
        (
            format!(
                "push: {} requests, {} failed, {} retries · latency p50 {} ms, p99 {} ms",
                p.requests,
                p.failures,
                p.retries,
                ms(p.latency_p50_ms),
                ms(p.latency_p99_ms)
            ),
            false,
        ),
        (
            format!(
                "queue {} of {} · {} batches in flight · positions written {}",
                bytes(q.bytes_used as f64),
                bytes(q.bytes_max as f64),
                q.batches_in_flight,
                r.positions.written_ms.map_or("not yet".into(), |t| format!("{} ago", ago(t, r.now_ms)))
            ),
            false,
        ),
    ];
    if let Some(e) = &p.last_error {
        out.push((format!("last push error ({} ago): {}", ago(e.at_ms, r.now_ms), clean(&e.message)), true));
    }
    // Several clients: a line each, the failing ones highlighted.
    if r.clients.len() > 1 {
        for c in &r.clients {
            let (q, p) = (&c.queue, &c.push);
            let state = c.not_ready.as_deref().map_or("ok".to_string(), clean);
            out.push((
                format!(
                    "client {}: pushed {} lines/s, {} in all · queue {} · oldest unacknowledged {} s · {}",
                    clean(&c.name),
                    rate(p.lines_per_s),
                    p.lines_total,
                    bytes(q.bytes_used as f64),
                    q.oldest_unacknowledged_s,
                    state
                ),
                c.not_ready.is_some(),
            ));
        }
    }
    for l in &r.listeners {
        let refused: u64 = l.refused.values().sum();
        let why = if refused == 0 {
            String::new()
        } else {
            let reasons: Vec<String> = l.refused.iter().map(|(k, v)| format!("{} {v}", clean(k))).collect();
            format!(" ({})", reasons.join(", "))
        };
        out.push((
            format!(
                "listener {} ({} {} {}): {} connections · {} lines received · {refused} refused{why} · spool {}",
                clean(&l.name),
                clean(&l.kind),
                clean(&l.protocol),
                clean(&l.address),
                l.connections,
                l.lines_received,
                bytes(l.spool_bytes as f64)
            ),
            refused > 0,
        ));
    }
    for a in &r.alerts {
        let last = a.last_send.as_ref().map_or("never sent".to_string(), |s| match &s.error {
            None => format!("last sent {} {} ago", s.state, ago(s.at_ms, r.now_ms)),
            Some(e) => format!("last send {} FAILED {} ago: {}", s.state, ago(s.at_ms, r.now_ms), clean(e)),
        });
        let failed = a.last_send.as_ref().is_some_and(|s| s.error.is_some());
        let n = a.open_groups.len();
        let groups = if n == 1 { "1 open group".to_string() } else { format!("{n} open groups") };
        out.push((format!("alert {}: {groups} · {last}", clean(&a.rule)), failed));
    }
    out
}

/// A file more than this behind is highlighted (less is just lines in flight).
const BEHIND: u64 = 256 << 10;

const HEADER: [&str; 7] = ["LAG", "SIZE", "LINES/S", "BYTES/S", "STATE", "SOURCE", "FILE"];
/// The file column (the last).
const FILE: usize = 6;
/// Columns that give way, in this order, when the terminal is too narrow
/// for them and [`MIN_FILE`] characters of the file column: BYTES/S, SIZE, LINES/S.
const GIVE_WAY: [usize; 3] = [3, 1, 2];
const MIN_FILE: usize = 24;

/// The file column of `f`: what it is the log of (a container, a pod) and
/// its path, or its path alone.
fn file_label(f: &crate::status::report::FileReport) -> String {
    match &f.target {
        Some(t) => format!("{}  {}", clean(t), clean(&f.path)),
        None => clean(&f.path),
    }
}

/// The file column of `f` in `width` characters: a name is kept whole as far
/// as it fits and a path loses its start (its end names the file).
fn file_cell(f: &crate::status::report::FileReport, width: usize) -> String {
    let path = clean(&f.path);
    let Some(t) = &f.target else { return shorten_left(&path, width) };
    let t = clean(t);
    let n = t.chars().count();
    if n >= width {
        return t.chars().take(width).collect();
    }
    let left = width - n - 2;
    if left < 8 {
        t
    } else {
        format!("{t}  {}", shorten_left(&path, left))
    }
}

/// `s` in at most `width` characters: its end, after `…`.
fn shorten_left(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let tail: String = s.chars().skip(n - (width - 1)).collect();
    format!("…{tail}")
}

/// The columns shown in a terminal `width` wide, with their widths: each as
/// wide as its widest cell; the file column takes the rest (see [`GIVE_WAY`]).
fn fit(rows: &[[String; 7]], width: usize) -> Vec<(usize, usize)> {
    let natural: Vec<usize> = (0..HEADER.len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).chain([HEADER[i].len()]).max().unwrap_or(0))
        .collect();
    let mut cols: Vec<usize> = (0..HEADER.len()).collect();
    // Each column but the file's takes its width and a space between.
    let used = |cols: &[usize]| cols.iter().filter(|&&c| c != FILE).map(|&c| natural[c] + 1).sum::<usize>();
    for drop in GIVE_WAY {
        if used(&cols) + MIN_FILE <= width {
            break;
        }
        cols.retain(|&c| c != drop);
    }
    let file = width.saturating_sub(used(&cols)).max(HEADER[FILE].len());
    cols.into_iter().map(|c| (c, if c == FILE { file } else { natural[c] })).collect()
}

/// The file table's rows, most behind first, as text cells.
fn file_rows(r: &Report) -> Vec<[String; 7]> {
    r.files_by_lag()
        .into_iter()
        .map(|(s, f)| {
            [
                bytes(f.lag_bytes as f64),
                bytes(f.size as f64),
                rate(f.lines_per_s),
                format!("{}/s", bytes(f.bytes_per_s)),
                f.state.as_str().to_string(),
                clean(&s.name),
                file_label(f),
            ]
        })
        .collect()
}

/// One plain snapshot, for a pipe or a file.
pub fn plain(r: &Report) -> String {
    let mut out = String::new();
    for (line, _) in summary(r) {
        out.push_str(&line);
        out.push('\n');
    }
    out.push('\n');
    let rows = file_rows(r);
    let mut widths: Vec<usize> = HEADER.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut line = |cells: &[&str]| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                l.push_str(c);
            } else {
                l.push_str(&format!("{c:<w$}  ", w = widths[i]));
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&HEADER);
    for row in &rows {
        line(&row.iter().map(String::as_str).collect::<Vec<_>>());
    }
    if rows.is_empty() {
        out.push_str("(no files)\n");
    }
    out
}

/// The full-screen view: the summary, the queue's fill, the read rate over
/// the polls so far (`history`, lines/s, oldest first), the files. `error`
/// says why the last poll failed.
pub fn draw(frame: &mut Frame, url: &str, report: Option<&Report>, error: Option<&str>, history: &[u64]) {
    let lines: Vec<(String, bool)> = match report {
        Some(r) => summary(r),
        None => vec![(format!("waiting for {}", clean(url)), false)],
    };
    let mut text: Vec<Line> = lines
        .iter()
        .map(|(l, bad)| {
            let style =
                if *bad { Style::default().fg(Color::Red).add_modifier(Modifier::BOLD) } else { Style::default() };
            Line::from(Span::styled(l.clone(), style))
        })
        .collect();
    if let Some(e) = error {
        let style = Style::default().fg(Color::White).bg(Color::Red);
        text.insert(0, Line::from(Span::styled(format!("cannot read {}: {}", clean(url), clean(e)), style)));
    }
    let [head, queue, chart, table, foot] = Layout::vertical([
        Constraint::Length(text.len() as u16 + 2),
        Constraint::Length(1),
        Constraint::Length(5),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    frame.render_widget(
        Paragraph::new(text).block(Block::default().borders(Borders::ALL).title(" tailship top ")),
        head,
    );
    if let Some(r) = report {
        let q = &r.queue;
        let fill = if q.bytes_max > 0 { (q.bytes_used as f64 / q.bytes_max as f64).clamp(0.0, 1.0) } else { 0.0 };
        let color = if fill >= 0.9 { Color::Red } else { Color::Blue };
        let label =
            format!("queue {:.0}% ({} of {})", fill * 100.0, bytes(q.bytes_used as f64), bytes(q.bytes_max as f64));
        frame.render_widget(Gauge::default().ratio(fill).label(label).gauge_style(Style::default().fg(color)), queue);
    }
    let peak = history.iter().copied().max().unwrap_or(0);
    let title = format!(" read lines/s, this session (peak {}) ", rate(peak as f64));
    let spark = Sparkline::default()
        .block(Block::default().borders(Borders::ALL).title(title))
        .data(history)
        .style(Style::default().fg(Color::Green));
    frame.render_widget(spark, chart);
    let rows = report.map(file_rows).unwrap_or_default();
    let files = report.map(|r| r.files_by_lag()).unwrap_or_default();
    // Inside the table's borders.
    let columns = fit(&rows, usize::from(table.width.saturating_sub(2)));
    let behind = Style::default().fg(Color::Yellow);
    let table_rows: Vec<Row> = rows
        .iter()
        .zip(&files)
        .map(|(cells, (_, f))| {
            let row =
                Row::new(columns.iter().map(|&(c, w)| if c == FILE { file_cell(f, w) } else { cells[c].clone() }));
            if f.lag_bytes > BEHIND {
                row.style(behind)
            } else {
                row
            }
        })
        .collect();
    let widths: Vec<Constraint> =
        columns.iter().map(|&(_, w)| Constraint::Length(u16::try_from(w).unwrap_or(u16::MAX))).collect();
    let header = Row::new(columns.iter().map(|&(c, _)| HEADER[c])).style(Style::default().add_modifier(Modifier::BOLD));
    let title = format!(" files, most behind first ({}) ", rows.len());
    frame.render_widget(
        Table::new(table_rows, widths).header(header).block(Block::default().borders(Borders::ALL).title(title)),
        table,
    );
    frame.render_widget(Paragraph::new("q or Ctrl-C quits · refreshes every second"), foot);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::report::{FileReport, FileState, SourceReport};

    #[test]
    fn the_snapshot_lists_files_most_behind_first_with_control_characters_escaped() {
        let file = |path: &str, lag: u64| FileReport {
            path: path.into(),
            state: FileState::Following,
            size: 4096,
            delivered_offset: 4096 - lag,
            lag_bytes: lag,
            ..Default::default()
        };
        let r = Report {
            version: "1.0".into(),
            sources: vec![SourceReport {
                name: "app".into(),
                kind: "file".into(),
                files: vec![file("/a.log", 0), file("/b\u{1b}[2J.log", 2048), file("/c.log", 10)],
                ..Default::default()
            }],
            ..Default::default()
        };
        let text = plain(&r);
        let order: Vec<usize> =
            ["/b\\u{1b}[2J.log", "/c.log", "/a.log"].iter().map(|p| text.find(p).unwrap()).collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert!(!text.contains('\u{1b}'), "no raw escape reaches the terminal");
        assert!(text.contains("2.0 KiB"), "{text}");
    }

    #[test]
    fn several_clients_get_a_line_each_naming_the_failing_one() {
        use crate::status::report::ClientReport;
        let client = |name: &str, not_ready: Option<&str>| ClientReport {
            name: name.into(),
            not_ready: not_ready.map(String::from),
            ..Default::default()
        };
        let r = Report {
            clients: vec![client("old", None), client("new", Some("the last push failed (HTTP 401)"))],
            ..Default::default()
        };
        let lines = summary(&r);
        let old = lines.iter().find(|(l, _)| l.starts_with("client old:")).expect("a line for old");
        let new = lines.iter().find(|(l, _)| l.starts_with("client new:")).expect("a line for new");
        assert!(!old.1 && old.0.ends_with("ok"), "{old:?}");
        assert!(new.1 && new.0.contains("HTTP 401"), "{new:?}");
        let one = Report { clients: vec![client("default", None)], ..Default::default() };
        assert!(!summary(&one).iter().any(|(l, _)| l.starts_with("client ")), "one client: no extra line");
    }

    #[test]
    fn units() {
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(1536.0), "1.5 KiB");
        assert_eq!(rate(1600.0), "1.6k");
        assert_eq!(rate(0.5), "0.5");
        assert_eq!(ago(1_000, 125_000), "2m 4s");
    }
}
