//! Whole conversions: what each Promtail key becomes, what is reported, and
//! that the output compiles as `tailship check` compiles it.

use std::path::Path;

use super::{promtail, promtail_with, Conversion, Options};
use crate::config::{DropSpec, OneOrMany, Picks};

fn convert(yaml: &str) -> Conversion {
    promtail(yaml).unwrap_or_else(|e| panic!("{e}"))
}

/// The untranslated keys, in order.
fn skipped(c: &Conversion) -> Vec<&str> {
    c.untranslated.iter().map(|i| i.key.as_str()).collect()
}

/// Compiles the output as `tailship check` does; panics with the problems.
fn compiles(c: &Conversion) -> crate::config::Config {
    let file = Path::new("converted.toml");
    let (config, errors) = crate::config::load_parts(file, &c.toml, &[]);
    assert!(errors.is_empty(), "{errors:?}\n{}", c.toml);
    let plan = crate::plan::compile(config.expect("a config"), file).unwrap_or_else(|e| panic!("{e}\n{}", c.toml));
    plan.config
}

const JOB: &str = "scrape_configs:\n  - job_name: app\n    static_configs:\n      - labels: { job: app, __path__: /var/log/app.log }\n";

#[test]
fn mistakes_promtail_refuses_fail_the_conversion_by_key() {
    let err = promtail(&format!(
        r#"{JOB}    pipeline_stages:
      - jsonn: {{ expressions: {{ a: a }} }}
      - regex: {{ expression: '(?P<ts>\S+) (a' }}
      - regex: {{ expression: '(?P<lvl>\w+)' }}
      - timestamp: {{ source: tss, format: RFC3339 }}
      - labels: {{ level: lvll }}
      - match: {{ selector: 'lvl="debug"', action: drop }}
"#
    ))
    .expect_err("refused")
    .to_string();
    for key in [
        "scrape_configs[0].pipeline_stages[0].jsonn: unknown stage `jsonn`",
        "scrape_configs[0].pipeline_stages[1].regex.expression: bad regex",
        "scrape_configs[0].pipeline_stages[5].match.selector: not a selector (Promtail refuses it too)",
    ] {
        assert!(err.contains(key), "{key}\n{err}");
    }
    // A stage reading a name no stage extracts does nothing in Promtail
    // (skipped on every line): left out and listed, not refused.
    let c = convert(&format!(
        r#"{JOB}    pipeline_stages:
      - regex: {{ expression: '(?P<time>\S+) (?P<lvl>\w+)' }}
      - timestamp: {{ source: tss, format: RFC3339 }}
      - labels: {{ level: lvll }}
"#
    ));
    for key in
        ["scrape_configs[0].pipeline_stages[1].timestamp.source", "scrape_configs[0].pipeline_stages[2].labels.level"]
    {
        let item =
            c.untranslated.iter().find(|i| i.key == key).unwrap_or_else(|| panic!("{key}: {:?}", c.untranslated));
        assert!(item.message.contains("extracted by no stage"), "{}", item.message);
    }
    compiles(&c);
    // A name only an untranslated stage extracts is left out, not refused.
    let c = convert(&format!(
        "{JOB}    pipeline_stages:\n      - eventlogmessage: {{}}\n      - labels: {{ level: lvl }}\n"
    ));
    assert!(skipped(&c).contains(&"scrape_configs[0].pipeline_stages[1].labels.level"));
}

#[test]
fn re2_regexes_carry_over() {
    let c = convert(&format!(
        r#"{JOB}    pipeline_stages:
      - multiline: {{ firstline: '^\d{{4}}-\d{{2}}-\d{{2}}|^\[|^{{' }}
      - regex: {{ expression: '^\Q[x]\E (?<rest>.*)\z' }}
      - drop: {{ expression: '^{{"health' }}
      - replace: {{ expression: '{{(\d+)}}', replace: 'N' }}
"#
    ));
    assert!(c.untranslated.iter().all(|i| !i.key.contains("pipeline_stages")), "{:?}", c.untranslated);
    let config = compiles(&c);
    assert_eq!(config.sources[0].multiline.as_ref().map(|m| m.start.as_str()), Some(r"^\d{4}-\d{2}-\d{2}|^\[|^{"));
}

