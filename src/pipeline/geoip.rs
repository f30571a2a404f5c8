//! A `geoip` stage (Promtail's): the IP address in an extracted value is
//! looked up in a MaxMind database (the `maxminddb` crate) and what is found
//! becomes labels of the line, under Promtail's names (`geoip_city_name`,
//! `geoip_autonomous_system_number`, ...).

use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;

use maxminddb::{geoip2, Reader};

use super::line::Line;

/// What kind of database a `geoip` stage reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeoDb {
    City,
    Asn,
    Country,
}

/// A compiled `geoip` stage.
#[derive(Debug, Clone)]
pub struct GeoIp {
    pub reader: Arc<Reader<Vec<u8>>>,
    pub kind: GeoDb,
    /// The extracted value holding the address.
    pub source: String,
}

impl GeoIp {
    /// Opens the database at `path` (read into memory once).
    pub fn open(path: &str, kind: GeoDb, source: String) -> Result<Self, String> {
        let reader =
            Reader::open_readfile(path).map_err(|e| format!("cannot read the MaxMind database `{path}`: {e}"))?;
        Ok(Self { reader: Arc::new(reader), kind, source })
    }

    /// Looks the line's address up and sets the labels found; a missing or
    /// malformed address, or one the database does not hold, changes nothing.
    pub fn apply<'s>(&self, line: &mut Line<'s, '_>) {
        let Some(ip) = line.extracted.get(&self.source).and_then(|v| v.trim().parse::<IpAddr>().ok()) else {
            return;
        };
        let Ok(found) = self.reader.lookup(ip) else { return };
        let mut set: Vec<(&'static str, String)> = Vec::new();
        let mut put = |name: &'static str, v: Option<&str>| {
            if let Some(v) = v.filter(|v| !v.is_empty()) {
                set.push((name, v.to_string()));
            }
        };
        match self.kind {
            GeoDb::City => {
                let Ok(Some(c)) = found.decode::<geoip2::City>() else { return };
                put("geoip_city_name", c.city.names.english);
                put("geoip_country_name", c.country.names.english);
                put("geoip_continent_name", c.continent.names.english);
                put("geoip_continent_code", c.continent.code);
                put("geoip_postal_code", c.postal.code);
                put("geoip_timezone", c.location.time_zone);
                if let (Some(lat), Some(lon)) = (c.location.latitude, c.location.longitude) {
                    put("geoip_location_latitude", Some(&lat.to_string()));
                    put("geoip_location_longitude", Some(&lon.to_string()));
                }
                // The most specific subdivision, as Promtail takes it.
                if let Some(sub) = c.subdivisions.last() {
                    put("geoip_subdivision_name", sub.names.english);
                    put("geoip_subdivision_code", sub.iso_code);
                }
            }
            GeoDb::Country => {
                let Ok(Some(c)) = found.decode::<geoip2::Country>() else { return };
                put("geoip_country_name", c.country.names.english);
                put("geoip_continent_name", c.continent.names.english);
                put("geoip_continent_code", c.continent.code);
            }
            GeoDb::Asn => {
                let Ok(Some(a)) = found.decode::<geoip2::Asn>() else { return };
                let number = a.autonomous_system_number.filter(|n| *n != 0).map(|n| n.to_string());
                put("geoip_autonomous_system_number", number.as_deref());
                put("geoip_autonomous_system_organization", a.autonomous_system_organization);
            }
        }
        for (name, v) in set {
            line.set_label(Cow::Borrowed(name), Some(v));
        }
    }
}
