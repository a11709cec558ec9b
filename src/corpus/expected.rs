//! What a scripted corpus documents about itself: its `EXPECTED.md`, read as data.
//!
//! `EXPECTED.md` is written for people first, with three tables that tests read:
//! - `## Commits`: `| commit | case | candidate | what it does |`, one row per commit;
//! - `## Claims`: `| commit | claim | parent | child | label | reason |`, one row per test of
//!   each candidate commit's touched test files, with its outcome at the parent, its outcome at
//!   the child with the parent's touched test files restored, and the oracle's label;
//! - `## Children that fail their own tests`: `| commit | test | child |`.
//!
//! Outcomes are written `passed`, `failed: <how>` (`assertion` or an exception class),
//! `unknown: <why>` or `flaky` (some runs pass, some fail). Cells may be wrapped in backticks.

use std::fs;
use std::path::Path;

use super::CorpusError;
use crate::records::Label;

/// The tables of an `EXPECTED.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub commits: Vec<ExpectedCommit>,
    pub claims: Vec<ExpectedClaim>,
    /// Tests that fail in their own (child) version at a broken child commit.
    pub own_failures: Vec<OwnFailure>,
}

/// A row of `## Commits`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedCommit {
    /// The script's name for the commit.
    pub name: String,
    /// The case letter it demonstrates, if any.
    pub case: Option<String>,
    /// Whether mining should consider it: it touches a test file and a non-test `.py` file and
    /// deletes an assertion line from a test file.
    pub candidate: bool,
    pub summary: String,
}

/// A row of `## Claims`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedClaim {
    pub commit: String,
    /// The pytest node id.
    pub node: String,
    /// Outcome of its runs at the parent.
    pub parent: ExpectedRuns,
    /// Outcome of its runs at the child, the parent's touched test files restored.
    pub child: ExpectedRuns,
    pub label: Label,
    pub reason: String,
}

/// A row of `## Children that fail their own tests`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnFailure {
    pub commit: String,
    pub node: String,
    pub child: ExpectedRuns,
}

/// What repeated runs of one test show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpectedRuns {
    /// Every run passes.
    Passed,
    /// Every run fails; how (`assertion`, or the exception class).
    Failed(String),
    /// No run gets a verdict; why (e.g. `collection error`).
    Unknown(String),
    /// Some runs pass and some fail.
    Flaky,
}

impl ExpectedRuns {
    fn parse(cell: &str) -> Option<ExpectedRuns> {
        match cell.split_once(':') {
            None if cell == "passed" => Some(ExpectedRuns::Passed),
            None if cell == "flaky" => Some(ExpectedRuns::Flaky),
            Some(("failed", how)) if !how.trim().is_empty() => {
                Some(ExpectedRuns::Failed(how.trim().to_string()))
            }
            Some(("unknown", why)) if !why.trim().is_empty() => {
                Some(ExpectedRuns::Unknown(why.trim().to_string()))
            }
            _ => None,
        }
    }
}

/// Which table a row belongs to.
#[derive(Clone, Copy, PartialEq)]
enum Section {
    Commits,
    Claims,
    OwnFailures,
    Other,
}

