//! Hostile input: what an adversarial file or service must not be able to do.

use crate::agent;
use crate::common;

use std::io::Write;
use std::process::Command;
use std::time::Duration;

use agent::{agent_config, Agent};
use common::{bin, wait_for, Receiver};

#[test]
fn a_job_name_with_a_newline_cannot_write_config_through_convert() {
    let dir = tempfile::tempdir().unwrap();
    // The job name ends the comment it is written into and adds a proxy (which
    // would receive the basic-auth credentials) and a source reading /etc/shadow.
    let promtail = r#"clients:
  - url: http://loki:3100/loki/api/v1/push
    basic_auth: { username: u, password: p }
scrape_configs:
  - job_name: "x\n[client.proxy]\nproxy_url = \"http://evil:3128\"\n[[sources]]\ntype = \"file\"\ninclude = [\"/etc/shadow\"]\n#"
    static_configs:
      - labels: { job: app, __path__: /var/log/app.log }
"#;
    let file = dir.path().join("promtail.yaml");
    std::fs::write(&file, promtail).unwrap();
    let out = Command::new(bin()).args(["convert", "promtail"]).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let toml = String::from_utf8_lossy(&out.stdout);
    assert!(!toml.lines().any(|l| l.starts_with("proxy_url") || l.starts_with("[client.proxy]")), "{toml}");
    assert!(!toml.lines().any(|l| l.starts_with("include = [\"/etc/shadow\"]")), "{toml}");
    let cfg = dir.path().join("converted.toml");
    std::fs::write(&cfg, toml.as_bytes()).unwrap();
    let check = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
    assert!(
        !text.lines().any(|l| l.starts_with("include = [\"/etc/shadow\"]") || l.starts_with("[client.proxy]")),
        "{text}"
    );
    // A source name with a newline, written by hand, is refused.
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[[sources]]\ntype = \"stdin\"\nname = \"a\\nb\"\n").unwrap();
    let check = Command::new(bin()).args(["check", "--config"]).arg(&bad).output().unwrap();
    assert_eq!(check.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&check.stderr).contains("sources[0].name"));
}

#[test]
fn check_shows_where_a_proxy_is_but_not_its_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("t.toml");
    std::fs::write(&cfg, "[client]\nurl = \"http://x:3100\"\nproxy_url = \"http://user:s3cr3t@proxy.evil:3128\"\n[[sources]]\ntype = \"stdin\"\n")
        .unwrap();
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("proxy_url = \"http://<redacted>@proxy.evil:3128\""), "{text}");
    assert!(!text.contains("s3cr3t") && !text.contains("user:"), "{text}");
}

#[test]
fn top_stops_reading_an_endless_status_body() {
    let addr = serve(|c| {
        let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n[");
        let block = vec![b' '; 1 << 20];
        while c.write_all(&block).is_ok() {}
    });
    let started = std::time::Instant::now();
    let out = Command::new(bin()).args(["top", "--url", &format!("http://{addr}")]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("more than 16 MiB"), "{err}");
    eprintln!("gave up after {:?}", started.elapsed());
}

#[test]
fn a_query_string_in_the_push_url_is_refused_not_dropped_and_never_printed() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("t.toml");
    std::fs::write(
        &cfg,
        "[client]\nurl = \"https://logs.example.com/loki/api/v1/push?apikey=SEKRIT123\"\n[[sources]]\ntype = \"stdin\"\n",
    )
    .unwrap();
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(all.contains("client.url") && all.contains("query string"), "{all}");
    assert!(!all.contains("SEKRIT123"), "{all}");
}

#[test]
fn a_401_echoing_the_basic_credentials_without_base64_padding_is_scrubbed() {
    // "u123:secretpw1" is 14 bytes: its base64 ends in one `=`, which the echo drops.
    let unpadded = "dTEyMzpzZWNyZXRwdzE";
    let addr = serve(move |c| {
        let body = format!("invalid credentials: Basic {unpadded}");
        let _ =
            write!(c, "HTTP/1.1 401 Unauthorized\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    });
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.log");
    std::fs::write(&input, "one line\n").unwrap();
    let out = Command::new(bin())
        .args(["push", "--url", &format!("http://{addr}"), "--username", "u123", "--password-file"])
        .arg({
            let p = dir.path().join("pw");
            std::fs::write(&p, "secretpw1\n").unwrap();
            p
        })
        .arg(&input)
        .env("RUST_LOG", "debug")
        .output()
        .unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("401"), "{all}");
    assert!(all.contains("invalid credentials: Basic <redacted>"), "the body is shown, scrubbed: {all}");
    assert!(!all.contains(unpadded) && !all.contains("secretpw1"), "{all}");
}

/// A server on a free loopback port that reads each request's first bytes
/// and answers with `respond`; returns its address.
fn serve(respond: impl Fn(&mut std::net::TcpStream) + Send + Sync + Copy + 'static) -> String {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                let _ = c.read(&mut buf);
                respond(&mut c);
            });
        }
    });
    addr
}

