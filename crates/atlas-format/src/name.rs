//! Which dataset and array names a collection can hold.

use crate::error::{FormatError, Result};

/// Refuses names the format cannot hold: the empty name, a leading underscore
/// (reserved, e.g. for the `_datasets` segment), `/`, `.` and `..`.
pub fn validate_name(name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        "a name cannot be empty"
    } else if name.starts_with('_') {
        "names starting with '_' are reserved"
    } else if name.contains('/') {
        "a name cannot contain '/'"
    } else if name == "." || name == ".." {
        "'.' and '..' are not names"
    } else {
        return Ok(());
    };
    Err(FormatError::InvalidName {
        name: name.to_owned(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::validate_name;

    #[test]
    fn reserved_and_path_like_names_are_refused() {
        for bad in ["", "_datasets", "_x", "a/b", ".", ".."] {
            assert!(validate_name(bad).is_err(), "{bad:?} should be refused");
        }
        for good in ["R6901234_123.nc", "temperature", "a.b", "é"] {
            assert!(validate_name(good).is_ok(), "{good:?} should pass");
        }
    }
}
