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

use super::toolchain::Toolchain;

/// The module name pytest loads the result plugin as.
pub const PLUGIN_MODULE: &str = "claimflow_result_plugin";

/// The plugin's source, written into each run's directory at run time.
pub const PLUGIN_SOURCE: &str = include_str!("result_plugin.py");

/// Plugins whose behaviour would make runs differ from one another or from a plain run: random
/// order, parallel workers, reruns of failures, coverage gates, repeats, their own timeouts.
/// Entry-point names; blocked only when installed, so pytest never sees an unknown name.
const UNWANTED_PLUGINS: &[&str] = &[
    "randomly",
    "random_order",
    "xdist",
    "xdist.looponfail",
    "rerunfailures",
    "pytest_cov",
    "cov",
    "flaky",
    "repeat",
    "timeout",
];

/// Variables inherited from the caller when set: the dynamic loader's path, which some
/// interpreters are built to need. Nothing else of the caller's environment reaches mined code.
const INHERITED: &[&str] = &["LD_LIBRARY_PATH"];

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
    pub toolchain: &'a Toolchain,
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

/// Builds the pytest command of one run. The caller writes the plugin and selection files first
/// (see [`super::runner`]).
pub fn pytest_command(invocation: &PytestInvocation) -> Command {
    let PytestInvocation {
        toolchain,
        worktree,
        files,
        test_files,
        run,
    } = invocation;
    let mut command = Command::new(&toolchain.python);
    command.arg("-m").arg("pytest");
    command.arg("-p").arg(PLUGIN_MODULE);
    command.arg("-o").arg("addopts=");
    command.arg("-o").arg("console_output_style=classic");
    command.arg("-p").arg("no:cacheprovider");
    for plugin in UNWANTED_PLUGINS {
        if toolchain.plugins.contains(*plugin) {
            command.arg("-p").arg(format!("no:{plugin}"));
        }
    }
    command.arg("--rootdir").arg(worktree);
    command.arg("-q");
    command.arg("--");
    command.args(test_files.iter());

    command.current_dir(worktree);
    command.env_clear();
    for name in INHERITED {
        if let Some(value) = std::env::var_os(name)
            && !looks_secret(name)
        {
            command.env(name, value);
        }
    }
    command.env("PATH", search_path(toolchain));
    command.env("HOME", files.home());
    command.env("TMPDIR", files.tmp());
    command.env("LC_ALL", "C.UTF-8");
    command.env("LANG", "C.UTF-8");
    command.env("TZ", "UTC");
    command.env("PYTHONDONTWRITEBYTECODE", "1");
    command.env("PYTHONHASHSEED", hash_seed(*run).to_string());
    command.env("PYTHONIOENCODING", "utf-8");
    command.env("PYTHONPATH", python_path(toolchain, worktree, files));
    command.env("CLAIMFLOW_RESULT_FILE", files.records());
    command.env("CLAIMFLOW_SELECT_FILE", files.selection());

    command.stdin(Stdio::null());
    // Its own process group, so a timeout or the end of a run can kill everything it started.
    command.process_group(0);
    command
}

/// The interpreter's directory first (a virtual environment's scripts), then the system's.
fn search_path(toolchain: &Toolchain) -> OsString {
    let mut entries: Vec<PathBuf> = Vec::new();
    if let Some(bin) = toolchain.python.parent() {
        entries.push(bin.to_path_buf());
    }
    entries.push(PathBuf::from("/usr/local/bin"));
    entries.push(PathBuf::from("/usr/bin"));
    entries.push(PathBuf::from("/bin"));
    std::env::join_paths(entries).expect("paths without separators")
}

/// The plugin, the environment's extra entries, then the worktree (and its `src/` layout).
fn python_path(toolchain: &Toolchain, worktree: &Path, files: &RunFiles) -> OsString {
    let mut entries = vec![files.plugin_dir()];
    entries.extend(toolchain.extra_paths.iter().cloned());
    entries.push(worktree.to_path_buf());
    let source_layout = worktree.join("src");
    if source_layout.is_dir() {
        entries.push(source_layout);
    }
    std::env::join_paths(entries).expect("paths without separators")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn toolchain(plugins: &[&str]) -> Toolchain {
        Toolchain {
            python: PathBuf::from("/venv/bin/python"),
            python_version: "3.11.7".into(),
            pytest_version: "8.3.5".into(),
            plugins: plugins.iter().map(|name| name.to_string()).collect(),
            extra_paths: Vec::new(),
        }
    }

    fn build(plugins: &[&str], run: u32) -> Command {
        let files = RunFiles::new("/work/oracle/slot-0/run");
        let test_files = vec!["tests/test_a.py".to_string()];
        pytest_command(&PytestInvocation {
            toolchain: &toolchain(plugins),
            worktree: Path::new("/work/worktrees/oracle-0"),
            files: &files,
            test_files: &test_files,
            run,
        })
    }

    fn arguments(command: &Command) -> Vec<String> {
        command
            .get_args()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect()
    }

    fn environment(command: &Command) -> BTreeSet<String> {
        command
            .get_envs()
            .filter(|(_, value)| value.is_some())
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn environment_is_the_allow_list_and_nothing_secret() {
        let command = build(&[], 3);
        let names = environment(&command);
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
            "PYTHONPATH",
            "TMPDIR",
            "TZ",
        ]
        .into_iter()
        .map(String::from)
        .chain(
            INHERITED
                .iter()
                .filter(|name| std::env::var_os(name).is_some())
                .map(|name| name.to_string()),
        )
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
        for (name, value) in command.get_envs() {
            if name == "HOME" || name == "TMPDIR" {
                assert!(
                    Path::new(value.unwrap()).starts_with("/work/oracle/slot-0/run"),
                    "{name:?}"
                );
            }
        }
    }

    #[test]
    fn blocks_only_installed_unwanted_plugins() {
        let plain = arguments(&build(&[], 0));
        assert!(!plain.iter().any(|arg| arg == "no:xdist"));
        assert!(plain.iter().any(|arg| arg == "no:cacheprovider"));
        assert!(plain.iter().any(|arg| arg == "addopts="));
        let loaded = arguments(&build(&["xdist", "randomly", "subtests"], 0));
        assert!(loaded.iter().any(|arg| arg == "no:xdist"));
        assert!(loaded.iter().any(|arg| arg == "no:randomly"));
        assert!(!loaded.iter().any(|arg| arg == "no:subtests"));
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
