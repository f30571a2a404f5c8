//! A job's `file_sd_configs` as a file source's `targets_from`, and its
//! `decompression` block as the file sources' `decompression` table.
//!
//! The target files are read by tailship as Promtail reads them (JSON or
//! YAML groups, `__path__` and `__path_exclude__` naming the files, the
//! other labels through the job's relabel rules); several `file_sd_configs`
//! entries become one list of files, with the first `refresh_interval`.
//!
//! Promtail decodes a file whose name ends in `.gz`, `.z` or `.bz2` with the
//! block's `format`, after sleeping `initial_delay`; tailship reads it once
//! it has not changed for `initial_delay`, and takes the format from the
//! file's name when the block names none (Promtail reads nothing then).

use super::render::{Section, Val};
use super::yaml::{list, truthy, Map, Report};
use yaml_rust2::Yaml;

/// The formats Promtail's `decompression.format` takes.
const FORMATS: &[&str] = &["gz", "z", "bz2", "tar.gz"];

/// The `decompression` table of the job's file sources (`None`: none, or off).
pub fn decompression(key: &str, y: Option<&Yaml>, r: &mut Report) -> Option<Val> {
    let mut m = Map::new(key, y?, r);
    let enabled = m.text("enabled", r).is_some_and(|v| truthy(&v));
    let delay = m.text("initial_delay", r);
    let format = m.text("format", r);
    m.finish(r, "no tailship equivalent");
    if !enabled {
        r.note(
            key,
            "off: Promtail would tail compressed files as text; tailship still reads `.gz` files decompressed \
             (exclude them with `exclude = [\"*.gz\"]`)",
        );
        return None;
    }
    let mut t = vec![("enabled".to_string(), Val::Bool(true))];
    if let Some(d) = delay {
        match crate::util::parse_duration(&d) {
            Ok(_) => t.push(("initial_delay".into(), Val::str(d))),
            Err(e) => r.refuse(format!("{key}.initial_delay"), e),
        }
    }
    match format {
        Some(f) if FORMATS.contains(&f.as_str()) => t.push(("format".into(), Val::str(f))),
        Some(f) => r.refuse(format!("{key}.format"), format!("`{f}` is none of {}", FORMATS.join(", "))),
        None => r.note(
            format!("{key}.format"),
            "unset: Promtail decodes nothing; tailship takes each file's format from its name",
        ),
    }
    r.note(
        key,
        "a compressed file is read once it has not changed for initial_delay (Promtail sleeps that long once, \
         and may read a file still being compressed)",
    );
    Some(Val::Table(t))
}

/// A job's `file_sd_configs` as one file source reading what they name.
pub fn file_sd(key: &str, y: &Yaml, name: &str, multiline: Option<&Val>, r: &mut Report) -> Option<Section> {
    let mut files = Vec::new();
    let mut refresh = None;
    for (i, item) in list(key, Some(y), r).iter().enumerate() {
        let mut m = Map::new(format!("{key}[{i}]"), item, r);
        files.extend(m.texts("files", r));
        if let Some(d) = m.text("refresh_interval", r) {
            match crate::util::parse_duration(&d) {
                Ok(_) if refresh.is_none() => refresh = Some(d),
                Ok(_) => r.note(m.key("refresh_interval"), "one interval per source: the first entry's is kept"),
                Err(e) => r.refuse(m.key("refresh_interval"), e),
            }
        }
        m.finish(r, "no tailship equivalent");
    }
    if files.is_empty() {
        r.skip(key, "names no target file: Promtail reads nothing for it, and so does tailship");
        return None;
    }
    let mut t = vec![("files".to_string(), Val::strs(&files))];
    if let Some(d) = refresh {
        t.push(("refresh_interval".into(), Val::str(d)));
    }
    let mut s = Section { comments: vec![format!("Promtail job `{name}` ({key})")], entries: Vec::new() };
    s.set("type", Val::str("file"));
    s.set("name", Val::str(name));
    s.set("targets_from", Val::Table(t));
    s.set_noted("host_label", Val::Bool(false), "Promtail adds no host label (tailship does by default)");
    s.set_noted(
        "ignore_older",
        Val::str("0"),
        "Promtail reads every file however old (tailship skips a file untouched for 24h by default)",
    );
    if let Some(ml) = multiline {
        s.set("multiline", ml.clone());
    }
    Some(s)
}
