//! Why a claim source could not be read. Every variant names the file (and the line where there is
//! one) and says what to do, since the command maps them all to "bad input" (exit 2).

use std::path::PathBuf;

/// A claim source that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The file could not be opened or read.
    #[error("read claim source {path}: {source} (check the path and its permissions)")]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not UTF-8 text.
    #[error("read claim source {path}: not UTF-8 text at byte {offset} (save it as UTF-8)")]
    NotText { path: PathBuf, offset: usize },
    /// A line (JSON Lines) or the document (a JSON array) is not valid JSON.
    #[error("parse {path}:{line}: bad JSON: {source} (fix or remove that record)")]
    BadJson {
        path: PathBuf,
        line: u32,
        #[source]
        source: serde_json::Error,
    },
    /// A record lacks the field that holds its statement, or has it with the wrong type.
    #[error(
        "parse {path}:{line}: the record has no string field `{field}` (add it: it holds the claim)"
    )]
    MissingField {
        path: PathBuf,
        line: u32,
        field: &'static str,
    },
    /// A field is present with a type the format does not allow.
    #[error("parse {path}:{line}: field `{field}` must be {expected}")]
    BadField {
        path: PathBuf,
        line: u32,
        field: &'static str,
        expected: &'static str,
    },
    /// Two records of one file carry the same id, so a verdict could not say which one it means.
    #[error(
        "parse {path}:{line}: id `{id}` was already used on line {first} (give each record its own id)"
    )]
    DuplicateId {
        path: PathBuf,
        line: u32,
        id: String,
        first: u32,
    },
    /// An `.mdc` rule's front matter is not valid YAML.
    #[error(
        "parse {path}:{line}: bad front matter: {message} (fix the YAML between the `---` lines)"
    )]
    BadFrontMatter {
        path: PathBuf,
        line: u32,
        message: String,
    },
    /// A JSON file whose records match no known memory format.
    #[error(
        "read claim source {path}: cannot tell its format ({why}); name it with the format option"
    )]
    UnknownFormat { path: PathBuf, why: String },
    /// The repository around the claim sources could not be read (for anchors or discovery).
    #[error("read repository {path}: {source}")]
    Repository {
        path: PathBuf,
        #[source]
        source: git2::Error,
    },
    /// The file was refused before it was read: a symlink out of the repository, not a regular
    /// file, or over the size limit.
    #[error(transparent)]
    Refused(crate::check::memory_file::MemoryFileError),
}
