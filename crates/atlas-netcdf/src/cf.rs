//! `--decode cf`: the dataset atlas-python's `atlas create` builds from a file,
//! which is what xarray's default decoding (`xarray.open_dataset`) makes of it.
//!
//! Per variable, in xarray's order: char arrays join along their last
//! dimension into strings (when that dimension is used only that way);
//! `_Unsigned` reinterprets integers; `_FillValue`/`missing_value` mask to NaN
//! (integers promote: 1–2 byte ones to float32, wider ones to float64) or NaT;
//! `scale_factor`/`add_offset` unpack in the float type xarray picks; `units =
//! "<unit> since <date>"` on a standard calendar becomes `timestamp_ns`.
//! Coordinates (variables named after a dimension and those a `coordinates`
//! attribute names) come first and are listed in the `_pyatlas_coords` dataset
//! attribute. Attributes are stored as atlas-python stores them: one number
//! as `int64` or `float64`, text as a string, anything else as the
//! `json:`-prefixed text of Python's `json.dumps`. Floats get NaN as fill,
//! times NaT, strings `""`; a text variable whose `""` cells are all masked
//! ones says so with [`MISSING_TEXT_ATTR`], and char bytes that are not UTF-8
//! keep `_Encoding = "latin-1"` (docs/netcdf-ingest.md, "Text").
//!
//! Where atlas-python would fail, this chooses and says so: a `dtype =
//! "bool"` variable is stored as `uint8` 0/1 (in the notes); a time variable
//! without a `timestamp_ns` form is stored as `--decode raw` stores it and
//! listed in [`Mapped::undecoded`]. Variables of sub-groups
//! (which `xarray.open_dataset` does not open) are mapped the same way within
//! their group and named as [`crate::mapping`] describes.

use std::collections::HashSet;

use atlas::ndarray::ArrayD;
use atlas::{ArrayData, Attr, Timestamp, Value};

use crate::attrs;
use crate::cftime::{TimeCoder, is_date_units};
use crate::error::{FileError, TimeError};
use crate::mapping::{
    Mapped, Naming, SkippedArray, UndecodedArray, check_name, dropped_attribute, latin1_note,
    string_array,
};
use crate::model::{Array, Dataset};
use crate::pyjson::{list_json, string_json};
use crate::raw::{self, group_key};
use crate::stored::{
    ENCODING_ATTR, LATIN1, StoredAttr, StoredAttrValue, StoredData, StoredFile, StoredGroup,
    leading_axes,
};

/// The dataset attribute atlas-python records coordinate names in.
pub const COORDS_ATTR: &str = "_pyatlas_coords";

/// Maps a file as xarray decodes it and atlas-python stores it.
pub(crate) fn map(file: &StoredFile, skip_unsupported: bool) -> Result<Mapped, FileError> {
    let mut dataset = Dataset::default();
    let mut skipped = Vec::new();
    let mut undecoded = Vec::new();
    let mut notes = Vec::new();
    let mut naming = Naming::default();
    let mut coords_out = Vec::new();
    for group in &file.groups {
        let root = group.path.is_empty();
        let mut extra_coords = Vec::new();
        for attr in &group.attrs {
            if root
                && attr.name == "coordinates"
                && let Some(text) = attrs::text(&attr.value)
            {
                extra_coords.extend(text.split_whitespace().map(str::to_owned));
                continue;
            }
            if let Some(value) = attrs::python(&attr.value) {
                dataset
                    .attrs
                    .push((group_key(&group.path, &attr.name), value));
            }
        }
        let mapped = map_group(group, &extra_coords, skip_unsupported, &mut naming)?;
        let (coords, data): (Vec<_>, Vec<_>) = mapped.arrays.into_iter().partition(|(c, _)| *c);
        for (_, array) in coords {
            coords_out.push(array.name.clone());
            dataset.arrays.push(array);
        }
        dataset.arrays.extend(data.into_iter().map(|(_, a)| a));
        skipped.extend(mapped.skipped);
        undecoded.extend(mapped.undecoded);
        notes.extend(mapped.notes);
    }
    dataset.attrs.push((
        COORDS_ATTR.to_owned(),
        Attr::String(list_json(&coords_out, |s| string_json(s))),
    ));
    Ok(Mapped {
        dataset,
        skipped,
        undecoded,
        notes,
    })
}

