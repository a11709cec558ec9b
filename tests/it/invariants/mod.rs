//! The paper's two named checks of the pipeline's invariants, `repro_smoke` and `test_miner`, as
//! checked assertions with their snapshots in the project's top-level `snapshots/` directory.

pub(crate) mod repro_smoke;
mod test_miner;

/// Runs `body` with insta writing and reading snapshots in the top-level `snapshots/`.
pub fn in_top_level_snapshots(body: impl FnOnce()) {
    let directory = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots");
    insta::with_settings!({snapshot_path => directory, prepend_module_to_snapshot => false}, {
        body();
    });
}
