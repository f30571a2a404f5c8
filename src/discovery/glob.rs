//! Discovery: which files a file source's `include`/`exclude` globs name.
//!
//! [`FileMatch`] is compiled once (by `plan`) from the globs. Each include
//! pattern is split into a base directory (the part without wildcards) and a
//! walk depth (one level per wildcard component, unbounded for `**`), so a scan
//! walks only what a pattern can match. Excludes with a `/` match the whole
//! path; others match the file name. A relative include (`./log/*.log`) is
//! taken from the working directory and names its files by their absolute
//! path, as Promtail's `filename` label does.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use globset::{Glob, GlobMatcher, GlobSet, GlobSetBuilder};

/// The compiled globs of one file source.
#[derive(Debug, Clone)]
pub struct FileMatch {
    patterns: Vec<Pattern>,
    exclude_full: GlobSet,
    exclude_names: GlobSet,
    /// Which of the files the globs name are read: a discovery source's
    /// targets and relabel rules (see `super::target`); unset: all.
    admit: Option<Admit>,
    /// Include globs that change while the source runs (a source's
    /// `targets_from`): they replace `patterns`; the excludes and `admit` stay.
    live: Option<Arc<LiveGlobs>>,
}

/// The current include globs of a source whose targets change, swapped whole.
#[derive(Debug)]
pub struct LiveGlobs(RwLock<Arc<FileMatch>>);

impl Default for LiveGlobs {
    fn default() -> Self {
        Self(RwLock::new(Arc::new(FileMatch::empty())))
    }
}

impl LiveGlobs {
    /// The include globs `include` from now on (they compiled before).
    pub fn set(&self, globs: FileMatch) {
        if let Ok(mut g) = self.0.write() {
            *g = Arc::new(globs);
        }
    }

    fn get(&self) -> Arc<FileMatch> {
        self.0.read().map(|g| g.clone()).unwrap_or_else(|_| Arc::new(FileMatch::empty()))
    }
}

/// A test of a path beyond the globs (see [`FileMatch::with_admit`]).
#[derive(Clone)]
pub struct Admit(pub Arc<dyn Fn(&Path) -> bool + Send + Sync>);

impl std::fmt::Debug for Admit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Admit(..)")
    }
}

/// Which glob of the source's config could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum GlobError {
    #[error("bad glob `{glob}`: {source}")]
    Include { index: usize, glob: String, source: globset::Error },
    #[error("bad glob `{glob}`: {source}")]
    Exclude { index: usize, glob: String, source: globset::Error },
}

/// `glob` from the working directory where it is relative (`./a/*.log`,
/// `a/*.log`); an absolute one as it is.
fn absolute(glob: &str) -> String {
    if glob.starts_with('/') || glob.is_empty() {
        return glob.to_string();
    }
    let rel = glob.trim_start_matches("./");
    match std::env::current_dir() {
        Ok(cwd) => format!("{}/{rel}", cwd.display().to_string().trim_end_matches('/')),
        Err(_) => glob.to_string(),
    }
}

impl FileMatch {
    /// Compiles the globs, reporting every bad one.
    pub fn compile(include: &[String], exclude: &[String]) -> Result<Self, Vec<GlobError>> {
        let mut errors = Vec::new();
        let mut patterns = Vec::new();
        for (index, g) in include.iter().enumerate() {
            match compile_pattern(&absolute(g)) {
                Ok(p) => patterns.push(p),
                Err(source) => errors.push(GlobError::Include { index, glob: g.clone(), source }),
            }
        }
        let mut full = GlobSetBuilder::new();
        let mut names = GlobSetBuilder::new();
        for (index, e) in exclude.iter().enumerate() {
            let glob = if e.contains('/') {
                globset::GlobBuilder::new(e).literal_separator(true).build().map(|g| full.add(g))
            } else {
                Glob::new(e).map(|g| names.add(g))
            };
            if let Err(source) = glob {
                errors.push(GlobError::Exclude { index, glob: e.clone(), source });
            }
        }
        let sets = full.build().and_then(|f| Ok((f, names.build()?)));
        match sets {
            Ok((exclude_full, exclude_names)) if errors.is_empty() => {
                Ok(Self { patterns, exclude_full, exclude_names, admit: None, live: None })
            }
            Ok(_) => Err(errors),
            Err(source) => {
                errors.push(GlobError::Exclude { index: 0, glob: exclude.join(", "), source });
                Err(errors)
            }
        }
    }

    /// Globs that name no file.
    pub fn empty() -> Self {
        let none = GlobSet::empty();
        Self { patterns: Vec::new(), exclude_full: none.clone(), exclude_names: none, admit: None, live: None }
    }

    /// These excludes (and admit test) over include globs that change: `live`'s.
    pub fn with_live(&self, live: Arc<LiveGlobs>) -> Self {
        Self { live: Some(live), ..self.clone() }
    }

    /// True when the include globs change while the source runs.
    pub fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// The directories to watch for new files: `(dir, recursive)`.
    pub fn watch_dirs(&self) -> Vec<(PathBuf, bool)> {
        if let Some(live) = &self.live {
            return live.get().watch_dirs();
        }
        let mut dirs: Vec<(PathBuf, bool)> = Vec::new();
        for p in &self.patterns {
            let dir =
                if p.literal { p.base.parent().map(Path::to_path_buf).unwrap_or_default() } else { p.base.clone() };
            let recursive = p.max_depth > 1;
            if !dirs.iter().any(|(d, _)| *d == dir) {
                dirs.push((dir, recursive));
            }
        }
        dirs
    }

