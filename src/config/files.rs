//! The config of where a file source's files come from beyond its globs
//! (`sources[].targets_from`, Promtail's `file_sd_configs`) and of what it
//! does with compressed files (`sources[].decompression`, Promtail's
//! `decompression` block): plain data.

use serde::{Deserialize, Serialize};

use crate::util::HumanDuration;

/// Target files (Prometheus file discovery): JSON or YAML lists of
/// `{ targets = [...], labels = { __path__ = "GLOB", ... } }` naming the
/// source's files, read again when they change and every `refresh_interval`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct FileSdConfig {
    /// Paths (globs allowed in the last component) of the target files.
    pub files: Vec<String>,
    /// How often every target file is read again in full (changes are seen within a second).
    pub refresh_interval: HumanDuration,
}

/// Its files are checked by the plan, which compiles their globs.
impl super::SdTable for FileSdConfig {
    fn validate(&self, _: &str, _: &super::SourceConfig, _: &mut dyn FnMut(&str, String)) {}
}

impl Default for FileSdConfig {
    fn default() -> Self {
        Self { files: Vec::new(), refresh_interval: HumanDuration::secs(300) }
    }
}

/// How a file source reads compressed files. Without it, `.gz` files are
/// read once, whole, as soon as they are found.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct DecompressionConfig {
    /// Off: `.gz` files are still read (gzip), the other formats are not decoded.
    pub enabled: bool,
    /// A compressed file is read once it has not changed for this long, so a
    /// file still being written by the compressor is never read half-written.
    pub initial_delay: HumanDuration,
    /// The format of every compressed file (`.gz`, `.z`, `.bz2`) of the
    /// source, as Promtail's `format`; unset: taken from each file's name.
    pub format: Option<CompressionFormat>,
}

impl Default for DecompressionConfig {
    fn default() -> Self {
        Self { enabled: true, initial_delay: HumanDuration::secs(0), format: None }
    }
}

/// A format of compressed log files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum CompressionFormat {
    /// gzip (several members are read one after the other).
    #[serde(rename = "gz")]
    Gzip,
    /// zlib (`.z`).
    #[serde(rename = "z")]
    Zlib,
    /// bzip2.
    #[serde(rename = "bz2")]
    Bzip2,
    /// A gzip-compressed tar archive: the lines of each of its files in order.
    #[serde(rename = "tar.gz")]
    TarGz,
}

impl CompressionFormat {
    /// The format a file's name says (`x.log.gz`, `x.tar.gz`, `x.tgz`, `x.z`, `x.bz2`).
    pub fn of_name(name: &str) -> Option<Self> {
        if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
            Some(Self::TarGz)
        } else if name.ends_with(".gz") {
            Some(Self::Gzip)
        } else if name.ends_with(".z") || name.ends_with(".Z") {
            Some(Self::Zlib)
        } else if name.ends_with(".bz2") {
            Some(Self::Bzip2)
        } else {
            None
        }
    }
}

impl DecompressionConfig {
    /// How the file named `name` is decoded (`None`: it is read as text).
    /// `config`: the source's block; without it (or disabled) only `.gz` is decoded.
    pub fn format_of(config: Option<&Self>, name: &str) -> Option<CompressionFormat> {
        let by_name = CompressionFormat::of_name(name)?;
        match config {
            Some(c) if c.enabled => Some(c.format.unwrap_or(by_name)),
            _ => {
                matches!(by_name, CompressionFormat::Gzip | CompressionFormat::TarGz).then_some(CompressionFormat::Gzip)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_name_and_by_config() {
        let on = DecompressionConfig::default();
        assert_eq!(DecompressionConfig::format_of(Some(&on), "/l/a.log.bz2"), Some(CompressionFormat::Bzip2));
        assert_eq!(DecompressionConfig::format_of(Some(&on), "/l/a.tar.gz"), Some(CompressionFormat::TarGz));
        assert_eq!(DecompressionConfig::format_of(Some(&on), "/l/a.log.z"), Some(CompressionFormat::Zlib));
        assert_eq!(DecompressionConfig::format_of(Some(&on), "/l/a.log"), None);
        assert_eq!(DecompressionConfig::format_of(None, "/l/a.log.bz2"), None);
        assert_eq!(DecompressionConfig::format_of(None, "/l/a.log.gz"), Some(CompressionFormat::Gzip));
        let fixed = DecompressionConfig { format: Some(CompressionFormat::Zlib), ..on };
        assert_eq!(DecompressionConfig::format_of(Some(&fixed), "/l/a.gz"), Some(CompressionFormat::Zlib));
    }
}
