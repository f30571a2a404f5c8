//! The discoveries a file source takes its targets from (`consul`,
//! `dockerswarm`, the cloud and service discoveries): which are set, and
//! their check.

use super::{SourceConfig, SourceType};

impl SourceConfig {
    /// The discoveries (other than `kubernetes`) whose targets name this
    /// file source's files, by their key.
    pub fn discoveries(&self) -> Vec<&'static str> {
        [
            ("consul", self.consul.is_some()),
            ("dockerswarm", self.dockerswarm.is_some()),
            ("marathon", self.marathon.is_some()),
            ("triton", self.triton.is_some()),
            ("digitalocean", self.digitalocean.is_some()),
            ("dns", self.dns.is_some()),
            ("serverset", self.serverset.is_some()),
            ("nerve", self.nerve.is_some()),
            ("gce", self.gce.is_some()),
            ("openstack", self.openstack.is_some()),
            ("ec2", self.ec2.is_some()),
            ("azure", self.azure.is_some()),
        ]
        .into_iter()
        .filter(|(_, set)| *set)
        .map(|(k, _)| k)
        .collect()
    }
}

/// Checks a file source's discovery tables (`key` is the source's): each
/// one's keys, one discovery per source, and no `include` or `targets_from` beside it.
pub(super) fn validate_discoveries(key: &str, s: &SourceConfig, e: &mut dyn FnMut(&str, String)) {
    if let Some(c) = &s.consul {
        super::consul::validate_consul(key, c, e);
    }
    if let Some(d) = &s.dockerswarm {
        super::discovery::validate_dockerswarm(key, d, e);
    }
    if let Some(m) = &s.marathon {
        super::sd::validate_marathon(&format!("{key}.marathon"), m, e);
    }
    if let Some(t) = &s.triton {
        super::sd::validate_triton(&format!("{key}.triton"), t, e);
    }
    if let Some(d) = &s.digitalocean {
        super::sd::validate_digitalocean(&format!("{key}.digitalocean"), d, e);
    }
    if let Some(d) = &s.dns {
        super::sd::validate_dns(&format!("{key}.dns"), d, e);
    }
    if let Some(g) = &s.gce {
        super::clouds::validate_gce(&format!("{key}.gce"), g, e);
    }
    if let Some(o) = &s.openstack {
        super::clouds::validate_openstack(&format!("{key}.openstack"), o, e);
    }
    if let Some(c) = &s.ec2 {
        super::clouds::validate_ec2(&format!("{key}.ec2"), c, e);
    }
    if let Some(a) = &s.azure {
        super::clouds::validate_azure(&format!("{key}.azure"), a, e);
    }
    for (k, z) in [("serverset", &s.serverset), ("nerve", &s.nerve)] {
        if let Some(z) = z {
            super::sd::validate_zookeeper(&format!("{key}.{k}"), z, e);
        }
    }
    let kinds: Vec<&str> = s.discoveries();
    if let Some(k) = kinds.first() {
        if s.kind != SourceType::File {
            e(&format!("{key}.{k}"), format!("`{k}` is for file sources (type = \"file\")"));
        }
        if !s.include.is_empty() || s.targets_from.is_some() {
            e(&format!("{key}.{k}"), format!("a source with `{k}` reads the files its targets' `__path__` name (set by `relabel`); leave `include` and `targets_from` out"));
        }
        if let Some(other) = kinds.get(1) {
            e(
                &format!("{key}.{other}"),
                format!("a source takes its targets from one discovery (also set: {k}); give each its own source"),
            );
        }
    }
}
