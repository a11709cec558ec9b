//! What can go wrong when `claimflow view` reads, compares or serves results pages.

use std::net::SocketAddr;
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
    /// Another program listens on the port `--serve` was asked to use.
    #[error(
        "listen on {address}: the address is in use by another program; stop it, or choose \
         another port with `--port N` (`--port 0` takes any free one)"
    )]
    PortInUse { address: SocketAddr },
    /// The server could not listen for another reason (a port below 1024, no loopback). The
    /// cause is in the message: the command line reports this error as one line.
    #[error("listen on {address}: {cause}")]
    Listen {
        address: SocketAddr,
        cause: std::io::Error,
    },
    /// The server could not start its runtime.
    #[error("start the server for {}: {cause}", root.display())]
    Runtime {
        root: PathBuf,
        cause: std::io::Error,
    },
}
