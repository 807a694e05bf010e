//! `atlas checksum` writes the sidecar; `atlas verify --deep` then names the
//! part a damaged byte is in.

#![cfg(test)]

use crate::common;

use common::{atlas, copy_fixture, json_of, s, stdout_of};

#[test]
fn checksum_then_a_flipped_byte_makes_verify_deep_fail_naming_the_segment() {
    let dir = copy_fixture("small");
    let container = dir.path().join("data.atlas");
    let size = std::fs::metadata(&container).unwrap().len();

    let wrote = json_of(&["checksum", s(dir.path())]);
    assert_eq!(wrote["sidecar"], "data.atlas.crc32c");
    assert_eq!(wrote["algorithm"], "crc32c");
    let parts: Vec<&str> = wrote["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["part"].as_str().unwrap())
        .collect();
    assert!(parts.contains(&"segment temperature"), "{parts:?}");
    assert!(parts.contains(&"segment _datasets"), "{parts:?}");
    assert_eq!(parts.last(), Some(&"footer"), "no mask in `small`");
    assert_eq!(
        wrote["bytes"].as_u64(),
        Some(size - 8),
        "every byte but the header"
    );
    assert!(dir.path().join("data.atlas.crc32c").is_file());

    // Other readers ignore the sidecar; a deep verify checks it.
    assert_eq!(
        json_of(&["ls", s(dir.path())]),
        json_of(&["ls", s(&common::fixture("small"))])
    );
    let sound = stdout_of(&["verify", "--deep", s(dir.path())]);
    assert!(
        sound.contains(&format!(
            "ok       checksums: {} parts match data.atlas.crc32c",
            parts.len() + 1
        )),
        "{sound}"
    );

    // Segment "temperature" starts right after the 8-byte header.
    let mut bytes = std::fs::read(&container).unwrap();
    bytes[30] ^= 0x01;
    std::fs::write(&container, &bytes).unwrap();
    let out = atlas()
        .args(["verify", "--deep", s(dir.path())])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let line = stdout
        .lines()
        .find(|l| l.starts_with("PROBLEM  checksums:"))
        .unwrap_or_else(|| panic!("no checksum problem: {stdout}"));
    assert!(
        line.starts_with("PROBLEM  checksums: segment temperature: crc32c 0x"),
        "{line}"
    );
    assert_eq!(
        stdout.matches("PROBLEM  checksums:").count(),
        1,
        "only the damaged segment: {stdout}"
    );
}

#[test]
fn checksum_prints_each_part_it_wrote() {
    let dir = copy_fixture("deleted");
    let text = stdout_of(&["checksum", s(dir.path())]);
    for needle in [
        "segment _datasets",
        "footer",
        "mask",
        "wrote data.atlas.crc32c",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
}
