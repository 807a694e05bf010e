//! Decodes a container file and prints what its footer holds.
//!
//! `cargo run -p atlas-format --example inspect -- path/to/data.atlas`

use atlas_format::{DecodeLimits, open_bytes};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: inspect <path/to/data.atlas>")?;
    let bytes = std::fs::read(&path)?;
    let opened = open_bytes(&bytes, DecodeLimits::default())?;
    let footer = &opened.footer;
    println!(
        "{path}: Atlas v{} ({}), {} bytes, footer {} bytes",
        footer.version, footer.codec, opened.container_len, opened.footer_len
    );
    println!("created_unix_ms: {}", footer.created_unix_ms);
    println!("segments:");
    for var in &footer.variables {
        println!(
            "  {:<16} offset {:>10} len {:>10}",
            footer.string(var.name).unwrap_or("?"),
            var.seg_offset,
            var.seg_len
        );
    }
    println!("schemas: {}", footer.schema_pool.len());
    for (ordinal, (name, &schema)) in footer.datasets.iter().enumerate() {
        let Some(view) = footer.schema_view(schema) else {
            continue;
        };
        let arrays: Vec<String> = view
            .arrays()
            .map(|a| format!("{}: {}", a.name(), a.dtype()))
            .collect();
        println!(
            "  #{ordinal} {name} (schema {schema}): {}",
            arrays.join(", ")
        );
    }
    Ok(())
}
