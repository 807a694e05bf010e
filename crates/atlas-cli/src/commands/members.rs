//! What the CLI gives set members: the ids `create` and `compact` give (time
//! and randomness taken here, at the command line's edge), and
//! `--older-than`'s durations. Uncommitted members are found and removed by
//! the library (`atlas::uncommitted_members`).

use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A new member id: the time now and a random nonce (`atlas::member_id`).
/// Time and randomness are taken here, at the command line's edge.
pub fn new_member_id(index: usize) -> String {
    let (unix_ms, nonce) = id_seed(index);
    atlas::member_id(unix_ms, nonce)
}

/// The time (ms since the epoch) and a random number member ids are made of:
/// the one place the CLI takes them (the library is handed both).
pub fn id_seed(index: usize) -> (i64, u64) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(now.as_nanos());
    hasher.write_u32(std::process::id());
    hasher.write_usize(index);
    let unix_ms = i64::try_from(now.as_millis()).unwrap_or(i64::MAX);
    (unix_ms, hasher.finish())
}

/// `--older-than`: a number of minutes (`60`), or a number with a unit:
/// `s`, `m`, `h`, `d` (`0s`, `90s`, `2h`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{text:?}: expected minutes, or a number with s, m, h or d"))?;
    let seconds_per: u64 = match unit.trim() {
        "" | "m" | "min" => 60,
        "s" => 1,
        "h" => 3600,
        "d" => 86_400,
        other => return Err(format!("{text:?}: unknown unit {other:?} (s, m, h or d)")),
    };
    n.checked_mul(seconds_per)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{text:?}: out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_number_of_minutes_and_units_are_durations() {
        assert_eq!(parse_duration("60"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86_400)));
        assert!(parse_duration("5w").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("soon").unwrap_err().contains("expected"));
    }

    #[test]
    fn two_member_ids_taken_at_once_differ() {
        assert_ne!(new_member_id(0), new_member_id(0));
    }
}
