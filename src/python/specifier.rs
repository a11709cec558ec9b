//! Version specifiers as `python_requires` / `requires-python` write them (`>=3.6, !=3.0.*, <4`),
//! evaluated against an interpreter's version: the hard constraint on which interpreters may run a
//! commit's tests.

use std::fmt;

use super::version::{PythonVersion, release_segments};

/// One comparison of a specifier set.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Clause {
    operator: Operator,
    segments: Vec<u32>,
    /// `==3.6.*` / `!=3.0.*`: a prefix match.
    wildcard: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    Equal,
    NotEqual,
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
    Compatible,
}

/// A comma-separated set of clauses; a version is allowed when every clause allows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecifierSet {
    text: String,
    clauses: Vec<Clause>,
}

/// Why a specifier could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("read version specifier `{0}`")]
pub struct SpecifierParseError(pub String);

impl SpecifierSet {
    /// Parses `>=3.6, !=3.0.*` (whitespace and a trailing comma are tolerated).
    pub fn parse(text: &str) -> Result<Self, SpecifierParseError> {
        let error = || SpecifierParseError(text.to_string());
        let mut clauses = Vec::new();
        for raw in text.split(',') {
            let raw = raw.trim();
            if raw.is_empty() {
                continue;
            }
            let (operator, rest) = [
                ("===", Operator::Equal),
                ("~=", Operator::Compatible),
                ("==", Operator::Equal),
                ("!=", Operator::NotEqual),
                ("<=", Operator::LessEqual),
                (">=", Operator::GreaterEqual),
                ("<", Operator::Less),
                (">", Operator::Greater),
            ]
            .iter()
            .find_map(|(token, operator)| raw.strip_prefix(token).map(|rest| (*operator, rest)))
            .ok_or_else(error)?;
            let rest = rest.trim();
            let (version, wildcard) = match rest.strip_suffix(".*") {
                Some(prefix) => (prefix, true),
                None => (rest, false),
            };
            if wildcard && !matches!(operator, Operator::Equal | Operator::NotEqual) {
                return Err(error());
            }
            let segments = release_segments(version).ok_or_else(error)?;
            if operator == Operator::Compatible && segments.len() < 2 {
                return Err(error());
            }
            clauses.push(Clause {
                operator,
                segments,
                wildcard,
            });
        }
        if clauses.is_empty() {
            return Err(error());
        }
        Ok(SpecifierSet {
            text: text.trim().to_string(),
            clauses,
        })
    }

    /// True when `version` satisfies every clause.
    pub fn allows(&self, version: PythonVersion) -> bool {
        self.clauses.iter().all(|clause| clause.allows(version))
    }
}

impl fmt::Display for SpecifierSet {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.text)
    }
}

impl Clause {
    fn allows(&self, version: PythonVersion) -> bool {
        let actual = version.parts();
        let prefix_matches = || {
            self.segments
                .iter()
                .zip(actual.iter())
                .all(|(wanted, have)| wanted == have)
        };
        let ordering = compare(&actual, &self.segments);
        match self.operator {
            Operator::Equal if self.wildcard => prefix_matches(),
            Operator::NotEqual if self.wildcard => !prefix_matches(),
            Operator::Equal => ordering.is_eq(),
            Operator::NotEqual => ordering.is_ne(),
            Operator::Less => ordering.is_lt(),
            Operator::LessEqual => ordering.is_le(),
            Operator::Greater => ordering.is_gt(),
            Operator::GreaterEqual => ordering.is_ge(),
            Operator::Compatible => {
                // `~=3.7.1` means `>=3.7.1, ==3.7.*`: the last segment may grow.
                let prefix = &self.segments[..self.segments.len() - 1];
                ordering.is_ge() && prefix.iter().zip(actual.iter()).all(|(a, b)| a == b)
            }
        }
    }
}

/// Compares release segments, padding the shorter with zeros.
fn compare(actual: &[u32], wanted: &[u32]) -> std::cmp::Ordering {
    let length = actual.len().max(wanted.len());
    let at = |segments: &[u32], index: usize| segments.get(index).copied().unwrap_or(0);
    (0..length)
        .map(|index| at(actual, index).cmp(&at(wanted, index)))
        .find(|ordering| ordering.is_ne())
        .unwrap_or(std::cmp::Ordering::Equal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allows(specifier: &str, version: &str) -> bool {
        SpecifierSet::parse(specifier)
            .unwrap()
            .allows(version.parse().unwrap())
    }

    #[test]
    fn lower_and_upper_bounds() {
        assert!(allows(">=3.6", "3.6.15"));
        assert!(!allows(">=3.7", "3.6.15"));
        assert!(allows(">=3.6, <3.10", "3.9.18"));
        assert!(!allows(">=3.6, <3.10", "3.10.13"));
        assert!(allows(">3.6", "3.6.15"), "3.6.15 is greater than 3.6.0");
        assert!(allows("<=3.8", "3.8.0"));
    }

    #[test]
    fn wildcard_exclusions_of_the_python_2_era() {
        let specifier = ">=2.7, !=3.0.*, !=3.1.*, !=3.2.*, !=3.3.*";
        assert!(allows(specifier, "2.7.18"));
        assert!(allows(specifier, "3.6.15"));
        assert!(!allows(specifier, "3.3.7"));
        assert!(allows("==3.*", "3.12.1"));
        assert!(!allows("==3.*", "2.7.18"));
    }

    #[test]
    fn compatible_release() {
        assert!(allows("~=3.7", "3.12.1"));
        assert!(!allows("~=3.7", "3.6.15"));
        assert!(allows("~=3.7.1", "3.7.16"));
        assert!(!allows("~=3.7.1", "3.8.18"));
    }

    #[test]
    fn rejects_what_it_cannot_read() {
        assert!(SpecifierSet::parse("").is_err());
        assert!(SpecifierSet::parse("python3").is_err());
        assert!(SpecifierSet::parse(">=3.*").is_err());
        assert!(SpecifierSet::parse("~=3").is_err());
        assert_eq!(
            SpecifierSet::parse(" >=3.8, ").unwrap().to_string(),
            ">=3.8,"
        );
    }
}
