//! Which pytest-testmon runs beside a claim's interpreter and pytest. testmon is measured in the
//! environment the claims were mined and labelled under, so it has to fit that environment, not
//! the other way round: pip asked for plain `pytest-testmon` beside pytest 3.5 on Python 2.7 takes a
//! release that needs pytest 5 (1.0.0 declares no `Requires-Python`), and testmon cannot start.
//!
//! The table holds, newest first, each release that is the newest one for some interpreter and
//! pytest, with the `Requires-Python` and the `Requires-Dist` on pytest its distribution publishes.
//! Older releases of a series are left out: a newer one accepts all they accept (1.4.5, say, is
//! 2.0.15's range with an upper bound on Python). A commit no release fits gets no testmon at all.

use super::specifier::SpecifierSet;
use super::version::PythonVersion;

/// One pytest-testmon release as its published metadata describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestmonRelease {
    pub version: &'static str,
    /// `Requires-Python`; `None` where the release declares none (it installs anywhere).
    pub requires_python: Option<&'static str>,
    /// Its `Requires-Dist` on pytest.
    pub pytest: &'static str,
}

/// The releases chosen from, newest first (metadata of the published distributions).
pub const RELEASES: [TestmonRelease; 5] = [
    // 2.1 and 2.2 declare pytest >= 5, but their hooks take `collection_path`, which pytest has
    // from 7.0 on: under pytest 5.4 (tabulate d280152dd3) pytest stops with an INTERNALERROR.
    release("2.2.0", Some(">=3.10"), ">=7,<10"),
    release("2.1.4", Some(">=3.8"), ">=7,<9"),
    release("2.0.15", Some(">=3.7"), ">=5,<8"),
    release("1.3.3", Some(">=3.6"), ">=5,<8"),
    // The last release for Python 2 and for pytest before 5; its sdist declares no Python.
    release("0.9.19", None, ">=2.8.0,<6"),
];

const fn release(
    version: &'static str,
    requires_python: Option<&'static str>,
    pytest: &'static str,
) -> TestmonRelease {
    TestmonRelease {
        version,
        requires_python,
        pytest,
    }
}

/// No release fits the claims' interpreter and pytest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no pytest-testmon release runs under python {interpreter} with pytest {pytest} (the newest \
     for python 2.7 or pytest < 5 is 0.9.19, for pytest >= 5 {newest})"
)]
pub struct NoTestmonRelease {
    pub interpreter: String,
    pub pytest: String,
    newest: &'static str,
}

impl TestmonRelease {
    /// The requirement pip is asked for.
    pub fn requirement(&self) -> String {
        format!("pytest-testmon=={}", self.version)
    }

    /// True when it installs under `interpreter` beside `pytest`.
    pub fn runs_with(&self, interpreter: PythonVersion, pytest: PythonVersion) -> bool {
        let allows = |specifier: &str, version: PythonVersion| {
            SpecifierSet::parse(specifier)
                .expect("the table's specifiers parse")
                .allows(version)
        };
        self.requires_python
            .is_none_or(|specifier| allows(specifier, interpreter))
            && allows(self.pytest, pytest)
    }

    /// True for the releases that read pytest's `--lf` option at start-up (1.0 on: their
    /// configuration asks `options["lf"]`), so pytest's cache provider, which adds it, must be on.
    pub fn reads_last_failed(&self) -> bool {
        !self.version.starts_with("0.")
    }

    /// The pytest options that load this release's plugin by its module, with its `pytest11`
    /// entry point blocked. Loaded through the entry point, the plugin's requirements are checked
    /// first where pluggy reads entry points with `pkg_resources` (pytest before 3.7 on Python
    /// 2): a project that is itself one of pytest's requirements (more-itertools, which pytest 3.5
    /// wants at `>=4.0.0`) is registered in its checkout under its own, older version, and the
    /// check refuses to load testmon (`VersionConflict`). The entry point is named `testmon` up
    /// to 1.x and `pytest-testmon` from 2.0; the module is the same.
    pub fn plugin_options(&self) -> [&'static str; 4] {
        let entry_point = if self.version.starts_with("0.") || self.version.starts_with("1.") {
            "no:testmon"
        } else {
            "no:pytest-testmon"
        };
        ["-p", entry_point, "-p", PLUGIN_MODULE]
    }
}

/// The module every release's `pytest11` entry point names.
const PLUGIN_MODULE: &str = "testmon.pytest_testmon";

/// The newest release that runs under `interpreter` beside `pytest` (an installed version, `3.5.1`).
pub fn testmon_for(
    interpreter: PythonVersion,
    pytest: PythonVersion,
) -> Result<&'static TestmonRelease, NoTestmonRelease> {
    RELEASES
        .iter()
        .find(|release| release.runs_with(interpreter, pytest))
        .ok_or_else(|| NoTestmonRelease {
            interpreter: interpreter.to_string(),
            pytest: pytest.to_string(),
            newest: RELEASES[0].version,
        })
}

