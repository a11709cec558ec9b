//! A4b, pytest-testmon: the real regression-test selector, asked which claims a commit affects.
//!
//! Per commit: check the parent out into a scratch worktree and build testmon's database there by
//! running the claims' test files under `--testmon` (the coverage-instrumented run whose cost the
//! setting rules out, so it is measured and reported). Then check the child out in the same place,
//! restore the parent's test files as the oracle does, and ask testmon — on a throw-away copy of the
//! database, with `--collect-only` so nothing runs — which tests it would select. Selected means
//! invalidate; a claim testmon has no record of gets no verdict.
//!
//! testmon runs where the claims were mined: their interpreter and pytest, and the newest
//! pytest-testmon release that supports both ([`crate::python::testmon_for`]). Releases before 2
//! keep their dependency data in a `node` table, later ones in `test_execution`; the database is
//! read whichever it holds.
//!
//! A small pytest plugin ([`PROBE`]) reports the selection after testmon's deselection and what
//! testmon thought of its database. The query must find the database it was given and the same
//! installed packages: a new database or a package change would make testmon select everything, so
//! either is an error, never a prediction.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use git2::{Oid, Repository};
use serde::Deserialize;

use crate::mining::test_files::TestFileRules;
use crate::process::{log_tail, run_logged};
use crate::python::{Environment, PytestLaunch, TestmonRelease};

/// The plugin written next to the worktree and loaded with `-p claimflow_testmon_probe`.
pub const PROBE: &str = include_str!("testmon_probe.py");

/// The distribution added to a repository's environment (a release of it: [`TestmonRelease`]).
pub const TESTMON_REQUIREMENT: &str = "pytest-testmon";

/// The environment testmon runs in and the release installed there.
#[derive(Debug, Clone)]
pub struct TestmonEnvironment {
    pub environment: Environment,
    pub release: &'static TestmonRelease,
}

/// How long one pytest run may take.
const TIMEOUT: Duration = Duration::from_secs(1800);

/// Why testmon could not judge a commit's claims.
#[derive(Debug, thiserror::Error)]
pub enum TestmonError {
    /// Git failed while checking out or restoring files.
    #[error("{action} for commit {commit}: {source}")]
    Git {
        action: String,
        commit: String,
        #[source]
        source: git2::Error,
    },
    /// A scratch file could not be written or read.
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// pytest ended without testmon's report (a crash, a timeout, a usage error).
    #[error("pytest --testmon at {commit} gave no report ({outcome}); log tail:\n{tail}")]
    NoReport {
        commit: String,
        outcome: String,
        tail: String,
    },
    /// No Python environment could be made for the parent.
    #[error("prepare a python environment for {commit}: {message}")]
    Environment { commit: String, message: String },
    /// No pytest-testmon release supports the interpreter and pytest the claims were mined under.
    #[error("testmon for {commit}: {source}")]
    NoRelease {
        commit: String,
        #[source]
        source: crate::python::NoTestmonRelease,
    },
    /// testmon was not active, found no database where it should, or saw other packages.
    #[error("testmon at {commit}: {problem}; log tail:\n{tail}")]
    Database {
        commit: String,
        problem: String,
        tail: String,
    },
}

impl TestmonError {
    /// True when testmon cannot judge this commit at all, the same way on every run: pytest
    /// exited without testmon's report (testmon cannot start beside the repository's plugins or
    /// that pytest), its database lacks testmon's tables, or no environment could be built for
    /// it, or no testmon release supports the claims' interpreter and pytest. Its claims then get
    /// no verdict. A timeout, a crash, git or the disk failing are not
    /// this: they fail the item, which the next run computes again.
    pub fn cannot_judge(&self) -> bool {
        match self {
            TestmonError::NoReport { outcome, .. } => outcome.starts_with("Exited("),
            TestmonError::Database { problem, .. } => {
                problem.starts_with("could not list the database's tests")
            }
            TestmonError::Environment { .. } | TestmonError::NoRelease { .. } => true,
            TestmonError::Git { .. } | TestmonError::Io { .. } => false,
        }
    }
}

