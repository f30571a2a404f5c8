use std::io::Write;

use crate::cli::CheckArgs;

/// `tailship check`: validate, then print the effective config with secrets redacted.
pub fn check(args: &CheckArgs) -> anyhow::Result<()> {
    let path = crate::cli::config_or_default(&args.config);
    let plan = crate::plan::load(&path)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "# {}: valid", path.display())?;
    for (key, message) in crate::plan::warnings(&plan) {
        // On stderr, so the effective config on stdout stays a config.
        eprintln!("warning: {}: {key}: {message}", path.display());
    }
    let text = crate::config::to_redacted_toml(&plan.config);
    out.write_all(crate::util::secrets::scrub(&text).as_bytes())?;
    Ok(())
}
