//! Helpers shared by the integration tests: fixture repositories, test environments, snapshot
//! filters.

#![allow(
    dead_code,
    reason = "each test module uses a different part of the helpers"
)]

pub mod git;
pub mod project;
pub mod pytest_jobs;
pub mod python_env;
pub mod pytools;

/// Fails the test unless `output` is a successful exit, showing what the process printed.
#[track_caller]
pub fn assert_ran(output: &std::process::Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
