//! `dns` targets (Promtail's `dns_sd_configs`) through the real binary,
//! against a DNS server written here. The agent runs in a mount namespace
//! of its own where `/etc/resolv.conf` names that server, as an operator's
//! resolver would be named: SRV, A and MX records are targets with
//! Prometheus' `__meta_dns_*` labels, tailed once the relabel rules give
//! them a `__path__`, and a record that changes changes what is tailed
//! without a restart.

use crate::agent;
use crate::common;
use crate::discovery;
use crate::scenario;
use scenario::Scenario;

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, UdpSocket};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{query_all, write_file, Agent};
use common::wait_for;
use discovery::{bad_sources_exit_2, labels_of};
use hickory_resolver::proto::op::{Message, MessageType, ResponseCode};
use hickory_resolver::proto::rr::rdata::{A, MX, SRV};
use hickory_resolver::proto::rr::{Name, RData, Record, RecordType};

/// Records by (lower-case name with its dot, type).
type Zone = Arc<Mutex<BTreeMap<(String, RecordType), Vec<RData>>>>;

fn srv(port: u16, target: &str) -> RData {
    RData::SRV(SRV::new(0, 0, port, Name::from_ascii(target).unwrap()))
}

/// A DNS server on 127.0.53.N:53 (`test` < 2) answering from `zone` (NXDOMAIN for the
/// rest); None when port 53 cannot be had (not root).
fn dns_server(zone: Zone, test: u8) -> Option<Ipv4Addr> {
    // One address per test of this binary (they run at once), and per run.
    let ip = Ipv4Addr::new(127, 0, 53, (std::process::id() % 100 + 10) as u8 + test * 120);
    let socket = match UdpSocket::bind((ip, 53)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cannot listen on {ip}:53 ({e}); skipping");
            return None;
        }
    };
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok((n, from)) = socket.recv_from(&mut buf) {
            let Ok(req) = Message::from_vec(&buf[..n]) else { continue };
            let mut resp = Message::new();
            resp.set_id(req.id())
                .set_message_type(MessageType::Response)
                .set_op_code(req.op_code())
                .set_recursion_desired(req.recursion_desired())
                .set_recursion_available(true)
                .add_queries(req.queries().to_vec());
            let zone = zone.lock().unwrap();
            for q in req.queries() {
                let name = q.name().to_ascii().to_ascii_lowercase();
                match zone.get(&(name, q.query_type())) {
                    Some(records) => {
                        for r in records {
                            resp.add_answer(Record::from_rdata(q.name().clone(), 0, r.clone()));
                        }
                    }
                    None => {
                        resp.set_response_code(ResponseCode::NXDomain);
                    }
                }
            }
            let _ = socket.send_to(&resp.to_vec().unwrap(), from);
        }
    });
    Some(ip)
}

/// Starts the agent with `/etc/resolv.conf` naming `ip` (in a mount namespace of its own).
fn start_agent(cfg: &Path, dir: &Path, ip: Ipv4Addr) -> Agent {
    let resolv = write_file(dir, "resolv.conf", &format!("nameserver {ip}\noptions timeout:1 attempts:2\n"));
    let script = format!("mount --bind {} /etc/resolv.conf && exec \"$0\" \"$@\"", resolv.display());
    Agent::start_wrapped(cfg, &[], &["unshare", "-rm", "sh", "-c", &script])
}

