//! `type = "syslog"` with real senders on loopback: util-linux `logger`
//! over TCP (octet counting and newline framing) and UDP in RFC 5424 and
//! RFC 3164, Debian's `rsyslogd` forwarding with omfwd, raw text that is not
//! syslog, and a full spool (TCP waits, nothing lost; UDP counted).

use crate::agent;
use crate::common;

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use agent::{free_port, query_all, write_file, Agent, AgentToml, Stored};
use common::{wait_for, Receiver};

const BIG: &[&str] = &["--max-query-limit", "1000000"];

/// A config with one syslog source on `listen` (`protocol`), shipping to `url`.
fn syslog_config(dir: &Path, listen: &str, protocol: &str, url: &str, extra: &str, spool_extra: &str) -> PathBuf {
    let source = format!(
        r#"[[sources]]
type = "syslog"
name = "sys"
listen = "{listen}"
protocol = "{protocol}"
labels = {{ job = "syslog" }}
relabel = [
  {{ source_labels = ["__syslog_message_hostname"], target_label = "host" }},
  {{ source_labels = ["__syslog_message_app_name"], target_label = "app" }},
  {{ source_labels = ["__syslog_message_severity"], target_label = "level" }},
  {{ source_labels = ["__syslog_message_facility"], target_label = "facility" }},
]
{extra}
"#
    );
    let toml = AgentToml::new(dir, "5s").client(url, "").spool(spool_extra).then(&source);
    toml.write(&format!("syslog-{protocol}.toml"))
}

fn wait_listening(addr: &str, udp: bool) {
    if udp {
        // A UDP socket cannot be probed; the agent says when it listens.
        return;
    }
    assert!(wait_for(Duration::from_secs(15), || std::net::TcpStream::connect(addr).is_ok()), "{addr} never listened");
}

