//! The one place a pytest command is built.
//!
//! Mined code is untrusted and its configuration is not ours, so the command starts from an empty
//! environment and adds only what a run needs: no API keys or tokens, no `PYTEST_ADDOPTS`, a private
//! `HOME` and `TMPDIR`, no bytecode, and a `PYTHONHASHSEED` derived from the run index (so run `i`
//! at the parent and run `i` at the child see the same hash order). The repository's `addopts`,
//! random ordering, parallelism, reruns, coverage and the cache are switched off; the crate's result
//! plugin records every test phase, and selects the claims' node ids from a file so a command line
//! carries only test files.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::python::{Environment, PytestLaunch};

/// The module name pytest loads the result plugin as.
pub const PLUGIN_MODULE: &str = "claimflow_result_plugin";

/// The plugin's source, written into each run's directory at run time.
pub const PLUGIN_SOURCE: &str = include_str!("result_plugin.py");

/// Plugins whose behaviour would make runs differ from one another or from a plain run, beyond the
/// random order and parallel workers [`PytestLaunch`] already blocks: reruns of failures, coverage
/// gates, repeats, their own timeouts, another random order. (distribution, entry-point name);
/// blocked only when installed, so pytest never sees an unknown name.
const UNWANTED_PLUGINS: &[(&str, &str)] = &[
    ("pytest-rerunfailures", "rerunfailures"),
    ("pytest-cov", "pytest_cov"),
    ("flaky", "flaky"),
    ("pytest-repeat", "repeat"),
    ("pytest-timeout", "timeout"),
    ("pytest-random-order", "random_order"),
];

/// The files of one run's private directory.
#[derive(Debug, Clone)]
pub struct RunFiles {
    /// The run's directory (private `HOME`, `TMPDIR`, the plugin, the record file).
    pub dir: PathBuf,
}

impl RunFiles {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        RunFiles { dir: dir.into() }
    }

    pub fn home(&self) -> PathBuf {
        self.dir.join("home")
    }

    pub fn tmp(&self) -> PathBuf {
        self.dir.join("tmp")
    }

    /// Where the result plugin's module lives (a `PYTHONPATH` entry).
    pub fn plugin_dir(&self) -> PathBuf {
        self.dir.join("plugin")
    }

    /// The JSON-lines file the plugin writes.
    pub fn records(&self) -> PathBuf {
        self.dir.join("records.jsonl")
    }

    /// The node ids to keep, one per line.
    pub fn selection(&self) -> PathBuf {
        self.dir.join("select.txt")
    }

    pub fn stdout(&self) -> PathBuf {
        self.dir.join("stdout.txt")
    }

    pub fn stderr(&self) -> PathBuf {
        self.dir.join("stderr.txt")
    }
}

/// Everything one pytest invocation depends on.
#[derive(Debug, Clone)]
pub struct PytestInvocation<'a> {
    pub environment: &'a Environment,
    /// The checkout the tests run in (the working directory and rootdir).
    pub worktree: &'a Path,
    pub files: &'a RunFiles,
    /// Test files, relative to the worktree.
    pub test_files: &'a [String],
    /// The run index; `PYTHONHASHSEED` is derived from it.
    pub run: u32,
}

/// The `PYTHONHASHSEED` of run `run`: the same at the parent and the child.
pub fn hash_seed(run: u32) -> u32 {
    run
}

/// True for variable names that look like credentials; never passed to mined code even if a
/// future allow-list names them.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH"]
        .iter()
        .any(|word| upper.contains(word))
}

