//! Environments and claim mining against real interpreters: environments are built once under the
//! claimflow cache (`$CLAIMFLOW_CACHE_DIR` or `~/.cache/claimflow`), so a second run is fast.

use std::path::PathBuf;

use claimflow::python::{self, EnvironmentRequest};

fn interpreter(minor: &str) -> python::Interpreter {
    python::installed_interpreters()
        .iter()
        .find(|interpreter| interpreter.version.minor_string() == minor)
        .cloned()
        .unwrap_or_else(|| panic!("python {minor} is installed on claimflow's test machines"))
}

#[test]
fn an_environment_is_content_addressed_and_reused() {
    let worktree = tempfile::tempdir().unwrap();
    std::fs::write(worktree.path().join("requirements-test.txt"), "-e .\nsix\n").unwrap();
    let request = EnvironmentRequest::for_commit(&interpreter("3.11"), worktree.path(), &[]);
    assert_eq!(request.specs(), ["pytest>=8,<9", "six"]);
    let environment = python::ensure_environment(&request).unwrap();
    assert_eq!(environment.interpreter, "3.11.7");
    assert!(
        environment.pytest.starts_with("8."),
        "{}",
        environment.pytest
    );
    assert!(environment.has_distribution("six"));
    assert!(environment.python.is_file());
    assert_eq!(
        environment.root,
        python::cache_dir()
            .join("envs")
            .join(request.digest().hex())
    );
    let fingerprint = environment.fingerprint();
    assert_eq!(fingerprint["python"], "3.11.7");
    assert_eq!(fingerprint["environment"], request.digest().hex());
    let again = python::ensure_environment(&request).unwrap();
    assert_eq!(again, environment);
    let _: PathBuf = again.site_packages;
}