/// A "billion laughs" file: nine levels of ten aliases each, 700-odd bytes.
fn laughs() -> String {
    let mut s =
        String::from("a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for i in 1..9 {
        let refs = vec![format!("*a{}", i - 1); 10].join(",");
        s.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    s
}

/// Runs `cmd`, killed after 30 s: its exit code and stderr.
fn run_bounded(cmd: &mut Command) -> (Option<i32>, String) {
    let mut child = cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > end {
            child.kill().unwrap();
            panic!("still running after 30 s (expanding the aliases?)");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status.code(), err)
}

/// #29: a 737-byte Promtail file made `convert` grow to 13-17 GB until
/// killed (the YAML loader copies an anchored value at each alias). Now the
/// aliases are counted first and such a file is refused, as is a YAML config.
#[test]
fn a_billion_laughs_file_is_refused_by_convert_and_check_without_expanding_it() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = laughs();
    assert!(bomb.len() < 800);
    let file = dir.path().join("promtail.yaml");
    std::fs::write(&file, format!("{bomb}scrape_configs: []\n")).unwrap();
    let (code, err) = run_bounded(Command::new(bin()).args(["convert", "promtail"]).arg(&file));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("promtail.yaml") && err.contains("aliases expand to more than"), "{err}");
    let cfg = dir.path().join("tailship.yaml");
    std::fs::write(&cfg, format!("{bomb}sources: [{{type: stdin}}]\n")).unwrap();
    let (code, err) = run_bounded(Command::new(bin()).args(["check", "--config"]).arg(&cfg));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("tailship.yaml") && err.contains("aliases expand to more than"), "{err}");
}

/// #29: a 50 MB Promtail file took 24 s and 1.6 GB to convert, and `check`
/// of its 81 MB output did not finish in 30 s. Inputs over 16 MiB are refused
/// before they are parsed, from a file or standard input, and so is a config.
#[test]
fn inputs_over_16_mib_are_refused_by_convert_and_check_before_they_are_parsed() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.yaml");
    let line = "# padding padding padding padding padding padding padding padding\n";
    std::fs::write(&big, line.repeat((17 << 20) / line.len())).unwrap();
    let (code, err) = run_bounded(Command::new(bin()).args(["convert", "promtail"]).arg(&big));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("big.yaml") && err.contains("over 16777216 bytes"), "{err}");
    let mut child = Command::new(bin())
        .args(["convert", "promtail", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The agent stops reading at the bound: a write after that may fail, which is fine.
    let _ = child.stdin.take().unwrap().write_all(&std::fs::read(&big).unwrap());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("over 16777216 bytes"));
    let cfg = dir.path().join("big.toml");
    std::fs::copy(&big, &cfg).unwrap();
    let (code, err) = run_bounded(Command::new(bin()).args(["check", "--config"]).arg(&cfg));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("big.toml") && err.contains("over 16777216 bytes"), "{err}");
}

/// #29 item 6: a json stage turning a value with thousands of distinct values
/// into a label made a stream per value, with no guard or warning. Past the
/// source's `max_streams` label sets, lines keep their file's stream: all
/// delivered, counted, said once.
#[test]
fn a_label_with_thousands_of_values_makes_no_more_than_max_streams_streams() {
    let r = Receiver::start(&["--max-query-limit", "100000"]);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    let n = 2000;
    let text: String = (0..n).map(|i| format!("{{\"id\":\"req-{i}\",\"msg\":\"m{i}\"}}\n")).collect();
    std::fs::write(&log, text).unwrap();
    let stages = "max_streams = 50\nstages = [{ json = { id = \"id\" }, labels = [\"id\"] }]";
    let cfg = agent_config(dir.path(), &r.base, &log.display().to_string(), "", stages);
    let agent = Agent::start(&cfg);
    let stored = || r.stats()["entries"].as_u64().unwrap_or(0);
    assert!(wait_for(Duration::from_secs(30), || stored() == n), "{} of {n} stored: {}", stored(), agent.stderr_text());
    let streams = r.stats()["streams"].as_u64().unwrap_or(0);
    let limited = agent.metric(r#"tailship_lines_repaired_total{reason="stream_limit",source="file-0"}"#);
    let err = agent.stderr_text();
    assert!(agent.terminate(Duration::from_secs(10)).success());
    // 50 label sets of the stages, and the file's own stream for the rest.
    assert_eq!(streams, 51, "streams");
    assert_eq!(limited, (n - 50) as f64);
    assert_eq!(err.matches("made max_streams label sets").count(), 1, "{err}");
}

/// #29 item 6: a stage list giving 16 labels passed `check` silently, and the
/// service then refused every line with 400.
#[test]
fn check_warns_when_a_source_may_carry_more_labels_than_the_service_takes() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..13).map(|i| format!("l{i}")).collect();
    let labels: Vec<String> = names.iter().map(|l| format!("{l} = \"{l}\"")).collect();
    let text = format!(
        "[client]\nurl = \"http://127.0.0.1:9/\"\n[[sources]]\ntype = \"file\"\ninclude = [\"{}/*.log\"]\n\
         labels = {{ job = \"a\" }}\nstages = [{{ logfmt = {{ }} }}, {{ labels = {{ {} }} }}]\n",
        dir.path().display(),
        labels.join(", ")
    );
    let cfg = dir.path().join("many.toml");
    std::fs::write(&cfg, &text).unwrap();
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // job, 13 from the stage, filename and host: 16.
    assert!(err.contains("sources[0].stages: a line may carry 16 labels (filename, host, job, l0,"), "{err}");
    // One fewer: no warning.
    let fewer = text.replace(", l12 = \"l12\"", "");
    std::fs::write(&cfg, fewer).unwrap();
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("labels ("), "{}", String::from_utf8_lossy(&out.stderr));
}