#[test]
fn client_keys_map_to_the_client_section() {
    let dir = tempfile::tempdir().unwrap();
    let (token, ca) = (dir.path().join("token"), dir.path().join("ca.pem"));
    std::fs::write(&token, "t").unwrap();
    std::fs::write(&ca, "").unwrap();
    let c = convert(&format!(
        r#"clients:
  - url: https://logs.example.com/loki/api/v1/push
    authorization: {{ type: Bearer, credentials_file: {token} }}
    headers: {{ X-Team: payments }}
    timeout: 5s
    batchsize: 10485760
    backoff_config: {{ min_period: 1s, max_period: 1m, max_retries: 20 }}
    tls_config: {{ ca_file: {ca}, server_name: logs.internal, insecure_skip_verify: true }}
    drop_rate_limited_batches: true
  - url: http://backup:3100/loki/api/v1/push
{JOB}"#,
        token = token.display(),
        ca = ca.display()
    ));
    let config = compiles(&c);
    let cl = &config.client;
    assert_eq!(
        (cl.url.as_str(), cl.api_prefix.as_deref().unwrap_or_default()),
        ("https://logs.example.com", "/loki/api/v1")
    );
    assert_eq!(cl.bearer_token_file.as_deref(), Some(token.as_path()));
    assert!(cl.headers.contains_key("X-Team"));
    assert_eq!(cl.batch.max_bytes.get(), crate::config::MAX_BATCH_BYTES, "capped at 4 MiB");
    assert_eq!((cl.retry.max_retries, cl.retry.max_backoff.get().as_secs()), (20, 60));
    assert!(cl.tls.insecure_skip_verify && cl.tls.ca_file.is_some());
    assert_eq!(cl.tls.server_name.as_deref(), Some("logs.internal"));
    assert!(skipped(&c).is_empty(), "{:?}", skipped(&c));
    assert!(c.notes.iter().any(|n| n.key == "clients[0].drop_rate_limited_batches"), "kept ours, noted");
    assert_eq!(config.clients.len(), 2, "every client is translated");
    assert_eq!(config.clients[1].url, "http://backup:3100");
    assert!(c.notes.iter().any(|n| n.key == "clients[0].batchsize"));
}

#[test]
fn stages_that_cannot_be_placed_are_reported_and_left_out() {
    let c = convert(&format!(
        r#"{JOB}    pipeline_stages:
      - docker: {{}}
      - regex: {{ expression: '^(?P<lvl>\w+)' }}
      - labels: {{ level: lvl, stream: }}
      - multiline: {{ firstline: '^\d' }}
      - timestamp: {{ source: lvl, format: Stamp }}
      - output: {{ source: lvl }}
      - json: {{ expressions: {{ a: 'b[*].c', n: name }}, drop_malformed: true }}
      - regex: {{ expression: '(?P<x>a)', source: lvl }}
      - drop: {{ source: lvl, value: debug }}
      - replace: {{ expression: 'a|(b)', replace: x }}
      - tenant: {{ value: team-b }}
      - labeldrop: [job]
      - decolorize: {{}}
"#
    ));
    assert_eq!(
        skipped(&c),
        ["clients", "scrape_configs[0].pipeline_stages[9].replace"],
        "a multiline after other stages is a stage at the same place"
    );
    let config = compiles(&c);
    let s = &config.sources[0];
    assert_eq!(s.tenant_id.as_deref(), Some("team-b"));
    assert!(!s.labels.contains_key("job"), "labeldrop removes a static label");
    let pairs = |v: &[(&str, &str)]| Picks(v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect());
    // docker labels `stream` by itself, as Promtail's does.
    assert_eq!(s.stages[0].labels, None);
    assert_eq!(s.stages[1].labels, Some(pairs(&[])), "a regex stage makes no label by itself");
    assert_eq!(s.stages[2].labels, Some(pairs(&[("level", "lvl"), ("stream", "stream")])), "a labels stage of its own");
    assert!(s.stages[3].multiline.is_some(), "the multiline after docker");
    let t = s.stages[4].timestamp.as_ref().expect("a timestamp stage");
    assert_eq!((t.format.as_str(), t.action_on_failure.as_deref()), ("%b %e %H:%M:%S%.f", Some("fudge")));
    assert_eq!(s.stages[5].output.as_deref(), Some("lvl"));
    assert_eq!(s.stages[6].json.as_ref().map(|j| j.len()), Some(2), "JMESPath beyond paths carries over");
    assert_eq!(s.stages[6].drop_malformed, Some(true));
    assert_eq!((s.stages[7].regex.as_deref(), s.stages[7].source.as_deref()), (Some("(?P<x>a)"), Some("lvl")));
    let Some(DropSpec::Rule(d)) = &s.stages[8].drop else { panic!("{:?}", s.stages[8]) };
    assert_eq!((d.source.clone(), d.value.as_deref()), (Some(OneOrMany::One("lvl".into())), Some("debug")));
    assert!(s.stages[9].decolorize.is_some());
    assert_eq!(s.stages.len(), 10);
}

