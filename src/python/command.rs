//! The one place a pytest process is built: an explicit environment from an allow-list (never the
//! caller's secrets), a private HOME and TMPDIR, no bytecode, a fixed hash seed, the worktree first
//! on `PYTHONPATH` so the package under test is the checked-out one, and the repository's pytest
//! configuration neutralized where it gets in the way of collecting or running single tests.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::environment::Environment;

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
        }
    }

    /// Sets `PYTHONHASHSEED` (the oracle derives it from the run index).
    pub fn hash_seed(mut self, seed: u32) -> Self {
        self.hash_seed = seed;
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
        let mut command = Command::new(&self.environment.python);
        command
            .current_dir(self.worktree)
            .env_clear()
            .env("PATH", self.path_variable())
            .env("HOME", &home)
            .env("TMPDIR", &tmp)
            .env("LANG", "C.UTF-8")
            .env("LC_ALL", "C.UTF-8")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONHASHSEED", self.hash_seed.to_string())
            .env("PYTHONNOUSERSITE", "1")
            .env(
                "PYTHONPATH",
                std::env::join_paths(self.python_path()).expect("paths without separators"),
            )
            .arg("-m")
            .arg("pytest")
            .args(self.neutralizing_options())
            .arg("--rootdir")
            .arg(self.worktree)
            .args(arguments);
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

    fn path_variable(&self) -> OsString {
        let mut directories: Vec<PathBuf> = Vec::new();
        if let Some(bin) = self.environment.python.parent() {
            directories.push(bin.to_path_buf());
        }
        directories.extend(["/usr/local/bin", "/usr/bin", "/bin"].map(PathBuf::from));
        std::env::join_paths(directories).expect("paths without separators")
    }

    /// Options that keep a repository's configuration from breaking collection or verdicts: no cache
    /// writes into the worktree, no `addopts` (coverage gates, `-x`, `-n auto`), no random order, no
    /// parallel workers.
    fn neutralizing_options(&self) -> Vec<String> {
        let mut options = vec![
            "-p".to_string(),
            "no:cacheprovider".to_string(),
            "-o".to_string(),
            "addopts=".to_string(),
        ];
        for (distribution, plugin) in [("pytest-randomly", "randomly"), ("pytest-xdist", "xdist")] {
            if self.environment.has_distribution(distribution) {
                options.push("-p".to_string());
                options.push(format!("no:{plugin}"));
            }
        }
        options
    }
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
        }
    }

    #[test]
    fn the_environment_is_an_allow_list_without_secrets() {
        // SAFETY: tests in this module do not read this variable concurrently; it only proves that
        // a caller's secret does not leak into the child.
        unsafe { std::env::set_var("CLAIMFLOW_TEST_API_KEY", "secret") };
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
    }
}
