//! Which pytest a commit's tests run under. A suite is written against the pytest of its day: a 2013
//! suite calls fixtures directly and defines `pytest_funcarg__` fixtures, both errors since pytest 4.
//! So the choice follows the parent commit's date as well as the interpreter: the newest series
//! that was already released on that date and runs on the interpreter. A commit older than every
//! series that runs on its interpreter gets the oldest one that does; no series is older than
//! [`FLOOR`], the oldest pytest the crate's own plugins (`collect_plugin.py`, `result_plugin.py`)
//! work under.
//!
//! The package under test is imported from the worktree, first on the path. When it is one of
//! pytest's own dependencies (more-itertools, attrs, packaging, …), an old checkout of it shadows the
//! version pytest needs and pytest fails at import (`cannot import name always_iterable`). So such a
//! repository avoids the series that depend on it, where the interpreter runs one that does not.

use super::version::PythonVersion;

/// One pytest series: the spec pip installs, when its first release came out, and the
/// interpreters (`major.minor`, inclusive) it runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PytestSeries {
    pub spec: &'static str,
    /// Its first release, `(year, month, day)` UTC.
    pub released: (i32, u32, u32),
    pub oldest_python: (u32, u32),
    pub newest_python: (u32, u32),
    /// The distributions it imports at run time that a repository under test could be (normalized
    /// names; `py`, `six` and the backports are left out as no suite runs with its own copy).
    pub imports: &'static [&'static str],
}

/// The series claimflow chooses from, oldest first. One per era rather than every minor release:
/// each entry is a step in what suites were allowed to do, and fewer entries share more
/// environments. The last entry for each interpreter is what a commit of today gets.
pub const SERIES: [PytestSeries; 11] = [
    series("pytest>=3.5,<3.6", (2018, 3, 21), (2, 7), (3, 6), OLD),
    series("pytest>=3.6,<3.7", (2018, 5, 23), (2, 7), (3, 7), OLD),
    series("pytest>=3.10,<3.11", (2018, 11, 3), (2, 7), (3, 7), OLD),
    series(
        "pytest>=4.6,<4.7",
        (2019, 6, 3),
        (2, 7),
        (3, 8),
        OLD_PACKAGING,
    ),
    series(
        "pytest>=5.4,<5.5",
        (2020, 3, 12),
        (3, 5),
        (3, 9),
        OLD_PACKAGING,
    ),
    series("pytest>=6.1,<6.2", (2020, 9, 26), (3, 5), (3, 9), ATTRS),
    series("pytest>=6.2,<6.3", (2020, 12, 13), (3, 6), (3, 10), ATTRS),
    series("pytest>=7.0,<7.1", (2022, 2, 3), (3, 6), (3, 10), ATTRS),
    series(
        "pytest>=7.2,<7.3",
        (2022, 10, 25),
        (3, 7),
        (3, 11),
        ATTRS_GROUPS,
    ),
    series("pytest>=7.4,<7.5", (2023, 6, 23), (3, 7), (3, 12), GROUPS),
    series("pytest>=8,<9", (2024, 1, 27), (3, 8), (3, 14), GROUPS),
];

const OLD: &[&str] = &["attrs", "more-itertools", "pluggy", "atomicwrites"];
const OLD_PACKAGING: &[&str] = &[
    "attrs",
    "more-itertools",
    "pluggy",
    "atomicwrites",
    "packaging",
    "wcwidth",
];
const ATTRS: &[&str] = &["attrs", "pluggy", "packaging", "iniconfig", "toml", "tomli"];
const ATTRS_GROUPS: &[&str] = &[
    "attrs",
    "pluggy",
    "packaging",
    "iniconfig",
    "tomli",
    "exceptiongroup",
];
const GROUPS: &[&str] = &[
    "pluggy",
    "packaging",
    "iniconfig",
    "tomli",
    "exceptiongroup",
];

/// The oldest series the crate's plugins are checked against (an integration test mines and
/// labels a claim under it). Older ones lack `--rootdir` (new in 3.5), which every pytest command
/// passes so that node ids are relative to the worktree whatever configuration it has.
pub const FLOOR: &str = SERIES[0].spec;

const fn series(
    spec: &'static str,
    released: (i32, u32, u32),
    oldest_python: (u32, u32),
    newest_python: (u32, u32),
    imports: &'static [&'static str],
) -> PytestSeries {
    PytestSeries {
        spec,
        released,
        oldest_python,
        newest_python,
        imports,
    }
}

impl PytestSeries {
    fn runs_on(&self, version: PythonVersion) -> bool {
        let minor = (version.major, version.minor);
        self.oldest_python <= minor && minor <= self.newest_python
    }

