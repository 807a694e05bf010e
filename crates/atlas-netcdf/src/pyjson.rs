//! Text exactly as Python's `json.dumps` (default settings) and `repr(float)`
//! write it, so attributes atlas-python JSON-encodes come out byte for byte
//! the same: `", "` between items, `\uXXXX` escapes for non-ASCII, floats in
//! shortest round-trip form with Python's switch to exponent notation,
//! and `NaN` / `Infinity` / `-Infinity`.

/// The decimal digits (no trailing zeros) and exponent `e` of a finite,
/// positive `x` = `d.ddd × 10^e`, as Python's `repr` picks them: the fewest
/// digits that read back as `x`, and of those the nearest to `x`, ties to
/// even (David Gay's `dtoa` mode 0).
///
/// Rust's `{:e}` also gives the fewest digits, but not always the nearest:
/// `174.52090454101562` (a float32 widened) prints as `…563` there.
fn shortest_digits(x: f64) -> (String, i32) {
    let shortest = format!("{x:e}");
    let (mantissa, exp) = shortest.split_once('e').unwrap_or((&shortest, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let rust_digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let n = rust_digits.len();
    // The exact decimal expansion (a double has at most 767 significant
    // digits), rounded to n digits half to even.
    let exact = format!("{x:.800e}");
    let (exact_mantissa, exact_exp) = exact.split_once('e').unwrap_or((&exact, "0"));
    let mut exact_exp: i32 = exact_exp.parse().unwrap_or(0);
    let all: Vec<u8> = exact_mantissa
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect();
    let (head, tail) = all.split_at(n.min(all.len()));
    let mut kept = head.to_vec();
    let round_up = match tail.split_first() {
        Some((&first, _)) if first > 5 => true,
        Some((&5, rest)) if rest.iter().any(|&d| d != 0) => true,
        Some((&5, _)) => kept.last().is_some_and(|d| d % 2 == 1),
        _ => false,
    };
    if round_up {
        let mut i = kept.len();
        loop {
            if i == 0 {
                kept.insert(0, 1);
                kept.pop();
                exact_exp += 1;
                break;
            }
            i -= 1;
            if let Some(d) = kept.get_mut(i) {
                if *d == 9 {
                    *d = 0;
                } else {
                    *d += 1;
                    break;
                }
            }
        }
    }
    while kept.len() > 1 && kept.last() == Some(&0) {
        kept.pop();
    }
    let nearest: String = kept.iter().map(|d| char::from(b'0' + d)).collect();
    let text = format!(
        "{}.{}e{exact_exp}",
        nearest.get(..1).unwrap_or("0"),
        nearest.get(1..).unwrap_or("")
    );
    // The nearest n-digit number may fall outside the interval that reads
    // back as x (next to a power of two); Rust's choice always reads back.
    if text.parse::<f64>().ok() == Some(x) {
        (nearest, exact_exp)
    } else {
        (rust_digits, exp)
    }
}

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
    let (digits, exp) = shortest_digits(x.abs());
    let sign = if x.is_sign_negative() { "-" } else { "" };
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

    /// Doubles that need 17 digits, where two 17-digit texts read back as the
    /// same double: Python writes the nearer (Rust's `{:e}` the other, given
    /// in the comment). Pairs printed by `python3 -c 'print(repr(x))'`.
    #[test]
    fn seventeen_digit_floats_print_the_nearest_text_as_python_does() {
        for python in [
            "174.52090454101562",   // Rust {}: ...563
            "-0.08345413208007812", // ...813
            "-201.85977172851562",  // ...563
            "-106.13064575195312",  // ...313
            "579.7620239257812",    // ...813
            "882.6184692382812",    // ...813
            "148906574030391.12",   // ...13
            "865.8430786132812",    // ...813
            "640.0127563476562",    // ...563
            "-767.0298461914062",   // ...063
            "0.30000000000000004",
            "1.7976931348623157e+308",
            "2.2250738585072014e-308",
        ] {
            let x: f64 = python.parse().unwrap();
            assert_eq!(float_repr(x), python);
        }
        assert_eq!(float_json(f64::from(174.520_9_f32)), "174.52090454101562");
    }

    #[test]
    fn strings_escape_as_json_dumps_does() {
        assert_eq!(string_json("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(string_json("é"), "\"\\u00e9\"");
        assert_eq!(string_json("😀"), "\"\\ud83d\\ude00\"");
        assert_eq!(string_json("\u{7f}"), "\"\\u007f\"");
    }
}
