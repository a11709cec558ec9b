//! The integration tests: one binary, one module per area, shared helpers in `common`.

mod claims;
mod common;
mod corpus;
mod dsl;
mod engine;
mod mining;
mod oracle;
mod stats;
