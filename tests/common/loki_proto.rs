//! Loki's push request as protobuf (`logproto.PushRequest`: streams of
//! entries with structured metadata), for tests that send what Promtail and
//! Alloy send or read what they sent: the types of tailship's own codec.
#![allow(dead_code, unused_imports)]

pub use tailship::lokipush::proto::*;
