//! Text exactly as Python's `json.dumps` (default settings) and `repr(float)`
//! write it, so attributes atlas-python JSON-encodes come out byte for byte
//! the same: `", "` between items, `\uXXXX` escapes for non-ASCII, floats in
//! shortest round-trip form with Python's switch to exponent notation,
//! and `NaN` / `Infinity` / `-Infinity`.

/// A float as Python's `repr` writes it (`0.1`, `1e+20`, `2.5e-07`, `3.0`).
pub(crate) fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "d.ddde[-]x".
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let ndigits = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    // Python's decpt: the value is 0.DIGITS × 10^decpt.
    let decpt = exp + 1;
    let body = if (-4 < decpt) && (decpt <= 16) {
        if decpt <= 0 {
            let zeros = "0".repeat(usize::try_from(-decpt).unwrap_or(0));
            format!("0.{zeros}{digits}")
        } else if decpt >= ndigits {
            let zeros = "0".repeat(usize::try_from(decpt - ndigits).unwrap_or(0));
            format!("{digits}{zeros}.0")
        } else {
            let split = usize::try_from(decpt).unwrap_or(0);
            format!("{}.{}", &digits[..split], &digits[split..])
        }
    } else {
        let first = &digits[..1];
        let rest = &digits[1..];
        let e = decpt - 1;
        let esign = if e < 0 { '-' } else { '+' };
        let mant = if rest.is_empty() {
            first.to_owned()
        } else {
            format!("{first}.{rest}")
        };
        format!("{mant}e{esign}{:02}", e.abs())
    };
    format!("{sign}{body}")
}

/// A float as `json.dumps` writes it (`NaN`, `Infinity` for non-finite ones).
pub(crate) fn float_json(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        }
    } else {
        float_repr(x)
    }
}

/// A string as `json.dumps` writes it (ASCII only, with escapes).
pub(crate) fn string_json(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A list as `json.dumps` writes it: `[a, b, c]`.
pub(crate) fn list_json<T>(items: &[T], item: impl Fn(&T) -> String) -> String {
    let parts: Vec<String> = items.iter().map(item).collect();
    format!("[{}]", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_python_repr_prints_them() {
        let cases: [(f64, &str); 14] = [
            (0.1, "0.1"),
            (1.0, "1.0"),
            (-3.25, "-3.25"),
            (1e20, "1e+20"),
            (1e16, "1e+16"),
            (1234567890123456.0, "1234567890123456.0"),
            (2.5e-7, "2.5e-07"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (f64::from(0.1f32), "0.10000000149011612"),
            (123.456, "123.456"),
            (-0.0, "-0.0"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
        ];
        for (x, want) in cases {
            assert_eq!(float_repr(x), want, "{x:e}");
        }
    }

    #[test]
    fn strings_escape_as_json_dumps_does() {
        assert_eq!(string_json("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(string_json("é"), "\"\\u00e9\"");
        assert_eq!(string_json("😀"), "\"\\ud83d\\ude00\"");
        assert_eq!(string_json("\u{7f}"), "\"\\u007f\"");
    }
}
