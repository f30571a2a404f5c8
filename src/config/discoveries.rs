//! The discoveries a file source takes its targets from, by type (as
//! Prometheus' `discovery/` registers its SD configs): [`discoveries!`] is
//! the one list, a line per discovery (its table's key, its [`Sd`] variant,
//! its config struct). The list writes the source's table keys (see
//! `super::source`), the [`Sd`] enum, and `discovery::start`'s one match;
//! each config struct checks itself ([`SdTable`]) beside its definition.
//!
//! The tables stay plain fields of the source's table (no
//! `#[serde(flatten)]`), so the TOML is unchanged and an unknown key inside
//! one is still reported, with its file and key, by the loader's
//! `serde_ignored` pass.

use super::{SourceConfig, SourceType};

/// Calls the macro `$then` with `[$($args)*]` and then every discovery, one
/// `key: Variant(ConfigType),` each, in the order `discovery::start` tries
/// them when a source sets several (which only `kubernetes` beside another
/// may; the checks refuse the rest).
macro_rules! discoveries {
    ($then:ident [$($args:tt)*]) => {
        $then! { [$($args)*]
            /// A `kubernetes` source's pod metadata from the API server (unset:
            /// path labels only); a file source's targets of any role (Promtail's
            /// `kubernetes_sd_configs`).
            kubernetes: Kubernetes($crate::config::KubernetesConfig),
            /// A file source's files named by target files (Promtail's `file_sd_configs`).
            targets_from: FileSd($crate::config::FileSdConfig),
            /// A file source's targets from the Consul catalog (Promtail's
            /// `consul_sd_configs`): files named by the `__path__` the relabel rules give them.
            consul: Consul($crate::config::ConsulConfig),
            /// A file source's targets from a Docker Swarm manager (Promtail's
            /// `dockerswarm_sd_configs`): files named by the `__path__` the relabel rules give them.
            dockerswarm: DockerSwarm($crate::config::SwarmConfig),
            /// A file source's targets from Marathon (Promtail's `marathon_sd_configs`).
            marathon: Marathon($crate::config::MarathonConfig),
            /// A `docker` source's Engine and container filters (unset: the defaults).
            docker: Docker($crate::config::DockerConfig),
            /// A file source's targets from Triton (Promtail's `triton_sd_configs`).
            triton: Triton($crate::config::TritonConfig),
            /// A file source's targets from DigitalOcean (Promtail's `digitalocean_sd_configs`).
            digitalocean: DigitalOcean($crate::config::DigitalOceanConfig),
            /// A file source's targets from DNS records (Promtail's `dns_sd_configs`).
            dns: Dns($crate::config::DnsConfig),
            /// A file source's targets from ZooKeeper serverset members (Promtail's `serverset_sd_configs`).
            serverset: Serverset($crate::config::ServersetConfig),
            /// A file source's targets from ZooKeeper Nerve members (Promtail's `nerve_sd_configs`).
            nerve: Nerve($crate::config::NerveConfig),
            /// A file source's targets from Google Compute Engine (Promtail's `gce_sd_configs`).
            gce: Gce($crate::config::GceConfig),
            /// A file source's targets from OpenStack (Promtail's `openstack_sd_configs`).
            openstack: Openstack($crate::config::OpenstackConfig),
            /// A file source's targets from Amazon EC2 (Promtail's `ec2_sd_configs`).
            ec2: Ec2($crate::config::Ec2Config),
            /// A file source's targets from Azure (Promtail's `azure_sd_configs`).
            azure: Azure($crate::config::AzureConfig),
        }
    };
}
pub(crate) use discoveries;

/// A discovery's table checks itself (`kk` is the table's key,
/// `sources[N].consul`; `source` the table it is in).
pub trait SdTable {
    fn validate(&self, kk: &str, source: &SourceConfig, e: &mut dyn FnMut(&str, String));
}

/// [`SdTable`] for config structs checked by a `fn(kk, &Self, e)`.
macro_rules! checked_by {
    ($($ty:ty => $f:path),* $(,)?) => {$(
        impl $crate::config::SdTable for $ty {
            fn validate(&self, kk: &str, _: &$crate::config::SourceConfig, e: &mut dyn FnMut(&str, String)) {
                $f(kk, self, e)
            }
        }
    )*};
}
pub(crate) use checked_by;

/// Writes [`Sd`] from the list.
macro_rules! sd_enum {
    ([] $($(#[$doc:meta])* $key:ident: $variant:ident($ty:ty),)*) => {
        /// A discovery a source names, by type: its table.
        #[derive(Debug, Clone, Copy)]
        pub enum Sd<'a> {
            $($(#[$doc])* $variant(&'a $ty),)*
        }

        impl Sd<'_> {
            /// The key of its table in a source (`consul`).
            pub fn key(&self) -> &'static str {
                match self {
                    $(Sd::$variant(_) => stringify!($key),)*
                }
            }

            /// Checks its table; `key` is the source's.
            pub fn validate(&self, key: &str, source: &SourceConfig, e: &mut dyn FnMut(&str, String)) {
                let kk = format!("{key}.{}", self.key());
                match self {
                    $(Sd::$variant(c) => SdTable::validate(*c, &kk, source, e),)*
                }
            }
        }

        impl SourceConfig {
            /// The discoveries this source names, in the list's order.
            pub fn discoveries(&self) -> Vec<Sd<'_>> {
                let mut set = Vec::new();
                $(if let Some(c) = &self.$key {
                    set.push(Sd::$variant(c));
                })*
                set
            }
        }
    };
}
discoveries!(sd_enum[]);

impl Sd<'_> {
    /// Whether its targets name files by a `__path__` only, so that no
    /// other discovery, `include` or `targets_from` may stand beside it
    /// (the Kubernetes discovery and target files check their own company;
    /// `docker` is a docker source's).
    fn alone(&self) -> bool {
        !matches!(self, Sd::Kubernetes(_) | Sd::FileSd(_) | Sd::Docker(_))
    }
}

/// Checks a source's discovery tables (`key` is the source's): each one's
/// keys, one discovery per source, and no `include` or `targets_from` beside it.
pub(super) fn validate_discoveries(key: &str, s: &SourceConfig, e: &mut dyn FnMut(&str, String)) {
    let set = s.discoveries();
    for sd in &set {
        sd.validate(key, s, e);
    }
    let kinds: Vec<&str> = set.iter().filter(|sd| sd.alone()).map(Sd::key).collect();
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