/// The oldest pytest release a pytest requirement (`pytest>=8,<9`, `pytest==3.6.4`) allows, for
/// an environment whose pytest is known only as that requirement.
pub fn lowest_pytest(spec: &str) -> Option<PythonVersion> {
    let specifier = spec
        .split(';')
        .next()
        .unwrap_or(spec)
        .trim()
        .trim_start_matches(|c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .trim();
    if specifier.is_empty() {
        return None;
    }
    let set = SpecifierSet::parse(specifier).ok()?;
    (2..=12)
        .flat_map(|major| (0..=20).map(move |minor| (major, minor)))
        .flat_map(|(major, minor)| {
            (0..=20).map(move |patch| PythonVersion::new(major, minor, patch))
        })
        .find(|version| set.allows(*version))
}

/// The table as text, for keys: a change to it changes which testmon a commit gets.
pub fn fingerprint() -> String {
    RELEASES
        .iter()
        .map(|release| {
            format!(
                "{}:{}:{}",
                release.version,
                release.requires_python.unwrap_or("any"),
                release.pytest
            )
        })
        .collect::<Vec<_>>()
        .join(";")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn testmon(interpreter: &str, pytest: &str) -> Result<&'static str, NoTestmonRelease> {
        testmon_for(interpreter.parse().unwrap(), pytest.parse().unwrap())
            .map(|release| release.version)
    }

    #[test]
    fn python_2_and_pytest_before_5_get_the_last_release_that_supports_them() {
        assert_eq!(testmon("2.7.18", "3.5.1"), Ok("0.9.19"));
        assert_eq!(testmon("2.7.18", "4.6.11"), Ok("0.9.19"));
        assert_eq!(testmon("3.6.15", "3.10.1"), Ok("0.9.19"));
        assert_eq!(testmon("3.9.18", "4.6.11"), Ok("0.9.19"));
    }

    #[test]
    fn each_interpreter_gets_the_newest_release_for_its_pytest() {
        assert_eq!(testmon("3.6.15", "5.4.3"), Ok("1.3.3"));
        assert_eq!(testmon("3.6.15", "7.0.1"), Ok("1.3.3"));
        assert_eq!(testmon("3.7.16", "7.4.4"), Ok("2.0.15"));
        assert_eq!(testmon("3.8.18", "7.4.4"), Ok("2.1.4"));
        // 2.1 on needs pytest 7's `collection_path`: tabulate's 3.8 / pytest 5.4 gets 2.0.
        assert_eq!(testmon("3.8.18", "5.4.3"), Ok("2.0.15"));
        assert_eq!(testmon("3.10.13", "6.2.5"), Ok("2.0.15"));
        assert_eq!(testmon("3.9.18", "8.3.4"), Ok("2.1.4"));
        assert_eq!(testmon("3.10.13", "8.3.4"), Ok("2.2.0"));
        assert_eq!(testmon("3.13.0", "8.3.4"), Ok("2.2.0"));
        // pytest 5 on a Python 3.5 is still 0.9.19's (1.x needs 3.6).
        assert_eq!(testmon("3.5.10", "5.4.3"), Ok("0.9.19"));
    }

    #[test]
    fn no_release_fits_some_environments() {
        // pytest 6 on Python 3.5: 0.9.19 stops before pytest 6, 1.x starts at Python 3.6.
        let none = testmon("3.5.10", "6.1.2").unwrap_err();
        assert_eq!(none.interpreter, "3.5.10");
        assert!(
            none.to_string().starts_with(
                "no pytest-testmon release runs under python 3.5.10 with pytest 6.1.2"
            )
        );
        assert!(
            testmon("3.7.16", "8.3.4").is_err(),
            "pytest 8 needs 2.1 on 3.8"
        );
        assert!(testmon("3.12.1", "10.0.0").is_err());
        assert!(testmon("2.7.18", "2.7.3").is_err());
    }

    #[test]
    fn only_testmon_1_and_later_need_the_cache_provider() {
        let needs = |version: &str| {
            RELEASES
                .iter()
                .find(|release| release.version == version)
                .unwrap()
                .reads_last_failed()
        };
        assert!(!needs("0.9.19"));
        assert!(needs("1.3.3"));
        assert!(needs("2.2.0"));
        assert_eq!(RELEASES[4].requirement(), "pytest-testmon==0.9.19");
    }

    #[test]
    fn the_plugin_is_loaded_by_module_with_the_releases_own_entry_point_blocked() {
        let options = |version: &str| {
            RELEASES
                .iter()
                .find(|release| release.version == version)
                .unwrap()
                .plugin_options()
        };
        // Entry point names as the distributions publish them (entry_points.txt, setup.cfg).
        assert_eq!(
            options("0.9.19"),
            ["-p", "no:testmon", "-p", "testmon.pytest_testmon"]
        );
        assert_eq!(options("1.3.3")[1], "no:testmon");
        for version in ["2.0.15", "2.1.4", "2.2.0"] {
            assert_eq!(options(version)[1], "no:pytest-testmon", "{version}");
        }
    }

    #[test]
    fn the_table_is_newest_first_and_its_specifiers_parse() {
        for pair in RELEASES.windows(2) {
            let newer: PythonVersion = pair[0].version.parse().unwrap();
            let older: PythonVersion = pair[1].version.parse().unwrap();
            assert!(newer > older, "{pair:?}");
        }
        for release in RELEASES {
            SpecifierSet::parse(release.pytest).unwrap();
            release
                .requires_python
                .map(|text| SpecifierSet::parse(text).unwrap());
        }
        assert!(fingerprint().starts_with("2.2.0:>=3.10:>=7,<10;"));
    }

    #[test]
    fn a_requirement_gives_its_oldest_pytest() {
        assert_eq!(
            lowest_pytest("pytest>=8,<9"),
            Some(PythonVersion::new(8, 0, 0))
        );
        assert_eq!(
            lowest_pytest("pytest==3.6.4"),
            Some(PythonVersion::new(3, 6, 4))
        );
        assert_eq!(
            lowest_pytest("pytest>=3.5,<3.6"),
            Some(PythonVersion::new(3, 5, 0))
        );
        assert_eq!(lowest_pytest("pytest"), None);
    }
}
