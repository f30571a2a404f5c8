//! A job's `decompression` block as a file source's `decompression` table.
//!
//! Promtail decodes a file whose name ends in `.gz`, `.z` or `.bz2` with the
//! block's `format`, after sleeping `initial_delay`; tailship reads it once
//! it has not changed for `initial_delay`, and takes the format from the
//! file's name when the block names none (Promtail reads nothing then).

use super::render::Val;
use super::yaml::{truthy, Map, Report};
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
