//! The `executor:` section: where the pytest-pool items run and how Slurm jobs are submitted
//! (see [`crate::slurm`]). Nothing here enters a key, but a typo in a partition or a time limit
//! would only show once jobs are submitted, so every value is checked when the pipeline loads:
//! against [`ExecutorEntry`], then here for Slurm's own forms (one-word names, time limits,
//! sizes, flags claimflow does not set itself).

use super::checker::{Checker, Fields};
use super::section;
use crate::pipeline::sections::ExecutorEntry;
use crate::pipeline::suggest;
use crate::pipeline::yaml::{Node, Value};
use crate::pipeline::{
    ExecutorKind, ExecutorSpec, SlurmSettings, TimeLimit, TimeLimits, reserved_flag,
};

/// The keys whose values take shapes a schema does not tell apart (a limit or a map of them, a
/// number or a size): checked here alone.
const OWN: &[&str] = &["time", "memory"];

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
    let before = checker.count();
    let owner = "`executor`";
    section::check::<ExecutorEntry>(
        checker,
        &fields,
        node.mark,
        owner,
        &section::context(&[]),
        OWN,
    );
    for (key, example) in [
        ("partition", "e.g. `partition: batch`"),
        ("account", "e.g. `account: my-lab`"),
    ] {
        word(checker, &fields, key, example);
    }
    let time = fields
        .get("time")
        .map(|node| time_limits(checker, node, kinds));
    let memory = fields.get("memory").map(|node| memory(checker, node));
    if let Some(node) = fields.get("sbatch") {
        flags(checker, node);
    }
    if checker.count() != before {
        return None;
    }
    let entry: ExecutorEntry = section::parse(checker, &fields, node.mark, owner)?;
    let defaults = SlurmSettings::default();
    Some(ExecutorSpec {
        kind: entry.kind,
        slurm: SlurmSettings {
            partition: entry.partition,
            account: entry.account,
            time: time.flatten().unwrap_or_default(),
            memory: memory.flatten(),
            cpus: entry.cpus.unwrap_or(defaults.cpus),
            max_jobs: entry.max_jobs.unwrap_or(defaults.max_jobs),
            sbatch: entry.sbatch.unwrap_or_default(),
        },
    })
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

/// A partition or account name: one word, as Slurm takes it (its type was checked already).
fn word(checker: &mut Checker, fields: &Fields, key: &str, example: &str) {
    let Some(node) = fields.get(key) else { return };
    let Value::String(text) = &node.value else {
        return;
    };
    if text.is_empty() || text.chars().any(char::is_whitespace) {
        checker.error(
            node.mark,
            format!("`{key}` of `executor` must be one name without spaces"),
            Some(format!("{example}; `sinfo` lists the partitions, `sacctmgr show assoc user=$USER` the accounts")),
        );
    }
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

/// Extra flags: each an option (`--qos=short`), none that claimflow sets itself (their type was
/// checked already).
fn flags(checker: &mut Checker, node: &Node) {
    let Value::List(items) = &node.value else {
        return;
    };
    for item in items {
        let Value::String(flag) = &item.value else {
            continue;
        };
        if let Some(reserved) = reserved_flag(flag) {
            checker.error(
                item.mark,
                format!("claimflow sets `{reserved}` of every job itself"),
                Some(
                    "remove it; each job's log is `<workdir>/logs/slurm/<step>/…`, its \
                     environment an allow-list"
                        .to_string(),
                ),
            );
        } else if !flag.starts_with('-') || flag.contains(['\n', '\r']) {
            checker.error(
                item.mark,
                format!("`{}` is not an sbatch option", flag.escape_debug()),
                Some("write each option as one item, e.g. `[\"--qos=short\", \"--constraint=avx2\"]`".to_string()),
            );
        }
    }
}