/// The prediction for the claim `claim` when testmon could not judge its commit
/// ([`TestmonError::cannot_judge`]): no verdict, and why (the error's first line and the last
/// line of its log).
pub fn unjudged(claim: &str, error: &TestmonError) -> crate::records::PredictionRecord {
    let text = error.to_string();
    let mut lines = text.lines().filter(|line| !line.trim().is_empty());
    let first = lines.next().unwrap_or_default().to_string();
    let last = lines.next_back().map(str::to_string);
    crate::records::PredictionRecord {
        claim: claim.to_string(),
        verdict: crate::records::Verdict::None,
        evidence: serde_json::json!({
            "tracked": false,
            "selected": false,
            "unjudged": first,
            "log": last,
        }),
        tokens_in: None,
        tokens_out: None,
        cost: None,
    }
}

/// What testmon said about one commit.
#[derive(Debug, Clone, PartialEq)]
pub struct TestmonSelection {
    /// Tests testmon recorded at the parent (node ids).
    pub tracked: BTreeSet<String>,
    /// Tests it would run at the child.
    pub selected: BTreeSet<String>,
    /// Seconds the parent's instrumented run took (building the database).
    pub build_seconds: f64,
    /// Seconds the child's selection query took.
    pub query_seconds: f64,
    /// The installed pytest-testmon version.
    pub testmon_version: String,
}

#[derive(Debug, Deserialize)]
struct ProbeReport {
    selected: Vec<String>,
    testmon_active: bool,
    new_db: bool,
    packages_changed: bool,
}

impl ProbeReport {
    /// Why a child query's selection cannot be trusted: testmon inactive, or a database or package
    /// state under which it selects everything.
    fn query_problem(&self) -> Option<&'static str> {
        if !self.testmon_active {
            Some("testmon was not active")
        } else if self.new_db {
            Some("testmon saw a new database where the parent's should be")
        } else if self.packages_changed {
            Some("testmon says the installed packages changed since the parent")
        } else {
            None
        }
    }
}

/// One commit's testmon question.
pub struct TestmonRequest<'a> {
    pub repository: &'a Repository,
    pub parent: &'a str,
    pub child: &'a str,
    /// The claims' test files (paths at the parent).
    pub test_files: &'a BTreeSet<String>,
    pub rules: &'a TestFileRules,
    /// A scratch directory this request owns.
    pub scratch: &'a Path,
}

