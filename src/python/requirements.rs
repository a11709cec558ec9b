//! The requirements an environment for a commit's tests installs: the era-appropriate pytest for the
//! interpreter, the repository's pinned extras, and the test dependencies the commit declares
//! (requirement files for tests, test extras, tox deps, the package's own runtime dependencies).
//! Only simple `name[extras] specifier ; marker` lines are taken: editable installs, paths and
//! URLs are skipped, since the package under test comes from the worktree, not from an install.

use std::collections::BTreeSet;
use std::path::Path;

use serde::Serialize;

use super::metadata::ProjectMetadata;
use super::pytest_era::{self, pytest_for};
use super::specifier::SpecifierSet;
use super::test_imports::{import_name, test_imports};
use super::version::PythonVersion;

/// Tools that do not take part in collecting or running tests, or that change outcomes
/// (reruns, random order, parallelism); installing them only adds ways to fail.
const SKIPPED: [&str; 31] = [
    "pytest",
    "pytest-cov",
    "pytest-xdist",
    "pytest-randomly",
    "pytest-random-order",
    "pytest-rerunfailures",
    "pytest-sugar",
    "pytest-flake8",
    "pytest-pep8",
    "pytest-mypy",
    "pytest-black",
    "pytest-isort",
    "pytest-pylint",
    "pytest-runner",
    "pytest-timeout",
    "coverage",
    "coveralls",
    "codecov",
    "tox",
    "flake8",
    "pylint",
    "black",
    "isort",
    "mypy",
    "sphinx",
    "twine",
    "wheel",
    "setuptools",
    "pip",
    "pre-commit",
    "check-manifest",
];

/// pytest's own runtime dependencies across the series claimflow installs. A repository's pin of
/// one (structlog's 2013 `py==1.4.15`, `six==1.4.1`) predates the pytest chosen for the interpreter
/// and breaks it at import, so such a pin or cap is dropped (a lower bound stays) and pytest's own
/// constraint decides the version.
const PYTEST_DEPENDENCIES: [&str; 15] = [
    "py",
    "pluggy",
    "six",
    "attrs",
    "more-itertools",
    "atomicwrites",
    "packaging",
    "iniconfig",
    "wcwidth",
    "funcsigs",
    "pathlib2",
    "importlib-metadata",
    "colorama",
    "exceptiongroup",
    "tomli",
];

/// One requirement and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Requirement {
    /// The spec as pip reads it (`attrs>=19.1`, `mock; python_version < "3"`).
    pub spec: String,
    /// `requirements-test.txt`, `extras_require[test]`, `tox.ini`, `install_requires`, `repository`.
    pub source: String,
}

/// The pytest an interpreter of this version runs when the commit's date is not known: the newest
/// series that supports it (see [`super::pytest_era`] for the choice by date).
pub fn pytest_requirement(version: PythonVersion) -> &'static str {
    pytest_for(version, None)
}

/// The pytest pin a commit declares among its test requirements (`pytest==3.6.4` in
/// `requirements-test.txt`), when it caps the version and allows a release at or above the
/// plugins' floor; a bare lower bound (`pytest>=2.3`) says nothing about the era.
pub fn declared_pytest(worktree: &Path, metadata: &ProjectMetadata) -> Option<String> {
    let mut found: Vec<Requirement> = Vec::new();
    for file in requirement_files(worktree) {
        let mut visited = BTreeSet::new();
        read_requirement_file(worktree, &file, &mut visited, &mut found, 0);
    }
    let declared = found
        .into_iter()
        .map(|requirement| requirement.spec)
        .chain(metadata.test_extras.iter().cloned())
        .chain(metadata.tox_deps.iter().cloned())
        .find(|spec| requirement_name(spec).as_deref() == Some("pytest"))?;
    let requirement = declared.split(';').next().unwrap_or(&declared).trim();
    let specifier = requirement
        .trim_start_matches(|c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .trim();
    if !caps_version(specifier) {
        return None;
    }
    let set = SpecifierSet::parse(specifier).ok()?;
    // A pin that allows no release of any series in the table predates the floor.
    let allowed = pytest_era::SERIES
        .iter()
        .any(|series| series_releases(series.spec).any(|version| set.allows(version)));
    allowed.then(|| requirement.to_string())
}

/// Versions of a series `pytest>=X.Y,<...` to test a pin against: `X.Y.0` to `X.Y.15`.
fn series_releases(spec: &str) -> impl Iterator<Item = PythonVersion> {
    let lower = spec
        .strip_prefix("pytest>=")
        .and_then(|rest| rest.split(',').next())
        .unwrap_or("0");
    let mut parts = lower
        .split('.')
        .map(|part| part.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next();
    let minors = match minor {
        Some(minor) => minor..=minor,
        // `pytest>=8,<9`: every minor release of the major one.
        None => 0..=15,
    };
    minors.flat_map(move |minor| (0..=15).map(move |patch| PythonVersion::new(major, minor, patch)))
}

/// The normalized distribution name of a spec (`Foo_Bar[x]>=1` -> `foo-bar`), if it is a simple one.
pub fn requirement_name(spec: &str) -> Option<String> {
    let spec = spec.trim();
    if spec.is_empty()
        || spec.starts_with(['-', '.', '/'])
        || spec.contains("://")
        || spec.contains(" @ ")
        || spec.contains('{')
    {
        return None;
    }
    let requirement = spec.split(';').next()?.trim();
    let name_length = requirement
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(requirement.len());
    let (name, rest) = requirement.split_at(name_length);
    let rest = rest.trim();
    let rest = match rest.strip_prefix('[') {
        Some(extras) => extras.split_once(']')?.1.trim(),
        None => rest,
    };
    let simple_specifier = rest.chars().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(c, '<' | '>' | '=' | '!' | '~' | '.' | '*' | ',' | ' ' | '+')
    });
    if name.is_empty() || !simple_specifier || name.contains('/') {
        return None;
    }
    let mut normalized = String::new();
    for character in name.to_ascii_lowercase().chars() {
        if matches!(character, '-' | '_' | '.') {
            if !normalized.ends_with('-') {
                normalized.push('-');
            }
        } else {
            normalized.push(character);
        }
    }
    Some(normalized)
}

