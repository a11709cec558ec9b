//! An install bounded by a commit's date (a repository's `releases: at-commit`): the bound
//! worked out for one environment, where pip is pointed, and what the installer's output says
//! when the bound did not hold.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::build_error::{PythonError, io_error};
use super::dated_index::{DatedIndex, ReleaseBound, ReleaseCutoff};
use super::environment_request::{EnvironmentRequest, ReleasedBefore};
use super::requirements::requirement_name;
use super::specifier::SpecifierSet;

/// Where an environment bounded by a commit's date installs from.
pub(super) struct Dated {
    index: Arc<DatedIndex>,
    /// The bound: the commit's time, or just after the oldest release of a tool it predates.
    cutoff: ReleaseCutoff,
    /// The dated index's address for that bound.
    url: String,
}

impl Dated {
    /// The bound for `request`: its commit's time, moved past the oldest release its pytest (and
    /// each further tool) allows when that came later; and the process's dated index.
    pub(super) fn prepare(
        request: &EnvironmentRequest,
        bound: &ReleaseBound,
    ) -> Result<Dated, PythonError> {
        let index = DatedIndex::shared().map_err(io_error("start the dated package index"))?;
        let mut cutoff = bound.committed;
        for tool in std::iter::once(&request.pytest).chain(&bound.tools) {
            let Some(name) = requirement_name(tool) else {
                continue;
            };
            let Ok(specifier) = SpecifierSet::parse(specifier_of(tool)) else {
                continue;
            };
            let files = index
                .files(&name)
                .map_err(|problem| PythonError::ReleaseBound {
                    cutoff: bound.committed.to_string(),
                    reason: format!("`{name}`: {problem}"),
                })?;
            if let Some(after) = files.and_then(|files| files.first_release_after(&specifier)) {
                cutoff = cutoff.max(after);
            }
        }
        let url = index.index_url(cutoff);
        Ok(Dated { index, cutoff, url })
    }

    /// The bound as the environment's description says it, with the installed distributions
    /// the index could not date before the cutoff.
    pub(super) fn described(&self, installed: &BTreeMap<String, String>) -> ReleasedBefore {
        ReleasedBefore {
            cutoff: self.cutoff.to_string(),
            undated: installed
                .keys()
                .filter(|name| {
                    self.index
                        .fetched(name)
                        .is_some_and(|files| files.offered_whole(self.cutoff))
                })
                .cloned()
                .collect(),
        }
    }

    /// The bound.
    pub(super) fn cutoff(&self) -> ReleaseCutoff {
        self.cutoff
    }

    /// The dated index's address for the bound, pip's `--index-url`.
    pub(super) fn url(&self) -> &str {
        &self.url
    }

    /// What keeps the install from having been bounded, read from the installer's `output`: pip
    /// looking beyond the dated index (its configuration naming find-links or another index), or,
    /// when the install failed, a problem with the upstream page of a project pip `blamed` or
    /// was collecting.
    pub(super) fn unbounded(&self, output: &str, blamed: Option<&[String]>) -> Option<PythonError> {
        let error = |reason: String| PythonError::ReleaseBound {
            cutoff: self.cutoff.to_string(),
            reason,
        };
        if let Some(beyond) = looked_beyond(output, &self.url) {
            return Some(error(format!(
                "pip also looked in {beyond}, which a pip configuration file must name (the \
                 environment's are left out); remove it there (`pip config list` shows where), \
                 or set `releases: newest` for this repository"
            )));
        }
        blamed?.iter().find_map(|name| {
            let problem = self.index.problem(name)?;
            Some(error(format!("`{name}`: {problem}")))
        })
    }
}

/// The version specifier of a requirement (`>=3.5,<3.6` of `pytest>=3.5,<3.6`), markers and
/// extras left out.
fn specifier_of(requirement: &str) -> &str {
    let requirement = requirement.split(';').next().unwrap_or(requirement).trim();
    let rest = requirement
        .trim_start_matches(|c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .trim_start();
    match rest.strip_prefix('[') {
        Some(extras) => extras.split_once(']').map_or("", |(_, rest)| rest.trim()),
        None => rest.trim(),
    }
}

/// What pip's log says it looked in besides `url`: the find-links of a `Looking in links:` line,
/// or the other indexes of a `Looking in indexes:` one.
fn looked_beyond(output: &str, url: &str) -> Option<String> {
    output.lines().find_map(|line| {
        let line = line.trim();
        if let Some(links) = line.strip_prefix("Looking in links:") {
            return Some(format!("the links {}", links.trim()));
        }
        let indexes = line.strip_prefix("Looking in indexes:")?;
        let others: Vec<&str> = indexes
            .split(',')
            .map(str::trim)
            .filter(|index| !index.is_empty() && *index != url)
            .collect();
        (!others.is_empty()).then(|| format!("the indexes {}", others.join(", ")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pip_looking_beyond_the_dated_index_is_caught() {
        let dated = "http://127.0.0.1:4000/20190601T000000Z/simple/";
        let kept = format!("Looking in indexes: {dated}\nCollecting six\n");
        assert_eq!(looked_beyond(&kept, dated), None);
        let links = format!("Looking in indexes: {dated}\nLooking in links: /opt/wheels\n");
        assert_eq!(
            looked_beyond(&links, dated).as_deref(),
            Some("the links /opt/wheels")
        );
        let extra = format!("Looking in indexes: {dated}, https://extra.example/simple\n");
        assert_eq!(
            looked_beyond(&extra, dated).as_deref(),
            Some("the indexes https://extra.example/simple")
        );
    }

    #[test]
    fn a_tools_specifier_is_read_without_name_extras_or_markers() {
        assert_eq!(specifier_of("pytest>=3.5,<3.6"), ">=3.5,<3.6");
        assert_eq!(specifier_of("pytest-testmon==2.0.15"), "==2.0.15");
        assert_eq!(
            specifier_of("pytest[testing] >=8 ; python_version>'3'"),
            ">=8"
        );
        assert_eq!(specifier_of("pytest"), "");
    }
}
