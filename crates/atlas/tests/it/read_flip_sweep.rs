//! Flips every byte of every fixture's segments, opens each damaged copy from
//! an in-memory operator and reads everything: the process never panics or
//! aborts. Run with `--nocapture` to see which flips produced which outcome.

#![cfg(test)]

use crate::read_support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use atlas::{Atlas, AtlasError, VerifyOptions};
use atlas_manifest::{collection_json, stats_json};
use futures::StreamExt;
use read_support::{fixture_dir, memory};
use serde_json::{Value, json};

/// Everything the read path can be asked, as one JSON value (first error wins).
async fn exercise(atlas: &Atlas) -> Result<Value, AtlasError> {
    let member = atlas.lone_member().expect("a lone collection");
    let mut doc = collection_json(&member, true).await?;
    let mut extra = Vec::new();
    for array in atlas.array_names().await? {
        let folded = atlas.array_stats(&array).await?;
        let rows = atlas.array_stats_by_dataset(&array).await?;
        extra.push(json!([array, stats_json(folded.as_ref()), rows.len()]));
    }
    let mut keys: Vec<String> = Vec::new();
    for view in atlas.datasets().await? {
        for (key, _) in view.schema().attributes() {
            if !keys.iter().any(|k| k == key) {
                keys.push(key.to_owned());
            }
        }
    }
    for key in &keys {
        let column = atlas.attributes_by_dataset(None, key).await?;
        extra.push(json!([key, column.len()]));
    }
    doc["extra"] = Value::Array(extra);
    Ok(doc)
}

/// The innermost object key on the path to the first difference (`values`, `stats`, ...).
fn first_difference(a: &Value, b: &Value) -> String {
    fn walk(a: &Value, b: &Value, key: &str) -> Option<String> {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                for (k, v) in x {
                    match y.get(k) {
                        Some(w) => {
                            if let Some(found) = walk(v, w, k) {
                                return Some(found);
                            }
                        }
                        None => return Some(k.clone()),
                    }
                }
                (x.len() != y.len()).then(|| key.to_owned())
            }
            (Value::Array(x), Value::Array(y)) => {
                for (v, w) in x.iter().zip(y) {
                    if let Some(found) = walk(v, w, key) {
                        return Some(found);
                    }
                }
                (x.len() != y.len()).then(|| key.to_owned())
            }
            _ => (a != b).then(|| key.to_owned()),
        }
    }
    let key = walk(a, b, "document").unwrap_or_else(|| "?".to_owned());
    match key.as_str() {
        "min" | "max" | "null_count" | "row_count" | "float" | "int" | "uint" | "bytes"
        | "timestamp_ns" => "statistics".to_owned(),
        "value" => "attribute value".to_owned(),
        "stats" => "statistics".to_owned(),
        "extra" => "folded statistics".to_owned(),
        other => other.to_owned(),
    }
}

/// A coarse name for where an error came from, by its message.
fn classify(err: &AtlasError) -> String {
    // The whole chain: each error names its own layer, the finding is a cause.
    let text = atlas::ErrorReport::new(err).to_string();
    let class = if text.contains("array-format failed") {
        "panic inside array-format, caught"
    } else if text.contains("does not validate") {
        "segment footer refused by rkyv validation"
    } else if text.contains("ARRF")
        || text.contains("trailer")
        || text.contains("-byte array-format")
    {
        "segment trailer refused"
    } else if text.contains("footer version") {
        "segment footer version refused"
    } else if text.contains("block ")
        && (text.contains("claims")
            || text.contains("past the data region")
            || text.contains("carries id"))
    {
        "block table validated"
    } else if text.contains("statistics count")
        || text.contains("chunk")
        || text.contains("dimension names")
        || text.contains("nulls in")
    {
        "array validated (shape, chunk table, counts)"
    } else if text.contains("defined twice") {
        "two arrays of one name in a segment"
    } else if text.contains("outside the footer's pool") {
        "attribute naming a pool entry the footer lacks"
    } else if text.contains("refused it") {
        "array-format refused the segment at open"
    } else if text.contains("but stored as") {
        "attribute value of another type than declared"
    } else if text.contains("declares")
        || text.contains("holds no array")
        || text.contains("of them")
        || text.contains("the segment holds")
    {
        "segment disagrees with the container footer"
    } else if text.contains("reading") {
        "array-format read error (codec or decode)"
    } else {
        return format!("other: {text}");
    };
    let variant = match err {
        AtlasError::CorruptCollection { .. } => "CorruptCollection",
        AtlasError::CorruptSegment { .. } => "CorruptSegment",
        AtlasError::Io(_) => "Io",
        _ => "other variant",
    };
    format!("{variant}: {class}")
}

#[derive(Default)]
struct Tally {
    outcomes: BTreeMap<String, u64>,
}