/// The test requirements a commit declares, first mention of a name winning, in the order:
/// requirement files for tests, test extras, tox deps (and the files they name with `-r`),
/// runtime dependencies (minus the package), and `requirements.txt`: whole when the project
/// installs from it (pbr), else the entries the tests import (see [`super::test_imports`]).
pub fn discover_requirements(worktree: &Path, metadata: &ProjectMetadata) -> Vec<Requirement> {
    let mut found: Vec<Requirement> = Vec::new();
    for file in requirement_files(worktree) {
        let mut visited = BTreeSet::new();
        read_requirement_file(worktree, &file, &mut visited, &mut found, 0);
    }
    let groups = [
        (&metadata.test_extras, "test extras"),
        (&metadata.tox_deps, "tox.ini"),
        (&metadata.runtime, "runtime dependencies"),
    ];
    for (specs, source) in groups {
        for spec in specs {
            let spec = spec.trim();
            // `-r{toxinidir}/requirements-test.txt` in tox's deps: the file's lines.
            let included = spec
                .strip_prefix("-r")
                .map(|rest| rest.trim().trim_start_matches("{toxinidir}/"));
            match included {
                Some(file)
                    if source == "tox.ini" && !file.contains("..") && !file.starts_with('/') =>
                {
                    let mut visited = BTreeSet::new();
                    read_requirement_file(worktree, file, &mut visited, &mut found, 0);
                }
                _ => found.push(Requirement {
                    spec: spec.to_string(),
                    source: source.to_string(),
                }),
            }
        }
    }
    let mut general = Vec::new();
    read_requirement_file(
        worktree,
        "requirements.txt",
        &mut BTreeSet::new(),
        &mut general,
        0,
    );
    if metadata.installs_from_requirements_txt {
        found.extend(general);
    } else if !general.is_empty() {
        let imported = test_imports(worktree);
        found.extend(
            general
                .into_iter()
                .filter(|requirement| {
                    requirement_name(&requirement.spec)
                        .is_some_and(|name| imported.contains(&import_name(&name)))
                })
                .map(|requirement| Requirement {
                    spec: requirement.spec,
                    source: format!("{} (imported by the tests)", requirement.source),
                }),
        );
    }
    let own_name = metadata.name.as_deref().and_then(requirement_name);
    simplify(found, own_name.as_deref())
}

/// Keeps simple specs, drops skipped tools and the package itself, and unpins pytest plugins and
/// pytest's own dependencies (a pin from the repository's era would fight the pytest chosen for the
/// interpreter).
pub fn simplify(requirements: Vec<Requirement>, own_name: Option<&str>) -> Vec<Requirement> {
    let mut seen = BTreeSet::new();
    let mut kept = Vec::new();
    for requirement in requirements {
        let Some(name) = requirement_name(&requirement.spec) else {
            continue;
        };
        if SKIPPED.contains(&name.as_str())
            || Some(name.as_str()) == own_name
            || !seen.insert(name.clone())
        {
            continue;
        }
        let spec = if name.starts_with("pytest-")
            || (PYTEST_DEPENDENCIES.contains(&name.as_str()) && caps_version(&requirement.spec))
        {
            name
        } else {
            requirement.spec
        };
        kept.push(Requirement {
            spec,
            source: requirement.source,
        });
    }
    kept
}

