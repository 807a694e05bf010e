//! Conditional read-modify-writes against a real S3 protocol server (the
//! in-process one of `atlas-testkit`), from eight threads at once, each with
//! its own runtime and connection pool as separate processes would have.
//!
//! All eight read the same object before any of them writes (a barrier), so
//! every round is a real race on one ETag.

#![cfg(test)]

use std::sync::{Arc, Barrier};

use atlas_io::{UpdateOutcome, WriteGuarantee, update_checked, update_conditionally};
use atlas_testkit::{ACCESS_KEY, BUCKET, REGION, S3Server, SECRET_KEY};
use bytes::Bytes;
use opendal::Operator;
use opendal::services::S3;

const WRITERS: u32 = 8;
const EACH: u32 = 5;

fn operator(endpoint: &str, root: &str) -> Operator {
    let builder = S3::default()
        .bucket(BUCKET)
        .endpoint(endpoint)
        .region(REGION)
        .access_key_id(ACCESS_KEY)
        .secret_access_key(SECRET_KEY)
        .root(root)
        .disable_config_load()
        .disable_ec2_metadata();
    atlas_io::install_http_transport();
    Operator::new(builder).unwrap()
}

fn parse(bytes: &[u8]) -> Vec<u32> {
    String::from_utf8_lossy(bytes)
        .split(',')
        .filter_map(|s| s.parse().ok())
        .collect()
}

/// Eight writers each add their own five numbers to one comma-separated set
/// object (a stand-in for the deletion mask) with one read-modify-write;
/// returns how many of the 40 numbers are in the object afterwards and the
/// writers' outcomes.
fn race(endpoint: &str, root: &str, read_back: bool) -> (usize, Vec<UpdateOutcome>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(operator(endpoint, root).write("set", Bytes::from_static(b"")))
        .unwrap();
    let barrier = Arc::new(Barrier::new(WRITERS as usize));
    let threads: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (endpoint, root, barrier) = (endpoint.to_owned(), root.to_owned(), barrier.clone());
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let op = operator(&endpoint, &root);
                let mut first = true;
                let update = |cur: Option<&[u8]>| {
                    let mut set = parse(cur.unwrap_or_default());
                    set.extend(w * EACH..(w + 1) * EACH);
                    set.sort_unstable();
                    set.dedup();
                    if std::mem::take(&mut first) {
                        barrier.wait();
                    }
                    let text: Vec<String> = set.iter().map(u32::to_string).collect();
                    Ok::<_, ()>(Some(Bytes::from(text.join(","))))
                };
                let mine = |stored: &[u8]| {
                    let set = parse(stored);
                    (w * EACH..(w + 1) * EACH).all(|n| set.contains(&n))
                };
                rt.block_on(async {
                    if read_back {
                        update_checked(&op, "set", 12, update, mine).await
                    } else {
                        update_conditionally(&op, "set", 12, update).await
                    }
                })
                .unwrap()
            })
        })
        .collect();
    let outcomes: Vec<UpdateOutcome> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let stored = rt.block_on(operator(endpoint, root).read("set")).unwrap();
    let set = parse(&stored.to_vec());
    assert!(set.iter().all(|&n| n < WRITERS * EACH), "{set:?}");
    (set.len(), outcomes)
}

#[test]
fn eight_racing_conditional_updates_all_survive_when_the_server_s_conditions_are_atomic() {
    let server = S3Server::start();
    for (round, read_back) in [(0, false), (1, true)] {
        let (kept, outcomes) = race(server.endpoint(), &format!("/atomic-{round}/"), read_back);
        assert_eq!(kept, (WRITERS * EACH) as usize, "read-back {read_back}");
        assert!(
            outcomes
                .iter()
                .all(|o| o.guarantee == WriteGuarantee::Conditional && !o.lost_conditional_write),
            "{outcomes:?}"
        );
        // One writer wins each round of the race; the rest re-read and retry.
        assert!(outcomes.iter().any(|o| o.attempts > 1), "{outcomes:?}");
    }
}

/// `s3s-fs` unmodified checks If-Match and then writes with nothing held in
/// between: racing writers all pass the check and overwrite each other.
/// Without the read-back our client believes them; with it, a writer whose
/// change is missing when it looks merges and writes again. Prints the
/// numbers (`--nocapture`) that docs/reliability.md quotes.
#[test]
fn on_a_server_whose_conditions_race_the_read_back_recovers_lost_updates() {
    let server = S3Server::raw();
    let rounds = 5;
    let (mut unchecked, mut checked, mut redone) = (0, 0, 0);
    for round in 0..rounds {
        unchecked += race(server.endpoint(), &format!("/raw-off-{round}/"), false).0;
        let (kept, outcomes) = race(server.endpoint(), &format!("/raw-on-{round}/"), true);
        checked += kept;
        redone += outcomes.iter().filter(|o| o.lost_conditional_write).count();
    }
    let total = rounds * (WRITERS * EACH) as usize;
    eprintln!(
        "unmodified s3s-fs, {rounds} rounds of {WRITERS} writers x {EACH}: \
         without read-back {unchecked}/{total} kept, with read-back {checked}/{total} kept \
         ({redone} writes found lost and redone)"
    );
    // Without the check the race loses updates: the server really does race.
    assert!(
        unchecked < total,
        "no update was lost without the read-back"
    );
    assert!(checked > unchecked, "with {checked}, without {unchecked}");
}
