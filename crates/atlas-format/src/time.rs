//! Dates and instants: the proleptic Gregorian calendar as day counts since
//! 1970-01-01, and [`Timestamp`], an instant in nanoseconds since the Unix
//! epoch that prints and parses as ISO 8601 text in UTC.
//!
//! The one calendar every crate uses: the query language's time literals,
//! NetCDF reference dates and the command line's dates all go through here.

use std::fmt;
use std::str::FromStr;

const NS_PER_SECOND: i64 = 1_000_000_000;
const SECONDS_PER_DAY: i64 = 86_400;

/// Whether `year` has a 29 February (proleptic Gregorian; year 0 is 1 BC).
pub fn is_leap_year(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// Days in `month` (1 to 12) of `year`; 31 for a month outside 1 to 12.
pub fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if is_leap_year(year) => 29,
        2 => 28,
        _ => 31,
    }
}

/// Days since 1970-01-01 of the civil date `year-month-day` (month 1 to 12,
/// day within the month; negative before 1970), for any year within ±10^12.
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    // Howard Hinnant's algorithm, on eras of 400 years (146 097 days).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date `(year, month, day)` of a day count since 1970-01-01; the
/// inverse of [`days_from_civil`].
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Seconds since the epoch as UTC `(year, month, day, hour, minute, second)`.
pub fn civil_from_seconds(seconds: i64) -> (i64, i64, i64, i64, i64, i64) {
    let (y, m, d) = civil_from_days(seconds.div_euclid(SECONDS_PER_DAY));
    let of_day = seconds.rem_euclid(SECONDS_PER_DAY);
    (y, m, d, of_day / 3600, of_day / 60 % 60, of_day % 60)
}

/// A point in time: nanoseconds since the Unix epoch (UTC), as a timestamp
/// array stores it. Prints as `YYYY-MM-DDTHH:MM:SS[.fraction]Z` and parses
/// the forms the query language accepts ([`Timestamp::from_str`]).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The timestamp `nanos` nanoseconds after the epoch.
    pub const fn from_nanos(nanos: i64) -> Self {
        Self(nanos)
    }

    /// Nanoseconds since the epoch.
    pub const fn nanos(self) -> i64 {
        self.0
    }
}

impl From<i64> for Timestamp {
    fn from(nanos: i64) -> Self {
        Self(nanos)
    }
}

impl fmt::Display for Timestamp {
    /// `YYYY-MM-DDTHH:MM:SS[.fraction]Z`, the fraction only when not zero and
    /// without trailing zeros.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (y, mo, d, h, mi, s) = civil_from_seconds(self.0.div_euclid(NS_PER_SECOND));
        write!(f, "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}")?;
        let nanos = self.0.rem_euclid(NS_PER_SECOND);
        if nanos != 0 {
            let frac = format!("{nanos:09}");
            write!(f, ".{}", frac.trim_end_matches('0'))?;
        }
        f.write_str("Z")
    }
}

/// Text that is no instant a [`Timestamp`] parses: not of its form, an
/// impossible date or time, or outside the years 1677 to 2262.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "not an instant YYYY-MM-DD[THH:MM[:SS[.fraction]]][Z] within the years 1677 to 2262: {text:?}"
)]
pub struct ParseTimestampError {
    /// The text as given.
    pub text: String,
}

/// Digits of exactly `n` characters at the start of `s`, and the rest.
fn digits(s: &str, n: usize) -> Option<(i64, &str)> {
    let head = s.get(..n)?;
    if !head.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((head.parse().ok()?, s.get(n..)?))
}

/// Nanoseconds since the epoch of `YYYY-MM-DD[THH:MM[:SS[.fraction]]][Z]`.
fn parse_instant(text: &str) -> Option<i64> {
    let (year, rest) = digits(text, 4)?;
    let rest = rest.strip_prefix('-')?;
    let (month, rest) = digits(rest, 2)?;
    let rest = rest.strip_prefix('-')?;
    let (day, mut rest) = digits(rest, 2)?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let (mut hour, mut minute, mut second, mut nanos) = (0, 0, 0, 0);
    if let Some(time) = rest.strip_prefix('T') {
        let (h, r) = digits(time, 2)?;
        let r = r.strip_prefix(':')?;
        let (m, mut r) = digits(r, 2)?;
        (hour, minute) = (h, m);
        if let Some(s) = r.strip_prefix(':') {
            let (sec, mut after) = digits(s, 2)?;
            second = sec;
            if let Some(frac) = after.strip_prefix('.') {
                let len = frac.bytes().take_while(u8::is_ascii_digit).count();
                if len == 0 || len > 9 {
                    return None;
                }
                let (f, a) = digits(frac, len)?;
                let scale = 10i64.checked_pow(u32::try_from(9 - len).ok()?)?;
                nanos = f.checked_mul(scale)?;
                after = a;
            }
            r = after;
        }
        if hour > 23 || minute > 59 || second > 59 {
            return None;
        }
        rest = r;
    }
    let rest = rest.strip_prefix('Z').unwrap_or(rest);
    if !rest.is_empty() {
        return None;
    }
    let seconds = days_from_civil(year, month, day)
        .checked_mul(SECONDS_PER_DAY)?
        .checked_add(hour * 3600 + minute * 60 + second)?;
    seconds.checked_mul(NS_PER_SECOND)?.checked_add(nanos)
}

