//! The release artifacts of `packaging/release.sh`, tested as a user takes
//! them: the checksums verify; the tarball's binary is static, says its
//! version and commit, and ships lines; the .deb installs into a clean root
//! (its own `/etc` and dpkg database, the host's programs under an overlay of
//! `/usr`) with its user and unit; the .rpm holds the same files and makes
//! the same user; the image loads into the test's private Docker Engine and
//! ships a log directory mounted from the host to a receiver on 127.0.0.1
//! (`--network host`: the container has no address of its own).
//!
//! They run where `TAILSHIP_DIST` names the directory release.sh filled
//! (`.ci/run` builds it and sets it); elsewhere they say so and pass.

use crate::agent;
use crate::common;
use crate::dockerd;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{wait_for, Receiver};
use dockerd::Dockerd;

fn dist() -> Option<PathBuf> {
    match std::env::var_os("TAILSHIP_DIST") {
        Some(d) => Some(PathBuf::from(d)),
        None => {
            eprintln!("SKIPPED: TAILSHIP_DIST is not set (packaging/release.sh, then TAILSHIP_DIST=dist)");
            None
        }
    }
}

fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

fn ok(cmd: &mut Command) -> String {
    let out = run(cmd);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?}: {text}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn head_commit() -> String {
    let repo = env!("CARGO_MANIFEST_DIR");
    ok(Command::new("git").args(["-C", repo, "rev-parse", "--short=12", "HEAD"])).trim().to_string()
}

/// The one file in `dist` whose name ends with `suffix`.
fn artifact(dist: &Path, suffix: &str) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dist)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().ends_with(suffix))
        .collect();
    assert_eq!(found.len(), 1, "one *{suffix} in {}: {found:?}", dist.display());
    found.into_iter().next().unwrap()
}

#[test]
fn every_artifact_is_in_sha256sums_and_verifies() {
    let Some(dist) = dist() else { return };
    let sums = std::fs::read_to_string(dist.join("SHA256SUMS")).unwrap();
    let v = version();
    for name in [
        format!("tailship-{v}-x86_64-linux.tar.gz"),
        format!("tailship_{v}-1_amd64.deb"),
        format!("tailship-{v}-1.x86_64.rpm"),
        format!("tailship-{v}-image.tar"),
        "NOTES.md".to_string(),
    ] {
        assert!(sums.lines().any(|l| l.ends_with(&format!("  {name}"))), "{name} not in SHA256SUMS:\n{sums}");
    }
    ok(Command::new("sha256sum").args(["--check", "--strict", "SHA256SUMS"]).current_dir(&dist));
    let notes = std::fs::read_to_string(dist.join("NOTES.md")).unwrap();
    assert!(notes.starts_with(&format!("# tailship {v}\n")) && notes.contains("### "), "{notes}");
}

