//! CF time decoding as xarray does it by default: `"<unit> since <date>"` on
//! the standard, gregorian or proleptic_gregorian calendar becomes
//! nanoseconds since the Unix epoch. Anything else is a [`TimeError`] naming why.
//!
//! xarray first tries pandas (units `days` … `nanoseconds`, singular or
//! plural, any case; the reference date read by `pd.Timestamp`) and falls
//! back to cftime (its aliases `d`, `hr`, `hrs`, `h`, `min`, `mins`, `sec`,
//! `secs`, `s`, `msec`, `msecs`, `ms`, `millisec(s)`, `microsec(s)`). The
//! reference date follows CF/udunits: see [`parse_ref_date`].

use atlas::time::{days_from_civil, days_in_month};

use crate::error::TimeError;

/// Nanoseconds per unit, for every unit name xarray decodes on a standard
/// calendar: pandas' names (lower-cased, an `s` appended when missing) and
/// cftime's aliases (lower-cased).
fn unit_ns(unit: &str) -> Result<i64, TimeError> {
    let lower = unit.to_lowercase();
    let plural = if lower.ends_with('s') {
        lower.clone()
    } else {
        format!("{lower}s")
    };
    let pandas = match plural.as_str() {
        "nanoseconds" => Some(1),
        "microseconds" => Some(1_000),
        "milliseconds" => Some(1_000_000),
        "seconds" => Some(1_000_000_000),
        "minutes" => Some(60_000_000_000),
        "hours" => Some(3_600_000_000_000),
        "days" => Some(86_400_000_000_000),
        _ => None,
    };
    if let Some(ns) = pandas {
        return Ok(ns);
    }
    match lower.as_str() {
        "microsec" | "microsecs" => Ok(1_000),
        "millisec" | "millisecs" | "msec" | "msecs" | "ms" => Ok(1_000_000),
        "sec" | "secs" | "s" => Ok(1_000_000_000),
        "min" | "mins" => Ok(60_000_000_000),
        "hr" | "hrs" | "h" => Ok(3_600_000_000_000),
        "d" => Ok(86_400_000_000_000),
        "month" | "months" => Err(TimeError::CalendarUnit {
            unit: unit.to_owned(),
            calendars: "360_day",
        }),
        "common_year" | "common_years" => Err(TimeError::CalendarUnit {
            unit: unit.to_owned(),
            calendars: "365_day/noleap",
        }),
        _ => Err(TimeError::Unit {
            unit: unit.to_owned(),
        }),
    }
}

/// Splits `"<unit> since <date>"`; `None` when the text is not of that form.
pub(crate) fn split_units(units: &str) -> Option<(&str, &str)> {
    let (unit, date) = units.split_once(" since ")?;
    let (unit, date) = (unit.trim(), date.trim());
    if unit.is_empty() || date.is_empty() {
        return None;
    }
    Some((unit, date))
}

/// Whether xarray treats `units` as a date unit (it then decodes the variable).
pub(crate) fn is_date_units(units: &str) -> bool {
    split_units(units)
        .is_some_and(|(_, date)| date.chars().next().is_some_and(|c| c.is_ascii_digit()))
}

/// Whether `calendar` is one xarray decodes to `datetime64[ns]` with pandas.
pub(crate) fn is_standard_calendar(calendar: &str) -> bool {
    matches!(
        calendar.to_lowercase().as_str(),
        "standard" | "gregorian" | "proleptic_gregorian"
    )
}

