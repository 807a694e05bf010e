//! The catalogue: one Arrow row per live dataset, its attributes and the
//! statistics of its arrays, built from segment footers alone.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, BooleanBuilder, ListBuilder, StringBuilder};
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Float32Array, Float64Array, Int8Array, Int16Array,
    Int32Array, Int64Array, ListArray, RecordBatch, StringArray, TimestampNanosecondArray,
    UInt8Array, UInt16Array, UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field as ArrowField, Schema};
use atlas_format::DType;

use super::error::QueryError;
use super::eval::{Declared, Plan, eval, has_order};
use super::facts::Facts;
use super::json_value::attr_value_json;
use super::predicate::Predicate;
use super::value::Scalar;
use crate::ArrayStats;
use crate::Attr;
use crate::read::Dataset;
use crate::set::View;

/// What [`Atlas::catalogue`](crate::Atlas::catalogue) puts in the table.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct CatalogueOptions {
    /// Dataset attribute keys to give a column each; `None` means every key a
    /// live dataset declares.
    pub(crate) attributes: Option<Vec<String>>,
    /// Arrays to give `.count`/`.nulls`/`.min`/`.max` columns; `None` means
    /// every array a live dataset declares.
    pub(crate) arrays: Option<Vec<String>>,
    /// Keep only the rows this accepts (see [`Predicate`]).
    pub(crate) predicate: Option<Predicate>,
}

impl CatalogueOptions {
    /// Columns for these attribute keys only, in this order.
    pub fn attributes<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> Self {
        self.attributes = Some(keys.into_iter().map(Into::into).collect());
        self
    }

    /// Statistics columns for these arrays only, in this order.
    pub fn arrays<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.arrays = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Rows of the datasets `predicate` accepts only.
    pub fn predicate(mut self, predicate: Predicate) -> Self {
        self.predicate = Some(predicate);
        self
    }
}

/// The catalogue of the live datasets of `views` (in order) and the datasets
/// of its rows: a collection is the one-view case, a set passes its members
/// with replaced copies hidden (their names are then distinct).
pub(crate) async fn catalogue_with(
    views: &[View],
    options: &CatalogueOptions,
) -> Result<(RecordBatch, Vec<Dataset>), QueryError> {
    let declared = Declared::of(views);
    let attributes = requested(options.attributes.as_ref(), &declared.attributes)?;
    let arrays = requested(options.arrays.as_ref(), &declared.arrays)?;
    let (rows, facts) = selected(
        views,
        &declared,
        &attributes,
        &arrays,
        options.predicate.as_ref(),
    )
    .await?;
    let batch = build(&rows, &attributes, &arrays, &facts)?;
    Ok((batch, rows))
}

/// The live datasets of `views` (in order) that `predicate` accepts (all
/// without one), and the facts read to decide: the attribute columns
/// `attributes` and the statistics of `arrays` besides what the predicate needs.
pub(crate) async fn selected(
    views: &[View],
    declared: &Declared,
    attributes: &[String],
    arrays: &[String],
    predicate: Option<&Predicate>,
) -> Result<(Vec<Dataset>, Facts), QueryError> {
    let plan = predicate
        .map(|p| Plan::new(views, declared, p))
        .transpose()?;
    let mut read_attrs: BTreeSet<String> = attributes.iter().cloned().collect();
    let mut read_arrays: BTreeSet<String> = arrays.iter().cloned().collect();
    if let Some(plan) = &plan {
        read_attrs.extend(plan.attributes.iter().cloned());
        read_arrays.extend(plan.arrays.iter().cloned());
    }
    let narrowed;
    let views = match &plan {
        Some(plan) => {
            narrowed = crate::index::narrow(views, &plan.predicate).await;
            narrowed.as_slice()
        }
        None => views,
    };
    let facts = Facts::gather(views, &read_attrs, &read_arrays).await?;
    let mut rows = Vec::new();
    for ds in views.iter().flat_map(View::datasets) {
        if let Some(plan) = &plan
            && !eval(&plan.predicate, &ds, &facts)?
        {
            continue;
        }
        rows.push(ds);
    }
    if let Some(plan) = &plan {
        plan.check_recorded(views, &facts)?;
    }
    Ok((rows, facts))
}

