//! Commit times as a script writes them (RFC 3339) and as git stores them (seconds since
//! the epoch plus the author's UTC offset).
//!
//! Only the form `YYYY-MM-DDTHH:MM:SS` followed by `Z` or `±HH:MM` is accepted: a script is
//! written by hand, and one spelling keeps it readable and unambiguous.

/// A moment and the offset it was written in; both enter a commit's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timestamp {
    /// Seconds since 1970-01-01T00:00:00Z.
    pub seconds: i64,
    /// The writer's offset from UTC, in minutes (east is positive).
    pub offset_minutes: i32,
}

/// Parse `2024-03-04T09:12:00+01:00` or `2024-03-04T08:12:00Z`.
pub fn parse_timestamp(text: &str) -> Result<Timestamp, String> {
    let malformed = || format!("`{text}` is not a date like 2024-03-04T09:12:00+01:00");
    let text = text.trim();
    if !text.is_ascii() || text.len() < 20 {
        return Err(malformed());
    }
    let (local, zone) = text.split_at(19);
    let bytes = local.as_bytes();
    let separators_ok = bytes[4] == b'-'
        && bytes[7] == b'-'
        && (bytes[10] == b'T' || bytes[10] == b't')
        && bytes[13] == b':'
        && bytes[16] == b':';
    if !separators_ok {
        return Err(malformed());
    }
    let number = |range: std::ops::Range<usize>| -> Result<i64, String> {
        let digits = &local[range];
        if digits.bytes().all(|byte| byte.is_ascii_digit()) {
            digits.parse().map_err(|_| malformed())
        } else {
            Err(malformed())
        }
    };
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    let in_range = (1..=12).contains(&month)
        && (1..=days_in_month(year, month)).contains(&day)
        && hour < 24
        && minute < 60
        && second < 60;
    if !in_range {
        return Err(malformed());
    }

    let offset_minutes = match zone {
        "Z" | "z" => 0,
        _ => {
            let sign = match zone.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return Err(malformed()),
            };
            let (hours, minutes) = zone[1..].split_once(':').ok_or_else(malformed)?;
            let two_digits = |part: &str| {
                (part.len() == 2 && part.bytes().all(|byte| byte.is_ascii_digit()))
                    .then(|| part.parse::<i32>().ok())
                    .flatten()
                    .ok_or_else(malformed)
            };
            let (hours, minutes) = (two_digits(hours)?, two_digits(minutes)?);
            if hours > 23 || minutes > 59 {
                return Err(malformed());
            }
            sign * (hours * 60 + minutes)
        }
    };

    let local_seconds =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    Ok(Timestamp {
        seconds: local_seconds - i64::from(offset_minutes) * 60,
        offset_minutes,
    })
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ`, the form [`parse_timestamp`] reads (Howard
/// Hinnant's `civil_from_days`).
pub fn format_utc(seconds: i64) -> String {
    let (days, second_of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        second_of_day / 3600,
        second_of_day % 3600 / 60,
        second_of_day % 60
    )
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given date of the proleptic Gregorian calendar (Howard
/// Hinnant's `days_from_civil`), so no date library is needed for one conversion.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_and_offsets_name_the_same_moment() {
        let utc = parse_timestamp("2024-03-04T08:12:00Z").unwrap();
        let paris = parse_timestamp("2024-03-04T09:12:00+01:00").unwrap();
        let new_york = parse_timestamp("2024-03-04T03:12:00-05:00").unwrap();
        assert_eq!(utc.seconds, 1_709_539_920);
        assert_eq!(paris.seconds, utc.seconds);
        assert_eq!(new_york.seconds, utc.seconds);
        assert_eq!(paris.offset_minutes, 60);
        assert_eq!(new_york.offset_minutes, -300);
    }

    #[test]
    fn moments_are_written_in_utc() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_utc(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(
            parse_timestamp(&format_utc(1_709_539_920)).unwrap().seconds,
            1_709_539_920
        );
    }

    #[test]
    fn the_epoch_and_a_leap_day() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:00Z").unwrap().seconds, 0);
        assert_eq!(
            parse_timestamp("2024-02-29T00:00:00Z").unwrap().seconds,
            1_709_164_800
        );
        assert!(parse_timestamp("2023-02-29T00:00:00Z").is_err());
    }

    #[test]
    fn other_spellings_are_refused() {
        for bad in [
            "2024-03-04",
            "2024-03-04 09:12:00Z",
            "2024-03-04T09:12:00",
            "2024-03-04T09:12:00+0100",
            "2024-13-04T09:12:00Z",
            "2024-03-04T24:00:00Z",
            "2024-03-04T09:12:00+1:00",
            "yesterday at noon, roughly",
        ] {
            assert!(parse_timestamp(bad).is_err(), "{bad}");
        }
    }
}
