//! Promtail's `geoip` stage through the real binary: city, ASN and country
//! databases (MaxMind DB files written here, by a small writer of the
//! documented format) give the line Promtail's `geoip_*` labels; an address
//! the database lacks, or no address, changes nothing; `check` refuses a
//! missing database naming the key; `convert promtail` carries the stage over.

use crate::agent;
use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use agent::{agent_config, query_all, write_file, Agent, Stored};
use common::{bin, wait_for, Receiver};

/// A MaxMind DB value.
enum V {
    S(&'static str),
    F(f64),
    U(u8, u64),
    M(Vec<(&'static str, V)>),
    A(Vec<V>),
}

/// A control byte (and the extended type and size bytes) of type `ty` and `size`.
fn control(out: &mut Vec<u8>, ty: u8, size: usize) {
    let (bits, extra): (u8, Vec<u8>) = match size {
        0..=28 => (size as u8, vec![]),
        29..=284 => (29, vec![(size - 29) as u8]),
        _ => (30, ((size - 285) as u16).to_be_bytes().to_vec()),
    };
    if ty <= 7 {
        out.push((ty << 5) | bits);
    } else {
        out.push(bits);
        out.push(ty - 7);
    }
    out.extend(extra);
}

fn encode(v: &V, out: &mut Vec<u8>) {
    match v {
        V::S(s) => {
            control(out, 2, s.len());
            out.extend(s.as_bytes());
        }
        V::F(f) => {
            control(out, 3, 8);
            out.extend(f.to_be_bytes());
        }
        V::U(ty, n) => {
            let b = n.to_be_bytes();
            let skip = b.iter().take_while(|x| **x == 0).count();
            control(out, *ty, 8 - skip);
            out.extend(&b[skip..]);
        }
        V::M(pairs) => {
            control(out, 7, pairs.len());
            for (k, v) in pairs {
                encode(&V::S(k), out);
                encode(v, out);
            }
        }
        V::A(items) => {
            control(out, 11, items.len());
            for v in items {
                encode(v, out);
            }
        }
    }
}

/// An IPv4 MaxMind DB of `database_type` with one record per network `(a.b.c.0/24, record)`.
fn mmdb(database_type: &'static str, networks: Vec<([u8; 3], V)>) -> Vec<u8> {
    const EMPTY: u64 = u64::MAX;
    let mut data = Vec::new();
    let mut nodes: Vec<[u64; 2]> = vec![[EMPTY; 2]];
    let mut leaves = Vec::new();
    for (net, record) in &networks {
        let offset = data.len() as u64;
        encode(record, &mut data);
        let bits = u32::from_be_bytes([net[0], net[1], net[2], 0]);
        let mut node = 0usize;
        for depth in 0..24 {
            let bit = ((bits >> (31 - depth)) & 1) as usize;
            if depth == 23 {
                leaves.push((node, bit, offset));
            } else {
                if nodes[node][bit] == EMPTY {
                    nodes.push([EMPTY; 2]);
                    nodes[node][bit] = (nodes.len() - 1) as u64;
                }
                node = nodes[node][bit] as usize;
            }
        }
    }
    let count = nodes.len() as u64;
    let mut records: Vec<[u64; 2]> = nodes.iter().map(|n| n.map(|r| if r == EMPTY { count } else { r })).collect();
    for (node, bit, offset) in leaves {
        records[node][bit] = count + 16 + offset;
    }
    let mut out = Vec::new();
    for r in records {
        for v in r {
            out.extend(&v.to_be_bytes()[5..]);
        }
    }
    out.extend([0u8; 16]);
    out.extend(&data);
    out.extend(b"\xAB\xCD\xEFMaxMind.com");
    let meta = V::M(vec![
        ("binary_format_major_version", V::U(5, 2)),
        ("binary_format_minor_version", V::U(5, 0)),
        ("build_epoch", V::U(9, 1_700_000_000)),
        ("database_type", V::S(database_type)),
        ("description", V::M(vec![("en", V::S("test"))])),
        ("ip_version", V::U(5, 4)),
        ("languages", V::A(vec![V::S("en")])),
        ("node_count", V::U(6, count)),
        ("record_size", V::U(5, 24)),
    ]);
    encode(&meta, &mut out);
    out
}

fn names(en: &'static str) -> V {
    V::M(vec![("en", V::S(en)), ("de", V::S("anders"))])
}

fn city_db(dir: &Path) -> String {
    let record = V::M(vec![
        ("city", V::M(vec![("geoname_id", V::U(6, 4393217)), ("names", names("Kansas City"))])),
        ("continent", V::M(vec![("code", V::S("NA")), ("names", names("North America"))])),
        ("country", V::M(vec![("iso_code", V::S("US")), ("names", names("United States"))])),
        (
            "location",
            V::M(vec![
                ("latitude", V::F(39.1027)),
                ("longitude", V::F(-94.5778)),
                ("time_zone", V::S("America/Chicago")),
            ]),
        ),
        ("postal", V::M(vec![("code", V::S("64184"))])),
        (
            "subdivisions",
            V::A(vec![
                V::M(vec![("iso_code", V::S("MO")), ("names", names("Missouri"))]),
                V::M(vec![("iso_code", V::S("JC")), ("names", names("Jackson County"))]),
            ]),
        ),
    ]);
    let path = dir.join("city.mmdb");
    std::fs::write(&path, mmdb("GeoIP2-City", vec![([34, 120, 177], record)])).unwrap();
    path.display().to_string()
}

fn asn_db(dir: &Path) -> String {
    let record = V::M(vec![
        ("autonomous_system_number", V::U(6, 396982)),
        ("autonomous_system_organization", V::S("GOOGLE-CLOUD-PLATFORM")),
    ]);
    let path = dir.join("asn.mmdb");
    std::fs::write(&path, mmdb("GeoLite2-ASN", vec![([34, 120, 177], record)])).unwrap();
    path.display().to_string()
}

fn label<'a>(e: &'a Stored, name: &str) -> Option<&'a str> {
    e.labels.get(name).and_then(|v| v.as_str())
}

fn run(dir: &Path, stages: &str, lines: &[&str]) -> Vec<Stored> {
    let r = Receiver::start(&["--max-query-limit", "1000000"]);
    let log = write_file(dir, "app.log", &(lines.join("\n") + "\n"));
    let cfg = agent_config(dir, &r.base, &log.display().to_string(), "", stages);
    let agent = Agent::start(&cfg);
    let all = || query_all(&r, r#"{job="test"}"#, None);
    assert!(wait_for(Duration::from_secs(20), || all().len() == lines.len()), "{:?}\n{}", all(), agent.stderr_text());
    let mut got = all();
    assert!(agent.terminate(Duration::from_secs(15)).success());
    got.sort_by(|a, b| a.line.cmp(&b.line));
    got
}

#[test]
fn a_city_database_gives_promtails_labels() {
    let dir = tempfile::tempdir().unwrap();
    let db = city_db(dir.path());
    let stages = format!(
        r#"stages = [
  {{ regex = '^(?P<ip>\S+) ', labels = [] }},
  {{ geoip = {{ db = "{db}", source = "ip", db_type = "city" }} }},
]"#
    );
    let got = run(dir.path(), &stages, &["34.120.177.193 - POST /push", "10.0.0.1 - GET /", "nothing here"]);
    let hit = got.iter().find(|e| e.line.starts_with("34.")).unwrap();
    let want = [
        ("geoip_city_name", "Kansas City"),
        ("geoip_country_name", "United States"),
        ("geoip_continent_name", "North America"),
        ("geoip_continent_code", "NA"),
        ("geoip_location_latitude", "39.1027"),
        ("geoip_location_longitude", "-94.5778"),
        ("geoip_postal_code", "64184"),
        ("geoip_timezone", "America/Chicago"),
        ("geoip_subdivision_name", "Jackson County"),
        ("geoip_subdivision_code", "JC"),
    ];
    for (k, v) in want {
        assert_eq!(label(hit, k), Some(v), "{k}: {hit:?}");
    }
    for e in got.iter().filter(|e| !e.line.starts_with("34.")) {
        assert!(!e.labels.keys().any(|k| k.starts_with("geoip_")), "not in the database: {e:?}");
    }
}

#[test]
fn an_asn_database_and_a_country_lookup_of_a_city_database() {
    let dir = tempfile::tempdir().unwrap();
    let (asn, city) = (asn_db(dir.path()), city_db(dir.path()));
    let stages = format!(
        r#"stages = [
  {{ regex = '^(?P<ip>\S+) ', labels = [] }},
  {{ geoip = {{ db = "{asn}", source = "ip", db_type = "asn" }} }},
  {{ geoip = {{ db = "{city}", source = "ip", db_type = "country" }} }},
]"#
    );
    let got = run(dir.path(), &stages, &["34.120.177.9 x"]);
    let e = &got[0];
    assert_eq!(label(e, "geoip_autonomous_system_number"), Some("396982"));
    assert_eq!(label(e, "geoip_autonomous_system_organization"), Some("GOOGLE-CLOUD-PLATFORM"));
    assert_eq!(label(e, "geoip_country_name"), Some("United States"));
    assert_eq!(label(e, "geoip_continent_code"), Some("NA"));
    assert_eq!(label(e, "geoip_city_name"), None, "a country lookup gives no city");
}

