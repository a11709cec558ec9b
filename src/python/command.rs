//! The one place a pytest process is built: an explicit environment on the scrubbed default of
//! [`crate::process::environment`] (never the caller's secrets), a private HOME and TMPDIR, no
//! bytecode, a fixed hash seed, the worktree first on `PYTHONPATH` so the package under test is the checked-out one, and the repository's pytest
//! configuration neutralized where it gets in the way of collecting or running single tests, and
//! no network where the kernel allows a user + network namespace ([`crate::sandbox`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::config_files::{parse_ini, parse_toml};
use super::environment_request::Environment;
use crate::process::ChildEnvironment;

/// Where a pytest process runs and what it may see.
#[derive(Debug, Clone)]
pub struct PytestLaunch<'a> {
    environment: &'a Environment,
    /// The checked-out commit: the current directory, the rootdir and the first `PYTHONPATH` entry.
    worktree: &'a Path,
    /// A private directory for `HOME` and `TMPDIR` (created by [`PytestLaunch::command`]).
    private: &'a Path,
    /// `PYTHONHASHSEED`; the oracle derives it from the run index.
    hash_seed: u32,
    /// Directories holding plugins loaded with `-p` (after the worktree and the environment).
    plugin_dirs: Vec<PathBuf>,
    /// Where pytest's cache provider keeps its files, for a plugin that needs it; None (the
    /// default) turns the provider off.
    cache_dir: Option<PathBuf>,
    /// Directories outside the worktree and the private one that the process writes (a report, a
    /// database); everything else is read-only to it where the kernel allows.
    writable: Vec<PathBuf>,
}

impl<'a> PytestLaunch<'a> {
    /// A launch in `worktree` with `environment`; `private` holds `HOME` and `TMPDIR`. Hash seed 0.
    pub fn new(environment: &'a Environment, worktree: &'a Path, private: &'a Path) -> Self {
        PytestLaunch {
            environment,
            worktree,
            private,
            hash_seed: 0,
            plugin_dirs: Vec::new(),
            cache_dir: None,
            writable: Vec::new(),
        }
    }

    /// Sets `PYTHONHASHSEED` (the oracle derives it from the run index).
    pub fn hash_seed(mut self, seed: u32) -> Self {
        self.hash_seed = seed;
        self
    }

    /// Leaves pytest's cache provider on, its files in `directory` (outside the worktree), for a
    /// plugin that reads its options. Turning it off and on again with `-p cacheprovider` warns
    /// that the module was imported before it could be rewritten, which a suite that turns
    /// warnings into errors fails on.
    pub fn cache_dir(mut self, directory: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(directory.into());
        self
    }

    /// Lets the process write in `directory` (created if missing), outside the worktree and the
    /// private directory: where a plugin writes its report, testmon its database.
    pub fn writable(mut self, directory: impl Into<PathBuf>) -> Self {
        self.writable.push(directory.into());
        self
    }

    /// Puts a directory of plugins (loaded by the caller with `-p name`) on `PYTHONPATH`.
    pub fn plugin_dir(mut self, directory: impl Into<PathBuf>) -> Self {
        self.plugin_dirs.push(directory.into());
        self
    }

