//! `claimflow view`: the results page a researcher reads claim by claim. Each run's `report` step
//! writes `results/<name>/index.html`, one self-contained file (no network, everything inlined)
//! with the report's tables and figures, a claims explorer and each claim's page; `claimflow view`
//! prints its path, compares two runs, or serves the results directory on a loopback port.

pub mod compare;
pub mod error;
pub mod escape;
pub mod model;
pub mod page;
pub mod response;
pub mod serve;
pub mod synthetic;

pub use error::ViewError;
pub use model::Inputs;
pub use page::render;

/// The page's file, relative to a results directory.
pub const FILE: &str = "index.html";
