//! A memory claim: one statement a coding agent keeps about a repository ("`parse_url` returns a
//! tuple"), read from wherever it lives (a Markdown memory file, a JSON Lines store, an export of a
//! memory service), with the place it came from kept so a verdict can be reported, annotated and
//! written back on the claim's own line.
//!
//! Readers of each format produce [`MemoryClaim`]s; the cascade of stages decides each one and
//! produces a [`CheckResult`]. These two types are the seam between the two halves of `check`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where a claim lives: a file (relative to the repository's root when inside it, else absolute)
/// and the 1-based line its text starts on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SourceSpan {
    pub file: PathBuf,
    pub line: u32,
}

impl std::fmt::Display for SourceSpan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// The format a claim was read from: it decides how a verdict is written back. `--source-format`
/// takes the same names.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum SourceFormat {
    /// claimflow's own JSON Lines (`id`, `text`, `anchors`, `test`, `check`).
    Jsonl,
    /// A Markdown memory file (CLAUDE.md, AGENTS.md, memory-bank/*.md, …).
    Markdown,
    /// A Cursor rule (`.cursor/rules/*.mdc`): Markdown with front matter.
    Mdc,
    /// Copilot-style memory records (`subject`, `fact`, `citations`).
    CopilotJson,
    /// A mem0 export (`id`, `memory`).
    Mem0,
    /// Graphiti edges (`uuid`, `fact`, `invalid_at`).
    Graphiti,
}

/// What a claim is anchored to in the repository.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Anchor {
    /// A file (or a glob of files, from an `.mdc` rule's `globs`), repository-relative.
    File { path: String },
    /// A symbol: `path::qualified.name` (`src/url.py::parse_url`, `pkg/a.py::Client.get`); `path`
    /// is empty when only the name is known (a code span naming a symbol found in the repository).
    Symbol { path: String, name: String },
}

/// One claim, as read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryClaim {
    /// Stable across runs and edits elsewhere in its file: the digest of its normalized text and
    /// its source file (not its line), or the record's own id where the format has one.
    pub id: String,
    /// The statement itself.
    pub text: String,
    pub source: SourceSpan,
    pub format: SourceFormat,
    #[serde(default)]
    pub anchors: Vec<Anchor>,
    /// A pytest node id, or a test function's source, that embodies the claim.
    #[serde(default)]
    pub test: Option<String>,
    /// A shell command whose exit status 0 means the claim holds.
    #[serde(default)]
    pub check: Option<String>,
    /// The record's own key in its file, for write-back (a JSON Lines or mem0 `id`, a Graphiti
    /// `uuid`, a Copilot record's index); None for Markdown, which is found by line and text.
    #[serde(default)]
    pub record_key: Option<String>,
    /// The file as it was read, for write-back: never serialized, so no workdir path reaches an
    /// output or a cache key. None for a claim built elsewhere than by a reader.
    #[serde(skip)]
    pub origin: Option<ClaimOrigin>,
}

/// Where a claim's file is on disk and what its bytes were when read: write-back rewrites that
/// file only while its bytes still have this digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimOrigin {
    /// The file's path as opened (absolute when the reader was given a repository root).
    pub path: PathBuf,
    /// blake3 of the bytes read, in hex.
    pub digest: String,
}

/// A claim's verdict: `none` when no stage could decide (never counted as held or flipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Flipped,
    Held,
    None,
}

/// The stage of the cascade that decided a claim; written as its name (`exec`, `a4`, `a6_risk`),
/// the name `--cascade` and `--arm` take.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Stage {
    /// The claim's `test` or `check` was executed at the range's end.
    Exec,
    /// Symbol anchoring cleared it: nothing it is anchored to changed.
    A4,
    /// A model arm answered (its strategy id, e.g. `a6_risk`).
    Model(String),
}

impl Stage {
    /// The stage's name: `exec`, `a4`, or the model arm's question (`a6_risk`).
    pub fn name(&self) -> &str {
        match self {
            Stage::Exec => "exec",
            Stage::A4 => "a4",
            Stage::Model(question) => question,
        }
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl From<Stage> for String {
    fn from(stage: Stage) -> String {
        stage.name().to_string()
    }
}

impl TryFrom<String> for Stage {
    type Error = String;

    /// `exec`, `a4`, or a model arm's question; an empty name is no stage.
    fn try_from(name: String) -> Result<Self, String> {
        match name.as_str() {
            "exec" => Ok(Stage::Exec),
            "a4" => Ok(Stage::A4),
            "" => Err("an empty stage name".to_string()),
            _ => Ok(Stage::Model(name)),
        }
    }
}

/// What `check` says of one claim (one JSON Lines record on stdout).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    pub id: String,
    /// `file:line`.
    pub source: String,
    pub text: String,
    pub verdict: Verdict,
    /// None when no stage decided (verdict `none`).
    pub decided_by: Option<Stage>,
    /// Why: the changed symbols, the test's outcome, or the model's reason.
    pub evidence: String,
    #[serde(default)]
    pub tokens_in: u64,
    #[serde(default)]
    pub tokens_out: u64,
    #[serde(default)]
    pub cost: f64,
}
