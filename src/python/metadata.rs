//! What a commit's packaging files say about the project: its name, the Pythons it allows
//! (`python_requires`, `requires-python`, classifiers, tox's envlist), its declared dependencies and
//! its entry points. Read from `setup.py` (statically), `setup.cfg`, `pyproject.toml` and `tox.ini`
//! in the worktree.

use std::collections::BTreeMap;
use std::path::Path;

use super::config_files::{TomlValue, ini_lines, parse_ini, parse_toml};
use super::setup_script::{SetupValue, setup_keywords};

/// Extras and dependency groups that hold test requirements besides those named `test…`
/// (`test`, `tests`, `testing`, attrs' `tests_no_zope`): a development group installs the tests'
/// tools too (uv installs `dev` by default).
const DEVELOPMENT_GROUPS: [&str; 3] = ["dev", "develop", "development"];

/// True for an extra or dependency group whose requirements the tests need: one named `test…`,
/// a development group, or one tox installs for the tests (`extras = tests` in `[testenv]`).
fn is_test_group(name: &str, tox_extras: &[String]) -> bool {
    let name = name.trim().to_ascii_lowercase();
    name.starts_with("test")
        || DEVELOPMENT_GROUPS.contains(&name.as_str())
        || tox_extras
            .iter()
            .any(|extra| extra.eq_ignore_ascii_case(&name))
}

/// A `python_requires`-style constraint and the file that declared it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequiresPython {
    pub specifier: String,
    /// `setup.py`, `setup.cfg` or `pyproject.toml`.
    pub file: String,
}

/// Packaging metadata of one commit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectMetadata {
    /// The distribution name, when declared.
    pub name: Option<String>,
    pub requires_python: Option<RequiresPython>,
    /// Versions named by `Programming Language :: Python :: X[.Y]` classifiers (`2`, `2.7`, `3.6`).
    pub classifier_versions: Vec<String>,
    /// Versions named by tox's envlist (`py27` -> `2.7`), a hint only.
    pub tox_versions: Vec<String>,
    /// Runtime requirements (`install_requires`, `[project] dependencies`).
    pub runtime: Vec<String>,
    /// Requirements of the test extras and dependency groups (see [`is_test_group`]) and
    /// `tests_require`.
    pub test_extras: Vec<String>,
    /// The extras tox installs for the tests (`extras =` of `[testenv]`).
    pub tox_extras: Vec<String>,
    /// `deps` of tox's `[testenv]`.
    pub tox_deps: Vec<String>,
    /// The project installs its runtime requirements from `requirements.txt`: a pbr project
    /// (`[pbr]` in `setup.cfg`, `pbr=True` in `setup.py`), or a packaging file that names it.
    pub installs_from_requirements_txt: bool,
    /// Source that does not parse as Python 3 (`setup.py`, or test modules the caller checked):
    /// a sign of the Python 2 era when nothing else says which Python the project wants.
    pub python_2_source: bool,
    /// The entry points the project declares, group -> name -> object reference
    /// (`pkg.module:attr`): `[project.entry-points.<group>]`, `[project.scripts]` and
    /// `[project.gui-scripts]` of `pyproject.toml`, `[options.entry_points]` (and pbr's
    /// `[entry_points]`) of `setup.cfg`, `entry_points=` of `setup.py`. The first file to name an
    /// entry point wins, in the order above.
    pub entry_points: BTreeMap<String, BTreeMap<String, String>>,
    /// Every requirement an extra, a dependency group or a tox environment declares, test or not,
    /// with where (`extras_require[widechars]`, `tox.ini [testenv:py310-extra]`): what the tests
    /// import optionally is looked up here (see [`super::optional_requirements`]).
    pub declared_anywhere: Vec<(String, String)>,
}

