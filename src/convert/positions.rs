//! `tailship convert promtail --positions FILE`: Promtail's positions file
//! as tailship's, so a cutover re-sends nothing and skips nothing.
//!
//! Promtail keeps `positions: {PATH: "OFFSET", cursor-journal-JOB: CURSOR}`.
//! Each path still there, at least as long as its offset, is carried over
//! with the fingerprint of its first bytes read now (tailship knows a file by
//! them); the rest are listed: a file gone, or shorter than its offset
//! (rotated or truncated since), starts as its source's `start_at` says.
//! A journal cursor goes to the journal source named after its job.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use yaml_rust2::Yaml;

use crate::positions::{Fingerprint, Imported, FINGERPRINT_BYTES};

#[derive(Debug, thiserror::Error)]
pub enum PositionsImportError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path} is not a Promtail positions file: {why}")]
    NotPositions { path: PathBuf, why: String },
    #[error("{0} exists: tailship does not overwrite a positions file (remove it, or choose --positions-out)")]
    Exists(PathBuf),
    #[error(transparent)]
    Write(#[from] crate::positions::PositionsError),
}

/// What was carried over, and what was not (path or key, why).
#[derive(Debug, Default)]
pub struct ImportReport {
    pub files: usize,
    pub journals: usize,
    pub skipped: Vec<(String, String)>,
    /// Who may read the file written, when the agent's user may not be the one that ran `convert`.
    pub owner: Option<String>,
}

/// Reads Promtail's positions file `from` and writes tailship's to `to`.
pub fn import(from: &Path, to: &Path) -> Result<ImportReport, PositionsImportError> {
    let text = std::fs::read_to_string(from)
        .map_err(|source| PositionsImportError::Read { path: from.to_path_buf(), source })?;
    let not = |why: String| PositionsImportError::NotPositions { path: from.to_path_buf(), why };
    let docs = crate::util::yaml::load(&text).map_err(|e| not(e.to_string()))?;
    let entries = match docs.first() {
        None => Vec::new(),
        Some(doc) => match &doc["positions"] {
            Yaml::Hash(h) => h.iter().collect(),
            Yaml::Null | Yaml::BadValue => Vec::new(),
            _ => return Err(not("`positions` is not a mapping of path to offset".into())),
        },
    };
    if to.exists() {
        return Err(PositionsImportError::Exists(to.to_path_buf()));
    }
    let mut report = ImportReport::default();
    let mut files = Vec::new();
    let mut journals = Vec::new();
    for (k, v) in entries {
        let key = match k {
            Yaml::String(s) => s.clone(),
            other => format!("{other:?}"),
        };
        let value = match v {
            Yaml::String(s) => s.clone(),
            Yaml::Integer(n) => n.to_string(),
            _ => {
                report.skipped.push((key, "the value is not an offset or a cursor".into()));
                continue;
            }
        };
        let journal = key.strip_prefix("cursor-").unwrap_or(&key).strip_prefix("journal-");
        if let Some(job) = journal {
            journals.push((job.to_string(), value));
            continue;
        }
        match carry_over(Path::new(&key), &value) {
            Ok(f) => files.push(f),
            Err(why) => report.skipped.push((key, why)),
        }
    }
    crate::positions::write_imported(to, &files, &journals)?;
    report.files = files.len();
    report.journals = journals.len();
    report.owner = give_to_directory_owner(to);
    Ok(report)
}

/// `convert` runs as root, the agent as its own user (the packaged service:
/// tailship): a positions file root wrote (mode 0600) could not be read by
/// it, and the agent started without Promtail's offsets (issue 50). Written
/// by root into a directory another user owns (/var/lib/tailship once the
/// service ran), the file is given to that user; into a directory root
/// owns, it stays root's (systemd gives /var/lib/tailship and all in it to
/// the service's user at its start when root owns the directory). Says what
/// was done, or what is left to do.
fn give_to_directory_owner(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let meta = std::fs::metadata(dir).ok()?;
    if meta.uid() == 0 {
        return Some(format!(
            "written by root (mode 0600) in {}, which root owns: the packaged service (systemd's StateDirectory) \
             gives /var/lib/tailship and what is in it to user tailship when it starts; an agent run otherwise as \
             another user needs `chown -R USER: {}` first",
            dir.display(),
            dir.display()
        ));
    }
    match std::os::unix::fs::chown(path, Some(meta.uid()), Some(meta.gid())) {
        Ok(()) => Some(format!(
            "owned by uid {} gid {}, like {}, so the agent running as that user reads it",
            meta.uid(),
            meta.gid(),
            dir.display()
        )),
        Err(e) => Some(format!(
            "cannot give it to the owner of {} (uid {}): {e}; the agent's user must be able to read it",
            dir.display(),
            meta.uid()
        )),
    }
}

/// The file at `path` delivered to `offset`, known by its first bytes now.
fn carry_over(path: &Path, offset: &str) -> Result<Imported, String> {
    use std::io::Read;
    let offset: u64 = offset.trim().parse().map_err(|_| format!("`{offset}` is not an offset"))?;
    let mut f = std::fs::File::open(path).map_err(|e| format!("cannot open it ({e}): not carried over"))?;
    let meta = f.metadata().map_err(|e| e.to_string())?;
    if meta.len() < offset {
        return Err(format!(
            "{} bytes now, shorter than its offset {offset}: rotated or truncated since; read as its source's start_at says",
            meta.len()
        ));
    }
    let mut prefix = Vec::with_capacity(FINGERPRINT_BYTES);
    f.by_ref().take(FINGERPRINT_BYTES as u64).read_to_end(&mut prefix).map_err(|e| e.to_string())?;
    if prefix.is_empty() {
        return Err("empty: nothing to carry over".into());
    }
    Ok(Imported {
        path: path.to_path_buf(),
        fp: Fingerprint::of(&prefix),
        dev: meta.dev(),
        ino: meta.ino(),
        size: meta.len(),
        offset,
    })
}