#[test]
fn check_refuses_a_missing_database_and_convert_carries_the_stage_over() {
    let dir = tempfile::tempdir().unwrap();
    let stages = r#"stages = [{ regex = '(?P<ip>\S+)' }, { geoip = { db = "/nonexistent/city.mmdb", source = "ip", db_type = "city" } }]"#;
    let cfg = agent_config(dir.path(), "http://127.0.0.1:9", "/tmp/x.log", "", stages);
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("stages[1].geoip.db"), "{stderr}");
    let stages = r#"stages = [{ regex = '(?P<ip>\S+)' }, { geoip = { db = "x", source = "ip", db_type = "isp" } }]"#;
    let cfg = agent_config(dir.path(), "http://127.0.0.1:9", "/tmp/x.log", "", stages);
    let out = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("stages[1].geoip.db_type"));

    let db = city_db(dir.path());
    let yaml = format!(
        "clients:\n  - url: http://127.0.0.1:3100/loki/api/v1/push\nscrape_configs:\n  - job_name: app\n    static_configs:\n      - targets: [localhost]\n        labels:\n          __path__: /var/log/app.log\n    pipeline_stages:\n      - regex:\n          expression: '^(?P<ip>\\S+) .*'\n      - geoip:\n          db: {db}\n          source: ip\n          db_type: city\n"
    );
    let p = write_file(dir.path(), "promtail.yaml", &yaml);
    let out = Command::new(bin()).args(["convert", "promtail"]).arg(&p).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("not translated"), "{stderr}");
    let toml = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(toml.contains(&format!(r#"{{ geoip = {{ db = "{db}", source = "ip", db_type = "city" }} }}"#)), "{toml}");
    let cfg = write_file(dir.path(), "tailship.toml", &toml);
    let check = Command::new(bin()).args(["check", "--config"]).arg(&cfg).output().unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", String::from_utf8_lossy(&check.stderr));
}
