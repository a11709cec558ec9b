//! Python source as syntax, knowing nothing of repositories, environments or arms: a module parsed
//! with a real parser into its definitions, imports and assertions ([`python`]), and files named as
//! the modules Python would import them as ([`modules`]).
//!
//! The anchoring arms, the paraphrase and rename controls, and the importer search of the Python
//! side all read Python through here, so none of them depends on another for it.

pub mod modules;
pub mod python;
