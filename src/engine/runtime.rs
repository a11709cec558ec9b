//! The engine's one tokio runtime: async items (model requests) run on it, and the clients they
//! share (HTTP connection pools, which belong to the runtime that made them) live as long as it.
//! It is made on first use, so a run with no async item starts no threads for it.

use std::sync::LazyLock;

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("claimflow-async")
        .enable_all()
        .build()
        .expect("a tokio runtime starts")
});

/// The runtime every async item of every run in this process runs on.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    &RUNTIME
}
