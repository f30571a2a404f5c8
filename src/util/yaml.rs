//! YAML from files a user hands over (Promtail configs and positions files,
//! kubeconfigs), read within bounds. The YAML loader copies an anchored
//! value at each alias, so a "billion laughs" file of a few hundred bytes
//! (aliases of aliases of aliases) grows to gigabytes; the events are counted
//! first, each alias as the size of what it names, and a file that would
//! expand past [`MAX_NODES`] values is refused, as is one over [`MAX_BYTES`].

use std::collections::HashMap;
use std::io::Read;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;
use yaml_rust2::{Yaml, YamlLoader};

/// The largest YAML read (a Promtail config is a few KiB).
pub const MAX_BYTES: usize = 16 << 20;
/// The most values a YAML file may hold once its aliases are expanded.
pub const MAX_NODES: u64 = 1_000_000;
/// The deepest nesting of sequences and mappings read (a Promtail config
/// nests about ten deep; thousands of levels cost the loader gigabytes).
pub const MAX_DEPTH: usize = 100;

#[derive(Debug, thiserror::Error)]
pub enum YamlError {
    #[error("it is {0} bytes; at most {MAX_BYTES} are read")]
    TooLarge(usize),
    #[error("its aliases expand to more than {MAX_NODES} values (aliases of aliases: a \"billion laughs\" file?)")]
    Expands,
    #[error("it nests sequences and mappings more than {MAX_DEPTH} deep")]
    TooDeep,
    #[error("{0}")]
    Syntax(String),
}

/// Counts the values of the documents as if every alias were expanded.
#[derive(Default)]
struct Count {
    /// Open sequences and mappings: (anchor id, values so far).
    open: Vec<(usize, u64)>,
    /// Values each anchor names.
    anchors: HashMap<usize, u64>,
    total: u64,
    /// The deepest nesting seen.
    depth: usize,
}

impl Count {
    fn add(&mut self, n: u64) {
        match self.open.last_mut() {
            Some((_, c)) => *c = c.saturating_add(n),
            None => self.total = self.total.saturating_add(n),
        }
    }
}

impl MarkedEventReceiver for Count {
    fn on_event(&mut self, ev: Event, _mark: Marker) {
        // Past the bound, nothing more is needed (the parse still runs to its end).
        if self.total > MAX_NODES || self.open.iter().any(|(_, c)| *c > MAX_NODES) {
            self.total = MAX_NODES + 1;
            return;
        }
        match ev {
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                self.open.push((anchor, 1));
                self.depth = self.depth.max(self.open.len());
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((anchor, n)) = self.open.pop() {
                    if anchor > 0 {
                        self.anchors.insert(anchor, n);
                    }
                    self.add(n);
                }
            }
            Event::Scalar(_, _, anchor, _) => {
                if anchor > 0 {
                    self.anchors.insert(anchor, 1);
                }
                self.add(1);
            }
            Event::Alias(id) => {
                let n = self.anchors.get(&id).copied().unwrap_or(1);
                self.add(n);
            }
            _ => {}
        }
    }
}

/// Reads at most [`MAX_BYTES`] of `r` as text (a config, a Promtail file):
/// more is an error, so an endless or huge input is not held in memory.
pub fn read_bounded(r: impl std::io::Read) -> std::io::Result<String> {
    let mut text = String::new();
    r.take(MAX_BYTES as u64 + 1).read_to_string(&mut text)?;
    if text.len() > MAX_BYTES {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("over {MAX_BYTES} bytes; not read")));
    }
    Ok(text)
}

/// Whether `text` is within the bounds (size, values once expanded).
pub fn check(text: &str) -> Result<(), YamlError> {
    if text.len() > MAX_BYTES {
        return Err(YamlError::TooLarge(text.len()));
    }
    // Before the parser, which recurses per level: thousands of levels overflow its stack.
    if nesting(text) > MAX_DEPTH {
        return Err(YamlError::TooDeep);
    }
    let mut count = Count::default();
    Parser::new_from_str(text).load(&mut count, true).map_err(|e| YamlError::Syntax(e.to_string()))?;
    if count.total > MAX_NODES {
        return Err(YamlError::Expands);
    }
    if count.depth > MAX_DEPTH {
        return Err(YamlError::TooDeep);
    }
    Ok(())
}

/// How deep `text` nests, at least, read line by line without parsing:
/// block levels by indentation (and `- ` items), flow levels by brackets
/// outside quotes. Never more than the parser would find, within a few.
fn nesting(text: &str) -> usize {
    let mut indents: Vec<usize> = Vec::new();
    let mut deepest = 0;
    for line in text.lines() {
        let body = line.trim_start_matches(' ');
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let mut indent = line.len() - body.len();
        while indents.last().is_some_and(|&i| i >= indent) {
            indents.pop();
        }
        indents.push(indent);
        // `- - - x`: each dash opens a sequence inside the last.
        let mut rest = body;
        while let Some(r) = rest.strip_prefix("- ") {
            indent += 2;
            indents.push(indent);
            rest = r.trim_start_matches(' ');
        }
        let (mut flow, mut quote) = (0usize, None);
        let mut widest = 0;
        for c in rest.chars() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"') => quote = Some(c),
                (None, '#') => break,
                (None, '[' | '{') => {
                    flow += 1;
                    widest = widest.max(flow);
                }
                (None, ']' | '}') => flow = flow.saturating_sub(1),
                _ => {}
            }
        }
        deepest = deepest.max(indents.len() + widest);
    }
    deepest
}

/// The documents of `text`, or why they are not read.
pub fn load(text: &str) -> Result<Vec<Yaml>, YamlError> {
    check(text)?;
    YamlLoader::load_from_str(text).map_err(|e| YamlError::Syntax(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 737-byte kind of file: nine levels of ten aliases each.
    fn laughs(levels: usize) -> String {
        let mut s =
            String::from("a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
        for i in 1..levels {
            let refs = vec![format!("*a{}", i - 1); 10].join(",");
            s.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        s
    }

    #[test]
    fn a_billion_laughs_is_refused_before_it_is_expanded() {
        let text = laughs(9);
        assert!(text.len() < 800);
        assert!(matches!(load(&text), Err(YamlError::Expands)));
        // Three levels (1,000 values) load, aliases expanded.
        let docs = load(&laughs(3)).unwrap();
        assert_eq!(docs[0]["a2"][9][9][9].as_str(), Some("lol"));
    }

    #[test]
    fn a_file_over_the_size_bound_is_refused_and_bad_yaml_says_where() {
        let big = "x: 1\n".repeat(MAX_BYTES / 5 + 1);
        assert!(matches!(load(&big), Err(YamlError::TooLarge(_))));
        let e = load("a: [1, 2\nb: 3").unwrap_err().to_string();
        assert!(e.contains("line"), "{e}");
    }

    #[test]
    fn a_file_nested_thousands_deep_is_refused_before_it_is_loaded() {
        let mut deep = String::new();
        for i in 0..4_000 {
            deep.push_str(&" ".repeat(i));
            deep.push_str("a:\n");
        }
        assert!(matches!(load(&deep), Err(YamlError::TooDeep)));
        let flow = format!("a: {}{}", "[".repeat(4_000), "]".repeat(4_000));
        assert!(matches!(load(&flow), Err(YamlError::TooDeep)));
        let dashes = format!("a:\n{}x\n", "- ".repeat(4_000));
        assert!(matches!(load(&dashes), Err(YamlError::TooDeep)));
        // A config of ordinary depth loads.
        assert!(load("a:\n  b:\n    - c: [1, {d: 2}]\n      e: '[[[['\n").is_ok());
    }
}