#[test]
fn relabel_rules_of_a_file_job_are_kept_as_they_are() {
    let c = convert(&format!(
        r#"clients:
  - url: http://loki:3100/loki/api/v1/push
    external_labels: {{ env: dev, region: eu, job: other }}
{JOB}    relabel_configs:
      - target_label: env
        replacement: prod
      - source_labels: [__path__]
        regex: '.*\.gz'
        action: drop
      - action: labelmap
        regex: '__meta_(.+)'
        replacement: 'm_${{1}}'
      - source_labels: [job, env]
        separator: '/'
        target_label: shard
        action: hashmod
        modulus: 8
      - source_labels: [a]
        action: explode
      - source_labels: [a]
        action: hashmod
        target_label: b
"#
    ));
    assert_eq!(
        skipped(&c),
        ["scrape_configs[0].relabel_configs[4].action", "scrape_configs[0].relabel_configs[5].modulus"],
        "{:?}",
        c.untranslated
    );
    let config = compiles(&c);
    let src = &config.sources[0];
    assert_eq!(src.labels.get("region").map(String::as_str), Some("eu"));
    assert_eq!(src.labels.get("job").map(String::as_str), Some("app"), "the job's own label wins");
    assert_eq!(src.relabel.len(), 4, "{}", c.toml);
    assert_eq!(src.relabel[0].target_label.as_deref(), Some("env"));
    assert_eq!(src.relabel[0].replacement.as_deref(), Some("prod"));
    assert_eq!(src.relabel[1].regex.as_deref(), Some(r".*\.gz"));
    assert_eq!(src.relabel[2].replacement.as_deref(), Some("m_${1}"), "{}", c.toml);
    assert_eq!(src.relabel[3].separator.as_deref(), Some("/"));
    assert_eq!(src.relabel[3].modulus, Some(8));
    assert_eq!(src.relabel[3].source_labels, ["job", "env"]);
}