    /// Its first release as seconds since the Unix epoch (midnight UTC).
    pub fn released_at(&self) -> i64 {
        let (year, month, day) = self.released;
        days_from_civil(year, month, day) * 86_400
    }
}

/// The pytest spec for an interpreter of `version` running a commit whose parent is dated `date`
/// (seconds since the epoch); without a date, the newest series that runs on the interpreter.
pub fn pytest_for(version: PythonVersion, date: Option<i64>) -> &'static str {
    pytest_for_project(version, date, None)
}

/// [`pytest_for`] for a repository whose distribution is `project` (a normalized name): when the
/// interpreter runs a series that does not import the project, only those are chosen from.
pub fn pytest_for_project(
    version: PythonVersion,
    date: Option<i64>,
    project: Option<&str>,
) -> &'static str {
    let mut running: Vec<&PytestSeries> = SERIES
        .iter()
        .filter(|series| series.runs_on(version))
        .collect();
    if let Some(project) = project
        && running
            .iter()
            .any(|series| !series.imports.contains(&project))
    {
        running.retain(|series| !series.imports.contains(&project));
    }
    let Some(newest) = running.last() else {
        // An interpreter newer than the table: the newest series is the best guess.
        return SERIES[SERIES.len() - 1].spec;
    };
    let Some(date) = date else {
        return newest.spec;
    };
    running
        .iter()
        .rev()
        .find(|series| series.released_at() <= date)
        .unwrap_or(&running[0])
        .spec
}

/// The bounds a series' last release declares on its own dependencies (its wheel's
/// `Requires-Dist`), by normalized name; the `(2, 7)` entries hold only on Python 2. A repository's
/// requirement on one of these is held to them, so pip cannot put a newer one beside this pytest
/// (pluggy 1.x beside pytest 3.5 fails at start: `implprefix`).
const DEPENDENCY_BOUNDS: &[(&str, &[(&str, &str)])] = &[
    (
        "pytest>=3.5,<3.6",
        &[
            ("py", ">=1.5.0"),
            ("six", ">=1.10.0"),
            ("attrs", ">=17.4.0"),
            ("more-itertools", ">=4.0.0"),
            ("pluggy", ">=0.5,<0.7"),
        ],
    ),
    (
        "pytest>=3.6,<3.7",
        &[
            ("py", ">=1.5.0"),
            ("six", ">=1.10.0"),
            ("attrs", ">=17.4.0"),
            ("more-itertools", ">=4.0.0"),
            ("atomicwrites", ">=1.0"),
            ("pluggy", ">=0.5,<0.8"),
        ],
    ),
    (
        "pytest>=3.10,<3.11",
        &[
            ("py", ">=1.5.0"),
            ("six", ">=1.10.0"),
            ("attrs", ">=17.4.0"),
            ("more-itertools", ">=4.0.0"),
            ("atomicwrites", ">=1.0"),
            ("pluggy", ">=0.7"),
            ("pathlib2", ">=2.2.0"),
        ],
    ),
    (
        "pytest>=4.6,<4.7",
        &[
            ("py", ">=1.5.0"),
            ("six", ">=1.10.0"),
            ("attrs", ">=17.4.0"),
            ("atomicwrites", ">=1.0"),
            ("pluggy", ">=0.12,<1.0"),
            ("funcsigs", ">=1.0"),
            ("pathlib2", ">=2.2.0"),
            ("importlib-metadata", ">=0.12"),
            ("more-itertools@2.7", ">=4.0.0,<6.0.0"),
            ("more-itertools", ">=4.0.0"),
        ],
    ),
    (
        "pytest>=5.4,<5.5",
        &[
            ("py", ">=1.5.0"),
            ("attrs", ">=17.4.0"),
            ("more-itertools", ">=4.0.0"),
            ("pluggy", ">=0.12,<1.0"),
            ("pathlib2", ">=2.2.0"),
            ("importlib-metadata", ">=0.12"),
        ],
    ),
    (
        "pytest>=6.1,<6.2",
        &[
            ("attrs", ">=17.4.0"),
            ("pluggy", ">=0.12,<1.0"),
            ("py", ">=1.8.2"),
            ("importlib-metadata", ">=0.12"),
        ],
    ),
    (
        "pytest>=6.2,<6.3",
        &[
            ("attrs", ">=19.2.0"),
            ("pluggy", ">=0.12,<2.0"),
            ("py", ">=1.8.2"),
            ("importlib-metadata", ">=0.12"),
        ],
    ),
    (
        "pytest>=7.0,<7.1",
        &[
            ("attrs", ">=19.2.0"),
            ("pluggy", ">=0.12,<2.0"),
            ("py", ">=1.8.2"),
            ("tomli", ">=1.0.0"),
            ("importlib-metadata", ">=0.12"),
        ],
    ),
    (
        "pytest>=7.2,<7.3",
        &[
            ("attrs", ">=19.2.0"),
            ("pluggy", ">=0.12,<2.0"),
            ("exceptiongroup", ">=1.0.0rc8"),
            ("tomli", ">=1.0.0"),
            ("importlib-metadata", ">=0.12"),
        ],
    ),
    (
        "pytest>=7.4,<7.5",
        &[
            ("pluggy", ">=0.12,<2.0"),
            ("exceptiongroup", ">=1.0.0rc8"),
            ("tomli", ">=1.0.0"),
            ("importlib-metadata", ">=0.12"),
        ],
    ),
    (
        "pytest>=8,<9",
        &[
            ("pluggy", ">=1.5,<2"),
            ("packaging", ">=20"),
            ("iniconfig", ">=1"),
            ("exceptiongroup", ">=1"),
            ("tomli", ">=1"),
            ("colorama", ">=0.4"),
        ],
    ),
];

