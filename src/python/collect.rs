//! Asking pytest which tests a commit's touched test files define, without running any: the
//! collection plugin (`collect_plugin.py`, embedded in the binary) is written out next to the
//! worktree and loaded with `-p`, files reach it through a list file (never the command line), and
//! it reports each test with its resolved source, fixtures and interpreter-side assertions.
//! Collecting nothing is a failure with an explanation, never an empty answer.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::command::{PytestLaunch, pytest_config_file};
use super::config_files::{TomlValue, ini_lines, parse_ini, parse_toml};
use super::environment_request::Environment;
use crate::process::{Outcome, log_tail, run_logged};

/// The plugin's source; written to `<scratch>/plugin/claimflow_collect.py` before each collection.
pub const COLLECT_PLUGIN: &str = include_str!("collect_plugin.py");
/// The module name the plugin is loaded under (`-p claimflow_collect`).
const PLUGIN_MODULE: &str = "claimflow_collect";
/// pytest's default `python_files`.
const DEFAULT_PYTHON_FILES: [&str; 2] = ["test_*.py", "*_test.py"];

/// One test as the plugin reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectedTest {
    /// The pytest node id.
    pub node: String,
    /// The test module's path, relative to the worktree.
    pub file: String,
    #[serde(rename = "class")]
    pub class: Option<String>,
    /// The function's name (without parameters).
    pub function: Option<String>,
    /// The class in the MRO that defines the function, when it is a method.
    pub owner: Option<String>,
    /// The function's source text, decorators included.
    pub source: Option<String>,
    /// Where the source was found (a helper module for an inherited test).
    pub source_file: Option<String>,
    pub source_line: Option<u32>,
    /// The assertion statements by the interpreter's own `ast` (for Python 2 source).
    pub assertions: Vec<String>,
    /// Registered fixture names (`request` and pytest's own plumbing left out).
    pub fixtures: Vec<String>,
    /// Fixture name -> the function that defines it.
    pub fixture_functions: BTreeMap<String, String>,
    /// True when the file matches the configured `python_files`.
    pub test_module: bool,
    /// Why the plugin could not describe the test, if it could not.
    #[serde(default)]
    pub problem: Option<String>,
}

/// A collection error pytest reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectionProblem {
    /// The node (usually a file) that failed to collect.
    pub node: String,
    pub message: String,
}

/// What one collection found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Collection {
    pub tests: Vec<CollectedTest>,
    /// The pytest and Python versions that answered.
    pub pytest: String,
    pub python: String,
}

/// Why collection failed; each message says enough to act on.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    /// A file could not be written or read.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// pytest reported errors while collecting (an import error, a broken conftest).
    #[error(
        "pytest {pytest} could not collect {}: {}",
        first_node(errors),
        first_message(errors)
    )]
    Errors {
        pytest: String,
        errors: Vec<CollectionProblem>,
    },
    /// pytest collected no test from the files (exit status 5, or nothing matched).
    #[error("collected zero tests from {files} (exit status {exit_status}): {tail}")]
    ZeroTests {
        files: String,
        exit_status: i32,
        tail: String,
    },
    /// pytest ended without the plugin's report (it crashed, or a conftest exited early).
    #[error("pytest ended ({outcome}) without reporting what it collected: {tail}")]
    NoReport { outcome: String, tail: String },
    /// Collection outlived its deadline.
    #[error("collection timed out after {seconds}s")]
    Timeout { seconds: u64 },
}

fn first_node(errors: &[CollectionProblem]) -> &str {
    errors.first().map_or("?", |error| error.node.as_str())
}

fn first_message(errors: &[CollectionProblem]) -> String {
    // The last lines of a traceback say what went wrong.
    let message = errors.first().map_or("", |error| error.message.as_str());
    let lines: Vec<&str> = message
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

/// One collection: which files, where, with what.
#[derive(Debug, Clone)]
pub struct CollectRequest<'a> {
    pub environment: &'a Environment,
    pub worktree: &'a Path,
    /// Test files relative to the worktree.
    pub files: &'a [String],
    /// A private directory for the plugin, the file list, the report, HOME and TMPDIR.
    pub scratch: &'a Path,
    pub timeout: Duration,
}

