//! Compiling a `geoip` stage: its database is opened here, once, so a
//! missing or unreadable file is refused by `check` naming the key.

use crate::config::GeoipStage;
use crate::pipeline::{GeoDb, GeoIp};
use crate::plan::names::{Errors, Names};

/// The labels a `geoip` stage may set, by database type (Promtail's names).
const CITY: [&str; 10] = [
    "geoip_city_name",
    "geoip_country_name",
    "geoip_continent_name",
    "geoip_continent_code",
    "geoip_location_latitude",
    "geoip_location_longitude",
    "geoip_postal_code",
    "geoip_timezone",
    "geoip_subdivision_name",
    "geoip_subdivision_code",
];
const ASN: [&str; 2] = ["geoip_autonomous_system_number", "geoip_autonomous_system_organization"];

pub(super) fn compile(g: &GeoipStage, names: &mut Names, e: &mut Errors<'_>) -> Option<GeoIp> {
    let kind = match g.db_type.as_str() {
        "city" => GeoDb::City,
        "asn" => GeoDb::Asn,
        "country" => GeoDb::Country,
        "" => {
            e(".geoip.db_type", "missing: city, asn or country".into());
            return None;
        }
        other => {
            e(".geoip.db_type", format!("`{other}`: use city, asn or country"));
            return None;
        }
    };
    let source = match g.source.as_deref() {
        None | Some("") => {
            e(".geoip.source", "missing: the extracted value holding the IP address".into());
            return None;
        }
        Some(s) if !names.has(s) => {
            e(".geoip.source", format!("`{s}` is not extracted by an earlier stage"));
            return None;
        }
        Some(s) => s.to_string(),
    };
    if g.db.is_empty() {
        e(".geoip.db", "missing: the path of a MaxMind database (.mmdb)".into());
        return None;
    }
    let stage = match GeoIp::open(&g.db, kind, source) {
        Ok(s) => s,
        Err(m) => {
            e(".geoip.db", m);
            return None;
        }
    };
    let set: &[&str] = match kind {
        GeoDb::City => &CITY,
        GeoDb::Country => &CITY[1..4],
        GeoDb::Asn => &ASN,
    };
    names.labels.extend(set.iter().map(|s| s.to_string()));
    Some(stage)
}