impl ProjectMetadata {
    /// Reads every packaging file present in `worktree`; unreadable files contribute nothing.
    pub fn read(worktree: &Path) -> Self {
        let mut metadata = ProjectMetadata::default();
        let read = |name: &str| std::fs::read_to_string(worktree.join(name)).ok();
        // tox says which extras the tests install; the packaging files are read knowing that.
        if let Some(text) = read("tox.ini") {
            metadata.add_tox_ini(&text);
        }
        for name in ["pyproject.toml", "setup.cfg", "setup.py"] {
            if let Some(text) = read(name) {
                metadata.installs_from_requirements_txt |= installs_from_requirements_txt(&text);
                match name {
                    "pyproject.toml" => metadata.add_pyproject(&text),
                    "setup.cfg" => metadata.add_setup_cfg(&text),
                    _ => metadata.add_setup_py(&text),
                }
            }
        }
        metadata.classifier_versions.sort();
        metadata.classifier_versions.dedup();
        metadata.tox_versions.sort();
        metadata.tox_versions.dedup();
        metadata
    }

    fn set_requires(&mut self, specifier: &str, file: &str) {
        if self.requires_python.is_none() && !specifier.trim().is_empty() {
            self.requires_python = Some(RequiresPython {
                specifier: specifier.trim().to_string(),
                file: file.to_string(),
            });
        }
    }

