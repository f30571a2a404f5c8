//! Config loading through the real binary: `tailship check` and `run` with
//! good and bad configs. Every mistake exits 2 and names the file and the key.

use crate::common;

use std::process::{Command, Output};

use common::bin;

fn check(text: &str, ext: &str, env: &[(&str, &str)]) -> (Output, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("tailship.{ext}"));
    std::fs::write(&path, text).unwrap();
    let mut cmd = Command::new(bin());
    cmd.args(["check", "--config"]).arg(&path);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // Keep the dir alive until the command ran.
    drop(dir);
    (out, all)
}

fn assert_bad(text: &str, key: &str, words: &str) {
    let (out, all) = check(text, "toml", &[]);
    assert_eq!(out.status.code(), Some(2), "exit 2 for {key}: {all}");
    assert!(all.contains(&format!("key `{key}`")), "names key {key}: {all}");
    assert!(all.contains(words), "says `{words}`: {all}");
    assert!(all.contains("tailship.toml"), "names the file: {all}");
}

#[test]
fn the_documented_example_config_checks() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/tailship.toml");
    let out = Command::new(bin()).args(["check", "--config"]).arg(&path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("url = \"http://127.0.0.1:3100\""));
    for name in ["demo.toml", "sidecar.toml"] {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config").join(name);
        let out = Command::new(bin())
            .args(["check", "--config"])
            .arg(&p)
            .env("DEMO_DIR", "/tmp")
            .env("DEMO_URL", "http://127.0.0.1:1")
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn a_misspelled_key_exits_2_naming_it() {
    assert_bad("[client]\nurll = \"http://x\"\n", "client.urll", "unknown key");
}

#[test]
fn every_kind_of_mistake_names_its_key() {
    assert_bad("[client]\ntimeout = \"5x\"\n", "client.timeout", "invalid duration");
    assert_bad("[client]\ntimeout = 5\n", "client.timeout", "needs a unit");
    assert_bad("[queue]\nmax_bytes = \"lots\"\n", "queue.max_bytes", "invalid size");
    assert_bad("[server]\nlisten = 9080\n", "server.listen", "invalid type");
    assert_bad("[client]\ncompression = \"zstd\"\n", "client.compression", "unknown variant");
    assert_bad("[client.batch]\nmax_bytes = \"8MiB\"\n", "client.batch.max_bytes", "over 4 MiB");
    assert_bad(
        "[[sources]]\ninclude = [\"/x/*.log\"]\nlabels = { \"bad-name\" = \"x\" }\n",
        "sources[0].labels.bad-name",
        "not a valid label name",
    );
    assert_bad(
        "[[sources]]\ninclude = [\"/x/*.log\"]\nstages = [{ regex = '(?P<a>[' }]\n",
        "sources[0].stages[0].regex",
        "bad regex",
    );
    assert_bad(
        "[[sources]]\ninclude = [\"/x/*.log\"]\nstages = [{ drop = '(' }]\n",
        "sources[0].stages[0].drop",
        "bad regex",
    );
    assert_bad(
        "[[sources]]\ninclude = [\"/x/*.log\"]\nmultiline = { start = '[' }\n",
        "sources[0].multiline.start",
        "bad regex",
    );
    assert_bad(
        "[[sources]]\ninclude = [\"/x/*.log\"]\nstages = [{ timestamp = { source = \"ts\", format = \"rfc3339\" } }]\n",
        "sources[0].stages[0].timestamp.source",
        "not extracted by an earlier stage",
    );
    assert_bad("[[sources]]\ninclude = []\n", "sources[0].include", "at least one glob");
    assert_bad(
        "[client]\nbasic_auth = { username = \"u\", password_file = \"/nonexistent/pw\" }\n",
        "client.basic_auth.password_file",
        "cannot read",
    );
    assert_bad("[client]\nbearer_token_file = \"/nonexistent/tok\"\n", "client.bearer_token_file", "cannot read");
    assert_bad("[client]\nurl = \"ftp://x\"\n", "client.url", "not http or https");
    assert_bad("[client]\ntenant_id = \"a|b\"\n", "client.tenant_id", "cannot carry");
    assert_bad(
        "[[sources]]\ntype = \"stdin\"\nlabels = { job = \"${UNSET_VAR_FOR_TEST}\" }\n",
        "sources[0].labels.job",
        "UNSET_VAR_FOR_TEST is not set",
    );
    // Found by an operator: `${1}` in a replace stage was read as an unset
    // variable. No variable's name starts with a digit: it is kept as the
    // capture group it is.
    let (out, all) = check(
        "[[sources]]\ntype = \"stdin\"\nstages = [{ replace = 'user=(\\w+)', with = \"user=${1}\" }]\n",
        "toml",
        &[],
    );
    assert!(out.status.success(), "{all}");
    assert!(all.contains("user=${1}"), "{all}");
}

#[test]
fn several_mistakes_are_reported_at_once() {
    let (out, all) = check(
        "[client]\nurll = 1\n[[sources]]\ninclude = [\"/x/*.log\"]\nlabels = { \"a-b\" = \"x\" }\nstages = [{ drop = '(' }]\n",
        "toml",
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(all.contains("3 problems"), "{all}");
    for key in ["client.urll", "sources[0].labels.a-b", "sources[0].stages[0].drop"] {
        assert!(all.contains(key), "{key}: {all}");
    }
}

#[test]
fn run_with_a_bad_config_exits_2_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, "[client]\nurll = \"x\"\n").unwrap();
    let out = Command::new(bin()).args(["run", "--config"]).arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("client.urll"));
    let out = Command::new(bin()).args(["run", "--config", "/nonexistent/tailship.toml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/tailship.toml"));
}

