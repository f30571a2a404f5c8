//! Side by side with the real Promtail 3.6.15 (from `../shared/peers`): one
//! Promtail config with a job per case (common stages over the same input
//! files) run by Promtail and, converted, by tailship, each pushing to its
//! own recorder (`common/recorder.rs`: Promtail's protobuf, tailship's
//! JSON). Per job, the tenant, labels, line, structured metadata and, where
//! a stage parsed one, the timestamp to the nanosecond must be Promtail's.
//! Where they differ by a choice of ours, the case says which and why
//! (docs/promtail-differences.md lists the same). Skips, saying so, where
//! the Promtail binary is absent.

use crate::agent;
use crate::common;
use crate::promtail;
use crate::recorder;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use agent::{free_port, write_file, Agent};
use common::{bin, wait_for};
use promtail::Promtail;
use recorder::{Pushed, Recorder};

/// One job: its stages, its input and how many lines it ships.
struct Case {
    name: &'static str,
    stages: &'static str,
    input: &'static str,
    ships: usize,
    /// A stage parses the time: compare timestamps too.
    timestamps: bool,
    /// A difference of ours, listed in docs/promtail-differences.md: what
    /// Promtail's entry becomes under it.
    deliberate: Option<fn(&mut Pushed)>,
}

/// Promtail keeps the `\n` that ends Docker's `log` field; tailship ships
/// the message without it, as `docker logs` shows it.
fn without_trailing_newline(e: &mut Pushed) {
    if e.line.ends_with('\n') {
        e.line.pop();
    }
}

/// Promtail fails on a day padded with a space (`Mar  4`) where the layout
/// has `02`, and stamps the line when read; tailship reads the day either
/// way (syslog pads it so).
fn padded_day_read(e: &mut Pushed) {
    use chrono::{Datelike, TimeZone};
    if e.line.starts_with("Mar  4") {
        let year = chrono::Utc::now().year();
        e.ts = i128::from(chrono::Utc.with_ymd_and_hms(year, 3, 4, 10, 0, 0).unwrap().timestamp_nanos_opt().unwrap());
    }
}

/// A Unix time past what int64 nanoseconds hold: Promtail's wraps (to some
/// time in 2216), tailship's stays at the greatest (2262); Loki refuses both
/// as too far in the future.
fn past_int64_saturates(e: &mut Pushed) {
    if e.line.contains("far") {
        e.ts = i128::from(i64::MAX);
    }
}

