//! `tailship inspect` through the real binary: each line of the given files
//! (or stdin) through a config's stages, stage by stage (extracted values,
//! labels, metadata, tenant, timestamp, line), then sent, dropped or held;
//! a Promtail config converted in memory, giving the lines Promtail's own
//! dry run gives; nothing pushed and no positions written; bad input exits
//! 2 naming what is wrong.

use crate::common;
use crate::promtail;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{bin, wait_for, Receiver};

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn inspect(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(bin())
        .arg("inspect")
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(text) = stdin {
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn all(o: &Output) -> String {
    format!("{}{}", stdout(o), String::from_utf8_lossy(&o.stderr))
}

/// A config pushing to `url`, its positions under `dir`, one file source over `dir/*.log`.
fn config(dir: &Path, url: &str, stages: &str) -> std::path::PathBuf {
    let text = format!(
        r#"[server]
listen = ""
[client]
url = "{url}"
tenant_id = "team-a"
structured_metadata = true
[positions]
path = "{dir}/positions.json"
[[sources]]
name = "app"
type = "file"
include = ["{dir}/*.log"]
host_label = false
labels = {{ job = "app" }}
{stages}
"#,
        dir = dir.display()
    );
    write(dir, "tailship.toml", &text)
}

const STAGES: &str = r#"stages = [
  { regex = '^(?P<ts>\S+) (?P<level>\w+) (?P<msg>.*)$', labels = ["level"] },
  { timestamp = { source = "ts", format = "RFC3339" } },
  { drop = { source = "level", value = "debug" } },
  { template = { source = "msg", template = '{{ ToUpper .Value }}' } },
  { structured_metadata = { trace = "msg" } },
  { output = "msg" },
]"#;

#[test]
fn each_stage_says_what_it_changed_and_how_the_line_is_sent_and_nothing_is_pushed() {
    let r = Receiver::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &r.base, STAGES);
    let log = write(
        dir.path(),
        "app.log",
        "2024-05-01T10:00:00Z info hello world\n2024-05-01T10:00:01Z debug noisy\nplain\n",
    );
    let out = inspect(&["--config", &cfg.display().to_string(), &log.display().to_string()], None);
    assert!(out.status.success(), "{}", all(&out));
    let text = stdout(&out);
    let file = log.display().to_string();
    for want in [
        format!("# {file}: source `app`, 6 stages"),
        "line 1: 2024-05-01T10:00:00Z info hello world".to_string(),
        format!(r#"  labels {{filename="{file}", job="app"}} tenant "team-a""#),
        r#"  [1] regex       extracted +level="info" +msg="hello world" +ts="2024-05-01T10:00:00Z""#.to_string(),
        r#"                  labels +level="info""#.to_string(),
        "  [2] timestamp   timestamp 2024-05-01T10:00:00.000000000Z (was the read time)".to_string(),
        "  [3] drop        no change".to_string(),
        r#"  [4] template    extracted msg="hello world"->"HELLO WORLD""#.to_string(),
        r#"  [5] structured_metadata metadata +trace="HELLO WORLD""#.to_string(),
        r#"  [6] output      line "HELLO WORLD""#.to_string(),
        format!(
            r#"  => sent at 2024-05-01T10:00:00.000000000Z with {{filename="{file}", job="app", level="info"}} and metadata {{trace="HELLO WORLD"}} to tenant "team-a": HELLO WORLD"#
        ),
        "line 2: 2024-05-01T10:00:01Z debug noisy".to_string(),
        "  [3] drop        dropped".to_string(),
        "line 3: plain".to_string(),
        "# 3 line(s): 2 sent, 1 dropped".to_string(),
    ] {
        assert!(text.lines().any(|l| l == want), "missing {want:?} in:\n{text}");
    }
    let plain = text.split("line 3: plain").nth(1).unwrap();
    assert!(plain.contains("(the read time) with {filename="), "{text}");
    // Nothing pushed, no positions written.
    assert_eq!(r.stats()["entries"].as_u64(), Some(0), "{}", r.stats());
    assert!(!dir.path().join("positions.json").exists());

    // The same as JSON events.
    let out = inspect(&["-c", &cfg.display().to_string(), "-o", "json", &file], None);
    assert!(out.status.success(), "{}", all(&out));
    let events: Vec<serde_json::Value> =
        stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}"))).collect();
    let stage = events.iter().find(|e| e["stage"] == 1 && e["changes"].is_object()).unwrap();
    assert_eq!(stage["name"], "regex");
    assert_eq!(stage["changes"]["extracted"]["level"], serde_json::json!([null, "info"]));
    assert_eq!(stage["changes"]["labels"]["level"], serde_json::json!([null, "info"]));
    let sent = events.iter().find_map(|e| e.get("sent")).unwrap();
    assert_eq!(sent["timestamp"], "2024-05-01T10:00:00.000000000Z");
    assert_eq!(sent["read_time"], false);
    assert_eq!(sent["labels"]["level"], "info");
    assert_eq!(sent["metadata"]["trace"], "HELLO WORLD");
    assert_eq!(sent["tenant"], "team-a");
    assert_eq!(sent["line"], "HELLO WORLD");
    assert!(events.iter().any(|e| e["stage"] == 3 && e["dropped"] == true), "{events:?}");
    assert_eq!(events.last().unwrap(), &serde_json::json!({"lines": 3, "sent": 2, "dropped": 1}));
}

