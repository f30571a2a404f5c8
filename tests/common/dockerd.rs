//! A private Docker Engine for a test: `dockerd` with its own data root,
//! exec root and socket in a temporary directory, no bridge, no iptables (no
//! network is created); containers run with `--network none` from an image
//! imported from busybox-static (nothing is pulled). Dropping it removes every
//! container and stops the daemon.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::agent::{query_all, Stored};
use crate::common::Receiver;

/// The image every test container runs.
pub const IMAGE: &str = "tailship-test-busybox";

pub struct Dockerd {
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    child: Option<Child>,
    /// One private Engine at a time in the test binary (held until it is gone).
    _one: std::sync::MutexGuard<'static, ()>,
}

static ENGINE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn found(program: &str) -> bool {
    std::env::var_os("PATH").map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file())).unwrap_or(false)
}

fn busybox() -> Option<PathBuf> {
    ["/bin/busybox", "/usr/bin/busybox"].iter().map(PathBuf::from).find(|p| p.is_file())
}

impl Dockerd {
    /// Starts the daemon and imports the image; None (said on stderr) when
    /// this machine has no dockerd, docker or busybox (`.ci/run` installs them).
    pub fn start() -> Option<Dockerd> {
        Self::start_with(&[])
    }

    /// As [`Dockerd::start`], with more arguments for dockerd (another
    /// `--host=tcp://127.0.0.1:PORT`, TLS settings).
    pub fn start_with(extra: &[String]) -> Option<Dockerd> {
        if !found("dockerd") || !found("docker") || busybox().is_none() {
            eprintln!("SKIPPED: needs dockerd, docker and busybox-static (apt-get install docker.io busybox-static)");
            return None;
        }
        let one = ENGINE.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::Builder::new().prefix("tsd").tempdir_in("/tmp").unwrap();
        let d = dir.path();
        let socket = d.join("docker.sock");
        let log = std::fs::File::create(d.join("dockerd.log")).unwrap();
        let child = Command::new("dockerd")
            .args(["--bridge=none", "--iptables=false", "--ip-masq=false"])
            .arg(format!("--data-root={}", d.join("data").display()))
            .arg(format!("--exec-root={}", d.join("exec").display()))
            .arg(format!("--pidfile={}", d.join("dockerd.pid").display()))
            .arg(format!("--host=unix://{}", socket.display()))
            .args(extra)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn dockerd");
        let mut me = Dockerd { dir, socket, child: Some(child), _one: one };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !me.try_docker(&["version"]).status.success() {
            assert!(Instant::now() < deadline, "dockerd did not start: {}", me.log());
            if let Some(Some(status)) = me.child.as_mut().map(|c| c.try_wait().ok().flatten()) {
                panic!("dockerd exited ({status}): {}", me.log());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let rootfs = me.dir.path().join("rootfs");
        std::fs::create_dir_all(rootfs.join("bin")).unwrap();
        std::fs::copy(busybox().unwrap(), rootfs.join("bin/busybox")).unwrap();
        std::os::unix::fs::symlink("busybox", rootfs.join("bin/sh")).unwrap();
        let import =
            format!("tar -C {} -c . | docker --host unix://{} import - {IMAGE}", rootfs.display(), me.socket.display());
        let out = Command::new("sh").args(["-c", &import]).output().unwrap();
        assert!(out.status.success(), "import: {}", String::from_utf8_lossy(&out.stderr));
        Some(me)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("dockerd.log")).unwrap_or_default()
    }

    pub fn host(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    fn try_docker(&self, args: &[&str]) -> Output {
        Command::new("docker").arg("--host").arg(self.host()).args(args).output().unwrap()
    }

    /// Runs `docker ARGS`, panicking when it fails; its stdout.
    pub fn docker(&self, args: &[&str]) -> String {
        let out = self.try_docker(args);
        assert!(out.status.success(), "docker {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// `docker run -d --network none EXTRA IMAGE sh -c SCRIPT`: never a network address.
    pub fn run(&self, extra: &[&str], script: &str) -> String {
        let mut args = vec!["run", "-d", "--network", "none"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&[IMAGE, "/bin/sh", "-c", script]);
        self.docker(&args)
    }

    /// The directory of a container's log files.
    pub fn log_dir(&self, container: &str) -> PathBuf {
        let p = self.docker(&["inspect", "--format", "{{.LogPath}}", container]);
        Path::new(&p).parent().unwrap().to_path_buf()
    }
}

impl Drop for Dockerd {
    fn drop(&mut self) {
        let ids = self.try_docker(&["ps", "-aq"]);
        for id in String::from_utf8_lossy(&ids.stdout).split_whitespace() {
            let _ = self.try_docker(&["rm", "-f", id]);
        }
        if let Some(mut child) = self.child.take() {
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(30);
            while child.try_wait().ok().flatten().is_none() {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        // Container file systems may still be mounted below the data root.
        let _ = Command::new("sh")
            .args([
                "-c",
                &format!("grep -o ' {}[^ ]*' /proc/mounts | xargs -r -n1 umount -l", self.dir.path().display()),
            ])
            .status();
    }
}

/// The `[client]` keys of the Docker tests' agents: batches sent after
/// 100ms, retries backing off from 20ms to 500ms.
pub const DOCKER_CLIENT: &str =
    "batch = { max_wait = \"100ms\" }\nretry = { min_backoff = \"20ms\", max_backoff = \"500ms\" }";

/// What `r` stored of `container` (its `container` label).
pub fn lines_of(r: &Receiver, container: &str) -> Vec<Stored> {
    query_all(r, &format!(r#"{{container="{container}"}}"#), None)
}

/// Distinct lines of `container` matching `prefix`.
pub fn distinct(r: &Receiver, container: &str, prefix: &str) -> BTreeSet<String> {
    lines_of(r, container).into_iter().map(|e| e.line).filter(|l| l.starts_with(prefix)).collect()
}

/// A container's script writing `n` numbered lines `TAG run R line I`
/// followed by `suffix` (R counts the container's starts), `pause` seconds
/// apart, then `TAG run R done` on stderr, then sleeping.
pub fn numbered_script(tag: &str, n: u32, pause: &str, suffix: &str) -> String {
    format!(
        "r=$(cat /runs 2>/dev/null || echo 0); r=$((r+1)); echo $r > /runs; i=0; \
         while [ $i -lt {n} ]; do echo \"{tag} run $r line $i{suffix}\"; i=$((i+1)); sleep {pause}; done; \
         echo \"{tag} run $r done\" >&2; sleep 100000"
    )
}

/// The labels of `e`, but `service_name`.
pub fn labels(e: &Stored) -> BTreeMap<String, String> {
    e.labels
        .iter()
        .filter(|(k, _)| *k != "service_name")
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().into()))
        .collect()
}
