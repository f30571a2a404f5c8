//! Promtail's stage semantics through the real binary and `tailship receive`:
//! timestamp `fallback_formats`, `location`, layouts without a year and
//! `action_on_failure = "fudge"`; logfmt keeping the pairs before a stray
//! quote; json with JMESPath expressions and `drop_malformed`; `truncate`,
//! `sampling` and `pack`; `multiline` passing lines before the first start
//! line one by one, and as a stage after `cri` (converted from Promtail too);
//! templates with sprig's functions, crypto ones among them.

use crate::agent;
use crate::common;

use std::time::Duration;

use agent::{agent_config, query_all, write_file, Agent, Stored};
use chrono::{Datelike, TimeZone};
use common::{wait_for, Receiver};

fn label<'a>(e: &'a Stored, name: &str) -> Option<&'a str> {
    e.labels.get(name).and_then(|v| v.as_str())
}

/// Runs `lines` through `stages` and returns what arrives (`count` entries), sorted by line.
fn run(stages: &str, lines: &[&str], count: usize) -> Vec<Stored> {
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let log = write_file(dir.path(), "app.log", &(lines.join("\n") + "\n"));
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", stages);
    let agent = Agent::start(&cfg);
    let all = || query_all(&r, r#"{filename=~".+"}"#, None);
    assert!(wait_for(Duration::from_secs(20), || all().len() >= count), "{:?}\n{}", all(), agent.stderr_text());
    let mut got = all();
    assert!(agent.terminate(Duration::from_secs(15)).success());
    got.sort_by(|a, b| a.line.cmp(&b.line));
    got
}

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> i128 {
    i128::from(chrono::Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap().timestamp_nanos_opt().unwrap())
}

#[test]
fn timestamps_fall_back_read_local_times_guess_the_year_and_fudge() {
    let stages = r#"stages = [
  { logfmt = { t = "t", lvl = "lvl" } },
  { timestamp = { source = "t", format = "2006-01-02 15:04:05", fallback_formats = ["Jan _2 15:04:05", "unix_ms"], location = "Europe/Paris", action_on_failure = "fudge" } },
  { labels = ["lvl"] },
]"#;
    let got = run(
        stages,
        &[
            r#"a t="2024-03-05 08:08:09" lvl=info"#,
            r#"b t=1709622490000 lvl=info"#,
            r#"c t=garbage lvl=info"#,
            r#"d t="Mar  5 08:08:11" lvl=info"#,
            r#"e lvl=warn t="unterminated"#,
        ],
        5,
    );
    let ts: Vec<i128> = got.iter().map(|e| e.ts).collect();
    assert_eq!(ts[0], utc(2024, 3, 5, 7, 8, 9), "local time in Paris");
    assert_eq!(ts[1], utc(2024, 3, 5, 7, 8, 10), "the unix_ms fallback");
    assert_eq!(ts[2], ts[1] + 1, "fudged: the last good time plus 1 ns");
    let year = chrono::Utc::now().year();
    assert_eq!(ts[3], utc(year, 3, 5, 7, 8, 11), "a layout without a year takes this one");
    assert_eq!(ts[4], ts[3] + 1, "no time at all: fudged too");
    assert_eq!(label(&got[4], "lvl"), Some("warn"), "logfmt keeps the pairs before a stray quote");
}