    fn add_classifiers<'a>(&mut self, classifiers: impl IntoIterator<Item = &'a String>) {
        for classifier in classifiers {
            let parts: Vec<&str> = classifier.split("::").map(str::trim).collect();
            if let ["Programming Language", "Python", version] = parts.as_slice()
                && version.split('.').all(|part| part.parse::<u32>().is_ok())
            {
                self.classifier_versions.push((*version).to_string());
            }
        }
    }

    fn add_entry_points<'a>(
        &mut self,
        group: &str,
        points: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) {
        for (name, reference) in points {
            let (name, reference) = (name.trim(), reference.trim());
            if group.trim().is_empty() || name.is_empty() || reference.is_empty() {
                continue;
            }
            self.entry_points
                .entry(group.trim().to_string())
                .or_default()
                .entry(name.to_string())
                .or_insert_with(|| reference.to_string());
        }
    }

    /// Entry points written as lines, `name = pkg.module:attr` (setup.cfg's values, a setup
    /// script's lists and strings).
    fn add_entry_point_lines<'a>(
        &mut self,
        group: &str,
        lines: impl IntoIterator<Item = &'a String>,
    ) {
        let points: Vec<(&str, &str)> = lines
            .into_iter()
            .flat_map(|line| line.lines())
            .filter_map(|line| line.split_once('='))
            .collect();
        self.add_entry_points(group, points);
    }

    fn add_pyproject(&mut self, text: &str) {
        let tables = parse_toml(text);
        for (table, values) in &tables {
            let group = match table.as_str() {
                "project.scripts" => "console_scripts",
                "project.gui-scripts" => "gui_scripts",
                other => match other.strip_prefix("project.entry-points.") {
                    Some(group) => group,
                    None => continue,
                },
            };
            let points: Vec<(&str, &str)> = values
                .iter()
                .filter_map(|(name, value)| match value {
                    TomlValue::String(reference) => Some((name.as_str(), reference.as_str())),
                    TomlValue::Strings(_) => None,
                })
                .collect();
            self.add_entry_points(group, points);
        }
        let Some(project) = tables.get("project") else {
            return;
        };
        if let Some(TomlValue::String(name)) = project.get("name") {
            self.name.get_or_insert_with(|| name.clone());
        }
        if let Some(TomlValue::String(specifier)) = project.get("requires-python") {
            self.set_requires(specifier, "pyproject.toml");
        }
        if let Some(TomlValue::Strings(classifiers)) = project.get("classifiers") {
            self.add_classifiers(classifiers);
        }
        if let Some(TomlValue::Strings(dependencies)) = project.get("dependencies") {
            self.runtime.extend(dependencies.iter().cloned());
        }
        let groups = ["project.optional-dependencies", "dependency-groups"]
            .iter()
            .filter_map(|table| tables.get(*table))
            .flatten();
        for (group, value) in groups {
            let TomlValue::Strings(requirements) = value else {
                continue;
            };
            if is_test_group(group, &self.tox_extras) {
                self.test_extras.extend(requirements.iter().cloned());
            }
            self.declare(requirements, &format!("pyproject.toml extra `{group}`"));
        }
    }

    fn declare<'a>(&mut self, specs: impl IntoIterator<Item = &'a String>, source: &str) {
        self.declared_anywhere.extend(
            specs
                .into_iter()
                .map(|spec| (spec.trim().to_string(), source.to_string())),
        );
    }

    fn add_setup_cfg(&mut self, text: &str) {
        let sections = parse_ini(text);
        if let Some(section) = sections.get("metadata") {
            if let Some(name) = section.get("name") {
                self.name.get_or_insert_with(|| name.clone());
            }
            if let Some(classifiers) = section.get("classifiers") {
                self.add_classifiers(&ini_lines(classifiers));
            }
        }
        if let Some(section) = sections.get("options") {
            if let Some(specifier) = section.get("python_requires") {
                self.set_requires(specifier, "setup.cfg");
            }
            if let Some(requirements) = section.get("install_requires") {
                self.runtime.extend(ini_lines(requirements));
            }
            if let Some(requirements) = section.get("tests_require") {
                self.test_extras.extend(ini_lines(requirements));
            }
        }
        if let Some(section) = sections.get("options.extras_require") {
            for (group, requirements) in section {
                let requirements = ini_lines(requirements);
                if is_test_group(group, &self.tox_extras) {
                    self.test_extras.extend(requirements.iter().cloned());
                }
                self.declare(&requirements, &format!("setup.cfg extra `{group}`"));
            }
        }
        // setuptools' section, then pbr's.
        for name in ["options.entry_points", "entry_points"] {
            for (group, points) in sections.get(name).into_iter().flatten() {
                self.add_entry_point_lines(group, &ini_lines(points));
            }
        }
    }

    fn add_setup_py(&mut self, text: &str) {
        let Some(keywords) = setup_keywords(text) else {
            self.python_2_source |= !parses_as_python_3(text);
            return;
        };
        if let Some(SetupValue::String(name)) = keywords.get("name") {
            self.name.get_or_insert_with(|| name.clone());
        }
        if let Some(SetupValue::String(specifier)) = keywords.get("python_requires") {
            self.set_requires(specifier, "setup.py");
        }
        if let Some(SetupValue::Strings(classifiers)) = keywords.get("classifiers") {
            self.add_classifiers(classifiers);
        }
        if let Some(SetupValue::Strings(requirements)) = keywords.get("install_requires") {
            self.runtime.extend(requirements.iter().cloned());
        }
        if let Some(SetupValue::Strings(requirements)) = keywords.get("tests_require") {
            self.test_extras.extend(requirements.iter().cloned());
        }
        if let Some(SetupValue::Groups(groups)) = keywords.get("extras_require") {
            for (group, requirements) in groups {
                if is_test_group(group, &self.tox_extras) {
                    self.test_extras.extend(requirements.iter().cloned());
                }
                self.declare(requirements, &format!("setup.py extra `{group}`"));
            }
        }
        match keywords.get("entry_points") {
            Some(SetupValue::Groups(groups)) => {
                for (group, points) in groups {
                    self.add_entry_point_lines(group, points);
                }
            }
            // The INI form, `entry_points="[console_scripts]\nname = pkg:main"`.
            Some(SetupValue::String(text)) => {
                for (group, values) in parse_ini(text) {
                    self.add_entry_points(
                        &group,
                        values
                            .iter()
                            .map(|(name, reference)| (name.as_str(), reference.as_str())),
                    );
                }
            }
            _ => {}
        }
    }

    fn add_tox_ini(&mut self, text: &str) {
        let sections = parse_ini(text);
        if let Some(envlist) = sections
            .get("tox")
            .and_then(|section| section.get("envlist"))
        {
            self.tox_versions.extend(tox_versions(envlist));
        }
        if let Some(extras) = sections
            .get("testenv")
            .and_then(|section| section.get("extras"))
        {
            // `{env:TOX_AP_TEST_EXTRAS:tests}` (attrs) installs its default, `tests`.
            self.tox_extras.extend(
                ini_lines(extras)
                    .iter()
                    .flat_map(|line| line.split(','))
                    .map(|extra| {
                        let extra = extra.trim();
                        match extra
                            .strip_prefix("{env:")
                            .and_then(|rest| rest.strip_suffix('}'))
                        {
                            Some(rest) => rest.rsplit(':').next().unwrap_or_default().trim(),
                            None => extra,
                        }
                        .to_string()
                    })
                    .filter(|extra| !extra.is_empty()),
            );
        }
        if let Some(deps) = sections
            .get("testenv")
            .and_then(|section| section.get("deps"))
        {
            let lines = ini_lines(deps);
            self.tox_deps.extend(
                lines
                    .iter()
                    .flat_map(|line| tox_substitution(line, &sections)),
            );
        }
        // Every tox environment's deps, a CI variant's (`[testenv:py310-extra]`) included, with
        // factor-conditional lines (`extra: numpy`) read as their requirement.
        for (name, section) in &sections {
            let Some(deps) = section.get("deps").filter(|_| name.starts_with("testenv")) else {
                continue;
            };
            let specs: Vec<String> = ini_lines(deps)
                .iter()
                .flat_map(|line| tox_substitution(line, &sections))
                .map(|line| without_factors(&line).to_string())
                .collect();
            self.declare(&specs, &format!("tox.ini [{name}]"));
        }
    }
}