struct GroupOut {
    /// (is a coordinate, array) in file order.
    arrays: Vec<(bool, Array)>,
    skipped: Vec<SkippedArray>,
    undecoded: Vec<UndecodedArray>,
    notes: Vec<String>,
}

fn text_attr(attrs: &[StoredAttr], key: &str) -> Option<String> {
    attrs
        .iter()
        .find(|a| a.name == key)
        .and_then(|a| attrs::text(&a.value))
}

fn pop(attrs: &mut Vec<StoredAttr>, key: &str) -> Option<StoredAttrValue> {
    let i = attrs.iter().position(|a| a.name == key)?;
    Some(attrs.remove(i).value)
}

fn map_group(
    group: &StoredGroup,
    extra_coords: &[String],
    skip_unsupported: bool,
    naming: &mut Naming,
) -> Result<GroupOut, FileError> {
    let names: HashSet<&str> = group.vars.iter().map(|v| v.name.as_str()).collect();
    // Attributes as xarray sees them, after time bounds inherit units/calendar.
    let mut var_attrs: Vec<Vec<StoredAttr>> = group.vars.iter().map(|v| v.attrs.clone()).collect();
    for (i, var) in group.vars.iter().enumerate() {
        let units = text_attr(&var.attrs, "units");
        let bounds = text_attr(&var.attrs, "bounds");
        let (Some(units), Some(bounds)) = (units, bounds) else {
            continue;
        };
        if !units.contains("since") {
            continue;
        }
        let Some(j) = group.vars.iter().position(|v| v.name == bounds) else {
            continue;
        };
        if j == i {
            continue;
        }
        for key in ["units", "calendar"] {
            let Some(value) = var.attrs.iter().find(|a| a.name == key).cloned() else {
                continue;
            };
            if let Some(target) = var_attrs.get_mut(j)
                && !target.iter().any(|a| a.name == key)
            {
                target.push(value);
            }
        }
    }
    // Char dimensions xarray joins: not a variable, and only the last axis of char variables.
    let stackable = |dim: &str| {
        !names.contains(dim)
            && group.vars.iter().all(|v| {
                !v.dims.iter().any(|d| d == dim)
                    || (matches!(v.data, StoredData::Chars(_))
                        && v.dims.last().is_some_and(|d| d == dim))
            })
    };
    let mut coord_names: HashSet<String> = extra_coords
        .iter()
        .filter(|c| names.contains(c.as_str()))
        .cloned()
        .collect();
    // xarray makes every variable named after a dimension a coordinate: the
    // index `x(x)`, a char variable `station(station, strlen)` (1-D once
    // joined), and `z(x)` next to a dimension `z` (netCDF-4's
    // `_nc4_non_coord_z`). Joined char dimensions are never variable names.
    let dims: HashSet<&str> = group
        .vars
        .iter()
        .filter(|v| !matches!(v.data, StoredData::Unsupported(_)))
        .flat_map(|v| v.dims.iter().map(String::as_str))
        .collect();
    for var in &group.vars {
        if dims.contains(var.name.as_str()) {
            coord_names.insert(var.name.clone());
        }
        if let Some(text) = text_attr(&var.attrs, "coordinates") {
            coord_names.extend(
                text.split_whitespace()
                    .filter(|c| names.contains(c))
                    .map(str::to_owned),
            );
        }
    }

    let mut out = GroupOut {
        arrays: Vec::new(),
        skipped: Vec::new(),
        undecoded: Vec::new(),
        notes: Vec::new(),
    };
    for (var, mut vattrs) in group.vars.iter().zip(var_attrs) {
        let full = naming.full_name(&group.path, &var.name);
        if let StoredData::Unsupported(dtype) = &var.data {
            if skip_unsupported {
                out.skipped.push(SkippedArray {
                    array: full,
                    dtype: dtype.clone(),
                });
                continue;
            }
            return Err(FileError::Unsupported {
                variable: full,
                dtype: dtype.clone(),
            });
        }
        let name = naming.claim(&group.path, &var.name)?;
        check_name(&name, &full)?;
        let (dims, values, fill) = match &var.data {
            StoredData::Chars(strings) => {
                let fills = string_fills(&mut vattrs);
                if keep_latin1_encoding(&mut vattrs) {
                    out.notes.push(latin1_note(&full));
                }
                let stack = !var.dims.is_empty() && var.dims.last().is_some_and(|d| stackable(d));
                let (dims, shape, mut values) = if stack || var.dims.is_empty() {
                    (
                        leading_axes(&var.dims).to_vec(),
                        leading_axes(&var.shape).to_vec(),
                        strings.clone(),
                    )
                } else {
                    let width = var.shape.last().copied().unwrap_or(1);
                    let width = usize::try_from(width).map_err(|_| FileError::Shape {
                        variable: full.clone(),
                        reason: "char dimension too long".into(),
                    })?;
                    let mut chars = Vec::new();
                    for s in strings {
                        // A NUL cell is empty, as numpy's `S1` reads it.
                        let mut row: Vec<String> = s
                            .chars()
                            .map(|c| {
                                if c == '\0' {
                                    String::new()
                                } else {
                                    String::from(c)
                                }
                            })
                            .collect();
                        row.resize(width, String::new());
                        chars.extend(row);
                    }
                    (var.dims.clone(), var.shape.clone(), chars)
                };
                let masked = mask_strings(&mut values, &fills);
                mark_missing_text(masked, &mut vattrs, &mut out.notes, &full);
                (
                    dims,
                    string_array(values, &shape, &full)?,
                    Some(Value::String(String::new())),
                )
            }
            StoredData::Strings(strings) => {
                let fills = string_fills(&mut vattrs);
                let mut values = strings.clone();
                let masked = mask_strings(&mut values, &fills);
                mark_missing_text(masked, &mut vattrs, &mut out.notes, &full);
                (
                    var.dims.clone(),
                    string_array(values, &var.shape, &full)?,
                    Some(Value::String(String::new())),
                )
            }
            StoredData::Num(values) => {
                let as_seen = vattrs.clone();
                let (values, note) = match decode_numeric(values.clone(), &mut vattrs, &full)? {
                    Decoded::Values(values, note) => (values, note),
                    Decoded::Undecodable(reason) => {
                        // Kept as `--decode raw` keeps it, with the
                        // attributes xarray sees (bounds inherit units).
                        let array = raw::map_var(var, &as_seen, name, &mut out.notes)?;
                        out.undecoded.push(UndecodedArray {
                            array: full,
                            reason,
                        });
                        out.arrays.push((coord_names.contains(&var.name), array));
                        continue;
                    }
                };
                if let Some(note) = note {
                    out.notes.push(note);
                }
                let fill = match &values {
                    ArrayData::Float32(_) | ArrayData::Float64(_) => Some(Value::Float(f64::NAN)),
                    ArrayData::Timestamp(_) => Some(Value::Timestamp(Timestamp(i64::MIN))),
                    _ => None,
                };
                (var.dims.clone(), values, fill)
            }
            StoredData::Unsupported(_) => continue,
        };
        pop(&mut vattrs, "coordinates");
        let mut array_attrs = Vec::with_capacity(vattrs.len());
        for attr in &vattrs {
            match attrs::python(&attr.value) {
                Some(value) => array_attrs.push((attr.name.clone(), value)),
                None => out
                    .notes
                    .push(dropped_attribute(&format!("variable {full:?}"), &attr.name)),
            }
        }
        out.arrays.push((
            coord_names.contains(&var.name),
            Array {
                name,
                dims,
                chunk_shape: None,
                fill,
                values,
                attrs: array_attrs,
            },
        ));
    }
    Ok(out)
}

