//! `claimflow check`: after a commit (or a range), which of the claims a coding agent keeps about the
//! repository did the change make false. Claims are read from the memory files people keep
//! ([`claim::MemoryClaim`]), decided by a cascade of stages, cheapest first, and reported (and, on
//! request, marked where they live).

pub mod claim;
pub mod discover;
pub mod sources;
pub mod write_back;