/// Collects the tests in `request.files` without running them.
pub fn collect_tests(request: &CollectRequest) -> Result<Collection, CollectError> {
    let io_error = |context: String| move |source| CollectError::Io { context, source };
    let plugin_dir = request.scratch.join("plugin");
    std::fs::create_dir_all(&plugin_dir)
        .map_err(io_error(format!("create {}", plugin_dir.display())))?;
    let plugin = plugin_dir.join(format!("{PLUGIN_MODULE}.py"));
    std::fs::write(&plugin, COLLECT_PLUGIN)
        .map_err(io_error(format!("write {}", plugin.display())))?;
    let listing = request.scratch.join("files.txt");
    let mut listed = request.files.join("\n");
    listed.push('\n');
    std::fs::write(&listing, listed).map_err(io_error(format!("write {}", listing.display())))?;
    let report = request.scratch.join("collected.jsonl");
    let _ = std::fs::remove_file(&report);
    let private = request.scratch.join("private");
    let launch = PytestLaunch::new(request.environment, request.worktree, &private)
        .plugin_dir(&plugin_dir)
        .writable(request.scratch);
    let arguments: Vec<OsString> = ["-p", PLUGIN_MODULE, "--collect-only", "-q"]
        .into_iter()
        .map(OsString::from)
        .collect();
    let mut command = launch
        .command(&arguments)
        .map_err(io_error(format!("prepare {}", private.display())))?;
    command
        .env("CLAIMFLOW_COLLECT_FILES", &listing)
        .env("CLAIMFLOW_COLLECT_OUT", &report);
    if runs_under_nose(request.worktree) {
        command.env("CLAIMFLOW_COLLECT_NOSE", "1");
    }
    let log = request.scratch.join("collect.log");
    let outcome = run_logged(&mut command, &log, request.timeout).map_err(io_error(format!(
        "run {}",
        request.environment.python.display()
    )))?;
    let exit_status = match outcome {
        Outcome::TimedOut => {
            return Err(CollectError::Timeout {
                seconds: request.timeout.as_secs(),
            });
        }
        Outcome::Exited(code) => code,
        Outcome::Signalled(_) | Outcome::Cancelled => -1,
    };
    let text = match std::fs::read_to_string(&report) {
        Ok(text) => text,
        Err(_) => {
            return Err(CollectError::NoReport {
                outcome: format!("{outcome:?}"),
                tail: log_tail(&log, 12),
            });
        }
    };
    let mut tests = Vec::new();
    let mut errors = Vec::new();
    let mut pytest = String::new();
    let mut python = String::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|error| CollectError::NoReport {
                outcome: format!("unreadable report line ({error})"),
                tail: line.chars().take(200).collect(),
            })?;
        match value.get("kind").and_then(|kind| kind.as_str()) {
            Some("item") => tests.push(serde_json::from_value(value).map_err(|error| {
                CollectError::NoReport {
                    outcome: format!("unreadable item ({error})"),
                    tail: line.chars().take(200).collect(),
                }
            })?),
            Some("error") => errors.push(CollectionProblem {
                node: value["node"].as_str().unwrap_or_default().to_string(),
                message: value["message"].as_str().unwrap_or_default().to_string(),
            }),
            Some("summary") => {
                pytest = value["pytest"].as_str().unwrap_or_default().to_string();
                python = value["python"].as_str().unwrap_or_default().to_string();
            }
            _ => {}
        }
    }
    if !errors.is_empty() {
        return Err(CollectError::Errors { pytest, errors });
    }
    if tests.is_empty() || exit_status == 5 {
        return Err(CollectError::ZeroTests {
            files: request.files.join(", "),
            exit_status,
            tail: log_tail(&log, 8),
        });
    }
    Ok(Collection {
        tests,
        pytest,
        python,
    })
}

