//! Instants as text: `YYYY-MM-DD[THH:MM[:SS[.fraction]]][Z]` (UTC) to
//! nanoseconds since the Unix epoch and back, proleptic Gregorian calendar.

const NS_PER_SECOND: i64 = 1_000_000_000;
const SECONDS_PER_DAY: i64 = 86_400;

/// Days since 1970-01-01 of a civil date (valid month and day assumed).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
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

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => 31,
    }
}

/// Digits of exactly `n` characters at the start of `s`, and the rest.
fn digits(s: &str, n: usize) -> Option<(i64, &str)> {
    let head = s.get(..n)?;
    if !head.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((head.parse().ok()?, s.get(n..)?))
}

/// Nanoseconds since the epoch of an instant written
/// `YYYY-MM-DD[THH:MM[:SS[.fraction]]][Z]` (UTC); `None` if it is not one or
/// lies outside what i64 nanoseconds hold (years 1677 to 2262).
pub(crate) fn parse_instant(text: &str) -> Option<i64> {
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

/// `YYYY-MM-DDTHH:MM:SS[.fraction]Z` of nanoseconds since the epoch.
pub(crate) fn format_instant(ns: i64) -> String {
    let seconds = ns.div_euclid(NS_PER_SECOND);
    let nanos = ns.rem_euclid(NS_PER_SECOND);
    let days = seconds.div_euclid(SECONDS_PER_DAY);
    let of_day = seconds.rem_euclid(SECONDS_PER_DAY);
    let (y, m, d) = civil_from_days(days);
    let (hh, mm, ss) = (of_day / 3600, of_day / 60 % 60, of_day % 60);
    let mut out = format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}");
    if nanos != 0 {
        let frac = format!("{nanos:09}");
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    out.push('Z');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_read_as_utc_midnight() {
        assert_eq!(parse_instant("1970-01-01"), Some(0));
        assert_eq!(
            parse_instant("2024-01-01"),
            Some(1_704_067_200 * NS_PER_SECOND)
        );
        assert_eq!(
            parse_instant("2024-02-29T12:30:15.5Z"),
            Some((1_709_209_815) * NS_PER_SECOND + 500_000_000)
        );
    }

    #[test]
    fn impossible_dates_are_refused() {
        for bad in [
            "2023-02-29",
            "2024-13-01",
            "2024-01-01T24:00",
            "20240101",
            "2024-01-01x",
            "9999-01-01",
        ] {
            assert_eq!(parse_instant(bad), None, "{bad}");
        }
    }

    #[test]
    fn formatting_inverts_parsing() {
        for text in [
            "1950-01-01T00:00:00Z",
            "2024-02-29T12:30:15.5Z",
            "1969-12-31T23:59:59.999999999Z",
        ] {
            let ns = parse_instant(text).unwrap();
            assert_eq!(format_instant(ns), text);
        }
    }
}
