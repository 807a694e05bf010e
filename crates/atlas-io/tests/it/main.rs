//! The transport's behaviour, one test binary: each module is one area of it
//! (sharing a binary saves a link of the whole dependency tree per area).

#![cfg(test)]

mod common;

mod counting;
mod leftovers_s3;
mod mask_store;
mod mask_store_s3;
mod read;
mod retry;
mod split_reads;
mod transport;
