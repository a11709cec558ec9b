//! Which Python interpreters can run a commit's tests: those installed on the machine (pyenv
//! versions, `python3.X` on PATH), narrowed by what the pipeline declares for the repository or,
//! failing that, by what the commit's packaging metadata allows, in the order to try them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde::Serialize;

use super::metadata::ProjectMetadata;
use super::specifier::SpecifierSet;
use super::version::PythonVersion;

/// An installed interpreter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Interpreter {
    pub version: PythonVersion,
    /// The base interpreter's executable (not a virtual environment's).
    pub path: PathBuf,
}

/// Why no interpreter may run a commit's tests (the commit is excluded with this reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SelectionError {
    /// The pipeline's `python:` list names nothing installed that the commit allows.
    #[error(
        "none of the declared interpreters {declared:?} is installed and allowed ({constraint})"
    )]
    NoDeclaredInterpreter {
        declared: Vec<String>,
        constraint: String,
    },
    /// The commit's metadata allows none of the installed interpreters.
    #[error("no installed interpreter ({installed}) satisfies {constraint}")]
    NoAllowedInterpreter {
        constraint: String,
        installed: String,
    },
}

/// Every interpreter installed on this machine, newest first (discovered once per process: what
/// is installed is a fact of the machine, not of a run).
pub fn installed_interpreters() -> &'static [Interpreter] {
    static INSTALLED: OnceLock<Vec<Interpreter>> = OnceLock::new();
    INSTALLED.get_or_init(discover)
}

/// The interpreters to try for the commit checked out at `worktree`, in order; empty when none is
/// allowed (see [`choose_interpreters`] for the reason).
pub fn select_interpreters(worktree: &Path, declared: &[String]) -> Vec<Interpreter> {
    let metadata = ProjectMetadata::read(worktree);
    choose_interpreters(&metadata, declared, installed_interpreters()).unwrap_or_default()
}

/// The installed interpreter a claim names (`3.11.7`, or `3.11` for the newest 3.11), so the
/// oracle runs a claim under the interpreter it was mined with.
pub fn interpreter_for(version: &str) -> Option<Interpreter> {
    installed_interpreters()
        .iter()
        .filter(|interpreter| matches_declared(interpreter, version))
        .max_by_key(|interpreter| interpreter.version)
        .cloned()
}

/// The first release of each minor Python version (seconds since the epoch, UTC midnight).
const RELEASED: [((u32, u32), i64); 14] = [
    ((2, 7), 1_278_115_200),  // 2010-07-03
    ((3, 3), 1_348_876_800),  // 2012-09-29
    ((3, 4), 1_394_928_000),  // 2014-03-16
    ((3, 5), 1_442_102_400),  // 2015-09-13
    ((3, 6), 1_482_451_200),  // 2016-12-23
    ((3, 7), 1_530_057_600),  // 2018-06-27
    ((3, 8), 1_571_011_200),  // 2019-10-14
    ((3, 9), 1_601_856_000),  // 2020-10-05
    ((3, 10), 1_633_305_600), // 2021-10-04
    ((3, 11), 1_666_569_600), // 2022-10-24
    ((3, 12), 1_696_204_800), // 2023-10-02
    ((3, 13), 1_728_259_200), // 2024-10-07
    ((3, 14), 1_759_795_200), // 2025-10-07
    ((3, 15), 1_791_331_200), // 2026-10-07
];

/// How long after a commit an interpreter still belongs to its era: a project's CI commonly
/// adds a new Python within its first year.
const ERA_GRACE: i64 = 365 * 24 * 60 * 60;

/// True when `version` came out more than a year after `date`: code of that date was never run
/// under it (toolz's 2016 `test_curried.py` does not collect on Python 3.11 to 3.13).
fn after_era(version: PythonVersion, date: Option<i64>) -> bool {
    let Some(date) = date else {
        return false;
    };
    RELEASED
        .iter()
        .find(|(minor, _)| *minor == (version.major, version.minor))
        .is_some_and(|(_, released)| *released > date + ERA_GRACE)
}

