//! The whole path on Azure Blob Storage's emulator, Azurite, which
//! `scripts/azurite.sh` installs from npm (cached under target/azurite),
//! starts on 127.0.0.1 and reuses: create, open (request count), read
//! everything, delete, verify, rewrite, and eight concurrent deleters.
//!
//! A missing Azurite fails these tests with the script's name; it never skips.

#![cfg(test)]

use atlas::{Atlas, WriteGuarantee};
use atlas_io::CountingLayer;
use emulator_support::{name, round_trip, rt, unique, write_profiles};
use opendal::Operator;
use opendal::services::Azblob;

use crate::emulator_support;

fn azure(root: &str) -> (Operator, CountingLayer) {
    let builder = Azblob::from_connection_string(atlas_testkit::azurite())
        .unwrap()
        .container("atlas-test")
        .root(root);
    let counting = CountingLayer::new();
    (
        Operator::new(builder).unwrap().layer(counting.clone()),
        counting,
    )
}

#[test]
fn a_collection_on_azurite_is_created_opened_read_deleted_verified_and_rewritten() {
    rt().block_on(round_trip("Azurite", azure));
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
                    let atlas =
                        Atlas::open((azure(&root).0, "argo"), &atlas::OpenOptions::default())
                            .await
                            .unwrap();
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
        let atlas = Atlas::open((azure(&root).0, "argo"), &atlas::OpenOptions::default())
            .await
            .unwrap();
        assert_eq!(
            atlas.dataset_count().await.unwrap(),
            0,
            "{:?}",
            atlas.dataset_names().await.unwrap()
        );
    });
}
