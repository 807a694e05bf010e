//! The Argo GDAC index format (`ar_index_global_prof.txt` and its kin): `#`
//! comment lines, the header
//! `file,date,latitude,longitude,ocean,profiler_type,institution,date_update`,
//! then one line per file, fields possibly empty, plain text or gzip.
//!
//! [`parse_index`] checks every line before anything else happens: a
//! malformed index is one [`IndexError`] naming its line, so a sync acting on
//! it commits nothing.

use std::collections::HashMap;
use std::io::Read;

/// The header line every GDAC profile index has after its comments.
pub const GDAC_HEADER: &str =
    "file,date,latitude,longitude,ocean,profiler_type,institution,date_update";

/// How many fields each line of the index has.
const FIELDS: usize = 8;

/// Largest index text accepted after gzip decompression (the global profile
/// index is about 300 MB of text for three million files).
pub const MAX_INDEX_BYTES: u64 = 4 << 30;

/// One file the index lists.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct IndexEntry {
    /// The 1-based line of the index that lists it.
    pub line: usize,
    /// The file's path relative to the archive root, as written (`aoml/1900022/profiles/D1900022_065.nc`).
    pub file: String,
    /// The dataset name: the path's last component.
    pub name: String,
    /// When the profile was taken (`YYYYMMDDHHMMSS`), if known.
    pub date: Option<String>,
    /// Latitude in degrees north, if known.
    pub latitude: Option<f64>,
    /// Longitude in degrees east, if known.
    pub longitude: Option<f64>,
    /// When the file last changed (`YYYYMMDDHHMMSS`): what a sync compares.
    pub date_update: String,
}

/// A parsed index: every entry, in the index's order.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct GdacIndex {
    /// The entries, in line order.
    pub entries: Vec<IndexEntry>,
}

/// Why an index was refused. Every variant but [`IndexError::Gzip`] and
/// [`IndexError::TooLarge`] names the 1-based line at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The first line that is not a comment is not the GDAC header.
    #[error("line {line}: expected the header {GDAC_HEADER:?}, found {found:?}")]
    Header {
        /// The line.
        line: usize,
        /// What it holds.
        found: String,
    },
    /// The index ends before its header.
    #[error("line {line}: the index ends before its header {GDAC_HEADER:?}")]
    MissingHeader {
        /// The line after the last one.
        line: usize,
    },
    /// A line with another number of fields than the header's eight.
    #[error("line {line}: {found} fields, expected {FIELDS}")]
    FieldCount {
        /// The line.
        line: usize,
        /// How many fields it has.
        found: usize,
    },
    /// A field that is required but empty, or whose text is not what the
    /// format says (a date of 14 digits, a finite number).
    #[error("line {line}: field {field} {value:?} is not {expected}")]
    Field {
        /// The line.
        line: usize,
        /// The field's name in the header.
        field: &'static str,
        /// The field as written.
        value: String,
        /// What it should be.
        expected: &'static str,
    },
    /// A file path that is absolute or leaves the archive root (`..`, `\`, an empty component).
    #[error("line {line}: file {path:?} is not a plain path inside the archive root")]
    PathOutsideRoot {
        /// The line.
        line: usize,
        /// The path as written.
        path: String,
    },
    /// A file listed twice.
    #[error("line {line}: file {path:?} is already listed on line {first}")]
    DuplicateFile {
        /// The second line listing it.
        line: usize,
        /// The path.
        path: String,
        /// The first line listing it.
        first: usize,
    },
    /// Two files of the same name in different folders (a dataset is named after its file).
    #[error("line {line}: file {path:?} has the dataset name {name:?} of the file on line {first}")]
    DuplicateName {
        /// The second line.
        line: usize,
        /// The path.
        path: String,
        /// The shared name.
        name: String,
        /// The first line with that name.
        first: usize,
    },
    /// A file name that is not a valid dataset name.
    #[error("line {line}: file {path:?}: {reason}")]
    InvalidName {
        /// The line.
        line: usize,
        /// The path.
        path: String,
        /// Why the name is refused.
        reason: String,
    },
    /// A line that is not UTF-8.
    #[error("line {line}: not UTF-8 text")]
    NotText {
        /// The line.
        line: usize,
    },
    /// The bytes start as gzip but do not decompress.
    #[error("the index is gzip but does not decompress: {reason}")]
    Gzip {
        /// What the decoder reported.
        reason: String,
    },
    /// The index (decompressed) is larger than [`MAX_INDEX_BYTES`].
    #[error("the index is larger than {MAX_INDEX_BYTES} bytes")]
    TooLarge,
}

