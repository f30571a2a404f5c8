//! `client.tls` holds for every request the agent makes, not only pushes:
//! an alert webhook served over HTTPS with a certificate of a private CA is
//! delivered when that CA is given in `client.tls.ca_file`, and refused
//! without it. The HTTPS server is written here (rustls on loopback) with a
//! CA and a certificate for 127.0.0.1 made at test time.

use crate::agent;
use crate::common;
use crate::pki;

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{file_source, write_file, Agent, AgentToml};
use common::{bin, wait_for, Receiver};
use pki::{pki, private_ca};
use tokio_rustls::rustls;

/// An HTTPS server on loopback answering 200 to every request; returns its
/// port and the request lines it received (after a completed handshake).
fn https_server(config: Arc<rustls::ServerConfig>) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut tcp) = stream else { continue };
            let config = config.clone();
            let log = log.clone();
            std::thread::spawn(move || {
                let _ = tcp.set_read_timeout(Some(Duration::from_secs(5)));
                let Ok(mut conn) = rustls::ServerConnection::new(config) else { return };
                let mut tls = rustls::Stream::new(&mut conn, &mut tcp);
                // One request per connection is enough here: read it, answer, close.
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let head_end = loop {
                    match tls.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let len = head
                    .lines()
                    .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_string()))
                    .and_then(|v| v.parse::<usize>().ok())
                    .unwrap_or(0);
                while buf.len() < head_end + len {
                    match tls.read(&mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                log.lock().unwrap().push(head.lines().next().unwrap_or_default().to_string());
                let _ = tls.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                let _ = tls.flush();
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    (port, seen)
}

/// A private CA, a server certificate for `server_name` and a client
/// certificate, both signed by it, and a server config that requires a client
/// certificate of that CA: (CA PEM, client cert PEM, client key PEM, server config).
fn ca_requiring_client_certs_for(server_name: &str) -> (String, String, String, Arc<rustls::ServerConfig>) {
    let p = pki(server_name, Some("agent"));
    let (cert, key) = p.client.unwrap();
    (p.ca, cert, key, p.server)
}

fn config(dir: &Path, logs_url: &str, webhook: &str, ca_file: Option<&Path>) -> std::path::PathBuf {
    let tls = ca_file.map(|p| format!("tls = {{ ca_file = \"{}\" }}\n", p.display())).unwrap_or_default();
    let client = format!(
        "timeout = \"3s\"\nretry = {{ min_backoff = \"20ms\", max_backoff = \"200ms\", max_retries = 2 }}\n{tls}"
    );
    let alerts = format!(
        "[[alerts]]\nname = \"tls-errors\"\nselector = {{ job = \"tls\" }}\nmatch = \"ERROR\"\nwebhook_url = \"{webhook}\""
    );
    let toml = AgentToml::new(dir, "5s").client(logs_url, &client).sync_period("");
    toml.then(&file_source(dir, "tls", "200ms")).then(&alerts).write("tailship.toml")
}

#[test]
fn an_https_webhook_signed_by_a_private_ca_in_client_tls_ca_file_delivers() {
    let (ca_pem, server_config) = private_ca();
    let (port, seen) = https_server(server_config);
    let dir = tempfile::tempdir().unwrap();
    let ca = write_file(dir.path(), "ca.pem", &ca_pem);
    let store = Receiver::start(&[]);
    let webhook = format!("https://127.0.0.1:{port}/integrations/v1/formatted_webhook/tls-key/");
    let cfg = config(dir.path(), &store.url(""), &webhook, Some(&ca));

    let agent = Agent::start(&cfg);
    write_file(dir.path(), "app.log", "INFO fine\nERROR over tls\n");
    assert!(
        wait_for(Duration::from_secs(20), || !seen.lock().unwrap().is_empty()),
        "no webhook arrived over TLS: {}",
        agent.stderr_text()
    );
    assert!(seen.lock().unwrap()[0].starts_with("POST /integrations/v1/formatted_webhook/tls-key/"));
    assert!(agent.terminate(Duration::from_secs(15)).success());

    // `alert test` goes through the same client: it delivers with the CA...
    let out = std::process::Command::new(bin()).args(["alert", "test", "--config"]).arg(&cfg).output().unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{all}");
    // ...and without it the private CA is unknown: the webhook is refused.
    let no_ca = config(dir.path(), &store.url(""), &webhook, None);
    let out = std::process::Command::new(bin()).args(["alert", "test", "--config"]).arg(&no_ca).output().unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "a certificate of an unknown CA must not be accepted: {all}");
}

/// `client.tls.cert_file` and `key_file` (`--cert-file`/`--key-file`, or
/// logcli's `--cert`/`--key`): a service that requires a client certificate
/// gets the push; without the certificate the handshake fails and nothing
/// is delivered.
#[test]
fn a_service_requiring_a_client_certificate_gets_pushes_with_cert_file_and_key_file() {
    let (ca_pem, cert_pem, key_pem, server_config) = ca_requiring_client_certs_for("127.0.0.1");
    let (port, seen) = https_server(server_config);
    let dir = tempfile::tempdir().unwrap();
    let ca = write_file(dir.path(), "ca.pem", &ca_pem);
    let cert = write_file(dir.path(), "agent.pem", &cert_pem);
    let key = write_file(dir.path(), "agent.key", &key_pem);
    let log = write_file(dir.path(), "one.log", "hello over mtls\n");
    let url = format!("https://127.0.0.1:{port}");
    let push = |with_cert: bool| {
        let mut cmd = std::process::Command::new(bin());
        cmd.args(["push", "--url", &url, "--max-retries", "1", "--ca-file"]).arg(&ca);
        if with_cert {
            cmd.arg("--cert").arg(&cert).arg("--key").arg(&key);
        }
        cmd.arg(&log).output().unwrap()
    };
    let out = push(false);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(seen.lock().unwrap().is_empty(), "no request without a client certificate");
    let out = push(true);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // (An OPTIONS request for the push path may come first: the prefix asked for, tests/api_prefix.rs.)
    let requests = seen.lock().unwrap().clone();
    assert!(requests.iter().any(|r| r == "POST /logstore/api/v1/push HTTP/1.1"), "{requests:?}");
    // A key that is not the certificate's is a config error, named.
    let bad = write_file(
        dir.path(),
        "bad.toml",
        &format!(
        "[client]\nurl = \"{url}\"\ntls = {{ cert_file = \"{}\", key_file = \"{}\" }}\n[[sources]]\ntype = \"stdin\"\n",
        cert.display(),
        ca.display()
    ),
    );
    let out = std::process::Command::new(bin()).args(["check", "--config"]).arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("client.tls.cert_file"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Found by an operator: `https://` to a plain-HTTP port said only "received
/// corrupt message of type InvalidContentType". The error now says what it means.
#[test]
fn https_to_a_plain_http_port_says_the_server_speaks_plain_http() {
    let r = common::Receiver::start(&[]);
    let url = format!("https://{}", r.addr);
    let mut child = std::process::Command::new(common::bin())
        .args(["push", "--url", &url, "--give-up-after", "2s", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"one line\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("the server answered in plain HTTP, not TLS: use http://"), "{err}");
}

/// The protocols the agent offers in its TLS handshake (ALPN) to a server
/// on `listener` (which then closes the connection).
fn offered_alpn(listener: std::net::TcpListener) -> Vec<String> {
    listener.set_nonblocking(true).unwrap();
    let mut accepted = None;
    assert!(
        wait_for(Duration::from_secs(30), || {
            accepted = listener.accept().ok();
            accepted.is_some()
        }),
        "the agent never connected"
    );
    let (mut stream, _) = accepted.unwrap();
    stream.set_nonblocking(false).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut acceptor = rustls::server::Acceptor::default();
    loop {
        assert!(acceptor.read_tls(&mut stream).unwrap() > 0, "the connection ended before its client hello");
        match acceptor.accept() {
            Ok(Some(hello)) => {
                let offered =
                    hello.client_hello().alpn().map(|it| it.map(|p| String::from_utf8_lossy(p).into_owned()).collect());
                return offered.unwrap_or_default();
            }
            Ok(None) => continue,
            Err((e, _)) => panic!("not a TLS client hello: {e}"),
        }
    }
}

#[test]
fn http2_is_offered_over_tls_unless_http2_is_false() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_file(dir.path(), "one.log", "a line\n");
    for (extra, h2) in [("", true), ("http2 = false", false)] {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("https://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let server = std::thread::spawn(move || offered_alpn(listener));
        let cfg = write_file(
            dir.path(),
            "t.toml",
            &format!("[client]\nurl = \"{url}\"\n{extra}\n[[sources]]\ntype = \"stdin\"\n"),
        );
        let mut push = std::process::Command::new(bin())
            .args(["push", "--max-retries", "1", "--config"])
            .arg(&cfg)
            .arg(&log)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Never left running (it would hold whatever the test run holds).
        let ended = wait_for(Duration::from_secs(60), || push.try_wait().unwrap().is_some());
        let _ = push.kill();
        assert!(ended, "push did not end");
        assert!(!push.wait().unwrap().success(), "the server ends every handshake");
        let offered = server.join().unwrap();
        assert_eq!(offered.contains(&"h2".to_string()), h2, "{extra:?}: {offered:?}");
        assert!(offered.contains(&"http/1.1".to_string()), "{offered:?}");
    }
}

/// `client.tls.server_name` (Promtail's `tls_config.server_name`) with the
/// CA, certificate and key given inline (`ca`, `cert`, `key`): a service
/// reached by address whose certificate names only `logs.internal`, and
/// that requires a client certificate, gets the push when the name is
/// given; without it, or with another name, the handshake fails.
#[test]
fn server_name_checks_the_certificate_against_that_name_with_inline_pems() {
    let (ca_pem, cert_pem, key_pem, server) = ca_requiring_client_certs_for("logs.internal");
    let (port, seen) = https_server(server);
    let dir = tempfile::tempdir().unwrap();
    let log = write_file(dir.path(), "one.log", "hello by name\n");
    let push = |server_name: Option<&str>| {
        let name = server_name.map(|n| format!("server_name = \"{n}\"\n")).unwrap_or_default();
        let cfg = write_file(
            dir.path(),
            "tailship.toml",
            &format!(
                "[client]\nurl = \"https://127.0.0.1:{port}\"\n[client.tls]\nca = '''\n{}'''\ncert = '''\n{}'''\nkey = '''\n{}'''\n{name}\
                 [[sources]]\ntype = \"stdin\"\n",
                ca_pem, cert_pem, key_pem
            ),
        );
        std::process::Command::new(bin())
            .args(["push", "--max-retries", "1", "--config"])
            .arg(&cfg)
            .arg(&log)
            .output()
            .unwrap()
    };
    for name in [None, Some("other.internal")] {
        let out = push(name);
        assert_eq!(out.status.code(), Some(1), "{name:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(seen.lock().unwrap().is_empty(), "{name:?}: no request to a certificate of another name");
    }
    let out = push(Some("logs.internal"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // (An OPTIONS request for the push path may come first: the prefix asked for, tests/api_prefix.rs.)
    let requests = seen.lock().unwrap().clone();
    assert!(requests.iter().any(|r| r == "POST /logstore/api/v1/push HTTP/1.1"), "{requests:?}");
    // A PEM given twice, and a name that is none, are config errors, named.
    let ca = write_file(dir.path(), "ca.pem", &ca_pem);
    let bad = write_file(
        dir.path(),
        "bad.toml",
        &format!(
            "[client]\nurl = \"https://127.0.0.1:{port}\"\ntls = {{ ca_file = \"{}\", ca = '''{}''', server_name = \"a b\" }}\n\
             [[sources]]\ntype = \"stdin\"\n",
            ca.display(),
            ca_pem
        ),
    );
    let out = std::process::Command::new(bin()).args(["check", "--config"]).arg(&bad).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("client.tls.ca") && err.contains("client.tls.server_name"), "{err}");
}