const CASES: &[Case] = &[
    Case {
        name: "regex_timestamp",
        stages: r#"
      - regex: { expression: '^(?P<time>\S+) (?P<level>[A-Z]+) (?P<msg>.*)$' }
      - labels: { level: }
      - timestamp: { source: time, format: RFC3339Nano }
      - drop: { source: level, value: DEBUG }
      - output: { source: msg }"#,
        input: "2024-05-01T10:00:00.123456789Z INFO started\n2024-05-01T10:00:01Z DEBUG noisy\n\
                2024-05-01T10:00:02.5+02:00 WARN disk low\n",
        ships: 2,
        timestamps: true,
        deliberate: None,
    },
    Case {
        name: "json_metadata_template",
        stages: r#"
      - json: { expressions: { level: level, ts: time, trace_id: trace.id, msg: message } }
      - structured_metadata: { trace_id: }
      - timestamp: { source: ts, format: RFC3339 }
      - template: { source: level, template: '{{ ToUpper .Value }}' }
      - labels: { level: }"#,
        input: "{\"level\":\"info\",\"time\":\"2024-05-01T10:00:00Z\",\"trace\":{\"id\":\"abc\"},\"message\":\"hello\"}\n\
                {\"level\":\"warn\",\"time\":\"2024-05-01T10:00:03Z\",\"message\":\"no trace\"}\n",
        ships: 2,
        timestamps: true,
        deliberate: None,
    },
    Case {
        name: "docker",
        stages: "\n      - docker: {}",
        input: "{\"log\":\"hello from a container\\n\",\"stream\":\"stdout\",\"time\":\"2024-05-01T10:00:00.000000001Z\"}\n\
                {\"log\":\"oops\\n\",\"stream\":\"stderr\",\"time\":\"2024-05-01T10:00:01.5Z\"}\n",
        ships: 2,
        timestamps: true,
        deliberate: Some(without_trailing_newline),
    },
    Case {
        name: "cri",
        stages: "\n      - cri: {}",
        input: "2024-05-01T10:00:00.1Z stdout F full line\n2024-05-01T10:00:01.1Z stderr F other line\n",
        ships: 2,
        timestamps: true,
        deliberate: None,
    },
    Case {
        name: "cri_partial",
        stages: "\n      - cri: {}",
        input: "2024-05-01T10:00:01.1Z stderr P part one \n2024-05-01T10:00:02.2Z stderr F part two\n",
        ships: 1,
        timestamps: true,
        deliberate: None,
    },
    Case {
        name: "nginx_time",
        stages: r#"
      - regex: { expression: '^(?P<ip>\S+) \S+ \S+ \[(?P<time>[^\]]+)\] "(?P<method>\S+) (?P<path>\S+)[^"]*" (?P<status>\d+)' }
      - labels:
          method:
          status:
      - timestamp: { source: time, format: '02/Jan/2006:15:04:05 -0700' }"#,
        input: "127.0.0.1 - - [01/May/2024:10:00:00 +0200] \"GET / HTTP/1.1\" 200 12\n\
                10.0.0.1 - - [01/May/2024:10:00:01 +0200] \"POST /api HTTP/1.1\" 500 0\n",
        ships: 2,
        timestamps: true,
        deliberate: None,
    },
    Case {
        name: "logfmt_unixms",
        stages: r#"
      - logfmt:
          mapping:
            level:
            ts:
            message: msg
      - labels: { level: }
      - timestamp: { source: ts, format: UnixMs }
      - output: { source: message }"#,
        input: "level=info ts=1714557600123 msg=\"hello world\"\nlevel=error ts=1714557601000 msg=bad\n",
        ships: 2,
        timestamps: true,
        deliberate: None,
    },
    Case {
        name: "decolorize",
        stages: "\n      - decolorize: {}",
        input: "\u{1b}[31mred\u{1b}[0m text\nplain\n",
        ships: 2,
        timestamps: false,
        deliberate: None,
    },
    Case {
        name: "multiline",
        stages: r#"
      - multiline: { firstline: '^\d{4}-', max_wait_time: 300ms }
      - regex: { expression: '^(?P<day>\S+) (?P<level>\w+)' }
      - labels: { level: }"#,
        input: "2024-05-01 ERROR boom\n  at a\n  at b\n2024-05-01 INFO fine\n",
        ships: 2,
        timestamps: false,
        deliberate: None,
    },
    Case {
        name: "match_drop",
        stages: r#"
      - regex: { expression: 'level=(?P<level>\w+)' }
      - labels: { level: }
      - match: { selector: '{level="debug"}', action: drop }
      - match:
          selector: '{level="error"}'
          stages:
            - static_labels: { alert: "yes" }
      - labeldrop: [filename]"#,
        input: "level=info a\nlevel=debug b\nlevel=error c\n",
        ships: 2,
        timestamps: false,
        deliberate: None,
    },
    Case {
        name: "replace_tenant",
        stages: r#"
      - replace: { expression: 'password=(\S+)', replace: '****' }
      - regex: { expression: 'team=(?P<team>\w+)' }
      - tenant: { source: team }"#,
        input: "team=red password=hunter2 x\nteam=blue y\n",
        ships: 2,
        timestamps: false,
        deliberate: None,
    },
    Case {
        name: "drop",
        stages: r#"
      - drop: { expression: healthcheck }
      - drop: { longer_than: 20 }"#,
        input: "GET /healthcheck\nshort line\nthis line is definitely longer than twenty\n",
        ships: 1,
        timestamps: false,
        deliberate: None,
    },
    Case {
        name: "duplicate_group_names",
        stages: r#"
      - regex: { expression: '^(?P<a>\w+) (?P<a>\w+)(?: (?P<a>\d+))?$' }
      - labels: { a: }"#,
        input: "one two\nthree four 5\n",
        ships: 2,
        timestamps: false,
        deliberate: None,
    },
    Case {
        name: "location_local",
        stages: r#"
      - regex: { expression: '^(?P<t>\S+ \S+) ' }
      - timestamp: { source: t, format: '2006-01-02 15:04:05', location: Local }"#,
        input: "2024-05-01 10:00:00 local time\n",
        ships: 1,
        timestamps: true,
        deliberate: None,
    },
    Case {
        name: "template_escaped_backslash",
        stages: r#"
      - regex: { expression: '^(?P<data>.*)$' }
      - template: { source: data, template: '{{ Replace .Value "\\" "" -1 }}' }
      - output: { source: data }"#,
        input: "{\\\"a\\\":1}\n",
        ships: 1,
        timestamps: false,
        deliberate: None,
    },
    Case {
        name: "template_missing_value",
        stages: r#"
      - template: { source: level, template: '{{ .Value }}' }
      - template: { source: app, template: '{{ ToUpper .Value }}' }
      - labels:
          level:
          app:"#,
        input: "no level here\n",
        ships: 1,
        timestamps: false,
        deliberate: None,
    },
    Case {
        name: "template_printf_of_a_missing_value",
        stages: r#"
      - regex: { expression: 'level=(?P<lvl>\w+)' }
      - template: { source: level, template: '{{ printf "%s" .lvl }}' }
      - template: { source: lvl_v, template: '{{ printf "%v|%v" .lvl .lvl }}' }
      - template: { source: lvl_p, template: '{{ print .lvl }}' }
      - labels:
          level:
          lvl_v:
          lvl_p:"#,
        input: "no level here\nlevel=warn here\n",
        ships: 2,
        timestamps: false,
        deliberate: None,
    },
    Case {
        name: "eleven_long_tab_separated_fields",
        // RE2's largest count on eleven fields: over the regex crate's default size limit.
        stages: r#"
      - regex: { expression: '^(?P<f0>[^\t]{1,1000})\t(?P<f1>[^\t]{1,1000})\t(?P<f2>[^\t]{1,1000})\t(?P<f3>[^\t]{1,1000})\t(?P<f4>[^\t]{1,1000})\t(?P<f5>[^\t]{1,1000})\t(?P<f6>[^\t]{1,1000})\t(?P<f7>[^\t]{1,1000})\t(?P<f8>[^\t]{1,1000})\t(?P<f9>[^\t]{1,1000})\t(?P<f10>[^\t]{1,1000})$' }
      - labels:
          f0:
          f1:
          f2:
          f3:
          f4:
          f5:
          f6:
          f7:
          f8:
          f9:
          f10:"#,
        input: "2024-05-01T10:00:00Z\tCabc123\t10.0.0.1\t54321\t10.0.0.2\t443\ttcp\tssl\t1.5\tShADadFf\tSF\n",
        ships: 1,
        timestamps: false,
        deliberate: None,
    },
    Case {
        name: "space_padded_day",
        stages: r#"
      - regex: { expression: '^(?P<t>\w+ +\d+ \S+) ' }
      - timestamp: { source: t, format: 'Jan 02 15:04:05' }"#,
        input: "Mar  4 10:00:00 padded\nMar 14 10:00:00 two digits\n",
        ships: 2,
        timestamps: true,
        deliberate: Some(padded_day_read),
    },
    Case {
        name: "unix_ms_past_int64",
        stages: r#"
      - logfmt: { mapping: { ts: } }
      - timestamp: { source: ts, format: UnixMs }"#,
        input: "ts=99999999999999 far\nts=1714557600123 near\n",
        ships: 2,
        timestamps: true,
        deliberate: Some(past_int64_saturates),
    },
];

