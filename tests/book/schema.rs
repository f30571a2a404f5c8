//! The config schema's keys, read from the serde structs themselves, so the
//! book's reference is checked against what `tailship check` accepts and
//! not against a list kept by hand.
//!
//! A deserializer that never reads text: asked for a struct, it answers
//! every field the struct declares (serde passes their names, aliases
//! included), each with a value of the shape the field asks for, and notes
//! the path (`sources[].kafka.brokers`). Lists give one element (`[]`),
//! tables one entry (`.<name>`), options `Some`. A struct met a second time
//! (`TlsConfig` under `client.tls`, then `sources[].kubernetes.tls`) is
//! walked quietly and its path noted as sharing the first one's keys.
//!
//! Types that look at the value before choosing (`deserialize_any`:
//! durations, sizes, `drop`, `selector`...) get a number first, then a
//! string, a list, a table or a bool, the whole walk starting again until
//! every one of them takes a shape. A struct reached only through such a
//! type hides its field names (serde passes none there); each such place is
//! reported in [`Schema::opaque`], so a test can walk its type as a root of
//! its own and fail when a new one appears.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor};

/// What a walk found.
#[derive(Debug, Default)]
pub struct Schema {
    /// Every key path, with the values of an enum key (empty otherwise).
    pub keys: BTreeMap<String, Vec<&'static str>>,
    /// Key paths whose struct was walked first at another path: path -> that path.
    pub shared: BTreeMap<String, String>,
    /// Paths where a struct sits behind `deserialize_any` (its keys unseen).
    pub opaque: BTreeSet<String>,
    /// Key path -> the name of the struct it is a field of.
    pub owner: BTreeMap<String, &'static str>,
}

#[derive(Debug)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
    fn duplicate_field(field: &'static str) -> Self {
        Error(format!("{DUPLICATE}{field}"))
    }
}

const DUPLICATE: &str = "duplicate field ";
/// The shapes tried, in turn, where a type deserializes "any".
const SHAPES: usize = 5;

