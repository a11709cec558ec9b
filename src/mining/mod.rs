//! Mining: walking a repository's history, ranking candidate commits, and building the source-only
//! diffs a model is shown.