#[test]
fn srv_a_and_mx_records_name_the_files_tailed_and_their_changes_apply_without_a_restart() {
    let zone: Zone = Arc::default();
    {
        let mut z = zone.lock().unwrap();
        z.insert(
            ("_logs._tcp.svc.test.".into(), RecordType::SRV),
            vec![srv(8080, "web.svc.test."), srv(9090, "db.svc.test.")],
        );
        z.insert(("hosts.svc.test.".into(), RecordType::A), vec![RData::A(A::new(10, 0, 0, 1))]);
        z.insert(
            ("svc.test.".into(), RecordType::MX),
            vec![RData::MX(MX::new(10, Name::from_ascii("mail.svc.test.").unwrap()))],
        );
    }
    let Some(ip) = dns_server(zone.clone(), 0) else { return };
    let s = Scenario::plain();
    let (r, d) = (&s.r, s.root());
    s.said_logs(&["web", "db", "api", "hosts", "mail"], "first");
    let text = format!(
        r#"[[sources]]
name = "srv"
host_label = false
scan_interval = "200ms"
dns = {{ names = ["_logs._tcp.svc.test"], refresh_interval = "1s" }}
relabel = [
  {{ source_labels = ["__meta_dns_srv_record_target"], regex = "([^.]+)\\..*", target_label = "__path__", replacement = "{d}/logs/$1/*.log" }},
  {{ source_labels = ["__meta_dns_srv_record_target"], regex = "([^.]+)\\..*", target_label = "service" }},
  {{ source_labels = ["__meta_dns_srv_record_port"], target_label = "port" }},
  {{ source_labels = ["__meta_dns_name"], target_label = "dns_name" }},
  {{ source_labels = ["__address__"], target_label = "instance" }},
]
[[sources]]
name = "a"
host_label = false
scan_interval = "200ms"
dns = {{ names = ["hosts.svc.test"], type = "A", port = 9100 }}
relabel = [
  {{ target_label = "__path__", replacement = "{d}/logs/hosts/*.log" }},
  {{ source_labels = ["__address__"], target_label = "instance" }},
]
[[sources]]
name = "mx"
host_label = false
scan_interval = "200ms"
dns = {{ names = ["svc.test"], type = "MX", port = 25 }}
relabel = [
  {{ target_label = "__path__", replacement = "{d}/logs/mail/*.log" }},
  {{ source_labels = ["__meta_dns_mx_record_target"], target_label = "mx" }},
  {{ source_labels = ["__address__"], target_label = "instance" }},
]
"#,
        d = d.display(),
    );
    let cfg = s.toml("dns.toml", &text);
    let agent = start_agent(&cfg, d, ip);
    let rr = &r;
    let lines = |q: &str| query_all(rr, q, None).into_iter().map(|e| e.line).collect::<Vec<_>>();
    assert!(
        wait_for(Duration::from_secs(20), || lines(r#"{service="web"}"#) == ["web first"]),
        "{}",
        agent.stderr_text()
    );
    let l = &labels_of(r, r#"{service="web"}"#)[0];
    assert_eq!(
        (l["port"].as_str(), l["dns_name"].as_str(), l["instance"].as_str()),
        ("8080", "_logs._tcp.svc.test", "web.svc.test:8080")
    );
    assert!(wait_for(Duration::from_secs(20), || labels_of(rr, r#"{instance="10.0.0.1:9100"}"#).len() == 1));
    assert!(wait_for(Duration::from_secs(20), || labels_of(rr, r#"{mx="mail.svc.test."}"#).len() == 1));
    assert_eq!(labels_of(r, r#"{mx="mail.svc.test."}"#)[0]["instance"], "mail.svc.test:25");
    assert_eq!(lines(r#"{service="db"}"#), ["db first"]);

    // The SRV records change: db goes, api comes.
    zone.lock().unwrap().insert(
        ("_logs._tcp.svc.test.".into(), RecordType::SRV),
        vec![srv(8080, "web.svc.test."), srv(7070, "api.svc.test.")],
    );
    assert!(
        wait_for(Duration::from_secs(20), || lines(r#"{service="api"}"#) == ["api first"]),
        "{}",
        agent.stderr_text()
    );
    let closed = r#"tailship_file_events_total{event="closed",source="srv"}"#;
    assert!(wait_for(Duration::from_secs(20), || agent.metric(closed) >= 1.0), "{}", agent.stderr_text());
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn a_converted_promtail_dns_job_passes_check_and_ships() {
    let zone: Zone = Arc::default();
    zone.lock().unwrap().insert(("_logs._tcp.svc.test.".into(), RecordType::SRV), vec![srv(8080, "web.svc.test.")]);
    let Some(ip) = dns_server(zone, 1) else { return };
    let s = Scenario::loki();
    let d = s.root();
    s.log("web", "web first\n");
    let jobs = format!(
        r#"  - job_name: srv
    dns_sd_configs:
      - names: [_logs._tcp.svc.test]
        type: SRV
        refresh_interval: 5s
    relabel_configs:
      - source_labels: [__meta_dns_srv_record_target]
        regex: '([^.]+)\..*'
        target_label: __path__
        replacement: {d}/logs/$1/*.log
      - source_labels: [__meta_dns_srv_record_target]
        regex: '([^.]+)\..*'
        target_label: service
"#,
        d = d.display(),
    );
    let cfg = s.convert(&jobs, "dns_sd_configs");
    let agent = start_agent(&cfg, d, ip);
    s.wait_labels(&agent, r#"{service="web"}"#, 1);
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn bad_dns_settings_exit_2_naming_the_key_and_the_file() {
    let cases = [
        (r#"type = "SRV""#, "sources[0].dns.names"),
        (r#"names = ["x.test"], type = "A""#, "sources[0].dns.port"),
        (r#"names = ["x.test"], type = "TXT""#, "sources[0].dns.type"),
        (r#"names = ["x.test"], refresh_interval = "0s""#, "sources[0].dns.refresh_interval"),
    ];
    bad_sources_exit_2(&cases.map(|(table, key)| (format!("dns = {{ {table} }}"), key)));
}