/// The specifier the pytest series `spec` declares for its dependency `name` (normalized) under
/// an interpreter of `version`, if it declares one (see [`DEPENDENCY_BOUNDS`]).
pub fn dependency_bounds(spec: &str, name: &str, version: PythonVersion) -> Option<&'static str> {
    let (_, bounds) = DEPENDENCY_BOUNDS
        .iter()
        .find(|(series, _)| *series == spec)?;
    let python_2 = format!("{name}@2.7");
    bounds
        .iter()
        .find(|(dependency, _)| version.major == 2 && *dependency == python_2)
        .or_else(|| bounds.iter().find(|(dependency, _)| *dependency == name))
        .map(|(_, specifier)| *specifier)
}

/// The series a pytest spec belongs to: itself when it is one, else the first whose releases
/// (`X.Y.0` to `X.Y.15`) it allows (a commit's own pin, `pytest==3.6.4`).
pub fn series_of(spec: &str) -> Option<&'static str> {
    if let Some(series) = SERIES.iter().find(|series| series.spec == spec) {
        return Some(series.spec);
    }
    let specifier = spec
        .split(';')
        .next()
        .unwrap_or(spec)
        .trim()
        .trim_start_matches(|c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let set = super::specifier::SpecifierSet::parse(specifier.trim()).ok()?;
    SERIES
        .iter()
        .find(|series| {
            let lower = series
                .spec
                .trim_start_matches("pytest>=")
                .split(',')
                .next()
                .unwrap_or("0");
            let mut parts = lower
                .split('.')
                .map(|part| part.parse::<u32>().unwrap_or(0));
            let major = parts.next().unwrap_or(0);
            let minors = match parts.next() {
                Some(minor) => minor..=minor,
                None => 0..=15,
            };
            minors
                .flat_map(|minor| {
                    (0..=15).map(move |patch| PythonVersion::new(major, minor, patch))
                })
                .any(|release| set.allows(release))
        })
        .map(|series| series.spec)
}

