//! Validation of a parsed pipeline file: every section checked, every problem collected.
//!
//! Each section has its own module; they share the [`checker::Checker`] that records problems
//! with their positions and keeps going, so one run reports everything wrong with a file.

mod checker;
mod cycles;
mod document;
mod duplicates;
mod executor;
mod json;
mod ladder;
mod models;
mod needs;
mod params;
mod repos;
mod roles;
mod section;
mod steps;

pub use document::validate;
