//! Reading a Promtail YAML document key by key, so that every key the
//! converter does not take is reported: a [`Map`] remembers which keys were
//! taken, and [`Map::finish`] lists the rest as untranslated.

use yaml_rust2::yaml::Hash;
use yaml_rust2::Yaml;

/// One Promtail key and what became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The Promtail key, as a path: `scrape_configs[0].pipeline_stages[2].match`.
    pub key: String,
    pub message: String,
}

/// What the conversion could not carry over, and what it changed on the way.
#[derive(Debug, Default)]
pub struct Report {
    /// Keys with no tailship equivalent: the output does without them.
    pub untranslated: Vec<Item>,
    /// Keys translated with a difference worth knowing.
    pub notes: Vec<Item>,
    /// Mistakes for which Promtail refuses the config (an unknown stage, a
    /// bad regex, a bad metric): the conversion fails naming them.
    pub refused: Vec<Item>,
    /// Metric names defined so far: (full name, type, key), one type per name.
    pub metric_types: Vec<(String, String, String)>,
}

impl Report {
    pub fn refuse(&mut self, key: impl Into<String>, message: impl Into<String>) {
        self.refused.push(Item { key: key.into(), message: message.into() });
    }

    pub fn skip(&mut self, key: impl Into<String>, message: impl Into<String>) {
        self.untranslated.push(Item { key: key.into(), message: message.into() });
    }

    pub fn note(&mut self, key: impl Into<String>, message: impl Into<String>) {
        self.notes.push(Item { key: key.into(), message: message.into() });
    }
}

/// A YAML mapping at `path`, read key by key.
pub struct Map<'a> {
    pub path: String,
    hash: Option<&'a Hash>,
    taken: Vec<String>,
}

impl<'a> Map<'a> {
    /// The mapping `y` at `path`; a null is an empty mapping, anything else
    /// that is not a mapping is reported and read as empty.
    pub fn new(path: impl Into<String>, y: &'a Yaml, r: &mut Report) -> Self {
        let path = path.into();
        let hash = match y {
            Yaml::Hash(h) => Some(h),
            Yaml::Null | Yaml::BadValue => None,
            _ => {
                r.skip(path.clone(), "expected a mapping");
                None
            }
        };
        Self { path, hash, taken: Vec::new() }
    }

    /// `path.key`.
    pub fn key(&self, k: &str) -> String {
        if self.path.is_empty() {
            k.to_string()
        } else {
            format!("{}.{k}", self.path)
        }
    }

    /// The value of `k` (not null), marking it taken.
    pub fn get(&mut self, k: &str) -> Option<&'a Yaml> {
        self.taken.push(k.to_string());
        let v = self.hash?.get(&Yaml::String(k.to_string()))?;
        (!v.is_null()).then_some(v)
    }

    /// The value of `k` as text (a string, number or boolean); anything
    /// else is reported.
    pub fn text(&mut self, k: &str, r: &mut Report) -> Option<String> {
        let v = self.get(k)?;
        let t = scalar(v);
        if t.is_none() {
            r.skip(self.key(k), "expected a single value");
        }
        t
    }

    /// The value of `k` as a list of texts (a single text is a list of one).
    pub fn texts(&mut self, k: &str, r: &mut Report) -> Vec<String> {
        match self.get(k) {
            None => Vec::new(),
            Some(Yaml::Array(a)) => a.iter().filter_map(scalar).collect(),
            Some(v) => match scalar(v) {
                Some(t) => vec![t],
                None => {
                    r.skip(self.key(k), "expected a list");
                    Vec::new()
                }
            },
        }
    }

    /// The value of `k` as a mapping of texts, in order (a null value is "").
    pub fn pairs(&mut self, k: &str, r: &mut Report) -> Vec<(String, String)> {
        let key = self.key(k);
        match self.get(k) {
            None => Vec::new(),
            Some(v) => pairs(&key, v, r),
        }
    }

    /// The keys of this mapping, in order.
    pub fn keys(&self) -> Vec<String> {
        self.hash.map(|h| h.keys().filter_map(scalar).collect()).unwrap_or_default()
    }

    /// Reports every key not taken, with `why`.
    pub fn finish(self, r: &mut Report, why: &str) {
        for k in self.keys() {
            if !self.taken.contains(&k) {
                r.skip(self.key(&k), why);
            }
        }
    }

    /// Takes `k` silently (a key with nothing to translate, such as Promtail's `targets`).
    pub fn ignore(&mut self, k: &str) {
        self.taken.push(k.to_string());
    }
}

/// A mapping of texts, in order; a null value is "".
pub fn pairs(key: &str, v: &Yaml, r: &mut Report) -> Vec<(String, String)> {
    let Yaml::Hash(h) = v else {
        if !v.is_null() {
            r.skip(key, "expected a mapping");
        }
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, v) in h {
        let Some(k) = scalar(k) else { continue };
        match v {
            Yaml::Null => out.push((k, String::new())),
            other => match scalar(other) {
                Some(t) => out.push((k, t)),
                None => r.skip(format!("{key}.{k}"), "expected a single value"),
            },
        }
    }
    out
}

/// A scalar as text.
pub fn scalar(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The items of a list at `key` (a null is empty; anything else is reported).
pub fn list<'a>(key: &str, y: Option<&'a Yaml>, r: &mut Report) -> &'a [Yaml] {
    match y {
        None => &[],
        Some(Yaml::Array(a)) => a,
        Some(_) => {
            r.skip(key, "expected a list");
            &[]
        }
    }
}

/// A YAML boolean or "true"/"false".
pub fn truthy(s: &str) -> bool {
    matches!(s, "true" | "True" | "TRUE" | "yes" | "on")
}
