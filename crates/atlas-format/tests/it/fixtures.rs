//! Every v8 fixture written by another implementation decodes here, agrees
//! with its manifest, and survives decode → encode → decode unchanged.

#![cfg(test)]

use std::path::PathBuf;

use atlas_format::{
    CONTAINER_FILE, CollectionFooter, DecodeLimits, DeletionMask, MASK_FILE, open_bytes,
};
use serde_json::Value;

fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/v8")
}

/// One fixture: its name, container bytes, mask bytes (if any) and manifest.
type Fixture = (String, Vec<u8>, Option<Vec<u8>>, Value);

fn fixtures() -> Vec<Fixture> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(fixtures_dir()).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let container = std::fs::read(dir.join(CONTAINER_FILE)).unwrap();
        let mask = std::fs::read(dir.join(MASK_FILE)).ok();
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
        out.push((name, container, mask, manifest));
    }
    assert!(out.len() >= 4, "the fixtures are missing from testdata/v8");
    out
}

#[test]
fn every_fixture_decodes_and_agrees_with_its_manifest() {
    for (name, bytes, mask, manifest) in fixtures() {
        let opened =
            open_bytes(&bytes, DecodeLimits::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let footer = &opened.footer;
        assert_eq!(
            opened.container_len,
            manifest["container_bytes"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            u64::from(footer.version),
            manifest["format_version"].as_u64().unwrap()
        );
        assert_eq!(
            footer.codec.to_string(),
            manifest["codec"].as_str().unwrap(),
            "{name}"
        );
        assert_eq!(
            footer.datasets.len() as u64,
            manifest["dataset_count_total"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            footer.schema_pool.len() as u64,
            manifest["interned_schemas"].as_u64().unwrap(),
            "{name}"
        );
        // Segments lie back to back from the header to the footer.
        footer.validate_layout(opened.footer_offset()).unwrap();

        for dataset in manifest["datasets"].as_array().unwrap() {
            let ds_name = dataset["name"].as_str().unwrap();
            let ordinal = dataset["ordinal"].as_u64().unwrap() as usize;
            let (index, stored_name, &schema) = footer.datasets.get_full(ds_name).unwrap();
            assert_eq!(index, ordinal, "{name}/{ds_name}");
            assert_eq!(stored_name, ds_name);
            let view = footer.schema_view(schema).unwrap();
            let arrays: Vec<(String, String)> = view
                .arrays()
                .map(|a| (a.name().to_owned(), a.dtype().display_name()))
                .collect();
            let expected: Vec<(String, String)> = dataset["arrays"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| {
                    (
                        a["name"].as_str().unwrap().to_owned(),
                        a["dtype"].as_str().unwrap().to_owned(),
                    )
                })
                .collect();
            assert_eq!(arrays, expected, "{name}/{ds_name} arrays");
            let attrs: Vec<(String, String)> = view
                .attributes()
                .map(|(k, d)| (k.to_owned(), d.display_name()))
                .collect();
            assert_eq!(
                attrs,
                attribute_types(&dataset["attributes"]),
                "{name}/{ds_name} attributes"
            );
            for array in dataset["arrays"].as_array().unwrap() {
                let meta = view.array(array["name"].as_str().unwrap()).unwrap();
                let attrs: Vec<(String, String)> = meta
                    .attributes()
                    .map(|(k, d)| (k.to_owned(), d.display_name()))
                    .collect();
                assert_eq!(
                    attrs,
                    attribute_types(&array["attributes"]),
                    "{name}/{ds_name}/{}",
                    meta.name()
                );
            }
        }

        // The mask names exactly the manifest's deleted datasets.
        let deleted: Vec<&str> = manifest["deleted"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let mask = match mask {
            Some(bytes) => {
                let (mask, warnings) =
                    DeletionMask::decode(&bytes, footer.datasets.len() as u32).unwrap();
                assert!(warnings.is_empty(), "{name}: {warnings:?}");
                mask
            }
            None => DeletionMask::new(),
        };
        let hidden: Vec<&str> = mask
            .iter()
            .map(|o| footer.datasets.get_index(o as usize).unwrap().0.as_str())
            .collect();
        assert_eq!(hidden, deleted, "{name}");
    }
}

fn attribute_types(attrs: &Value) -> Vec<(String, String)> {
    attrs
        .as_array()
        .unwrap()
        .iter()
        .map(|pair| {
            (
                pair[0].as_str().unwrap().to_owned(),
                pair[1]["type"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn decode_encode_decode_is_identity_on_every_fixture() {
    for (name, bytes, _, _) in fixtures() {
        let first = open_bytes(&bytes, DecodeLimits::default()).unwrap().footer;
        let again =
            CollectionFooter::decode(&first.encode().unwrap(), &DecodeLimits::default()).unwrap();
        assert_eq!(first, again, "{name}");
        // Our MessagePack is the same bytes as the other writer's.
        let theirs = atlas_format::decompress_bounded(
            &bytes[bytes.len()
                - 16
                - open_bytes(&bytes, DecodeLimits::default())
                    .unwrap()
                    .footer_len as usize..bytes.len() - 16],
            1 << 20,
        )
        .unwrap();
        assert_eq!(
            first.to_msgpack().unwrap(),
            theirs,
            "{name}: MessagePack differs"
        );
    }
}

#[test]
fn the_fixture_masks_round_trip_byte_for_byte() {
    for (name, _, mask, manifest) in fixtures() {
        if let Some(bytes) = mask {
            let total = manifest["dataset_count_total"].as_u64().unwrap() as u32;
            let (decoded, _) = DeletionMask::decode(&bytes, total).unwrap();
            assert_eq!(decoded.encode(), bytes, "{name}");
        }
    }
}
