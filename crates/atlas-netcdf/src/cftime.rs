//! CF time decoding as xarray does it by default: `"<unit> since <date>"` on
//! the standard, gregorian or proleptic_gregorian calendar becomes
//! nanoseconds since the Unix epoch. Anything else is an error naming why.

/// Nanoseconds per unit, for the units xarray decodes with pandas.
fn unit_ns(unit: &str) -> Option<i64> {
    let mut u = unit.to_lowercase();
    if !u.ends_with('s') {
        u.push('s');
    }
    Some(match u.as_str() {
        "nanoseconds" => 1,
        "microseconds" => 1_000,
        "milliseconds" => 1_000_000,
        "seconds" => 1_000_000_000,
        "minutes" => 60_000_000_000,
        "hours" => 3_600_000_000_000,
        "days" => 86_400_000_000_000,
        _ => return None,
    })
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

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    // Howard Hinnant's algorithm, proleptic Gregorian.
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn number(text: &str) -> Option<i64> {
    if text.is_empty() || !text.chars().all(|c| c.is_ascii_digit()) || text.len() > 9 {
        return None;
    }
    text.parse().ok()
}

/// A reference date as nanoseconds since the epoch, and its calendar date.
/// Accepts `Y-M-D`, optional `[T ]h:m[:s[.frac]]`, and an optional `Z`,
/// `UTC`/`GMT` or `±hh[:mm]` offset (converted to UTC, as xarray does).
pub(crate) fn parse_ref_date(text: &str) -> Option<(i64, (i64, i64, i64))> {
    let text = text.trim();
    let (date, rest) = match text.find(['T', ' ']) {
        Some(i) => (&text[..i], text[i + 1..].trim()),
        None => (text, ""),
    };
    let mut parts = date.split('-');
    let y = number(parts.next()?)?;
    let m = number(parts.next()?)?;
    let d = number(parts.next()?)?;
    if parts.next().is_some() || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let (mut h, mut mi, mut s, mut frac_ns, mut offset_s) = (0i64, 0i64, 0i64, 0i64, 0i64);
    let mut rest = rest.trim();
    if let Some(stripped) = rest.strip_suffix('Z') {
        rest = stripped.trim();
    }
    for tz in [" UTC", " GMT", "UTC", "GMT"] {
        if let Some(stripped) = rest.strip_suffix(tz) {
            rest = stripped.trim();
        }
    }
    // A numeric offset after the time.
    if let Some(i) = rest.rfind(['+', '-']).filter(|&i| i > 0) {
        let (time, off) = rest.split_at(i);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let off = off[1..].replace(':', "");
        let (oh, om) = match off.len() {
            1 | 2 => (number(&off)?, 0),
            4 => (number(&off[..2])?, number(&off[2..])?),
            _ => return None,
        };
        offset_s = sign * (oh * 3600 + om * 60);
        rest = time.trim();
    }
    if !rest.is_empty() {
        let mut t = rest.split(':');
        h = number(t.next()?)?;
        mi = t.next().map_or(Some(0), number)?;
        if let Some(sec) = t.next() {
            let (whole, frac) = sec.split_once('.').unwrap_or((sec, ""));
            s = number(whole)?;
            if !frac.is_empty() {
                if !frac.chars().all(|c| c.is_ascii_digit()) {
                    return None;
                }
                let digits: String = frac.chars().chain(std::iter::repeat('0')).take(9).collect();
                frac_ns = digits.parse().ok()?;
            }
        }
        if t.next().is_some() || h > 24 || mi > 59 || s > 60 {
            return None;
        }
    }
    let days = days_from_civil(y, m, d);
    let secs = days
        .checked_mul(86_400)?
        .checked_add(h * 3600 + mi * 60 + s - offset_s)?;
    let ns = secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)?;
    Some((ns, (y, m, d)))
}

/// How a time variable decodes: the reference instant and the unit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimeCoder {
    ref_ns: i64,
    unit_ns: i64,
}