    /// `python -m pytest <neutralizing options> <arguments>` with an allow-listed environment.
    pub fn command(&self, arguments: &[OsString]) -> std::io::Result<Command> {
        let home = self.private.join("home");
        let tmp = self.private.join("tmp");
        std::fs::create_dir_all(&home)?;
        std::fs::create_dir_all(&tmp)?;
        for directory in &self.writable {
            std::fs::create_dir_all(directory)?;
        }
        let mut command = Command::new(&self.environment.python);
        // Mined code runs here: nothing of claimflow's environment passes, not even its PATH.
        ChildEnvironment::scrubbed()
            .set("PATH", self.path_variable()?)
            .set("HOME", &home)
            .set("TMPDIR", &tmp)
            .python_quiet()
            .set("PYTHONHASHSEED", self.hash_seed.to_string())
            .set(
                "PYTHONPATH",
                python_path_variable(&self.python_path(), self.worktree)?,
            )
            .apply(&mut command);
        command
            .current_dir(self.worktree)
            .arg("-m")
            .arg("pytest")
            .args(self.neutralizing_options())
            .arg("--rootdir")
            .arg(self.worktree)
            .arg("--confcutdir")
            .arg(self.worktree);
        // Without a configuration of its own, pytest would look for one above the worktree (in the
        // workdir, the user's project, their home): an empty one stops the search.
        if pytest_config_file(self.worktree).is_none() {
            let empty = self.private.join("pytest.ini");
            std::fs::write(&empty, "[pytest]\n")?;
            command.arg("-c").arg(empty);
        }
        command.args(arguments);
        // Mined code runs here: no network where the kernel allows it, and writes only to the
        // worktree, the private directory and what the caller named.
        let mut confinement = crate::sandbox::Confinement::offline()
            .writable(self.worktree)
            .writable(self.private)
            .visible(&self.environment.root);
        if let Some(directory) = &self.cache_dir {
            std::fs::create_dir_all(directory)?;
            confinement = confinement.writable(directory);
        }
        for directory in &self.writable {
            confinement = confinement.writable(directory);
        }
        confinement.apply(&mut command);
        Ok(command)
    }

    /// The worktree, its `src/` when the package lives there, then the environment's own entries.
    pub fn python_path(&self) -> Vec<PathBuf> {
        let mut entries = vec![self.worktree.to_path_buf()];
        if has_src_layout(self.worktree) {
            entries.push(self.worktree.join("src"));
        }
        entries.extend(self.environment.python_path.iter().cloned());
        entries.extend(self.plugin_dirs.iter().cloned());
        entries
    }

    /// The environment's `bin` first, then the system's. Tests that start `python` by name need
    /// the environment's, so one under a directory named with a `:` is refused with what to do.
    fn path_variable(&self) -> std::io::Result<OsString> {
        let mut directories: Vec<PathBuf> = Vec::new();
        if let Some(bin) = self.environment.python.parent() {
            directories.push(bin.to_path_buf());
        }
        directories.extend(["/usr/local/bin", "/usr/bin", "/bin"].map(PathBuf::from));
        std::env::join_paths(&directories).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "the Python environment {} lies under a directory whose name holds `:`, which \
                     `PATH` cannot carry: set CLAIMFLOW_CACHE_DIR to a directory without one",
                    self.environment.root.display()
                ),
            )
        })
    }

    /// Options that keep a repository's configuration from breaking collection or verdicts: no cache
    /// writes into the worktree, no `addopts` (coverage gates, `-x`, `-n auto`), no random order, no
    /// parallel workers.
    fn neutralizing_options(&self) -> Vec<String> {
        let mut options = match &self.cache_dir {
            None => vec!["-p".to_string(), "no:cacheprovider".to_string()],
            Some(directory) => vec![
                "-o".to_string(),
                format!("cache_dir={}", directory.display()),
            ],
        };
        options.extend(["-o".to_string(), "addopts=".to_string()]);
        for (distribution, plugin) in [("pytest-randomly", "randomly"), ("pytest-xdist", "xdist")] {
            if self.environment.has_distribution(distribution) {
                options.push("-p".to_string());
                options.push(format!("no:{plugin}"));
            }
        }
        options
    }
}

/// The file pytest takes its configuration from inside `worktree`, in pytest's order of precedence:
/// `pytest.ini` or `.pytest.ini` whatever they hold, else the first of `pyproject.toml`, `tox.ini`,
/// `setup.cfg` with a pytest section.
pub fn pytest_config_file(worktree: &Path) -> Option<PathBuf> {
    for name in ["pytest.ini", ".pytest.ini"] {
        if worktree.join(name).is_file() {
            return Some(worktree.join(name));
        }
    }
    let read = |name: &str| std::fs::read_to_string(worktree.join(name)).ok();
    if read("pyproject.toml")
        .is_some_and(|text| parse_toml(&text).contains_key("tool.pytest.ini_options"))
    {
        return Some(worktree.join("pyproject.toml"));
    }
    if read("tox.ini").is_some_and(|text| parse_ini(&text).contains_key("pytest")) {
        return Some(worktree.join("tox.ini"));
    }
    if read("setup.cfg").is_some_and(|text| parse_ini(&text).contains_key("tool:pytest")) {
        return Some(worktree.join("setup.cfg"));
    }
    None
}

