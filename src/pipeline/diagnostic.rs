//! A problem found in a pipeline file, with its place and a hint.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

/// One problem in a pipeline file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub file: PathBuf,
    /// 1-based line and column.
    pub line: usize,
    pub column: usize,
    pub message: String,
    /// What to do about it.
    pub hint: Option<String>,
    /// What sort of problem it is, for callers that treat one sort apart.
    #[serde(skip)]
    pub kind: DiagnosticKind,
}

/// The sort of problem a [`Diagnostic`] reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum DiagnosticKind {
    /// The pipeline itself is wrong.
    #[default]
    Invalid,
    /// A repository's `path:` or `corpus:` names a directory this machine lacks (a local clone
    /// made elsewhere); the path as the pipeline writes it.
    MissingDirectory(PathBuf),
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: error: {}",
            self.file.display(),
            self.line,
            self.column,
            self.message
        )?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

/// Every problem found in one pipeline, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, diagnostic) in self.0.iter().enumerate() {
            if index > 0 {
                writeln!(f)?;
            }
            write!(f, "{diagnostic}")?;
        }
        write!(
            f,
            "\n{} problem{} found",
            self.0.len(),
            if self.0.len() == 1 { "" } else { "s" }
        )
    }
}

impl std::error::Error for Diagnostics {}
