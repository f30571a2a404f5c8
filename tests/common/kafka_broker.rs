//! A one-node Kafka broker on loopback for the tests (no Kafka can run
//! here): it speaks the real wire protocol, encoded and decoded with the
//! `kafka-protocol` crate: ApiVersions, Metadata, ListOffsets, Fetch (v2
//! record batches), and SaslHandshake + SaslAuthenticate (PLAIN, or
//! SCRAM-SHA-256/512 as RFC 5802 and 7677 give it) when started with
//! credentials, over TLS when started with a server config.
//! Topics and messages are set by the test ([`Broker::produce`]).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::{Buf, Bytes, BytesMut};
use hmac::digest::core_api::BlockSizeUser;
use hmac::digest::Digest;
use hmac::digest::KeyInit;
use hmac::{Mac, SimpleHmac};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_rustls::rustls;

/// One message as produced.
#[derive(Debug, Clone)]
pub struct Msg {
    pub key: Option<Vec<u8>>,
    pub value: Vec<u8>,
    /// Milliseconds since the epoch.
    pub ts_ms: i64,
}

impl Msg {
    pub fn new(value: &str, ts_ms: i64) -> Msg {
        Msg { key: None, value: value.as_bytes().to_vec(), ts_ms }
    }
    pub fn keyed(key: &str, value: &str, ts_ms: i64) -> Msg {
        Msg { key: Some(key.as_bytes().to_vec()), value: value.as_bytes().to_vec(), ts_ms }
    }
}

#[derive(Default)]
struct State {
    /// Topic -> partitions -> messages (offset = index).
    topics: BTreeMap<String, Vec<Vec<Msg>>>,
}

