//! The extracted map through the real binary: stages that read `source`,
//! `labels` renames, structured metadata taken from a label, drop tables,
//! a tenant from an extracted value, `match` (nested, dropping, with line
//! filters), `template` (Promtail's functions and test vectors); and `check` refusing names no earlier stage extracts.

use crate::agent;
use crate::common;

use std::process::Command;
use std::time::Duration;

use agent::{agent_config, query_all, write_file, Agent, Stored};
use common::{wait_for, Receiver};

fn label<'a>(e: &'a Stored, name: &str) -> Option<&'a str> {
    e.labels.get(name).and_then(|v| v.as_str())
}

const PIPELINE: &str = r#"stages = [
  { regex = '^(?P<time>\S+Z) (?P<rest>.*)$', labels = [] },
  { json = { level = "level", msg = "msg", org = "org", trace = "trace_id", app = "app" }, source = "rest" },
  { logfmt = { user = "user" }, source = "msg" },
  { replace = 'secret=\S+', with = "secret=<redacted>", source = "msg" },
  { regex = '^(?P<verb>GET|POST) ', source = "msg", labels = [] },
  { drop = { source = "level", value = "debug" } },
  { drop = '^healthz', source = "msg" },
  { drop = { source = ["app", "verb"], separator = "/", expression = '^noisy/GET$', reason = "noisy" } },
  { labels = { severity = "level", app = "", who = "user" } },
  { structured_metadata = { trace = "trace", node = "host" } },
  { tenant = { source = "org" } },
  { timestamp = { source = "time", format = "rfc3339" } },
  { output = "msg" },
]"#;

