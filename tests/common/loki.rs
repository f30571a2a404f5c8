//! A real Loki 3.7.6 on loopback (from `../shared/peers`), for tests that
//! must hold against the service itself; `None` (the test skips, saying
//! so) where the binary is absent.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::agent::free_port;
use crate::common::wait_for;

pub struct Loki {
    child: Child,
    _dir: tempfile::TempDir,
    pub base: String,
}

/// The Loki binary of `../shared/peers`, if there is one.
fn binary() -> Option<PathBuf> {
    let get = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/peers/get");
    let out = Command::new(get).arg("loki").output().ok()?;
    if !out.status.success() {
        return None;
    }
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    path.exists().then_some(path)
}

impl Loki {
    /// Starts Loki (one tenant, no auth) and waits until it is ready.
    pub fn start() -> Option<Loki> {
        Self::start_with(false, "")
    }

    /// Starts Loki with tenants (`auth_enabled: true`; a push names its
    /// tenant in X-Scope-OrgID) and `overrides`, the per-tenant limits of its
    /// runtime config as YAML lines (`noisy: { max_global_streams_per_user: 5 }`).
    #[allow(dead_code)]
    pub fn start_tenants(overrides: &str) -> Option<Loki> {
        Self::start_with(true, overrides)
    }

    fn start_with(tenants: bool, overrides: &str) -> Option<Loki> {
        let Some(bin) = binary() else {
            eprintln!("no Loki binary in ../shared/peers: skipping");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let (port, grpc) = (free_port(), free_port());
        let d = dir.path().display();
        let runtime = dir.path().join("overrides.yaml");
        let indented: String = overrides.lines().map(|l| format!("  {l}\n")).collect();
        std::fs::write(&runtime, format!("overrides:\n{indented}")).unwrap();
        let config = format!(
            "auth_enabled: {tenants}
runtime_config: {{ file: {runtime}, period: 1s }}
server: {{ http_listen_address: 127.0.0.1, http_listen_port: {port}, grpc_listen_address: 127.0.0.1, grpc_listen_port: {grpc}, log_level: warn }}
common:
  instance_addr: 127.0.0.1
  path_prefix: {d}
  replication_factor: 1
  ring: {{ instance_addr: 127.0.0.1, kvstore: {{ store: inmemory }} }}
  storage: {{ filesystem: {{ chunks_directory: {d}/chunks, rules_directory: {d}/rules }} }}
schema_config:
  configs: [{{ from: 2024-01-01, store: tsdb, object_store: filesystem, schema: v13, index: {{ prefix: index_, period: 24h }} }}]
limits_config: {{ allow_structured_metadata: true, volume_enabled: true }}
analytics: {{ reporting_enabled: false }}
",
            runtime = runtime.display()
        );
        let cfg = dir.path().join("loki.yaml");
        std::fs::write(&cfg, config).unwrap();
        let child = Command::new(bin)
            .arg(format!("-config.file={}", cfg.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let loki = Loki { child, _dir: dir, base };
        let addr = format!("127.0.0.1:{port}");
        // Starting, it may reset a connection it accepted: asked again then.
        let ready = wait_for(Duration::from_secs(90), || {
            std::net::TcpStream::connect(&addr).is_ok()
                && crate::common::try_request("GET", &format!("{}/ready", loki.base), &[], b"")
                    .is_ok_and(|r| r.status == 200)
        });
        assert!(ready, "Loki never became ready");
        Some(loki)
    }

    /// The lines of every entry `query` selects over the last hour.
    pub fn lines(&self, query: &str) -> Vec<String> {
        self.tenant_lines(None, query)
    }

    /// [`Loki::lines`] of `tenant`'s entries (Loki started with tenants).
    pub fn tenant_lines(&self, tenant: Option<&str>, query: &str) -> Vec<String> {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let url = crate::common::with_params(
            &format!("{}/loki/api/v1/query_range", self.base),
            &[
                ("query", query),
                ("limit", "5000"),
                ("start", &(now - 3_600_000_000_000).to_string()),
                ("end", &(now + 60_000_000_000).to_string()),
                ("direction", "forward"),
            ],
        );
        let headers: Vec<(&str, &str)> = tenant.map(|t| ("X-Scope-OrgID", t)).into_iter().collect();
        let r = crate::common::request("GET", &url, &headers, b"");
        assert_eq!(r.status, 200, "{}", r.text());
        let v = r.json();
        let mut out = Vec::new();
        for s in v["data"]["result"].as_array().into_iter().flatten() {
            for e in s["values"].as_array().into_iter().flatten() {
                out.push(e[1].as_str().unwrap_or_default().to_string());
            }
        }
        out
    }
}

impl Drop for Loki {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