pub struct Broker {
    pub port: u16,
    state: Arc<Mutex<State>>,
    /// Fetch requests answered, and SASL authentications accepted.
    pub fetches: Arc<AtomicU64>,
    pub authenticated: Arc<AtomicU64>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The settings a broker is started with.
#[derive(Clone, Default)]
pub struct Options {
    /// 0: any free port.
    pub port: u16,
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The credentials the client must give (PLAIN unless `scram`).
    pub sasl: Option<(String, String)>,
    /// SCRAM with this hash (`SCRAM-SHA-256` or `SCRAM-SHA-512`) in place of PLAIN.
    pub scram: Option<&'static str>,
}

/// `Hi()` of RFC 5802: PBKDF2 with HMAC-`D`.
fn hi<D: Digest + BlockSizeUser + Clone>(password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
    let mut u = mac::<D>(password, &[salt, &1u32.to_be_bytes()].concat());
    let mut out = u.clone();
    for _ in 1..iterations {
        u = mac::<D>(password, &u);
        out.iter_mut().zip(&u).for_each(|(o, x)| *o ^= x);
    }
    out
}

fn mac<D: Digest + BlockSizeUser + Clone>(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut m = <SimpleHmac<D> as KeyInit>::new_from_slice(key).unwrap();
    Mac::update(&mut m, data);
    m.finalize().into_bytes().to_vec()
}

/// One SCRAM exchange, server side.
#[derive(Default)]
struct Scram {
    /// client-first-message-bare and server-first-message, once sent.
    first: Option<(String, String)>,
}

const SALT: &[u8] = b"tailship-test-salt";
const ITERATIONS: u32 = 4096;

impl Scram {
    /// The answer to the client's message `msg`, and whether it proved the password.
    fn step<D: Digest + BlockSizeUser + Clone>(&mut self, msg: &[u8], user: &str, password: &str) -> (Vec<u8>, bool) {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let text = String::from_utf8_lossy(msg).into_owned();
        let field = |s: &str, k: &str| s.split(',').find_map(|f| f.strip_prefix(k)).map(str::to_string);
        match self.first.take() {
            None => {
                // "n,,n=user,r=nonce"
                let bare = text.splitn(3, ',').nth(2).unwrap_or_default().to_string();
                if field(&bare, "n=").as_deref() != Some(user) {
                    return (b"e=unknown-user".to_vec(), false);
                }
                let nonce = format!("{}srv0a1b2c3d", field(&bare, "r=").unwrap_or_default());
                let server_first = format!("r={nonce},s={},i={ITERATIONS}", b64.encode(SALT));
                self.first = Some((bare, server_first.clone()));
                (server_first.into_bytes(), false)
            }
            Some((bare, server_first)) => {
                let Some((without_proof, proof)) = text.rsplit_once(",p=") else {
                    return (b"e=invalid-proof".to_vec(), false);
                };
                let salted = hi::<D>(password.as_bytes(), SALT, ITERATIONS);
                let client_key = mac::<D>(&salted, b"Client Key");
                let stored_key = D::digest(&client_key).to_vec();
                let auth_message = format!("{bare},{server_first},{without_proof}");
                let signature = mac::<D>(&stored_key, auth_message.as_bytes());
                let proof = b64.decode(proof).unwrap_or_default();
                let key: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
                if proof.len() != signature.len() || D::digest(&key).to_vec() != stored_key {
                    return (b"e=invalid-proof".to_vec(), false);
                }
                let server_key = mac::<D>(&salted, b"Server Key");
                let v = b64.encode(mac::<D>(&server_key, auth_message.as_bytes()));
                (format!("v={v}").into_bytes(), true)
            }
        }
    }
}

impl Broker {
    pub fn start(o: Options) -> Broker {
        let listener = std::net::TcpListener::bind(("127.0.0.1", o.port)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let fetches = Arc::new(AtomicU64::new(0));
        let authenticated = Arc::new(AtomicU64::new(0));
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
        let ctx = Ctx { port, state: state.clone(), fetches: fetches.clone(), authenticated: authenticated.clone(), o };
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let ctx = Arc::new(ctx);
                let mut conns = Vec::new();
                loop {
                    tokio::select! {
                        _ = &mut rx => break,
                        a = listener.accept() => {
                            let Ok((sock, _)) = a else { continue };
                            let ctx = ctx.clone();
                            conns.push(tokio::spawn(async move {
                                match ctx.o.tls.clone() {
                                    Some(cfg) => {
                                        let Ok(tls) = tokio_rustls::TlsAcceptor::from(cfg).accept(sock).await else { return };
                                        ctx.serve(tls).await;
                                    }
                                    None => ctx.serve(sock).await,
                                }
                            }));
                        }
                    }
                }
                for c in conns {
                    c.abort();
                }
            });
        });
        Broker { port, state, fetches, authenticated, stop: Some(tx), thread: Some(thread) }
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Creates `topic` with `partitions` partitions (kept if it exists).
    pub fn create_topic(&self, topic: &str, partitions: usize) {
        let mut s = self.state.lock().unwrap();
        let t = s.topics.entry(topic.to_string()).or_default();
        while t.len() < partitions {
            t.push(Vec::new());
        }
    }

    /// Appends `msgs` to `topic`/`partition` (creating them).
    pub fn produce(&self, topic: &str, partition: usize, msgs: Vec<Msg>) {
        self.create_topic(topic, partition + 1);
        self.state.lock().unwrap().topics.get_mut(topic).unwrap()[partition].extend(msgs);
    }

    /// Copies another broker's topics (a broker "restarted" on the same port keeps its log).
    pub fn copy_from(&self, other: &Broker) {
        let topics = other.state.lock().unwrap().topics.clone();
        self.state.lock().unwrap().topics = topics;
    }
}

struct Ctx {
    port: u16,
    state: Arc<Mutex<State>>,
    fetches: Arc<AtomicU64>,
    authenticated: Arc<AtomicU64>,
    o: Options,
}

impl Clone for State {
    fn clone(&self) -> Self {
        State { topics: self.topics.clone() }
    }
}

fn name(s: &str) -> TopicName {
    TopicName::from(StrBytes::from_string(s.to_string()))
}

