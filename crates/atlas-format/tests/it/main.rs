//! The v8 bytes' behaviour, one test binary: each module is one area of it
//! (sharing a binary saves a link of the whole dependency tree per area).

#![cfg(test)]

mod common;

mod checksum_sidecar;
mod fixtures;
mod open_protocol;
mod robustness;
mod roundtrip;
mod set_manifest;
mod validation;
mod wire;