#[test]
fn the_tarballs_binary_is_static_names_its_commit_and_ships_lines() {
    let Some(dist) = dist() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let tarball = artifact(&dist, "-x86_64-linux.tar.gz");
    ok(Command::new("tar").arg("-xzf").arg(&tarball).arg("-C").arg(tmp.path()));
    let root = tmp.path().join(format!("tailship-{}-x86_64-linux", version()));
    for f in [
        "tailship",
        "man/tailship.1",
        "completions/tailship.bash",
        "completions/_tailship",
        "completions/tailship.fish",
        "examples/tailship.toml",
        "examples/sidecar.toml",
        "examples/local.toml",
        "systemd/tailship.service",
        "systemd/tailship.env",
        "LICENSE",
        "README.md",
        "CHANGELOG.md",
    ] {
        assert!(root.join(f).is_file(), "{f} missing from {}", tarball.display());
    }
    let bin = root.join("tailship");
    let headers = ok(Command::new("readelf").args(["-l", "-d"]).arg(&bin));
    assert!(!headers.contains("program interpreter") && !headers.contains("(NEEDED)"), "not static:\n{headers}");
    let says = ok(Command::new(&bin).arg("--version"));
    assert_eq!(says.trim(), format!("tailship {} ({})", version(), head_commit()));
    // It ships: a line piped to `tailship push -` reaches a receiver.
    let store = Receiver::start(&[]);
    let mut push = Command::new(&bin)
        .args(["push", "-", "--url", &store.base, "--label", "job=tarball"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    push.stdin.take().unwrap().write_all(b"from the release tarball\n").unwrap();
    assert!(push.wait().unwrap().success());
    assert!(wait_for(Duration::from_secs(10), || store.stats()["entries"].as_u64() == Some(1)), "{}", store.stats());
}

/// A root of its own for dpkg: a fresh `/etc` and dpkg database, the host's
/// programs through an overlay of `/usr` (what dpkg installs lands in the
/// overlay's upper directory, never on the host). Unmounted on drop.
struct CleanRoot {
    dir: tempfile::TempDir,
}

impl CleanRoot {
    fn new() -> CleanRoot {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        for d in [
            "root",
            "usr",
            "upper",
            "work",
            "etc",
            "tmp",
            "var/lib/dpkg/info",
            "var/lib/dpkg/updates",
            "var/log",
            "run",
            "dev",
        ] {
            std::fs::create_dir_all(r.join(d)).unwrap();
        }
        std::fs::set_permissions(r.join("tmp"), std::fs::Permissions::from_mode(0o1777)).unwrap();
        for link in ["bin", "sbin", "lib", "lib64"] {
            std::os::unix::fs::symlink(format!("usr/{link}"), r.join(link)).unwrap();
        }
        for f in ["var/lib/dpkg/status", "var/lib/dpkg/available"] {
            std::fs::write(r.join(f), "").unwrap();
        }
        std::fs::write(r.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n").unwrap();
        std::fs::write(r.join("etc/group"), "root:x:0:\nadm:x:4:\n").unwrap();
        std::fs::write(r.join("etc/shadow"), "root:*:19000:0:99999:7:::\n").unwrap();
        std::fs::write(r.join("etc/gshadow"), "root:*::\nadm:*::\n").unwrap();
        // Configuration adduser and chfn read (PAM's too), as a fresh system has it.
        for f in ["adduser.conf", "login.defs", "nsswitch.conf", "shells", "pam.d", "security"] {
            if Path::new("/etc").join(f).exists() {
                ok(Command::new("cp").arg("-r").arg(Path::new("/etc").join(f)).arg(r.join("etc")));
            }
        }
        ok(Command::new("mknod").args(["-m", "666"]).arg(r.join("dev/null")).args(["c", "1", "3"]));
        let opts = format!("lowerdir=/usr,upperdir={},workdir={}", r.join("upper").display(), r.join("work").display());
        ok(Command::new("mount").args(["-t", "overlay", "overlay", "-o", &opts]).arg(r.join("usr")));
        CleanRoot { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for CleanRoot {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.dir.path().join("usr")).status();
    }
}

#[test]
fn the_deb_installs_into_a_clean_root_with_its_user_unit_and_config() {
    let Some(dist) = dist() else { return };
    // SAFETY: geteuid has no preconditions and cannot fail.
    if !have("dpkg") || !have("adduser") || unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: needs root, dpkg and adduser (CI runs as root on Debian)");
        return;
    }
    let host_had_it = Path::new("/usr/bin/tailship").exists();
    let root = CleanRoot::new();
    let r = root.path();
    let deb = artifact(&dist, "_amd64.deb");
    let out =
        run(Command::new("dpkg").arg(format!("--root={}", r.display())).args(["--force-depends", "-i"]).arg(&deb));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "dpkg -i: {text}");
    let passwd = std::fs::read_to_string(r.join("etc/passwd")).unwrap();
    assert!(
        passwd.lines().any(|l| l.starts_with("tailship:") && l.ends_with(":/var/lib/tailship:/usr/sbin/nologin")),
        "{passwd}"
    );
    assert!(r.join("upper/bin/tailship").is_file(), "the binary lands in the root's /usr, not the host's");
    for f in ["etc/tailship/tailship.toml", "etc/tailship/tailship.env", "usr/lib/systemd/system/tailship.service"] {
        assert!(r.join(f).is_file(), "{f} not installed");
    }
    assert_eq!(Path::new("/usr/bin/tailship").exists(), host_had_it, "the install reached the host's /usr");
    let says = ok(Command::new("chroot").arg(r).args(["/usr/bin/tailship", "--version"]));
    assert_eq!(says.trim(), format!("tailship {} ({})", version(), head_commit()));
    let status = ok(Command::new("dpkg").arg(format!("--root={}", r.display())).args(["-s", "tailship"]));
    assert!(status.contains("Status: install ok installed"), "{status}");
}

#[test]
fn the_rpm_holds_the_files_of_the_deb_makes_the_user_and_leaves_the_unit_off() {
    let Some(dist) = dist() else { return };
    if !have("rpm") {
        eprintln!("SKIPPED: needs rpm (apt-get install rpm; .ci/run installs it)");
        return;
    }
    let rpm = artifact(&dist, ".x86_64.rpm");
    let files = ok(Command::new("rpm").args(["-qlp"]).arg(&rpm));
    for f in [
        "/usr/bin/tailship",
        "/etc/tailship/tailship.toml",
        "/etc/tailship/tailship.env",
        "/usr/lib/systemd/system/tailship.service",
        "/usr/share/man/man1/tailship.1",
        "/usr/share/bash-completion/completions/tailship",
        "/usr/share/licenses/tailship/LICENSE",
        "/usr/share/doc/tailship/examples/sidecar.toml",
    ] {
        assert!(files.lines().any(|l| l == f), "{f} not in the rpm:\n{files}");
    }
    let config = ok(Command::new("rpm").args(["-qcp"]).arg(&rpm));
    assert!(config.contains("/etc/tailship/tailship.toml"), "the config is not a %config file: {config}");
    let scripts = ok(Command::new("rpm").args(["-qp", "--scripts"]).arg(&rpm));
    assert!(scripts.contains("useradd --system") && !scripts.contains("systemctl enable"), "{scripts}");
    let info = ok(Command::new("rpm").args(["-qip"]).arg(&rpm));
    assert!(info.contains(&format!("Version     : {}", version())) && info.contains("Architecture: x86_64"), "{info}");
    // The same binary as the tarball's.
    let dir = tempfile::tempdir().unwrap();
    ok(Command::new("sh")
        .arg("-c")
        .arg(format!("rpm2cpio {} | cpio -idm --quiet", rpm.display()))
        .current_dir(dir.path()));
    let says = ok(Command::new(dir.path().join("usr/bin/tailship")).arg("--version"));
    assert_eq!(says.trim(), format!("tailship {} ({})", version(), head_commit()));
}

#[test]
fn the_image_loads_and_ships_a_mounted_log_dir_to_a_receiver_on_loopback() {
    let Some(dist) = dist() else { return };
    let Some(d) = Dockerd::start() else { return };
    let image = artifact(&dist, "-image.tar");
    let loaded = d.docker(&["load", "-i", &image.display().to_string()]);
    let tag = format!("tailship:{}", version());
    assert!(loaded.contains(&tag), "{loaded}");
    let store = Receiver::start(&[]);
    let logs = d.dir.path().join("app-logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::set_permissions(&logs, std::fs::Permissions::from_mode(0o755)).unwrap();
    let lines: String = (0..100).map(|i| format!("image line {i:03}\n")).collect();
    std::fs::write(logs.join("web.log"), lines).unwrap();
    std::fs::set_permissions(logs.join("web.log"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let listen = format!("127.0.0.1:{}", agent::free_port());
    let id = d.docker(&[
        "run",
        "-d",
        "--network",
        "host",
        "-v",
        &format!("{}:/var/log/app:ro", logs.display()),
        "-e",
        &format!("LOG_URL={}", store.base),
        "-e",
        "LOG_API_PREFIX=/logstore/api/v1",
        "-e",
        &format!("TAILSHIP_SERVER__LISTEN={listen}"),
        "-e",
        "JOB=web",
        &tag,
    ]);
    let arrived = wait_for(Duration::from_secs(60), || store.stats()["entries"].as_u64() == Some(100));
    assert!(arrived, "{}; agent: {}", store.stats(), d.docker(&["logs", &id]));
    let config = d.docker(&["inspect", "--format", "{{.Config.User}} {{.Config.Entrypoint}} {{.Config.Cmd}}", &id]);
    assert_eq!(config, "65532:65532 [/usr/local/bin/tailship] [run]");
    let says = d.docker(&["run", "--rm", "--network", "none", &tag, "--version"]);
    assert_eq!(says.trim(), format!("tailship {} ({})", version(), head_commit()));
}
