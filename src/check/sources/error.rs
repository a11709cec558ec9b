//! Why a claim source could not be read. Every variant names the file (and the line where there is
//! one) and says what to do, since the command maps them all to "bad input" (exit 2).

use std::path::PathBuf;

/// A claim source that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The file could not be opened or read. The OS's reason is the source, printed once after
    /// this message by the error chain.
    #[error("read claim source {path} (check the path and its permissions)")]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not UTF-8 text: the line and column (in characters, from 1) of the first byte
    /// that is not.
    #[error(
        "read claim source {path}:{line}:{column}: not UTF-8 text from there on (save the file as UTF-8)"
    )]
    NotText {
        path: PathBuf,
        line: u32,
        column: u32,
    },
    /// A line (JSON Lines) or the document (a JSON array) is not valid JSON.
    #[error("parse {path}:{line}: bad JSON (fix or remove that record)")]
    BadJson {
        path: PathBuf,
        line: u32,
        #[source]
        source: serde_json::Error,
    },
    /// A record lacks the field that holds its statement, or has it empty.
    #[error(
        "parse {path}:{line}: the record has no string field `{field}` (add it: it holds the claim)"
    )]
    MissingField {
        path: PathBuf,
        line: u32,
        field: &'static str,
    },
    /// A field is present with a type the format does not allow.
    #[error(
        "parse {path}:{line}: field `{field}` must be {expected}, not {found} (write it as {expected}{quote})",
        quote = if *found == "a number" && expected.contains("string") { ", in quotes" } else { "" }
    )]
    BadField {
        path: PathBuf,
        line: u32,
        field: &'static str,
        expected: &'static str,
        /// What the field holds instead (`a number`, `a list`, …).
        found: &'static str,
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
        "read claim source {path}: cannot tell its format ({why}); name it with --source-format"
    )]
    UnknownFormat { path: PathBuf, why: String },
    /// The repository around the claim sources could not be read (for anchors or discovery).
    #[error("read repository {path}")]
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
