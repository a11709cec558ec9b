//! Slurm time limits (`--time`), as a pipeline's `executor:` block writes them.
//!
//! Slurm reads `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M` and `D-H:M:S` (a bare number is minutes), and
//! `UNLIMITED`. The limit is parsed when the pipeline loads, so a typo is reported at its line,
//! and written back to `sbatch` in one canonical form. Slurm keeps limits in whole minutes and
//! checks them about every 30 seconds: a job may run up to a minute and a half past its limit.

use std::fmt;

use serde::Serialize;

/// A job's wall-clock limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub enum TimeLimit {
    /// No limit beyond the partition's.
    Unlimited,
    /// At most this many seconds.
    Seconds(u64),
}

/// Why a time limit does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a Slurm time limit")]
pub struct TimeLimitError {
    pub text: String,
}

impl TimeLimit {
    /// A limit of `minutes` (a bare number, as Slurm reads it).
    pub fn minutes(minutes: u64) -> Self {
        TimeLimit::Seconds(minutes.saturating_mul(60))
    }

    /// Parses Slurm's spellings.
    pub fn parse(text: &str) -> Result<Self, TimeLimitError> {
        let error = || TimeLimitError {
            text: text.to_string(),
        };
        let trimmed = text.trim();
        if ["unlimited", "infinite"].contains(&trimmed.to_ascii_lowercase().as_str()) {
            return Ok(TimeLimit::Unlimited);
        }
        let number = |part: &str| -> Result<u64, TimeLimitError> {
            if part.is_empty() || !part.bytes().all(|byte| byte.is_ascii_digit()) {
                return Err(error());
            }
            part.parse().map_err(|_| error())
        };
        let (days, clock) = match trimmed.split_once('-') {
            Some((days, clock)) => (Some(number(days)?), clock),
            None => (None, trimmed),
        };
        let parts = clock
            .split(':')
            .map(number)
            .collect::<Result<Vec<u64>, _>>()?;
        let seconds = match (days, parts.as_slice()) {
            (None, [minutes]) => minutes * 60,
            (None, [minutes, seconds]) => minutes * 60 + seconds,
            (None, [hours, minutes, seconds]) => hours * 3600 + minutes * 60 + seconds,
            (Some(days), [hours]) => days * 86_400 + hours * 3600,
            (Some(days), [hours, minutes]) => days * 86_400 + hours * 3600 + minutes * 60,
            (Some(days), [hours, minutes, seconds]) => {
                days * 86_400 + hours * 3600 + minutes * 60 + seconds
            }
            _ => return Err(error()),
        };
        if seconds == 0 {
            return Err(error());
        }
        Ok(TimeLimit::Seconds(seconds))
    }
}

impl fmt::Display for TimeLimit {
    /// `D-HH:MM:SS`, or `UNLIMITED`: what `sbatch --time` is given.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeLimit::Unlimited => write!(f, "UNLIMITED"),
            TimeLimit::Seconds(total) => {
                let (days, rest) = (total / 86_400, total % 86_400);
                write!(
                    f,
                    "{days}-{:02}:{:02}:{:02}",
                    rest / 3600,
                    rest % 3600 / 60,
                    rest % 60
                )
            }
        }
    }
}

impl From<TimeLimit> for String {
    fn from(limit: TimeLimit) -> String {
        limit.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_slurm_spelling() {
        for (text, seconds) in [
            ("30", 1800),
            ("1:30", 90),
            ("2:00:00", 7200),
            ("1-0", 86_400),
            ("1-2:30", 86_400 + 2 * 3600 + 30 * 60),
            ("0-00:00:05", 5),
        ] {
            assert_eq!(
                TimeLimit::parse(text),
                Ok(TimeLimit::Seconds(seconds)),
                "{text}"
            );
        }
        assert_eq!(TimeLimit::parse("UNLIMITED"), Ok(TimeLimit::Unlimited));
        assert_eq!(TimeLimit::parse("infinite"), Ok(TimeLimit::Unlimited));
    }

    #[test]
    fn refuses_what_slurm_would_not_read() {
        for text in [
            "",
            "1h",
            "1:2:3:4",
            "-1",
            "1-",
            "a:b",
            "0",
            "0:00",
            "1-2:3:4:5",
        ] {
            assert!(TimeLimit::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn writes_the_canonical_form() {
        assert_eq!(TimeLimit::Seconds(90).to_string(), "0-00:01:30");
        assert_eq!(TimeLimit::minutes(61).to_string(), "0-01:01:00");
        assert_eq!(TimeLimit::Seconds(86_400 + 5).to_string(), "1-00:00:05");
        assert_eq!(TimeLimit::Unlimited.to_string(), "UNLIMITED");
    }
}