/// Read the tables of the `EXPECTED.md` at `path`.
pub fn load_expected(path: &Path) -> Result<Expected, CorpusError> {
    let text = fs::read_to_string(path).map_err(|source| CorpusError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_expected(path, &text)
}

fn parse_expected(path: &Path, text: &str) -> Result<Expected, CorpusError> {
    let mut expected = Expected {
        commits: Vec::new(),
        claims: Vec::new(),
        own_failures: Vec::new(),
    };
    let mut section = Section::Other;
    let mut header_seen = false;
    for (index, line) in text.lines().enumerate() {
        if let Some(heading) = line.strip_prefix("## ") {
            section = match heading.trim() {
                "Commits" => Section::Commits,
                "Claims" => Section::Claims,
                "Children that fail their own tests" => Section::OwnFailures,
                _ => Section::Other,
            };
            header_seen = false;
            continue;
        }
        let Some(row) = line.trim().strip_prefix('|') else {
            continue;
        };
        if section == Section::Other {
            continue;
        }
        // The first row of a table is its header, the second its `|---|` rule.
        if !header_seen {
            header_seen = true;
            continue;
        }
        if row.trim_start().starts_with("---") {
            continue;
        }
        let cells: Vec<&str> = row
            .trim_end()
            .trim_end_matches('|')
            .split('|')
            .map(|cell| cell.trim().trim_matches('`'))
            .collect();
        add_row(&mut expected, section, &cells).map_err(|message| CorpusError::Invalid {
            path: path.to_path_buf(),
            line: Some(index + 1),
            message,
        })?;
    }
    Ok(expected)
}

/// One row of a table of `section`, its cells trimmed; the error says what is wrong with it.
fn add_row(expected: &mut Expected, section: Section, cells: &[&str]) -> Result<(), String> {
    let width = match section {
        Section::Commits => 4,
        Section::Claims => 6,
        Section::OwnFailures => 3,
        Section::Other => unreachable!("rows outside the tables are skipped"),
    };
    if cells.len() != width {
        return Err(format!(
            "this table has {width} columns, the row has {}",
            cells.len()
        ));
    }
    match section {
        Section::Commits => expected.commits.push(ExpectedCommit {
            name: cells[0].to_string(),
            case: (cells[1] != "-").then(|| cells[1].to_string()),
            candidate: match cells[2] {
                "yes" => true,
                "no" => false,
                other => return Err(format!("candidate is yes or no, not `{other}`")),
            },
            summary: cells[3].to_string(),
        }),
        Section::Claims => {
            let label = match cells[4] {
                "flipped" => Label::Flipped,
                "held" => Label::Held,
                "discarded" => Label::Discarded,
                other => return Err(format!("`{other}` is not a label")),
            };
            let claim = ExpectedClaim {
                commit: cells[0].to_string(),
                node: cells[1].to_string(),
                parent: runs(cells[2])?,
                child: runs(cells[3])?,
                label,
                reason: cells[5].to_string(),
            };
            check_label(&claim)?;
            expected.claims.push(claim);
        }
        Section::OwnFailures => expected.own_failures.push(OwnFailure {
            commit: cells[0].to_string(),
            node: cells[1].to_string(),
            child: runs(cells[2])?,
        }),
        Section::Other => unreachable!("rows outside the tables are skipped"),
    }
    Ok(())
}

/// A cell of outcomes.
fn runs(cell: &str) -> Result<ExpectedRuns, String> {
    ExpectedRuns::parse(cell).ok_or_else(|| {
        format!("`{cell}` is not an outcome (passed, failed: how, unknown: why, flaky)")
    })
}

/// A label must follow from the outcomes as the oracle decides it; only `discarded` may
/// override them (a flaky parent, an unknown child, a broken child commit).
fn check_label(claim: &ExpectedClaim) -> Result<(), String> {
    let consistent = match claim.label {
        Label::Flipped => {
            claim.parent == ExpectedRuns::Passed && matches!(claim.child, ExpectedRuns::Failed(_))
        }
        Label::Held => claim.parent == ExpectedRuns::Passed && claim.child == ExpectedRuns::Passed,
        Label::Discarded => true,
    };
    if consistent {
        Ok(())
    } else {
        Err(format!(
            "{} is labelled {:?} but its outcomes are {:?} at the parent and {:?} at the child",
            claim.node, claim.label, claim.parent, claim.child
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
# Expected

Prose is skipped, and so are tables under other headings.

| not | a | table | we read |
|---|---|---|---|

## Commits

| commit | case | candidate | what it does |
|---|---|---|---|
| `01-initial` | - | no | the root |
| `02-flip` | a | yes | flips a test |

## Claims

| commit | claim | parent | child | label | reason |
|---|---|---|---|---|---|
| 02-flip | `tests/test_x.py::test_a` | passed | failed: assertion | flipped | 1 became 2 |
| 02-flip | `tests/test_x.py::test_b` | flaky | flaky | discarded | random |

## Children that fail their own tests

| commit | test | child |
|---|---|---|
| 02-flip | tests/test_x.py::test_c | failed: TypeError |
";

    #[test]
    fn the_three_tables_are_read() {
        let expected = parse_expected(Path::new("EXPECTED.md"), SAMPLE).unwrap();
        assert_eq!(expected.commits.len(), 2);
        assert_eq!(expected.commits[1].case.as_deref(), Some("a"));
        assert!(!expected.commits[0].candidate);
        assert_eq!(expected.claims[0].node, "tests/test_x.py::test_a");
        assert_eq!(
            expected.claims[0].child,
            ExpectedRuns::Failed("assertion".into())
        );
        assert_eq!(expected.claims[1].parent, ExpectedRuns::Flaky);
        assert_eq!(
            expected.own_failures[0].child,
            ExpectedRuns::Failed("TypeError".into())
        );
    }

    #[test]
    fn a_label_that_contradicts_the_outcomes_names_its_line() {
        let text = SAMPLE.replace(
            "passed | failed: assertion | flipped",
            "passed | passed | flipped",
        );
        let error = parse_expected(Path::new("EXPECTED.md"), &text).unwrap_err();
        assert!(
            matches!(error, CorpusError::Invalid { line: Some(19), .. }),
            "{error}"
        );
    }

    #[test]
    fn a_row_of_the_wrong_width_is_an_error() {
        let text = SAMPLE.replace("| `02-flip` | a | yes | flips a test |", "| 02-flip | a |");
        assert!(parse_expected(Path::new("EXPECTED.md"), &text).is_err());
    }
}
