//! The splits and controls the paper's evidence rests on, as plain functions over records.
//!
//! - [`sample`]: a split's labelled claims drawn to a target flip rate, the natural rate recorded;
//! - [`cutoff`]: claims whose child commit postdates a model's training cutoff, and the
//!   fixed-repository comparison across the cutoff (Table IX);
//! - [`shuffle`]: each claim paired with another commit's diff, the null an arm should not fire on;
//! - [`paraphrase`]: a claim's test rewritten syntactically (locals renamed, docstrings replaced,
//!   whitespace reflowed) so that its surface changes and its behaviour does not;
//! - [`agreement`]: how often two runs of the verdicts agree (run-to-run variance, paraphrase);
//! - [`rename`]: flips caused by a pure rename of a symbol the claim references.
//!
//! The step kinds in `crate::steps` gather the inputs and write the files; everything seeded here
//! draws from [`priority`], so a draw depends on the seed and each claim's own id alone.

pub mod agreement;
pub mod cutoff;
pub mod paraphrase;
pub mod priority;
pub mod rename;
pub mod sample;
pub mod shuffle;
