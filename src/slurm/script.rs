//! The batch script of one job, and the environment it runs with.
//!
//! The script is plain `sh`: `#SBATCH` lines for what the pipeline's `executor:` block says (and
//! what claimflow sets itself: the job's name, its log, `--export`), then `exec claimflow worker`.
//! It is written under `<workdir>/slurm/scripts/` so a failed job can be resubmitted by hand.
//!
//! The job sees the scrubbed environment of [`crate::process::environment`] (`PATH`, `HOME`, the
//! locale) with the Python cache and interpreter locations, the package index and proxy settings,
//! and `SLURM_CONF`. Nothing else of the coordinator's environment (API keys above all) reaches a
//! job.

use std::ffi::OsString;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use crate::pipeline::SlurmSettings;
use crate::process::{ChildEnvironment, environment};

/// The environment of every job: the scrubbed default, the package index and the cluster's own
/// variables ([`environment::PACKAGE_INDEX`], [`environment::CLUSTER`]), and the Python
/// environment cache as an absolute path (`cache`), so every node builds into and reuses the same
/// environments.
pub fn job_environment(cache: &Path) -> Vec<(String, OsString)> {
    ChildEnvironment::scrubbed()
        .pass(environment::PACKAGE_INDEX)
        .pass(environment::CLUSTER)
        .set("NO_COLOR", "1")
        .set("CLAIMFLOW_CACHE_DIR", cache)
        .variables()
        .map(|(name, value)| (name.to_string_lossy().into_owned(), value.to_owned()))
        .collect()
}

/// One job to write a script for.
#[derive(Debug, Clone)]
pub struct JobRequest<'a> {
    /// Shown by `squeue` (`claimflow:<step>`).
    pub name: String,
    /// The claimflow binary the job runs.
    pub binary: &'a Path,
    /// The project root: the job's working directory.
    pub root: &'a Path,
    /// The workdir holding the store.
    pub workdir: &'a Path,
    /// The item's content key, as `blake3:<hex>`.
    pub key: String,
    /// The job's log; `%j` becomes the job id.
    pub log: PathBuf,
    /// The step kind, for its time limit.
    pub kind: &'a str,
}

/// Single-quotes `text` for `sh`.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn quote_path(path: &Path) -> String {
    quote(&path.to_string_lossy())
}

/// The batch script of `job`.
pub fn render(job: &JobRequest, settings: &SlurmSettings) -> String {
    let mut script =
        String::from("#!/bin/sh\n# Written by claimflow: computes one item of a pipeline.\n");
    let mut directive = |flag: String| {
        // Slurm reads directives up to the first command.
        let _ = writeln!(script, "#SBATCH {flag}");
    };
    directive(format!(
        "--job-name={}",
        job.name.replace(char::is_whitespace, "_")
    ));
    // Slurm reads a directive's value in double quotes when it has spaces.
    let log = job.log.display().to_string();
    if log.contains(char::is_whitespace) {
        directive(format!("--output=\"{log}\""));
    } else {
        directive(format!("--output={log}"));
    }
    directive("--export=ALL".to_string());
    directive("--nodes=1".to_string());
    directive("--ntasks=1".to_string());
    directive(format!("--cpus-per-task={}", settings.cpus));
    if let Some(partition) = &settings.partition {
        directive(format!("--partition={partition}"));
    }
    if let Some(account) = &settings.account {
        directive(format!("--account={account}"));
    }
    if let Some(limit) = settings.time.of(job.kind) {
        directive(format!("--time={limit}"));
    }
    if let Some(memory) = &settings.memory {
        directive(format!("--mem={memory}"));
    }
    for flag in &settings.sbatch {
        directive(flag.clone());
    }
    let _ = writeln!(
        script,
        "cd {} || exit 2\nexec {} worker --workdir {} {}",
        quote_path(job.root),
        quote_path(job.binary),
        quote_path(job.workdir),
        quote(&job.key)
    );
    script
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{TimeLimit, TimeLimits};

    #[test]
    fn quotes_survive_the_shell() {
        assert_eq!(quote("plain"), "'plain'");
        assert_eq!(quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn the_script_carries_the_settings_and_runs_the_worker() {
        let settings = SlurmSettings {
            partition: Some("batch".into()),
            account: Some("lab".into()),
            time: TimeLimits {
                default: Some(TimeLimit::minutes(30)),
                by_kind: [("oracle".to_string(), TimeLimit::minutes(240))].into(),
            },
            memory: Some("4G".into()),
            cpus: 2,
            max_jobs: 10,
            sbatch: vec!["--qos=short".into()],
        };
        let job = JobRequest {
            name: "claimflow:truth".into(),
            binary: Path::new("/shared/bin/claimflow"),
            root: Path::new("/shared/project"),
            workdir: Path::new("/shared/project/.claimflow"),
            key: "blake3:abc".into(),
            log: PathBuf::from("/shared/project/.claimflow/logs/slurm/truth/x.%j.log"),
            kind: "oracle",
        };
        insta::assert_snapshot!(render(&job, &settings), @r"
        #!/bin/sh
        # Written by claimflow: computes one item of a pipeline.
        #SBATCH --job-name=claimflow:truth
        #SBATCH --output=/shared/project/.claimflow/logs/slurm/truth/x.%j.log
        #SBATCH --export=ALL
        #SBATCH --nodes=1
        #SBATCH --ntasks=1
        #SBATCH --cpus-per-task=2
        #SBATCH --partition=batch
        #SBATCH --account=lab
        #SBATCH --time=0-04:00:00
        #SBATCH --mem=4G
        #SBATCH --qos=short
        cd '/shared/project' || exit 2
        exec '/shared/bin/claimflow' worker --workdir '/shared/project/.claimflow' 'blake3:abc'
        ");
    }

    #[test]
    fn the_environment_is_an_allow_list() {
        let variables = job_environment(Path::new("/shared/cache"));
        let names: Vec<&str> = variables.iter().map(|(name, _)| name.as_str()).collect();
        assert!(names.contains(&"CLAIMFLOW_CACHE_DIR"));
        assert!(names.contains(&"LANG"));
        for (name, _) in &variables {
            let upper = name.to_ascii_uppercase();
            assert!(
                [environment::PACKAGE_INDEX, environment::CLUSTER]
                    .concat()
                    .contains(&upper.as_str())
                    || [
                        "PATH",
                        "HOME",
                        "LANG",
                        "LC_ALL",
                        "NO_COLOR",
                        "CLAIMFLOW_CACHE_DIR"
                    ]
                    .contains(&name.as_str()),
                "{name} is not on the allow-list"
            );
        }
    }
}
