//! Where the expensive items of a run are computed, as the pipeline's `executor:` block and
//! `run --executor` say.
//!
//! ```yaml
//! executor:
//!   kind: slurm                  # local (default) | slurm; `run --executor` wins
//!   partition: batch
//!   account: lab
//!   time: {default: "1:00:00", oracle: "4:00:00"}   # per step kind, or one limit for all
//!   memory: 4G
//!   cpus: 1
//!   max_jobs: 100                # jobs queued or running at once
//!   sbatch: ["--qos=short"]      # any other sbatch flags
//! ```
//!
//! None of it enters a key: a result computed on the cluster is the same cache entry as one
//! computed locally.

use std::collections::BTreeMap;

use serde::Serialize;

use super::time_limit::TimeLimit;

/// Where pytest-pool items (`mine-claims`, `oracle`, the testmon arm) run.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ExecutorKind {
    /// In this process, as every other item.
    #[default]
    Local,
    /// One Slurm job per item, submitted with `sbatch`.
    Slurm,
}

impl ExecutorKind {
    /// The name a pipeline and the command line use.
    pub fn name(self) -> &'static str {
        match self {
            ExecutorKind::Local => "local",
            ExecutorKind::Slurm => "slurm",
        }
    }
}

/// The `executor:` block.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ExecutorSpec {
    /// Where pytest-pool items run unless `run --executor` says otherwise.
    pub kind: ExecutorKind,
    /// How jobs are submitted when they run on Slurm.
    pub slurm: SlurmSettings,
}

impl ExecutorSpec {
    /// True when the pipeline says nothing about its executor.
    pub fn is_default(&self) -> bool {
        *self == ExecutorSpec::default()
    }
}

/// What each `sbatch` is given.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlurmSettings {
    /// `--partition`; the cluster's default when absent.
    pub partition: Option<String>,
    /// `--account`; the user's default when absent.
    pub account: Option<String>,
    /// `--time` by step kind, with a default for the rest.
    pub time: TimeLimits,
    /// `--mem` (`4G`, `500M`); the partition's default when absent.
    pub memory: Option<String>,
    /// `--cpus-per-task`.
    pub cpus: u32,
    /// Jobs queued or running at once; the next item waits for one to end.
    pub max_jobs: usize,
    /// Further `sbatch` flags, given as written.
    pub sbatch: Vec<String>,
}

/// The number of jobs in flight when the pipeline does not say.
pub const DEFAULT_MAX_JOBS: usize = 100;

impl Default for SlurmSettings {
    fn default() -> Self {
        SlurmSettings {
            partition: None,
            account: None,
            time: TimeLimits::default(),
            memory: None,
            cpus: 1,
            max_jobs: DEFAULT_MAX_JOBS,
            sbatch: Vec::new(),
        }
    }
}

/// Time limits per step kind (`oracle`, `mine-claims`, `arm`), and for any other.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct TimeLimits {
    /// For kinds not named; the partition's default when absent.
    pub default: Option<TimeLimit>,
    /// By step kind.
    pub by_kind: BTreeMap<String, TimeLimit>,
}

impl TimeLimits {
    /// The limit for an item of a step of kind `kind`.
    pub fn of(&self, kind: &str) -> Option<TimeLimit> {
        self.by_kind.get(kind).copied().or(self.default)
    }
}

/// `sbatch` flags claimflow sets itself; a pipeline may not give them in `sbatch:`.
pub const RESERVED_FLAGS: &[&str] = &[
    "--output",
    "--error",
    "--export",
    "--job-name",
    "--parsable",
    "--wait",
    "--array",
    "--chdir",
    "--wrap",
];

/// The reserved flag `flag` sets, if any (`--output=x`, `-o x`).
pub fn reserved_flag(flag: &str) -> Option<&'static str> {
    let name = flag.split_once('=').map_or(flag, |(name, _)| name);
    let short = match name {
        "-o" => Some("--output"),
        "-e" => Some("--error"),
        "-J" => Some("--job-name"),
        "-W" => Some("--wait"),
        "-a" => Some("--array"),
        "-D" => Some("--chdir"),
        _ => None,
    };
    short.or_else(|| {
        RESERVED_FLAGS
            .iter()
            .copied()
            .find(|reserved| *reserved == name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_without_its_own_limit_takes_the_default() {
        let limits = TimeLimits {
            default: Some(TimeLimit::minutes(30)),
            by_kind: [("oracle".to_string(), TimeLimit::minutes(240))].into(),
        };
        assert_eq!(limits.of("oracle"), Some(TimeLimit::minutes(240)));
        assert_eq!(limits.of("mine-claims"), Some(TimeLimit::minutes(30)));
        assert_eq!(TimeLimits::default().of("oracle"), None);
    }

    #[test]
    fn flags_claimflow_sets_are_recognised_in_every_spelling() {
        assert_eq!(reserved_flag("--output=x.log"), Some("--output"));
        assert_eq!(reserved_flag("-o"), Some("--output"));
        assert_eq!(reserved_flag("--export=ALL"), Some("--export"));
        assert_eq!(reserved_flag("--qos=short"), None);
        assert_eq!(reserved_flag("--constraint=avx2"), None);
    }
}