impl Ctx {
    async fn serve<S: AsyncRead + AsyncWrite + Unpin>(&self, mut sock: S) {
        let mut authed = self.o.sasl.is_none();
        let mut scram = Scram::default();
        loop {
            let Ok(len) = sock.read_i32().await else { return };
            let mut frame = vec![0u8; len.max(0) as usize];
            if sock.read_exact(&mut frame).await.is_err() {
                return;
            }
            let mut buf = Bytes::from(frame);
            let key_raw = (&buf[..2]).get_i16();
            let version = (&buf[2..4]).get_i16();
            let Ok(key) = ApiKey::try_from(key_raw) else { return };
            let header = RequestHeader::decode(&mut buf, key.request_header_version(version)).unwrap();
            if !authed && !matches!(key, ApiKey::ApiVersions | ApiKey::SaslHandshake | ApiKey::SaslAuthenticate) {
                return;
            }
            let mut body = BytesMut::new();
            match key {
                ApiKey::ApiVersions => self.api_versions(version).encode(&mut body, version).unwrap(),
                ApiKey::Metadata => {
                    let r = MetadataRequest::decode(&mut buf, version).unwrap();
                    self.metadata(&r).encode(&mut body, version).unwrap()
                }
                ApiKey::ListOffsets => {
                    let r = ListOffsetsRequest::decode(&mut buf, version).unwrap();
                    self.list_offsets(&r).encode(&mut body, version).unwrap()
                }
                ApiKey::Fetch => {
                    let r = FetchRequest::decode(&mut buf, version).unwrap();
                    let resp = self.fetch(&r).await;
                    resp.encode(&mut body, version).unwrap()
                }
                ApiKey::SaslHandshake => {
                    let r = SaslHandshakeRequest::decode(&mut buf, version).unwrap();
                    let mut resp = SaslHandshakeResponse::default();
                    let mechanism = self.o.scram.unwrap_or("PLAIN");
                    resp.mechanisms = vec![StrBytes::from_static_str(mechanism)];
                    if r.mechanism.as_str() != mechanism {
                        resp.error_code = 33; // UNSUPPORTED_SASL_MECHANISM
                    }
                    resp.encode(&mut body, version).unwrap()
                }
                ApiKey::SaslAuthenticate => {
                    let r = SaslAuthenticateRequest::decode(&mut buf, version).unwrap();
                    let mut resp = SaslAuthenticateResponse::default();
                    let parts: Vec<&[u8]> = r.auth_bytes.split(|b| *b == 0).collect();
                    let (ok, failed) = match (&self.o.sasl, self.o.scram) {
                        (Some((u, p)), Some(m)) => {
                            let (answer, proved) = if m == "SCRAM-SHA-512" {
                                scram.step::<sha2::Sha512>(&r.auth_bytes, u, p)
                            } else {
                                scram.step::<sha2::Sha256>(&r.auth_bytes, u, p)
                            };
                            let failed = answer.starts_with(b"e=");
                            resp.auth_bytes = Bytes::from(answer);
                            (proved, failed)
                        }
                        (Some((u, p)), None) => {
                            let ok = parts.len() == 3 && parts[1] == u.as_bytes() && parts[2] == p.as_bytes();
                            (ok, !ok)
                        }
                        (None, _) => (true, false),
                    };
                    if ok {
                        authed = true;
                        self.authenticated.fetch_add(1, Ordering::SeqCst);
                    } else if failed {
                        resp.error_code = 58; // SASL_AUTHENTICATION_FAILED
                        resp.error_message = Some(StrBytes::from_static_str("bad credentials"));
                    }
                    resp.encode(&mut body, version).unwrap()
                }
                _ => return,
            }
            let mut out = BytesMut::new();
            let mut rh = ResponseHeader::default();
            rh.correlation_id = header.correlation_id;
            rh.encode(&mut out, key.response_header_version(version)).unwrap();
            out.extend_from_slice(&body);
            let mut framed = (out.len() as i32).to_be_bytes().to_vec();
            framed.extend_from_slice(&out);
            if sock.write_all(&framed).await.is_err() {
                return;
            }
            let _ = sock.flush().await;
        }
    }

    fn api_versions(&self, version: i16) -> ApiVersionsResponse {
        let mut r = ApiVersionsResponse::default();
        if version > 3 {
            r.error_code = 35; // UNSUPPORTED_VERSION
        }
        for (k, min, max) in [
            (ApiKey::Fetch, 4, 4),
            (ApiKey::ListOffsets, 0, 3),
            (ApiKey::Metadata, 0, 4),
            (ApiKey::ApiVersions, 0, 3),
            (ApiKey::SaslHandshake, 1, 1),
            (ApiKey::SaslAuthenticate, 0, 2),
        ] {
            let mut v = ApiVersion::default();
            v.api_key = k as i16;
            v.min_version = min;
            v.max_version = max;
            r.api_keys.push(v);
        }
        r
    }

