//! The book's command-line reference (`book/src/cli/`), generated from the
//! clap definitions the binary parses with, as the man page and the
//! completions in `packaging/generated/` are: one page per command, its long
//! help and that of each command under it.

use std::collections::BTreeMap;

use clap::{Command, CommandFactory};

/// Where the pages go, under `book/src`.
pub const DIR: &str = "cli";

/// Help rendered the same everywhere: 100 columns, no environment values.
fn prepare(cmd: Command) -> Command {
    cmd.term_width(100).max_term_width(100).mut_args(|a| a.hide_env_values(true)).mut_subcommands(prepare)
}

fn help(cmd: &mut Command) -> String {
    let text = cmd.render_long_help().to_string();
    text.lines().map(str::trim_end).collect::<Vec<_>>().join("\n").trim_end().to_string()
}

fn section(cmd: &mut Command, name: &str, depth: usize, out: &mut String) {
    let hashes = "#".repeat(depth.min(4));
    out.push_str(&format!("{hashes} `{name}`\n\n```text\n{}\n```\n\n", help(cmd)));
    let subs: Vec<String> = cmd.get_subcommands().map(|s| s.get_name().to_string()).filter(|n| n != "help").collect();
    for sub in subs {
        if let Some(s) = cmd.find_subcommand_mut(&sub) {
            section(s, &format!("{name} {sub}"), depth + 1, out);
        }
    }
}

const NOTE: &str = "<!-- Generated from the command line's clap definitions by tests/book.rs: \
                    UPDATE_BOOK=1 cargo test --test it book::cli_reference regenerates it. -->";

/// File name (under `cli/`) -> contents: `index.md` with the global options
/// and a table of the commands, and a page per command.
pub fn pages() -> BTreeMap<String, String> {
    let mut root = prepare(tailship::cli::Cli::command().disable_help_subcommand(true));
    root.build();
    let mut pages = BTreeMap::new();
    let mut index = format!(
        "# Command line\n\n{NOTE}\n\nEvery command, its options and their environment variables, as \
         `tailship help COMMAND` prints them. Exit codes: 0 ok, 1 runtime failure, 2 usage or config \
         error. `tailship man | man -l -` shows the same as one man page.\n\n```text\n{}\n```\n\n\
         | command | what it does |\n|---|---|\n",
        help(&mut root)
    );
    let names: Vec<String> = root.get_subcommands().map(|s| s.get_name().to_string()).collect();
    for name in names {
        let Some(cmd) = root.find_subcommand_mut(&name) else { continue };
        let about = cmd.get_about().map(|a| a.to_string()).unwrap_or_default().replace('|', "\\|");
        index.push_str(&format!("| [`tailship {name}`]({name}.md) | {about} |\n"));
        let mut page = format!("{NOTE}\n\n");
        section(cmd, &format!("tailship {name}"), 1, &mut page);
        pages.insert(format!("{name}.md"), format!("{}\n", page.trim_end()));
    }
    pages.insert("index.md".to_string(), index);
    pages
}
