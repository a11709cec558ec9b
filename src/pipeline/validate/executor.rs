//! The `executor:` section: where the pytest-pool items run and how Slurm jobs are submitted
//! (see [`crate::slurm`]). Nothing here enters a key, but a typo in a partition or a time limit
//! would only show once jobs are submitted, so every value is checked when the pipeline loads.

use super::checker::{Checker, Fields};
use crate::pipeline::suggest;
use crate::pipeline::yaml::{Node, Value};
use crate::pipeline::{
    ExecutorKind, ExecutorSpec, SlurmSettings, TimeLimit, TimeLimits, reserved_flag,
};

/// The keys the block may have.
const KEYS: &[&str] = &[
    "kind",
    "partition",
    "account",
    "time",
    "memory",
    "cpus",
    "max_jobs",
    "sbatch",
];

/// The executors a pipeline may name.
const KINDS: &[&str] = &["local", "slurm"];

/// Checks the `executor:` map; `kinds` are the step kinds a time limit may be given for.
pub fn check(checker: &mut Checker, node: &Node, kinds: &[&str]) -> Option<ExecutorSpec> {
    let fields = match &node.value {
        // `executor: slurm` is short for `executor: {kind: slurm}`.
        Value::String(_) => {
            return kind(checker, node).map(|kind| ExecutorSpec {
                kind,
                ..ExecutorSpec::default()
            });
        }
        Value::Map(_) => checker.map(node, "`executor`")?,
        _ => {
            checker.wrong_type(node, "`executor`", "a map, or `local` or `slurm`");
            return None;
        }
    };
    checker.unknown_keys(&fields, KEYS, "`executor`");
    let before = checker.count();
    let mut spec = ExecutorSpec::default();
    if let Some(node) = fields.get("kind") {
        spec.kind = kind(checker, node).unwrap_or_default();
    }
    let slurm = &mut spec.slurm;
    slurm.partition = word(checker, &fields, "partition", "e.g. `partition: batch`");
    slurm.account = word(checker, &fields, "account", "e.g. `account: my-lab`");
    if let Some(node) = fields.get("time") {
        slurm.time = time_limits(checker, node, kinds).unwrap_or_default();
    }
    if let Some(node) = fields.get("memory") {
        slurm.memory = memory(checker, node);
    }
    if let Some(node) = fields.get("cpus") {
        slurm.cpus = at_least_one(checker, node, "cpus", "the CPUs each job asks for")
            .and_then(|cpus| u32::try_from(cpus).ok())
            .unwrap_or(1);
    }
    if let Some(node) = fields.get("max_jobs") {
        slurm.max_jobs = at_least_one(
            checker,
            node,
            "max_jobs",
            "the number of jobs queued or running at once",
        )
        .unwrap_or(SlurmSettings::default().max_jobs);
    }
    if let Some(node) = fields.get("sbatch") {
        slurm.sbatch = flags(checker, node).unwrap_or_default();
    }
    (checker.count() == before).then_some(spec)
}

fn kind(checker: &mut Checker, node: &Node) -> Option<ExecutorKind> {
    let text = checker.string(node, "the executor")?;
    match text.as_str() {
        "local" => Some(ExecutorKind::Local),
        "slurm" => Some(ExecutorKind::Slurm),
        _ => {
            let hint = suggest::hint(&text, KINDS, "executors")
                .unwrap_or_else(|| format!("executors: {}", suggest::quoted_list(KINDS)));
            checker.error(node.mark, format!("unknown executor `{text}`"), Some(hint));
            None
        }
    }
}

/// A partition or account name: one word, as Slurm takes it.
fn word(checker: &mut Checker, fields: &Fields, key: &str, example: &str) -> Option<String> {
    let node = fields.get(key)?;
    let text = checker.string(node, &format!("`{key}` of `executor`"))?;
    if text.is_empty() || text.chars().any(char::is_whitespace) {
        checker.error(
            node.mark,
            format!("`{key}` of `executor` must be one name without spaces"),
            Some(format!("{example}; `sinfo` lists the partitions, `sacctmgr show assoc user=$USER` the accounts")),
        );
        return None;
    }
    Some(text)
}