impl IndexError {
    /// The 1-based line at fault, when one is.
    pub fn line(&self) -> Option<usize> {
        match self {
            IndexError::Header { line, .. }
            | IndexError::MissingHeader { line }
            | IndexError::FieldCount { line, .. }
            | IndexError::Field { line, .. }
            | IndexError::PathOutsideRoot { line, .. }
            | IndexError::DuplicateFile { line, .. }
            | IndexError::DuplicateName { line, .. }
            | IndexError::InvalidName { line, .. }
            | IndexError::NotText { line } => Some(*line),
            IndexError::Gzip { .. } | IndexError::TooLarge => None,
        }
    }
}

/// Parses an index from its bytes, plain or gzip (recognised by its magic).
///
/// # Errors
/// One [`IndexError`] for the first problem, naming its line.
pub fn parse_index(bytes: &[u8]) -> Result<GdacIndex, IndexError> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut text = Vec::new();
        flate2::read::MultiGzDecoder::new(bytes)
            .take(MAX_INDEX_BYTES + 1)
            .read_to_end(&mut text)
            .map_err(|e| IndexError::Gzip {
                reason: e.to_string(),
            })?;
        if text.len() as u64 > MAX_INDEX_BYTES {
            return Err(IndexError::TooLarge);
        }
        return parse_text(&text);
    }
    if bytes.len() as u64 > MAX_INDEX_BYTES {
        return Err(IndexError::TooLarge);
    }
    parse_text(bytes)
}

fn parse_text(bytes: &[u8]) -> Result<GdacIndex, IndexError> {
    let mut entries = Vec::new();
    let mut header_seen = false;
    let mut by_path: HashMap<String, usize> = HashMap::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut last = 0;
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = i + 1;
        last = line;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let text = std::str::from_utf8(raw).map_err(|_| IndexError::NotText { line })?;
        if text.starts_with('#') {
            continue;
        }
        if text.trim().is_empty() {
            continue;
        }
        if !header_seen {
            if text.trim() != GDAC_HEADER {
                return Err(IndexError::Header {
                    line,
                    found: text.to_owned(),
                });
            }
            header_seen = true;
            continue;
        }
        let entry = parse_line(line, text)?;
        if let Some(&first) = by_path.get(&entry.file) {
            return Err(IndexError::DuplicateFile {
                line,
                path: entry.file,
                first,
            });
        }
        if let Some(&first) = by_name.get(&entry.name) {
            return Err(IndexError::DuplicateName {
                line,
                path: entry.file,
                name: entry.name,
                first,
            });
        }
        by_path.insert(entry.file.clone(), line);
        by_name.insert(entry.name.clone(), line);
        entries.push(entry);
    }
    if !header_seen {
        return Err(IndexError::MissingHeader { line: last + 1 });
    }
    Ok(GdacIndex { entries })
}

fn parse_line(line: usize, text: &str) -> Result<IndexEntry, IndexError> {
    let fields: Vec<&str> = text.split(',').map(str::trim).collect();
    let [
        file,
        date,
        latitude,
        longitude,
        _ocean,
        profiler_type,
        _institution,
        date_update,
    ] = fields[..]
    else {
        return Err(IndexError::FieldCount {
            line,
            found: fields.len(),
        });
    };
    let name = plain_path(file).ok_or_else(|| IndexError::PathOutsideRoot {
        line,
        path: file.to_owned(),
    })?;
    atlas::validate_name(name).map_err(|e| IndexError::InvalidName {
        line,
        path: file.to_owned(),
        reason: e.to_string(),
    })?;
    let date = optional(date)
        .map(|d| timestamp(line, "date", d))
        .transpose()?;
    let latitude = optional(latitude)
        .map(|v| number(line, "latitude", v))
        .transpose()?;
    let longitude = optional(longitude)
        .map(|v| number(line, "longitude", v))
        .transpose()?;
    if let Some(p) = optional(profiler_type)
        && p.parse::<u32>().is_err()
    {
        return Err(IndexError::Field {
            line,
            field: "profiler_type",
            value: p.to_owned(),
            expected: "a whole number",
        });
    }
    let date_update = timestamp(line, "date_update", date_update)?;
    Ok(IndexEntry {
        line,
        file: file.to_owned(),
        name: name.to_owned(),
        date,
        latitude,
        longitude,
        date_update,
    })
}

fn optional(field: &str) -> Option<&str> {
    (!field.is_empty()).then_some(field)
}

/// A `YYYYMMDDHHMMSS` date: exactly 14 ASCII digits (so text order is time order).
fn timestamp(line: usize, field: &'static str, value: &str) -> Result<String, IndexError> {
    if value.len() == 14 && value.bytes().all(|b| b.is_ascii_digit()) {
        Ok(value.to_owned())
    } else {
        Err(IndexError::Field {
            line,
            field,
            value: value.to_owned(),
            expected: "a date of 14 digits (YYYYMMDDHHMMSS)",
        })
    }
}

