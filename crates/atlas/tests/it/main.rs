//! The facade's behaviour, one test binary: each module is one area of it
//! (sharing a binary saves a link of the whole dependency tree per area).

#![cfg(test)]

mod emulator_support;
mod query_support;
mod read_support;
mod s3_support;
mod write_support;

mod azure;
mod error_chain;
mod faults_s3;
mod gcs;
mod index;
mod one_handle;
mod open_address;
mod query_fixtures;
mod query_profiles;
mod query_table;
mod read_corruption;
mod read_decode_once;
mod read_delete;
mod read_fixtures;
mod read_flip_sweep;
mod read_requests;
mod read_s3;
mod serde;
mod set_adopt;
mod set_commit_at;
mod set_compact_race;
mod set_integrity;
mod set_read;
mod set_simulation;
mod set_sort;
mod set_summary;
mod shapes_by_dataset;
mod verify;
mod write_errors;
mod write_failure;
mod write_fixtures;
mod write_parallel_commit;
mod write_rewrite;
mod write_roundtrip;
mod write_s3;
mod write_through_reader;
mod write_wire;