#[test]
fn check_never_prints_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let pw = dir.path().join("pw");
    std::fs::write(&pw, "hunter2-password\n").unwrap();
    let text = format!(
        "[client]\nbasic_auth = {{ username = \"123456\", password_file = \"{}\" }}\n[[sources]]\ntype = \"stdin\"\n",
        pw.display()
    );
    let (out, all) = check(&text, "toml", &[]);
    assert!(out.status.success(), "{all}");
    assert!(!all.contains("hunter2"), "{all}");
    assert!(all.contains("<redacted>"), "{all}");
    let (out, all) = check(
        "[client]\nbearer_token = \"${TOKEN}\"\n[[sources]]\ntype = \"stdin\"\n",
        "toml",
        &[("TOKEN", "bearer-secret-xyz")],
    );
    assert!(out.status.success(), "{all}");
    assert!(!all.contains("bearer-secret-xyz"), "{all}");
}

#[test]
fn yaml_env_overrides_and_var_expansion() {
    let yaml = "client:\n  url: http://127.0.0.1:3100\n  batch:\n    max_wait: 2s\nsources:\n  - type: file\n    include: [\"/var/log/${APP:-app}/*.log\"]\n    labels:\n      pod: ${POD_NAME}\n";
    let (out, all) = check(
        yaml,
        "yaml",
        &[
            ("POD_NAME", "web-1"),
            ("TAILSHIP_CLIENT__URL", "http://loki:3100"),
            ("TAILSHIP_CLIENT__TENANT_ID", "42"),
            ("TAILSHIP_CLIENT__TLS__INSECURE_SKIP_VERIFY", "true"),
            ("TAILSHIP_URL", "http://not-a-config-key"),
        ],
    );
    assert!(out.status.success(), "{all}");
    assert!(all.contains("url = \"http://loki:3100\""), "{all}");
    assert!(all.contains("tenant_id = \"42\""), "{all}");
    assert!(all.contains("insecure_skip_verify = true"), "{all}");
    assert!(all.contains("pod = \"web-1\""), "{all}");
    assert!(all.contains("/var/log/app/*.log"), "{all}");
    assert!(all.contains("max_wait = \"2s\""), "{all}");
    let (out, all) = check("client:\n  url: [1\n", "yml", &[]);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(all.contains("cannot parse"), "{all}");
    let (out, all) = check("[client]\n", "toml", &[("TAILSHIP_CLIENT__NOPE", "1")]);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(all.contains("client.nope"), "{all}");
}

#[test]
fn run_without_config_reads_the_debian_default_and_says_so() {
    if std::path::Path::new("/etc/tailship/tailship.toml").exists() {
        eprintln!("SKIPPED: /etc/tailship/tailship.toml exists here (the package is installed)");
        return;
    }
    let out = Command::new(bin()).arg("run").env_remove("TAILSHIP_CONFIG").env("RUST_LOG", "info").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no --config given"), "says where it looks: {err}");
    assert!(err.contains("/etc/tailship/tailship.toml: cannot read config file"), "{err}");
}

#[test]
fn a_config_without_sources_is_refused() {
    assert_bad("[client]\nurl = \"http://127.0.0.1:3100\"\n", "sources", "no [[sources]]");
}

