//! The `tailship` command as the query and push tests run it: no client
//! settings from the environment (`TAILSHIP_*`, `LOKI_*`) but those given.
#![allow(dead_code)]

use std::process::{Command, Output, Stdio};

use crate::common::bin;

/// `tailship <args>` with no client settings from the environment but `env`.
pub fn tailship(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(bin());
    c.args(args).env("NO_COLOR", "1").env("RUST_LOG", "info").stdin(Stdio::null());
    for (k, _) in std::env::vars() {
        if k.starts_with("TAILSHIP_") || k.starts_with("LOKI_") {
            c.env_remove(k);
        }
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

pub fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    tailship(args, env).output().expect("run tailship")
}

/// Its stdout, once it succeeded.
pub fn ok(o: &Output) -> String {
    assert!(o.status.success(), "exit {:?}: {}", o.status.code(), String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}