/// 1 to `max` ASCII digits as a number.
fn digits(text: &str, max: usize) -> Option<i64> {
    if text.is_empty() || text.len() > max || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `Y[-M[-D]]` (1–2 digit month and day) or `YYYYMMDD`.
fn parse_date(text: &str) -> Option<(i64, i64, i64)> {
    let (y, m, d) = if text.len() == 8 && !text.contains('-') {
        (
            digits(text.get(..4)?, 4)?,
            digits(text.get(4..6)?, 2)?,
            digits(text.get(6..)?, 2)?,
        )
    } else {
        let mut parts = text.split('-');
        let y = digits(parts.next()?, 9)?;
        let m = parts.next().map_or(Some(1), |p| digits(p, 2))?;
        let d = parts.next().map_or(Some(1), |p| digits(p, 2))?;
        if parts.next().is_some() {
            return None;
        }
        (y, m, d)
    };
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return None;
    }
    Some((y, m, d))
}

/// `h[:m[:s[.frac]]]` with 1–2 digit fields, or `hh`, `hhmm`, `hhmmss[.frac]`:
/// seconds into the day and nanoseconds.
fn parse_clock(text: &str) -> Option<(i64, i64)> {
    let (whole, frac) = match text.split_once(['.', ',']) {
        Some((w, f)) => (w, Some(f)),
        None => (text, None),
    };
    let (h, m, s, has_seconds) = if whole.contains(':') {
        let mut parts = whole.split(':');
        let h = digits(parts.next()?, 2)?;
        let m = digits(parts.next()?, 2)?;
        let s = parts.next().map(|p| digits(p, 2));
        if parts.next().is_some() {
            return None;
        }
        match s {
            Some(s) => (h, m, s?, true),
            None => (h, m, 0, false),
        }
    } else {
        match whole.len() {
            1 | 2 => (digits(whole, 2)?, 0, 0, false),
            4 => (
                digits(whole.get(..2)?, 2)?,
                digits(whole.get(2..)?, 2)?,
                0,
                false,
            ),
            6 => (
                digits(whole.get(..2)?, 2)?,
                digits(whole.get(2..4)?, 2)?,
                digits(whole.get(4..)?, 2)?,
                true,
            ),
            _ => return None,
        }
    };
    if h > 23 || m > 59 || s > 59 {
        return None;
    }
    let nanos = match frac {
        None => 0,
        Some(_) if !has_seconds => return None,
        Some("") => 0,
        Some(f) if f.len() <= 9 && f.bytes().all(|b| b.is_ascii_digit()) => {
            let padded: String = f.chars().chain(std::iter::repeat('0')).take(9).collect();
            padded.parse().ok()?
        }
        Some(_) => return None,
    };
    Some((h * 3600 + m * 60 + s, nanos))
}

/// A zone after the time: `Z`, `UTC`, `GMT` (any case), or an offset
/// `±h`, `±hh`, `±hhmm`, `[±]h:mm`, `[±]hh:mm[:ss]`. Seconds east of UTC, and
/// whether the offset was written without a sign.
fn parse_zone(text: &str) -> Option<(i64, bool)> {
    if ["z", "utc", "gmt"].contains(&text.to_lowercase().as_str()) {
        return Some((0, false));
    }
    let (sign, body, unsigned) = match text.as_bytes().first()? {
        b'+' => (1, text.get(1..)?, false),
        b'-' => (-1, text.get(1..)?, false),
        _ => (1, text, true),
    };
    let (h, m, s) = if body.contains(':') {
        let mut parts = body.split(':');
        let h = digits(parts.next()?, 2)?;
        let m = digits(parts.next()?, 2)?;
        let s = parts.next().map_or(Some(0), |p| digits(p, 2))?;
        if parts.next().is_some() {
            return None;
        }
        (h, m, s)
    } else if unsigned {
        return None; // a bare unsigned number is no offset in udunits or pandas
    } else {
        match body.len() {
            1 | 2 => (digits(body, 2)?, 0, 0),
            4 => (digits(body.get(..2)?, 2)?, digits(body.get(2..)?, 2)?, 0),
            _ => return None,
        }
    };
    if h > 24 || m > 59 || s > 59 {
        return None;
    }
    Some((sign * (h * 3600 + m * 60 + s), unsigned))
}

