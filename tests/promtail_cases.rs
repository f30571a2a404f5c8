//! Promtail's own stage tests (grafana/loki `clients/pkg/logentry/stages/*_test.go`),
//! ported as data: each case's `pipeline_stages` and input lines, and the lines
//! Promtail's test expects. Each case goes through `tailship convert promtail`
//! and `tailship run` against `tailship receive`, and is counted as giving
//! Promtail's result, using something tailship lacks (convert leaves a key
//! out or refuses it), or giving a different result.
//!
//! Ported so far: `replace_test.go` (TestPipeline_Replace, 7 cases) and
//! `multiline_test.go` (Test_multilineStage_Process, 1 case): **8 of 8 give
//! Promtail's result.** Before #24's third pass 4 of 8 did: 3 used a Go
//! template as `replace`'s value (now `with_template`), and the multiline
//! case gave a different result while lines ahead of the first start line
//! were joined instead of passed one by one. Cases whose input is not a line
//! of a file (multi-line JSON documents, per-entry label sets, timing) are
//! not ported. The issue's earlier measure (58 of 196 over every stage test)
//! is not redone here: the rest of the port is still to do.

#[path = "common/agent.rs"]
mod agent;
mod common;

use std::process::Command;
use std::time::Duration;

use agent::{free_port, query_all_at, write_file, Agent};
use common::{bin, wait_for, Receiver};

/// One ported case: its name in Promtail's test, the `pipeline_stages`
/// (YAML, indented under the job), the input lines and the lines expected.
struct Case {
    name: &'static str,
    stages: &'static str,
    input: &'static [&'static str],
    expected: &'static [&'static str],
}

const REPLACE_LINE: &str = r#"11.11.11.11 - frank [25/Jan/2000:14:00:01 -0500] "GET /1986.js HTTP/1.1" 200 932 "-" "Mozilla/5.0 (Windows; U; Windows NT 5.1; de; rv:1.9.1.7) Gecko/20091221 Firefox/3.5.7 GTB6""#;
const REPLACE_JSON_LINE: &str = r#"{"time":"2019-01-01T01:00:00.000000001Z", "level": "info", "msg": "11.11.11.11 - \"POST /loki/api/push/ HTTP/1.1\" 200 932 \"-\" \"Mozilla/5.0 (Windows; U; Windows NT 5.1; de; rv:1.9.1.7) Gecko/20091221 Firefox/3.5.7 GTB6\""}"#;
const UPPER: &str = r#"11.11.11.11 - FRANK [25/JAN/2000:14:00:01 -0500] "GET /1986.JS HTTP/1.1" HttpStatusOk 932 "-" "MOZILLA/5.0 (WINDOWS; U; WINDOWS NT 5.1; DE; RV:1.9.1.7) GECKO/20091221 FIREFOX/3.5.7 GTB6""#;