/// Found trying configs as an operator: overlapping globs shipped every line
/// twice, `/dev/zero` as an include said nothing, and a `max_line_bytes`
/// above the service's line limit got whole batches refused. `check` says so
/// (the config stays valid: each can be meant).
#[test]
fn check_warns_about_overlapping_globs_devices_and_lines_over_the_service_limit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.log"), "x\n").unwrap();
    std::fs::write(dir.path().join("other.txt"), "x\n").unwrap();
    let d = dir.path().display();
    let text = format!(
        r#"[[sources]]
type = "file"
include = ["{d}/*.log"]
[[sources]]
type = "file"
include = ["{d}/app.*", "/dev/zero"]
max_line_bytes = "1MiB"
"#
    );
    let (out, all) = check(&text, "toml", &[]);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("sources[0], sources[1] all match") && err.contains("app.log"), "{err}");
    assert!(!err.contains("other.txt"), "{err}");
    assert!(err.contains("sources[1].include: /dev/zero is a device; it is never read"), "{err}");
    assert!(err.contains("sources[1].max_line_bytes: 1048576 is above the 256 KiB line limit"), "{err}");
    // stdout is still the effective config, warnings apart.
    assert!(!String::from_utf8_lossy(&out.stdout).contains("warning"));
}

/// Found trying mistakes as an operator: `--org-id 'a|b'` was blamed on
/// `client.tenant_id`, a bad `TAILSHIP_*` override on the file, an unset
/// variable in a secret said only "bad `${...}` reference", and each unset
/// variable was reported twice.
#[test]
fn errors_name_where_the_wrong_value_came_from_once() {
    let out =
        Command::new(bin()).args(["push", "--org-id", "a|b", "--url", "http://127.0.0.1:9", "-"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--org-id") && !err.contains("client.tenant_id"), "{err}");

    let (out, all) = check("[[sources]]\ntype = \"stdin\"\n", "toml", &[("TAILSHIP_CLIENT__TIMEOUT", "abc")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(all.contains("environment variable TAILSHIP_CLIENT__TIMEOUT: key `client.timeout`"), "{all}");

    let demo = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/demo.toml")).unwrap();
    let (out, all) = check(&demo, "toml", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(all.matches("alerts[0].webhook_url").count(), 1, "{all}");
    assert_eq!(all.matches("key `client.url`").count(), 1, "{all}");
    assert!(all.contains("alerts[0].webhook_url`: environment variable DEMO_URL is not set"), "{all}");
}

#[test]
fn check_prints_sizes_and_durations_as_people_write_them() {
    let (out, _) = check(
        "[[sources]]\ntype = \"file\"\ninclude = [\"/var/log/*.log\"]\nignore_older = \"24h\"\n[[sources]]\ntype = \"stdin\"\n",
        "toml",
        &[],
    );
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ignore_older = \"24h\""), "{text}");
    assert!(text.contains("max_line_bytes = \"256KiB\"") && text.contains("max_bytes = \"1MiB\""), "{text}");
    // The stdin source has no file-only keys.
    let stdin = text.split("[[sources]]").nth(2).unwrap();
    assert!(
        stdin.contains("type = \"stdin\"") && !stdin.contains("include") && !stdin.contains("scan_interval"),
        "{stdin}"
    );
    // What check prints is a config that checks the same.
    let (again, all) = check(&text.replace("# ", "#"), "toml", &[]);
    assert!(again.status.success(), "{all}");
}

/// Found by an operator: `check` needed `--config` where `run` has a default,
/// and under systemd (`JOURNAL_STREAM` set) log lines began with a space.
/// `check` without `--config` reads the default config, as `run` does.
#[test]
fn check_without_config_reads_the_default_and_systemd_log_lines_start_at_the_level() {
    if std::path::Path::new("/etc/tailship/tailship.toml").exists() {
        eprintln!("skipped: the package's config is installed here, so a missing default cannot be shown");
        return;
    }
    let out = Command::new(bin())
        .arg("check")
        .env_remove("TAILSHIP_CONFIG")
        .env("JOURNAL_STREAM", "8:1234")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("/etc/tailship/tailship.toml"), "names the default config: {err}");
    assert!(err.contains("no --config given"), "{err}");
    // The log line (the error report after it is indented on purpose).
    let log = err.lines().find(|l| l.contains("no --config given")).unwrap_or_default();
    assert!(log.starts_with("INFO "), "a log line under systemd starts at its level: {log:?}");
}

#[test]
fn a_misspelled_http_client_key_of_a_discovery_table_exits_2_naming_it() {
    // The HTTP client keys are written once for every discovery's table
    // (src/config/http_table.rs); a mistake among them is still an unknown key.
    let cases = [
        ("marathon", "servers = [\"http://m:8080\"]\nbearer_tokn = \"x\"\n", "bearer_tokn"),
        ("digitalocean", "proxy_urll = \"http://p:3128\"\n", "proxy_urll"),
        ("ec2", "region = \"us-east-1\"\n[sources.ec2.tls]\nca_flie = \"/x\"\n", "tls.ca_flie"),
        ("azure", "subscription_id = \"s\"\nno_proxyy = \"x\"\n", "no_proxyy"),
        ("dockerswarm", "role = \"tasks\"\n[sources.dockerswarm.oauth2]\nclient_idd = \"c\"\n", "oauth2.client_idd"),
        ("kubernetes", "role = \"node\"\nproxy_connect_headers = {}\n", "proxy_connect_headers"),
    ];
    for (table, body, key) in cases {
        let text = format!("[[sources]]\ntype = \"file\"\nname = \"d\"\n[sources.{table}]\n{body}");
        assert_bad(&text, &format!("sources[0].{table}.{key}"), "unknown key");
    }
}

#[test]
fn a_misspelled_key_of_any_discovery_table_exits_2_naming_it() {
    // The discovery tables are written from one list (src/config/discoveries.rs):
    // each is still a table of its own name, and a mistake inside it an unknown key.
    let cases = [
        ("file", "consul", "server = \"c:8500\"\nservces = [\"web\"]\n", "servces"),
        ("file", "targets_from", "files = [\"/t/*.json\"]\nrefresh = \"1m\"\n", "refresh"),
        ("file", "serverset", "servers = [\"z:2181\"]\npath = [\"/s\"]\n", "path"),
        ("file", "nerve", "servers = [\"z:2181\"]\ntimout = \"10s\"\n", "timout"),
        ("file", "dns", "names = [\"x.example\"]\nkind = \"A\"\n", "kind"),
        ("file", "triton", "account = \"a\"\ndns_suffx = \"x\"\n", "dns_suffx"),
        ("file", "gce", "project = \"p\"\nzonee = \"z\"\n", "zonee"),
        ("file", "openstack", "region = \"r\"\nrolee = \"instance\"\n", "rolee"),
        ("docker", "docker", "host = \"unix:///var/run/docker.sock\"\nfilter = {}\n", "filter"),
    ];
    for (kind, table, body, key) in cases {
        let text = format!("[[sources]]\ntype = \"{kind}\"\nname = \"d\"\n[sources.{table}]\n{body}");
        assert_bad(&text, &format!("sources[0].{table}.{key}"), "unknown key");
    }
}

/// A config with no `client.url` pushed to http://127.0.0.1:3100 without a
/// word. `check` and `run` now say which service it pushes to; a URL given
/// by `TAILSHIP_CLIENT__URL` counts as given, and each `[[clients]]` entry
/// without one is named.
#[test]
fn a_config_without_client_url_says_at_start_and_in_check_which_service_it_pushes_to() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:{port}\"\n[positions]\npath = \"{d}/positions.json\"\n\
         [[sources]]\ntype = \"file\"\ninclude = [\"{d}/*.log\"]\n"
    );
    let said = "client.url: not set: lines are pushed to http://127.0.0.1:3100, the default";
    let (out, all) = check(&text, "toml", &[]);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(String::from_utf8_lossy(&out.stderr).contains(said), "{all}");
    let (out, all) = check(&text, "toml", &[("TAILSHIP_CLIENT__URL", "http://127.0.0.1:3100")]);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(!all.contains("not set"), "a URL from the environment is a URL given: {all}");
    let listed =
        format!("{text}[[clients]]\nname = \"a\"\nurl = \"http://127.0.0.1:3100\"\n[[clients]]\nname = \"b\"\n");
    let (out, all) = check(&listed, "toml", &[]);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("clients[1].url: not set: lines are pushed to http://127.0.0.1:3100"), "{all}");
    assert!(!all.contains("clients[0].url"), "{all}");
    // `run` says it at start.
    let path = dir.path().join("tailship.toml");
    std::fs::write(&path, &text).unwrap();
    let mut child = Command::new(bin())
        .args(["run", "--config"])
        .arg(&path)
        .env("RUST_LOG", "warn")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut log = String::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !log.contains("not set: lines are pushed to http://127.0.0.1:3100") {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => log.push_str(&(line + "\n")),
            Err(_) => break,
        }
    }
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
    assert!(log.contains("key=client.url") && log.contains("pushed to http://127.0.0.1:3100"), "{log}");
}