/// Holds each declared requirement on one of pytest's own dependencies to the bounds the pytest
/// series `pytest` declares for it under an interpreter of `version`, keeping the declaration's own
/// lower bounds and marker (a pin or cap was already dropped by [`simplify`]): left bare, pip would
/// put the newest release beside an old pytest. The repository's pins (`dependencies:`) stay.
pub fn hold_to_pytest(
    requirements: Vec<Requirement>,
    pytest: &str,
    version: PythonVersion,
) -> Vec<Requirement> {
    let Some(series) = pytest_era::series_of(pytest) else {
        return requirements;
    };
    requirements
        .into_iter()
        .map(|requirement| {
            let Some(name) = requirement_name(&requirement.spec) else {
                return requirement;
            };
            let bounds = pytest_era::dependency_bounds(series, &name, version);
            let Some(bounds) = bounds.filter(|_| requirement.source != "repository") else {
                return requirement;
            };
            let (declared, marker) = match requirement.spec.split_once(';') {
                Some((declared, marker)) => (declared.trim(), Some(marker.trim())),
                None => (requirement.spec.trim(), None),
            };
            let own = declared
                .trim_start_matches(|c: char| {
                    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
                })
                .trim();
            let mut spec = format!("{name}{bounds}");
            if !own.is_empty() && !own.starts_with('[') {
                spec.push(',');
                spec.push_str(own);
            }
            if let Some(marker) = marker {
                spec.push_str("; ");
                spec.push_str(marker);
            }
            Requirement {
                spec,
                source: requirement.source,
            }
        })
        .collect()
}

/// Whether a spec pins or caps its version (`==`, `<`, `~=`); a lower bound alone never fights pytest.
fn caps_version(spec: &str) -> bool {
    let requirement = spec.split(';').next().unwrap_or(spec);
    requirement.contains("==") || requirement.contains('<') || requirement.contains("~=")
}

/// Requirement files that list test dependencies, in a fixed order.
fn requirement_files(worktree: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut add_matching = |directory: &Path, prefix: &str, test: &dyn Fn(&str) -> bool| {
        let Ok(entries) = std::fs::read_dir(directory) else {
            return;
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter(|entry| entry.path().is_file())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".txt") || name.ends_with(".in"))
            .filter(|name| test(name))
            .collect();
        names.sort();
        files.extend(names.into_iter().map(|name| format!("{prefix}{name}")));
    };
    add_matching(worktree, "", &|name: &str| {
        name.starts_with("requirements-test")
            || name.starts_with("requirements_test")
            || name.starts_with("test-requirements")
            || name.starts_with("test_requirements")
            || name.starts_with("requirements-dev")
            || name.starts_with("requirements_dev")
            || name.starts_with("dev-requirements")
    });
    add_matching(
        &worktree.join("requirements"),
        "requirements/",
        &|name: &str| name.starts_with("test") || name.starts_with("dev"),
    );
    files
}