impl TestmonRequest<'_> {
    /// Builds the database at the parent and asks for the child's selection. `environment` makes
    /// the Python environment (with pytest-testmon) for the parent checked out at the given path.
    pub fn select(
        &self,
        environment: impl FnOnce(&Path) -> Result<TestmonEnvironment, TestmonError>,
    ) -> Result<TestmonSelection, TestmonError> {
        let worktree = self.scratch.join("worktree");
        let probe_directory = self.scratch.join("probe");
        create_dir(&probe_directory)?;
        write(&probe_directory.join("claimflow_testmon_probe.py"), PROBE)?;
        let database = self.scratch.join("parent.testmondata");
        remove_file(&database)?;

        self.checkout(self.parent, &worktree)?;
        let TestmonEnvironment {
            environment,
            release,
        } = environment(&worktree)?;
        let started = Instant::now();
        let built = self.pytest(&environment, release, &worktree, &database, "parent", &[])?;
        let build_seconds = started.elapsed().as_secs_f64();
        let (report, log) = built;
        if !report.testmon_active || !database.is_file() {
            return Err(self.database_error(self.parent, "testmon did not write a database", &log));
        }
        let tracked = self.tracked_tests(&environment, &database)?;

        self.checkout(self.child, &worktree)?;
        self.restore_parent_tests(&worktree)?;
        let query = self.scratch.join("query.testmondata");
        std::fs::copy(&database, &query).map_err(|source| TestmonError::Io {
            action: "copy the testmon database to",
            path: query.clone(),
            source,
        })?;
        let started = Instant::now();
        let (report, log) = self.pytest(
            &environment,
            release,
            &worktree,
            &query,
            "child",
            &["--collect-only"],
        )?;
        let query_seconds = started.elapsed().as_secs_f64();
        if let Some(problem) = report.query_problem() {
            return Err(self.database_error(self.child, problem, &log));
        }
        Ok(TestmonSelection {
            tracked,
            selected: report.selected.into_iter().collect(),
            build_seconds,
            query_seconds,
            testmon_version: environment
                .distributions
                .get(TESTMON_REQUIREMENT)
                .cloned()
                .unwrap_or_default(),
        })
    }

    fn database_error(&self, commit: &str, problem: &str, log: &Path) -> TestmonError {
        TestmonError::Database {
            commit: commit.to_string(),
            problem: problem.to_string(),
            tail: log_tail(log, 20),
        }
    }

    /// Runs pytest with testmon on the test files; returns the probe's report and the log path.
    fn pytest(
        &self,
        environment: &Environment,
        release: &TestmonRelease,
        worktree: &Path,
        database: &Path,
        label: &str,
        extra: &[&str],
    ) -> Result<(ProbeReport, PathBuf), TestmonError> {
        let report_path = self.scratch.join(format!("{label}.report.json"));
        remove_file(&report_path)?;
        let log = self.scratch.join(format!("{label}.log"));
        let private = self.scratch.join("private");
        let mut launch = PytestLaunch::new(environment, worktree, &private)
            .plugin_dir(self.scratch.join("probe"))
            .writable(self.scratch);
        if release.reads_last_failed() {
            // testmon from 1.0 on reads the cache provider's `--lf` option: the provider stays
            // on, its directory outside the worktree.
            launch = launch.cache_dir(self.scratch.join("pytest-cache"));
        }
        let mut arguments: Vec<OsString> = Vec::new();
        arguments.extend(release.plugin_options().map(OsString::from));
        arguments.extend([
            "-p".into(),
            "claimflow_testmon_probe".into(),
            "--testmon".into(),
            "-q".into(),
        ]);
        arguments.extend(extra.iter().map(OsString::from));
        arguments.extend(self.test_files.iter().map(OsString::from));
        let mut command = launch
            .command(&arguments)
            .map_err(|source| TestmonError::Io {
                action: "prepare pytest in",
                path: private.clone(),
                source,
            })?;
        command
            .env("TESTMON_DATAFILE", database)
            .env("CLAIMFLOW_TESTMON_REPORT", &report_path);
        let outcome =
            run_logged(&mut command, &log, TIMEOUT).map_err(|source| TestmonError::Io {
                action: "run pytest, logging to",
                path: log.clone(),
                source,
            })?;
        let commit = if label == "parent" {
            self.parent
        } else {
            self.child
        };
        let report = std::fs::read_to_string(&report_path)
            .ok()
            .and_then(|text| serde_json::from_str::<ProbeReport>(&text).ok())
            .ok_or_else(|| TestmonError::NoReport {
                commit: commit.to_string(),
                outcome: format!("{outcome:?}"),
                tail: log_tail(&log, 20),
            })?;
        Ok((report, log))
    }

    /// The node ids in testmon's database, read with the environment's own sqlite3: from
    /// `test_execution` (testmon 2 on) or `node` (before), whichever the database has.
    fn tracked_tests(
        &self,
        environment: &Environment,
        database: &Path,
    ) -> Result<BTreeSet<String>, TestmonError> {
        let log = self.scratch.join("tracked.log");
        let listing = self.scratch.join("tracked.json");
        let script = TRACKED_TESTS;
        let mut command = std::process::Command::new(&environment.python);
        crate::process::ChildEnvironment::scrubbed()
            .python_quiet()
            .apply(&mut command);
        command.arg("-c").arg(script).arg(database).arg(&listing);
        let outcome =
            run_logged(&mut command, &log, Duration::from_secs(60)).map_err(|source| {
                TestmonError::Io {
                    action: "read the testmon database, logging to",
                    path: log.clone(),
                    source,
                }
            })?;
        std::fs::read_to_string(&listing)
            .ok()
            .and_then(|text| serde_json::from_str::<BTreeSet<String>>(&text).ok())
            .ok_or_else(|| TestmonError::Database {
                commit: self.parent.to_string(),
                problem: format!("could not list the database's tests ({outcome:?})"),
                tail: log_tail(&log, 20),
            })
    }

    /// Replaces `worktree` with the tree of `commit`.
    fn checkout(&self, commit: &str, worktree: &Path) -> Result<(), TestmonError> {
        if worktree.exists() {
            std::fs::remove_dir_all(worktree).map_err(|source| TestmonError::Io {
                action: "clear the worktree",
                path: worktree.to_path_buf(),
                source,
            })?;
        }
        create_dir(worktree)?;
        let tree = self.tree(commit)?;
        let mut checkout = git2::build::CheckoutBuilder::new();
        // Write into the scratch directory only: the repository's own index and work tree (if it
        // has one) are left alone.
        checkout
            .target_dir(worktree)
            .force()
            .recreate_missing(true)
            .update_index(false);
        self.repository
            .checkout_tree(tree.as_object(), Some(&mut checkout))
            .map_err(self.git_error("check out", commit))?;
        // As the oracle runs a checkout: registered as installed, with its build's version file.
        crate::python::prepare_checkout(worktree).map_err(|source| TestmonError::Io {
            action: "prepare the checkout",
            path: worktree.to_path_buf(),
            source,
        })
    }

    /// The oracle's restoration: test files the commit modified or deleted come back from the
    /// parent, test files it added are removed.
    fn restore_parent_tests(&self, worktree: &Path) -> Result<(), TestmonError> {
        let parent = self.tree(self.parent)?;
        let child = self.tree(self.child)?;
        let diff = self
            .repository
            .diff_tree_to_tree(Some(&parent), Some(&child), None)
            .map_err(self.git_error("diff", self.child))?;
        for delta in diff.deltas() {
            for (file, at_parent) in [(delta.old_file(), true), (delta.new_file(), false)] {
                let Some(path) = file.path().and_then(Path::to_str) else {
                    continue;
                };
                if !self.rules.is_test(path) {
                    continue;
                }
                let target = worktree.join(path);
                if at_parent && file.id() != Oid::zero() {
                    let blob = self
                        .repository
                        .find_blob(file.id())
                        .map_err(self.git_error("read the parent's test file", self.parent))?;
                    if let Some(directory) = target.parent() {
                        create_dir(directory)?;
                    }
                    std::fs::write(&target, blob.content()).map_err(|source| TestmonError::Io {
                        action: "restore",
                        path: target.clone(),
                        source,
                    })?;
                } else if !at_parent && delta.old_file().id() == Oid::zero() {
                    remove_file(&target)?;
                }
            }
        }
        Ok(())
    }

    fn tree(&self, commit: &str) -> Result<git2::Tree<'_>, TestmonError> {
        self.repository
            .revparse_single(commit)
            .and_then(|object| object.peel_to_tree())
            .map_err(self.git_error("find the tree", commit))
    }

    fn git_error<'s>(
        &self,
        action: &'s str,
        commit: &'s str,
    ) -> impl FnOnce(git2::Error) -> TestmonError + 's {
        move |source| TestmonError::Git {
            action: action.to_string(),
            commit: commit.to_string(),
            source,
        }
    }
}