/// Chooses, from `installed`, the interpreters allowed for a commit with `metadata`, in the order to
/// try them, when the commit's date is not known (see [`choose_interpreters_at`]).
pub fn choose_interpreters(
    metadata: &ProjectMetadata,
    declared: &[String],
    installed: &[Interpreter],
) -> Result<Vec<Interpreter>, SelectionError> {
    choose_interpreters_at(metadata, declared, installed, None)
}

/// Chooses, from `installed`, the interpreters allowed for a commit with `metadata`, in the order to
/// try them. Declared interpreters (`3.11`, `3.11.7` or a path) keep their order. Otherwise
/// `python_requires` filters, and classifiers and tox's envlist put the project's own era first:
/// hinted versions newest first, then older ones, then newer ones closest first. With the parent
/// commit's `date` (seconds since the epoch), interpreters released more than a year after it
/// come after those of its era, oldest first.
pub fn choose_interpreters_at(
    metadata: &ProjectMetadata,
    declared: &[String],
    installed: &[Interpreter],
    date: Option<i64>,
) -> Result<Vec<Interpreter>, SelectionError> {
    let requires = Requires::of(metadata);
    if !declared.is_empty() {
        return as_declared(declared, installed, &requires);
    }
    let hints = EraHints::of(metadata, requires.set.is_none());
    let allowed = installed.iter().filter(|i| requires.allows(i)).cloned();
    let mut candidates = hints.narrowed(allowed.collect());
    in_era_order(&mut candidates, &hints, date);
    // Patch releases of one minor version behave alike; trying a second one only repeats a failure.
    let mut seen_minors = BTreeSet::new();
    candidates.retain(|interpreter| {
        seen_minors.insert((interpreter.version.major, interpreter.version.minor))
    });
    if candidates.is_empty() {
        return Err(SelectionError::NoAllowedInterpreter {
            constraint: requires.constraint,
            installed: installed
                .iter()
                .map(|interpreter| interpreter.version.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(candidates)
}

/// A commit's `python_requires`, when it has one that parses, and how to name it in an error.
struct Requires {
    set: Option<SpecifierSet>,
    /// `>=3.8 from setup.cfg`, or `no python_requires`.
    constraint: String,
}

impl Requires {
    fn of(metadata: &ProjectMetadata) -> Self {
        let set = metadata
            .requires_python
            .as_ref()
            .and_then(|requires| SpecifierSet::parse(&requires.specifier).ok());
        let constraint = match &metadata.requires_python {
            Some(requires) => format!("{} from {}", requires.specifier, requires.file),
            None => "no python_requires".to_string(),
        };
        Requires { set, constraint }
    }

    fn allows(&self, interpreter: &Interpreter) -> bool {
        self.set
            .as_ref()
            .is_none_or(|set| set.allows(interpreter.version))
    }
}

/// The interpreters the pipeline declares, in its order: for each entry the newest installed
/// patch release that matches it and `requires` allows (or the executable it names), once each.
fn as_declared(
    declared: &[String],
    installed: &[Interpreter],
    requires: &Requires,
) -> Result<Vec<Interpreter>, SelectionError> {
    let mut chosen: Vec<Interpreter> = Vec::new();
    for wanted in declared {
        let matching = installed
            .iter()
            .filter(|interpreter| matches_declared(interpreter, wanted))
            .filter(|interpreter| requires.allows(interpreter))
            .cloned()
            .chain(declared_path(wanted));
        // One interpreter per declared entry: the newest patch release that matches it.
        if let Some(interpreter) = matching.max_by_key(|interpreter| interpreter.version)
            && !chosen
                .iter()
                .any(|seen| seen.version == interpreter.version)
        {
            chosen.push(interpreter);
        }
    }
    if chosen.is_empty() {
        Err(SelectionError::NoDeclaredInterpreter {
            declared: declared.to_vec(),
            constraint: requires.constraint.clone(),
        })
    } else {
        Ok(chosen)
    }
}

/// What a commit's metadata says about its era besides `python_requires`.
struct EraHints<'a> {
    /// Minor versions (`3.6`) that classifiers or tox's envlist name.
    minors: BTreeSet<&'a str>,
    /// Whether the hinted major versions narrow the candidates (only without `python_requires`).
    narrowing: bool,
    /// Python 2 source with no other word on the era: Python 2 counts as hinted.
    python_2_first: bool,
}

impl<'a> EraHints<'a> {
    fn of(metadata: &'a ProjectMetadata, no_requires: bool) -> Self {
        let minors: BTreeSet<&str> = metadata
            .classifier_versions
            .iter()
            .chain(&metadata.tox_versions)
            .map(String::as_str)
            .collect();
        let python_2_first = no_requires && minors.is_empty() && metadata.python_2_source;
        EraHints {
            minors,
            narrowing: no_requires,
            python_2_first,
        }
    }

    /// Without python_requires, a project that names only Python 2 (or only 3) means it: the
    /// candidates of the hinted major versions, unless that leaves none.
    fn narrowed(&self, candidates: Vec<Interpreter>) -> Vec<Interpreter> {
        let majors: BTreeSet<u32> = self
            .minors
            .iter()
            .filter_map(|hint| hint.split('.').next()?.parse().ok())
            .collect();
        if !self.narrowing || majors.is_empty() {
            return candidates;
        }
        let narrowed: Vec<Interpreter> = candidates
            .iter()
            .filter(|interpreter| majors.contains(&interpreter.version.major))
            .cloned()
            .collect();
        if narrowed.is_empty() {
            candidates
        } else {
            narrowed
        }
    }

    /// Whether the metadata names this interpreter's minor version (or its Python 2).
    fn hinted(&self, interpreter: &Interpreter) -> bool {
        (self.python_2_first && interpreter.version.major == 2)
            || self
                .minors
                .contains(interpreter.version.minor_string().as_str())
    }
}

/// Sorts `candidates` into the order to try them: hinted versions newest first, then older ones,
/// then newer ones closest first; without hints Python 3 newest first, then Python 2. Those
/// released more than a year after `date` come last, oldest first.
fn in_era_order(candidates: &mut [Interpreter], hints: &EraHints, date: Option<i64>) {
    let newest_hint = candidates
        .iter()
        .filter(|interpreter| hints.hinted(interpreter))
        .map(|interpreter| interpreter.version)
        .max();
    candidates.sort_by_key(|interpreter| {
        let version = interpreter.version;
        // Python 2 goes last when nothing says the project is of that era.
        let era = if hints.hinted(interpreter) {
            0
        } else if newest_hint.is_some_and(|newest| version < newest) {
            1
        } else if newest_hint.is_some() {
            2
        } else if version.major >= 3 {
            1
        } else {
            3
        };
        // An interpreter newer than the commit's era comes after every one of it, closest first.
        let era = if era != 0 && after_era(version, date) {
            4
        } else {
            era
        };
        let newer_first = if era == 2 || era == 4 {
            (version.major, version.minor, version.patch)
        } else {
            (
                u32::MAX - version.major,
                u32::MAX - version.minor,
                u32::MAX - version.patch,
            )
        };
        (era, newer_first)
    });
}

fn matches_declared(interpreter: &Interpreter, wanted: &str) -> bool {
    let version = interpreter.version.to_string();
    version == wanted || version.starts_with(&format!("{wanted}."))
}

/// A declared entry that is a path to an executable.
fn declared_path(wanted: &str) -> Option<Interpreter> {
    let path = Path::new(wanted);
    if !path.is_absolute() || !path.is_file() {
        return None;
    }
    Some(Interpreter {
        version: query_version(path)?,
        path: path.to_path_buf(),
    })
}

fn discover() -> Vec<Interpreter> {
    let mut found: Vec<Interpreter> = Vec::new();
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(root) = std::env::var_os("PYENV_ROOT") {
        roots.push(PathBuf::from(root));
    }
    if let Some(home) = std::env::var_os("HOME") {
        roots.push(Path::new(&home).join(".pyenv"));
    }
    roots.push(PathBuf::from("/root/.pyenv"));
    for root in roots {
        let Ok(entries) = std::fs::read_dir(root.join("versions")) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            // Only plain CPython releases: `3.11.7`, not `pypy3.9` or `miniconda`.
            if !name.chars().all(|c| c.is_ascii_digit() || c == '.') {
                continue;
            }
            let path = entry.path().join("bin").join("python");
            if let (Ok(version), true) = (name.parse::<PythonVersion>(), path.is_file()) {
                push_new(&mut found, Interpreter { version, path });
            }
        }
    }
    if let Some(path_variable) = std::env::var_os("PATH") {
        for directory in std::env::split_paths(&path_variable) {
            // pyenv shims resolve through pyenv's own selection; the versions are found above.
            if directory
                .components()
                .any(|part| part.as_os_str() == "shims")
            {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&directory) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| is_versioned_python(name))
                .collect();
            names.sort();
            for name in names {
                let path = directory.join(&name);
                if let Some(version) = query_version(&path) {
                    push_new(&mut found, Interpreter { version, path });
                }
            }
        }
    }
    found.sort_by_key(|interpreter| std::cmp::Reverse(interpreter.version));
    found
}

/// `python3.11`, `python2.7`: a versioned name, not `python3.11-config`.
fn is_versioned_python(name: &str) -> bool {
    name.strip_prefix("python").is_some_and(|rest| {
        rest.contains('.') && rest.chars().all(|c| c.is_ascii_digit() || c == '.')
    })
}

fn push_new(found: &mut Vec<Interpreter>, interpreter: Interpreter) {
    if !found.iter().any(|seen| seen.version == interpreter.version) {
        found.push(interpreter);
    }
}

/// How long an interpreter may take to say its version.
const QUERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Asks an executable for its version (works on Python 2 and 3).
pub fn query_version(path: &Path) -> Option<PythonVersion> {
    let mut command = Command::new(path);
    command.args(["-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"]);
    crate::process::ChildEnvironment::scrubbed()
        .set("PATH", "/usr/bin:/bin")
        .apply(&mut command);
    // An executable that hangs (a broken shim) is no interpreter rather than a stuck run.
    let output = crate::process::output(&mut command, QUERY_TIMEOUT).ok()?;
    if !output.outcome.success() {
        return None;
    }
    String::from_utf8_lossy(&output.stdout).trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::super::metadata::RequiresPython;
    use super::*;

    fn installed() -> Vec<Interpreter> {
        [
            "3.13.0", "3.12.1", "3.11.7", "3.11.2", "3.10.13", "3.9.18", "3.8.18", "3.7.16",
            "3.6.15", "2.7.18",
        ]
        .iter()
        .map(|version| Interpreter {
            version: version.parse().unwrap(),
            path: PathBuf::from(format!("/pythons/{version}/bin/python")),
        })
        .collect()
    }

    fn versions(chosen: &[Interpreter]) -> Vec<String> {
        chosen
            .iter()
            .map(|interpreter| interpreter.version.minor_string())
            .collect()
    }

    fn requiring(specifier: &str) -> ProjectMetadata {
        ProjectMetadata {
            requires_python: Some(RequiresPython {
                specifier: specifier.into(),
                file: "setup.py".into(),
            }),
            ..ProjectMetadata::default()
        }
    }

    #[test]
    fn without_metadata_newest_first_and_python_2_last() {
        let chosen = choose_interpreters(&ProjectMetadata::default(), &[], &installed()).unwrap();
        assert_eq!(
            versions(&chosen),
            [
                "3.13", "3.12", "3.11", "3.10", "3.9", "3.8", "3.7", "3.6", "2.7"
            ]
        );
    }

    #[test]
    fn interpreters_newer_than_the_commits_era_come_last() {
        // toolz 06c75df42e (May 2016), no python_requires or classifiers: its tests do not
        // collect on 3.11 to 3.13, the first three tried by newest first.
        let may_2016 = 1_462_579_200;
        let chosen = choose_interpreters_at(
            &ProjectMetadata::default(),
            &[],
            &installed(),
            Some(may_2016),
        )
        .unwrap();
        assert_eq!(
            versions(&chosen),
            [
                "3.6", "2.7", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13"
            ]
        );
        // A recent commit keeps the newest first.
        let chosen = choose_interpreters_at(
            &ProjectMetadata::default(),
            &[],
            &installed(),
            Some(1_700_000_000),
        )
        .unwrap();
        assert_eq!(versions(&chosen)[0], "3.13");
    }

    #[test]
    fn python_requires_filters_newest_first() {
        let chosen = choose_interpreters(&requiring(">=3.7, <3.10"), &[], &installed()).unwrap();
        assert_eq!(versions(&chosen), ["3.9", "3.8", "3.7"]);
    }

    #[test]
    fn classifiers_put_the_projects_era_first() {
        let metadata = ProjectMetadata {
            classifier_versions: vec!["3".into(), "3.6".into(), "3.7".into()],
            tox_versions: vec!["3.8".into()],
            ..requiring(">=3.6")
        };
        let chosen = choose_interpreters(&metadata, &[], &installed()).unwrap();
        assert_eq!(
            versions(&chosen),
            ["3.8", "3.7", "3.6", "3.9", "3.10", "3.11", "3.12", "3.13"]
        );
    }

    #[test]
    fn a_python_2_only_project_without_python_requires_gets_python_2() {
        let metadata = ProjectMetadata {
            classifier_versions: vec!["2".into(), "2.7".into()],
            ..ProjectMetadata::default()
        };
        let chosen = choose_interpreters(&metadata, &[], &installed()).unwrap();
        assert_eq!(versions(&chosen), ["2.7"]);
    }

    #[test]
    fn python_2_source_puts_python_2_first_without_excluding_python_3() {
        let metadata = ProjectMetadata {
            python_2_source: true,
            ..ProjectMetadata::default()
        };
        let chosen = choose_interpreters(&metadata, &[], &installed()).unwrap();
        assert_eq!(
            versions(&chosen),
            [
                "2.7", "3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13"
            ]
        );
    }

    #[test]
    fn declared_interpreters_keep_their_order_and_respect_python_requires() {
        let declared = vec!["3.9".to_string(), "3.11".to_string(), "2.7".to_string()];
        let chosen = choose_interpreters(&requiring(">=3"), &declared, &installed()).unwrap();
        assert_eq!(versions(&chosen), ["3.9", "3.11"]);
        assert_eq!(
            chosen[1].version.to_string(),
            "3.11.7",
            "the newest patch release of a minor"
        );
        let exact = vec!["3.11.2".to_string()];
        let chosen = choose_interpreters(&requiring(">=3"), &exact, &installed()).unwrap();
        assert_eq!(chosen[0].version.to_string(), "3.11.2");
    }

    #[test]
    fn exclusion_reasons_name_the_constraint() {
        let error = choose_interpreters(&requiring(">=3.14"), &[], &installed()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "no installed interpreter (3.13.0, 3.12.1, 3.11.7, 3.11.2, 3.10.13, 3.9.18, 3.8.18, 3.7.16, \
             3.6.15, 2.7.18) satisfies >=3.14 from setup.py"
        );
        let declared = vec!["3.4".to_string()];
        let error =
            choose_interpreters(&ProjectMetadata::default(), &declared, &installed()).unwrap_err();
        assert!(matches!(
            error,
            SelectionError::NoDeclaredInterpreter { .. }
        ));
    }

    #[test]
    fn versioned_executable_names() {
        assert!(is_versioned_python("python3.11"));
        assert!(!is_versioned_python("python3"));
        assert!(!is_versioned_python("python3.11-config"));
    }
}
