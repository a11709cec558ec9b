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
