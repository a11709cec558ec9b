//! A throw-away project directory with a pipeline, and a way to run the `claimflow` binary in it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A temporary project root.
pub struct Project {
    dir: tempfile::TempDir,
}

/// What one `claimflow` invocation did.
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Project {
    pub fn new() -> Self {
        Project {
            dir: tempfile::tempdir().expect("a temp dir"),
        }
    }

    /// A project under `parent` (a directory a cluster's jobs can see, unlike `/tmp`).
    pub fn new_in(parent: &Path) -> Self {
        std::fs::create_dir_all(parent).unwrap();
        Project {
            dir: tempfile::tempdir_in(parent).expect("a temp dir"),
        }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    /// Writes a file (creating directories).
    pub fn file(&self, relative: &str, content: &str) -> &Self {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
        self
    }

    pub fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.path(relative))
            .unwrap_or_else(|error| panic!("read {relative}: {error}"))
    }

    /// The command for `claimflow ARGS` in this project, with a clean environment for colour.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_claimflow"));
        command
            .args(args)
            .current_dir(self.root())
            .env("NO_COLOR", "1");
        command
    }

    /// Runs `claimflow ARGS` to completion.
    pub fn run(&self, args: &[&str]) -> Ran {
        let Output {
            status,
            stdout,
            stderr,
        } = self.command(args).output().expect("claimflow runs");
        Ran {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }

    /// Runs `claimflow ARGS` and panics unless it exits 0.
    pub fn ok(&self, args: &[&str]) -> Ran {
        let ran = self.run(args);
        assert_eq!(
            ran.code, 0,
            "claimflow {args:?} failed:\n{}\n{}",
            ran.stdout, ran.stderr
        );
        ran
    }

    /// `plan --json` parsed: step name -> (items_total, items_to_run).
    pub fn plan(&self, pipeline: &str) -> Vec<(String, Option<u64>, Option<u64>)> {
        let ran = self.ok(&["plan", pipeline, "--json"]);
        let plan: serde_json::Value =
            serde_json::from_str(&ran.stdout).expect("plan --json is JSON");
        plan["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|step| {
                (
                    step["name"].as_str().unwrap().to_string(),
                    step["items_total"].as_u64(),
                    step["items_to_run"].as_u64(),
                )
            })
            .collect()
    }

    /// `explain --json` parsed: item id -> key.
    pub fn keys(&self, pipeline: &str, step: &str) -> Vec<(String, String)> {
        let ran = self.ok(&["explain", pipeline, step, "--json"]);
        let items: serde_json::Value =
            serde_json::from_str(&ran.stdout).expect("explain --json is JSON");
        items
            .as_array()
            .unwrap()
            .iter()
            .map(|item| {
                (
                    item["item"].as_str().unwrap().to_string(),
                    item["key"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }
}
