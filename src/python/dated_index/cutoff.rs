//! The moment a dated environment's releases are bounded by ([`ReleaseCutoff`]), and the bound an
//! environment request carries ([`ReleaseBound`]): the commit's time and the tools claimflow adds.

use std::fmt;

use serde::Serialize;

use crate::corpus::{format_utc, parse_timestamp};

/// A moment, to the second: only files uploaded to the index before it are offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct ReleaseCutoff(i64);

impl ReleaseCutoff {
    /// The cutoff at `seconds` since the epoch (a commit's committer time, as git stores it).
    pub fn from_seconds(seconds: i64) -> Self {
        ReleaseCutoff(seconds)
    }

    /// Seconds since the epoch.
    pub fn seconds(self) -> i64 {
        self.0
    }

    /// The form it takes in the local index's addresses, `20200501T120000Z` (ISO 8601's basic
    /// form: no character a URL would escape).
    pub fn path_segment(self) -> String {
        format_utc(self.0).replace(['-', ':'], "")
    }

    /// Reads [`ReleaseCutoff::path_segment`]'s form back.
    pub fn from_path_segment(segment: &str) -> Option<Self> {
        let bytes = segment.as_bytes();
        if bytes.len() != 16 || bytes[8] != b'T' || bytes[15] != b'Z' {
            return None;
        }
        let extended = format!(
            "{}-{}-{}T{}:{}:{}Z",
            &segment[0..4],
            &segment[4..6],
            &segment[6..8],
            &segment[9..11],
            &segment[11..13],
            &segment[13..15]
        );
        parse_timestamp(&extended)
            .ok()
            .map(|time| ReleaseCutoff(time.seconds))
    }

    /// Whether a file uploaded at `upload_time` (PEP 700's `upload-time`,
    /// `2014-12-03T17:58:24.172339Z`) came before the cutoff; `None` when the text is not a time.
    /// A fraction of a second is dropped: against a whole second, `floor(t) < c` exactly when
    /// `t < c`.
    pub fn admits(self, upload_time: &str) -> Option<bool> {
        Some(upload_seconds(upload_time)? < self.0)
    }
}

/// Seconds since the epoch of an `upload-time`, its fraction of a second dropped.
pub(super) fn upload_seconds(upload_time: &str) -> Option<i64> {
    let text = upload_time.trim();
    let whole = text.get(..19)?;
    let rest = &text[19..];
    let zone = match rest.strip_prefix('.') {
        Some(fraction) => fraction.trim_start_matches(|c: char| c.is_ascii_digit()),
        None => rest,
    };
    parse_timestamp(&format!("{whole}{zone}"))
        .ok()
        .map(|time| time.seconds)
}

impl fmt::Display for ReleaseCutoff {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&format_utc(self.0))
    }
}

/// The bound on what an environment installs under a repository's `releases: at-commit`: the
/// files uploaded before the committer time of the commit whose requirements it is built from.
/// The tools claimflow itself adds (pytest, and the testmon arm's pytest-testmon) may be newer
/// than the commit: pytest 3.5 is the oldest claimflow runs, and a 2016 commit predates it. So the
/// bound is moved, at build time, to just after the oldest release each tool's requirement
/// allows, where that came later; the rest of the environment is then what that day offered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReleaseBound {
    /// The committer time of the commit whose requirements the environment is built from.
    pub committed: ReleaseCutoff,
    /// Requirements on tools besides pytest (whose requirement the request holds anyway).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
}

impl ReleaseBound {
    /// The bound of a commit committed at `seconds` since the epoch.
    pub fn at(seconds: i64) -> Self {
        ReleaseBound {
            committed: ReleaseCutoff::from_seconds(seconds),
            tools: Vec::new(),
        }
    }

    /// The bound with `requirement` (`pytest-testmon==2.0.15`) counted as one of claimflow's tools.
    pub fn with_tool(mut self, requirement: impl Into<String>) -> Self {
        self.tools.push(requirement.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cutoff_round_trips_through_its_address_form() {
        let cutoff = ReleaseCutoff::from_seconds(1_588_334_400);
        assert_eq!(cutoff.to_string(), "2020-05-01T12:00:00Z");
        assert_eq!(cutoff.path_segment(), "20200501T120000Z");
        assert_eq!(
            ReleaseCutoff::from_path_segment("20200501T120000Z"),
            Some(cutoff)
        );
        for bad in [
            "2020-05-01T12:00:00Z",
            "20200501T120000",
            "20201301T120000Z",
            "x",
        ] {
            assert_eq!(ReleaseCutoff::from_path_segment(bad), None, "{bad}");
        }
    }

    #[test]
    fn uploads_before_the_cutoff_are_admitted_to_the_second() {
        let cutoff = ReleaseCutoff::from_seconds(1_588_334_400);
        assert_eq!(cutoff.admits("2020-05-01T11:59:59.999999Z"), Some(true));
        assert_eq!(cutoff.admits("2020-05-01T12:00:00.000001Z"), Some(false));
        assert_eq!(cutoff.admits("2020-05-01T12:00:00Z"), Some(false));
        assert_eq!(cutoff.admits("2020-05-01T13:59:59+02:00"), Some(true));
        assert_eq!(cutoff.admits("last Tuesday"), None);
    }
}