#[derive(Default)]
struct State {
    schema: Schema,
    /// Struct identity (name and fields) -> the path it was first walked at.
    first: HashMap<String, String>,
    /// Identities of the structs being walked (a struct inside itself is quiet).
    stack: Vec<String>,
    /// Path -> index of the shape `deserialize_any` gives there.
    choice: HashMap<String, usize>,
    /// Paths where `deserialize_any` was asked, in order.
    any_log: Vec<String>,
    /// (struct identity, field) left out: an alias of a field fed before it.
    skip: BTreeSet<(String, &'static str)>,
    /// Set when a failed walk changed a choice or a skip: walk again.
    progress: bool,
}

type St<'a> = &'a RefCell<State>;

/// Walks `T` with its keys under `prefix` ("" for the config itself).
pub fn walk<T: DeserializeOwned>(prefix: &str) -> Result<Schema, String> {
    let st = RefCell::new(State::default());
    let run = |st: St| {
        {
            let mut s = st.borrow_mut();
            s.schema.keys.clear();
            s.schema.shared.clear();
            s.schema.owner.clear();
            s.first.clear();
            s.stack.clear();
            s.any_log.clear();
            s.progress = false;
        }
        T::deserialize(Probe { path: prefix.to_string(), quiet: false, st }).map(drop)
    };
    let mut rounds = 0;
    loop {
        match run(&st) {
            Ok(()) => break,
            Err(_) if st.borrow().progress && rounds < 100_000 => rounds += 1,
            Err(e) => return Err(format!("the schema walk failed after {rounds} rounds: {e}")),
        }
    }
    let (keys, shared, owner, baseline, any_paths) = {
        let s = st.borrow();
        (s.schema.keys.clone(), s.schema.shared.clone(), s.schema.owner.clone(), s.choice.clone(), s.any_log.clone())
    };
    // Every other shape at each "any" place, to find structs hiding there.
    for p in any_paths.iter().collect::<BTreeSet<_>>() {
        let base = baseline.get(p).copied().unwrap_or(0);
        for shape in (0..SHAPES).filter(|s| *s != base) {
            st.borrow_mut().choice = baseline.clone();
            st.borrow_mut().choice.insert(p.clone(), shape);
            let _ = run(&st);
        }
    }
    let opaque = std::mem::take(&mut st.borrow_mut().schema.opaque);
    Ok(canonical(Schema { keys, shared, opaque, owner }))
}

/// A shared struct's keys are listed under its shortest path (`client.tls`
/// rather than `client.oauth2.tls`, where it was met first; on a tie the
/// first by name), and a list of structs is shared by its key (`clients`).
fn canonical(mut s: Schema) -> Schema {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (path, first) in &s.shared {
        groups.entry(first.clone()).or_insert_with(|| vec![first.clone()]).push(path.clone());
    }
    for (first, paths) in groups {
        let depth = |p: &String| p.matches('.').count() + p.matches("[]").count();
        let Some(best) = paths.iter().min_by_key(|p| (depth(p), (*p).clone())).cloned() else { continue };
        if best == first {
            continue;
        }
        let moved = |p: &str| match p.strip_prefix(first.as_str()) {
            Some(rest) if rest.starts_with('.') || rest.starts_with("[]") => format!("{best}{rest}"),
            _ => p.to_string(),
        };
        s.keys = std::mem::take(&mut s.keys).into_iter().map(|(k, v)| (moved(&k), v)).collect();
        s.owner = std::mem::take(&mut s.owner).into_iter().map(|(k, v)| (moved(&k), v)).collect();
        s.keys.entry(first.clone()).or_default();
        s.shared = std::mem::take(&mut s.shared)
            .into_iter()
            .map(|(k, v)| (moved(&k), if v == first { best.clone() } else { moved(&v) }))
            .filter(|(k, _)| *k != best)
            .collect();
        s.shared.insert(first.clone(), best.clone());
    }
    s.shared = std::mem::take(&mut s.shared)
        .into_iter()
        .map(|(k, v)| (k.trim_end_matches("[]").to_string(), v.trim_end_matches("[]").to_string()))
        .collect();
    s
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Calls `f` (a child's deserialization); when it fails without a change
/// made yet, the last "any" place it asked at takes its next shape.
fn guarded<T>(st: St, f: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    let mark = st.borrow().any_log.len();
    let r = f();
    if r.is_err() {
        let mut s = st.borrow_mut();
        if !s.progress {
            if let Some(p) = s.any_log[mark..].last().cloned() {
                let c = s.choice.entry(p).or_insert(0);
                if *c + 1 < SHAPES {
                    *c += 1;
                    s.progress = true;
                }
            }
        }
    }
    r
}

struct Probe<'a> {
    path: String,
    /// Options `None`, lists and tables empty: a struct walked elsewhere.
    quiet: bool,
    st: St<'a>,
}

macro_rules! zero {
    ($($m:ident),*) => {$(
        fn $m<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            v.visit_u64(0)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        let c = {
            let mut s = self.st.borrow_mut();
            s.any_log.push(self.path.clone());
            s.choice.get(&self.path).copied().unwrap_or(0)
        };
        let n = usize::from(!self.quiet);
        match c {
            0 => v.visit_u64(0),
            1 => v.visit_str(""),
            2 => v.visit_seq(Seq { n, path: format!("{}[]", self.path), quiet: self.quiet, st: self.st }),
            3 => v.visit_map(Map { n, path: self.path, quiet: self.quiet, hidden: true, st: self.st }),
            _ => v.visit_bool(false),
        }
    }

    zero!(deserialize_u8, deserialize_u16, deserialize_u32, deserialize_u64, deserialize_i8);
    zero!(deserialize_i16, deserialize_i32, deserialize_i64, deserialize_u128, deserialize_i128);

    fn deserialize_f32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_f64(0.0)
    }
    fn deserialize_f64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_f64(0.0)
    }
    fn deserialize_bool<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_bool(false)
    }
    fn deserialize_char<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_char('a')
    }
    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_str("")
    }
    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_str("")
    }
    fn deserialize_bytes<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_bytes(&[])
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_bytes(&[])
    }
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        if self.quiet {
            v.visit_none()
        } else {
            v.visit_some(self)
        }
    }
    fn deserialize_unit<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_unit()
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, v: V) -> Result<V::Value, Error> {
        v.visit_unit()
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, v: V) -> Result<V::Value, Error> {
        v.visit_newtype_struct(self)
    }
    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        let n = usize::from(!self.quiet);
        v.visit_seq(Seq { n, path: format!("{}[]", self.path), quiet: self.quiet, st: self.st })
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, Error> {
        v.visit_seq(Seq { n: len, path: format!("{}[]", self.path), quiet: self.quiet, st: self.st })
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(self, _: &'static str, len: usize, v: V) -> Result<V::Value, Error> {
        self.deserialize_tuple(len, v)
    }
    fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        let n = usize::from(!self.quiet);
        v.visit_map(Map { n, path: self.path, quiet: self.quiet, hidden: false, st: self.st })
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        let id = format!("{name}{fields:?}");
        let quiet = {
            let mut s = self.st.borrow_mut();
            let first = s.first.get(&id).cloned();
            let elsewhere = first.as_ref().is_some_and(|f| *f != self.path) && !fields.is_empty();
            let quiet = self.quiet || elsewhere || s.stack.contains(&id);
            if !self.quiet {
                match first {
                    None => {
                        s.first.insert(id.clone(), self.path.clone());
                    }
                    Some(f) if elsewhere => {
                        s.schema.shared.insert(self.path.clone(), f);
                    }
                    Some(_) => {}
                }
            }
            s.stack.push(id.clone());
            quiet
        };
        let fed: Vec<&'static str> = {
            let s = self.st.borrow();
            fields.iter().copied().filter(|f| !s.skip.contains(&(id.clone(), *f))).collect()
        };
        let last_fed = RefCell::new(None);
        let r =
            v.visit_map(Fields { name, fed: &fed, at: 0, path: &self.path, quiet, last_fed: &last_fed, st: self.st });
        let mut s = self.st.borrow_mut();
        s.stack.pop();
        if let Err(e) = &r {
            // An alias fed after the field it names: leave the alias out next time.
            if e.0.starts_with(DUPLICATE) && !s.progress {
                if let Some(alias) = *last_fed.borrow() {
                    s.skip.insert((id, alias));
                    s.progress = true;
                }
            }
        }
        r
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        if !self.quiet {
            // The values belong to the key, also when it holds a list or table of them.
            let mut key = self.path.as_str();
            while let Some(k) = key.strip_suffix("[]").or_else(|| key.strip_suffix(".<name>")) {
                key = k;
            }
            self.st.borrow_mut().schema.keys.insert(key.to_string(), variants.to_vec());
        }
        v.visit_enum(Enum { variant: variants.first().copied().unwrap_or_default(), probe: self })
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_str("")
    }
    fn deserialize_ignored_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_unit()
    }
}