#[test]
fn standard_input_and_a_multiline_stage_held_lines_go_on_joined() {
    let dir = tempfile::tempdir().unwrap();
    let stages = r#"stages = [
  { multiline = { start = '^\d{4}-', max_wait = "3s" } },
  { regex = '^(?P<day>\S+) (?P<first>[^\n]*)' },
]"#;
    let cfg = config(dir.path(), "http://127.0.0.1:1", stages);
    let input = "2024-05-01 boom\n  at frame one\n  at frame two\n2024-05-02 next\n";
    let out = inspect(&["--config", &cfg.display().to_string()], Some(input));
    assert!(out.status.success(), "{}", all(&out));
    let text = stdout(&out);
    assert!(text.starts_with("# standard input: source `app`, 2 stages\n"), "{text}");
    assert!(text.contains("line 2:   at frame one\n  labels {job=\"app\"}"), "no filename on stdin: {text}");
    assert_eq!(text.matches("  [1] multiline   held: goes on with the lines that complete it").count(), 4, "{text}");
    assert!(
        text.contains(r#"  lines held by stage 1 go on as one: "2024-05-01 boom\n  at frame one\n  at frame two""#),
        "{text}"
    );
    assert!(text.contains("# end of input: lines held by stages go on"), "{text}");
    assert!(text.contains(r#"  [2] regex       extracted +day="2024-05-02" +first="next""#), "{text}");
    assert!(text.contains("# 4 line(s): 2 sent, 0 dropped"), "{text}");
}

/// Promtail's pipeline (a config as Promtail reads it), converted in memory.
const PROMTAIL: &str = r#"server: { http_listen_address: 127.0.0.1, http_listen_port: PORT, grpc_listen_port: 0, log_level: warn }
positions: { filename: DIR/promtail-positions.yaml }
clients: [{ url: "http://127.0.0.1:1/loki/api/v1/push" }]
scrape_configs:
  - job_name: app
    pipeline_stages:
      - regex: { expression: '^(?P<ts>\S+) (?P<level>\w+) (?P<msg>.*)$' }
      - labels: { level: }
      - timestamp: { source: ts, format: RFC3339 }
      - drop: { source: level, value: debug }
      - output: { source: msg }
    static_configs:
      - targets: [localhost]
        labels: { job: app, __path__: DIR/app.log }
"#;

#[test]
fn a_promtail_config_converted_in_memory_gives_the_lines_promtails_dry_run_gives() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let yaml = write(dir.path(), "promtail.yaml", &PROMTAIL.replace("DIR", &d).replace("PORT", &port.to_string()));
    let log = write(
        dir.path(),
        "app.log",
        "2024-05-01T10:00:00Z info hello world\n2024-05-01T10:00:01Z debug noisy\n2024-05-01T10:00:02Z warn disk low\n",
    );
    let out = inspect(&["--promtail", &yaml.display().to_string(), &log.display().to_string()], None);
    assert!(out.status.success(), "{}", all(&out));
    let text = stdout(&out);
    assert!(text.contains("  [2] labels      labels +level=\"info\""), "{text}");
    assert!(text.contains("  [4] drop        dropped"), "{text}");
    let ours: Vec<String> = text.lines().filter_map(|l| l.strip_prefix("  => sent at ")).map(str::to_string).collect();
    let file = log.display().to_string();
    assert_eq!(
        ours,
        vec![
            format!(
                r#"2024-05-01T10:00:00.000000000Z with {{filename="{file}", job="app", level="info"}}: hello world"#
            ),
            format!(r#"2024-05-01T10:00:02.000000000Z with {{filename="{file}", job="app", level="warn"}}: disk low"#),
        ]
    );
    assert!(!dir.path().join("promtail-positions.yaml").exists(), "no positions written");

    // Promtail's own dry run of the same config and file: the same entries.
    let Some(bin) = promtail::binary() else {
        eprintln!("no Promtail binary in ../shared/peers: the comparison with its dry run is skipped");
        return;
    };
    let printed = dir.path().join("promtail.out");
    let mut child = Command::new(bin)
        .args([&format!("-config.file={}", yaml.display()), "-dry-run", "-inspect"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&printed).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Its dry run prints each entry as `TIME{LABELS}\tLINE`, and runs on.
    let entries = |t: &str| -> Vec<String> {
        t.lines().filter(|l| l.starts_with("2024-") && l.contains("}\t")).map(str::to_string).collect()
    };
    let done = wait_for(Duration::from_secs(30), || {
        entries(&std::fs::read_to_string(&printed).unwrap_or_default()).len() >= 2
    });
    let _ = child.kill();
    let _ = child.wait();
    let theirs = entries(&std::fs::read_to_string(&printed).unwrap_or_default());
    assert!(done, "{theirs:?}");
    let theirs: Vec<String> = theirs
        .iter()
        .map(|l| {
            let (ts, rest) = l.split_once('{').unwrap();
            let (labels, line) = rest.split_once("}\t").unwrap();
            let ts = chrono::DateTime::parse_from_str(ts, "%Y-%m-%dT%H:%M:%S%z").unwrap().with_timezone(&chrono::Utc);
            format!("{} with {{{labels}}}: {line}", ts.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true))
        })
        .collect();
    assert_eq!(ours, theirs, "Promtail's dry run");
}

#[test]
fn bad_requests_exit_2_saying_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "http://127.0.0.1:1", "");
    let cfg = cfg.display().to_string();
    let log = write(dir.path(), "app.log", "x\n").display().to_string();
    let out = inspect(&["-c", &cfg, "--source", "nope", &log], None);
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    assert!(all(&out).contains("has no source named `nope` (its sources: app)"), "{}", all(&out));
    let out = inspect(&["-c", &cfg, &format!("{}/missing.log", dir.path().display())], None);
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    assert!(all(&out).contains("cannot read") && all(&out).contains("missing.log"), "{}", all(&out));
    let bad =
        write(dir.path(), "bad.toml", "[[sources]]\ninclude = [\"/x/*.log\"]\nstages = [{ regex = '(?P<a>[' }]\n");
    let out = inspect(&["-c", &bad.display().to_string(), &log], None);
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    assert!(all(&out).contains("key `sources[0].stages[0].regex`") && all(&out).contains("bad.toml"), "{}", all(&out));
    let out = inspect(&["--promtail", &bad.display().to_string(), &log], None);
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    assert!(all(&out).contains("bad.toml: not converted"), "{}", all(&out));
}
