//! The claim as the static arms read it, and the commit pair it is judged against.
//!
//! A claim record carries the test's source and node id; the python helper adds the test file's
//! path as `file`. Older records without it name the file as the node id's part before `::`.

use std::collections::BTreeSet;

use git2::Repository;
use serde::Deserialize;

use super::source::{RepoFiles, SourceError, TouchedFiles, touched_python_files};
use crate::mining::test_files::TestFileRules;
use crate::syntax::modules::ModuleIndex;

/// Why a static arm could not judge a claim.
#[derive(Debug, thiserror::Error)]
pub enum ArmError {
    /// The repository could not be read.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The claim's test file is not in the parent commit, so the claim record and the repository
    /// disagree.
    #[error("claim {claim}: test file {path} is not in parent commit {commit}")]
    MissingTestFile {
        claim: String,
        path: String,
        commit: String,
    },
    /// The claim record could not be read.
    #[error("claim record: {0}")]
    Record(String),
}

/// The fields of a claim record the static arms use.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Claim {
    pub id: String,
    pub repo: String,
    pub parent: String,
    pub commit: String,
    pub node: String,
    pub source: String,
    #[serde(default)]
    pub fixtures: Vec<String>,
    /// The test file's path, when the record carries it.
    #[serde(default)]
    pub file: Option<String>,
}

impl Claim {
    /// Reads a claim from its record (a `claims.jsonl` line as JSON).
    pub fn from_record(record: &serde_json::Value) -> Result<Self, ArmError> {
        serde_json::from_value(record.clone()).map_err(|error| ArmError::Record(error.to_string()))
    }

    /// The repository-relative path of the claim's test file.
    pub fn test_file(&self) -> String {
        self.file.clone().unwrap_or_else(|| {
            self.node
                .split("::")
                .next()
                .unwrap_or(&self.node)
                .to_string()
        })
    }

    /// The test's class when the node id names one (`file::Class::test`), for its `setUp`.
    pub fn test_class(&self) -> Option<String> {
        let parts: Vec<&str> = self.node.split("::").collect();
        (parts.len() >= 3).then(|| parts[parts.len() - 2].to_string())
    }
}

/// The parent and child trees of a commit, their module indexes and the Python files it touched.
pub struct Change<'r> {
    pub parent: RepoFiles<'r>,
    pub child: RepoFiles<'r>,
    pub parent_modules: ModuleIndex,
    pub child_modules: ModuleIndex,
    pub touched: TouchedFiles,
    /// Another commit's change shown in place of this one's diff (the shuffled-diff null): the
    /// claim is still read and resolved in this change's trees, its changed files and
    /// definitions come from the other.
    pub shown: Option<Box<Change<'r>>>,
}

impl<'r> Change<'r> {
    /// Loads the change from `parent` to `child` in `repository`, with the default test-file rules.
    pub fn load(repository: &'r Repository, parent: &str, child: &str) -> Result<Self, ArmError> {
        Self::load_with(repository, parent, child, &TestFileRules::default())
    }

    /// Loads the change from `parent` to `child`, test files classified by `rules`.
    pub fn load_with(
        repository: &'r Repository,
        parent: &str,
        child: &str,
        rules: &TestFileRules,
    ) -> Result<Self, ArmError> {
        let parent = RepoFiles::at(repository, parent)?;
        let child = RepoFiles::at(repository, child)?;
        let touched = touched_python_files(&parent, &child, rules)?;
        let parent_modules = ModuleIndex::new(&parent.python_files()?);
        let child_modules = ModuleIndex::new(&child.python_files()?);
        Ok(Change {
            parent,
            child,
            parent_modules,
            child_modules,
            touched,
            shown: None,
        })
    }

    /// This change with `other`'s diff shown in place of its own.
    pub fn showing(mut self, other: Change<'r>) -> Self {
        self.shown = Some(Box::new(other));
        self
    }

    /// The change whose diff an arm reads: the shown one if any, else this one.
    pub fn diff(&self) -> &Change<'r> {
        self.shown.as_deref().unwrap_or(self)
    }

    /// The module names of the touched source files (at the commit where each path exists).
    pub fn touched_modules(&self) -> BTreeSet<String> {
        let diff = self.diff();
        diff.touched
            .source
            .iter()
            .map(|path| {
                if diff.parent.exists(path) {
                    diff.parent_modules.module_name(path)
                } else {
                    diff.child_modules.module_name(path)
                }
            })
            .collect()
    }

    /// The text of the claim's test file at the parent.
    pub fn test_source(&self, claim: &Claim) -> Result<String, ArmError> {
        let path = claim.test_file();
        self.parent
            .read(&path)?
            .ok_or_else(|| ArmError::MissingTestFile {
                claim: claim.id.clone(),
                path,
                commit: self.parent.commit().to_string(),
            })
    }
}
