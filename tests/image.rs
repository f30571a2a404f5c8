//! The container image built and run with a real Docker Engine (see
//! `common/dockerd.rs`: a private `dockerd`, no bridge, containers with
//! `--network none` only, nothing pulled). The base is made here from the
//! host's glibc (as distroless/cc holds it; no shell), the image from
//! `packaging/Dockerfile.prebuilt` (the runtime stage of
//! `packaging/Dockerfile`) over the binary under test.
//!
//! With no network, the store runs inside the agent's container
//! (`docker exec ... tailship receive` on its loopback) and is read there
//! with `tailship query`. The agent is the container's own process, reading
//! a log directory shared with the host and keeping positions on a host
//! directory: it is killed (`docker kill -s KILL`) and started again, and
//! the lines are counted on both sides of the kill.

use crate::common;
use crate::dockerd;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{bin, wait_for};
use dockerd::Dockerd;

const IMAGE: &str = "tailship:local";

/// A root file system holding what the binary links to (as `ldd` says), no shell.
fn base_rootfs(dir: &Path, binary: &Path) {
    let out = Command::new("ldd").arg(binary).output().expect("ldd");
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let path = line.split("=>").last().unwrap_or("").split_whitespace().next().unwrap_or("");
        if path.starts_with('/') {
            let to = dir.join(path.trim_start_matches('/'));
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(std::fs::canonicalize(path).unwrap(), &to).unwrap();
        }
    }
    for d in ["tmp", "etc"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    std::fs::set_permissions(dir.join("tmp"), std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::write(
        dir.join("etc/passwd"),
        "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
    )
    .unwrap();
}

/// Builds `tailship:local`; the binary stripped of debug info to keep the layer small.
fn build_image(d: &Dockerd) {
    let work = d.dir.path().join("image");
    let rootfs = work.join("rootfs");
    let ctx = work.join("context");
    std::fs::create_dir_all(ctx.join("empty")).unwrap();
    base_rootfs(&rootfs, &bin());
    let import = format!("tar -C {} -c . | docker --host {} import - tailship-base:local", rootfs.display(), d.host());
    let out = Command::new("sh").args(["-c", &import]).output().unwrap();
    assert!(out.status.success(), "import: {}", String::from_utf8_lossy(&out.stderr));
    let stripped = ctx.join("tailship");
    let ok = Command::new("strip").arg("--strip-debug").arg(bin()).arg("-o").arg(&stripped).status();
    if !ok.is_ok_and(|s| s.success()) {
        std::fs::copy(bin(), &stripped).unwrap();
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(repo.join("config/sidecar.toml"), ctx.join("sidecar.toml")).unwrap();
    let out = Command::new("docker")
        .env("DOCKER_BUILDKIT", "0")
        .args(["--host", &d.host(), "build", "--network", "none", "-q", "-t", IMAGE])
        .args(["--build-arg", "BASE=tailship-base:local", "-f"])
        .arg(repo.join("packaging/Dockerfile.prebuilt"))
        .arg(&ctx)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "build: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn append(path: &Path, from: usize, n: usize) {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    for i in from..from + n {
        writeln!(f, "line {i:05}").unwrap();
    }
}

/// Lines the store inside the container holds, counted with `tailship query` there.
fn stored(d: &Dockerd, container: &str) -> Option<Vec<String>> {
    let out = Command::new("docker")
        .args(["--host", &d.host(), "exec", container, "/usr/local/bin/tailship", "query", r#"{job="web"}"#])
        .args(["--url", "http://127.0.0.1:3100", "--since", "1h", "--limit", "0", "-o", "raw", "-q"])
        .output()
        .unwrap();
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect())
}

fn start_store(d: &Dockerd, container: &str) {
    d.docker(&["exec", "-d", container, "/usr/local/bin/tailship", "receive", "--listen", "127.0.0.1:3100"]);
}

#[test]
fn the_image_runs_the_sidecar_over_a_shared_log_dir_killed_and_started_again_without_resending() {
    let Some(d) = Dockerd::start() else { return };
    build_image(&d);
    let logs: PathBuf = d.dir.path().join("app-logs");
    let positions: PathBuf = d.dir.path().join("positions");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::create_dir_all(&positions).unwrap();
    std::fs::set_permissions(&logs, std::fs::Permissions::from_mode(0o755)).unwrap();
    // The image's user (65532) owns the positions volume, as a pod's fsGroup would make it.
    std::os::unix::fs::chown(&positions, Some(65532), Some(65532)).unwrap();
    let web = logs.join("web.log");
    append(&web, 0, 300);
    std::fs::set_permissions(&web, std::fs::Permissions::from_mode(0o644)).unwrap();
    let id = d.docker(&[
        "run",
        "-d",
        "--network",
        "none",
        "-v",
        &format!("{}:/var/log/app:ro", logs.display()),
        "-v",
        &format!("{}:/var/lib/tailship", positions.display()),
        "-e",
        "LOG_URL=http://127.0.0.1:3100",
        "-e",
        "LOG_API_PREFIX=/logstore/api/v1",
        "-e",
        "JOB=web",
        "-e",
        "POD_NAME=web-1",
        IMAGE,
    ]);
    start_store(&d, &id);
    let all = |n: usize| move |got: &Option<Vec<String>>| got.as_ref().is_some_and(|l| l.len() >= n);
    let mut got = None;
    let arrived = wait_for(Duration::from_secs(60), || {
        got = stored(&d, &id);
        all(300)(&got)
    });
    assert!(arrived, "{:?} lines; agent: {}", got.map(|l| l.len()), d.docker(&["logs", &id]));
    assert_eq!(got.unwrap().len(), 300);
    // Positions written on the host volume, by the image's user.
    let pos = positions.join("positions.json");
    assert!(wait_for(Duration::from_secs(30), || std::fs::read_to_string(&pos).is_ok_and(|t| t.contains("web.log"))));
    // Every acknowledged line's position is saved (sync_period 10s by default) before the kill.
    let synced = wait_for(Duration::from_secs(30), || {
        std::fs::read_to_string(&pos).is_ok_and(|t| t.contains(&std::fs::metadata(&web).unwrap().len().to_string()))
    });
    assert!(synced, "{}", std::fs::read_to_string(&pos).unwrap_or_default());
    d.docker(&["kill", "-s", "KILL", &id]);
    // Written while the agent is down, then the container started again (a fresh store in it).
    append(&web, 300, 200);
    d.docker(&["start", &id]);
    start_store(&d, &id);
    let mut got = None;
    let arrived = wait_for(Duration::from_secs(60), || {
        got = stored(&d, &id);
        all(200)(&got)
    });
    assert!(arrived, "{:?} lines; agent: {}", got.map(|l| l.len()), d.docker(&["logs", &id]));
    let lines = got.unwrap();
    // Only the new lines: the 300 before the kill were not sent again.
    assert_eq!(lines.len(), 200, "{lines:?}");
    assert_eq!(lines.iter().min().map(String::as_str), Some("line 00300"));
    let user = d.docker(&["inspect", "--format", "{{.Config.User}} {{.Config.Entrypoint}} {{.Config.Cmd}}", &id]);
    assert_eq!(user, "65532:65532 [/usr/local/bin/tailship] [run]");
}

#[test]
fn the_prebuilt_dockerfile_has_the_runtime_settings_of_the_release_one() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let settings = |file: &str| -> Vec<String> {
        let text = std::fs::read_to_string(repo.join(file)).unwrap();
        let runtime = text.rsplit("\nFROM ").next().unwrap().to_string();
        let mut out = Vec::new();
        let mut lines = runtime.lines().peekable();
        while let Some(l) = lines.next() {
            if ["USER ", "ENV ", "EXPOSE ", "ENTRYPOINT ", "CMD "].iter().any(|k| l.starts_with(k)) {
                let mut l = l.to_string();
                while l.ends_with('\\') {
                    l.push_str(lines.next().unwrap_or(""));
                }
                out.push(l);
            }
        }
        out
    };
    let release = settings("packaging/Dockerfile");
    assert_eq!(release.len(), 5, "{release:?}");
    assert_eq!(release, settings("packaging/Dockerfile.prebuilt"));
}
