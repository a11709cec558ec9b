//! Why `check` could not decide its claims, classified as the CLI's exit codes want: the user's
//! input (a directory that is no repository, a bad revision, a bad flag, an unreadable claim
//! file) is exit 2, anything else that stops the run is exit 1. A claim no stage could decide is
//! not an error: it gets the verdict `none`.

/// Why a check stopped.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The user's input is wrong (exit code 2); the message says what to do.
    #[error("{0}")]
    Input(String),
    /// A claim source could not be read (exit code 2): its reader's error names the file and line.
    #[error("read the claims")]
    Sources(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Something failed while deciding (exit code 1), its cause kept.
    #[error("{context}")]
    Failed {
        context: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl CheckError {
    /// A failure of `context`, caused by `source`.
    pub fn failed(
        context: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        CheckError::Failed {
            context: context.into(),
            source: source.into(),
        }
    }

    /// True when the user's input is wrong: exit code 2.
    pub fn is_input(&self) -> bool {
        matches!(self, CheckError::Input(_) | CheckError::Sources(_))
    }
}