#[test]
fn stages_read_and_write_the_extracted_map_in_order() {
    let r = Receiver::start(&["--multi-tenant", "--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        r#"2026-01-02T03:04:05Z {"level":"info","msg":"GET /a user=ann secret=abc","org":"team-a","trace_id":"t1","app":"web"}"#,
        r#"2026-01-02T03:04:06Z {"level":"debug","msg":"POST /b","org":"team-a","app":"web"}"#,
        r#"2026-01-02T03:04:07Z {"level":"info","msg":"healthz ok","app":"web"}"#,
        r#"2026-01-02T03:04:08Z {"level":"warn","msg":"GET /c","app":"noisy"}"#,
        r#"2026-01-02T03:04:09Z {"level":"warn","msg":"POST /d","app":"noisy"}"#,
        "not json at all",
    ];
    let log = write_file(dir.path(), "app.log", &(lines.join("\n") + "\n"));
    let client = "tenant_id = \"base\"\nstructured_metadata = true";
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), client, PIPELINE);
    let agent = Agent::start(&cfg);
    let dropped = |reason: &str| {
        agent::metric_value(
            &agent.metrics(),
            &format!("tailship_lines_dropped_total{{reason=\"{reason}\",source=\"file-0\"}}"),
        )
    };
    let in_a = || query_all(&r, r#"{job="test"}"#, Some("team-a"));
    let in_base = || query_all(&r, r#"{job="test"}"#, Some("base"));
    assert!(
        wait_for(Duration::from_secs(20), || in_a().len() == 1 && in_base().len() == 2),
        "team-a {:?} base {:?}\n{}",
        in_a(),
        in_base(),
        agent.stderr_text()
    );
    let host = gethostname();
    let a = &in_a()[0];
    assert_eq!(a.line, "GET /a user=ann secret=<redacted>", "replace rewrote `msg`, output took it");
    assert_eq!(a.ts, 1_767_323_045_000_000_000);
    assert_eq!(
        (label(a, "severity"), label(a, "app"), label(a, "who"), label(a, "level")),
        (Some("info"), Some("web"), Some("ann"), None),
        "renamed, same-named and logfmt-from-source labels: {a:?}"
    );
    assert_eq!(label(a, "trace"), Some("t1"), "structured metadata from an extracted value");
    assert_eq!(label(a, "node"), Some(host.as_str()), "structured metadata from the host label");
    assert_eq!(label(a, "host"), None, "a label taken as metadata leaves the stream");
    let base = in_base();
    let d = base.iter().find(|e| e.line == "POST /d").unwrap_or_else(|| panic!("{base:?}"));
    assert_eq!((label(d, "severity"), label(d, "app"), d.ts), (Some("warn"), Some("noisy"), 1_767_323_049_000_000_000));
    assert_eq!(label(d, "trace"), None);
    let plain = base.iter().find(|e| e.line == "not json at all").unwrap_or_else(|| panic!("{base:?}"));
    assert_eq!((label(plain, "severity"), label(plain, "node")), (None, Some(host.as_str())));
    assert!(wait_for(Duration::from_secs(10), || dropped("drop_stage") == 2.0 && dropped("noisy") == 1.0));
    assert!(agent.terminate(Duration::from_secs(20)).success());
}

fn gethostname() -> String {
    let out = Command::new("hostname").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn drop_by_length_and_age_and_a_tenant_from_a_label() {
    let r = Receiver::start(&["--multi-tenant", "--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let old = "2001-01-01T00:00:00Z short old line";
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let long = format!("{now} {}", "x".repeat(100));
    let fresh = format!("{now} fresh line");
    let log = write_file(dir.path(), "app.log", &format!("{old}\n{long}\n{fresh}\n"));
    let stages = r#"stages = [
  { regex = '^(?P<time>\S+) ', labels = [] },
  { timestamp = { source = "time", format = "rfc3339" } },
  { drop = { older_than = "24h" } },
  { drop = { longer_than = 64, reason = "too_long" } },
  { tenant = { label = "job" } },
]"#;
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "tenant_id = \"base\"", stages);
    let agent = Agent::start(&cfg);
    assert!(
        wait_for(Duration::from_secs(20), || query_all(&r, r#"{job="test"}"#, Some("test")).len() == 1),
        "{}",
        agent.stderr_text()
    );
    assert_eq!(query_all(&r, r#"{job="test"}"#, Some("test"))[0].line, fresh);
    let m = |reason: &str| {
        agent::metric_value(
            &agent.metrics(),
            &format!("tailship_lines_dropped_total{{reason=\"{reason}\",source=\"file-0\"}}"),
        )
    };
    assert!(wait_for(Duration::from_secs(10), || m("drop_stage") == 1.0 && m("too_long") == 1.0));
    assert!(query_all(&r, r#"{job="test"}"#, Some("base")).is_empty());
    assert!(agent.terminate(Duration::from_secs(20)).success());
}

#[test]
fn names_no_earlier_stage_extracts_exit_2_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (r#"stages = [{ regex = '(?P<a>x)', source = "msg" }]"#, "sources[0].stages[0].source", "not extracted"),
        (r#"stages = [{ json = { a = "a" } }, { labels = { b = "nope" } }]"#, "sources[0].stages[1].labels.b", "nope"),
        (r#"stages = [{ tenant = { source = "org" } }]"#, "sources[0].stages[0].tenant.source", "org"),
        (r#"stages = [{ tenant = { label = "a-b" } }]"#, "sources[0].stages[0].tenant.label", "a-b"),
        (r#"stages = [{ tenant = { value = "" } }]"#, "sources[0].stages[0].tenant", "not empty"),
        (r#"stages = [{ static_labels = { "a-b" = "x" } }]"#, "sources[0].stages[0].static_labels.a-b", "valid label"),
        (r#"stages = [{ labeldrop = ["a b"] }]"#, "sources[0].stages[0].labeldrop", "a b"),
        (r#"stages = [{ tenant = {} }]"#, "sources[0].stages[0].tenant", "exactly one"),
        (r#"stages = [{ drop = { value = "x", longer_than = 9 } }]"#, "sources[0].stages[0].drop.value", "source"),
        (r#"stages = [{ drop = { source = "lvl" } }]"#, "sources[0].stages[0].drop.source", "lvl"),
        (
            r#"stages = [{ drop = { longer_than = 3, colour = "red" } }]"#,
            "sources[0].stages[0].drop.colour",
            "unknown key",
        ),
        (r#"stages = [{ drop = {} }]"#, "sources[0].stages[0].drop", "at least one"),
        (r#"stages = [{ output = "x", source = "y" }]"#, "sources[0].stages[0].source", "goes with"),
        (r#"stages = [{ labels = ["bad-name"] }]"#, "sources[0].stages[0].labels", "valid label name"),
        (
            r#"stages = [{ template = { source = "a", template = "{{ .Value | nope }}" } }]"#,
            "sources[0].stages[0].template.template",
            "nope",
        ),
        (r#"stages = [{ template = { template = "x" } }]"#, "sources[0].stages[0].template.source", "empty"),
        (
            r#"stages = [{ match = { selector = 'app="x"', stages = [{ drop = "x" }] } }]"#,
            "sources[0].stages[0].match.selector",
            "selector",
        ),
        (
            r#"stages = [{ match = { selector = '{a="x"}', action = "drop", stages = [{ drop = "x" }] } }]"#,
            "sources[0].stages[0].match.stages",
            "runs no stages",
        ),
        (r#"stages = [{ match = { selector = '{a="x"}' } }]"#, "sources[0].stages[0].match.stages", "needs stages"),
        (
            r#"stages = [{ match = { selector = '{a="x"}', action = "skip", stages = [{ drop = "x" }] } }]"#,
            "sources[0].stages[0].match.action",
            "keep",
        ),
        (
            r#"stages = [{ match = { selector = '{a="x"}', stages = [{ output = "nope" }] } }]"#,
            "sources[0].stages[0].match.stages[0].output",
            "not extracted",
        ),
    ];
    for (stages, key, words) in cases {
        agent::source_exits_2(dir.path(), stages, key, words);
    }
}

#[test]
fn match_runs_its_stages_on_the_lines_it_selects_and_drops_others() {
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        "debug noisy",
        "info payment amount=5",
        "info payment amount=0",
        "info login amount=7",
        "error disk failed",
        "error ignore me",
    ];
    let log = write_file(dir.path(), "app.log", &(lines.join("\n") + "\n"));
    let stages = r#"stages = [
  { regex = '^(?P<level>\w+) (?P<msg>.*)$', labels = [] },
  { labels = ["level"] },
  { match = { selector = '{level="debug"}', action = "drop", reason = "debug_lines" } },
  { match = { selector = '{job="test"} |= "payment"', stages = [
    { regex = 'amount=(?P<amount>\d+)', source = "msg", labels = [] },
    { labels = ["amount"] },
    { match = { selector = '{amount="0"}', action = "drop" } },
  ] } },
  { match = { selector = '{level="error"} !~ "ignore"', stages = [{ output = "msg" }] } },
]"#;
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", stages);
    let agent = Agent::start(&cfg);
    let all = || query_all(&r, r#"{job="test"}"#, None);
    assert!(wait_for(Duration::from_secs(20), || all().len() == 4), "{:?}\n{}", all(), agent.stderr_text());
    let got: Vec<(String, Option<String>, Option<String>)> = all()
        .iter()
        .map(|e| (e.line.clone(), label(e, "level").map(String::from), label(e, "amount").map(String::from)))
        .collect();
    let want = |l: &str, lv: &str, a: Option<&str>| (l.to_string(), Some(lv.to_string()), a.map(String::from));
    for w in [
        want("info payment amount=5", "info", Some("5")),
        want("info login amount=7", "info", None),
        want("disk failed", "error", None),
        want("error ignore me", "error", None),
    ] {
        assert!(got.contains(&w), "{w:?} not in {got:?}");
    }
    let dropped =
        |reason: &str| agent.metric(&format!("tailship_lines_dropped_total{{reason=\"{reason}\",source=\"file-0\"}}"));
    assert!(wait_for(Duration::from_secs(10), || dropped("debug_lines") == 1.0 && dropped("match_stage") == 1.0));
    assert!(agent.terminate(Duration::from_secs(20)).success());
}

#[test]
fn template_writes_extracted_values_with_promtails_functions() {
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let log = write_file(dir.path(), "app.log", "warn this is PII data\ndebug noise\n");
    let stages = r#"stages = [
  { regex = '^(?P<level>\w+) (?P<msg>.*)$', labels = [] },
  { template = { source = "level", template = '{{ .Value | ToUpper }}' } },
  { template = { source = "out", template = '{{ if eq .level "DEBUG" }}{{ else }}{{ .level }} {{ Sha2Hash .msg "salt" }}{{ end }}' } },
  { labels = ["level"] },
  { output = "out" },
]"#;
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", stages);
    let agent = Agent::start(&cfg);
    let all = || query_all(&r, r#"{job="test"}"#, None);
    assert!(wait_for(Duration::from_secs(20), || all().len() == 2), "{:?}\n{}", all(), agent.stderr_text());
    let got: Vec<(String, Option<String>)> =
        all().iter().map(|e| (e.line.clone(), label(e, "level").map(String::from))).collect();
    // Promtail's Sha2Hash vector: sha256("this is PII data" + "salt").
    let hashed = "WARN 5526fd6f8ad457279cf8ff06453c6cb61bf479fa826e3b099caa6c846f9376f2";
    assert!(got.contains(&(hashed.to_string(), Some("WARN".into()))), "{got:?}");
    assert!(got.contains(&("debug noise".to_string(), Some("DEBUG".into()))), "an empty result removes `out`: {got:?}");
    assert!(agent.terminate(Duration::from_secs(20)).success());
}

#[test]
fn decolorize_removes_terminal_escapes_from_the_line() {
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let log = write_file(
        dir.path(),
        "app.log",
        "\u{1b}[31mERROR\u{1b}[0m disk \u{1b}[1;32mok\u{1b}[0m\n\u{1b}]0;title\u{7}plain \u{1b}[2K\n",
    );
    let stages = r#"stages = [{ decolorize = {} }]"#;
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", stages);
    let agent = Agent::start(&cfg);
    let all = || query_all(&r, r#"{job="test"}"#, None);
    assert!(wait_for(Duration::from_secs(20), || all().len() == 2), "{:?}\n{}", all(), agent.stderr_text());
    let lines: Vec<String> = all().into_iter().map(|e| e.line).collect();
    assert_eq!(lines, ["ERROR disk ok", "plain "]);
    assert!(agent.terminate(Duration::from_secs(20)).success());
}

#[test]
fn labelallow_keeps_only_the_labels_it_names_and_the_map_starts_with_the_labels() {
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let dir = tempfile::tempdir().unwrap();
    let log = write_file(dir.path(), "app.log", "warn disk full\n");
    let stages = r#"stages = [
  { regex = '^(?P<level>\w+) ', labels = ["level"] },
  { regex = '/(?P<file>[^/]+)$', source = "filename", labels = ["file"] },
  { labels = { from_job = "job" } },
  { labelallow = ["job", "level", "file", "from_job"] },
]"#;
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", stages);
    let agent = Agent::start(&cfg);
    let all = || query_all(&r, r#"{job="test"}"#, None);
    assert!(wait_for(Duration::from_secs(20), || all().len() == 1), "{:?}\n{}", all(), agent.stderr_text());
    let e = &all()[0];
    assert_eq!((label(e, "job"), label(e, "level")), (Some("test"), Some("warn")));
    // The extracted map starts with the line's labels, as in Promtail.
    assert_eq!((label(e, "file"), label(e, "from_job")), (Some("app.log"), Some("test")));
    assert_eq!((label(e, "host"), label(e, "filename")), (None, None), "{e:?}");
    assert!(agent.terminate(Duration::from_secs(20)).success());
}
