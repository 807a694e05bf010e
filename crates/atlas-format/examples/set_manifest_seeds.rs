//! Writes a few set manifests (and their raw MessagePack bodies) as seeds for
//! the `set_manifest` fuzz target.
//!
//! `cargo run -p atlas-format --example set_manifest_seeds -- fuzz/corpus/set_manifest`

use atlas_format::{
    AttributeSummary, ChecksumAlgorithm, DType, MemberChecksums, MemberEntry, NameRange,
    SegmentChecksum, SetManifest, Timestamp, Value, VariableSummary, crc32c,
};

fn variable(name: &str, dtype: DType, bounds: Option<(Value, Value)>) -> VariableSummary {
    let (min, max) = match bounds {
        Some((min, max)) => (Some(min), Some(max)),
        None => (None, None),
    };
    VariableSummary {
        name: name.into(),
        dtype,
        count: 100,
        nulls: 3,
        min,
        max,
    }
}

fn member(id: &str, created_unix_ms: i64, rich: bool) -> MemberEntry {
    let variables = if rich {
        vec![
            variable(
                "TEMP",
                DType::Float32,
                Some((Value::Float(-1.5), Value::Float(30.25))),
            ),
            variable(
                "JULD",
                DType::TimestampNs,
                Some((
                    Value::Timestamp(Timestamp(1_600_000_000_000_000_000)),
                    Value::Timestamp(Timestamp(1_700_000_000_000_000_000)),
                )),
            ),
            variable(
                "CYCLE",
                DType::Int32,
                Some((Value::Int(-1), Value::Int(312))),
            ),
            variable(
                "ID",
                DType::UInt64,
                Some((Value::UInt(1), Value::UInt(u64::MAX))),
            ),
            variable(
                "PLATFORM",
                DType::String,
                Some((
                    Value::String("1900001".into()),
                    Value::String("6903999".into()),
                )),
            ),
            variable(
                "RAW",
                DType::Binary,
                Some((Value::Bytes(vec![0]), Value::Bytes(vec![0xff, 1]))),
            ),
            variable(
                "QC",
                DType::FixedSizeList {
                    child: Box::new(DType::UInt8),
                    size: 4,
                },
                None,
            ),
        ]
    } else {
        vec![variable("TEMP", DType::Float64, None)]
    };
    MemberEntry {
        id: id.into(),
        path: format!("members/{id}"),
        datasets_total: 120,
        datasets_live: 117,
        bytes: 4_813_220,
        created_unix_ms,
        variables,
        attributes: vec![AttributeSummary {
            key: "platform_number".into(),
            min: Value::UInt(1_900_001),
            max: Value::UInt(6_903_999),
        }],
        checksums: MemberChecksums {
            algorithm: ChecksumAlgorithm::Crc32c,
            footer: crc32c(id.as_bytes()),
            segments: vec![SegmentChecksum {
                name: "TEMP".into(),
                checksum: 0xdead_beef,
            }],
            mask: rich.then_some(7),
        },
        names: Some(NameRange {
            first: "R1900001_001".into(),
            last: "R6903999_150".into(),
        }),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: set_manifest_seeds DIR")?,
    );
    std::fs::create_dir_all(&dir)?;
    let mut one = SetManifest::new();
    one.generation = 1;
    one.members = vec![member("a", 1_704_067_200_000, false)];
    let mut three = SetManifest::new();
    three.generation = 7;
    three.members = vec![
        member("2024-01", 1_704_067_200_000, true),
        member("2024-02", 1_706_745_600_000, true),
        member("2024-03", 1_709_251_200_000, false),
    ];
    for (name, manifest) in [
        ("empty", SetManifest::new()),
        ("one", one),
        ("three", three),
    ] {
        std::fs::write(dir.join(format!("{name}.manifest")), manifest.encode()?)?;
        std::fs::write(
            dir.join(format!("{name}.msgpack")),
            rmp_serde::to_vec(&manifest)?,
        )?;
    }
    Ok(())
}