/// Builds the pytest command of one run on top of [`PytestLaunch`] (the allow-listed environment,
/// private `HOME` and `TMPDIR` under the run's directory, the worktree on `PYTHONPATH`, `addopts`,
/// the cache, random order and workers switched off). The caller writes the plugin and selection
/// files first (see [`super::runner`]).
pub fn pytest_command(invocation: &PytestInvocation) -> std::io::Result<Command> {
    let PytestInvocation {
        environment,
        worktree,
        files,
        test_files,
        run,
    } = invocation;
    let mut arguments: Vec<OsString> = vec!["-p".into(), PLUGIN_MODULE.into()];
    arguments.extend(["-o".into(), "console_output_style=classic".into()]);
    for (distribution, plugin) in UNWANTED_PLUGINS {
        if environment.has_distribution(distribution) {
            arguments.extend(["-p".into(), format!("no:{plugin}").into()]);
        }
    }
    arguments.push("-q".into());
    arguments.push("--".into());
    arguments.extend(test_files.iter().map(OsString::from));
    let mut command = PytestLaunch::new(environment, worktree, &files.dir)
        .hash_seed(hash_seed(*run))
        .plugin_dir(files.plugin_dir())
        .command(&arguments)?;
    command.env("TZ", "UTC");
    command.env("PYTHONIOENCODING", "utf-8");
    command.env("CLAIMFLOW_RESULT_FILE", files.records());
    command.env("CLAIMFLOW_SELECT_FILE", files.selection());
    command.stdin(Stdio::null());
    // Its own process group, so a timeout or the end of a run can kill everything it started.
    command.process_group(0);
    Ok(command)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn environment(distributions: &[&str]) -> Environment {
        Environment {
            root: PathBuf::from("/venv"),
            python: PathBuf::from("/venv/bin/python"),
            interpreter: "3.11.7".into(),
            pytest: "8.3.5".into(),
            installer: "pip".into(),
            digest: "abc".into(),
            site_packages: PathBuf::from("/venv/lib/python3.11/site-packages"),
            python_path: Vec::new(),
            distributions: distributions
                .iter()
                .map(|name| (name.to_string(), "1.0".to_string()))
                .collect(),
            dropped: Vec::new(),
            released_before: None,
        }
    }

    fn build(distributions: &[&str], run: u32) -> Command {
        let scratch = std::env::temp_dir().join(format!("claimflow-command-test-{run}"));
        let files = RunFiles::new(scratch.join("run"));
        let test_files = vec!["tests/test_a.py".to_string()];
        pytest_command(&PytestInvocation {
            environment: &environment(distributions),
            worktree: Path::new("/work/worktrees/oracle-0"),
            files: &files,
            test_files: &test_files,
            run,
        })
        .expect("the run directory can be created")
    }

    fn arguments(command: &Command) -> Vec<String> {
        command
            .get_args()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect()
    }

    fn variable_names(command: &Command) -> BTreeSet<String> {
        command
            .get_envs()
            .filter(|(_, value)| value.is_some())
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn environment_is_the_allow_list_and_nothing_secret() {
        let command = build(&[], 3);
        let names = variable_names(&command);
        assert!(!names.iter().any(|name| looks_secret(name)), "{names:?}");
        assert!(!names.contains("PYTEST_ADDOPTS"));
        let expected: BTreeSet<String> = [
            "CLAIMFLOW_RESULT_FILE",
            "CLAIMFLOW_SELECT_FILE",
            "HOME",
            "LANG",
            "LC_ALL",
            "PATH",
            "PYTHONDONTWRITEBYTECODE",
            "PYTHONHASHSEED",
            "PYTHONIOENCODING",
            "PYTHONNOUSERSITE",
            "PYTHONPATH",
            "TMPDIR",
            "TZ",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        assert_eq!(names, expected);
        let seed = command
            .get_envs()
            .find(|(name, _)| *name == "PYTHONHASHSEED")
            .and_then(|(_, value)| value)
            .unwrap();
        assert_eq!(seed, "3");
    }

    #[test]
    fn home_and_tmp_are_private_to_the_run() {
        let command = build(&[], 0);
        let run_dir = std::env::temp_dir().join("claimflow-command-test-0/run");
        for (name, value) in command.get_envs() {
            if name == "HOME" || name == "TMPDIR" {
                assert!(Path::new(value.unwrap()).starts_with(&run_dir), "{name:?}");
            }
        }
    }

    #[test]
    fn blocks_only_installed_unwanted_plugins() {
        let plain = arguments(&build(&[], 0));
        assert!(!plain.iter().any(|arg| arg == "no:xdist"));
        assert!(plain.iter().any(|arg| arg == "no:cacheprovider"));
        assert!(plain.iter().any(|arg| arg == "addopts="));
        let loaded = arguments(&build(
            &[
                "pytest-xdist",
                "pytest-rerunfailures",
                "pytest-cov",
                "pytest-subtests",
            ],
            0,
        ));
        assert!(loaded.iter().any(|arg| arg == "no:xdist"));
        assert!(loaded.iter().any(|arg| arg == "no:rerunfailures"));
        assert!(loaded.iter().any(|arg| arg == "no:pytest_cov"));
        assert!(!loaded.iter().any(|arg| arg.contains("subtests")));
    }

    #[test]
    fn command_line_carries_files_not_node_ids() {
        let arguments = arguments(&build(&[], 0));
        assert_eq!(arguments.last().unwrap(), "tests/test_a.py");
        assert!(!arguments.iter().any(|arg| arg.contains("::")));
    }

    #[test]
    fn run_index_gives_the_same_seed_at_parent_and_child() {
        assert_eq!(hash_seed(4), hash_seed(4));
        assert_ne!(hash_seed(1), hash_seed(2));
    }
}