fn logger(port: u16, args: &[&str], message: &str) {
    let out = Command::new("logger")
        .args(["--server", "127.0.0.1", "--port", &port.to_string()])
        .args(args)
        .arg(message)
        .output()
        .expect("logger (util-linux) is needed");
    assert!(out.status.success(), "logger {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn find<'a>(got: &'a [Stored], line: &str) -> &'a Stored {
    got.iter().find(|e| e.line == line).unwrap_or_else(|| panic!("{line:?} not in {got:#?}"))
}

fn wait_lines(store: &Receiver, n: usize) -> Vec<Stored> {
    let mut got = Vec::new();
    wait_for(Duration::from_secs(20), || {
        got = query_all(store, r#"{job="syslog"}"#, None);
        got.len() >= n
    });
    got
}

#[test]
fn logger_over_tcp_in_rfc5424_and_rfc3164_and_raw_text() {
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(BIG);
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let agent = Agent::start(&syslog_config(dir.path(), &listen, "tcp", &store.base, "", ""));
    wait_listening(&listen, false);
    logger(
        port,
        &[
            "--tcp",
            "--rfc5424",
            "--octet-count",
            "-t",
            "app5424",
            "-p",
            "local3.err",
            "--sd-id",
            "x@1",
            "--sd-param",
            "k=\"v w\"",
        ],
        "five four two four",
    );
    logger(port, &["--tcp", "--rfc3164", "-t", "app3164", "-p", "user.warning"], "three one six four");
    let mut s = std::net::TcpStream::connect(&listen).unwrap();
    s.write_all(b"this is not syslog at all\n").unwrap();
    drop(s);
    let got = wait_lines(&store, 3);
    let a = find(&got, "five four two four");
    assert_eq!((a.labels["app"].as_str(), a.labels["level"].as_str()), (Some("app5424"), Some("error")));
    assert_eq!(a.labels["facility"], "local3");
    assert!(a.labels.contains_key("host"), "{:?}", a.labels);
    assert!(!a.labels.keys().any(|k| k.starts_with("__")), "{:?}", a.labels);
    let b = find(&got, "three one six four");
    assert_eq!((b.labels["app"].as_str(), b.labels["level"].as_str()), (Some("app3164"), Some("warning")));
    let raw = find(&got, "this is not syslog at all");
    assert_eq!(raw.labels["syslog_unparsed"], "true");
    assert_eq!(agent.metric("tailship_receiver_unparsed_total"), 1.0);
    assert!(agent.metric("tailship_receiver_lines_total") >= 3.0);
}

#[test]
fn logger_over_udp_in_rfc5424_and_rfc3164() {
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(BIG);
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let agent = Agent::start(&syslog_config(dir.path(), &listen, "udp", &store.base, "", ""));
    assert!(wait_for(Duration::from_secs(15), || agent.stderr_text().contains("receiving")), "{}", agent.stderr_text());
    logger(port, &["--udp", "--rfc5424", "-t", "u5424"], "udp five");
    logger(port, &["--udp", "--rfc3164", "-t", "u3164"], "udp three");
    let got = wait_lines(&store, 2);
    assert_eq!(find(&got, "udp five").labels["app"], "u5424");
    assert_eq!(find(&got, "udp three").labels["app"], "u3164");
}

#[test]
fn rsyslog_forwards_with_omfwd_over_tcp_octet_counted() {
    let Ok(rsyslogd) = which("rsyslogd") else {
        eprintln!("rsyslogd is not installed (apt-get install rsyslog); skipping");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = Receiver::start(BIG);
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let _agent = Agent::start(&syslog_config(dir.path(), &listen, "tcp", &store.base, "", ""));
    wait_listening(&listen, false);
    let input = free_port();
    let conf = write_file(
        dir.path(),
        "rsyslog.conf",
        &format!(
            r#"global(workDirectory="{dir}")
module(load="imudp")
input(type="imudp" address="127.0.0.1" port="{input}")
action(type="omfwd" target="127.0.0.1" port="{port}" protocol="tcp" TCP_Framing="octet-counted" template="RSYSLOG_SyslogProtocol23Format")
"#,
            dir = dir.path().display()
        ),
    );
    let mut child = Command::new(rsyslogd)
        .args(["-n", "-f"])
        .arg(&conf)
        .arg("-i")
        .arg(dir.path().join("rsyslogd.pid"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _guard = KillOnDrop(&mut child);
    let mut got = Vec::new();
    // rsyslogd listens after a moment: send until the first line arrives.
    let arrived = wait_for(Duration::from_secs(20), || {
        logger(input, &["--udp", "--rfc3164", "-t", "viarsyslog"], "forwarded by rsyslog");
        std::thread::sleep(Duration::from_millis(200));
        got = query_all(&store, r#"{job="syslog", app="viarsyslog"}"#, None);
        !got.is_empty()
    });
    assert!(arrived, "nothing arrived through rsyslogd");
    assert_eq!(got[0].line, "forwarded by rsyslog");
}

#[test]
fn a_full_spool_stops_reading_tcp_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store_port = free_port();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let cfg = syslog_config(
        dir.path(),
        &listen,
        "tcp",
        &format!("http://127.0.0.1:{store_port}"),
        "",
        "max_bytes = \"256KiB\"\nsegment_bytes = \"32KiB\"",
    );
    let agent = Agent::start(&cfg);
    wait_listening(&listen, false);
    let total = 20_000;
    let sender = std::thread::spawn(move || {
        let mut s = std::net::TcpStream::connect(&listen).unwrap();
        for i in 0..total {
            let msg = format!("<13>1 - h app - - - blocked {i} {}", "z".repeat(600));
            s.write_all(format!("{} {msg}", msg.len()).as_bytes()).unwrap();
        }
    });
    // The spool fills; the sender is held back instead of losing lines.
    assert!(
        wait_for(Duration::from_secs(20), || agent.metric("tailship_spool_bytes") > 160_000.0),
        "{}\n{}",
        agent.metrics(),
        agent.stderr_text()
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(!sender.is_finished(), "the sender was not held back");
    let store = Receiver::start_on(&format!("127.0.0.1:{store_port}"), BIG);
    sender.join().unwrap();
    let got = wait_lines(&store, total);
    let lines: HashSet<String> = got.into_iter().map(|e| e.line).collect();
    for i in 0..total {
        assert!(lines.contains(&format!("blocked {i} {}", "z".repeat(600))), "message {i} lost");
    }
    assert_eq!(agent.metric("tailship_receiver_refused_total"), 0.0);
}

struct KillOnDrop<'a>(&'a mut std::process::Child);

impl Drop for KillOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn which(name: &str) -> Result<PathBuf, ()> {
    for dir in ["/usr/sbin", "/usr/bin", "/sbin", "/bin"] {
        let p = Path::new(dir).join(name);
        if p.exists() {
            return Ok(p);
        }
    }
    Err(())
}

#[test]
fn tls_over_tcp_with_octet_counting() {
    use std::sync::Arc;
    use tokio_rustls::rustls;
    let dir = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap().self_signed(&key).unwrap();
    write_file(dir.path(), "cert.pem", &cert.pem());
    write_file(dir.path(), "key.pem", &key.serialize_pem());
    let store = Receiver::start(BIG);
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let tls = format!(
        "receiver = {{ tls = {{ cert_file = \"{d}/cert.pem\", key_file = \"{d}/key.pem\" }} }}",
        d = dir.path().display()
    );
    let agent = Agent::start(&syslog_config(dir.path(), &listen, "tcp", &store.base, &tls, ""));
    wait_listening(&listen, false);
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.der().clone()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, std::net::TcpStream::connect(&listen).unwrap());
    let msg = "<165>1 2024-05-01T10:00:00Z tlshost tlsapp 7 - - over tls";
    tls.write_all(format!("{} {msg}", msg.len()).as_bytes()).unwrap();
    tls.flush().unwrap();
    let got = wait_lines(&store, 1);
    let e = find(&got, "over tls");
    assert_eq!((e.labels["host"].as_str(), e.labels["app"].as_str()), (Some("tlshost"), Some("tlsapp")));
    // A plain connection to the TLS port delivers nothing.
    let mut plain = std::net::TcpStream::connect(&listen).unwrap();
    let _ = plain.write_all(b"<13>1 - - - - - - plain text\n");
    drop(plain);
    assert!(wait_for(Duration::from_secs(10), || agent.metric("tailship_receiver_refused_total") >= 1.0));
    assert_eq!(query_all(&store, r#"{job="syslog"}"#, None).len(), 1);
}

/// Sends one octet-counted message over TLS to `listen`, trusting `server`
/// and presenting `client` (certificate and key) if given. Errors are the
/// sender's to see, not the test's.
fn send_tls(
    listen: &str,
    server: &rcgen::Certificate,
    client: Option<(&rcgen::Certificate, &rcgen::KeyPair)>,
    msg: &str,
) {
    use std::sync::Arc;
    use tokio_rustls::rustls;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(server.der().clone()).unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match client {
        Some((cert, key)) => {
            let key = rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der()).into();
            builder.with_client_auth_cert(vec![cert.der().clone()], key).unwrap()
        }
        None => builder.with_no_client_auth(),
    };
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, std::net::TcpStream::connect(listen).unwrap());
    let _ = tls.write_all(format!("{} {msg}", msg.len()).as_bytes()).and_then(|_| tls.flush());
    tls.conn.send_close_notify();
    let _ = tls.flush();
}

#[test]
fn tls_with_a_client_ca_takes_only_senders_whose_certificate_it_signed() {
    let dir = tempfile::tempdir().unwrap();
    let server_key = rcgen::KeyPair::generate().unwrap();
    let server =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap().self_signed(&server_key).unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "senders' ca");
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, rcgen::KeyPair::generate().unwrap()).unwrap();
    let sender_key = rcgen::KeyPair::generate().unwrap();
    let sender =
        rcgen::CertificateParams::new(vec!["sender".to_string()]).unwrap().signed_by(&sender_key, &ca).unwrap();
    let stranger_key = rcgen::KeyPair::generate().unwrap();
    let stranger =
        rcgen::CertificateParams::new(vec!["sender".to_string()]).unwrap().self_signed(&stranger_key).unwrap();
    write_file(dir.path(), "cert.pem", &server.pem());
    write_file(dir.path(), "key.pem", &server_key.serialize_pem());
    write_file(dir.path(), "ca.pem", &ca.pem());
    let store = Receiver::start(BIG);
    let listen = format!("127.0.0.1:{}", free_port());
    let tls = format!(
        "receiver = {{ tls = {{ cert_file = \"{d}/cert.pem\", key_file = \"{d}/key.pem\", client_ca_file = \"{d}/ca.pem\" }} }}",
        d = dir.path().display()
    );
    let agent = Agent::start(&syslog_config(dir.path(), &listen, "tcp", &store.base, &tls, ""));
    wait_listening(&listen, false);
    send_tls(&listen, &server, None, "<165>1 2024-05-01T10:00:00Z h app 7 - - without a certificate");
    send_tls(&listen, &server, Some((&stranger, &stranger_key)), "<165>1 2024-05-01T10:00:00Z h app 7 - - a stranger");
    send_tls(&listen, &server, Some((&sender, &sender_key)), "<165>1 2024-05-01T10:00:00Z h app 7 - - signed sender");
    let got = wait_lines(&store, 1);
    find(&got, "signed sender");
    assert!(
        wait_for(Duration::from_secs(10), || agent.metric("tailship_receiver_refused_total") >= 2.0),
        "{}",
        agent.metrics()
    );
    assert_eq!(query_all(&store, r#"{job="syslog"}"#, None).len(), 1, "only the signed sender's line");
}
