//! The arms: strategies that predict, per claim, whether a commit made it false.
//!
//! The baseline arms read no model: the constant arms ([`always`]), file anchoring
//! ([`file_anchoring`], A3) and symbol anchoring ([`symbol_anchoring`], A4). Both anchoring arms read
//! the repository at the parent and child commits straight from git ([`source`]), parse Python with a
//! real parser and name files as Python would ([`crate::syntax`]). The testmon arm
//! ([`testmon`], A4b) asks the real pytest-testmon, which runs the parent's tests under coverage.

pub mod always;
pub mod claim;
pub mod file_anchoring;
mod parse_cache;
mod resolver;
pub mod source;
pub mod symbol_anchoring;
pub mod testmon;

pub use always::ConstantArm;
pub use claim::{ArmError, Change, Claim};
pub use file_anchoring::FileAnchoring;
pub use symbol_anchoring::SymbolAnchoring;
#[cfg(test)]
pub(crate) mod test_repository;