/// The names asked for, or every declared one; `UnknownName` for one nobody declares.
pub(crate) fn requested(
    asked: Option<&Vec<String>>,
    declared: &[String],
) -> Result<Vec<String>, QueryError> {
    let Some(asked) = asked else {
        return Ok(declared.to_vec());
    };
    let known: HashSet<&str> = declared.iter().map(String::as_str).collect();
    if let Some(name) = asked.iter().find(|n| !known.contains(n.as_str())) {
        return Err(QueryError::UnknownName { name: name.clone() });
    }
    Ok(asked.clone())
}

fn build(
    rows: &[Dataset],
    attributes: &[String],
    arrays: &[String],
    facts: &Facts,
) -> Result<RecordBatch, QueryError> {
    let mut fields = vec![
        ArrowField::new("name", DataType::Utf8, false),
        ArrowField::new("ordinal", DataType::UInt32, false),
        ArrowField::new("schema", DataType::UInt32, false),
    ];
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(rows.iter().map(|d| d.name()))),
        Arc::new(UInt32Array::from_iter_values(
            rows.iter().map(|d| d.ordinal()),
        )),
        Arc::new(UInt32Array::from_iter_values(
            rows.iter().map(|d| d.schema().index()),
        )),
    ];
    for key in attributes {
        let values: Vec<Option<&Attr>> = rows
            .iter()
            .map(|d| facts.attrs.get(key).and_then(|m| m.get(d.name())))
            .collect();
        let dtypes = distinct(rows.iter().map(|d| d.schema().attribute_dtype(key)));
        let column = attribute_column(&dtypes, &values);
        fields.push(ArrowField::new(key, column.data_type().clone(), true));
        columns.push(column);
    }
    for array in arrays {
        let stats: Vec<Option<&ArrayStats>> = rows
            .iter()
            .map(|d| facts.arrays.get(array).and_then(|m| m.get(d.name())))
            .collect();
        let counts = |f: fn(&ArrayStats) -> u64| -> ArrayRef {
            Arc::new(UInt64Array::from_iter(stats.iter().map(|s| s.map(f))))
        };
        let mut stat_columns = vec![
            ("count", counts(|s| s.row_count)),
            ("nulls", counts(|s| s.null_count)),
        ];
        let dtypes = distinct(
            rows.iter()
                .map(|d| d.schema().array(array).map(|m| m.dtype())),
        );
        if dtypes.iter().all(|d| has_order(d)) {
            for (suffix, is_min) in [("min", true), ("max", false)] {
                let values: Vec<Option<Scalar>> = stats
                    .iter()
                    .map(|s| {
                        s.and_then(|s| {
                            if is_min {
                                s.min.as_ref()
                            } else {
                                s.max.as_ref()
                            }
                        })
                        .and_then(Scalar::of)
                    })
                    .collect();
                let typed = match dtypes.as_slice() {
                    [dtype] => stat_column(dtype, &values),
                    _ => None,
                };
                let column = typed.unwrap_or_else(|| {
                    Arc::new(StringArray::from_iter(
                        values.iter().map(|v| v.as_ref().map(scalar_text)),
                    ))
                });
                stat_columns.push((suffix, column));
            }
        }
        for (suffix, column) in stat_columns {
            fields.push(ArrowField::new(
                format!("{array}.{suffix}"),
                column.data_type().clone(),
                true,
            ));
            columns.push(column);
        }
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(QueryError::Arrow)
}

