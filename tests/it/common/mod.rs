//! Helpers shared by the integration tests: fixture repositories, test environments, snapshot
//! filters.

pub mod pytest_jobs;
pub mod python_env;