#[test]
fn dollars_stay_literal_and_env_references_stay_references() {
    let c = convert(&format!(
        r#"clients:
  - url: http://loki:3100/loki/api/v1/push
    basic_auth: {{ username: "${{LOKI_USER}}", password: "pa$$word" }}
    external_labels: {{ host: "${{HOST:node-a}}", dc: "${{DC:-eu}}" }}
{JOB}    pipeline_stages:
      - drop: {{ expression: 'end$' }}
"#
    ));
    assert!(c.toml.contains(r#"username = "${LOKI_USER}", password = "pa$$$$word""#), "{}", c.toml);
    assert!(c.toml.contains(r#"host = "${HOST:-node-a}""#), "{}", c.toml);
    assert!(c.toml.contains(r#"dc = "${DC:-eu}""#), "{}", c.toml);
    assert!(c.toml.contains("{ drop = \"end$\" }"), "{}", c.toml);
    assert!(c.notes.iter().any(|n| n.message.contains("expand-env")));
    let file = Path::new("converted.toml");
    let env = [("LOKI_USER".to_string(), "u".to_string())];
    let (config, errors) = crate::config::load_parts(file, &c.toml, &env);
    assert!(errors.is_empty(), "{errors:?}");
    let config = config.expect("config");
    assert!(matches!(&config.sources[0].stages[0].drop, Some(crate::config::DropSpec::Regex(r)) if r == "end$"));
    assert_eq!(config.client.basic_auth.map(|b| b.username), Some("u".to_string()));
    assert_eq!(config.sources[0].labels.get("host").map(String::as_str), Some("node-a"));
    assert_eq!(config.sources[0].labels.get("dc").map(String::as_str), Some("eu"));
}

#[test]
fn unknown_top_level_and_job_keys_are_reported() {
    let c = convert(&format!("tracing: {{ enabled: true }}\n{JOB}    decompresion: {{ enabled: true }}\n"));
    assert_eq!(skipped(&c), ["clients", "scrape_configs[0].decompresion"]);
    // Promtail sends no span without a Jaeger address in its environment.
    assert!(!c.toml.contains("[tracing]"), "{}", c.toml);
    let jaeger = Options { jaeger: Some("jaeger:6831".into()), ..Options::default() };
    let c = promtail_with(&format!("tracing: {{ enabled: true }}\n{JOB}"), &jaeger).unwrap();
    assert!(c.toml.contains("[tracing]\nenabled = true"), "{}", c.toml);
    assert!(c.notes.iter().any(|n| n.message.contains("jaeger:6831")), "{:?}", c.notes);
}

#[test]
fn file_sd_configs_become_a_source_reading_the_target_files() {
    let c = convert(
        "scrape_configs:\n  - job_name: sd\n    file_sd_configs:\n      - files: [/etc/promtail/targets/*.yml]\n        \
         refresh_interval: 1m\n      - files: [/etc/promtail/more.json]\n    relabel_configs:\n      \
         - { source_labels: [__meta_filepath], target_label: from }\n",
    );
    assert_eq!(skipped(&c), ["clients"]);
    let config = compiles(&c);
    let sd = config.sources[0].targets_from.as_ref().expect("targets_from");
    assert_eq!(sd.files, ["/etc/promtail/targets/*.yml", "/etc/promtail/more.json"]);
    assert_eq!(sd.refresh_interval.get(), std::time::Duration::from_secs(60));
    assert_eq!(config.sources[0].relabel.len(), 1);
    assert!(config.sources[0].include.is_empty());
}

#[test]
fn decompression_becomes_the_file_source_s_table() {
    let c = convert(&format!("{JOB}    decompression: {{ enabled: true, initial_delay: 10s, format: bz2 }}\n"));
    assert!(
        c.toml.contains(r#"decompression = { enabled = true, initial_delay = "10s", format = "bz2" }"#),
        "{}",
        c.toml
    );
    let config = compiles(&c);
    let d = config.sources[0].decompression.as_ref().expect("decompression");
    assert_eq!(d.format, Some(crate::config::CompressionFormat::Bzip2));
    assert_eq!(d.initial_delay.get(), std::time::Duration::from_secs(10));
    let off = convert(&format!("{JOB}    decompression: {{ enabled: false }}\n"));
    assert!(!off.toml.contains("decompression"), "{}", off.toml);
    let bad = promtail(&format!("{JOB}    decompression: {{ enabled: true, format: zip }}\n")).unwrap_err();
    assert!(bad.to_string().contains("scrape_configs[0].decompression.format"), "{bad}");
}

#[test]
fn container_stages_are_left_out_of_a_journal_job() {
    let c = convert(
        "scrape_configs:\n  - job_name: j\n    journal: { labels: { job: j } }\n    pipeline_stages:\n      \
         - cri: {}\n      - regex: { expression: '(?P<user>\\w+)' }\n",
    );
    assert_eq!(skipped(&c), ["clients", "scrape_configs[0].pipeline_stages"]);
    assert!(c.toml.contains("stages = [\n  { regex = '(?P<user>\\w+)', labels = [] },\n]"), "{}", c.toml);
    let config = compiles(&c);
    assert_eq!(config.sources[0].stages.len(), 1);
}

#[test]
fn a_match_nests_its_stages_and_its_static_labels_act_per_line() {
    let c = convert(&format!(
        r#"{JOB}    pipeline_stages:
      - regex: {{ expression: '^(?P<lvl>\w+)' }}
      - labels: {{ lvl: }}
      - match:
          selector: '{{lvl="error"}}'
          stages:
            - static_labels: {{ team: a }}
            - labeldrop: [job]
            - tenant: {{ value: errs }}
            - regex: {{ expression: 'id=(?P<id>\d+)' }}
            - match: {{ selector: '{{lvl="error"}} |= "x"', action: drop, drop_counter_reason: xs }}
      - match: {{ selector: '{{lvl=~"a{{"}} /* RE2 reads a bare brace as itself */', action: drop }}
      - match: {{ selector: '{{lvl="info"}}', action: drop, stages: [ {{ output: {{ source: lvl }} }} ] }}
      - output: {{ source: id }}
      - labelallow: [lvl, job]
"#
    ));
    assert_eq!(skipped(&c), ["clients", "scrape_configs[0].pipeline_stages[4].match",]);
    let config = compiles(&c);
    let s = &config.sources[0];
    assert!(!s.labels.contains_key("team"), "a static label under a match is not hoisted to the source");
    let m = s.stages[2].match_.as_ref().expect("the match");
    assert_eq!((m.selector.as_str(), m.stages.len()), (r#"{lvl="error"}"#, 5));
    assert_eq!(m.stages[0].static_labels.as_ref().map(|l| l["team"].as_str()), Some("a"));
    assert_eq!(m.stages[1].labeldrop, Some(vec!["job".to_string()]));
    assert_eq!(m.stages[2].tenant.as_ref().and_then(|t| t.value.as_deref()), Some("errs"));
    assert_eq!(s.tenant_id, None, "a fixed tenant under a match is not the source's");
    let inner = m.stages[4].match_.as_ref().expect("the nested match");
    assert_eq!((inner.action.as_deref(), inner.reason.as_deref()), (Some("drop"), Some("xs")));
    let braced = s.stages[3].match_.as_ref().expect("a selector with an RE2 regex and a Go comment");
    assert_eq!(braced.action.as_deref(), Some("drop"));
    assert_eq!(s.stages[4].output.as_deref(), Some("id"), "a name a match extracts counts as extracted after it");
    assert_eq!(s.stages[5].labelallow, Some(vec!["lvl".to_string(), "job".to_string()]));
    assert_eq!(s.stages.len(), 6);
}

#[test]
fn a_docker_sd_job_becomes_a_docker_source_with_its_rules() {
    let yaml = r#"clients:
  - url: http://loki:3100/loki/api/v1/push
scrape_configs:
  - job_name: flog_scrape
    docker_sd_configs:
      - host: unix:///var/run/docker.sock
        refresh_interval: 5s
        filters:
          - name: name
            values: [flog]
    relabel_configs:
      - source_labels: ['__meta_docker_container_name']
        regex: '/(.*)'
        target_label: 'container'
      - source_labels: ['__meta_docker_container_log_stream']
        target_label: 'logstream'
      - source_labels: ['__meta_docker_container_label_logging_jobname']
        target_label: 'job'
  - job_name: remote
    docker_sd_configs:
      - host: tcp://10.0.0.5:2376
        host_networking_host: node-1
        port: 9100
        tls_config: { ca_file: /etc/ca.pem, server_name: docker-1, insecure_skip_verify: false }
        basic_auth: { username: ops, password_file: /etc/pw }
        proxy_url: http://proxy:3128
"#;
    let c = convert(yaml);
    // Grafana's recipe: the log stream as `logstream`, set per line from each line's stream.
    assert!(skipped(&c).is_empty(), "{:?}", c.untranslated);
    assert!(c.toml.contains(r#"{ labels = { logstream = "stream" } },"#), "{}", c.toml);
    assert!(c.toml.contains(r#"{ labeldrop = ["stream"] },"#), "{}", c.toml);
    assert!(c.toml.contains(r#"proxy_url = "http://proxy:3128""#), "{}", c.toml);
    assert!(c.toml.contains(r#"host = "tcp://10.0.0.5:2376""#), "{}", c.toml);
    assert!(c.toml.contains(r#"host_networking_host = "node-1""#), "{}", c.toml);
    assert!(c.toml.contains("port = 9100"), "{}", c.toml);
    assert!(c.toml.contains(r#"server_name = "docker-1""#), "{}", c.toml);
    assert!(c.toml.contains(r#"password_file = "/etc/pw""#), "{}", c.toml);
    // The files named do not exist here: checked without them (tests/docker_tcp.rs runs converted ones).
    let c = convert(&yaml.replace("password_file: /etc/pw", "password: pw").replace("ca_file: /etc/ca.pem, ", ""));
    let config = compiles(&c);
    assert_eq!(config.sources.len(), 2, "{}", c.toml);
    let d = config.sources[1].docker.clone().unwrap();
    assert_eq!((d.host_networking_host.as_str(), d.port), ("node-1", 9100));
    assert_eq!(d.tls.and_then(|t| t.server_name).as_deref(), Some("docker-1"));
    let s = &config.sources[0];
    assert_eq!(s.kind, crate::config::SourceType::Docker);
    let d = s.docker.clone().unwrap();
    assert_eq!(d.host, "unix:///var/run/docker.sock");
    assert_eq!(d.filters.get("name"), Some(&vec!["flog".to_string()]));
    assert_eq!(d.refresh_interval.get(), std::time::Duration::from_secs(5));
    let targets: Vec<_> = s.relabel.iter().map(|r| r.target_label.clone().unwrap_or_default()).collect();
    assert_eq!(targets, ["container", "job"]);
    assert!(!s.host_label);
}

#[test]
fn a_kubernetes_pod_job_becomes_a_file_source_reading_what_its_path_names() {
    let c = convert(
        r#"clients:
  - url: http://loki:3100/loki/api/v1/push
scrape_configs:
  - job_name: pods
    pipeline_stages:
      - cri: {}
      - regex: { expression: 'level=(?P<level>\w+)' }
    kubernetes_sd_configs:
      - role: pod
        namespaces: { names: [shop, db] }
        selectors:
          - role: pod
            field: spec.nodeName=${HOSTNAME}
      - role: service
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_label_app]
        target_label: app
"#,
    );
    assert!(skipped(&c).is_empty(), "{:?}", c.untranslated);
    let config = compiles(&c);
    // Role service: a file source whose targets are the services (tailed where rules set `__path__`).
    assert_eq!(config.sources.len(), 2, "{}", c.toml);
    let svc = &config.sources[1];
    assert_eq!(svc.kind, crate::config::SourceType::File);
    assert_eq!(svc.kubernetes.as_ref().map(|k| k.role), Some(crate::config::KubeRole::Service));
    assert_eq!(svc.relabel.len(), 1, "namespaces of role pod do not reach the service entry: {}", c.toml);
    // Role pod: a file source too, as Promtail reads it: the pods of the node
    // $HOSTNAME names, their namespaces asked of the API server, the files
    // the relabelled `__path__` names, parsed by the job's own cri stage.
    let s = &config.sources[0];
    assert_eq!(s.kind, crate::config::SourceType::File);
    let k = s.kubernetes.as_ref().unwrap();
    assert_eq!(k.role, crate::config::KubeRole::Pod);
    assert_eq!(k.node_name_env.as_deref(), Some("HOSTNAME"));
    assert_eq!(k.namespaces.as_ref().map(|n| n.names.clone()), Some(vec!["shop".to_string(), "db".to_string()]));
    assert!(k.selectors.is_empty(), "the node's own selector is what tailship always asks: {}", c.toml);
    assert_eq!(s.relabel.len(), 1);
    assert_eq!(s.relabel[0].target_label.as_deref(), Some("app"));
    assert_eq!(s.stages.len(), 2, "the cri stage runs as a stage: {}", c.toml);
    assert!(s.stages[0].cri.is_some());
}

#[test]
fn sampling_and_pack_carry_over() {
    let c = convert(&format!(
        "{JOB}    pipeline_stages:\n      - sampling: {{ rate: 0.5, drop_counter_reason: half }}\n      - pack: {{ labels: [job], ingest_timestamp: false }}\n"
    ));
    assert!(c.untranslated.iter().all(|i| !i.key.contains("pipeline_stages")), "{:?}", c.untranslated);
    let config = compiles(&c);
    let s = &config.sources[0];
    let sm = s.stages[0].sampling.as_ref().expect("sampling");
    assert_eq!((sm.rate, sm.reason.as_deref()), (0.5, Some("half")));
    let pk = s.stages[1].pack.as_ref().expect("pack");
    assert_eq!((pk.labels.as_slice(), pk.ingest_timestamp), (&["job".to_string()][..], Some(false)));
}

#[test]
fn templates_with_sprig_functions_carry_over_and_the_few_missing_are_reported() {
    let c = convert(&format!(
        r#"{JOB}    pipeline_stages:
      - regex: {{ expression: '^(?P<lvl>\w+)' }}
      - template: {{ source: lvl, template: '{{{{ .Value | default "info" | upper | trunc 4 }}}}' }}
      - template: {{ source: pw, template: '{{{{ bcrypt .Value }}}}' }}
      - template: {{ source: pin, template: '{{{{ randSeededNumeric 4 }}}}' }}
"#
    ));
    // sprig's crypto functions carry over; `randSeededNumeric` is in no sprig release.
    assert_eq!(skipped(&c), ["clients", "scrape_configs[0].pipeline_stages[3].template.template"]);
    assert!(c.untranslated[1].message.contains("randSeededNumeric"), "{:?}", c.untranslated[1]);
    assert_eq!(compiles(&c).sources[0].stages.len(), 3);
}

#[test]
fn a_journal_job_with_json_ships_the_whole_entry() {
    let c = convert("scrape_configs:\n  - job_name: j\n    journal: { json: true, labels: { job: j } }\n");
    assert_eq!(skipped(&c), ["clients"]);
    assert!(c.toml.contains("json = true"), "{}", c.toml);
    let config = compiles(&c);
    assert!(config.sources[0].json);
}

#[test]
fn client_and_process_options_promtail_users_set_carry_over_or_are_noted() {
    let c = convert(&format!(
        r#"clients:
  - url: http://loki:3100/loki/api/v1/push
    basic_auth: {{ username_file: /etc/promtail/user, password_file: /etc/promtail/pass }}
    follow_redirects: false
    enable_http2: false
    drop_rate_limited_batches: true
wal: {{ enabled: true, dir: /var/lib/promtail/wal }}
global: {{ file_watch_config: {{ min_poll_frequency: 1s, max_poll_frequency: 5s }} }}
options: {{ stream_lag_labels: "" }}
tracing: {{ enabled: false }}
limits_config: {{ max_streams: 500, max_line_size: 256KB, max_line_size_truncate: false }}
{JOB}"#
    ));
    assert!(skipped(&c).is_empty(), "{:?}", skipped(&c));
    for want in [
        r#"basic_auth = { username_file = "/etc/promtail/user", password_file = "/etc/promtail/pass" }"#,
        "follow_redirects = false",
        "http2 = false",
        "max_streams = 500",
        "max_line_bytes = 256000",
    ] {
        assert!(c.toml.contains(want), "{want} in {}", c.toml);
    }
    let noted: Vec<&str> = c.notes.iter().map(|n| n.key.as_str()).collect();
    for key in [
        "clients[0].drop_rate_limited_batches",
        "wal",
        "global.file_watch_config",
        "limits_config.max_streams",
        "limits_config.max_line_size",
    ] {
        assert!(noted.contains(&key), "{key} in {noted:?}");
    }
}

#[test]
fn a_windows_events_job_is_reported_by_key_as_windows_only() {
    let c = convert(&format!(
        "{JOB}  - job_name: windows\n    windows_events:\n      eventlog_name: Application\n      use_incoming_timestamp: true\n"
    ));
    let item = c.untranslated.iter().find(|i| i.key == "scrape_configs[1].windows_events").expect("reported");
    assert!(item.message.contains("Windows API"), "{}", item.message);
    // The other job is converted as ever.
    assert_eq!(compiles(&c).sources.len(), 1);
}

#[test]
fn options_written_under_the_docker_stage_are_noted_as_ignored_by_promtail_too() {
    let c = convert(&format!("{JOB}    pipeline_stages:\n      - docker:\n          use_incoming_timestamp: false\n"));
    assert!(c.untranslated.iter().all(|i| i.key == "clients"), "{:?}", c.untranslated);
    let key = "scrape_configs[0].pipeline_stages[0].docker.use_incoming_timestamp";
    assert!(c.notes.iter().any(|n| n.key == key && n.message.contains("ignores")), "{:?}", c.notes);
    assert!(compiles(&c).sources[0].stages.len() == 1);
}

#[test]
fn a_path_set_by_a_relabel_rule_is_read_as_promtail_reads_it() {
    let c = convert(
        "scrape_configs:\n  - job_name: rp\n    static_configs:\n      - targets: [localhost]\n        labels: { job: rp, app: web }\n    relabel_configs:\n      - source_labels: [app]\n        target_label: __path__\n        replacement: /var/log/$1/*.log\n",
    );
    assert!(c.toml.contains(r#"include = ["/var/log/web/*.log"]"#), "{}", c.toml);
    assert_eq!(skipped(&c), ["clients"], "only the client, which this config lacks");
    compiles(&c);
}

#[test]
fn a_group_name_given_twice_and_location_local_convert_as_promtail_runs_them() {
    let c = convert(&format!(
        "{JOB}    pipeline_stages:\n      - regex: {{ expression: '^(?P<a>\\w+) (?P<a>\\w+) (?P<t>.*)$' }}\n      - timestamp: {{ source: t, format: '2006-01-02 15:04:05', location: Local }}\n      - labels: {{ a: }}\n"
    ));
    assert_eq!(skipped(&c), ["clients"], "only the client, which this config lacks\n{}", c.toml);
    compiles(&c);
}

#[test]
fn a_docker_sd_job_without_a_stream_rule_ships_no_stream_label() {
    // Promtail's docker_sd_configs give a line no `stream` label unless a rule
    // copies `__meta_docker_container_log_stream` to it; the docker source
    // labels its lines `stream`, so the conversion drops it.
    let yaml = "scrape_configs:\n  - job_name: docker\n    docker_sd_configs:\n      - host: unix:///var/run/docker.sock\n    \
                relabel_configs:\n      - source_labels: [__meta_docker_container_name]\n        target_label: container\n";
    let c = convert(yaml);
    assert!(c.toml.contains("stages = [\n  { labeldrop = [\"stream\"] },\n]"), "{}", c.toml);
    compiles(&c);
    let named = convert(&format!(
        "{yaml}      - source_labels: [__meta_docker_container_log_stream]\n        target_label: stream\n"
    ));
    assert!(!named.toml.contains("labeldrop"), "{}", named.toml);
}

#[test]
fn docker_sd_configs_beside_static_configs_are_said_to_be_unread() {
    let sd =
        "    docker_sd_configs:\n      - host: unix:///var/run/docker.sock\n    pipeline_stages:\n      - docker: {}\n";
    let c = convert(&format!("{JOB}{sd}"));
    assert!(c.notes.iter().any(|n| n.key == "scrape_configs[0].docker_sd_configs"), "{:?}", c.notes);
    assert!(!c.toml.contains(r#"type = "docker""#), "{}", c.toml);
    // Alone, the job's docker stage is kept (Promtail runs it over the decoded lines), and said so.
    let c = convert(&format!("scrape_configs:\n  - job_name: d\n{sd}"));
    assert!(c.toml.contains("{ docker = {} }"), "{}", c.toml);
    assert!(c.notes.iter().any(|n| n.message.contains("already decoded")), "{:?}", c.notes);
}