/// Pops `missing_value`/`_FillValue` of a text variable; their texts.
fn string_fills(vattrs: &mut Vec<StoredAttr>) -> Vec<String> {
    let mut fills = Vec::new();
    for key in ["missing_value", "_FillValue"] {
        if let Some(value) = pop(vattrs, key)
            && let Some(text) = attrs::text(&value)
        {
            fills.push(text.trim_end_matches('\0').to_owned());
        }
    }
    fills
}

/// The variable attribute saying which stored text stands for a missing
/// cell: its value is `""`. The xarray engine gives NaN for those cells, as
/// xarray gives for the original file, and drops the attribute.
pub const MISSING_TEXT_ATTR: &str = "_atlas_missing_text";

/// Cells of a text variable: how many the fills masked, and how many were
/// already empty in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Masked {
    masked: usize,
    empty: usize,
}

/// A masked string is stored as `""`, as atlas-python stores it.
fn mask_strings(values: &mut [String], fills: &[String]) -> Masked {
    let mut count = Masked {
        masked: 0,
        empty: 0,
    };
    for v in values.iter_mut() {
        if fills.iter().any(|f| f == v) {
            v.clear();
            count.masked += 1;
        } else if v.is_empty() {
            count.empty += 1;
        }
    }
    count
}

/// Marks a variable whose `""` cells are all masked ones ([`MISSING_TEXT_ATTR`]);
/// where empty cells of the file share `""` with masked ones, notes why not.
fn mark_missing_text(
    count: Masked,
    vattrs: &mut Vec<StoredAttr>,
    notes: &mut Vec<String>,
    variable: &str,
) {
    pop(vattrs, MISSING_TEXT_ATTR);
    if count.masked == 0 {
        return;
    }
    if count.empty == 0 {
        vattrs.push(StoredAttr::new(
            MISSING_TEXT_ATTR,
            StoredAttrValue::Chars(String::new()),
        ));
    } else {
        notes.push(format!(
            "{variable}: masked cells ({}, equal to the fill) and cells empty in the file ({}) are all \
             stored as \"\" and cannot be told apart, so {MISSING_TEXT_ATTR} is not set and readers \
             see \"\" for both",
            count.masked, count.empty
        ));
    }
}

