//! The json, logfmt, output, replace, cri, docker and limit stages, structured
//! metadata and the kubernetes source, through the real binary and the
//! embedded store.

use crate::agent;
use crate::common;

use std::time::Duration;

use agent::{agent_config, query_all, write_file, Agent, AgentToml, Stored};
use common::{wait_for, Receiver};
use tempfile::TempDir;

const BIG: &[&str] = &["--max-query-limit", "1000000"];

fn stored(r: &Receiver) -> u64 {
    r.stats()["entries"].as_u64().unwrap_or(0)
}

fn label<'a>(e: &'a Stored, name: &str) -> Option<&'a str> {
    e.labels.get(name).and_then(|v| v.as_str())
}

/// A receiver and an agent shipping a file (see [`ship`]).
struct Shipped {
    r: Receiver,
    agent: Agent,
    _dir: TempDir,
}

/// A receiver and an agent shipping `text`, written to `dir/NAME`, through
/// `stages`, `client` keys in its `[client]`.
fn ship(name: &str, text: &str, client: &str, stages: &str) -> Shipped {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let log = write_file(dir.path(), name, text);
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), client, stages);
    Shipped { agent: Agent::start(&cfg), r, _dir: dir }
}

/// Waits (20 s at most) until `r` stored `n` entries: those of job `test`.
fn wait_stored(r: &Receiver, agent: &Agent, n: u64) -> Vec<Stored> {
    assert!(wait_for(Duration::from_secs(20), || stored(r) == n), "{}", agent.stderr_text());
    query_all(r, r#"{job="test"}"#, None)
}

/// SIGTERM: the agent exits 0 within 20 s.
fn stop(agent: Agent) {
    assert!(agent.terminate(Duration::from_secs(20)).success());
}

#[test]
fn json_logfmt_output_and_replace_stages_extract_label_rewrite_and_time_lines() {
    let text = concat!(
        r#"{"level":"error","msg":"card 4111-1111-1111-1111 refused","ts":"2026-01-02T03:04:05.5Z","req":{"id":"r1"}}"#,
        "\n",
        r#"{"level":"info","msg":"ok","ts":"2026-01-02T03:04:06Z","req":{"id":"r2"}}"#,
        "\n",
        "not json at all\n",
        "level=warn msg=\"slow query\" took=3s\n",
    );
    let stages = r#"stages = [
  { json = { level = "level", message = "msg", time = "ts", request = "req.id" }, labels = ["level"], structured_metadata = ["request"] },
  { timestamp = { source = "time", format = "rfc3339" } },
  { logfmt = {}, labels = ["level"] },
  { output = "message" },
  { replace = '\d{4}-\d{4}-\d{4}-(\d{4})', with = "****-$1" },
]"#;
    let Shipped { r, agent, _dir } = ship("app.log", text, "structured_metadata = true", stages);
    let got = wait_stored(&r, &agent, 4);
    let by_line = |l: &str| got.iter().find(|e| e.line == l).unwrap_or_else(|| panic!("no line {l:?} in {got:?}"));
    let refused = by_line("card ****-1111 refused");
    assert_eq!(label(refused, "level"), Some("error"));
    assert_eq!(label(refused, "request"), Some("r1"), "structured metadata comes back as a label");
    assert_eq!(refused.ts, 1_767_323_045_500_000_000);
    let ok = by_line("ok");
    assert_eq!(
        (label(ok, "level"), label(ok, "request"), ok.ts),
        (Some("info"), Some("r2"), 1_767_323_046_000_000_000)
    );
    // Neither JSON nor logfmt: unchanged, no level, counted by the json stage.
    let plain = by_line("not json at all");
    assert_eq!(label(plain, "level"), None);
    // logfmt: the level label; no `message` value, so `output` leaves the line.
    let warn = by_line("level=warn msg=\"slow query\" took=3s");
    assert_eq!(label(warn, "level"), Some("warn"));
    let unparsed = |stage: &str| {
        agent::metric_value(
            &agent.metrics(),
            &format!("tailship_lines_unparsed_total{{source=\"file-0\",stage=\"{stage}\"}}"),
        )
    };
    assert_eq!(unparsed("json"), 2.0, "the plain and the logfmt line are not JSON");
    assert_eq!(unparsed("logfmt"), 3.0, "the plain line and the two JSON lines are not logfmt");
    stop(agent);
}

