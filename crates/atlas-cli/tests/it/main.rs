//! The command line's behaviour, one test binary: each module is one area of it
//! (sharing a binary saves a link of the whole dependency tree per area).

#![cfg(test)]

mod common;

mod catalogue;
mod checksum;
mod crash;
mod create;
mod emulators;
mod errors;
mod export;
mod fixtures;
mod remote;
mod s3;
mod set_faults;
mod sets;
mod sync;
mod workflows;