/// The table as text, for keys: a change to it changes which pytest a commit gets.
pub fn series_fingerprint() -> String {
    SERIES
        .iter()
        .map(|series| {
            let (year, month, day) = series.released;
            format!(
                "{}@{year:04}-{month:02}-{day:02}:{}.{}-{}.{}:{}",
                series.spec,
                series.oldest_python.0,
                series.oldest_python.1,
                series.newest_python.0,
                series.newest_python.1,
                series.imports.join(",")
            )
        })
        .chain(DEPENDENCY_BOUNDS.iter().map(|(series, bounds)| {
            let bounds: Vec<String> = bounds
                .iter()
                .map(|(name, specifier)| format!("{name}{specifier}"))
                .collect();
            format!("{series}:{}", bounds.join(","))
        }))
        .collect::<Vec<_>>()
        .join(";")
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i32, month: u32, day: u32) -> i64 {
    let year = i64::from(year) - i64::from(month <= 2);
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month = i64::from(month);
    let day_of_year =
        (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(year: i32, month: u32, day: u32) -> Option<i64> {
        Some(days_from_civil(year, month, day) * 86_400)
    }

    fn pytest(version: &str, date: Option<i64>) -> &'static str {
        pytest_for(version.parse().unwrap(), date)
    }

    #[test]
    fn dates_count_days_from_the_epoch() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        // `date -d 2023-11-14T22:13:20Z +%s` = 1700000000, the fixture repositories' epoch.
        assert_eq!(
            days_from_civil(2023, 11, 14) * 86_400 + 80_000,
            1_700_000_000
        );
    }

    #[test]
    fn without_a_date_the_newest_series_for_the_interpreter() {
        assert_eq!(pytest("2.7.18", None), "pytest>=4.6,<4.7");
        assert_eq!(pytest("3.5.10", None), "pytest>=6.1,<6.2");
        assert_eq!(pytest("3.6.15", None), "pytest>=7.0,<7.1");
        assert_eq!(pytest("3.7.16", None), "pytest>=7.4,<7.5");
        assert_eq!(pytest("3.8.18", None), "pytest>=8,<9");
        assert_eq!(pytest("3.13.0", None), "pytest>=8,<9");
        assert_eq!(pytest("3.99.0", None), "pytest>=8,<9");
    }

    #[test]
    fn a_commit_gets_the_series_of_its_day() {
        // structlog's 2013 suite calls fixtures directly: it gets the floor, not pytest 4.6.
        assert_eq!(pytest("2.7.18", at(2013, 9, 9)), FLOOR);
        assert_eq!(pytest("3.6.15", at(2015, 1, 1)), FLOOR);
        assert_eq!(pytest("2.7.18", at(2018, 6, 7)), "pytest>=3.6,<3.7");
        assert_eq!(pytest("2.7.18", at(2019, 6, 3)), "pytest>=4.6,<4.7");
        assert_eq!(pytest("2.7.18", at(2024, 1, 1)), "pytest>=4.6,<4.7");
        assert_eq!(pytest("3.8.18", at(2020, 1, 1)), "pytest>=4.6,<4.7");
        assert_eq!(pytest("3.11.7", at(2023, 11, 14)), "pytest>=7.4,<7.5");
        assert_eq!(pytest("3.11.7", at(2024, 3, 5)), "pytest>=8,<9");
        // No series of 2015 runs on 3.13: the oldest one that does.
        assert_eq!(pytest("3.13.0", at(2015, 1, 1)), "pytest>=8,<9");
        assert_eq!(pytest("3.11.7", at(2015, 1, 1)), "pytest>=7.2,<7.3");
    }

    #[test]
    fn a_project_pytest_imports_avoids_the_series_that_import_it() {
        let pytest = |version: &str, date, project| {
            pytest_for_project(version.parse().unwrap(), date, Some(project))
        };
        // more-itertools of 2016 would shadow the more_itertools pytest 3.x to 5.x import.
        assert_eq!(
            pytest("3.7.16", at(2016, 5, 1), "more-itertools"),
            "pytest>=6.1,<6.2"
        );
        assert_eq!(
            pytest("3.7.16", at(2024, 5, 1), "more-itertools"),
            "pytest>=7.4,<7.5"
        );
        // Every series that runs on 2.7 imports it: the choice by date stands.
        assert_eq!(pytest("2.7.18", at(2016, 5, 1), "more-itertools"), FLOOR);
        // A project pytest does not import changes nothing.
        assert_eq!(
            pytest("3.7.16", at(2016, 5, 1), "cachetools"),
            "pytest>=3.6,<3.7"
        );
        assert_eq!(
            pytest("3.11.7", at(2023, 1, 1), "packaging"),
            pytest("3.11.7", at(2023, 1, 1), "cachetools"),
            "every series on 3.11 imports packaging"
        );
    }

    #[test]
    fn every_series_has_its_dependency_bounds() {
        for series in SERIES {
            assert!(
                dependency_bounds(series.spec, "pluggy", PythonVersion::new(3, 8, 0)).is_some(),
                "{}",
                series.spec
            );
        }
        let python_2 = PythonVersion::new(2, 7, 18);
        let python_3 = PythonVersion::new(3, 7, 0);
        assert_eq!(
            dependency_bounds("pytest>=4.6,<4.7", "more-itertools", python_2),
            Some(">=4.0.0,<6.0.0")
        );
        assert_eq!(
            dependency_bounds("pytest>=4.6,<4.7", "more-itertools", python_3),
            Some(">=4.0.0")
        );
        assert_eq!(dependency_bounds("pytest>=8,<9", "six", python_3), None);
        assert_eq!(series_of("pytest==3.6.4"), Some("pytest>=3.6,<3.7"));
        assert_eq!(series_of("pytest>=8,<9"), Some("pytest>=8,<9"));
        assert_eq!(series_of("pytest==2.3.5"), None);
    }

    #[test]
    fn the_table_is_in_release_order() {
        for pair in SERIES.windows(2) {
            assert!(pair[0].released < pair[1].released, "{pair:?}");
        }
        assert!(series_fingerprint().starts_with(
            "pytest>=3.5,<3.6@2018-03-21:2.7-3.6:attrs,more-itertools,pluggy,atomicwrites;"
        ));
    }
}
