//! Claim sources: the readers that turn each kind of memory file a coding agent keeps into
//! [`MemoryClaim`](crate::check::claim::MemoryClaim)s, each keeping its file and line.
//!
//! One small module per format ([`jsonl`], [`markdown`], [`copilot`], [`mem0`], [`graphiti`]); what
//! they share — how JSON files are laid out ([`json_records`]), stable ids ([`identity`]), names of
//! the repository ([`repository`], [`anchors`]) — sits beside them.

pub mod anchors;
pub mod copilot;
pub mod error;
pub mod format;
pub mod graphiti;
pub mod identity;
pub mod input;
pub mod json_records;
pub mod jsonl;
pub mod lines;
pub mod markdown;
pub mod mem0;
pub mod read;
pub mod record_claims;
pub mod repository;

pub use crate::check::discover::discover;
pub use error::SourceError;
pub use read::{Reader, read_source, read_sources, read_sources_at, read_sources_limited};
