//! S3 multipart uploads that a writer started and never completed: listed as
//! leftovers under the collection's prefix and aborted by cleanup, against
//! the in-process S3 server of `atlas-testkit`.

#![cfg(test)]

use std::time::{Duration, SystemTime};

use atlas_io::{
    IoErrorKind, LeftoverKind, MultipartUploads, RetryPolicy, list_leftovers, remove_leftovers,
};
use atlas_testkit::{ACCESS_KEY, BUCKET, FaultPlan, FaultProxy, REGION, S3Server, SECRET_KEY};
use opendal::services::S3Config;
use opendal::{Configurator, Operator};

/// Five MiB: S3's smallest part.
const PART: usize = 5 << 20;

fn config(endpoint: &str, root: &str) -> S3Config {
    S3Config::from_iter([
        ("bucket".to_owned(), BUCKET.to_owned()),
        ("endpoint".to_owned(), endpoint.to_owned()),
        ("region".to_owned(), REGION.to_owned()),
        ("access_key_id".to_owned(), ACCESS_KEY.to_owned()),
        ("secret_access_key".to_owned(), SECRET_KEY.to_owned()),
        ("root".to_owned(), root.to_owned()),
        ("disable_config_load".to_owned(), "true".to_owned()),
        ("disable_ec2_metadata".to_owned(), "true".to_owned()),
    ])
    .unwrap()
}

fn operator(endpoint: &str, root: &str) -> Operator {
    atlas_io::install_http_transport();
    Operator::from_config(config(endpoint, root)).unwrap()
}

/// Starts a multipart upload of `path` that sends two parts and is never
/// completed nor aborted, as if its process had been killed.
async fn abandon_upload(op: &Operator, path: &str) {
    let mut w = op.writer_with(path).chunk(PART).await.unwrap();
    for _ in 0..2 {
        w.write(vec![7u8; PART]).await.unwrap();
    }
    // Hands the second part over; the first went out when the second arrived.
    w.write(vec![7u8; 1]).await.unwrap();
    std::mem::forget(w);
}

#[tokio::test]
async fn an_abandoned_upload_is_listed_under_its_prefix_only_and_cleanup_aborts_it() {
    let server = S3Server::start();
    let proxy = FaultProxy::start(server.endpoint(), FaultPlan::none());
    let op = operator(server.endpoint(), "/coll");
    op.write("data.atlas", vec![1u8; 10]).await.unwrap();
    let started = SystemTime::now();
    abandon_upload(&op, "data.atlas").await;
    // A sibling whose name extends ours: not under `coll/`.
    abandon_upload(&operator(server.endpoint(), "/coll2"), "data.atlas").await;

    // The uploads reached through the proxy, which counts the requests.
    let uploads = MultipartUploads::for_s3(&config(proxy.endpoint(), "/coll")).unwrap();
    let before = proxy.counts().requests;
    let listed = uploads.list("").await.unwrap();
    assert_eq!(
        proxy.counts().requests - before,
        1,
        "one ListMultipartUploads"
    );
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].path, "data.atlas");
    let initiated = listed[0].initiated.expect("the server says when");
    let skew = Duration::from_secs(5);
    assert!(initiated + skew >= started && initiated <= SystemTime::now() + skew);

    let leftovers = list_leftovers(&op, "", Some(&uploads)).await.unwrap();
    assert_eq!(leftovers.len(), 1);
    assert!(
        matches!(&leftovers[0].kind, LeftoverKind::Upload { upload_id } if *upload_id == listed[0].upload_id)
    );
    assert_eq!(leftovers[0].bytes(), None);

    // Minutes old at most: kept by an hour's threshold.
    let now = SystemTime::now();
    let kept = remove_leftovers(&op, "", Some(&uploads), Duration::from_secs(3600), now)
        .await
        .unwrap();
    assert!(kept.is_empty());
    assert_eq!(
        uploads.list("").await.unwrap().len(),
        1,
        "a young upload stays"
    );

    let removed = remove_leftovers(&op, "", Some(&uploads), Duration::ZERO, SystemTime::now())
        .await
        .unwrap();
    assert_eq!(removed, leftovers);
    assert!(uploads.list("").await.unwrap().is_empty());
    assert_eq!(
        op.read("data.atlas").await.unwrap().len(),
        10,
        "the object is untouched"
    );

    // The sibling's upload is still there, seen from the bucket's top.
    let everything = MultipartUploads::for_s3(&config(server.endpoint(), "/")).unwrap();
    let rest = everything.list("").await.unwrap();
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0].path, "coll2/data.atlas");
}

