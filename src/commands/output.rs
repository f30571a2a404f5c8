//! Output of the management commands: an aligned table for people, or JSON
//! (`--output json`) for scripts, which prints the service's answer as is.

use std::io::Write;

use serde_json::Value;

pub use crate::cli::Output;

/// Prints rows under headers, columns separated by two spaces.
pub fn table(out: &mut impl Write, headers: &[&str], rows: &[Vec<String>]) -> std::io::Result<()> {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        let last = cells.len().saturating_sub(1);
        for (i, c) in cells.iter().enumerate() {
            s.push_str(c);
            if i < last {
                let pad = widths[i] - c.chars().count() + 2;
                s.extend(std::iter::repeat_n(' ', pad));
            }
        }
        s
    };
    writeln!(out, "{}", line(headers.to_vec()))?;
    for r in rows {
        writeln!(out, "{}", line(r.iter().map(String::as_str).collect()))?;
    }
    Ok(())
}

/// Prints `field  value` lines of one record.
pub fn fields(out: &mut impl Write, pairs: &[(&str, String)]) -> std::io::Result<()> {
    let w = pairs.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0);
    for (k, v) in pairs {
        writeln!(out, "{k:<w$}  {v}")?;
    }
    Ok(())
}

/// Pretty JSON and a newline.
pub fn json(out: &mut impl Write, v: &Value) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, v)?;
    writeln!(out)
}

/// A cell for an optional value: `-` when absent or empty.
pub fn cell(v: Option<&str>) -> String {
    match v {
        Some(s) if !s.is_empty() => s.to_string(),
        _ => "-".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns() {
        let mut out = Vec::new();
        table(&mut out, &["ID", "NAME"], &[vec!["1".into(), "a".into()], vec!["100".into(), "bb".into()]]).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "ID   NAME\n1    a\n100  bb\n");
    }
}