/// A tox deps line, with a whole-line `{[section]key}` reference replaced by that value's lines
/// (structlog's 2013 tox.ini kept its test deps in `[base]`); other lines as they are.
fn tox_substitution(line: &str, sections: &super::config_files::IniSections) -> Vec<String> {
    let reference = line
        .strip_prefix("{[")
        .and_then(|rest| rest.strip_suffix('}'))
        .and_then(|rest| rest.split_once(']'));
    match reference {
        Some((section, key)) => sections
            .get(section.trim())
            .and_then(|values| values.get(key.trim()))
            .map(|value| ini_lines(value))
            .unwrap_or_default(),
        None => vec![line.to_string()],
    }
}

/// A tox deps line without its factor condition: `py3{10,11}-extra: numpy` -> `numpy`.
fn without_factors(line: &str) -> &str {
    match line.split_once(": ") {
        Some((factors, spec))
            if factors.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ',' | '{' | '}' | '!')
            }) =>
        {
            spec.trim()
        }
        _ => line,
    }
}

/// True when a packaging file says the runtime requirements come from `requirements.txt`: it
/// uses pbr (which reads that file), or it names the file (a setup script that reads it, a
/// pyproject's dynamic `dependencies = {file = ["requirements.txt"]}`).
fn installs_from_requirements_txt(text: &str) -> bool {
    text.contains("requirements.txt")
        || text.lines().any(|line| {
            let line = line.trim();
            let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            line == "[pbr]"
                || compact.contains("pbr=True")
                || compact.contains("'pbr'")
                || compact.contains("\"pbr\"")
        })
}

/// True when `source` parses as Python 3.
pub fn parses_as_python_3(source: &str) -> bool {
    use rustpython_parser::Parse;
    rustpython_parser::ast::Suite::parse(source, "<module>").is_ok()
}

/// The Python versions a tox envlist names: `py27, py{36,37}-django, pypy` -> 2.7, 3.6, 3.7.
fn tox_versions(envlist: &str) -> Vec<String> {
    let mut versions = Vec::new();
    for environment in expand_braces(envlist) {
        for factor in environment.split('-') {
            let Some(digits) = factor.trim().strip_prefix("py") else {
                continue;
            };
            if digits.len() >= 2 && digits.chars().all(|c| c.is_ascii_digit()) {
                versions.push(format!("{}.{}", &digits[..1], &digits[1..]));
            }
        }
    }
    versions
}

