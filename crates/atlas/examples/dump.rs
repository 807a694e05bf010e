//! Prints a collection as one JSON document in the shape of the conformance
//! manifests (`testdata/v8/*/manifest.json`), through the public API only.
//!
//! `cargo run --release -p atlas --example dump -- <collection-dir>`

use atlas::Atlas;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .ok_or("usage: dump <collection-dir>")?;
    let atlas = Atlas::open(&dir, &atlas::OpenOptions::default()).await?;
    for warning in atlas.mask_warnings() {
        eprintln!("warning: {warning}");
    }
    let doc = atlas_manifest::collection_json(&atlas, true).await?;
    println!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}