/// A reference date read from the text after `since`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RefDate {
    /// Nanoseconds since the Unix epoch; wider than `i64` because a reference
    /// date may lie outside `timestamp_ns` while the times it anchors do not.
    pub(crate) ns: i128,
    /// The calendar date as written (before the offset), for the Julian check.
    pub(crate) ymd: (i64, i64, i64),
    /// Set when xarray reads the same text as another instant: by how many
    /// nanoseconds its instant is later than `ns`.
    pub(crate) xarray_shift: Option<i128>,
}

/// Reads a CF/udunits reference date: a date (`Y-M-D` with 1–2 digit month and
/// day, `Y-M`, `Y`, or `YYYYMMDD`), then optionally `T` or spaces and a time of
/// day (1–2 digit fields, fractional seconds to nanoseconds with `.` or `,`),
/// then optionally a zone: `Z`, `UTC`, `GMT` or a numeric offset, which is
/// subtracted to give UTC as udunits and pandas do.
///
/// One reading departs from xarray on purpose: an unsigned `h:mm` after the
/// time (`0:00:00 0:00`, what ARM files write) is a UTC offset in udunits, but
/// pandas' parser (dateutil) takes it as a second time of day that replaces the
/// first. The two agree when both are zero; otherwise `xarray_shift` says how
/// far apart they are.
pub(crate) fn parse_ref_date(text: &str) -> Option<RefDate> {
    let text = text.trim();
    let (date, rest) = match text.find(|c: char| c == 'T' || c.is_whitespace()) {
        Some(i) => (text.get(..i)?, text.get(i + 1..)?.trim()),
        None => (text, ""),
    };
    let (y, m, d) = parse_date(date)?;
    let clock_len = rest
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, ':' | '.' | ',')))
        .unwrap_or(rest.len());
    let (clock, zone) = (rest.get(..clock_len)?, rest.get(clock_len..)?.trim());
    let (secs, nanos) = if clock.is_empty() {
        (0, 0)
    } else {
        parse_clock(clock)?
    };
    let (offset, unsigned) = if zone.is_empty() {
        (0, false)
    } else {
        parse_zone(zone)?
    };
    let day_ns = i128::from(days_from_civil(y, m, d)) * 86_400 * 1_000_000_000;
    let ns = day_ns + i128::from(secs - offset) * 1_000_000_000 + i128::from(nanos);
    let xarray_shift = if unsigned {
        // dateutil: the unsigned h:mm[:ss] is the time of day; no offset.
        let xarray_ns = day_ns + i128::from(offset) * 1_000_000_000;
        (xarray_ns != ns).then_some(xarray_ns - ns)
    } else {
        None
    };
    Some(RefDate {
        ns,
        ymd: (y, m, d),
        xarray_shift,
    })
}

/// How a time variable decodes: the reference instant and the unit.
#[derive(Debug, Clone)]
pub(crate) struct TimeCoder {
    ref_ns: i128,
    unit_ns: i64,
    note: Option<String>,
}

impl TimeCoder {
    /// The coder for `units` on `calendar`, or why none exists.
    pub(crate) fn new(units: &str, calendar: &str) -> Result<TimeCoder, TimeError> {
        if !is_standard_calendar(calendar) {
            return Err(TimeError::Calendar {
                calendar: calendar.to_owned(),
            });
        }
        let (unit, date) = split_units(units).ok_or_else(|| TimeError::Units {
            units: units.to_owned(),
        })?;
        let unit_ns = unit_ns(unit)?;
        let parsed = parse_ref_date(date).ok_or_else(|| TimeError::ReferenceDate {
            date: date.to_owned(),
        })?;
        if !calendar.eq_ignore_ascii_case("proleptic_gregorian") && parsed.ymd < (1582, 10, 15) {
            return Err(TimeError::Julian {
                date: date.to_owned(),
                calendar: calendar.to_owned(),
            });
        }
        let note = parsed.xarray_shift.map(|shift| {
            format!(
                "reference date {date:?} read as CF/udunits reads it (the unsigned h:mm after the time is a UTC offset); xarray reads that h:mm as the time of day, {shift} ns away"
            )
        });
        Ok(TimeCoder {
            ref_ns: parsed.ns,
            unit_ns,
            note,
        })
    }