/// Splits an envlist on commas and newlines, expanding one level of `{a,b}` alternatives.
fn expand_braces(envlist: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut current = String::new();
    let mut depth = 0;
    for character in envlist.chars() {
        match character {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        if (character == ',' || character == '\n') && depth == 0 {
            items.push(std::mem::take(&mut current));
        } else {
            current.push(character);
        }
    }
    items.push(current);
    let mut expanded = Vec::new();
    for item in items {
        let item = item.trim();
        match (item.find('{'), item.find('}')) {
            (Some(open), Some(close)) if open < close => {
                for alternative in item[open + 1..close].split(',') {
                    expanded.push(format!(
                        "{}{}{}",
                        &item[..open],
                        alternative.trim(),
                        &item[close + 1..]
                    ));
                }
            }
            _ if !item.is_empty() => expanded.push(item.to_string()),
            _ => {}
        }
    }
    expanded
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worktree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let directory = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(directory.path().join(name), text).unwrap();
        }
        directory
    }

    #[test]
    fn pyproject_wins_over_setup_cfg_and_setup_py() {
        let directory = worktree(&[
            (
                "pyproject.toml",
                "[project]\nname = \"demo\"\nrequires-python = \">=3.8\"\ndependencies = [\"attrs\"]\n\
                 [project.optional-dependencies]\ntests = [\"hypothesis\"]\n",
            ),
            ("setup.cfg", "[options]\npython_requires = >=3.6\n"),
            (
                "setup.py",
                "from setuptools import setup\nsetup(python_requires='>=2.7')\n",
            ),
        ]);
        let metadata = ProjectMetadata::read(directory.path());
        assert_eq!(metadata.name.as_deref(), Some("demo"));
        assert_eq!(
            metadata.requires_python,
            Some(RequiresPython {
                specifier: ">=3.8".into(),
                file: "pyproject.toml".into()
            })
        );
        assert_eq!(metadata.runtime, ["attrs"]);
        assert_eq!(metadata.test_extras, ["hypothesis"]);
    }

    fn points(pairs: &[(&str, &str, &str)]) -> BTreeMap<String, BTreeMap<String, String>> {
        let mut groups: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (group, name, reference) in pairs {
            groups
                .entry((*group).to_string())
                .or_default()
                .insert((*name).to_string(), (*reference).to_string());
        }
        groups
    }

    #[test]
    fn entry_points_are_read_from_every_packaging_file() {
        // stevedore's form: quoted group names with dots, scripts.
        let pyproject = worktree(&[(
            "pyproject.toml",
            "[project]\nname = \"stevedore\"\n\n[project.scripts]\nrun = \"pkg.cli:main\"\n\n\
             [project.entry-points.\"stevedore.test.extension\"]\n\
             t1 = \"stevedore.tests.test_extension:FauxExtension\"\n\
             e2 = \"stevedore.tests.notfound:UnimportableExtension\"\n\n[tool.setuptools]\n\
             packages = [\"stevedore\"]\n",
        )]);
        assert_eq!(
            ProjectMetadata::read(pyproject.path()).entry_points,
            points(&[
                ("console_scripts", "run", "pkg.cli:main"),
                (
                    "stevedore.test.extension",
                    "e2",
                    "stevedore.tests.notfound:UnimportableExtension"
                ),
                (
                    "stevedore.test.extension",
                    "t1",
                    "stevedore.tests.test_extension:FauxExtension"
                ),
            ])
        );
        // setuptools' section and pbr's; the first file to name an entry point wins.
        let setup_cfg = worktree(&[
            (
                "setup.cfg",
                "[metadata]\nname = demo\n\n[options.entry_points]\nconsole_scripts =\n    \
                 demo = demo.cli:main  # the CLI\n\n[entry_points]\ndemo.plugins =\n    \
                 a = demo.plugins:a\n    b = demo.plugins:b\n",
            ),
            (
                "setup.py",
                "from setuptools import setup\nsetup(entry_points={'demo.plugins': \
                 ['a = elsewhere:a', 'c = demo.plugins:c']})\n",
            ),
        ]);
        assert_eq!(
            ProjectMetadata::read(setup_cfg.path()).entry_points,
            points(&[
                ("console_scripts", "demo", "demo.cli:main"),
                ("demo.plugins", "a", "demo.plugins:a"),
                ("demo.plugins", "b", "demo.plugins:b"),
                ("demo.plugins", "c", "demo.plugins:c"),
            ])
        );
        // A setup script's INI string.
        let setup_py = worktree(&[(
            "setup.py",
            "from setuptools import setup\nsetup(name='old', entry_points=\"\"\"\n\
             [console_scripts]\nold = old.cli:main\n\"\"\")\n",
        )]);
        assert_eq!(
            ProjectMetadata::read(setup_py.path()).entry_points,
            points(&[("console_scripts", "old", "old.cli:main")])
        );
    }

    #[test]
    fn classifiers_and_tox_envlist_name_versions() {
        let directory = worktree(&[
            (
                "setup.py",
                "from setuptools import setup\nsetup(name='old', classifiers=[\n\
                 'Programming Language :: Python :: 2',\n'Programming Language :: Python :: 2.7',\n\
                 'Programming Language :: Python :: 3.4',\n'Programming Language :: Python :: Implementation :: PyPy',\n])\n",
            ),
            (
                "tox.ini",
                "[tox]\nenvlist = py27, py{34,35}-django, pypy, flake8\n\n[testenv]\ndeps =\n    mock\n    -rrequirements.txt\n",
            ),
        ]);
        let metadata = ProjectMetadata::read(directory.path());
        assert_eq!(metadata.requires_python, None);
        assert_eq!(metadata.classifier_versions, ["2", "2.7", "3.4"]);
        assert_eq!(metadata.tox_versions, ["2.7", "3.4", "3.5"]);
        assert_eq!(metadata.tox_deps, ["mock", "-rrequirements.txt"]);
        assert!(!metadata.python_2_source);
    }

    #[test]
    fn requirements_of_every_extra_and_tox_environment_are_declared_somewhere() {
        // tabulate's forms: numpy and pandas in a CI variant of tox, wcwidth in an extra.
        let directory = worktree(&[
            (
                "tox.ini",
                "[tox]\nenvlist = py310\n\n[testenv]\ndeps =\n    pytest\n    extra: six\n\n\
                 [testenv:py310-extra]\ndeps =\n    pytest\n    numpy\n    pandas\n",
            ),
            (
                "pyproject.toml",
                "[project]\nname = \"tabulate\"\n\n[project.optional-dependencies]\n\
                 widechars = [\"wcwidth\"]\n",
            ),
        ]);
        let metadata = ProjectMetadata::read(directory.path());
        let declared: Vec<(&str, &str)> = metadata
            .declared_anywhere
            .iter()
            .map(|(spec, source)| (spec.as_str(), source.as_str()))
            .collect();
        assert_eq!(
            declared,
            [
                ("pytest", "tox.ini [testenv]"),
                ("six", "tox.ini [testenv]"),
                ("pytest", "tox.ini [testenv:py310-extra]"),
                ("numpy", "tox.ini [testenv:py310-extra]"),
                ("pandas", "tox.ini [testenv:py310-extra]"),
                ("wcwidth", "pyproject.toml extra `widechars`"),
            ]
        );
        assert!(metadata.test_extras.is_empty());
    }

    #[test]
    fn tox_deps_follow_section_references() {
        // structlog's 2013 tox.ini: without the reference its test deps (pretend) were never installed.
        let directory = worktree(&[(
            "tox.ini",
            "[tox]\nenvlist = py27\n\n[base]\ndeps =\n    pytest-cov\n    pretend\n\n[testenv]\ndeps =\n    {[base]deps}\n    twisted\n    {[missing]deps}\n",
        )]);
        let metadata = ProjectMetadata::read(directory.path());
        assert_eq!(metadata.tox_deps, ["pytest-cov", "pretend", "twisted"]);
    }

    #[test]
    fn a_python_2_setup_script_is_noticed() {
        let directory = worktree(&[(
            "setup.py",
            "from distutils.core import setup\nprint 'building'\nsetup(name='old')\n",
        )]);
        let metadata = ProjectMetadata::read(directory.path());
        assert!(metadata.python_2_source);
        assert_eq!(metadata.name, None);
    }
}