const CASES: &[Case] = &[
    Case {
        name: "replace: 1 regex stage without source",
        stages: r#"      - replace:
          expression: "11.11.11.11 - (\\S+) .*"
          replace: "dummy"
"#,
        input: &[REPLACE_LINE],
        expected: &[
            r#"11.11.11.11 - dummy [25/Jan/2000:14:00:01 -0500] "GET /1986.js HTTP/1.1" 200 932 "-" "Mozilla/5.0 (Windows; U; Windows NT 5.1; de; rv:1.9.1.7) Gecko/20091221 Firefox/3.5.7 GTB6""#,
        ],
    },
    Case {
        name: "replace: multi stage with source (the line is unchanged)",
        stages: r#"      - json:
          expressions:
            level:
            msg:
      - replace:
          expression: "\\S+ - \"POST (\\S+) .*"
          source: msg
          replace: "/loki/api/v1/push/"
"#,
        input: &[REPLACE_JSON_LINE],
        expected: &[REPLACE_JSON_LINE],
    },
    Case {
        name: "replace: named captured groups with a template, without source",
        stages: r#"      - replace:
          expression: "^(?P<ip>\\S+) (?P<identd>\\S+) (?P<user>\\S+) \\[(?P<timestamp>[\\w:/]+\\s[+\\-]\\d{4})\\] \"(?P<action>\\S+)\\s?(?P<path>\\S+)?\\s?(?P<protocol>\\S+)?\" (?P<status>\\d{3}|-) (\\d+|-)\\s?\"?(?P<referer>[^\"]*)\"?\\s?\"?(?P<useragent>[^\"]*)?\"?$"
          replace: '{{ if eq .Value "200" }}{{ Replace .Value "200" "HttpStatusOk" -1 }}{{ else }}{{ .Value | ToUpper }}{{ end }}'
"#,
        input: &[REPLACE_LINE],
        expected: &[UPPER],
    },
    Case {
        name: "replace: nested captured groups with a template, without source",
        stages: r#"      - replace:
          expression: "(?P<ip_user>^(?P<ip>\\S+) (?P<identd>\\S+) (?P<user>\\S+)) \\[(?P<timestamp>[\\w:/]+\\s[+\\-]\\d{4})\\] \"(?P<action_path>(?P<action>\\S+)\\s?(?P<path>\\S+)?)\\s?(?P<protocol>\\S+)?\" (?P<status>\\d{3}|-) (\\d+|-)\\s?\"?(?P<referer>[^\"]*)\"?\\s?\"?(?P<useragent>[^\"]*)?\"?$"
          replace: '{{ if eq .Value "200" }}{{ Replace .Value "200" "HttpStatusOk" -1 }}{{ else }}{{ .Value | ToUpper }}{{ end }}'
"#,
        input: &[REPLACE_LINE],
        expected: &[UPPER],
    },
    Case {
        name: "replace: unnamed groups with a template, without source",
        stages: r#"      - replace:
          expression: "^(\\S+) (\\S+) (\\S+) \\[([\\w:/]+\\s[+\\-]\\d{4})\\] \"(\\S+)\\s?(\\S+)?\\s?(\\S+)?\" (\\d{3}|-) (\\d+|-)\\s?\"?([^\"]*)\"?\\s?\"?([^\"]*)?\"?$"
          replace: '{{ if eq .Value "200" }}{{ Replace .Value "200" "HttpStatusOk" -1 }}{{ else }}{{ .Value | ToUpper }}{{ end }}'
"#,
        input: &[REPLACE_LINE],
        expected: &[UPPER],
    },
    Case {
        name: "replace: empty replace value",
        stages: r#"      - replace:
          expression: "11.11.11.11 - (\\S+\\s)"
          replace: ''
"#,
        input: &[REPLACE_LINE],
        expected: &[
            r#"11.11.11.11 - [25/Jan/2000:14:00:01 -0500] "GET /1986.js HTTP/1.1" 200 932 "-" "Mozilla/5.0 (Windows; U; Windows NT 5.1; de; rv:1.9.1.7) Gecko/20091221 Firefox/3.5.7 GTB6""#,
        ],
    },
    Case {
        name: "replace: adjacent capture groups",
        stages: r#"      - replace:
          expression: '(a|b|c)'
          replace: ''
"#,
        input: &["abc"],
        expected: &[""],
    },
    Case {
        name: "multiline: Test_multilineStage_Process",
        stages: r#"      - multiline:
          firstline: '^START'
          max_wait_time: 3s
"#,
        input: &[
            "not a start line before 1",
            "not a start line before 2",
            "START line 1",
            "not a start line",
            "START line 2",
            "START line 3",
        ],
        expected: &[
            "not a start line before 1",
            "not a start line before 2",
            "START line 1\nnot a start line",
            "START line 2",
            "START line 3",
        ],
    },
];

/// The cases measured to give Promtail's result; the count may only go up.
const SAME_AT_LEAST: usize = 8;

#[derive(Debug, PartialEq)]
enum Outcome {
    Same,
    Lacking(String),
    Different(Vec<String>),
}

fn run_case(i: usize, c: &Case, r: &Receiver) -> Outcome {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let yaml = format!(
        "server:\n  http_listen_address: 127.0.0.1\n  http_listen_port: {port}\npositions:\n  filename: {d}/positions.yaml\nclients:\n  - url: {url}/loki/api/v1/push\n    batchwait: 100ms\nscrape_configs:\n  - job_name: case{i}\n    static_configs:\n      - targets: [localhost]\n        labels:\n          job: case{i}\n          __path__: {d}/in.log\n    pipeline_stages:\n{stages}",
        port = free_port(),
        d = dir.display(),
        url = r.base,
        stages = c.stages,
    );
    let p = write_file(dir, "promtail.yaml", &yaml);
    let out = Command::new(bin()).args(["convert", "promtail"]).arg(&p).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() || stderr.contains("not translated") {
        return Outcome::Lacking(stderr);
    }
    let cfg = write_file(dir, "tailship.toml", &String::from_utf8_lossy(&out.stdout));
    write_file(dir, "in.log", &(c.input.join("\n") + "\n"));
    let agent = Agent::start(&cfg);
    let query = format!(r#"{{job="case{i}"}}"#);
    let got = || query_all_at(r, "/loki/api/v1", &query, None);
    wait_for(Duration::from_secs(10), || got().len() >= c.expected.len());
    let mut lines: Vec<String> = got().into_iter().map(|e| e.line).collect();
    let _ = agent.terminate(Duration::from_secs(15));
    let mut want: Vec<String> = c.expected.iter().map(|s| s.to_string()).collect();
    lines.sort();
    want.sort();
    if lines == want {
        Outcome::Same
    } else {
        Outcome::Different(lines)
    }
}

#[test]
fn promtails_own_stage_tests_give_promtails_results() {
    let r = Receiver::start(&["--api-prefix", "/loki/api/v1", "--max-query-limit", "1000000"]);
    let mut same = 0;
    let mut report = Vec::new();
    for (i, c) in CASES.iter().enumerate() {
        let o = run_case(i, c, &r);
        if o == Outcome::Same {
            same += 1;
        }
        report.push(format!("{}: {o:?}", c.name));
    }
    let table = report.join("\n");
    println!("{same} of {} give Promtail's result\n{table}", CASES.len());
    assert!(same >= SAME_AT_LEAST, "{same} of {} give Promtail's result\n{table}", CASES.len());
}
