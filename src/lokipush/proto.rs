//! The Loki push API's protobuf messages (`logproto.PushRequest`), as
//! Promtail, Alloy and Fluent Bit send them (snappy-compressed).

/// `google.protobuf.Timestamp`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Timestamp {
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LabelPair {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct EntryAdapter {
    #[prost(message, optional, tag = "1")]
    pub timestamp: Option<Timestamp>,
    /// Bytes: a line that is not UTF-8 is kept (with replacement characters), not refused.
    #[prost(bytes = "vec", tag = "2")]
    pub line: Vec<u8>,
    #[prost(message, repeated, tag = "3")]
    pub structured_metadata: Vec<LabelPair>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StreamAdapter {
    /// The label set in selector syntax: `{job="app", host="a"}`.
    #[prost(string, tag = "1")]
    pub labels: String,
    #[prost(message, repeated, tag = "2")]
    pub entries: Vec<EntryAdapter>,
    #[prost(uint64, tag = "3")]
    pub hash: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PushRequest {
    #[prost(message, repeated, tag = "1")]
    pub streams: Vec<StreamAdapter>,
}

/// Why a protobuf body cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    /// It decompresses to more than the reader takes (checked before it is decompressed).
    #[error("the body decompresses to {size} bytes, over receiver.max_message_bytes ({max})")]
    TooLarge { size: usize, max: usize },
    #[error("snappy: {0}")]
    Snappy(snap::Error),
    #[error("protobuf: {0}")]
    Protobuf(prost::DecodeError),
}

/// A snappy-compressed (block format, as Loki takes it) `PushRequest`; its
/// decompressed size is held to `max` before anything is allocated.
pub fn decode_snappy(body: &[u8], max: usize) -> Result<PushRequest, ProtoError> {
    let size = snap::raw::decompress_len(body).map_err(ProtoError::Snappy)?;
    if size > max {
        return Err(ProtoError::TooLarge { size, max });
    }
    let raw = snap::raw::Decoder::new().decompress_vec(body).map_err(ProtoError::Snappy)?;
    <PushRequest as prost::Message>::decode(raw.as_slice()).map_err(ProtoError::Protobuf)
}

/// `req` as a body Loki takes: protobuf, snappy-compressed.
pub fn encode_snappy(req: &PushRequest) -> Vec<u8> {
    let raw = prost::Message::encode_to_vec(req);
    // Compressing a buffer in memory fails only past snappy's size limit (4 GiB).
    snap::raw::Encoder::new().compress_vec(&raw).unwrap_or_default()
}

impl StreamAdapter {
    /// The label set `{a="b", c="d"}` as pairs, in its order (read by the one
    /// LogQL parser, as Loki reads it).
    pub fn label_pairs(&self) -> Result<Vec<(String, String)>, String> {
        let sel = crate::logql::parse_log_query(&self.labels)
            .map_err(|e| format!("error parsing labels {:?}: {e}", self.labels))?;
        Ok(sel.matchers.into_iter().map(|m| (m.name, m.value)).collect())
    }
}

impl EntryAdapter {
    /// The entry's time in Unix nanoseconds (none: 0).
    pub fn unix_nanos(&self) -> i64 {
        self.timestamp.as_ref().map_or(0, |t| t.seconds.saturating_mul(1_000_000_000) + i64::from(t.nanos))
    }
}