/// Pops `_Encoding` as xarray does, except the `latin-1` the stored form
/// sets for bytes that are not UTF-8: kept (and `true` returned), so a
/// reader can encode the text back to the file's bytes.
fn keep_latin1_encoding(vattrs: &mut Vec<StoredAttr>) -> bool {
    let Some(i) = vattrs.iter().position(|a| a.name == ENCODING_ATTR) else {
        return false;
    };
    let latin1 = vattrs
        .get(i)
        .and_then(|a| attrs::text(&a.value))
        .is_some_and(|t| t == LATIN1);
    if !latin1 {
        vattrs.remove(i);
    }
    latin1
}

/// The float precision xarray decodes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FloatKind {
    F32,
    F64,
}

/// The numpy type of a one-value attribute, as far as float selection cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AttrKind {
    F32,
    F64,
    Other,
}

fn attr_kind(value: &StoredAttrValue) -> AttrKind {
    match value {
        StoredAttrValue::Float32(v) if v.len() == 1 => AttrKind::F32,
        StoredAttrValue::Float64(_) => AttrKind::F64,
        StoredAttrValue::Float32(_) => AttrKind::F64,
        _ => AttrKind::Other,
    }
}

/// Element kind of stored values: (is float, byte width); width 0 for
/// strings and binary, which are not decoded.
fn kind_of(values: &ArrayData) -> (bool, usize) {
    match values {
        ArrayData::Int8(_) | ArrayData::UInt8(_) => (false, 1),
        ArrayData::Int16(_) | ArrayData::UInt16(_) => (false, 2),
        ArrayData::Int32(_) | ArrayData::UInt32(_) => (false, 4),
        ArrayData::Int64(_) | ArrayData::UInt64(_) | ArrayData::Timestamp(_) => (false, 8),
        ArrayData::Float32(_) => (true, 4),
        ArrayData::Float64(_) => (true, 8),
        _ => (false, 0),
    }
}

/// xarray's `_choose_float_dtype`.
fn choose_float(
    values: &ArrayData,
    scale: Option<AttrKind>,
    offset: Option<AttrKind>,
) -> FloatKind {
    let (is_float, width) = kind_of(values);
    if scale.is_some() || offset.is_some() {
        if let (Some(s), Some(o)) = (scale, offset)
            && s == o
            && s != AttrKind::Other
        {
            if width == 4 && !is_float {
                return FloatKind::F64;
            }
            return if s == AttrKind::F32 {
                FloatKind::F32
            } else {
                FloatKind::F64
            };
        }
        if offset.is_some() {
            return FloatKind::F64;
        }
        return if scale == Some(AttrKind::F32) {
            FloatKind::F32
        } else {
            FloatKind::F64
        };
    }
    if is_float && width <= 4 {
        return FloatKind::F32;
    }
    if !is_float && width <= 2 {
        return FloatKind::F32;
    }
    FloatKind::F64
}

/// A fill to compare against: exact when integral, else as a float.
#[derive(Debug, Clone, Copy)]
struct FillTest {
    int: Option<i128>,
    float: f64,
}