/// A list of `n` elements.
struct Seq<'a> {
    n: usize,
    path: String,
    quiet: bool,
    st: St<'a>,
}

impl<'de> SeqAccess<'de> for Seq<'_> {
    type Error = Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        if self.n == 0 {
            return Ok(None);
        }
        self.n -= 1;
        let probe = Probe { path: self.path.clone(), quiet: self.quiet, st: self.st };
        guarded(self.st, || seed.deserialize(probe)).map(Some)
    }
}

/// A table of `n` entries named `<name>`.
struct Map<'a> {
    n: usize,
    path: String,
    quiet: bool,
    /// Given for `deserialize_any`: a struct reading it hides its fields.
    hidden: bool,
    st: St<'a>,
}

impl<'de> MapAccess<'de> for Map<'_> {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        if self.n == 0 {
            return Ok(None);
        }
        self.n -= 1;
        seed.deserialize(Key { path: &self.path, hidden: self.hidden, st: self.st }).map(Some)
    }
    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, Error> {
        let probe = Probe { path: format!("{}.<name>", self.path), quiet: self.quiet, st: self.st };
        guarded(self.st, || seed.deserialize(probe))
    }
}

/// The key of a table entry: `<name>`, or a struct's field name asked of a
/// table given for `deserialize_any`, which is noted as hidden.
struct Key<'a> {
    path: &'a str,
    hidden: bool,
    st: St<'a>,
}

impl<'de> de::Deserializer<'de> for Key<'_> {
    type Error = Error;
    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_str("<name>")
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        if self.hidden {
            self.st.borrow_mut().schema.opaque.insert(self.path.to_string());
        }
        v.visit_str("<name>")
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum ignored_any
    }
}

/// A struct's fields, every one given (aliases after their field left out).
struct Fields<'a> {
    name: &'static str,
    fed: &'a [&'static str],
    at: usize,
    path: &'a str,
    quiet: bool,
    last_fed: &'a RefCell<Option<&'static str>>,
    st: St<'a>,
}

impl<'de> MapAccess<'de> for Fields<'_> {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        let Some(field) = self.fed.get(self.at).copied() else {
            return Ok(None);
        };
        self.at += 1;
        *self.last_fed.borrow_mut() = Some(field);
        if !self.quiet {
            let mut s = self.st.borrow_mut();
            s.schema.keys.entry(join(self.path, field)).or_default();
            s.schema.owner.insert(join(self.path, field), self.name);
        }
        seed.deserialize(de::value::BorrowedStrDeserializer::<Error>::new(field)).map(Some)
    }
    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, Error> {
        let field = self.fed[self.at - 1];
        let probe = Probe { path: join(self.path, field), quiet: self.quiet, st: self.st };
        guarded(self.st, || seed.deserialize(probe))
    }
}

/// An enum: its first variant.
struct Enum<'a> {
    variant: &'static str,
    probe: Probe<'a>,
}

impl<'de, 'a> EnumAccess<'de> for Enum<'a> {
    type Error = Error;
    type Variant = Probe<'a>;
    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Probe<'a>), Error> {
        let v = seed.deserialize(de::value::BorrowedStrDeserializer::<Error>::new(self.variant))?;
        Ok((v, self.probe))
    }
}

impl<'de> VariantAccess<'de> for Probe<'_> {
    type Error = Error;
    fn unit_variant(self) -> Result<(), Error> {
        Ok(())
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(self)
    }
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_tuple(self, len, v)
    }
    fn struct_variant<V: Visitor<'de>>(self, fields: &'static [&'static str], v: V) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_struct(self, "variant", fields, v)
    }
}
