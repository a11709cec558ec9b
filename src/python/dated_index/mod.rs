//! A package index bounded by date, inside claimflow: what a repository's `releases: at-commit`
//! installs from. pip is given `--index-url http://127.0.0.1:PORT/<cutoff>/simple/`, and each
//! project page it asks for is the upstream index's (`PIP_INDEX_URL`, else pypi.org) with only the
//! files uploaded before the cutoff. That is what `uv pip install --exclude-newer` and pip 26's
//! `--uploaded-prior-to` do, for every interpreter and pip claimflow builds with (pip 18 on Python
//! 3.6 and 19 on 2.7 among them, which have no such option).
//!
//! The bound is never silently lost: an upstream that gives no upload time for a file fails the
//! build, saying so, rather than offering the file unbounded. Upload times date a release only
//! when it was never uploaded again: every atomicwrites release was re-uploaded on 2022-07-09, so
//! nothing of it is dated before then. A project with no file before the cutoff is offered whole,
//! and the environment names each one it installed so (`Environment::released_before`).

mod cutoff;
mod page;
mod server;

pub use cutoff::{ReleaseBound, ReleaseCutoff};
pub use page::{IndexedFile, PageError, ProjectFiles};
pub use server::{DatedIndex, IndexProblem};