pub(super) fn read_requirement_file(
    worktree: &Path,
    file: &str,
    visited: &mut BTreeSet<String>,
    found: &mut Vec<Requirement>,
    depth: usize,
) {
    if depth > 3 || !visited.insert(file.to_string()) {
        return;
    }
    let Ok(text) = std::fs::read_to_string(worktree.join(file)) else {
        return;
    };
    let directory = Path::new(file).parent().unwrap_or(Path::new(""));
    for line in text.lines() {
        let line = match line.find(" #") {
            Some(index) => &line[..index],
            None => line,
        }
        .trim();
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let include = line
            .strip_prefix("-r")
            .or_else(|| line.strip_prefix("--requirement"))
            .map(|rest| rest.trim_start_matches('=').trim());
        if let Some(include) = include {
            let path = directory.join(include);
            let path = path.to_string_lossy();
            if !path.contains("..") && !path.starts_with('/') {
                read_requirement_file(worktree, &path, visited, found, depth + 1);
            }
            continue;
        }
        found.push(Requirement {
            spec: line.to_string(),
            source: file.to_string(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_of_pytests_own_dependencies_give_way() {
        // structlog's 2013 dev-requirements.txt: pytest 4.6 (Python 2.7) fails at import with these pins.
        let found = [
            "py==1.4.15",
            "six==1.4.1",
            "attrs>=19",
            "pretend==1.0.5",
            "pytest-cov==1.6",
            "pytest-mock==1.2",
        ]
        .map(|spec| Requirement {
            spec: spec.into(),
            source: "dev-requirements.txt".into(),
        })
        .to_vec();
        let specs: Vec<String> = simplify(found, None).into_iter().map(|r| r.spec).collect();
        assert_eq!(
            specs,
            ["py", "six", "attrs>=19", "pretend==1.0.5", "pytest-mock"]
        );
    }

    #[test]
    fn pytest_follows_the_interpreters_era() {
        let pytest = |version: &str| pytest_requirement(version.parse().unwrap());
        assert_eq!(pytest("2.7.18"), "pytest>=4.6,<4.7");
        assert_eq!(pytest("3.6.15"), "pytest>=7.0,<7.1");
        assert_eq!(pytest("3.7.16"), "pytest>=7.4,<7.5");
        assert_eq!(pytest("3.8.18"), "pytest>=8,<9");
        assert_eq!(pytest("3.13.0"), "pytest>=8,<9");
    }

    #[test]
    fn a_declared_pytest_pin_counts_when_our_plugins_run_under_it() {
        let directory = tempfile::tempdir().unwrap();
        let declared = |text: &str| {
            std::fs::write(directory.path().join("requirements-test.txt"), text).unwrap();
            declared_pytest(directory.path(), &ProjectMetadata::default())
        };
        assert_eq!(
            declared("six\npytest==3.6.4\n"),
            Some("pytest==3.6.4".into())
        );
        assert_eq!(
            declared("pytest>=3.6,<4 ; python_version < '3'\n"),
            Some("pytest>=3.6,<4".into())
        );
        assert_eq!(declared("pytest~=4.6\n"), Some("pytest~=4.6".into()));
        // Older than every series the plugins work under, or no cap at all: the era decides.
        assert_eq!(declared("pytest==2.3.5\n"), None);
        assert_eq!(declared("pytest==3.0.7\n"), None);
        assert_eq!(declared("pytest>=2.3\n"), None);
        assert_eq!(declared("pytest-cov==1.6\n"), None);
    }

    #[test]
    fn only_simple_requirements_have_names() {
        assert_eq!(
            requirement_name("Foo_Bar.baz[extra]>=1.0,<2"),
            Some("foo-bar-baz".into())
        );
        assert_eq!(
            requirement_name("mock; python_version < \"3\""),
            Some("mock".into())
        );
        assert_eq!(requirement_name("-e ."), None);
        assert_eq!(requirement_name("."), None);
        assert_eq!(requirement_name("./vendor/thing"), None);
        assert_eq!(requirement_name("git+https://github.com/x/y"), None);
        assert_eq!(requirement_name("thing @ https://x/y.whl"), None);
        assert_eq!(requirement_name("{toxinidir}/x"), None);
        assert_eq!(requirement_name("--index-url https://x"), None);
    }

    #[test]
    fn discovers_from_files_extras_tox_and_runtime() {
        let directory = tempfile::tempdir().unwrap();
        let root = directory.path();
        std::fs::create_dir(root.join("requirements")).unwrap();
        std::fs::write(
            root.join("requirements-test.txt"),
            "# tests\n-r requirements/base.txt\npytest==3.0.7\npytest-mock==1.2  # old pin\n-e .\nhypothesis>=3\n",
        )
        .unwrap();
        std::fs::write(root.join("requirements/base.txt"), "six>=1.9\n").unwrap();
        std::fs::write(root.join("requirements/test.txt"), "Mock\ncoverage\n").unwrap();
        let metadata = ProjectMetadata {
            name: Some("Demo_Lib".into()),
            test_extras: vec!["freezegun".into(), "hypothesis".into()],
            tox_deps: vec!["-rrequirements-test.txt".into(), "nose".into()],
            runtime: vec!["attrs>=19".into(), "demo-lib".into(), "six".into()],
            ..ProjectMetadata::default()
        };
        let found = discover_requirements(root, &metadata);
        let listed: Vec<(&str, &str)> = found
            .iter()
            .map(|requirement| (requirement.spec.as_str(), requirement.source.as_str()))
            .collect();
        assert_eq!(
            listed,
            [
                ("six>=1.9", "requirements/base.txt"),
                ("pytest-mock", "requirements-test.txt"),
                ("hypothesis>=3", "requirements-test.txt"),
                ("Mock", "requirements/test.txt"),
                ("freezegun", "test extras"),
                ("nose", "tox.ini"),
                ("attrs>=19", "runtime dependencies"),
            ]
        );
    }
}