/// `time:` is one limit for every kind, or a map of limits by step kind with an optional
/// `default`.
fn time_limits(checker: &mut Checker, node: &Node, kinds: &[&str]) -> Option<TimeLimits> {
    if !matches!(node.value, Value::Map(_)) {
        return Some(TimeLimits {
            default: Some(time_limit(checker, node, "`time` of `executor`")?),
            by_kind: Default::default(),
        });
    }
    let fields = checker.map(node, "`time` of `executor`")?;
    let mut limits = TimeLimits::default();
    let mut clean = true;
    for entry in fields.entries() {
        let label = format!("the time limit of `{}`", entry.key);
        let Some(limit) = time_limit(checker, &entry.value, &label) else {
            clean = false;
            continue;
        };
        if entry.key == "default" {
            limits.default = Some(limit);
        } else if kinds.contains(&entry.key.as_str()) {
            limits.by_kind.insert(entry.key.clone(), limit);
        } else {
            let mut names = vec!["default"];
            names.extend_from_slice(kinds);
            let hint = suggest::hint(&entry.key, &names, "keys")
                .unwrap_or_else(|| format!("keys: {}", suggest::quoted_list(&names)));
            checker.error(
                entry.key_mark,
                format!("`time` of `executor` names no step kind `{}`", entry.key),
                Some(hint),
            );
            clean = false;
        }
    }
    clean.then_some(limits)
}

fn time_limit(checker: &mut Checker, node: &Node, label: &str) -> Option<TimeLimit> {
    let hint = "write Slurm's form: minutes (`30`), `MM:SS`, `HH:MM:SS`, `D-HH:MM:SS` or \
                `UNLIMITED`, in quotes";
    match &node.value {
        Value::Integer(minutes) if *minutes > 0 => Some(TimeLimit::minutes(minutes.unsigned_abs())),
        Value::String(text) => match TimeLimit::parse(text) {
            Ok(limit) => Some(limit),
            Err(error) => {
                checker.error(
                    node.mark,
                    format!("{label}: {error}"),
                    Some(hint.to_string()),
                );
                None
            }
        },
        Value::Integer(minutes) => {
            checker.error(
                node.mark,
                format!("{label} must be positive, found {minutes}"),
                Some(hint.to_string()),
            );
            None
        }
        _ => {
            checker.wrong_type(node, label, "a time limit");
            None
        }
    }
}

/// `--mem`: a whole number with an optional unit (`K`, `M`, `G`, `T`); Slurm reads megabytes
/// without one.
fn memory(checker: &mut Checker, node: &Node) -> Option<String> {
    let text = match &node.value {
        Value::Integer(megabytes) if *megabytes > 0 => return Some(megabytes.to_string()),
        Value::String(text) => text.clone(),
        _ => {
            checker.wrong_type(node, "`memory` of `executor`", "a size such as `4G`");
            return None;
        }
    };
    let digits = text.trim_end_matches(['K', 'M', 'G', 'T']);
    let unit = &text[digits.len()..];
    let whole = !digits.is_empty() && digits.bytes().all(|byte| byte.is_ascii_digit());
    if whole && unit.len() <= 1 && !digits.trim_start_matches('0').is_empty() {
        return Some(text);
    }
    checker.error(
        node.mark,
        format!("`memory` of `executor` must be a size such as `4G` or `500M`, found `{text}`"),
        Some("a whole number followed by K, M, G or T (megabytes without a unit)".to_string()),
    );
    None
}

fn at_least_one(checker: &mut Checker, node: &Node, key: &str, meaning: &str) -> Option<usize> {
    let value = checker.integer(node, &format!("`{key}` of `executor`"))?;
    match usize::try_from(value) {
        Ok(count) if count >= 1 => Some(count),
        _ => {
            checker.error(
                node.mark,
                format!("`{key}` of `executor` must be at least 1, found {value}"),
                Some(format!("it is {meaning}")),
            );
            None
        }
    }
}

/// Extra flags: each an option (`--qos=short`), none that claimflow sets itself.
fn flags(checker: &mut Checker, node: &Node) -> Option<Vec<String>> {
    let items = checker.list(node, "`sbatch` of `executor`")?;
    let mut flags = Vec::new();
    let mut clean = true;
    for item in items {
        let Some(flag) = checker.string(item, "each item of `sbatch` of `executor`") else {
            clean = false;
            continue;
        };
        if let Some(reserved) = reserved_flag(&flag) {
            checker.error(
                item.mark,
                format!("claimflow sets `{reserved}` of every job itself"),
                Some(
                    "remove it; each job's log is `<workdir>/logs/slurm/<step>/…`, its \
                     environment an allow-list"
                        .to_string(),
                ),
            );
            clean = false;
        } else if !flag.starts_with('-') || flag.contains(['\n', '\r']) {
            checker.error(
                item.mark,
                format!("`{}` is not an sbatch option", flag.escape_debug()),
                Some("write each option as one item, e.g. `[\"--qos=short\", \"--constraint=avx2\"]`".to_string()),
            );
            clean = false;
        } else {
            flags.push(flag);
        }
    }
    clean.then_some(flags)
}