fn fill_tests(value: &StoredAttrValue) -> Vec<FillTest> {
    let exact: Vec<Option<i128>> = match value {
        StoredAttrValue::Int8(v) => v.iter().map(|&x| Some(i128::from(x))).collect(),
        StoredAttrValue::UInt8(v) => v.iter().map(|&x| Some(i128::from(x))).collect(),
        StoredAttrValue::Int16(v) => v.iter().map(|&x| Some(i128::from(x))).collect(),
        StoredAttrValue::UInt16(v) => v.iter().map(|&x| Some(i128::from(x))).collect(),
        StoredAttrValue::Int32(v) => v.iter().map(|&x| Some(i128::from(x))).collect(),
        StoredAttrValue::UInt32(v) => v.iter().map(|&x| Some(i128::from(x))).collect(),
        StoredAttrValue::Int64(v) => v.iter().map(|&x| Some(i128::from(x))).collect(),
        StoredAttrValue::UInt64(v) => v.iter().map(|&x| Some(i128::from(x))).collect(),
        _ => Vec::new(),
    };
    let floats = attrs::numbers(value).unwrap_or_default();
    floats
        .iter()
        .enumerate()
        .filter(|(_, f)| !f.is_nan())
        .map(|(i, &f)| FillTest {
            int: exact.get(i).copied().flatten(),
            float: f,
        })
        .collect()
}

/// Stored numbers widened for decoding: exact integers or floats, shaped as stored.
enum Wide {
    Int(ArrayD<i128>),
    Float(ArrayD<f64>),
}

/// The numbers of `values`, widened; `None` for strings and binary.
fn widen(values: &ArrayData) -> Option<Wide> {
    fn int<T: Copy + Into<i128>>(a: &ArrayD<T>) -> Option<Wide> {
        Some(Wide::Int(a.mapv(Into::into)))
    }
    match values {
        ArrayData::Int8(a) => int(a),
        ArrayData::Int16(a) => int(a),
        ArrayData::Int32(a) => int(a),
        ArrayData::Int64(a) => int(a),
        ArrayData::UInt8(a) => int(a),
        ArrayData::UInt16(a) => int(a),
        ArrayData::UInt32(a) => int(a),
        ArrayData::UInt64(a) => int(a),
        ArrayData::Timestamp(a) => Some(Wide::Int(a.mapv(|t| i128::from(t.nanos())))),
        ArrayData::Float32(a) => Some(Wide::Float(a.mapv(f64::from))),
        ArrayData::Float64(a) => Some(Wide::Float(a.clone())),
        _ => None,
    }
}

fn reinterpret_unsigned(values: ArrayData, unsigned: bool) -> ArrayData {
    match (values, unsigned) {
        (ArrayData::Int8(v), true) => ArrayData::UInt8(v.mapv(|x| x as u8)),
        (ArrayData::Int16(v), true) => ArrayData::UInt16(v.mapv(|x| x as u16)),
        (ArrayData::Int32(v), true) => ArrayData::UInt32(v.mapv(|x| x as u32)),
        (ArrayData::Int64(v), true) => ArrayData::UInt64(v.mapv(|x| x as u64)),
        (ArrayData::UInt8(v), false) => ArrayData::Int8(v.mapv(|x| x as i8)),
        (ArrayData::UInt16(v), false) => ArrayData::Int16(v.mapv(|x| x as i16)),
        (ArrayData::UInt32(v), false) => ArrayData::Int32(v.mapv(|x| x as i32)),
        (ArrayData::UInt64(v), false) => ArrayData::Int64(v.mapv(|x| x as i64)),
        (other, _) => other,
    }
}

/// Reinterprets a fill the way `_Unsigned` reinterprets the data.
fn reinterpret_fill(test: FillTest, values: &ArrayData) -> FillTest {
    let Some(n) = test.int else { return test };
    let (_, width) = kind_of(values);
    let bits = u32::try_from(width * 8).unwrap_or(64);
    let modulus = 1i128 << bits;
    let wrapped = match values {
        ArrayData::UInt8(_)
        | ArrayData::UInt16(_)
        | ArrayData::UInt32(_)
        | ArrayData::UInt64(_) => n.rem_euclid(modulus),
        _ => {
            let m = n.rem_euclid(modulus);
            if m >= modulus / 2 { m - modulus } else { m }
        }
    };
    FillTest {
        int: Some(wrapped),
        float: wrapped as f64,
    }
}

