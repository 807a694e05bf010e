//! The `atlas` command (being built).

fn main() {}