    /// True when `path` is one the include globs name and no exclude does.
    pub fn matches(&self, path: &Path) -> bool {
        if let Some(live) = &self.live {
            return live.get().matches(path) && !self.excluded(path);
        }
        self.patterns.iter().any(|p| if p.literal { p.base == path } else { p.matcher.is_match(path) })
            && !self.excluded(path)
    }

    /// True when an exclude glob matches `path`.
    pub fn excluded(&self, path: &Path) -> bool {
        self.exclude_full.is_match(path) || path.file_name().is_some_and(|n| self.exclude_names.is_match(n))
    }

    /// These globs, reading only the files `admit` accepts.
    pub fn with_admit(&self, admit: Admit) -> Self {
        Self { admit: Some(admit), ..self.clone() }
    }

    /// True when the paths these globs name change only as files come and
    /// go: no live globs, no `admit` test (whose answers change with a
    /// discovery's targets).
    pub fn is_fixed(&self) -> bool {
        self.live.is_none() && self.admit.is_none()
    }

    /// Every regular file the globs name now (and `admit` accepts).
    pub fn candidates(&self) -> Vec<PathBuf> {
        self.listing().paths
    }

    /// [`FileMatch::candidates`], and how many entries were walked to find them.
    pub fn listing(&self) -> Listing {
        let mut out = match &self.live {
            Some(live) => {
                let l = live.get().named();
                Listing { paths: l.paths.into_iter().filter(|p| !self.excluded(p)).collect(), walked: l.walked }
            }
            None => self.named(),
        };
        if let Some(Admit(admit)) = &self.admit {
            out.paths.retain(|p| admit(p));
        }
        out
    }

    fn named(&self) -> Listing {
        let mut walked = 0;
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let single = self.patterns.len() == 1;
        for p in &self.patterns {
            if p.literal {
                if !self.excluded(&p.base) && seen.insert(p.base.clone()) {
                    out.push(p.base.clone());
                }
                continue;
            }
            let walker = walkdir::WalkDir::new(&p.base).follow_links(true).max_depth(p.max_depth).min_depth(1);
            for entry in walker.into_iter().filter_map(Result::ok) {
                walked += 1;
                let path = entry.path();
                if !entry.file_type().is_file() {
                    continue;
                }
                // One pattern names each path once: only several patterns need `seen`.
                if p.matcher.is_match(path) && !self.excluded(path) && (single || seen.insert(path.to_path_buf())) {
                    out.push(path.to_path_buf());
                }
            }
        }
        Listing { paths: out, walked }
    }
}

/// The files the globs name, found by walking their directories.
#[derive(Debug, Default)]
pub struct Listing {
    pub paths: Vec<PathBuf>,
    /// Directory entries walked (the files named among them, and the rest).
    pub walked: usize,
}

/// One include pattern: where to walk, how deep, and what to match.
#[derive(Debug, Clone)]
struct Pattern {
    base: PathBuf,
    max_depth: usize,
    matcher: GlobMatcher,
    literal: bool,
}

fn compile_pattern(p: &str) -> Result<Pattern, globset::Error> {
    let path = Path::new(p);
    let mut base = PathBuf::new();
    let mut rest = 0usize;
    let mut in_rest = false;
    let mut recursive = false;
    for c in path.components() {
        let s = c.as_os_str().to_string_lossy();
        if in_rest || s.contains(['*', '?', '[', '{']) {
            in_rest = true;
            rest += 1;
            recursive |= s.contains("**");
        } else {
            base.push(c);
        }
    }
    let matcher = globset::GlobBuilder::new(p).literal_separator(true).build()?.compile_matcher();
    Ok(Pattern { base, max_depth: if recursive { usize::MAX } else { rest }, matcher, literal: rest == 0 })
}

/// Every directory under `dir` (itself included), for recursive watches.
pub fn with_subdirs(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .follow_links(true)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_dir())
        .map(|e| e.into_path())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_include_names_files_by_their_absolute_path_as_promtail_does() {
        let cwd = std::env::current_dir().unwrap().display().to_string();
        assert_eq!(absolute("./log/*.log"), format!("{cwd}/log/*.log"));
        assert_eq!(absolute("log/*.log"), format!("{cwd}/log/*.log"));
        assert_eq!(absolute("/var/log/*.log"), "/var/log/*.log");
    }

    #[test]
    fn patterns_split_base_and_depth() {
        let p = compile_pattern("/var/log/app/*.log").unwrap();
        assert_eq!(p.base, PathBuf::from("/var/log/app"));
        assert_eq!(p.max_depth, 1);
        assert!(p.matcher.is_match("/var/log/app/x.log"));
        assert!(!p.matcher.is_match("/var/log/app/sub/x.log"));
        let p = compile_pattern("/var/log/**/*.log").unwrap();
        assert_eq!(p.base, PathBuf::from("/var/log"));
        assert_eq!(p.max_depth, usize::MAX);
        assert!(p.matcher.is_match("/var/log/a/b/x.log"));
        let p = compile_pattern("/tmp/one.log").unwrap();
        assert!(p.literal);
    }

    #[test]
    fn candidates_are_regular_files_the_globs_name_minus_excludes() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("sub")).unwrap();
        for f in ["a.log", "b.log", "c.txt", "old.log", "sub/d.log"] {
            std::fs::write(d.join(f), "x\n").unwrap();
        }
        let m = FileMatch::compile(&[format!("{}/*.log", d.display())], &["old.*".into()]).unwrap();
        let mut got: Vec<String> =
            m.candidates().iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        got.sort();
        assert_eq!(got, ["a.log", "b.log"]);
        let errs = FileMatch::compile(&["/x/[".into()], &["[".into()]).unwrap_err();
        assert_eq!(errs.len(), 2, "{errs:?}");
    }
}
