//! The whole path on Azure Blob Storage's emulator, Azurite, which
//! `scripts/azurite.sh` installs from npm (cached under target/azurite),
//! starts on 127.0.0.1 and reuses: create, open (request count), read
//! everything, delete, verify, rewrite, and eight concurrent deleters.
//!
//! A missing Azurite fails these tests with the script's name; it never skips.

use std::process::Command;
use std::sync::OnceLock;

use atlas::{Atlas, AtlasWriter, VerifyOptions, WriteGuarantee, WriterConfig};
use atlas_io::CountingLayer;
use ndarray::ArrayD;
use opendal::Operator;
use opendal::services::Azblob;

/// Azurite's connection string; the first call starts it.
fn connection_string() -> &'static str {
    static CONN: OnceLock<String> = OnceLock::new();
    CONN.get_or_init(|| {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/azurite.sh");
        let out = Command::new("bash")
            .arg(script)
            .output()
            .unwrap_or_else(|e| {
                panic!("Azurite is needed: scripts/azurite.sh could not run ({e})")
            });
        assert!(
            out.status.success(),
            "Azurite is needed and scripts/azurite.sh did not start it (node and npm required): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    })
}

fn azure(root: &str) -> (Operator, CountingLayer) {
    let builder = Azblob::from_connection_string(connection_string())
        .unwrap()
        .container("atlas-test")
        .root(root);
    let counting = CountingLayer::new();
    (
        Operator::new(builder).unwrap().layer(counting.clone()),
        counting,
    )
}

/// One runtime for every test here. OpenDAL's transport is one reqwest client
/// per process, and Azurite keeps connections alive: a connection pooled by a
/// runtime that has ended fails the next request that picks it up ("dispatch
/// task is gone"), so tests and deleters share this runtime.
fn rt() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    })
}

fn unique(test: &str) -> String {
    format!(
        "/{test}-{}-{}/",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

fn name(i: usize) -> String {
    format!("R690{i:04}_001.nc")
}

async fn write_profiles(op: &Operator, count: usize) {
    let writer = AtlasWriter::create(op.clone(), "argo", WriterConfig::default())
        .await
        .unwrap();
    for i in 0..count {
        let mut ds = writer.add_dataset(&name(i)).unwrap();
        let levels = 10 + (i % 7) as u64;
        ds.define_array::<f32>("TEMP", &["N_LEVELS"], &[levels], None, Some(99999.0))
            .unwrap();
        let values: Vec<f32> = (0..levels).map(|l| i as f32 + l as f32 / 100.0).collect();
        let data = ArrayD::from_shape_vec(vec![levels as usize], values).unwrap();
        ds.write_array("TEMP", &[0], data.view()).unwrap();
        ds.set_attribute("cycle_number", i as i32).unwrap();
        ds.finish().await.unwrap();
    }
    writer.finish().await.unwrap();
}

/// Every live profile reads back the values `write_profiles` gave it.
async fn check_every_profile(atlas: &Atlas) -> usize {
    let mut n = 0;
    for view in atlas.datasets() {
        let i: usize = view.name()[4..8].parse().unwrap();
        let temp = view
            .read_array::<f32>("TEMP", atlas::Region::all())
            .await
            .unwrap();
        let expected: Vec<f32> = (0..10 + i % 7)
            .map(|l| i as f32 + l as f32 / 100.0)
            .collect();
        assert_eq!(temp.iter().copied().collect::<Vec<_>>(), expected, "{i}");
        assert_eq!(
            view.get_attribute("cycle_number").await.unwrap(),
            Some(atlas::Attr::Int32(i as i32))
        );
        n += 1;
    }
    n
}

#[test]
fn a_collection_on_azurite_is_created_opened_read_deleted_verified_and_rewritten() {
    rt().block_on(round_trip());
}

async fn round_trip() {
    let root = unique("roundtrip");
    let (op, counting) = azure(&root);
    write_profiles(&op, 40).await;

    counting.stats().reset();
    let atlas = Atlas::open(op.clone(), "argo").await.unwrap();
    let open = counting.stats().snapshot();
    eprintln!("open on Azurite: {} requests ({open:?})", open.requests());
    // The tail of the container, and the (absent) mask.
    assert_eq!(open.requests(), 2, "{open:?}");
    assert_eq!(check_every_profile(&atlas).await, 40);

    let outcome = atlas.delete_datasets(&[&name(3), &name(30)]).await.unwrap();
    assert_eq!(outcome.deleted, 2);
    assert_eq!(outcome.guarantee, WriteGuarantee::Conditional);
    let reopened = Atlas::open(op.clone(), "argo").await.unwrap();
    assert_eq!(reopened.dataset_count(), 38);
    assert!(
        reopened.verify(&VerifyOptions::default()).await.is_sound(),
        "verify finds the collection sound"
    );

    let (copy_op, _) = azure(&format!("{root}copy/"));
    let writer = AtlasWriter::create(copy_op.clone(), "argo", WriterConfig::default())
        .await
        .unwrap();
    atlas::rewrite(&reopened, writer, |_, _| {}).await.unwrap();
    let copy = Atlas::open(copy_op, "argo").await.unwrap();
    assert_eq!(copy.list_datasets(), reopened.list_datasets());
    assert_eq!(check_every_profile(&copy).await, 38);
}

#[test]
fn eight_concurrent_deleters_on_azurite_lose_no_delete() {
    let root = unique("deletes");
    rt().block_on(async {
        write_profiles(&azure(&root).0, 40).await;
        // Eight handles, each with its own operator, deleting their own five at once.
        let tasks: Vec<_> = (0..8)
            .map(|t| {
                let root = root.clone();
                tokio::spawn(async move {
                    let atlas = Atlas::open(azure(&root).0, "argo").await.unwrap();
                    let names: Vec<String> = (0..5).map(|k| name(t * 5 + k)).collect();
                    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                    atlas.delete_datasets(&refs).await.unwrap()
                })
            })
            .collect();
        for t in tasks {
            let outcome = t.await.unwrap();
            assert_eq!(outcome.deleted, 5);
            assert_eq!(outcome.guarantee, WriteGuarantee::Conditional);
        }
        let atlas = Atlas::open(azure(&root).0, "argo").await.unwrap();
        assert_eq!(atlas.dataset_count(), 0, "{:?}", atlas.list_datasets());
    });
}
