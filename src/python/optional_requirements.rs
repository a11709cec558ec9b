//! Optional test dependencies: what a suite imports only if it can (`pytest.importorskip`, an
//! import under `try: ... except ImportError:` that skips the test when it fails) and the
//! project declares somewhere, in any extra, dependency group, tox environment or requirements
//! file (tabulate's numpy, pandas and wcwidth are installed by tox's `py3X-extra` variants alone).
//! Without them those tests are skipped at the parent, and a skipped test is no claim. They are
//! installed after the required ones, and one that will not install is left out without failing
//! the environment (see [`super::install`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::metadata::ProjectMetadata;
use super::requirements::{Requirement, read_requirement_file, requirement_name, simplify};
use super::test_imports::{import_name, optional_test_imports};

/// Distributions whose module is not named after them by the common convention.
const IMPORTED_AS: [(&str, &str); 6] = [
    ("pyyaml", "yaml"),
    ("python-dateutil", "dateutil"),
    ("pillow", "pil"),
    ("beautifulsoup4", "bs4"),
    ("scikit-learn", "sklearn"),
    ("attrs", "attr"),
];

/// The optional test dependencies of the commit at `worktree` that `required` (the environment's
/// other requirements) does not already hold, first declaration of a name winning; each one's
/// source says where it is declared and which test file imports it.
pub fn optional_requirements(
    worktree: &Path,
    metadata: &ProjectMetadata,
    required: &[Requirement],
) -> Vec<Requirement> {
    let imported = optional_test_imports(worktree);
    if imported.is_empty() {
        return Vec::new();
    }
    let own_name = metadata.name.as_deref().and_then(requirement_name);
    let mut installed: BTreeSet<String> = required
        .iter()
        .filter_map(|requirement| requirement_name(&requirement.spec))
        .chain(["pytest".to_string()])
        .collect();
    installed.extend(own_name.clone());
    let mut found = Vec::new();
    for (spec, source) in declarations(worktree, metadata) {
        let Some(name) = requirement_name(&spec) else {
            continue;
        };
        if installed.contains(&name) {
            continue;
        }
        if let Some(file) = importing_file(&name, &imported) {
            found.push(Requirement {
                spec,
                source: format!("{source}, imported optionally by {file}"),
            });
        }
    }
    simplify(found, own_name.as_deref())
}

/// The test file that imports distribution `name` optionally, if one does.
fn importing_file<'a>(name: &str, imported: &'a BTreeMap<String, String>) -> Option<&'a str> {
    let module = IMPORTED_AS
        .iter()
        .find(|(distribution, _)| *distribution == name)
        .map_or_else(|| import_name(name), |(_, module)| (*module).to_string());
    imported
        .iter()
        .find(|(imported, _)| imported.to_ascii_lowercase() == module)
        .map(|(_, file)| file.as_str())
}

/// Every declared requirement with where it is declared: extras, dependency groups and tox
/// environments (see [`ProjectMetadata::declared_anywhere`]), then every requirements file at
/// the root (`requirements*.txt`, `*-requirements.txt`) and under `requirements/`.
fn declarations(worktree: &Path, metadata: &ProjectMetadata) -> Vec<(String, String)> {
    let mut declared = metadata.declared_anywhere.clone();
    for file in requirement_files(worktree) {
        let mut found = Vec::new();
        read_requirement_file(worktree, &file, &mut BTreeSet::new(), &mut found, 0);
        declared.extend(
            found
                .into_iter()
                .map(|requirement| (requirement.spec, requirement.source)),
        );
    }
    declared
}

fn requirement_files(worktree: &Path) -> Vec<String> {
    let listed = |directory: &Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(directory)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| entry.path().is_file())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".txt") || name.ends_with(".in"))
            .collect();
        names.sort();
        names
    };
    let mut files: Vec<String> = listed(worktree)
        .into_iter()
        .filter(|name| name.to_ascii_lowercase().contains("requirements"))
        .collect();
    files.extend(
        listed(&worktree.join("requirements"))
            .into_iter()
            .map(|name| format!("requirements/{name}")),
    );
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_imports_declared_anywhere_are_requested() {
        let directory = tempfile::tempdir().unwrap();
        let root = directory.path();
        std::fs::create_dir_all(root.join("test")).unwrap();
        std::fs::write(
            root.join("test/test_input.py"),
            "import pytest\n\n\ndef test_numpy():\n    np = pytest.importorskip('numpy')\n\n\n\
             def test_yaml():\n    try:\n        import yaml\n    except ImportError:\n        \
             pytest.skip('no yaml')\n\n\ndef test_six():\n    six = pytest.importorskip('six')\n\n\n\
             def test_undeclared():\n    pytest.importorskip('nowhere')\n",
        )
        .unwrap();
        std::fs::write(root.join("docs-requirements.txt"), "PyYAML>=5\n").unwrap();
        let metadata = ProjectMetadata {
            name: Some("demo".into()),
            declared_anywhere: vec![
                ("pytest".into(), "tox.ini [testenv:extra]".into()),
                ("numpy>=1.20".into(), "tox.ini [testenv:extra]".into()),
                ("six".into(), "tox.ini [testenv:extra]".into()),
                ("numpy".into(), "pyproject.toml extra `fast`".into()),
            ],
            ..ProjectMetadata::default()
        };
        let required = [Requirement {
            spec: "six>=1.9".into(),
            source: "requirements-test.txt".into(),
        }];
        let found = optional_requirements(root, &metadata, &required);
        let listed: Vec<(&str, &str)> = found
            .iter()
            .map(|requirement| (requirement.spec.as_str(), requirement.source.as_str()))
            .collect();
        assert_eq!(
            listed,
            [
                (
                    "numpy>=1.20",
                    "tox.ini [testenv:extra], imported optionally by test/test_input.py"
                ),
                (
                    "PyYAML>=5",
                    "docs-requirements.txt, imported optionally by test/test_input.py"
                ),
            ]
        );
        // Nothing imported optionally: nothing requested.
        std::fs::remove_file(root.join("test/test_input.py")).unwrap();
        assert_eq!(optional_requirements(root, &metadata, &required), []);
    }
}