/// Lists the tests a testmon database recorded (Python 2 and 3): `test_execution.test_name`
/// from testmon 2 on, `node.name` before; neither table is an error.
const TRACKED_TESTS: &str = "import json, sqlite3, sys\n\
    connection = sqlite3.connect(sys.argv[1])\n\
    tables = set(row[0] for row in connection.execute(\"SELECT name FROM sqlite_master WHERE type = 'table'\"))\n\
    if 'test_execution' in tables:\n\
    \x20   query = 'SELECT test_name FROM test_execution'\n\
    elif 'node' in tables:\n\
    \x20   query = 'SELECT name FROM node'\n\
    else:\n\
    \x20   sys.exit('no test_execution or node table')\n\
    json.dump(sorted(set(row[0] for row in connection.execute(query))), open(sys.argv[2], 'w'))\n";

fn create_dir(path: &Path) -> Result<(), TestmonError> {
    std::fs::create_dir_all(path).map_err(|source| TestmonError::Io {
        action: "create",
        path: path.to_path_buf(),
        source,
    })
}

fn write(path: &Path, text: &str) -> Result<(), TestmonError> {
    std::fs::write(path, text).map_err(|source| TestmonError::Io {
        action: "write",
        path: path.to_path_buf(),
        source,
    })
}

fn remove_file(path: &Path) -> Result<(), TestmonError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(TestmonError::Io {
            action: "remove",
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The testmon arm's prediction for the claim `claim` (pytest node `node`) under `selection`.
pub fn predict(
    claim: &str,
    node: &str,
    selection: &TestmonSelection,
) -> crate::records::PredictionRecord {
    use crate::records::Verdict;
    let tracked = selection.tracked.contains(node);
    let selected = selection.selected.contains(node);
    let verdict = match (tracked, selected) {
        (true, true) => Verdict::Flipped,
        (true, false) => Verdict::Held,
        // Testmon has no record of the test (it did not run at the parent): no verdict, even when a
        // test it does not know is selected by default.
        (false, _) => Verdict::None,
    };
    crate::records::PredictionRecord {
        claim: claim.to_string(),
        verdict,
        evidence: serde_json::json!({
            "tracked": tracked,
            "selected": selected,
            "selected_tests": selection.selected.len(),
            "tracked_tests": selection.tracked.len(),
            "build_seconds": selection.build_seconds,
            "query_seconds": selection.query_seconds,
            "testmon": selection.testmon_version,
        }),
        tokens_in: None,
        tokens_out: None,
        cost: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Verdict;

    fn report(testmon_active: bool, new_db: bool, packages_changed: bool) -> ProbeReport {
        ProbeReport {
            selected: Vec::new(),
            testmon_active,
            new_db,
            packages_changed,
        }
    }

    #[test]
    fn a_query_that_would_select_everything_is_refused() {
        assert_eq!(report(true, false, false).query_problem(), None);
        assert!(report(false, false, false).query_problem().is_some());
        assert!(
            report(true, true, false)
                .query_problem()
                .unwrap()
                .contains("new database")
        );
        assert!(
            report(true, false, true)
                .query_problem()
                .unwrap()
                .contains("packages changed")
        );
    }

    /// Runs [`TRACKED_TESTS`] on a database made by `schema` with the newest installed Python.
    fn tracked(schema: &str) -> Result<Vec<String>, String> {
        let python = crate::python::installed_interpreters()
            .last()
            .expect("an interpreter is installed")
            .path
            .clone();
        let directory = tempfile::tempdir().unwrap();
        let database = directory.path().join("testmondata");
        let listing = directory.path().join("tracked.json");
        let created = std::process::Command::new(&python)
            .arg("-c")
            .arg(format!(
                "import sqlite3, sys\nconnection = sqlite3.connect(sys.argv[1])\n\
                 connection.executescript({schema:?})\nconnection.commit()\n"
            ))
            .arg(&database)
            .status()
            .unwrap();
        assert!(created.success());
        let output = std::process::Command::new(&python)
            .arg("-c")
            .arg(TRACKED_TESTS)
            .arg(&database)
            .arg(&listing)
            .output()
            .unwrap();
        if !output.status.success() {
            return Err(String::from_utf8_lossy(&output.stderr).into_owned());
        }
        Ok(serde_json::from_str(&std::fs::read_to_string(&listing).unwrap()).unwrap())
    }

    #[test]
    fn the_database_is_read_whichever_table_its_testmon_writes() {
        // testmon 2 on.
        assert_eq!(
            tracked(
                "CREATE TABLE test_execution (id INTEGER PRIMARY KEY, test_name TEXT);\
                 INSERT INTO test_execution (test_name) VALUES ('t.py::b'), ('t.py::a');"
            ),
            Ok(vec!["t.py::a".to_string(), "t.py::b".to_string()])
        );
        // 0.9 and 1.x: a `node` table, one row per environment (variant).
        assert_eq!(
            tracked(
                "CREATE TABLE node (id INTEGER PRIMARY KEY, variant TEXT, name TEXT);\
                 INSERT INTO node (variant, name) VALUES ('a', 't.py::x'), ('b', 't.py::x');"
            ),
            Ok(vec!["t.py::x".to_string()])
        );
        let neither = tracked("CREATE TABLE metadata (dataid TEXT, data TEXT);").unwrap_err();
        assert!(
            neither.contains("no test_execution or node table"),
            "{neither}"
        );
    }

    #[test]
    fn untracked_claims_get_no_verdict() {
        let selection = TestmonSelection {
            tracked: ["t.py::a", "t.py::b"].map(String::from).into(),
            selected: ["t.py::a", "t.py::new"].map(String::from).into(),
            build_seconds: 1.5,
            query_seconds: 0.5,
            testmon_version: "2.2.0".into(),
        };
        assert_eq!(
            predict("c", "t.py::a", &selection).verdict,
            Verdict::Flipped
        );
        assert_eq!(predict("c", "t.py::b", &selection).verdict, Verdict::Held);
        // Selected only because testmon never saw it: still unknown.
        assert_eq!(predict("c", "t.py::new", &selection).verdict, Verdict::None);
        assert_eq!(
            predict("c", "t.py::a", &selection).evidence["build_seconds"],
            1.5
        );
    }
}