/// The Promtail config: a job per case, pushing to `push`, serving on `port`.
fn promtail_config(dir: &Path, push: &str, port: u16, positions: &str) -> String {
    let d = dir.display();
    let mut y = format!(
        "server: {{ http_listen_address: 127.0.0.1, http_listen_port: {port}, grpc_listen_port: 0, log_level: warn }}\n\
         clients:\n  - url: {push}/loki/api/v1/push\n    batchwait: 100ms\n\
         positions: {{ filename: {d}/{positions} }}\nscrape_configs:\n"
    );
    for c in CASES {
        y.push_str(&format!(
            "  - job_name: {n}\n    static_configs:\n      - labels: {{ job: {n}, __path__: {d}/{n}/*.log }}\n    pipeline_stages:{s}\n",
            n = c.name,
            s = c.stages
        ));
    }
    y
}

/// An entry as compared: the timestamp only where the case parses one; a
/// label with an empty value is no label (in Loki, as in Prometheus).
fn seen(e: &Pushed, timestamps: bool) -> Pushed {
    let mut e = Pushed { ts: if timestamps { e.ts } else { 0 }, ..e.clone() };
    e.labels.retain(|_, v| !v.is_empty());
    e
}

fn of_job(all: &[Pushed], job: &str, timestamps: bool) -> Vec<Pushed> {
    let mut v: Vec<Pushed> = all
        .iter()
        .filter(|e| e.labels.get("job").map(String::as_str) == Some(job))
        .map(|e| seen(e, timestamps))
        .collect();
    v.sort();
    v
}

