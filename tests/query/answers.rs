//! Services that answer wrong (entries outside the range asked for), and a
//! terminal as the output of `query` and `labels`.

use super::*;

/// A service on 127.0.0.1 answering each request with `answer(target)`, a
/// JSON body (200), on a connection of its own.
fn json_api(answer: impl Fn(&str) -> String + Send + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { break };
            let Some(first) = request_line(&conn) else { continue };
            let body = answer(first.split(' ').nth(1).unwrap_or(""));
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

/// A log API holding `entries` that answers each range query from `widen`
/// ns before its `start` to `widen` past its `end` (as a service that
/// rounds the range to its own precision does), at most `limit` entries in
/// the direction asked.
fn widening_api(entries: Vec<(i64, String)>, widen: i64) -> String {
    json_api(move |target| {
        let p = query_params(target);
        let num = |k: &str| p.get(k).and_then(|v| v.parse::<i64>().ok()).expect("numeric param");
        let (start, end, limit) = (num("start") - widen, num("end") + widen, num("limit") as usize);
        let mut page: Vec<&(i64, String)> = entries.iter().filter(|(t, _)| *t >= start && *t < end).collect();
        page.sort();
        if p.get("direction").map(String::as_str) == Some("backward") {
            page.reverse();
        }
        page.truncate(limit);
        let values: Vec<Value> = page.iter().map(|(t, l)| serde_json::json!([t.to_string(), l])).collect();
        serde_json::json!({
            "status": "success",
            "data": {"resultType": "streams", "result": [{"stream": {"job": "wide"}, "values": values}]}
        })
        .to_string()
    })
}

/// What a run of `tailship <args>` that may not end printed within `deadline`:
/// its exit status (`None`: still running, then killed), stdout lines (the
/// first 100,000, and how many in all) and stderr.
struct Bounded {
    status: Option<std::process::ExitStatus>,
    lines: Vec<String>,
    count: usize,
    stderr: String,
}

fn run_bounded(url: &str, args: &[&str], deadline: Duration) -> Bounded {
    let mut child =
        tailship(url, args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let err = collect(child.stderr.take().expect("stderr"));
    let out = child.stdout.take().expect("stdout");
    let lines = Arc::new(Mutex::new((Vec::new(), 0usize)));
    let keep = lines.clone();
    let reader = std::thread::spawn(move || {
        for l in BufReader::new(out).lines() {
            let Ok(l) = l else { break };
            let mut k = keep.lock().expect("lock");
            if k.0.len() < 100_000 {
                k.0.push(l);
            }
            k.1 += 1;
        }
    });
    let mut status = None;
    wait_for(deadline, || {
        status = child.try_wait().expect("try_wait");
        status.is_some()
    });
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    reader.join().expect("reader");
    wait_for(Duration::from_secs(5), || Arc::strong_count(&err) == 1);
    let (lines, count) = std::mem::take(&mut *lines.lock().expect("lock"));
    let stderr = err.lock().expect("lock").clone();
    Bounded { status, lines, count, stderr }
}

/// 1,500 entries a millisecond apart from `base`, `e0000` to `e1499`.
fn wide_entries(base: i64) -> Vec<(i64, String)> {
    (0..1500).map(|i| (base + i * 1_000_000, format!("e{i:04}"))).collect()
}

/// Issue #50: a service answering entries outside the range asked for had
/// them printed (twice, as pages overlapped) with `--limit 0`. They are
/// dropped, each entry of the range prints once, and stderr says how many
/// were dropped.
#[test]
fn query_drops_entries_a_service_answers_outside_the_range_and_says_how_many() {
    let base = now_ns() - HOUR_NS / 2;
    // 20 ms on each side: less than a page of 100.
    let url = widening_api(wide_entries(base), 20_000_000);
    let (from, to) = ((base + 500_000_000).to_string(), (base + 1_000_000_000).to_string());
    let want: Vec<String> = (500..1000).map(|i| format!("e{i:04}")).collect();
    for direction in ["forward", "backward"] {
        let args =
            ["query", r#"{job="wide"}"#, "--limit", "0", "--batch", "100", "--from", &from, "--to", &to, "-o", "raw"];
        let mut args = args.to_vec();
        args.extend(["--direction", direction]);
        let o = run_bounded(&url, &args, Duration::from_secs(30));
        assert!(o.status.is_some(), "{direction}: still running after 30 s with {} lines", o.count);
        assert_eq!(o.status.and_then(|s| s.code()), Some(0), "{direction}: {}", o.stderr);
        assert_each_once(&o.lines, &want);
        let mut ordered = want.clone();
        if direction == "backward" {
            ordered.reverse();
        }
        assert_eq!(o.lines, ordered, "{direction}: in order");
        assert!(
            o.stderr.contains("entries outside the time range asked for; dropped, not printed"),
            "{direction}: {}",
            o.stderr
        );
    }
}

/// Issue #50: `query --forward --limit 0` against a service answering a
/// whole page from before `start` moved `start` back and paged for ever
/// (~335,000 lines in 15 s from a service holding 1,000). `start` never
/// moves back, and a page that brings nothing new ends the query with an
/// error naming the range, in either direction.
#[test]
fn query_against_a_service_answering_a_page_outside_the_range_stops_with_an_error() {
    let base = now_ns() - HOUR_NS / 2;
    // A second on each side: 1,000 entries, ten pages.
    let url = widening_api(wide_entries(base), 1_000_000_000);
    let (from, to) = ((base + 500_000_000).to_string(), (base + 1_000_000_000).to_string());
    for direction in ["--forward", "--direction=backward"] {
        let args = [
            "query",
            r#"{job="wide"}"#,
            direction,
            "--limit",
            "0",
            "--batch",
            "100",
            "--from",
            &from,
            "--to",
            &to,
            "-o",
            "raw",
        ];
        let o = run_bounded(&url, &args, Duration::from_secs(20));
        assert!(o.status.is_some(), "{direction}: still paging after 20 s, {} lines printed", o.count);
        assert_eq!(o.status.and_then(|s| s.code()), Some(1), "{direction}: {}", o.stderr);
        assert!(o.stderr.contains("paging cannot go on"), "{direction}: {}", o.stderr);
        assert!(o.stderr.contains("outside that range"), "{direction}: {}", o.stderr);
        assert!(o.lines.is_empty(), "{direction}: nothing of the range came back: {:?}", o.lines.first());
    }
}

/// `sh -c` quoting of one argument.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Runs `tailship <args>` against `url` with a terminal (a pty of
/// util-linux `script`) as its stdout and stderr; returns what the terminal
/// got, or `None` where `script` is missing.
fn on_terminal(url: &str, args: &[&str]) -> Option<(Option<i32>, Vec<u8>)> {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("script (util-linux) not found: skipping the terminal runs; .ci/run installs it");
        return None;
    }
    let mut cmd = sh_quote(&bin().display().to_string());
    for a in args {
        cmd.push(' ');
        cmd.push_str(&sh_quote(a));
    }
    let mut c = Command::new("script");
    c.args(["-q", "-e", "-c", &cmd, "/dev/null"]).env("TAILSHIP_URL", url).env("NO_COLOR", "1").env("RUST_LOG", "warn");
    for v in ["TAILSHIP_ORG_ID", "TAILSHIP_USERNAME", "TAILSHIP_PASSWORD_FILE", "TAILSHIP_API_PREFIX"] {
        c.env_remove(v);
    }
    let o = c.stdin(Stdio::null()).output().expect("run script");
    Some((o.status.code(), o.stdout))
}

/// Issue #50: a line holding a window-title escape and a screen clear, and
/// a label name and value holding them, reached the terminal raw through
/// `query` and `labels`. On a terminal they are escaped; into a pipe
/// `-o raw` and `labels` stay byte-exact.
#[test]
fn on_a_terminal_query_and_labels_escape_control_characters_and_a_pipe_gets_them_as_stored() {
    const TITLE: &str = "\x1b]0;pwned\x07";
    const CLEAR: &str = "\x1b[2J";
    let line = format!("hello {TITLE} and {CLEAR} world");
    let (name, value) = (format!("n{CLEAR}"), format!("v{TITLE}"));
    let ts = (now_ns() - HOUR_NS / 4).to_string();
    let url = {
        let (line, name, value) = (line.clone(), name.clone(), value.clone());
        json_api(move |target| {
            let path = target.split('?').next().unwrap_or("");
            let data = if path.ends_with("/query_range") {
                serde_json::json!({"resultType": "streams", "result": [
                    {"stream": {"app": value, name.as_str(): "x"}, "values": [[ts, line]]}
                ]})
            } else if path.ends_with("/labels") {
                serde_json::json!(["app", name])
            } else {
                serde_json::json!([value])
            };
            serde_json::json!({"status": "success", "data": data}).to_string()
        })
    };
    let escaped_title = r"\u{1b}]0;pwned\u{7}";
    let escaped_clear = r"\u{1b}[2J";
    let runs: [(&[&str], &[&str]); 4] = [
        (&["query", r#"{app="x"}"#, "--since", "1h"], &[escaped_title, escaped_clear, "world"]),
        (&["query", r#"{app="x"}"#, "--since", "1h", "-o", "raw"], &[escaped_title, escaped_clear, "world"]),
        (&["labels"], &[escaped_clear]),
        (&["labels", "app"], &[escaped_title]),
    ];
    for (args, shown) in runs {
        let Some((code, screen)) = on_terminal(&url, args) else { break };
        let text = String::from_utf8_lossy(&screen);
        assert_eq!(code, Some(0), "{args:?}: {text}");
        for raw in [TITLE, CLEAR] {
            assert!(!text.contains(raw), "{args:?} sent {raw:?} to the terminal: {text:?}");
        }
        for s in shown {
            assert!(text.contains(s), "{args:?}: {s} is not shown: {text:?}");
        }
    }
    // Into a pipe, as stored.
    let out = run(&url, &["query", r#"{app="x"}"#, "--since", "1h", "-o", "raw"]);
    assert_eq!(out.stdout, format!("{line}\n").into_bytes());
    assert_eq!(ok(&run(&url, &["labels"])), format!("app\n{name}\n"));
    assert_eq!(ok(&run(&url, &["labels", "app"])), format!("{value}\n"));
}