#[test]
fn json_reads_jmespath_and_drops_malformed_lines() {
    let stages = r#"stages = [
  { json = { first = "items[0].id", count = "length(items)", kinds = "items[*].kind", dotted = 'meta."a.b"', lvl = "level" }, drop_malformed = true },
  { labels = ["lvl", "count"] },
  { template = { source = "out", template = '{{ .first }} {{ .kinds }} {{ .dotted }}' } },
  { output = "out" },
]"#;
    let got = run(
        stages,
        &[
            r#"{"level":"info","items":[{"id":"a1","kind":"x"},{"id":"a2","kind":"y"}],"meta":{"a.b":"dots"}}"#,
            "not json",
            r#"{"level":"warn","items":[],"meta":{}}"#,
        ],
        2,
    );
    assert_eq!(got.len(), 2, "the malformed line is dropped: {got:?}");
    assert_eq!(got[0].line, r#"<no value> [] <no value>"#);
    assert_eq!((label(&got[0], "lvl"), label(&got[0], "count")), (Some("warn"), Some("0")));
    assert_eq!(got[1].line, r#"a1 ["x","y"] dots"#);
    assert_eq!((label(&got[1], "lvl"), label(&got[1], "count")), (Some("info"), Some("2")));
}

#[test]
fn pack_truncate_and_sampling() {
    let stages = r#"stages = [
  { regex = '^(?P<lvl>\w+) ', labels = ["lvl"] },
  { truncate = { limit = 12, suffix = "..." } },
  { pack = { labels = ["lvl", "job", "nope"], ingest_timestamp = false } },
  { sampling = { rate = 1.0 } },
]"#;
    let got = run(stages, &[r#"info a "long" line here"#, "warn short"], 2);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].line, r#"{"job":"test","lvl":"info","_entry":"info a \"l..."}"#);
    assert_eq!(got[1].line, r#"{"job":"test","lvl":"warn","_entry":"warn short"}"#);
    for e in &got {
        assert_eq!((label(e, "lvl"), label(e, "job")), (None, None), "packed labels leave the stream: {e:?}");
    }
}

#[test]
fn sampling_keeps_about_its_share_and_counts_the_rest() {
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = (0..2000).map(|i| format!("line {i}")).collect();
    let log = write_file(dir.path(), "app.log", &(lines.join("\n") + "\n"));
    let stages = r#"stages = [{ sampling = { rate = 0.25, reason = "sampled" } }]"#;
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", stages);
    let agent = Agent::start(&cfg);
    let dropped = || agent.metric(r#"tailship_lines_dropped_total{reason="sampled",source="file-0"}"#);
    let kept = || query_all(&r, r#"{job="test"}"#, None).len() as f64;
    assert!(wait_for(Duration::from_secs(20), || kept() + dropped() == 2000.0), "{} + {}", kept(), dropped());
    // 2000 draws at 0.25: 500 expected, standard deviation about 19; 150 is far beyond chance.
    assert!((kept() - 500.0).abs() < 150.0, "kept {}", kept());
    assert!(agent.terminate(Duration::from_secs(15)).success());
}

#[test]
fn multiline_passes_lines_before_the_first_start_line_one_by_one() {
    let got = run(
        r#"multiline = { start = '^\[start\]', max_wait = "300ms" }"#,
        &["orphan one", "orphan two", "[start] x", "  y", "[start] z"],
        4,
    );
    let lines: Vec<&str> = got.iter().map(|e| e.line.as_str()).collect();
    assert_eq!(lines, vec!["[start] x\n  y", "[start] z", "orphan one", "orphan two"]);
}

#[test]
fn a_multiline_stage_after_cri_joins_each_streams_messages() {
    let stages = r#"stages = [
  { cri = {} },
  { multiline = { start = '^\[start\]', max_wait = "300ms", max_lines = 3 } },
  { regex = '^\[start\] (?P<word>\w+)', labels = ["word"] },
]"#;
    let got = run(
        stages,
        &[
            "2024-03-05T07:08:09.000000001Z stdout F orphan one",
            "2024-03-05T07:08:09.000000002Z stdout F orphan two",
            "2024-03-05T07:08:10.000000000Z stdout F [start] first",
            "2024-03-05T07:08:10.000000001Z stdout F   at a",
            "2024-03-05T07:08:10.000000002Z stderr F [start] err",
            "2024-03-05T07:08:10.000000003Z stdout F   at b",
            "2024-03-05T07:08:10.000000004Z stdout F   at c",
            "2024-03-05T07:08:11.000000000Z stdout F [start] second",
        ],
        6,
    );
    let lines: Vec<&str> = got.iter().map(|e| e.line.as_str()).collect();
    assert_eq!(
        lines,
        vec!["  at c", "[start] err", "[start] first\n  at a\n  at b", "[start] second", "orphan one", "orphan two"],
        "max_lines = 3 cuts the first block; `  at c` begins the next one"
    );
    assert_eq!(got[2].ts, utc(2024, 3, 5, 7, 8, 10), "the start line's time");
    assert_eq!((label(&got[2], "stream"), label(&got[2], "word")), (Some("stdout"), Some("first")));
    assert_eq!((label(&got[1], "stream"), label(&got[1], "word")), (Some("stderr"), Some("err")));
    assert_eq!(label(&got[4], "word"), None);
}

#[test]
fn convert_makes_a_multiline_after_other_stages_a_stage_at_the_same_place() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = "clients:\n  - url: http://127.0.0.1:3100/loki/api/v1/push\nscrape_configs:\n  - job_name: app\n    static_configs:\n      - targets: [localhost]\n        labels:\n          __path__: /var/log/app.log\n    pipeline_stages:\n      - docker: {}\n      - multiline:\n          firstline: '^\\d{4}-|^{'\n          max_wait_time: 2s\n";
    let p = write_file(dir.path(), "promtail.yaml", yaml);
    let out = std::process::Command::new(common::bin()).args(["convert", "promtail"]).arg(&p).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("not translated"), "{stderr}");
    let toml = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(toml.contains(r#"{ multiline = { start = '^\d{4}-|^{', max_wait = "2s" } }"#), "{toml}");
    let cfg = write_file(dir.path(), "tailship.toml", &toml);
    let check = std::process::Command::new(common::bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", String::from_utf8_lossy(&check.stderr));
}

#[test]
fn container_lines_with_a_bad_time_keep_stream_and_message_and_long_cri_parts_are_cut() {
    let got = run(
        r#"stages = [{ cri = { max_partial_line_size = 11, max_partial_line_size_truncate = true } }]"#,
        &[
            "2024-03-05T07:08:09.000000000Z stdout F good",
            "not-a-time stdout F bad time",
            "2024-03-05T07:08:10.000000000Z stderr P partial line 1 ",
            "2024-03-05T07:08:10.000000001Z stderr F log finished",
        ],
        3,
    );
    let lines: Vec<&str> = got.iter().map(|e| e.line.as_str()).collect();
    // Promtail cuts the joined line to max_partial_line_size too (TestCRI_tags "with truncation").
    assert_eq!(lines, vec!["bad time", "good", "partial lin"]);
    assert_eq!(got[0].ts, got[1].ts + 1, "a time that does not read: the stream's last plus 1 ns (fudge)");
    assert_eq!(label(&got[0], "stream"), Some("stdout"));
    // A joined line has its last part's time, as the real Promtail gives it (tests/promtail_side_by_side.rs).
    assert_eq!((got[2].ts, label(&got[2], "stream")), (utc(2024, 3, 5, 7, 8, 10) + 1, Some("stderr")));

    let got = run(
        r#"stages = [{ docker = {} }]"#,
        &[
            r#"{"log":"first\n","stream":"stderr","time":"2024-03-05T07:08:09Z"}"#,
            r#"{"log":"second\n","stream":"stderr","time":"soon"}"#,
            r#"{"log":"third\n","stream":"stdout"}"#,
        ],
        3,
    );
    assert_eq!(got.iter().map(|e| e.line.as_str()).collect::<Vec<_>>(), vec!["first", "second", "third"]);
    assert_eq!(got[1].ts, utc(2024, 3, 5, 7, 8, 9) + 1);
    assert_eq!((label(&got[1], "stream"), label(&got[2], "stream")), (Some("stderr"), Some("stdout")));
}

#[test]
fn limit_by_label_name_limits_each_value_and_never_a_line_without_the_label() {
    let stages = r#"stages = [
  { logfmt = { team = "team" }, labels = ["team"] },
  { limit = { rate = 0.001, burst = 2, by_label_name = "team" } },
]"#;
    let lines = ["team=a n=1", "team=a n=2", "team=a n=3", "team=b n=1", "n=1", "n=2", "n=3"];
    let got = run(stages, &lines, 6);
    let kept: Vec<&str> = got.iter().map(|e| e.line.as_str()).collect();
    assert_eq!(kept, vec!["n=1", "n=2", "n=3", "team=a n=1", "team=a n=2", "team=b n=1"]);
}

/// Sprig's functions, which Promtail's template stage registers, on each
/// line (expectations from sprig's documentation).
#[test]
fn templates_call_sprigs_functions() {
    let stages = r#"stages = [
  { regex = '^(?P<user>\S+) (?P<n>\d+) (?P<body>.*)$', labels = [] },
  { template = { source = "out", template = '{{ .user | default "anon" | upper | trunc 3 }} {{ add .n 1 }} {{ mulf .n 0.5 }} {{ .body | b64enc }} {{ sha1sum .user }} {{ adler32sum .user }}' } },
  { template = { source = "out2", template = '{{ splitList "," .body | sortAlpha | join "+" }} {{ dict "u" .user "n" .n | toJson }} {{ (fromJson "{\"a\":[1,2]}").a | last }} {{ ternary "even" "odd" (eq (mod .n 2) 0) }} {{ regexFind "[0-9]+" .body | quote }} {{ toDate "2006-01-02" "2024-03-05" | date "Jan 2, 2006" }}' } },
  { template = { source = "line", template = '{{ .out }} | {{ .out2 }}' } },
  { output = "line" },
]"#;
    let got = run(stages, &["alice 4 c,a7,b", "- 7 z"], 2);
    let lines: Vec<&str> = got.iter().map(|e| e.line.as_str()).collect();
    assert_eq!(
        lines,
        [
            r#"- 8 3.5 eg== 3bc15c8aae3e4124dd409035f32ea2fd6835efc9 3014702 | z {"n":"7","u":"-"} 2 odd "" Mar 5, 2024"#,
            r#"ALI 5 2 YyxhNyxi 522b276a356bdf39013dfabea2cd43e141ecc9e8 100663807 | a7+b+c {"n":"4","u":"alice"} 2 even "7" Mar 5, 2024"#,
        ]
    );
}

/// sprig's crypto functions, `set` changing a dict in place and lists and
/// dicts printed in Go's form, on each line.
#[test]
fn templates_encrypt_and_decrypt_set_in_place_and_print_as_go() {
    let stages = r#"stages = [
  { regex = '^(?P<user>\S+) (?P<n>\d+) (?P<body>.*)$', labels = [] },
  { template = { source = "line", template = '{{ $d := dict "user" .user }}{{ $_ := set $d "n" .n }}{{ $sealed := .body | encryptAES "k3y" }}{{ ne $sealed .body }} {{ $sealed | decryptAES "k3y" }} {{ $d }} {{ list .user .n }} {{ derivePassword 1 "pin" "password" "user" "example.com" }}' } },
  { output = "line" },
]"#;
    let got = run(stages, &["alice 4 secret text", "bob 7 another one"], 2);
    let lines: Vec<&str> = got.iter().map(|e| e.line.as_str()).collect();
    assert_eq!(
        lines,
        ["true another one map[n:7 user:bob] [bob 7] 6685", "true secret text map[n:4 user:alice] [alice 4] 6685",]
    );
}