fn is_fill(x: &WideItem, fills: &[FillTest]) -> bool {
    fills.iter().any(|f| match (x, f.int) {
        (WideItem::Int(n), Some(m)) => *n == m,
        (WideItem::Int(n), None) => (*n as f64) == f.float,
        (WideItem::Float(v), _) => *v == f.float,
    })
}

enum WideItem {
    Int(i128),
    Float(f64),
}

/// What decoding one numeric variable gave.
enum Decoded {
    /// The decoded values and a note on a choice made, if any.
    Values(ArrayData, Option<String>),
    /// A time variable without a `timestamp_ns` form: stored undecoded.
    Undecodable(TimeError),
}

/// Decodes one numeric variable as xarray does; pops the attributes it consumes.
fn decode_numeric(
    values: ArrayData,
    vattrs: &mut Vec<StoredAttr>,
    variable: &str,
) -> Result<Decoded, FileError> {
    let mut values = values;
    if kind_of(&values).1 == 0 {
        return Ok(Decoded::Values(values, None)); // strings or binary: nothing to decode
    }
    // _Unsigned
    let mut unsigned_flip = None;
    if let Some(flag) = pop(vattrs, "_Unsigned").as_ref().and_then(attrs::text) {
        let (is_float, _) = kind_of(&values);
        if !is_float {
            let signed = matches!(
                values,
                ArrayData::Int8(_)
                    | ArrayData::Int16(_)
                    | ArrayData::Int32(_)
                    | ArrayData::Int64(_)
            );
            if flag == "true" && signed {
                unsigned_flip = Some(true);
            } else if flag == "false" && !signed {
                unsigned_flip = Some(false);
            }
        }
    }
    // Fill values (missing_value, then _FillValue), as xarray gathers them.
    let (is_float, _) = kind_of(&values);
    let mut fills = Vec::new();
    let mut fill_declared = false;
    for key in ["missing_value", "_FillValue"] {
        let Some(value) = pop(vattrs, key) else {
            continue;
        };
        let tests = fill_tests(&value);
        // xarray keeps every fill that is not null: text counts (it promotes
        // the variable but never equals a number), NaN does not (an integer
        // variable whose fills are all NaN has them dropped).
        let text = match &value {
            StoredAttrValue::Chars(_) => true,
            StoredAttrValue::Strings(v) => !v.is_empty(),
            _ => false,
        };
        if tests.is_empty() && !is_float && !text {
            continue;
        }
        fill_declared = true;
        fills.extend(tests);
    }
    if let Some(unsigned) = unsigned_flip {
        values = reinterpret_unsigned(values, unsigned);
        fills = fills
            .into_iter()
            .map(|f| reinterpret_fill(f, &values))
            .collect();
    }
    let units = text_attr(vattrs, "units");
    let time_like = units.as_deref().is_some_and(is_date_units);
    let scale_kind = vattrs
        .iter()
        .find(|a| a.name == "scale_factor")
        .map(|a| attr_kind(&a.value));
    let offset_kind = vattrs
        .iter()
        .find(|a| a.name == "add_offset")
        .map(|a| attr_kind(&a.value));
    let packed = scale_kind.is_some() || offset_kind.is_some();

    // The working form: exact integers or floats, and the float kind if floats.
    let (is_float, width) = kind_of(&values);
    let mut kind: Option<FloatKind> = if is_float {
        Some(if width == 4 {
            FloatKind::F32
        } else {
            FloatKind::F64
        })
    } else {
        None
    };
    let mut int_is_time = false;
    let Some(mut wide) = widen(&values) else {
        return Ok(Decoded::Values(values, None));
    };
    if fill_declared {
        let target = if packed {
            Some(choose_float(&values, scale_kind, offset_kind))
        } else if time_like && !is_float {
            None
        } else if is_float {
            kind
        } else if width <= 2 {
            Some(FloatKind::F32)
        } else {
            Some(FloatKind::F64)
        };
        wide = match (wide, target) {
            (Wide::Int(v), None) => {
                int_is_time = true;
                Wide::Int(v.mapv_into(|n| {
                    if is_fill(&WideItem::Int(n), &fills) {
                        i128::from(i64::MIN)
                    } else {
                        n
                    }
                }))
            }
            (Wide::Int(v), Some(k)) => Wide::Float(v.mapv(|n| {
                if is_fill(&WideItem::Int(n), &fills) {
                    f64::NAN
                } else {
                    round_to(n as f64, k)
                }
            })),
            (Wide::Float(v), _) => Wide::Float(v.mapv_into(|x| {
                if is_fill(&WideItem::Float(x), &fills) {
                    f64::NAN
                } else {
                    x
                }
            })),
        };
        if target.is_some() {
            kind = target;
        }
    }
    let _ = int_is_time;
    if packed {
        let scale = pop(vattrs, "scale_factor");
        let offset = pop(vattrs, "add_offset");
        let first = |v: &Option<StoredAttrValue>| {
            v.as_ref()
                .and_then(attrs::numbers)
                .and_then(|n| n.first().copied())
        };
        let (scale, offset) = (first(&scale), first(&offset));
        let target = if !fill_declared || time_like || kind.is_none() {
            choose_float(&values, scale_kind, offset_kind)
        } else {
            kind.unwrap_or(FloatKind::F64)
        };
        let floats: ArrayD<f64> = match wide {
            Wide::Int(v) => v.mapv(|n| round_to(n as f64, target)),
            Wide::Float(v) => v.mapv_into(|x| round_to(x, target)),
        };
        let floats = floats.mapv_into(|x| match target {
            FloatKind::F32 => {
                let mut y = x as f32;
                if let Some(s) = scale {
                    y *= s as f32;
                }
                if let Some(o) = offset {
                    y += o as f32;
                }
                f64::from(y)
            }
            FloatKind::F64 => {
                let mut y = x;
                if let Some(s) = scale {
                    y *= s;
                }
                if let Some(o) = offset {
                    y += o;
                }
                y
            }
        });
        wide = Wide::Float(floats);
        kind = Some(target);
    }
    if time_like {
        let units = units.unwrap_or_default();
        let calendar = pop(vattrs, "calendar")
            .as_ref()
            .and_then(attrs::text)
            .unwrap_or_else(|| "standard".to_owned());
        pop(vattrs, "units");
        let coder = match TimeCoder::new(&units, &calendar) {
            Ok(coder) => coder,
            Err(reason) => return Ok(Decoded::Undecodable(reason)),
        };
        let (shape, stamps) = match &wide {
            Wide::Int(v) => (
                v.raw_dim(),
                v.iter()
                    .map(|&n| {
                        // numpy casts to int64 first (a uint64 wraps); int64::MIN is NaT.
                        let n = n as i64;
                        coder
                            .decode_int((n != i64::MIN).then_some(n))
                            .map(Timestamp)
                    })
                    .collect::<Result<Vec<_>, _>>(),
            ),
            Wide::Float(v) => (
                v.raw_dim(),
                v.iter()
                    .map(|&x| coder.decode_float(x).map(Timestamp))
                    .collect::<Result<Vec<_>, _>>(),
            ),
        };
        let stamps = match stamps {
            Ok(stamps) => stamps,
            Err(reason) => return Ok(Decoded::Undecodable(reason)),
        };
        let stamps = ArrayD::from_shape_vec(shape, stamps).map_err(|e| FileError::Shape {
            variable: variable.to_owned(),
            reason: e.to_string(),
        })?;
        let note = coder.note().map(|n| format!("{variable}: {n}"));
        return Ok(Decoded::Values(ArrayData::Timestamp(stamps), note));
    }
    // BooleanCoder: xarray turns `dtype = "bool"` into numpy bool, which atlas-python cannot store.
    let is_bool = matches!(values, ArrayData::Int8(_))
        && text_attr(vattrs, "dtype").is_some_and(|d| d == "bool");
    if is_bool && let Wide::Int(v) = &wide {
        pop(vattrs, "dtype");
        let bits = v.mapv(|n| u8::from(n != 0));
        let note = format!(
            "{variable}: a bool variable (dtype = \"bool\") stored as uint8 0/1; Atlas has no bool arrays"
        );
        return Ok(Decoded::Values(ArrayData::UInt8(bits), Some(note)));
    }
    let out = match (wide, kind) {
        (Wide::Float(v), Some(FloatKind::F32)) => ArrayData::Float32(v.mapv(|x| x as f32)),
        (Wide::Float(v), _) => ArrayData::Float64(v),
        (Wide::Int(_), _) => values,
    };
    Ok(Decoded::Values(out, None))
}

fn round_to(x: f64, kind: FloatKind) -> f64 {
    match kind {
        FloatKind::F32 => f64::from(x as f32),
        FloatKind::F64 => x,
    }
}
