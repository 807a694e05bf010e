//! The dataset index target: arbitrary bytes as `data.atlas.index` beside a
//! valid container (the `mixed` conformance fixture), then every question
//! the index may answer, and a verify that compares it with the footers.
//! Whatever the bytes, answers come from the index or from the footers;
//! nothing panics. Seeds are the fixture's real index ([`index_seed`]), so
//! mutations reach past the footer check into the column chunks.

use atlas::{Atlas, CatalogueOptions, IndexOptions, OpenOptions, Predicate, VerifyOptions};
use opendal::Operator;
use opendal::services::Memory;

use crate::block_on;

/// The container the index bytes are put beside.
const CONTAINER: &[u8] = include_bytes!("../../../testdata/v8/mixed/data.atlas");

/// Puts `index` beside the fixture container and asks everything an index answers.
pub fn index(data: &[u8]) {
    block_on(exercise(data));
}

async fn beside(index: Option<&[u8]>) -> Option<Operator> {
    let op = Operator::new(Memory::default()).ok()?;
    op.write("c/data.atlas", CONTAINER.to_vec()).await.ok()?;
    if let Some(index) = index {
        op.write("c/data.atlas.index", index.to_vec()).await.ok()?;
    }
    Some(op)
}

async fn exercise(index: &[u8]) {
    let Some(op) = beside(Some(index)).await else {
        return;
    };
    let Ok(atlas) = Atlas::open((op, "c/"), &OpenOptions::default()).await else {
        panic!("the fixture container opens whatever lies beside it");
    };
    let Some(member) = atlas.lone_member() else {
        return;
    };
    let _ = member.has_index().await;
    let arrays = atlas.array_names().await.unwrap_or_default();
    let mut keys: Vec<String> = Vec::new();
    for dataset in atlas.datasets().await.unwrap_or_default() {
        for (key, _) in dataset.schema().attributes() {
            if !keys.iter().any(|k| k == key) {
                keys.push(key.to_owned());
            }
        }
    }
    for array in &arrays {
        let _ = atlas.array_stats(array).await;
        let _ = atlas.array_stats_by_dataset(array).await;
        if let Ok(p) = Predicate::parse(&format!("exists {array} and not {array}.nulls > 3")) {
            let _ = atlas.select(&p).await;
        }
    }
    for key in &keys {
        let _ = atlas.attributes_by_dataset(None, key).await;
    }
    let _ = atlas.catalogue(&CatalogueOptions::default()).await;
    let _ = member.verify(&VerifyOptions::default()).await;
}

/// The fixture container's real index, as `atlas index` writes it: the
/// corpus seed, and the start of the mutations the tests replay.
pub fn index_seed() -> Vec<u8> {
    let mut out = Vec::new();
    block_on(async {
        let Some(op) = beside(None).await else {
            return;
        };
        let Ok(atlas) = Atlas::open((op.clone(), "c/"), &OpenOptions::default()).await else {
            return;
        };
        if atlas.write_index(&IndexOptions::default()).await.is_ok()
            && let Ok(bytes) = op.read("c/data.atlas.index").await
        {
            out = bytes.to_vec();
        }
    });
    out
}
