//! claimflow decides which stored claims about a code repository a commit has made false, and measures
//! how well each strategy for deciding it does against an execution oracle.
//!
//! The crate is a small build system specialised to that benchmark: a YAML pipeline
//! ([`pipeline`]) declares a DAG of steps; each step kind ([`steps`]) splits its work into items; every
//! item is keyed by blake3 over a canonical record of what can change its result ([`cache`]), so the
//! executor ([`engine`]) computes only what is missing. The domain lives beside the engine: mining
//! commits and claims ([`mining`], [`python`]), the execution oracle ([`oracle`]), the arms that predict
//! invalidation ([`arms`]) and the statistics and report ([`stats`]). [`records`] holds the result
//! records that users read.

pub mod arms;
pub mod cache;
pub mod check;
pub mod cli;
pub mod controls;
pub mod corpus;
pub mod engine;
pub mod local_model;
pub mod mining;
pub mod models;
pub mod oracle;
pub mod pipeline;
pub mod process;
pub mod process_groups;
pub mod progress;
pub mod python;
pub mod records;
pub mod sandbox;
pub mod slurm;
pub mod stats;
pub mod steps;
pub mod syntax;
pub mod view;