/// `PYTHONPATH` holding `entries` for a process started in `cwd`. The variable is split at `:`, so
/// an entry whose path holds one (a project in `/data/run:2`) is written relative to `cwd`
/// instead: the directories the two share, colon included, drop out, and Python makes the entry
/// absolute again when it starts (`site` absolutizes `sys.path`). An entry that still holds a `:`
/// (a directory of its own named so) is refused, naming it.
pub fn python_path_variable(entries: &[PathBuf], cwd: &Path) -> std::io::Result<OsString> {
    let written: Vec<PathBuf> = entries
        .iter()
        .map(|entry| {
            if entry.as_os_str().as_encoded_bytes().contains(&b':') {
                relative_to(entry, cwd)
            } else {
                entry.clone()
            }
        })
        .collect();
    std::env::join_paths(&written).map_err(|_| {
        let culprit = written
            .iter()
            .zip(entries)
            .find(|(written, _)| written.as_os_str().as_encoded_bytes().contains(&b':'))
            .map_or_else(PathBuf::new, |(_, entry)| entry.clone());
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "cannot put {} on PYTHONPATH: a directory of its own holds `:`, the separator \
                 of that variable; rename it",
                culprit.display()
            ),
        )
    })
}

/// `path` relative to `base`, both made physical first (a `..` walks the real parent, not the
/// one a symlink was reached through); `.` for `base` itself.
fn relative_to(path: &Path, base: &Path) -> PathBuf {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let base = base.canonicalize().unwrap_or_else(|_| base.to_path_buf());
    let shared = path
        .components()
        .zip(base.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut relative: PathBuf = base.components().skip(shared).map(|_| "..").collect();
    relative.extend(path.components().skip(shared));
    if relative.as_os_str().is_empty() {
        relative.push(".");
    }
    relative
}

/// True when the package under test lives in `src/` (a package directory there).
fn has_src_layout(worktree: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(worktree.join("src")) else {
        return false;
    };
    entries.flatten().any(|entry| {
        entry.path().join("__init__.py").is_file()
            || entry.path().extension().is_some_and(|e| e == "py")
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn environment(distributions: &[&str]) -> Environment {
        Environment {
            root: PathBuf::from("/cache/envs/abc"),
            python: PathBuf::from("/cache/envs/abc/bin/python"),
            interpreter: "3.11.7".into(),
            pytest: "8.3.4".into(),
            installer: "pip".into(),
            digest: "abc".into(),
            site_packages: PathBuf::from("/cache/envs/abc/lib/python3.11/site-packages"),
            python_path: vec![],
            distributions: distributions
                .iter()
                .map(|name| (name.to_string(), "1.0".to_string()))
                .collect::<BTreeMap<_, _>>(),
            dropped: vec![],
            released_before: None,
        }
    }

    #[test]
    fn finds_the_config_pytest_would_use() {
        let directory = tempfile::tempdir().unwrap();
        let root = directory.path();
        std::fs::write(root.join("setup.cfg"), "[metadata]\nname = x\n").unwrap();
        std::fs::write(root.join("pyproject.toml"), "[project]\nname = \"x\"\n").unwrap();
        assert_eq!(pytest_config_file(root), None);
        std::fs::write(root.join("tox.ini"), "[pytest]\naddopts = -x\n").unwrap();
        assert_eq!(pytest_config_file(root), Some(root.join("tox.ini")));
        std::fs::write(root.join("pytest.ini"), "").unwrap();
        assert_eq!(pytest_config_file(root), Some(root.join("pytest.ini")));
    }

    #[test]
    fn the_environment_is_an_allow_list_without_secrets() {
        // The names are exactly the allow-list: nothing of the caller's environment (no
        // `*_API_KEY`, no `*_TOKEN`) can reach a process that runs mined code.
        let directory = tempfile::tempdir().unwrap();
        let worktree = directory.path().join("worktree");
        std::fs::create_dir_all(worktree.join("src/demo")).unwrap();
        std::fs::write(worktree.join("src/demo/__init__.py"), "").unwrap();
        let environment = environment(&["pytest-xdist"]);
        let private = directory.path().join("private");
        let launch = PytestLaunch::new(&environment, &worktree, &private)
            .hash_seed(7)
            .plugin_dir("/plugins");
        let command = launch.command(&["tests/test_a.py".into()]).unwrap();
        let variables: BTreeMap<String, String> = command
            .get_envs()
            .map(|(name, value)| {
                (
                    name.to_string_lossy().into_owned(),
                    value.unwrap().to_string_lossy().into_owned(),
                )
            })
            .collect();
        let names: Vec<&str> = variables.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "HOME",
                "LANG",
                "LC_ALL",
                "PATH",
                "PYTHONDONTWRITEBYTECODE",
                "PYTHONHASHSEED",
                "PYTHONNOUSERSITE",
                "PYTHONPATH",
                "TMPDIR"
            ]
        );
        assert_eq!(variables["PYTHONHASHSEED"], "7");
        assert_eq!(
            variables["PYTHONPATH"],
            format!("{}:{}/src:/plugins", worktree.display(), worktree.display())
        );
        let arguments: Vec<String> = command
            .get_args()
            .map(|argument| argument.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            arguments[..8],
            [
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "-o",
                "addopts=",
                "-p",
                "no:xdist"
            ]
        );
        assert_eq!(arguments.last().unwrap(), "tests/test_a.py");
        // A plugin that needs the cache provider keeps it on, once, with its files elsewhere.
        let cached = PytestLaunch::new(&environment, &worktree, &private)
            .cache_dir("/scratch/pytest-cache")
            .command(&[])
            .unwrap();
        let cached: Vec<String> = cached
            .get_args()
            .map(|argument| argument.to_string_lossy().into_owned())
            .collect();
        assert!(
            !cached
                .iter()
                .any(|argument| argument.contains("cacheprovider"))
        );
        assert!(cached.contains(&"cache_dir=/scratch/pytest-cache".to_string()));
        let config = arguments
            .iter()
            .position(|argument| argument == "-c")
            .unwrap();
        assert_eq!(
            arguments[config + 1],
            private.join("pytest.ini").to_string_lossy()
        );
        std::fs::write(
            worktree.join("setup.cfg"),
            "[tool:pytest]\npython_files = t_*.py\n",
        )
        .unwrap();
        let command = launch.command(&[]).unwrap();
        assert!(
            !command.get_args().any(|argument| argument == "-c"),
            "the repository's own config is used"
        );
    }

    /// Regression: a worktree under a directory named with a `:` panicked on every pytest launch
    /// (`join_paths` refused the `PYTHONPATH`); its entries are written relative to the worktree.
    #[test]
    fn a_colon_in_the_project_path_does_not_panic_the_launch() {
        let directory = tempfile::tempdir().unwrap();
        let project = directory.path().join("run:2");
        let worktree = project.join(".claimflow/worktrees/oracle-0");
        std::fs::create_dir_all(worktree.join("src/demo")).unwrap();
        std::fs::write(worktree.join("src/demo/__init__.py"), "").unwrap();
        let plugins = project.join(".claimflow/scratch/plugin");
        std::fs::create_dir_all(&plugins).unwrap();
        let environment = environment(&[]);
        let private = project.join(".claimflow/scratch/private");
        let command = PytestLaunch::new(&environment, &worktree, &private)
            .plugin_dir(&plugins)
            .command(&[])
            .unwrap();
        let python_path = command
            .get_envs()
            .find(|(name, _)| *name == "PYTHONPATH")
            .and_then(|(_, value)| value)
            .unwrap();
        assert_eq!(python_path, ".:src:../../scratch/plugin");
        let split: Vec<PathBuf> = std::env::split_paths(python_path).collect();
        for (entry, expected) in split
            .iter()
            .zip([&worktree, &worktree.join("src"), &plugins])
        {
            assert_eq!(
                worktree.join(entry).canonicalize().unwrap(),
                expected.canonicalize().unwrap()
            );
        }
        // A directory of its own named with a colon cannot be carried: an error, not a panic.
        let odd = directory.path().join("elsewhere/a:b");
        std::fs::create_dir_all(&odd).unwrap();
        let refused = PytestLaunch::new(&environment, &worktree, &private)
            .plugin_dir(&odd)
            .command(&[])
            .unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
        assert!(refused.to_string().contains("a:b"), "{refused}");
    }
}
