//! Python versions as claimflow compares them: `major.minor.patch` of an installed interpreter, and
//! the looser forms (`3`, `3.11`) that metadata and pipelines write.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A released CPython version (pre-release suffixes are dropped when parsing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PythonVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

/// Why a version string could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("read python version `{0}`")]
pub struct VersionParseError(pub String);

impl PythonVersion {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        PythonVersion {
            major,
            minor,
            patch,
        }
    }

    /// `3.11` for `3.11.7`: the granularity pytest eras and classifiers use.
    pub fn minor_string(&self) -> String {
        format!("{}.{}", self.major, self.minor)
    }

    /// The release components, for prefix comparisons.
    pub fn parts(&self) -> [u32; 3] {
        [self.major, self.minor, self.patch]
    }
}

impl fmt::Display for PythonVersion {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// Reads the leading numeric release segments of a version (`3.11.7`, `3.13.0rc1` -> [3, 13, 0]).
pub fn release_segments(text: &str) -> Option<Vec<u32>> {
    let mut segments = Vec::new();
    for piece in text.trim().split('.') {
        let digits: String = piece.chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() {
            break;
        }
        segments.push(digits.parse().ok()?);
        if digits.len() != piece.len() {
            // A suffix (`0rc1`) ends the release part.
            break;
        }
    }
    (!segments.is_empty()).then_some(segments)
}

impl FromStr for PythonVersion {
    type Err = VersionParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let segments = release_segments(text).ok_or_else(|| VersionParseError(text.into()))?;
        Ok(PythonVersion {
            major: segments[0],
            minor: segments.get(1).copied().unwrap_or(0),
            patch: segments.get(2).copied().unwrap_or(0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_full_short_and_prerelease_versions() {
        assert_eq!("3.11.7".parse(), Ok(PythonVersion::new(3, 11, 7)));
        assert_eq!("2.7".parse(), Ok(PythonVersion::new(2, 7, 0)));
        assert_eq!("3.13.0rc1".parse(), Ok(PythonVersion::new(3, 13, 0)));
        assert!("pypy".parse::<PythonVersion>().is_err());
    }

    #[test]
    fn orders_numerically_not_lexically() {
        let old: PythonVersion = "3.9.18".parse().unwrap();
        let new: PythonVersion = "3.10.13".parse().unwrap();
        assert!(old < new);
        assert_eq!(new.minor_string(), "3.10");
    }
}
