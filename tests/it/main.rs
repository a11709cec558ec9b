//! The integration tests: one binary, one module per area, shared helpers in `common`.

mod arms;
mod async_items;
mod chosen;
mod claims;
mod common;
mod controls;
mod corpus;
mod demo;
mod dsl;
mod engine;
mod environments;
mod faults;
mod figures;
mod foreach_keys;
mod hostile;
mod invariants;
mod layering;
mod local_model;
mod mining;
mod models;
mod oracle;
mod shipped;
mod signals;
mod slurm;
mod stats;
mod view;
