//! Micro-benchmarks of the hot path (criterion): line splitting, JSON
//! escaping, compression (gzip, and snappy as Promtail sends it), stream
//! interning, and the embedded store's selector matcher.
//!
//! Run: `cargo bench --bench micro`.

use std::collections::BTreeMap;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use tailship::client::json::escape_json_into;
use tailship::client::push::gzip;
use tailship::queue::Interner;
use tailship::source::lines::LineSplitter;

fn sample(lines: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..lines {
        out.extend_from_slice(
            format!("2023-11-14T22:13:20.{i:06}Z INFO request method=GET path=/api/v1/orders status=200 dur={}ms id={i:016x}\n", i % 900)
                .as_bytes(),
        );
    }
    out
}

fn splitting(c: &mut Criterion) {
    let data = sample(10_000);
    let mut g = c.benchmark_group("split");
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.bench_function("lines_256k_blocks", |b| {
        b.iter(|| {
            let mut s = LineSplitter::new(0, 256 << 10);
            let mut n = 0usize;
            for block in data.chunks(256 << 10) {
                s.feed(block, |l, _, _| n += l.len());
            }
            n
        })
    });
    g.finish();
}

fn escaping(c: &mut Criterion) {
    let data = sample(10_000);
    let text = String::from_utf8(data).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let mut g = c.benchmark_group("encode");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("escape_json_plain", |b| {
        let mut out = Vec::with_capacity(text.len() * 2);
        b.iter(|| {
            out.clear();
            for l in &lines {
                escape_json_into(&mut out, l);
            }
            out.len()
        })
    });
    let quoted: Vec<String> = lines.iter().map(|l| format!("{{\"msg\":\"{l}\",\"tab\":\"\\t\"}}")).collect();
    g.bench_function("escape_json_quoted", |b| {
        let mut out = Vec::with_capacity(text.len() * 3);
        b.iter(|| {
            out.clear();
            for l in &quoted {
                escape_json_into(&mut out, l);
            }
            out.len()
        })
    });
    g.bench_function("gzip_level1", |b| {
        let body = text.as_bytes().to_vec();
        b.iter_batched(|| body.clone(), |body| gzip(&body, 1).map(|z| z.len()).unwrap_or(0), BatchSize::LargeInput)
    });
    // What Promtail and Alloy send Loki instead (protobuf, snappy-compressed):
    // the compression's share of it, beside gzip's, to weigh taking it.
    g.bench_function("snappy_raw", |b| {
        let body = text.as_bytes().to_vec();
        let mut enc = snap::raw::Encoder::new();
        let mut out = vec![0u8; snap::raw::max_compress_len(body.len())];
        b.iter(|| enc.compress(&body, &mut out).unwrap_or(0))
    });
    let body = text.as_bytes();
    let gz = gzip(body, 1).map(|z| z.len()).unwrap_or(0);
    let sn = snap::raw::Encoder::new().compress_vec(body).map(|z| z.len()).unwrap_or(0);
    println!("compressed size of {} bytes: gzip level 1 {gz}, snappy {sn}", body.len());
    g.finish();
}

fn interning(c: &mut Criterion) {
    let interner = Interner::new();
    let labels: Vec<BTreeMap<String, String>> = (0..64)
        .map(|i| {
            let mut m = BTreeMap::new();
            m.insert("job".to_string(), "app".to_string());
            m.insert("filename".to_string(), format!("/var/log/app/{i}.log"));
            m.insert("level".to_string(), ["INFO", "WARN", "ERROR"][i % 3].to_string());
            m
        })
        .collect();
    c.bench_function("intern_existing_stream", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % labels.len();
            interner.intern(None, labels[i].clone()).labels.len()
        })
    });
}

fn selector(c: &mut Criterion) {
    let sel = tailship::logql::parse_log_query(r#"{job="app", level=~"ERROR|WARN"} |= "orders" != "healthz""#)
        .expect("valid selector");
    let labels = [("job", "app"), ("level", "ERROR"), ("filename", "/var/log/app/1.log")];
    let line = "2023-11-14T22:13:20Z ERROR request method=GET path=/api/v1/orders status=500";
    c.bench_function("store_selector_match", |b| {
        b.iter(|| {
            sel.matches_labels(|name| labels.iter().find(|(k, _)| *k == name).map(|(_, v)| *v))
                && sel.matches_line(line)
        })
    });
}

criterion_group!(benches, splitting, escaping, interning, selector);
criterion_main!(benches);
