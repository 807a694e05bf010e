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
    let member = Atlas::open(&dir, &atlas::OpenOptions::default())
        .await?
        .lone_member()
        .ok_or("a collection set: dump one of its members")?;
    for warning in member.mask_warnings() {
        eprintln!("warning: {warning}");
    }
    let doc = atlas_manifest::collection_json(&member, true).await?;
    println!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}