#[tokio::test]
async fn without_the_uploads_only_temp_files_are_listed() {
    let server = S3Server::start();
    let op = operator(server.endpoint(), "/coll");
    abandon_upload(&op, "data.atlas").await;
    assert!(list_leftovers(&op, "", None).await.unwrap().is_empty());
}

#[tokio::test]
async fn aborting_an_upload_already_gone_succeeds_and_wrong_keys_are_refused() {
    let server = S3Server::start();
    let op = operator(server.endpoint(), "/coll");
    abandon_upload(&op, "data.atlas").await;
    let uploads = MultipartUploads::for_s3(&config(server.endpoint(), "/coll")).unwrap();
    let listed = uploads.list("").await.unwrap();
    assert_eq!(listed.len(), 1);
    uploads.abort(&listed[0]).await.unwrap();
    uploads.abort(&listed[0]).await.unwrap();
    assert!(uploads.list("").await.unwrap().is_empty());

    let mut wrong = config(server.endpoint(), "/coll");
    wrong.secret_access_key = Some("not-the-secret".into());
    let err = MultipartUploads::for_s3(&wrong)
        .unwrap()
        .list("")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), IoErrorKind::PermissionDenied, "{err}");
}

#[tokio::test]
async fn a_listing_follows_its_pages_one_request_each() {
    let server = S3Server::start();
    let proxy = FaultProxy::start(server.endpoint(), FaultPlan::none());
    let op = operator(server.endpoint(), "/coll");
    for name in ["a", "b", "c"] {
        abandon_upload(&op, &format!("{name}/data.atlas")).await;
    }
    abandon_upload(&op, "a/data.atlas").await;
    let uploads = MultipartUploads::for_s3(&config(proxy.endpoint(), "/coll"))
        .unwrap()
        .page_size(3);
    let before = proxy.counts().requests;
    let listed = uploads.list("").await.unwrap();
    assert_eq!(proxy.counts().requests - before, 2, "pages of 3 and 1");
    let paths: Vec<&str> = listed.iter().map(|u| u.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "a/data.atlas",
            "a/data.atlas",
            "b/data.atlas",
            "c/data.atlas"
        ]
    );
    assert_ne!(listed[0].upload_id, listed[1].upload_id);
    let only_b = uploads.list("b/").await.unwrap();
    assert_eq!(only_b.len(), 1);
    assert_eq!(only_b[0].path, "b/data.atlas");
}

#[tokio::test]
async fn a_listing_retries_temporary_failures_as_the_policy_says_and_then_is_transient() {
    let server = S3Server::start();
    // Every request answered 500 or 503.
    let proxy = FaultProxy::start(server.endpoint(), FaultPlan::none().with_errors(1000));
    let fast = Duration::from_millis(1);
    for retries in [0, 2] {
        let uploads = MultipartUploads::for_s3(&config(proxy.endpoint(), "/coll"))
            .unwrap()
            .retry(
                RetryPolicy::default()
                    .max_retries(retries)
                    .backoff(fast, fast),
            );
        let before = proxy.counts().requests;
        let err = uploads.list("").await.unwrap_err();
        assert_eq!(err.kind(), IoErrorKind::Transient, "{err}");
        assert_eq!(
            proxy.counts().requests - before,
            retries as u64 + 1,
            "{retries} retries"
        );
    }
    // A failure that passes: the retry finds the listing.
    proxy.set_enabled(false);
    let uploads = MultipartUploads::for_s3(&config(proxy.endpoint(), "/coll")).unwrap();
    assert!(uploads.list("").await.unwrap().is_empty());
}
