//! Helpers shared by the integration tests: counted operators.

#![allow(dead_code)]

use atlas_io::CountingLayer;
use opendal::Operator;

/// A memory operator wrapped in a fresh counting layer.
pub fn counted_memory() -> (Operator, CountingLayer) {
    let layer = CountingLayer::new();
    let op = Operator::new(opendal::services::Memory::default())
        .expect("memory operator")
        .layer(layer.clone());
    (op, layer)
}
