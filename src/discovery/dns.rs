//! Targets from DNS records (`sources[].dns`, Promtail's `dns_sd_configs`),
//! with Prometheus' `__meta_dns_*` labels.
//!
//! Each refresh reads `/etc/resolv.conf` (its resolvers, search domains and
//! `ndots`; nothing is cached between refreshes) and looks every name up:
//! an SRV record is a target at its target and port, with
//! `__meta_dns_srv_record_target` and `_srv_record_port`; an MX or NS record
//! at its host and `port`, with `__meta_dns_mx_record_target` or
//! `_ns_record_target`; an A or AAAA record at its address and `port`.
//! Every target has `__meta_dns_name`, the name looked up. A name with no
//! such record (or none at all) has no target; a lookup that fails keeps the
//! targets known until the next refresh that succeeds.

use hickory_resolver::proto::rr::{RData, RecordType};
use hickory_resolver::TokioResolver;

use super::{join_host_port, Labels, Lister};
use crate::config::DnsConfig;

const P: &str = "__meta_dns_";

super::lister::listed_kind!(DnsConfig = |c| Ok::<_, String>(Dns::new(c)), every |c: &DnsConfig| c.refresh_interval.get());

/// The names and record type of a `dns` section.
pub struct Dns {
    cfg: DnsConfig,
    kind: RecordType,
}

impl Dns {
    pub fn new(cfg: &DnsConfig) -> Self {
        let kind = match cfg.kind.to_ascii_uppercase().as_str() {
            "A" => RecordType::A,
            "AAAA" => RecordType::AAAA,
            "MX" => RecordType::MX,
            "NS" => RecordType::NS,
            _ => RecordType::SRV,
        };
        Self { cfg: cfg.clone(), kind }
    }
}

impl Lister for Dns {
    fn describe(&self) -> String {
        format!("DNS ({} records of {})", self.kind, self.cfg.names.join(", "))
    }

    async fn list(&mut self) -> Result<Vec<Labels>, String> {
        let mut builder = TokioResolver::builder_tokio().map_err(|e| format!("cannot read /etc/resolv.conf: {e}"))?;
        // Each refresh asks the resolvers: nothing is kept between refreshes.
        builder.options_mut().cache_size = 0;
        let resolver = builder.build();
        let mut out = Vec::new();
        for name in &self.cfg.names {
            let found = match resolver.lookup(name.as_str(), self.kind).await {
                Ok(found) => found,
                Err(e) if e.is_no_records_found() || e.is_nx_domain() => continue,
                Err(e) => return Err(format!("cannot look {name} up: {e}")),
            };
            for rdata in found.iter() {
                let mut l = Labels::from([(format!("{P}name"), name.clone())]);
                let address = match rdata {
                    RData::SRV(srv) => {
                        let target = srv.target().to_string();
                        l.insert(format!("{P}srv_record_target"), target.clone());
                        l.insert(format!("{P}srv_record_port"), srv.port().to_string());
                        join_host_port(target.trim_end_matches('.'), srv.port())
                    }
                    RData::MX(mx) => {
                        let target = mx.exchange().to_string();
                        l.insert(format!("{P}mx_record_target"), target.clone());
                        join_host_port(target.trim_end_matches('.'), self.cfg.port)
                    }
                    RData::NS(ns) => {
                        let target = ns.0.to_string();
                        l.insert(format!("{P}ns_record_target"), target.clone());
                        join_host_port(target.trim_end_matches('.'), self.cfg.port)
                    }
                    RData::A(a) => join_host_port(&a.0.to_string(), self.cfg.port),
                    RData::AAAA(a) => join_host_port(&a.0.to_string(), self.cfg.port),
                    // A CNAME on the way, or a record of another type.
                    _ => continue,
                };
                l.insert("__address__".into(), address);
                out.push(l);
            }
        }
        Ok(out)
    }
}
