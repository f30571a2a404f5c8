//! The integration tests, one binary: each file of tests/ is a module (its
//! tests are `NAME::test`, run one file with `cargo test --test it NAME::`),
//! and the helpers they share are declared once, here.

#[path = "common/agent.rs"]
mod agent;
#[path = "common/cli.rs"]
mod cli;
mod common;
#[allow(dead_code)]
#[path = "promtail_corpus/compare.rs"]
mod compare;
#[path = "common/discovery.rs"]
mod discovery;
#[allow(dead_code)]
#[path = "promtail_corpus/docker_jobs.rs"]
mod docker_jobs;
#[path = "common/dockerd.rs"]
mod dockerd;
#[allow(dead_code)]
#[path = "promtail_corpus/golayout.rs"]
mod golayout;
#[allow(dead_code)]
#[path = "promtail_corpus/inputs.rs"]
mod inputs;
#[path = "common/kafka_broker.rs"]
mod kafka_broker;
#[allow(dead_code)]
#[path = "promtail_corpus/kube.rs"]
mod kube;
#[allow(dead_code)]
#[path = "common/loki.rs"]
mod loki;
#[path = "common/loki_proto.rs"]
mod loki_proto;
mod mockhttp;
#[path = "common/pki.rs"]
mod pki;
#[path = "common/promtail.rs"]
mod promtail;
#[path = "common/recorder.rs"]
mod recorder;
#[allow(dead_code)]
#[path = "promtail_corpus/regex_gen.rs"]
mod regex_gen;
#[allow(dead_code)]
#[path = "promtail_corpus/rewrite.rs"]
mod rewrite;
#[path = "common/scenario.rs"]
mod scenario;
#[path = "common/scrape.rs"]
mod scrape;
#[allow(dead_code)]
#[path = "promtail_corpus/sides.rs"]
mod sides;

mod admin;
mod alerts;
mod answers;
mod api_prefix;
mod azure;
mod bad_input;
mod book;
mod chaos;
mod cli_levels;
mod client_options;
mod clients;
mod cloud;
mod cloudflare;
mod compound;
mod compressed;
mod config;
mod consul;
mod convert;
mod convert_pipeline;
mod digitalocean;
mod discovery_http;
mod dns;
mod docker;
mod docker_tcp;
mod dockerswarm;
mod duplicates;
mod ec2;
mod edges;
mod endpoints;
mod exactly_once;
mod extracted;
mod file_sd;
mod gce;
mod gcplog;
mod gelf;
mod health;
mod heroku_drain;
mod hostile;
mod image;
mod inspect;
mod journal;
mod kafka;
mod kubernetes;
mod kubernetes_manifests;
mod kubernetes_roles;
mod layers;
mod listeners;
mod logcli;
mod loki_receivers;
mod marathon;
mod misconfigured;
mod monitoring;
mod oauth2;
mod openstack;
mod otlp;
mod packaging;
mod promtail_cases;
mod promtail_config_page;
mod promtail_corpus;
mod promtail_dialect;
mod promtail_docker;
mod promtail_geoip;
mod promtail_journal;
mod promtail_limits;
mod promtail_loki_bytes;
mod promtail_metrics;
mod promtail_mixin;
mod promtail_push;
mod promtail_side_by_side;
mod promtail_stages;
mod query;
mod quickstart;
mod receive;
mod receiver_limits;
mod regression;
mod relabel;
mod relay;
mod release_artifacts;
mod rotation;
mod rotation_mass;
mod rotation_races;
mod scale;
mod secrets;
mod ship;
mod sources;
mod stages;
mod startup_pages;
mod status;
mod syslog;
mod tls;
mod traces;
mod triton;
mod watch;
mod zookeeper;