/// A column of one attribute's values, typed as declared when every dataset
/// declares it with the one type in `dtypes`, else utf8 JSON text.
pub(crate) fn attribute_column(dtypes: &[&DType], values: &[Option<&Attr>]) -> ArrayRef {
    let typed = match dtypes {
        [dtype] => attr_column(dtype, values),
        _ => None,
    };
    typed.unwrap_or_else(|| {
        Arc::new(StringArray::from_iter(
            values
                .iter()
                .map(|a| a.map(|a| attr_value_json(a).to_string())),
        ))
    })
}

/// The distinct declared types, in order of first appearance.
pub(crate) fn distinct<'a>(dtypes: impl Iterator<Item = Option<&'a DType>>) -> Vec<&'a DType> {
    let mut out: Vec<&DType> = Vec::new();
    for d in dtypes.flatten() {
        if !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

/// A scalar as text, for a column whose datasets disagree on the type.
fn scalar_text(s: &Scalar) -> String {
    match s {
        Scalar::Int(i) => i.to_string(),
        Scalar::Float(x) => x.to_string(),
        Scalar::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
    }
}

macro_rules! attr_scalars {
    ($values:expr, $array:ty, $variant:ident) => {
        Arc::new(<$array>::from(
            $values
                .iter()
                .map(|a| match a {
                    Some(Attr::$variant(v)) => Some(v.clone()),
                    _ => None,
                })
                .collect::<Vec<_>>(),
        )) as ArrayRef
    };
}

macro_rules! attr_primitive_lists {
    ($values:expr, $type:ty, $variant:ident) => {
        Arc::new(ListArray::from_iter_primitive::<$type, _, _>(
            $values.iter().map(|a| match a {
                Some(Attr::$variant(v)) => Some(v.iter().map(|x| Some(*x)).collect::<Vec<_>>()),
                _ => None,
            }),
        )) as ArrayRef
    };
}

/// A typed column of one attribute declared as `dtype`; `None` for a type
/// with no column form here.
pub(crate) fn attr_column(dtype: &DType, values: &[Option<&Attr>]) -> Option<ArrayRef> {
    Some(match dtype {
        DType::Bool => attr_scalars!(values, BooleanArray, Bool),
        DType::Int8 => attr_scalars!(values, Int8Array, Int8),
        DType::Int16 => attr_scalars!(values, Int16Array, Int16),
        DType::Int32 => attr_scalars!(values, Int32Array, Int32),
        DType::Int64 => attr_scalars!(values, Int64Array, Int64),
        DType::UInt8 => attr_scalars!(values, UInt8Array, UInt8),
        DType::UInt16 => attr_scalars!(values, UInt16Array, UInt16),
        DType::UInt32 => attr_scalars!(values, UInt32Array, UInt32),
        DType::UInt64 => attr_scalars!(values, UInt64Array, UInt64),
        DType::Float32 => attr_scalars!(values, Float32Array, Float32),
        DType::Float64 => attr_scalars!(values, Float64Array, Float64),
        DType::String => Arc::new(StringArray::from_iter(values.iter().map(|a| match a {
            Some(Attr::String(v)) => Some(v.as_str()),
            _ => None,
        }))),
        DType::Binary => Arc::new(BinaryArray::from_iter(values.iter().map(|a| match a {
            Some(Attr::Binary(v)) => Some(v.as_slice()),
            _ => None,
        }))),
        DType::List { child } => match child.as_ref() {
            DType::Int8 => attr_primitive_lists!(values, Int8Type, Int8List),
            DType::Int16 => attr_primitive_lists!(values, Int16Type, Int16List),
            DType::Int32 => attr_primitive_lists!(values, Int32Type, Int32List),
            DType::Int64 => attr_primitive_lists!(values, Int64Type, Int64List),
            DType::UInt8 => attr_primitive_lists!(values, UInt8Type, UInt8List),
            DType::UInt16 => attr_primitive_lists!(values, UInt16Type, UInt16List),
            DType::UInt32 => attr_primitive_lists!(values, UInt32Type, UInt32List),
            DType::UInt64 => attr_primitive_lists!(values, UInt64Type, UInt64List),
            DType::Float32 => attr_primitive_lists!(values, Float32Type, Float32List),
            DType::Float64 => attr_primitive_lists!(values, Float64Type, Float64List),
            DType::Bool => {
                let mut b = ListBuilder::new(BooleanBuilder::new());
                for a in values {
                    match a {
                        Some(Attr::BoolList(v)) => {
                            b.values().extend(v.iter().map(|x| Some(*x)));
                            b.append(true);
                        }
                        _ => b.append(false),
                    }
                }
                Arc::new(b.finish())
            }
            DType::String => {
                let mut b = ListBuilder::new(StringBuilder::new());
                for a in values {
                    match a {
                        Some(Attr::StringList(v)) => {
                            b.values().extend(v.iter().map(|x| Some(x.as_str())));
                            b.append(true);
                        }
                        _ => b.append(false),
                    }
                }
                Arc::new(b.finish())
            }
            DType::Binary => {
                let mut b = ListBuilder::new(BinaryBuilder::new());
                for a in values {
                    match a {
                        Some(Attr::BinaryList(v)) => {
                            for x in v {
                                b.values().append_value(x);
                            }
                            b.append(true);
                        }
                        _ => b.append(false),
                    }
                }
                Arc::new(b.finish())
            }
            _ => return None,
        },
        _ => return None,
    })
}

macro_rules! stat_ints {
    ($values:expr, $array:ty, $native:ty) => {
        Arc::new(<$array>::from(
            $values
                .iter()
                .map(|s| match s {
                    Some(Scalar::Int(i)) => <$native>::try_from(*i).ok(),
                    _ => None,
                })
                .collect::<Vec<_>>(),
        )) as ArrayRef
    };
}

/// A typed min or max column of an array whose elements are `dtype`; `None`
/// for a type with no column form here.
fn stat_column(dtype: &DType, values: &[Option<Scalar>]) -> Option<ArrayRef> {
    let floats = || {
        values.iter().map(|s| match s {
            Some(Scalar::Float(x)) => Some(*x),
            _ => None,
        })
    };
    let bytes = || {
        values.iter().map(|s| match s {
            Some(Scalar::Bytes(b)) => Some(b.as_slice()),
            _ => None,
        })
    };
    Some(match dtype {
        DType::Bool => Arc::new(BooleanArray::from(
            values
                .iter()
                .map(|s| match s {
                    Some(Scalar::Int(i)) => Some(*i != 0),
                    _ => None,
                })
                .collect::<Vec<_>>(),
        )),
        DType::Int8 => stat_ints!(values, Int8Array, i8),
        DType::Int16 => stat_ints!(values, Int16Array, i16),
        DType::Int32 => stat_ints!(values, Int32Array, i32),
        DType::Int64 => stat_ints!(values, Int64Array, i64),
        DType::UInt8 => stat_ints!(values, UInt8Array, u8),
        DType::UInt16 => stat_ints!(values, UInt16Array, u16),
        DType::UInt32 => stat_ints!(values, UInt32Array, u32),
        DType::UInt64 => stat_ints!(values, UInt64Array, u64),
        DType::TimestampNs => Arc::new(
            TimestampNanosecondArray::from(
                values
                    .iter()
                    .map(|s| match s {
                        Some(Scalar::Int(i)) => i64::try_from(*i).ok(),
                        _ => None,
                    })
                    .collect::<Vec<_>>(),
            )
            .with_timezone("UTC"),
        ),
        // Statistics of f32 elements are f32 values widened; narrowing is exact.
        #[allow(clippy::cast_possible_truncation)]
        DType::Float32 => Arc::new(Float32Array::from_iter(
            floats().map(|x| x.map(|x| x as f32)),
        )),
        DType::Float64 => Arc::new(Float64Array::from_iter(floats())),
        DType::String => Arc::new(StringArray::from_iter(
            bytes().map(|b| b.map(|b| String::from_utf8_lossy(b).into_owned())),
        )),
        DType::Binary => Arc::new(BinaryArray::from_iter(bytes())),
        _ => return None,
    })
}
