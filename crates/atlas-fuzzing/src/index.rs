//! The dataset index target: arbitrary bytes as `data.atlas.index` beside a
//! valid container (the `mixed` conformance fixture), then every question
//! the index may answer, and a verify that compares it with the footers.
//! Whatever the bytes, answers come from the index or from the footers;
//! nothing panics. Seeds are the fixture's real index ([`index_seed`]), so
//! mutations reach past the footer check into the column chunks.

use atlas::{
    ArrayData, Atlas, AtlasWriter, CatalogueOptions, IndexOptions, OpenOptions, Order, Predicate,
    Region, VerifyOptions, WriterConfig, ndarray,
};
use futures::StreamExt;
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

/// Datasets of the container [`index_places`] puts its bytes beside: enough
/// that each segment's footer is past what a read takes whole, so reads go
/// by the chunk places the index records.
const PLACED_DATASETS: usize = 2200;

/// The container [`index_places`] uses and its real index, written once per process.
fn placed_fixture() -> Option<&'static (Vec<u8>, Vec<u8>)> {
    static FIXTURE: std::sync::OnceLock<Option<(Vec<u8>, Vec<u8>)>> = std::sync::OnceLock::new();
    FIXTURE
        .get_or_init(|| {
            let mut out = None;
            block_on(async {
                out = write_placed().await;
            });
            out
        })
        .as_ref()
}

/// Dataset `i` holds `X` = `[i, 0.5, fill]` (fill -1) and `S` = `["s{i}"]`.
async fn write_placed() -> Option<(Vec<u8>, Vec<u8>)> {
    let op = Operator::new(Memory::default()).ok()?;
    let writer = AtlasWriter::create((op.clone(), "c/"), &WriterConfig::default())
        .await
        .ok()?;
    for i in 0..PLACED_DATASETS {
        let mut ds = writer.add_dataset(&placed_name(i)).ok()?;
        ds.define_array::<f32>("X", &["n"], &[3], None, Some(-1.0))
            .ok()?;
        let x = ndarray::arr1(&[i as f32, 0.5]).into_dyn();
        ds.write_array("X", &[0], x.view()).ok()?;
        ds.define_array::<String>("S", &["m"], &[1], None, None)
            .ok()?;
        let s = ndarray::arr1(&[format!("s{i}")]).into_dyn();
        ds.write_array("S", &[0], s.view()).ok()?;
        ds.finish().await.ok()?;
    }
    writer.finish().await.ok()?;
    let container = op.read("c/data.atlas").await.ok()?.to_vec();
    let index = op.read("c/data.atlas.index").await.ok()?.to_vec();
    Some((container, index))
}

fn placed_name(i: usize) -> String {
    format!("d{i:05}")
}

/// Puts `index` beside a container of [`PLACED_DATASETS`] datasets and reads
/// through its chunk places: a cold read of one array (a view of that array
/// alone), the next dataset's (views of every row group), a string array,
/// a layout, `read_many` over every dataset, then `verify`. Whatever the
/// bytes, every value read is the one written: a place the index gets wrong
/// is an error or a fallback to the segment footer, never other bytes.
pub fn index_places(data: &[u8]) {
    let Some((container, _)) = placed_fixture() else {
        return;
    };
    block_on(async {
        let Ok(op) = Operator::new(Memory::default()) else {
            return;
        };
        if op.write("c/data.atlas", container.clone()).await.is_err()
            || op.write("c/data.atlas.index", data.to_vec()).await.is_err()
        {
            return;
        }
        let Ok(atlas) = Atlas::open((op, "c/"), &OpenOptions::default()).await else {
            panic!("the fixture container opens whatever lies beside it");
        };
        for i in [1234, 1235, 7, PLACED_DATASETS - 1] {
            let Ok(ds) = atlas.dataset(&placed_name(i)).await else {
                panic!("dataset {i} is in the catalogue whatever the index says");
            };
            if let Ok(x) = ds.read_array::<f32>("X", Region::all()).await {
                assert_eq!(x.as_slice(), Some(&[i as f32, 0.5, -1.0][..]), "X of {i}");
            }
            if let Ok(s) = ds.read_any("S", Region::all()).await
                && let ArrayData::String(s) = s.data()
            {
                assert_eq!(s.iter().cloned().collect::<Vec<_>>(), [format!("s{i}")]);
            }
            let _ = ds.array_layout("X").await;
        }
        let Ok(datasets) = atlas.datasets().await else {
            return;
        };
        let mut many = atlas.read_many(datasets, "X", Region::all(), 8, Order::AsCompleted);
        while let Some((name, read)) = many.next().await {
            if let Ok(x) = read
                && let ArrayData::Float32(x) = x.data()
            {
                let i = name
                    .trim_start_matches('d')
                    .parse::<f32>()
                    .unwrap_or(f32::NAN);
                assert_eq!(x.as_slice(), Some(&[i, 0.5, -1.0][..]), "X of {name}");
            }
        }
        if let Some(member) = atlas.lone_member() {
            let _ = member.verify(&VerifyOptions::default()).await;
        }
    });
}

/// The real index of [`index_places`]'s container: its seed.
pub fn index_places_seed() -> Vec<u8> {
    placed_fixture()
        .map(|(_, index)| index.clone())
        .unwrap_or_default()
}
