//! The config loader on arbitrary text: TOML or YAML (first byte), with a fixed
//! environment for `${VAR}` and `TAILSHIP_*` overrides. It must return a config
//! or a list of errors, never panic; and an accepted config must print
//! (`tailship check`) without panicking.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let path = if kind & 1 == 0 { Path::new("fuzz.toml") } else { Path::new("fuzz.yaml") };
    let env = vec![
        ("HOST".to_string(), "web-1".to_string()),
        ("EMPTY".to_string(), String::new()),
        ("TAILSHIP_CLIENT__TENANT_ID".to_string(), "42".to_string()),
    ];
    if let Ok(config) = tailship::config::load_str(path, text, &env) {
        let _ = tailship::config::to_redacted_toml(&config);
    }
});
