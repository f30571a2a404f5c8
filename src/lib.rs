//! tailship: a log shipping and tailing agent.
//!
//! # A line's path, file by file
//!
//! ```text
//! config/        the file read into plain data (TOML/YAML, env overrides, ${VAR}, secret files)
//!   -> plan/     compiled once: stages, globs, multiline rules, alert rules (check, run, reload)
//!   -> agent/    starts everything below from the Plan; SIGHUP reloads; phased shutdown;
//!                lanes.rs: one lane per client (its positions, queue, batcher, pushers, readers)
//! discovery/glob.rs      which files the globs name (a scan); discovery/ also finds targets
//!                        (Kubernetes, Docker, Consul, target files, clouds) and their __meta_*
//! source/fingerprint.rs  open a file, know it by its first bytes
//! source/file/           the file source: scans, opens (empty files held open), parks, detects
//!                        rotation, finds rotated files and generations it never saw
//! source/tailer.rs       one open file: read a block from the delivered offset
//! source/lines.rs, multiline.rs   bytes -> lines -> entries
//! source/journal/        the journal source: journalctl's JSON entries, a cursor instead of an offset
//! source/docker/         a docker source: the json-file logs of the containers discovery/docker/
//!                        lists go to source/file/ (or are read through the Engine API)
//! source/target.rs       a file's labels: the source's, a discovery source's __meta_*, then relabel/
//! pipeline/stages.rs     UTF-8 repair, truncation, the stages in order (apply.rs: what each does to
//!                        a line and its extracted map, line.rs; template.rs: Go templates), labels
//! queue/                 a Chunk of entries takes its bytes from the Budget, waits if full
//! batch/batcher.rs       per tenant, per stream: increasing timestamps, sealed by size/wait; a batch
//!                        holds its chunks' texts and each line's place (body.rs), not a copy
//!                        (an alert tap, batch::LineTap, sees every line here)
//! batch/deliver.rs       compression turn, push slot, client/push.rs: the JSON written once, straight
//!                        into the body or the compressor (client/body.rs), retries, backoff
//! positions/             a 2xx acknowledges the batch: the file's delivered offset moves
//!                        (each client's own), written atomically to the one positions
//!                        file (file.rs: every client's); the budget is returned
//! ```
//!
//! Around it: `client/` (the one HTTP client builder, push, query), `alert/`
//! (rules, engine, webhook sender), `cloud/` and `admin/` (management APIs),
//! `logql` (the one query parser), `lokipush/` (the Loki push format, read once: for
//! `receive`, the `loki_push` source and the tests' recorder), `convert/` (`tailship convert promtail`), `inspect/` (`tailship
//! inspect`: lines through a config's stages, reported stage by stage), `receive/` (the embedded store of `tailship
//! receive`, for tests, the demo and benchmarks), `commands/` (one thin
//! function per command) and `cli/` (clap definitions); `main.rs` parses and
//! dispatches.
//!
//! # The layering rule
//!
//! Each layer imports only layers below it (or its own row); no two files
//! import each other, directly or around a loop; the product never imports
//! `receive`. Bottom up:
//!
//! ```text
//! util, metrics, status, shutdown, systemd, logging, pool    the ground floor
//! logql, lokipush                                    one parser: client, alert and receive use it; the Loki push format
//! config                                             plain data and loading; compiles nothing
//! positions                                          delivered offsets, fingerprints, ack references
//! client                                             HTTP (one builder), push, query
//! queue                                              budget, sink, chunks, streams
//! batch                                              batcher, deliver
//! spool                                              network sources' lines on disk (segments, group commit)
//! pipeline, relabel                                 stages; Prometheus relabel rules over `__meta_*` labels
//! discovery                                          globs; targets of Kubernetes, Docker, Consul, clouds; one poller
//! source                                             reads lines: fingerprint, tailer, file, stdin, journal, docker, net
//! cloud, admin                                       management API clients
//! alert                                              rules, engine, sender
//! plan                                               Config -> Plan
//! convert                                            a Promtail config as a tailship config (TOML)
//! agent, inspect                                     the daemon; lines through the stages, reported
//! receive                                            the embedded store
//! cli                                                clap definitions
//! commands                                           thin commands
//! main                                               parse, set up logging, dispatch
//! ```
//!
//! Some imports the order allows are still forbidden: `client` does not
//! import `status` (the agent hands its status down to what writes into it;
//! the client sees it only as a `client::push::PushObserver`).
//!
//! `tests/layers.rs` checks this rule, and the file size limits, on the source.

pub mod admin;
pub mod agent;
pub mod alert;
pub mod batch;
pub mod cli;
pub mod client;
pub mod cloud;
pub mod commands;
pub mod config;
pub mod convert;
pub mod discovery;
pub mod inspect;
pub mod logging;
pub mod logql;
pub mod lokipush;
pub mod metrics;
pub mod pipeline;
pub mod plan;
pub mod pool;
pub mod positions;
pub mod queue;
pub mod receive;
pub mod relabel;
pub mod shutdown;
pub mod source;
pub mod spool;
pub mod status;
pub mod systemd;
pub mod util;
