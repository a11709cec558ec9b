//! A Python with numpy, scipy and statsmodels, for tests that cross-check claimflow's numbers
//! against the reference implementations.
//!
//! The virtual environment is created once, outside the repository, under
//! `$CLAIMFLOW_CACHE_DIR/pytools` (default `~/.cache/claimflow/pytools`), and reused: a marker file
//! written after a successful install names the packages it holds. A file lock serializes
//! concurrent first runs.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The packages the statistics cross-checks import.
pub const STATS_PACKAGES: &[&str] = &["numpy", "scipy", "statsmodels"];

/// The cache directory claimflow's tests may keep tools in.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CLAIMFLOW_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").expect("HOME is set");
    PathBuf::from(home).join(".cache").join("claimflow")
}

fn base_interpreter() -> PathBuf {
    let pinned = Path::new("/root/.pyenv/versions/3.11.7/bin/python");
    if pinned.exists() {
        pinned.to_path_buf()
    } else {
        PathBuf::from("python3")
    }
}

fn run(command: &mut Command) {
    let output = command.output().expect("python runs");
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The interpreter of a venv named `name` holding `packages`, created on first use.
pub fn python_with(name: &str, packages: &[&str]) -> PathBuf {
    let root = cache_dir().join("pytools");
    std::fs::create_dir_all(&root).expect("create the pytools cache");
    let venv = root.join(name);
    let python = venv.join("bin").join("python");
    let marker = venv.join("claimflow-ready");
    let wanted = format!("{}\n", packages.join(" "));
    let ready = || std::fs::read_to_string(&marker).is_ok_and(|found| found == wanted);
    if ready() {
        return python;
    }
    let lock = File::create(root.join(format!("{name}.lock"))).expect("create the lock file");
    lock.lock().expect("lock the pytools cache");
    if !ready() {
        if venv.exists() {
            std::fs::remove_dir_all(&venv).expect("remove a half-built venv");
        }
        run(Command::new(base_interpreter())
            .arg("-m")
            .arg("venv")
            .arg(&venv));
        run(Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(packages));
        std::fs::write(&marker, &wanted).expect("write the ready marker");
    }
    python
}
