//! What can go wrong when `claimflow view` reads, compares or serves results pages.

use std::path::PathBuf;

/// Why a results page could not be read, compared or served.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// A file could not be read or written.
    #[error("{context} {}", path.display())]
    Io {
        context: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The results directory has no page: no run with a `report` step wrote it yet.
    #[error("no results page at {}: run the pipeline (its `report` step writes the page) first", path.display())]
    NoPage { path: PathBuf },
    /// The page holds no data claimflow can read (not a claimflow page, or an older layout).
    #[error("{}: {problem}; run the pipeline again with this claimflow to rewrite it", path.display())]
    Data { path: PathBuf, problem: String },
    /// The server could not listen.
    #[error("listen on 127.0.0.1:{port}")]
    Listen {
        port: u16,
        #[source]
        source: std::io::Error,
    },
}
