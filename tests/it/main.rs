//! The integration tests: one binary, one module per area, shared helpers in `common`.

mod arms;
mod async_items;
mod claims;
mod common;
mod corpus;
mod demo;
mod dsl;
mod engine;
mod environments;
mod foreach_keys;
mod mining;
mod oracle;
mod signals;
mod stats;