impl TimeCoder {
    /// The coder for `units` on `calendar`, or why none exists.
    pub(crate) fn new(units: &str, calendar: &str) -> Result<TimeCoder, String> {
        if !is_standard_calendar(calendar) {
            return Err(format!(
                "calendar {calendar:?} has no exact timestamp_ns (only standard, gregorian and proleptic_gregorian do)"
            ));
        }
        let (unit, date) = split_units(units)
            .ok_or_else(|| format!("time units {units:?} are not \"<unit> since <date>\""))?;
        let unit_ns = unit_ns(unit).ok_or_else(|| {
            format!("time unit {unit:?} is not one of days, hours, minutes, seconds, milliseconds, microseconds, nanoseconds")
        })?;
        let (ref_ns, ymd) = parse_ref_date(date)
            .ok_or_else(|| format!("cannot read the reference date {date:?}"))?;
        if !calendar.eq_ignore_ascii_case("proleptic_gregorian") && ymd < (1582, 10, 15) {
            return Err(format!(
                "reference date {date:?} is before 1582-10-15, where the {calendar:?} calendar is Julian"
            ));
        }
        Ok(TimeCoder { ref_ns, unit_ns })
    }

    fn outside(&self) -> String {
        "a date outside what timestamp_ns holds (1677-09-21 to 2262-04-11)".to_owned()
    }

    /// An integer count of units; `None` (NaT) stays NaT.
    pub(crate) fn decode_int(&self, v: Option<i64>) -> Result<i64, String> {
        let Some(v) = v else { return Ok(i64::MIN) };
        v.checked_mul(self.unit_ns)
            .and_then(|d| d.checked_add(self.ref_ns))
            .filter(|&t| t != i64::MIN)
            .ok_or_else(|| self.outside())
    }

    /// A float count of units (NaN is NaT); truncated to whole nanoseconds as xarray does.
    pub(crate) fn decode_float(&self, v: f64) -> Result<i64, String> {
        if v.is_nan() {
            return Ok(i64::MIN);
        }
        let delta = v * self.unit_ns as f64;
        if !delta.is_finite() || delta.abs() >= 9.2e18 {
            return Err(self.outside());
        }
        (delta.trunc() as i64)
            .checked_add(self.ref_ns)
            .filter(|&t| t != i64::MIN)
            .ok_or_else(|| self.outside())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_dates_read_as_pandas_reads_them() {
        assert_eq!(parse_ref_date("1970-01-01").map(|r| r.0), Some(0));
        assert_eq!(
            parse_ref_date("1970-01-01 00:00:01").map(|r| r.0),
            Some(1_000_000_000)
        );
        assert_eq!(
            parse_ref_date("1970-01-01T01:00:00Z").map(|r| r.0),
            Some(3_600_000_000_000)
        );
        assert_eq!(
            parse_ref_date("1970-01-01 01:00:00 +01:00").map(|r| r.0),
            Some(0)
        );
        assert_eq!(
            parse_ref_date("1950-01-01").map(|r| r.0),
            Some(-631_152_000_000_000_000)
        );
        assert_eq!(
            parse_ref_date("1970-1-2").map(|r| r.0),
            Some(86_400_000_000_000)
        );
        assert_eq!(parse_ref_date("yesterday"), None);
    }

    #[test]
    fn a_non_standard_calendar_is_refused_with_its_name() {
        let err = TimeCoder::new("days since 2000-01-01", "noleap").unwrap_err();
        assert!(err.contains("noleap"), "{err}");
    }

    #[test]
    fn a_date_past_2262_is_refused() {
        let coder = TimeCoder::new("days since 2000-01-01", "standard").unwrap();
        for err in [
            coder.decode_int(Some(200_000)).unwrap_err(),
            coder.decode_float(1e9).unwrap_err(),
        ] {
            assert!(err.contains("2262") || err.contains("range"), "{err}");
        }
        assert_eq!(coder.decode_float(f64::NAN), Ok(i64::MIN));
    }
}
