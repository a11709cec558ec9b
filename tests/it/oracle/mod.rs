//! The execution oracle against real pytest runs: fixture repositories built with git2, a cached
//! virtual environment with a pinned pytest.

mod catalogues;
mod child_requirements;
mod environment_failure;
mod fixture;
mod gate;
mod inherited;
mod library;
mod permits;
mod pipeline;
mod procedure;
pub(crate) mod python;
mod runner;
mod starved;
mod step;
mod subtests;
mod wiring;
mod worktree;