#[test]
fn cri_partial_lines_are_joined_per_stream_and_docker_lines_unwrapped() {
    let text = concat!(
        "2026-01-02T03:04:05.000000001Z stdout P first part, \n",
        "2026-01-02T03:04:05.000000002Z stderr F an error\n",
        "2026-01-02T03:04:05.000000003Z stdout P second part, \n",
        "2026-01-02T03:04:05.000000004Z stdout F last part\n",
        "2026-01-02T03:04:06Z stdout F whole\n",
    );
    let Shipped { r, agent, _dir } = ship("cri.log", text, "", "stages = [{ cri = {} }]");
    let got = wait_stored(&r, &agent, 3);
    let lines: Vec<(&str, Option<&str>, i128)> =
        got.iter().map(|e| (e.line.as_str(), label(e, "stream"), e.ts)).collect();
    assert_eq!(
        lines,
        [
            // A joined line has its last part's time, as in Promtail.
            ("an error", Some("stderr"), 1_767_323_045_000_000_002),
            ("first part, second part, last part", Some("stdout"), 1_767_323_045_000_000_004),
            ("whole", Some("stdout"), 1_767_323_046_000_000_000),
        ]
    );
    stop(agent);

    let text = concat!(
        r#"{"log":"hello\n","stream":"stdout","time":"2026-01-02T03:04:05.25Z"}"#,
        "\n",
        r#"{"log":"a long ","stream":"stderr","time":"2026-01-02T03:04:06Z"}"#,
        "\n",
        r#"{"log":"line\n","stream":"stderr","time":"2026-01-02T03:04:07Z"}"#,
        "\n",
    );
    let Shipped { r, agent, _dir } = ship("docker.log", text, "", "stages = [{ docker = {} }]");
    let got = wait_stored(&r, &agent, 2);
    let lines: Vec<(&str, Option<&str>, i128)> =
        got.iter().map(|e| (e.line.as_str(), label(e, "stream"), e.ts)).collect();
    assert_eq!(
        lines,
        [
            ("hello", Some("stdout"), 1_767_323_045_250_000_000),
            ("a long line", Some("stderr"), 1_767_323_046_000_000_000)
        ]
    );
    stop(agent);
}

#[test]
fn a_cri_part_whose_last_part_never_comes_ships_after_the_partial_wait() {
    let text = "2026-01-02T03:04:05Z stdout F before\n2026-01-02T03:04:06Z stdout P cut short\n";
    let Shipped { r, agent, _dir } = ship("cri.log", text, "", "stages = [{ cri = {} }]");
    // `partial_line_wait` is 300ms in this config: the held part goes on alone.
    let got = wait_stored(&r, &agent, 2);
    assert_eq!(got.iter().map(|e| e.line.as_str()).collect::<Vec<_>>(), ["before", "cut short"]);
    stop(agent);
}

#[test]
fn a_held_cri_part_keeps_the_position_before_it_across_a_kill() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let cri = dir.path().join("cri.log");
    std::fs::write(&cri, "2026-01-02T03:04:05Z stdout F before\n2026-01-02T03:04:06Z stdout P first half \n").unwrap();
    // A long partial wait: the part stays held while the agent is killed.
    let cfg = agent_config(
        dir.path(),
        &r.base,
        &cri.display().to_string(),
        "",
        "stages = [{ cri = {} }]\nmax_line_bytes = \"64KiB\"",
    );
    let text =
        std::fs::read_to_string(&cfg).unwrap().replace("partial_line_wait = \"300ms\"", "partial_line_wait = \"1h\"");
    std::fs::write(&cfg, text).unwrap();
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) == 1), "{}", agent.stderr_text());
    let positions = dir.path().join("positions.json");
    let first = "2026-01-02T03:04:05Z stdout F before\n".len();
    assert!(
        wait_for(Duration::from_secs(20), || std::fs::read_to_string(&positions)
            .is_ok_and(|p| p.contains(&format!("\"offset\": {first}")))),
        "the position stops before the held part"
    );
    agent.kill9();
    let mut f = std::fs::OpenOptions::new().append(true).open(&cri).unwrap();
    std::io::Write::write_all(&mut f, b"2026-01-02T03:04:07Z stdout F second half\n").unwrap();
    let agent = Agent::start(&cfg);
    let got = wait_stored(&r, &agent, 2);
    assert_eq!(got.iter().map(|e| e.line.as_str()).collect::<Vec<_>>(), ["before", "first half second half"]);
    stop(agent);
}