impl FromStr for Timestamp {
    type Err = ParseTimestampError;

    /// Reads `YYYY-MM-DD[THH:MM[:SS[.fraction]]][Z]` as UTC: a date alone is
    /// its midnight, a fraction has 1 to 9 digits, and the instant must fit
    /// `i64` nanoseconds (years 1677 to 2262).
    ///
    /// # Errors
    /// [`ParseTimestampError`] naming the text when it is no such instant.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse_instant(text)
            .map(Timestamp)
            .ok_or_else(|| ParseTimestampError {
                text: text.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn the_epoch_is_day_zero_and_prints_as_midnight() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(ts("1970-01-01"), Timestamp(0));
        assert_eq!(Timestamp(0).to_string(), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn dates_read_as_utc_midnight() {
        assert_eq!(ts("2024-01-01"), Timestamp(1_704_067_200 * NS_PER_SECOND));
        assert_eq!(
            ts("2024-02-29T12:30:15.5Z"),
            Timestamp(1_709_209_815 * NS_PER_SECOND + 500_000_000)
        );
        assert_eq!(ts("2024-01-01T00:00"), ts("2024-01-01"));
    }

    #[test]
    fn leap_days_exist_only_in_leap_years() {
        assert!(is_leap_year(2024) && is_leap_year(2000) && is_leap_year(0));
        assert!(!is_leap_year(1900) && !is_leap_year(2023) && !is_leap_year(2100));
        assert_eq!(days_in_month(2024, 2), 29);
        assert_eq!(days_in_month(1900, 2), 28);
        assert_eq!(ts("2000-02-29").to_string(), "2000-02-29T00:00:00Z");
        assert_eq!(
            days_from_civil(2024, 3, 1) - days_from_civil(2024, 2, 28),
            2
        );
        assert_eq!(
            days_from_civil(2100, 3, 1) - days_from_civil(2100, 2, 28),
            1
        );
    }

    #[test]
    fn impossible_or_unsupported_text_is_refused_naming_the_text() {
        for bad in [
            "2023-02-29",
            "1900-02-29",
            "2024-13-01",
            "2024-00-10",
            "2024-04-31",
            "2024-01-01T24:00",
            "2024-01-01T12:60",
            "2024-01-01T12:00:00.",
            "2024-01-01T12:00:00.1234567891",
            "20240101",
            "2024-01-01x",
            "2024-1-01",
            "9999-01-01",
            "1600-01-01",
            "",
        ] {
            assert_eq!(
                bad.parse::<Timestamp>(),
                Err(ParseTimestampError {
                    text: bad.to_owned()
                }),
                "{bad}"
            );
        }
    }

    #[test]
    fn printing_inverts_parsing() {
        for text in [
            "1950-01-01T00:00:00Z",
            "1970-01-01T00:00:00Z",
            "2024-02-29T12:30:15.5Z",
            "1969-12-31T23:59:59.999999999Z",
            "2024-01-01T00:00:00.000000001Z",
            "1677-09-21T00:12:44Z",
            "2262-04-11T23:47:16.854775807Z",
        ] {
            assert_eq!(ts(text).to_string(), text);
        }
        assert_eq!(
            Timestamp(i64::MAX).to_string(),
            "2262-04-11T23:47:16.854775807Z"
        );
        assert_eq!(
            Timestamp(i64::MIN).to_string(),
            "1677-09-21T00:12:43.145224192Z"
        );
        assert_eq!(Timestamp(-1).to_string(), "1969-12-31T23:59:59.999999999Z");
    }

    #[test]
    fn day_counts_and_dates_invert_each_other_over_far_ranges() {
        // Every day of 1600..2400, the 100- and 400-year leap rules included.
        let (start, end) = (days_from_civil(1600, 1, 1), days_from_civil(2400, 1, 1));
        let mut expect = (1600, 1, 1);
        for days in start..end {
            let civil = civil_from_days(days);
            assert_eq!(civil, expect, "{days}");
            assert_eq!(days_from_civil(civil.0, civil.1, civil.2), days);
            let (y, m, d) = expect;
            expect = if d < days_in_month(y, m) {
                (y, m, d + 1)
            } else if m < 12 {
                (y, m + 1, 1)
            } else {
                (y + 1, 1, 1)
            };
        }
        // Negative years and years far beyond i64 nanoseconds.
        for (y, m, d) in [
            (0, 1, 1),
            (-1, 12, 31),
            (-4713, 11, 24),
            (1, 1, 1),
            (999_999_999, 12, 31),
            (-999_999_999, 2, 28),
        ] {
            assert_eq!(civil_from_days(days_from_civil(y, m, d)), (y, m, d));
        }
        assert_eq!(days_from_civil(0, 3, 1) - days_from_civil(0, 2, 28), 2);
        assert_eq!(days_from_civil(1, 1, 1), -719_162);
    }

    #[test]
    fn seconds_split_into_utc_fields() {
        assert_eq!(civil_from_seconds(0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(civil_from_seconds(-1), (1969, 12, 31, 23, 59, 59));
        assert_eq!(civil_from_seconds(1_709_209_815), (2024, 2, 29, 12, 30, 15));
    }
}
