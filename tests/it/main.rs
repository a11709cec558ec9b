//! The integration tests: one binary, one module per area, shared helpers in `common`.

mod arms;
mod common;
mod engine;
