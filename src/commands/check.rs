use std::io::Write;

use anyhow::Context;

use crate::cli::CheckArgs;

/// `tailship check`: validate, then print the effective config with secrets
/// redacted (`--quiet`: only the problems, and the exit code).
pub fn check(args: &CheckArgs) -> anyhow::Result<()> {
    let path = crate::cli::config_or_default(&args.config);
    let plan = match crate::plan::load(&path) {
        Ok(plan) => plan,
        Err(e) if looks_like_promtail(&path) => {
            return Err(e).with_context(|| {
                format!(
                "{} looks like a Promtail config: run `tailship convert promtail {} > tailship.toml`, then check that",
                path.display(),
                path.display()
            )
            })
        }
        Err(e) => return Err(e.into()),
    };
    for (key, message) in crate::plan::warnings(&plan) {
        // On stderr, so the effective config on stdout stays a config.
        eprintln!("warning: {}: {key}: {message}", path.display());
    }
    if args.quiet {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "# {}: valid", path.display())?;
    let text = crate::config::to_redacted_toml(&plan.config);
    out.write_all(crate::util::secrets::scrub(&text).as_bytes())?;
    Ok(())
}

/// A YAML file with Promtail's top-level `scrape_configs` (tailship has no such key).
fn looks_like_promtail(path: &std::path::Path) -> bool {
    let yaml = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"));
    yaml && std::fs::read_to_string(path).is_ok_and(|text| text.lines().any(|l| l.starts_with("scrape_configs:")))
}
