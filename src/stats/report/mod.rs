//! The report: the paper's tables built from `stats.json`, rendered as Markdown and as one CSV per
//! table.
//!
//! [`tables`] decides what each table holds and which arms fill it; a table whose arms are not in
//! the pipeline is left out with one line saying what would fill it. [`markdown`] and [`csv`] only
//! render.

pub mod csv;
pub mod files;
pub mod markdown;
pub mod tables;
pub mod value;

pub use files::render;
pub use tables::{ReportConfig, Section, Table, build};
pub use value::Value;
