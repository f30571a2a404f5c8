//! `__syslog_connection_hostname`: the names `/etc/hosts` gives a sender's
//! address, joined by `,` in the file's order, as Promtail's (Go's resolver
//! reads `/etc/hosts` first). The file is read once per address and
//! remembered (at most [`MAX_PEERS`] addresses); no DNS query is made on the
//! receive path (Promtail asks DNS for the addresses `/etc/hosts` lacks).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

/// Addresses remembered before the memory is cleared.
const MAX_PEERS: usize = 4096;

/// The names of senders' addresses, remembered.
#[derive(Default)]
pub struct PeerNames(Mutex<HashMap<IpAddr, Option<String>>>);

impl PeerNames {
    /// The names of `ip` (`None`: `/etc/hosts` names it not).
    pub fn of(&self, ip: IpAddr) -> Option<String> {
        let Ok(mut known) = self.0.lock() else { return None };
        if let Some(names) = known.get(&ip) {
            return names.clone();
        }
        if known.len() >= MAX_PEERS {
            known.clear();
        }
        let names = std::fs::read_to_string("/etc/hosts").ok().and_then(|t| names_in(&t, ip));
        known.insert(ip, names.clone());
        names
    }
}

/// The names `hosts` (an `/etc/hosts` text) gives `ip`, joined by `,`.
fn names_in(hosts: &str, ip: IpAddr) -> Option<String> {
    let mut names: Vec<&str> = Vec::new();
    for line in hosts.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut words = line.split_whitespace();
        let Some(addr) = words.next().and_then(|a| a.split('%').next()?.parse::<IpAddr>().ok()) else { continue };
        if addr == ip || canonical(addr) == canonical(ip) {
            for w in words {
                if !names.contains(&w) {
                    names.push(w);
                }
            }
        }
    }
    (!names.is_empty()).then(|| names.join(","))
}

/// An IPv4-mapped IPv6 address as its IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_hostname_is_every_hosts_name_of_the_address_as_promtail_gives_it() {
        let hosts = "127.0.0.1 localhost\n127.0.0.1 runsc\n::1 localhost ip6-localhost\n10.0.0.2 a b # c\n127.0.0.1 vm localhost\n";
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(names_in(hosts, lo).as_deref(), Some("localhost,runsc,vm"));
        assert_eq!(names_in(hosts, "::ffff:127.0.0.1".parse().unwrap()).as_deref(), Some("localhost,runsc,vm"));
        assert_eq!(names_in(hosts, "10.0.0.2".parse().unwrap()).as_deref(), Some("a,b"));
        assert_eq!(names_in(hosts, "10.0.0.3".parse().unwrap()), None);
    }
}