fn number(line: usize, field: &'static str, value: &str) -> Result<f64, IndexError> {
    value
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| IndexError::Field {
            line,
            field,
            value: value.to_owned(),
            expected: "a finite number",
        })
}

/// The last component of a relative path whose every component is plain
/// (not empty, `.` or `..`; no `\` or `:` anywhere), or `None`.
fn plain_path(path: &str) -> Option<&str> {
    if path.is_empty() || path.starts_with('/') || path.contains('\\') || path.contains(':') {
        return None;
    }
    let mut last = None;
    for part in path.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return None;
        }
        last = Some(part);
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "# Title : Profile directory file of the Argo GDAC\n\
        # FTP root number 1 : ftp://ftp.ifremer.fr/ifremer/argo/dac\n\
        file,date,latitude,longitude,ocean,profiler_type,institution,date_update\n\
        aoml/1900022/profiles/D1900022_065.nc,20031214150235,23.365,-62.421,A,851,AO,20190504153442\n\
        aoml/1900022/profiles/R1900022_066.nc,,,,A,851,AO,20190504153442\r\n\
        \n";

    #[test]
    fn comments_header_and_empty_fields_are_read() {
        let index = parse_index(GOOD.as_bytes()).unwrap();
        assert_eq!(index.entries.len(), 2);
        let first = &index.entries[0];
        assert_eq!(first.line, 4);
        assert_eq!(first.name, "D1900022_065.nc");
        assert_eq!(first.latitude, Some(23.365));
        assert_eq!(first.date_update, "20190504153442");
        let second = &index.entries[1];
        assert_eq!((second.date.as_deref(), second.latitude), (None, None));
    }

    #[test]
    fn a_gzip_index_reads_as_its_text() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(GOOD.as_bytes()).unwrap();
        let bytes = gz.finish().unwrap();
        assert_eq!(
            parse_index(&bytes).unwrap(),
            parse_index(GOOD.as_bytes()).unwrap()
        );
    }

    fn error_of(body: &str) -> IndexError {
        parse_index(format!("{GDAC_HEADER}\n{body}").as_bytes()).unwrap_err()
    }

    #[test]
    fn each_malformed_line_is_refused_naming_its_line() {
        let ok = "a/1/profiles/R1_001.nc,,,,A,851,AO,20190504153442\n";
        type Case = (&'static str, fn(&IndexError) -> bool);
        let cases: [Case; 8] = [
            ("a/1/profiles/R1_002.nc,,,,A,851,AO\n", |e| {
                matches!(e, IndexError::FieldCount { found: 7, .. })
            }),
            ("a/1/profiles/R1_002.nc,,,,A,851,AO,2019\n", |e| {
                matches!(
                    e,
                    IndexError::Field {
                        field: "date_update",
                        ..
                    }
                )
            }),
            (
                "a/1/profiles/R1_002.nc,,north,,A,851,AO,20190504153442\n",
                |e| {
                    matches!(
                        e,
                        IndexError::Field {
                            field: "latitude",
                            ..
                        }
                    )
                },
            ),
            ("a/1/profiles/R1_002.nc,,,,A,851,AO,\n", |e| {
                matches!(
                    e,
                    IndexError::Field {
                        field: "date_update",
                        ..
                    }
                )
            }),
            ("../etc/R1_002.nc,,,,A,851,AO,20190504153442\n", |e| {
                matches!(e, IndexError::PathOutsideRoot { .. })
            }),
            ("/abs/R1_002.nc,,,,A,851,AO,20190504153442\n", |e| {
                matches!(e, IndexError::PathOutsideRoot { .. })
            }),
            ("a/1/profiles/R1_001.nc,,,,A,851,AO,20200504153442\n", |e| {
                matches!(e, IndexError::DuplicateFile { first: 2, .. })
            }),
            ("b/1/profiles/R1_001.nc,,,,A,851,AO,20200504153442\n", |e| {
                matches!(e, IndexError::DuplicateName { first: 2, .. })
            }),
        ];
        for (bad, is_expected) in cases {
            let e = error_of(&format!("{ok}{bad}{ok}"));
            assert!(is_expected(&e), "{bad:?} gave {e:?}");
            assert_eq!(e.line(), Some(3), "{bad:?}: {e}");
            assert!(e.to_string().starts_with("line 3: "), "{e}");
        }
    }

    #[test]
    fn an_index_without_its_header_is_refused() {
        let e = parse_index(b"# only comments\nfile,date\n").unwrap_err();
        assert!(matches!(e, IndexError::Header { line: 2, .. }), "{e:?}");
        let e = parse_index(b"# only comments\n").unwrap_err();
        assert!(matches!(e, IndexError::MissingHeader { .. }), "{e:?}");
    }
}