/// XOR 0xFF at every segment byte; set `ATLAS_FLIP_SWEEP=exhaustive` to also
/// flip the lowest and the highest bit of every byte (three times as long).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flipping_any_segment_byte_never_panics_or_aborts() {
    let exhaustive = std::env::var("ATLAS_FLIP_SWEEP").is_ok_and(|v| v == "exhaustive");
    let patterns: &[u8] = if exhaustive {
        &[0xFF, 0x01, 0x80]
    } else {
        &[0xFF]
    };
    sweep(patterns).await;
}

async fn sweep(patterns: &[u8]) {
    // Panics inside dependencies are expected (atlas-segment catches them): count them quietly.
    let dependency_panics = Arc::new(AtomicU64::new(0));
    let counter = dependency_panics.clone();
    let panic_sites: Arc<std::sync::Mutex<BTreeMap<String, u64>>> = Arc::default();
    let sites = panic_sites.clone();
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let in_dependency = info
            .location()
            .is_some_and(|l| l.file().contains(".cargo/registry") || l.file().contains("/rustc/"));
        if in_dependency {
            counter.fetch_add(1, Ordering::Relaxed);
            if let Some(l) = info.location() {
                let file = l.file().rsplit("src/").next().unwrap_or(l.file());
                let krate = l
                    .file()
                    .split('/')
                    .find(|p| p.contains("-0.") || p.contains("-1.") || p.contains("-2."))
                    .unwrap_or("std");
                let payload = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                let payload: String = payload.chars().take(60).collect();
                *sites
                    .lock()
                    .unwrap()
                    .entry(format!("{krate} {file}:{}: {payload}", l.line()))
                    .or_default() += 1;
            }
        } else {
            default_hook(info);
        }
    }));

    let mut grand_total = 0u64;
    for fixture in ["small", "deleted", "mixed"] {
        let original = std::fs::read(fixture_dir(fixture).join("data.atlas")).unwrap();
        let mask = std::fs::read(fixture_dir(fixture).join("deleted.mask")).ok();
        let open = |bytes: Vec<u8>| {
            let mask = mask.clone();
            async move {
                let op = memory();
                op.write("data.atlas", bytes).await.unwrap();
                if let Some(mask) = mask {
                    op.write("deleted.mask", mask).await.unwrap();
                }
                Atlas::open((op, ""), &atlas::OpenOptions::default()).await
            }
        };
        let clean = open(original.clone()).await.unwrap();
        let baseline = exercise(&clean).await.unwrap();
        let segments_end: u64 = 8 + clean
            .lone_member()
            .unwrap()
            .segments()
            .iter()
            .map(|v| v.len)
            .sum::<u64>();
        drop(clean);

        let mut tally = Tally::default();
        let flips: Vec<(usize, u8)> = (8..segments_end as usize)
            .flat_map(|pos| patterns.iter().map(move |&p| (pos, p)))
            .collect();
        let total = flips.len() as u64;
        let results: Vec<String> = futures::stream::iter(flips)
            .map(|(pos, pattern)| {
                let mut bytes = original.clone();
                bytes[pos] ^= pattern;
                let baseline = &baseline;
                let open = &open;
                async move {
                    match open(bytes).await {
                        Err(e) => format!("open failed: {}", classify(&e)),
                        Ok(atlas) => match exercise(&atlas).await {
                            Ok(doc) if doc == *baseline => "read back identical".to_owned(),
                            Ok(doc) => {
                                let deep = atlas
                                    .lone_member()
                                    .unwrap()
                                    .verify(&VerifyOptions::new().deep(true))
                                    .await;
                                format!(
                                    "read back different, {} ({})",
                                    if deep.is_sound() {
                                        "undetected even by verify --deep"
                                    } else {
                                        "caught only by verify --deep"
                                    },
                                    first_difference(baseline, &doc)
                                )
                            }
                            Err(e) => classify(&e),
                        },
                    }
                }
            })
            .buffer_unordered(4)
            .collect()
            .await;
        for r in results {
            *tally.outcomes.entry(r).or_default() += 1;
        }
        grand_total += total;
        println!(
            "\n{fixture}: {total} flips (XOR {patterns:02X?} at each of {} segment bytes)",
            segments_end - 8
        );
        for (outcome, n) in &tally.outcomes {
            println!("  {n:>6}  {outcome}");
        }
        assert!(
            !tally.outcomes.keys().any(|k| k.starts_with("other")),
            "unclassified outcomes: {:?}",
            tally.outcomes
        );
    }
    let _ = std::panic::take_hook();
    println!(
        "\n{grand_total} damaged copies read without a panic escaping; {} panics inside dependencies were caught:",
        dependency_panics.load(Ordering::Relaxed)
    );
    for (site, n) in panic_sites.lock().unwrap().iter() {
        println!("  {n:>6}  {site}");
    }
}