/// The `python_files` globs of the configuration file pytest uses (see [`pytest_config_file`]),
/// or pytest's defaults when that file does not set them.
pub fn python_files_patterns(worktree: &Path) -> Vec<String> {
    let split = |value: &str| -> Vec<String> {
        ini_lines(value)
            .iter()
            .flat_map(|line| {
                line.split_whitespace()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let found = pytest_config_file(worktree).and_then(|file| {
        let text = std::fs::read_to_string(&file).ok()?;
        let name = file.file_name()?.to_string_lossy().into_owned();
        if name == "pyproject.toml" {
            return match parse_toml(&text)
                .get("tool.pytest.ini_options")?
                .get("python_files")?
            {
                TomlValue::String(value) => Some(split(value)),
                TomlValue::Strings(values) => Some(values.clone()),
            };
        }
        let section = match name.as_str() {
            "setup.cfg" => "tool:pytest",
            _ => "pytest",
        };
        parse_ini(&text)
            .get(section)?
            .get("python_files")
            .map(|value| split(value))
    });
    match found {
        Some(patterns) if !patterns.is_empty() => patterns,
        _ => DEFAULT_PYTHON_FILES
            .iter()
            .map(|pattern| pattern.to_string())
            .collect(),
    }
}

/// True when the project at `worktree` runs its tests with nose (a `[nosetests]` section in
/// `setup.cfg`, `nosetests` among tox's commands, nose's collector as the test suite): its test
/// modules are named by nose's rule, not pytest's (arrow's `tests/arrow_tests.py` until 2020).
pub fn runs_under_nose(worktree: &Path) -> bool {
    let read = |name: &str| std::fs::read_to_string(worktree.join(name)).unwrap_or_default();
    let setup_cfg = read("setup.cfg");
    parse_ini(&setup_cfg).contains_key("nosetests")
        || parse_ini(&read("tox.ini")).iter().any(|(section, values)| {
            section.starts_with("testenv")
                && values
                    .get("commands")
                    .is_some_and(|commands| commands.contains("nosetests"))
        })
        || read("setup.py").contains("nose.collector")
}

/// nose's `testMatch` (`(?:^|[\b_\./-])[Tt]est`) on a module's file name: a word starting
/// `test` or `Test` at the start or after `_`, `.` or `-` (`arrow_tests.py`, `test_api.py`).
pub fn is_nose_test_module(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".py") else {
        return false;
    };
    let bytes = stem.as_bytes();
    (0..bytes.len()).any(|start| {
        let at_boundary = start == 0 || matches!(bytes[start - 1], b'_' | b'.' | b'-');
        at_boundary && (stem[start..].starts_with("test") || stem[start..].starts_with("Test"))
    })
}

/// The touched files that exist in the worktree and are test modules by `python_files` (or, for
/// a project that runs its tests with nose, by nose's rule too).
pub fn test_modules(worktree: &Path, touched: &[String]) -> Vec<String> {
    let patterns: Vec<glob::Pattern> = python_files_patterns(worktree)
        .iter()
        .filter_map(|pattern| glob::Pattern::new(pattern).ok())
        .collect();
    let nose = runs_under_nose(worktree);
    let mut modules: Vec<String> = touched
        .iter()
        .filter(|file| file.ends_with(".py") && worktree.join(file.as_str()).is_file())
        .filter(|file| {
            let name = Path::new(file.as_str())
                .file_name()
                .unwrap_or_default()
                .to_string_lossy();
            // A pattern with a slash matches the whole path, as pytest does.
            (nose && is_nose_test_module(&name))
                || patterns.iter().any(|pattern| {
                    if pattern.as_str().contains('/') {
                        pattern.matches(file)
                    } else {
                        pattern.matches(&name)
                    }
                })
        })
        .cloned()
        .collect();
    modules.sort();
    modules.dedup();
    modules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_is_valid_python_3_source() {
        // Python 2.7 compatibility is exercised by the integration tests, under a real 2.7.
        use rustpython_parser::Parse;
        rustpython_parser::ast::Suite::parse(COLLECT_PLUGIN, "collect_plugin.py").unwrap();
    }

    #[test]
    fn test_modules_follow_python_files() {
        let directory = tempfile::tempdir().unwrap();
        let root = directory.path();
        std::fs::create_dir_all(root.join("tests")).unwrap();
        for file in [
            "tests/test_a.py",
            "tests/helpers.py",
            "tests/check_b.py",
            "tests/conftest.py",
        ] {
            std::fs::write(root.join(file), "").unwrap();
        }
        let touched: Vec<String> = [
            "tests/test_a.py",
            "tests/helpers.py",
            "tests/check_b.py",
            "tests/gone_test.py",
        ]
        .iter()
        .map(|file| file.to_string())
        .collect();
        assert_eq!(test_modules(root, &touched), ["tests/test_a.py"]);
        std::fs::write(
            root.join("setup.cfg"),
            "[tool:pytest]\npython_files = check_*.py test_*.py\n",
        )
        .unwrap();
        assert_eq!(
            test_modules(root, &touched),
            ["tests/check_b.py", "tests/test_a.py"]
        );
        std::fs::write(
            root.join("pyproject.toml"),
            "[tool.pytest.ini_options]\npython_files = [\"check_*.py\"]\n",
        )
        .unwrap();
        assert_eq!(test_modules(root, &touched), ["tests/check_b.py"]);
        // pytest reads one file: a pytest.ini without python_files means the defaults.
        std::fs::write(root.join("pytest.ini"), "[pytest]\naddopts = -x\n").unwrap();
        assert_eq!(test_modules(root, &touched), ["tests/test_a.py"]);
    }

    #[test]
    fn a_nose_project_names_its_test_modules_by_noses_rule() {
        let directory = tempfile::tempdir().unwrap();
        let root = directory.path();
        std::fs::create_dir_all(root.join("tests")).unwrap();
        for file in [
            "tests/arrow_tests.py",
            "tests/utils.py",
            "tests/test_api.py",
        ] {
            std::fs::write(root.join(file), "").unwrap();
        }
        let touched: Vec<String> = [
            "tests/arrow_tests.py",
            "tests/utils.py",
            "tests/test_api.py",
        ]
        .iter()
        .map(|file| file.to_string())
        .collect();
        assert_eq!(test_modules(root, &touched), ["tests/test_api.py"]);
        std::fs::write(
            root.join("tox.ini"),
            "[testenv]\ndeps = nose\ncommands = nosetests\n",
        )
        .unwrap();
        assert!(runs_under_nose(root));
        assert_eq!(
            test_modules(root, &touched),
            ["tests/arrow_tests.py", "tests/test_api.py"]
        );
        assert!(is_nose_test_module("Test.py"));
        assert!(is_nose_test_module("util-tests.py"));
        assert!(!is_nose_test_module("latest.py"));
        assert!(!is_nose_test_module("contest.py"));
    }
}
