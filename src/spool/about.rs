//! What a spool was written for: `source.json` in a source's spool
//! directory records the source's name, its config and the clients it goes
//! to. A spool whose source is no longer configured (removed by a reload,
//! or while the agent was down) is then still delivered as that source
//! would have delivered it: its labels, its stages, its clients.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::SourceConfig;

/// The file in a source's spool directory that describes it.
pub const ABOUT_FILE: &str = "source.json";

/// A spool's source, as recorded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct About {
    pub name: String,
    pub config: SourceConfig,
    /// The clients its lines go to (every one of them delivers a segment before it is deleted).
    pub clients: Vec<String>,
}

impl About {
    /// What is known of a spool without a `source.json` (written before
    /// tailship recorded one, or lost): its directory's name and nothing
    /// else; its lines go on with the labels they were received with.
    pub fn unknown(dir_name: &str) -> About {
        let config = SourceConfig {
            kind: crate::config::SourceType::LokiPush,
            name: Some(dir_name.to_string()),
            ..Default::default()
        };
        About { name: dir_name.to_string(), config, clients: Vec::new() }
    }

    pub(super) fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// Writes `json` as `dir`'s `source.json` (a crash leaves the old one or
/// the new one). Readable by its owner only: a source's config may name
/// secret files.
pub(super) fn write(dir: &Path, json: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    crate::positions::write_atomically_with(&dir.join(ABOUT_FILE), |f| {
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        f.write_all(json.as_bytes())
    })
}

/// `dir`'s `source.json`, if it is there and reads.
pub(super) fn read(dir: &Path) -> Option<About> {
    let path = dir.join(ABOUT_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot read a spool's source.json");
            return None;
        }
    };
    match serde_json::from_str(&text) {
        Ok(a) => Some(a),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "a spool's source.json does not parse");
            None
        }
    }
}