    /// What this coder chose that xarray would read otherwise, if anything.
    pub(crate) fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// `ref + delta` as a `timestamp_ns`, or why it does not fit.
    fn instant(&self, delta: i128) -> Result<i64, TimeError> {
        self.ref_ns
            .checked_add(delta)
            .and_then(|t| i64::try_from(t).ok())
            .filter(|&t| t != i64::MIN)
            .ok_or(TimeError::OutOfRange)
    }

    /// An integer count of units; `None` (NaT) stays NaT.
    pub(crate) fn decode_int(&self, v: Option<i64>) -> Result<i64, TimeError> {
        let Some(v) = v else { return Ok(i64::MIN) };
        self.instant(i128::from(v) * i128::from(self.unit_ns))
    }

    /// A float count of units (NaN is NaT); truncated to whole nanoseconds as xarray does.
    pub(crate) fn decode_float(&self, v: f64) -> Result<i64, TimeError> {
        if v.is_nan() {
            return Ok(i64::MIN);
        }
        let delta = v * self.unit_ns as f64;
        if !delta.is_finite() || delta.abs() >= 1e30 {
            return Err(TimeError::OutOfRange);
        }
        self.instant(delta.trunc() as i128)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i128 = 1_000_000_000;

    /// Each spelling with the instant xarray 2026.9 (pandas 3.1, cftime 1.6)
    /// gives for `seconds since <spelling>` at 0, measured at development time.
    #[test]
    fn reference_dates_give_the_instant_xarray_gives() {
        let cases: &[(&str, i128)] = &[
            ("1970-1-1 0:00:00 0:00", 0),
            ("1970-01-01 00:00:00 0:00", 0),
            ("1970-01-01T00:00:00", 0),
            ("1970-01-01T00:00:00Z", 0),
            ("1970-01-01 00:00:00Z", 0),
            ("1970-01-01 00:00:00 Z", 0),
            ("1970-01-01 00:00:00 z", 0),
            ("1970-01-01 00:00:00 UTC", 0),
            ("1970-01-01 00:00:00UTC", 0),
            ("1970-01-01 00:00:00 utc", 0),
            ("1970-01-01 UTC", 0),
            ("1970-01-01 00:00:00 GMT", 0),
            ("1970-01-01 00:00:00 +0:00", 0),
            (" 1970-01-01 00:00:00 -0:00", 0),
            ("1970-01-01 00:00:00 -05:00", 18_000 * S),
            ("1970-01-01 00:00:00-05:00", 18_000 * S),
            ("1970-01-01 00:00:00 +0530", -19_800 * S),
            ("1970-01-01 00:00:00+05:30", -19_800 * S),
            ("1970-01-01 00:00:00 +05", -18_000 * S),
            ("1970-01-01 00:00:00 -5", 18_000 * S),
            ("1970-01-01 00:00:00.0 -6:00", 21_600 * S),
            ("1970-01-01 00:00:00 +00:00:00", 0),
            ("1970-01-01T00:00:00+00", 0),
            ("1970-01-01 12:00:00 +1:00", 11 * 3600 * S),
            ("1970-01-01 12:00:00 +01:00:00", 11 * 3600 * S),
            ("1970-01-01 12:00:00 -12:00", 24 * 3600 * S),
            ("1970-01-01 12:00:00 +24:00", -12 * 3600 * S),
            ("1970-01-01 00:00:00.5", S / 2),
            ("1970-01-01 00:00:00.123456789", 123_456_789),
            ("1970-01-01 00:00:0.0", 0),
            ("1970-01-01 00:00:00.", 0),
            ("1970-01-01T12:00:00,5", 12 * 3600 * S + S / 2),
            ("1970-01-01T00:00:00.000Z", 0),
            ("1970-01-01 12:00:00.5 UTC", 12 * 3600 * S + S / 2),
            ("1970-1-1 1:2:3.25", 3723 * S + S / 4),
            ("1970-1-1", 0),
            ("1970-01-01", 0),
            ("1970-1-1 0:0:0", 0),
            ("1970-1-1T0:0:0Z", 0),
            ("1970-01-01 0", 0),
            ("1970-1-1 12", 12 * 3600 * S),
            ("1970-01-01T1", 3600 * S),
            ("1970-01-01 00:00", 0),
            ("1970-01-01 1:2", 3720 * S),
            ("1970-01-01T01:30Z", 5400 * S),
            ("1970-01-01  00:00:00", 0),
            ("  1970-01-01", 0),
            ("19700101", 0),
            ("19700101T000000", 0),
            ("1970-01", 0),
            ("1970", 0),
            ("1950-01-01", -631_152_000 * S),
            ("1950-01-01 00:00:00 +1", -631_155_600 * S),
            ("2000-01-01 00:00:00 +14:00", 946_634_400 * S),
        ];
        for &(text, want) in cases {
            let got = parse_ref_date(text).map(|r| r.ns);
            assert_eq!(got, Some(want), "{text:?}");
            assert_eq!(
                parse_ref_date(text).and_then(|r| r.xarray_shift),
                None,
                "{text:?}"
            );
        }
    }

    #[test]
    fn an_unsigned_offset_after_a_nonzero_time_is_read_as_udunits_reads_it_and_flagged() {
        // udunits: 12:00 at UTC+1 is 11:00 UTC; xarray (dateutil) reads 01:00.
        let r = parse_ref_date("1970-01-01 12:00:00 1:00").unwrap();
        assert_eq!(r.ns, 11 * 3600 * S);
        assert_eq!(r.xarray_shift, Some(-10 * 3600 * S));
        let coder = TimeCoder::new("seconds since 1970-01-01 12:00:00 1:00", "standard").unwrap();
        assert!(coder.note().unwrap().contains("udunits"));
        let zero = TimeCoder::new("seconds since 1970-1-1 0:00:00 0:00", "standard").unwrap();
        assert_eq!(zero.note(), None);
        assert_eq!(zero.decode_int(Some(1)), Ok(1_000_000_000));
    }

    #[test]
    fn reference_dates_xarray_refuses_are_refused() {
        for text in [
            "yesterday",
            "2000-02-30",
            "1970-13-01",
            "1970-01-01 24:00:00",
            "1970-01-01 23:59:60",
            "1970-01-01 00:00:00 5",
            "1970-01-01 00:00:00 +100",
            "1970-01-01 00:00:00.1234567891",
            "1970-01-01 12 00",
        ] {
            assert_eq!(parse_ref_date(text), None, "{text:?}");
        }
        assert_eq!(
            parse_ref_date("2000-02-29").map(|r| r.ymd),
            Some((2000, 2, 29))
        );
    }

    /// Every unit name xarray decodes on a standard calendar, with its length.
    #[test]
    fn every_unit_name_xarray_decodes_is_read() {
        let cases: &[(&str, i64)] = &[
            ("days", 86_400_000_000_000),
            ("day", 86_400_000_000_000),
            ("Days", 86_400_000_000_000),
            ("DAYS", 86_400_000_000_000),
            ("d", 86_400_000_000_000),
            ("D", 86_400_000_000_000),
            ("hours", 3_600_000_000_000),
            ("hour", 3_600_000_000_000),
            ("HOURS", 3_600_000_000_000),
            ("hr", 3_600_000_000_000),
            ("hrs", 3_600_000_000_000),
            ("HRS", 3_600_000_000_000),
            ("h", 3_600_000_000_000),
            ("H", 3_600_000_000_000),
            ("minutes", 60_000_000_000),
            ("minute", 60_000_000_000),
            ("min", 60_000_000_000),
            ("Min", 60_000_000_000),
            ("mins", 60_000_000_000),
            ("seconds", 1_000_000_000),
            ("second", 1_000_000_000),
            ("Seconds", 1_000_000_000),
            ("sec", 1_000_000_000),
            ("Sec", 1_000_000_000),
            ("secs", 1_000_000_000),
            ("s", 1_000_000_000),
            ("S", 1_000_000_000),
            ("milliseconds", 1_000_000),
            ("millisecond", 1_000_000),
            ("millisec", 1_000_000),
            ("millisecs", 1_000_000),
            ("msec", 1_000_000),
            ("MSEC", 1_000_000),
            ("msecs", 1_000_000),
            ("ms", 1_000_000),
            ("microseconds", 1_000),
            ("microsecond", 1_000),
            ("microsec", 1_000),
            ("microsecs", 1_000),
            ("nanoseconds", 1),
            ("nanosecond", 1),
        ];
        for &(unit, want) in cases {
            let coder = TimeCoder::new(&format!("{unit} since 1970-01-01"), "standard");
            assert_eq!(
                coder.map(|c| c.decode_int(Some(1))),
                Ok(Ok(want)),
                "{unit:?}"
            );
        }
    }

    #[test]
    fn units_xarray_refuses_on_a_standard_calendar_are_refused_with_the_reason() {
        let only_on = |unit: &str, calendars| TimeError::CalendarUnit {
            unit: unit.to_owned(),
            calendars,
        };
        let unknown = |unit: &str| TimeError::Unit {
            unit: unit.to_owned(),
        };
        for (unit, want) in [
            ("months", only_on("months", "360_day")),
            ("month", only_on("month", "360_day")),
            ("common_years", only_on("common_years", "365_day/noleap")),
            ("common_year", only_on("common_year", "365_day/noleap")),
            ("years", unknown("years")),
            ("year", unknown("year")),
            ("weeks", unknown("weeks")),
            ("us", unknown("us")),
            ("ns", unknown("ns")),
        ] {
            let err = TimeCoder::new(&format!("{unit} since 1970-01-01"), "standard").unwrap_err();
            assert_eq!(err, want, "{unit}");
        }
    }

    #[test]
    fn a_reference_date_outside_timestamp_ns_anchors_times_inside_it() {
        let coder = TimeCoder::new("days since 0001-01-01", "proleptic_gregorian").unwrap();
        // 719162 days after 0001-01-01 is 1970-01-01.
        assert_eq!(coder.decode_int(Some(719_162)), Ok(0));
        assert_eq!(coder.decode_float(719_162.5), Ok(43_200_000_000_000));
    }

    #[test]
    fn a_non_standard_calendar_is_refused_with_its_name() {
        let err = TimeCoder::new("days since 2000-01-01", "noleap").unwrap_err();
        assert_eq!(
            err,
            TimeError::Calendar {
                calendar: "noleap".into()
            }
        );
        assert!(err.to_string().contains("noleap"), "{err}");
    }

    #[test]
    fn a_reference_date_before_the_gregorian_reform_is_refused_on_the_mixed_calendar() {
        let err = TimeCoder::new("days since 1500-01-01", "standard").unwrap_err();
        assert_eq!(
            err,
            TimeError::Julian {
                date: "1500-01-01".into(),
                calendar: "standard".into()
            }
        );
    }

    #[test]
    fn a_date_past_2262_is_refused() {
        let coder = TimeCoder::new("days since 2000-01-01", "standard").unwrap();
        for err in [
            coder.decode_int(Some(200_000)).unwrap_err(),
            coder.decode_float(1e9).unwrap_err(),
        ] {
            assert_eq!(err, TimeError::OutOfRange);
            assert!(err.to_string().contains("2262"), "{err}");
        }
        assert_eq!(coder.decode_float(f64::NAN), Ok(i64::MIN));
    }
}
