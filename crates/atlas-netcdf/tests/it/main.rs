//! NetCDF ingest's behaviour, one test binary: each module is one area of it
//! (sharing a binary saves a link of the whole dependency tree per area).

#![cfg(test)]

mod common;

mod cf_matches_atlas_python;
mod conventions;
mod corpus;
mod feed;
mod gdac_real;
mod ingest;
mod order;
mod raw;
mod sync_measure;
mod text;
