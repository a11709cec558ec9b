//! The integration tests: one binary, one module per area, shared helpers in `common`.

mod common;
mod corpus;
mod dsl;
mod engine;
mod foreach_keys;
mod stats;