    /// The broker and the topics asked for (every topic when none are named).
    fn metadata(&self, req: &MetadataRequest) -> MetadataResponse {
        let asked: Option<Vec<String>> =
            req.topics.as_ref().map(|ts| ts.iter().filter_map(|t| t.name.as_ref().map(|n| n.0.to_string())).collect());
        let mut r = MetadataResponse::default();
        let mut b = MetadataResponseBroker::default();
        b.node_id = BrokerId(0);
        b.host = StrBytes::from_static_str("127.0.0.1");
        b.port = self.port as i32;
        r.brokers.push(b);
        r.controller_id = BrokerId(0);
        for (t, parts) in &self.state.lock().unwrap().topics {
            if asked.as_ref().is_some_and(|a| !a.contains(t)) {
                continue;
            }
            let mut mt = MetadataResponseTopic::default();
            mt.name = Some(name(t));
            for i in 0..parts.len() {
                let mut p = MetadataResponsePartition::default();
                p.partition_index = i as i32;
                p.leader_id = BrokerId(0);
                p.replica_nodes = vec![BrokerId(0)];
                p.isr_nodes = vec![BrokerId(0)];
                mt.partitions.push(p);
            }
            r.topics.push(mt);
        }
        r
    }

    fn list_offsets(&self, req: &ListOffsetsRequest) -> ListOffsetsResponse {
        let s = self.state.lock().unwrap();
        let mut r = ListOffsetsResponse::default();
        for t in &req.topics {
            let mut rt = ListOffsetsTopicResponse::default();
            rt.name = t.name.clone();
            for p in &t.partitions {
                let mut rp = ListOffsetsPartitionResponse::default();
                rp.partition_index = p.partition_index;
                let len = s.topics.get(t.name.0.as_str()).and_then(|v| v.get(p.partition_index as usize)).map(Vec::len);
                match len {
                    // -2: earliest; -1: latest.
                    Some(n) => rp.offset = if p.timestamp == -2 { 0 } else { n as i64 },
                    None => rp.error_code = 3, // UNKNOWN_TOPIC_OR_PARTITION
                }
                rp.timestamp = -1;
                rt.partitions.push(rp);
            }
            r.topics.push(rt);
        }
        r
    }

    async fn fetch(&self, req: &FetchRequest) -> FetchResponse {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        // Nothing new: wait a little (as max_wait_ms asks), then answer.
        let wanted: Vec<(String, i32, i64)> = req
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(move |p| (t.topic.0.to_string(), p.partition, p.fetch_offset)))
            .collect();
        let deadline =
            tokio::time::Instant::now() + std::time::Duration::from_millis(req.max_wait_ms.clamp(0, 200) as u64);
        loop {
            let any = {
                let s = self.state.lock().unwrap();
                wanted.iter().any(|(t, p, o)| {
                    s.topics.get(t).and_then(|v| v.get(*p as usize)).is_some_and(|m| (m.len() as i64) > *o)
                })
            };
            if any || tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let s = self.state.lock().unwrap();
        let mut r = FetchResponse::default();
        for t in &req.topics {
            let mut rt = FetchableTopicResponse::default();
            rt.topic = t.topic.clone();
            for p in &t.partitions {
                let mut pd = PartitionData::default();
                pd.partition_index = p.partition;
                let Some(msgs) = s.topics.get(t.topic.0.as_str()).and_then(|v| v.get(p.partition as usize)) else {
                    pd.error_code = 3;
                    rt.partitions.push(pd);
                    continue;
                };
                pd.high_watermark = msgs.len() as i64;
                pd.last_stable_offset = msgs.len() as i64;
                if p.fetch_offset > msgs.len() as i64 || p.fetch_offset < 0 {
                    pd.error_code = 1; // OFFSET_OUT_OF_RANGE
                    rt.partitions.push(pd);
                    continue;
                }
                let from = p.fetch_offset as usize;
                let records: Vec<Record> = msgs[from..]
                    .iter()
                    .take(100)
                    .enumerate()
                    .map(|(i, m)| Record {
                        transactional: false,
                        control: false,
                        delete_horizon: false,
                        partition_leader_epoch: 0,
                        producer_id: -1,
                        producer_epoch: -1,
                        timestamp_type: TimestampType::Creation,
                        offset: (from + i) as i64,
                        sequence: (from + i) as i32,
                        timestamp: m.ts_ms,
                        key: m.key.clone().map(Bytes::from),
                        value: Some(Bytes::from(m.value.clone())),
                        headers: Default::default(),
                    })
                    .collect();
                if !records.is_empty() {
                    let mut rb = BytesMut::new();
                    RecordBatchEncoder::encode(
                        &mut rb,
                        records.iter(),
                        &RecordEncodeOptions { version: 2, compression: Compression::None },
                    )
                    .unwrap();
                    pd.records = Some(rb.freeze());
                } else {
                    pd.records = Some(Bytes::new());
                }
                rt.partitions.push(pd);
            }
            r.responses.push(rt);
        }
        r
    }
}
