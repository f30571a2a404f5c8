use std::io::Write;

use crate::cli::CheckArgs;

/// `tailship check`: validate, then print the effective config with secrets
/// redacted (`--quiet`: only the problems, and the exit code).
pub fn check(args: &CheckArgs) -> anyhow::Result<()> {
    let path = crate::cli::config_or_default(&args.config);
    let plan = crate::plan::load(&path)?;
    for (key, message) in crate::plan::warnings(&plan) {
        // On stderr, so the effective config on stdout stays a config.
        eprintln!("warning: {}: {key}: {message}", path.display());
    }
    let (problems, warnings) = state_paths(&plan);
    for (key, message) in warnings {
        eprintln!("warning: {}: {key}: {message}", path.display());
    }
    if !problems.is_empty() {
        let errors = problems
            .into_iter()
            .map(|(key, message)| crate::config::ConfigError { file: path.clone(), key: key.into(), message })
            .collect();
        return Err(crate::config::ConfigErrors(errors).into());
    }
    if args.quiet {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "# {}: valid", path.display())?;
    for s in &plan.sources {
        let cfg = s.spec.config.kubernetes.as_ref();
        let Some(k) = cfg.filter(|k| k.role == crate::config::KubeRole::Pod) else { continue };
        let (node, from) = crate::discovery::kubernetes_node(k);
        writeln!(out, "# source {}: the pods of node `{node}` (from {from})", s.name)?;
    }
    let text = crate::config::to_redacted_toml(&plan.config);
    out.write_all(crate::util::secrets::scrub(&text).as_bytes())?;
    Ok(())
}

/// A problem or warning of [`state_paths`]: the key, and what is wrong.
type Found = (&'static str, String);

/// What `run` reads and writes on disk, tested as the user running `check`
/// (run it as the agent's user: `sudo -u tailship tailship check`): the
/// positions file and the logs beside it can be read and are not corrupt
/// (else `run` exits 2), and their directory can be written; the spool
/// directory, when a network source uses it or it holds segments, can be
/// read and written, and every file in it. Problems, and warnings (a
/// positions file `run` would start without, as the config says).
fn state_paths(plan: &crate::plan::Plan) -> (Vec<Found>, Vec<Found>) {
    use crate::util::pathtext::text;
    let (mut problems, mut warnings) = (Vec::new(), Vec::new());
    let user = user_text();
    let positions = &plan.config.positions;
    if let Err(e) = crate::positions::PositionsFile::probe(&positions.path) {
        if positions.on_unreadable == crate::config::OnUnreadable::StartFresh {
            warnings
                .push(("positions.path", format!("{e} (on_unreadable = \"start_fresh\": `run` starts without it)")));
        } else {
            problems.push(("positions.path", e.to_string()));
        }
    }
    let dir = parent_dir(&positions.path);
    if let Err(e) = can_create_in(&dir) {
        problems.push((
            "positions.path",
            format!(
                "{e}: {user} cannot write the positions file {} there, so `run` would save no positions and send \
                 lines again after each restart; give the agent's user that directory (the packaged service \
                 writes /var/lib/tailship)",
                text(&positions.path)
            ),
        ));
    }
    let spool = &plan.config.spool.path;
    let used = plan.sources.iter().any(|s| s.spec.config.kind.receives());
    if used || spool.exists() {
        if let Err(e) = can_create_in(spool).and_then(|()| readable_tree(spool, 2)) {
            problems.push((
                "spool.path",
                format!(
                    "{e}: {user} cannot read and write the spool {} (network sources keep what they received \
                     there); give the agent's user that directory (the packaged service writes /var/lib/tailship)",
                    text(spool)
                ),
            ));
        }
    }
    (problems, warnings)
}

/// "uid N (name)": who runs `check`.
fn user_text() -> String {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    format!("this user (uid {uid})")
}

/// The directory of the file at `path`.
fn parent_dir(path: &std::path::Path) -> std::path::PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    }
}

/// `access(2)` of `path` for `mode` as the effective user.
fn access(path: &std::path::Path, mode: libc::c_int) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: a NUL-terminated path that lives across the call.
    if unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), mode, libc::AT_EACCESS) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Files can be made in the directory `dir`: it can be written (and read),
/// or, missing, the nearest directory above it that exists can (`run`
/// makes the rest).
fn can_create_in(dir: &std::path::Path) -> Result<(), String> {
    let shown = |p: &std::path::Path| crate::util::pathtext::text(p).into_owned();
    let mut at = dir;
    loop {
        match std::fs::metadata(at) {
            Ok(m) if m.is_dir() => {
                return access(at, libc::R_OK | libc::W_OK | libc::X_OK)
                    .map_err(|e| format!("cannot write in {} ({e})", shown(at)));
            }
            Ok(_) => return Err(format!("{} is not a directory", shown(at))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match at.parent() {
                Some(up) if !up.as_os_str().is_empty() => at = up,
                _ => return Ok(()),
            },
            Err(e) => return Err(format!("cannot look at {} ({e})", shown(at))),
        }
    }
}

/// Every directory and file under `dir` (to `depth` levels) can be read
/// and written (the spool's segments a run as another user left).
fn readable_tree(dir: &std::path::Path, depth: usize) -> Result<(), String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
    for e in entries.filter_map(Result::ok) {
        let p = e.path();
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        let mode = if is_dir { libc::R_OK | libc::W_OK | libc::X_OK } else { libc::R_OK | libc::W_OK };
        access(&p, mode).map_err(|err| format!("cannot read and write {} ({err})", crate::util::pathtext::text(&p)))?;
        if is_dir && depth > 1 {
            readable_tree(&p, depth - 1)?;
        }
    }
    Ok(())
}