#[test]
fn a_limit_stage_drops_lines_over_its_rate_for_the_whole_source_and_counts_them() {
    let text: String = (0..20).map(|i| format!("{} line {i}\n", if i % 2 == 0 { "a" } else { "b" })).collect();
    // Two streams (by the `kind` label) share the source's one limit (Promtail's: the job's): 3 at once in all.
    let stages = r#"stages = [{ regex = '^(?P<kind>\w) ' }, { limit = { rate = 0.001, burst = 3 } }]"#;
    let Shipped { r, agent, _dir } = ship("burst.log", &text, "", stages);
    assert!(
        wait_for(Duration::from_secs(20), || agent::metric_value(
            &agent.metrics(),
            "tailship_lines_dropped_total{reason=\"limit\",source=\"file-0\"}"
        ) == 17.0),
        "{}",
        agent.metrics()
    );
    assert!(wait_for(Duration::from_secs(20), || stored(&r) == 3));
    let got = query_all(&r, r#"{job="test"}"#, None);
    let lines: Vec<&str> = got.iter().map(|e| e.line.as_str()).collect();
    for want in ["a line 0", "b line 1", "a line 2"] {
        assert!(lines.contains(&want), "{want} in {lines:?}");
    }
    stop(agent);
}

#[test]
fn the_kubernetes_source_labels_pod_logs_from_their_path_and_joins_partial_lines() {
    let r = Receiver::start(BIG);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("pods");
    let web = root.join("shop_web-7d9f_0f2c5a1e-1111-2222-3333-444455556666/nginx");
    let db = root.join("data_db-0_9a8b7c6d-1111-2222-3333-444455556666/postgres");
    std::fs::create_dir_all(&web).unwrap();
    std::fs::create_dir_all(&db).unwrap();
    write_file(
        &web,
        "0.log",
        "2026-01-02T03:04:05Z stdout P GET /ind\n2026-01-02T03:04:05Z stdout F ex.html 200\n2026-01-02T03:04:06Z stderr F upstream slow\n",
    );
    write_file(&db, "0.log", "2026-01-02T03:04:07Z stdout F ready to accept connections\n");
    write_file(&db, "0.log.20260102-030400", "2026-01-02T03:00:00Z stdout F an old rotated file\n");
    let source = format!(
        "[[sources]]\ntype = \"kubernetes\"\nroot = \"{}\"\nlabels = {{ job = \"pods\" }}\nscan_interval = \"200ms\"",
        root.display()
    );
    let toml = AgentToml::new(dir.path(), "").bare_client(&r.base, "batch = { max_wait = \"100ms\" }").sync_period("");
    let cfg = toml.then(&source).write("tailship.toml");
    let agent = Agent::start(&cfg);
    assert!(wait_for(Duration::from_secs(20), || stored(&r) == 3), "{}", agent.stderr_text());
    let got = query_all(&r, r#"{job="pods"}"#, None);
    let rows: Vec<(&str, [Option<&str>; 4])> = got
        .iter()
        .map(|e| (e.line.as_str(), [label(e, "namespace"), label(e, "pod"), label(e, "container"), label(e, "stream")]))
        .collect();
    assert_eq!(
        rows,
        [
            ("GET /index.html 200", [Some("shop"), Some("web-7d9f"), Some("nginx"), Some("stdout")]),
            ("upstream slow", [Some("shop"), Some("web-7d9f"), Some("nginx"), Some("stderr")]),
            ("ready to accept connections", [Some("data"), Some("db-0"), Some("postgres"), Some("stdout")]),
        ]
    );
    stop(agent);
}

#[test]
fn stage_mistakes_exit_2_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            r#"stages = [{ json = { r = "req.id" }, structured_metadata = ["r"] }]"#,
            "sources[0].stages[0].structured_metadata",
            "client.structured_metadata = true",
        ),
        (r#"stages = [{ replace = 'x' }]"#, "sources[0].stages[0].with", "replacement"),
        (r#"stages = [{ json = { a = "x..y" } }]"#, "sources[0].stages[0].json.a", "empty key"),
        (r#"stages = [{ output = "message" }]"#, "sources[0].stages[0].output", "not extracted"),
        (r#"stages = [{ limit = { rate = 0 } }]"#, "sources[0].stages[0].limit.rate", "above 0"),
        (r#"stages = [{ cri = { strict = true } }]"#, "sources[0].stages[0].cri.strict", "unknown key"),
        (r#"stages = [{ drop = "x", labels = ["a"] }]"#, "sources[0].stages[0].labels", "extracts values"),
        (r#"root = "/var/log/pods""#, "sources[0].root", "kubernetes sources"),
    ];
    for (stages, key, words) in cases {
        let (err, cfg) = agent::source_exits_2(dir.path(), stages, key, words);
        assert!(err.contains(&cfg.display().to_string()), "names the file: {err}");
    }
}

#[test]
fn docker_fudge_goes_on_from_a_line_of_the_stream_its_label_names() {
    // A line that does not read takes the last time plus 1 ns of the lines
    // with its labels, `stream` included (Promtail's fudge): where the line's
    // `stream` label is already `stdout`, a Docker line of stdout is one of
    // them, as much as a JSON line with a time and no stream.
    let text = concat!(
        "{\"time\":\"2026-01-02T03:04:05Z\"}\n",
        "{\"log\":\"docked\\n\",\"stream\":\"stdout\",\"time\":\"2026-01-02T03:04:07Z\"}\n",
        "not json\n",
    );
    let stages = r#"stages = [{ static_labels = { stream = "stdout" } }, { docker = {} }]"#;
    let Shipped { r, agent, _dir } = ship("app.log", text, "", stages);
    let got = wait_stored(&r, &agent, 3);
    let not_json = got.iter().find(|e| e.line == "not json").expect("the line that does not read");
    assert_eq!(not_json.ts, 1_767_323_047_000_000_001);
}
