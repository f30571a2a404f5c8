//! What the network jobs of the corpus receive: syslog messages (RFC 5424,
//! or RFC 3164 where the job says so: with structured data, a UTF-8 BOM, no
//! text, one that does not parse, and one per built line) over TCP
//! (octet-counted, a connection each) or UDP, and a Loki push (JSON) per
//! push job; sent to each agent alike.

use std::io::Write;
use std::time::Duration;

use crate::common::{post_json, wait_for};
use crate::inputs::time;
use crate::rewrite::Kind;

/// The syslog messages of a job, given its built lines.
pub fn syslog_messages(rfc3164: bool, built: &[String]) -> Vec<String> {
    if rfc3164 {
        let mut v = vec![
            "<34>May  1 10:00:00 mymachine su: 'su root' failed for lonvick on /dev/pts/8".to_string(),
            "<13>May  1 10:00:01 host2 app2[42]: plain 3164 message".to_string(),
        ];
        v.extend(built.iter().map(|b| format!("<14>May  1 10:00:02 host3 app3: {b}")));
        return v;
    }
    let mut v = vec![
        "<165>1 2024-05-01T10:00:00.003Z host1 app1 1234 ID47 [exampleSDID@32473 iut=\"3\" eventSource=\"Application\" eventID=\"1011\"] message with structured data".to_string(),
        "<14>1 2024-05-01T10:00:01Z opn.erhbg.com filterlog 99 - - plain message".to_string(),
        "<13>1 2024-05-01T10:00:02Z host2 app2 - - - \u{feff}message after a BOM".to_string(),
        "<13>1 2024-05-01T10:00:03Z host2 app2 - - -".to_string(),
        "this is not syslog".to_string(),
    ];
    v.extend(built.iter().enumerate().map(|(i, b)| {
        format!("<14>1 {} host3 app3 - - - {b}", time(20 + i).to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
    }));
    v
}

/// A Loki push (JSON) of a push job: entries in two streams, one with
/// structured metadata.
pub fn push_body(built: &[String]) -> String {
    let ns = |i: usize| time(i).timestamp_nanos_opt().unwrap_or(0).to_string();
    let mut values = vec![
        serde_json::json!([ns(0), "pushed line one"]),
        serde_json::json!([ns(1), "{\"level\":\"warn\",\"msg\":\"pushed json\"}", {"trace_id": "abc123"}]),
    ];
    values.extend(built.iter().enumerate().map(|(i, b)| serde_json::json!([ns(30 + i), b])));
    serde_json::json!({ "streams": [
        { "stream": { "app": "pushed", "level": "info" }, "values": values },
        { "stream": { "app": "other" }, "values": [[ns(2), "second stream line"]] },
    ]})
    .to_string()
}

/// Sends `messages` to the job's listener on `port` (retrying while it is
/// not up yet); whether all went.
pub fn send(kind: &Kind, port: u16, messages: &[String]) -> bool {
    let addr = format!("127.0.0.1:{port}");
    match kind {
        Kind::Syslog { udp: true, .. } => {
            let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            messages.iter().all(|m| sock.send_to(m.as_bytes(), &addr).is_ok())
        }
        Kind::Syslog { .. } => messages.iter().all(|m| {
            let framed = format!("{} {m}", m.len());
            wait_for(Duration::from_secs(20), || {
                std::net::TcpStream::connect(&addr).and_then(|mut c| c.write_all(framed.as_bytes())).is_ok()
            })
        }),
        Kind::Push => messages.iter().all(|body| {
            let url = format!("http://{addr}/loki/api/v1/push");
            wait_for(Duration::from_secs(20), || {
                let r = std::panic::catch_unwind(|| post_json(&url, body));
                r.is_ok_and(|r| r.status / 100 == 2)
            })
        }),
        Kind::Files | Kind::Kubernetes => true,
    }
}