#[test]
fn promtail_and_tailship_ship_the_same_streams_from_the_same_config() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for c in CASES {
        std::fs::create_dir_all(dir.join(c.name)).unwrap();
        write_file(&dir.join(c.name), "app.log", c.input);
    }
    let (theirs, ours) = (Recorder::start(), Recorder::start());
    let port = free_port();
    let original =
        write_file(dir, "promtail.yaml", &promtail_config(dir, &theirs.base, port, "promtail-positions.yaml"));
    let Some(promtail) = Promtail::start(dir, &original, port) else { return };

    // tailship runs the conversion of the same config (its own recorder and port).
    let ours_yaml = write_file(dir, "ours.yaml", &promtail_config(dir, &ours.base, free_port(), "ours-positions.yaml"));
    let out = Command::new(bin()).args(["convert", "promtail"]).arg(&ours_yaml).output().unwrap();
    let report = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{report}");
    let cfg = write_file(dir, "tailship.toml", &String::from_utf8_lossy(&out.stdout));
    let agent = Agent::start(&cfg);

    let total: usize = CASES.iter().map(|c| c.ships).sum();
    let done = wait_for(Duration::from_secs(30), || theirs.len() >= total && ours.len() >= total);
    assert!(
        done,
        "Promtail shipped {} and tailship {} of {total} lines\n{}\n{}",
        theirs.len(),
        ours.len(),
        promtail.log_text(),
        agent.stderr_text()
    );
    let (promtail_all, tailship_all) = (theirs.entries(), ours.entries());
    let (mut same, mut chosen) = (Vec::new(), Vec::new());
    let mut differ = BTreeMap::new();
    for c in CASES {
        let (mut p, t) = (of_job(&promtail_all, c.name, c.timestamps), of_job(&tailship_all, c.name, c.timestamps));
        if p == t {
            same.push(c.name);
            continue;
        }
        if let Some(ours) = c.deliberate {
            p.iter_mut().for_each(ours);
            p.sort();
            if p == t {
                chosen.push(c.name);
                continue;
            }
        }
        differ.insert(c.name, format!("Promtail: {p:#?}\ntailship: {t:#?}"));
    }
    eprintln!(
        "{} of {} jobs give Promtail's result; {:?} differ by a choice of ours (docs/promtail-differences.md); \
         differ otherwise: {:?}",
        same.len(),
        CASES.len(),
        chosen,
        differ.keys()
    );
    for (name, diff) in &differ {
        eprintln!("== {name}\n{diff}");
    }
    drop(promtail);
    assert!(agent.terminate(Duration::from_secs(15)).success());
    assert!(differ.is_empty(), "{} of {} jobs differ: {:?}", differ.len(), CASES.len(), differ.keys());
}
