//! Running a predicate: names resolved against the schemas, facts gathered,
//! then one in-memory pass over the live datasets.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap, HashSet};

use atlas_format::DType;

use super::error::QueryError;
use super::facts::Facts;
use super::predicate::{CmpOp, Field, Predicate, StatField};
use super::value::{Scalar, Value, attr_scalar, order};
use crate::read::Dataset;
use crate::set::View;

/// The names the live datasets' schemas declare.
pub(crate) struct Declared {
    /// Dataset attribute keys, in order of first appearance.
    pub attributes: Vec<String>,
    /// Array names, in order of first appearance.
    pub arrays: Vec<String>,
}

impl Declared {
    /// Scans each distinct schema of the live datasets of `views` once.
    pub fn of(views: &[View]) -> Declared {
        let (mut attributes, mut arrays) = (Vec::new(), Vec::new());
        let (mut seen_attr, mut seen_array) = (HashSet::new(), HashSet::new());
        for view in views {
            let footer = view.member().footer();
            for schema in view
                .live_schemas()
                .into_iter()
                .filter_map(|i| footer.schema_view(i))
            {
                for (key, _) in schema.attributes() {
                    if seen_attr.insert(key.to_owned()) {
                        attributes.push(key.to_owned());
                    }
                }
                for array in schema.arrays() {
                    if seen_array.insert(array.name().to_owned()) {
                        arrays.push(array.name().to_owned());
                    }
                }
            }
        }
        Declared { attributes, arrays }
    }

    pub fn has_attribute(&self, key: &str) -> bool {
        self.attributes.iter().any(|k| k == key)
    }

    pub fn has_array(&self, name: &str) -> bool {
        self.arrays.iter().any(|a| a == name)
    }
}

/// A predicate ready to run: names resolved, and what it reads.
pub(crate) struct Plan {
    pub predicate: Predicate,
    pub attributes: BTreeSet<String>,
    pub arrays: BTreeSet<String>,
}

impl Plan {
    /// Resolves [`Field::Name`]s and refuses unknown names and arrays whose type has no order.
    pub fn new(
        views: &[View],
        declared: &Declared,
        predicate: &Predicate,
    ) -> Result<Plan, QueryError> {
        let predicate = predicate.try_map_fields(&mut |f| resolve(declared, f))?;
        let mut attributes = BTreeSet::new();
        let mut arrays = BTreeSet::new();
        for field in predicate.fields() {
            match field {
                Field::Attribute(k) => {
                    attributes.insert(k.clone());
                }
                Field::Array(a) | Field::Stat(a, _) => {
                    arrays.insert(a.clone());
                }
                Field::Name(_) => {}
            }
        }
        let plan = Plan {
            predicate,
            attributes,
            arrays,
        };
        for atlas in views {
            plan.check_orderable(atlas)?;
        }
        Ok(plan)
    }

    /// `NoStatistics` when a predicate orders the elements of an array some
    /// live dataset declares with a type statistics give no min/max for.
    fn check_orderable(&self, atlas: &View) -> Result<(), QueryError> {
        let mut ordered = HashSet::new();
        for field in self.predicate.fields() {
            if let Field::Array(a) | Field::Stat(a, StatField::Min | StatField::Max) = field {
                ordered.insert(a.as_str());
            }
        }
        if ordered.is_empty() {
            return Ok(());
        }
        let mut seen_schema = HashSet::new();
        for ds in atlas.datasets() {
            let schema = ds.schema();
            if !seen_schema.insert(schema.index()) {
                continue;
            }
            for array in schema.arrays() {
                if ordered.contains(array.name()) && !has_order(array.dtype()) {
                    return Err(QueryError::NoStatistics {
                        array: array.name().to_owned(),
                        dataset: None,
                    });
                }
            }
        }
        Ok(())
    }

    /// `NoStatistics` when a live dataset declares an array the predicate reads
    /// but its segment records no statistics for it.
    pub fn check_recorded(&self, views: &[View], facts: &Facts) -> Result<(), QueryError> {
        for atlas in views {
            self.check_recorded_in(atlas, facts)?;
        }
        Ok(())
    }

    fn check_recorded_in(&self, atlas: &View, facts: &Facts) -> Result<(), QueryError> {
        for array in &self.arrays {
            let rows = facts.arrays.get(array);
            // Whether each schema (by pool index) declares the array, asked once per schema.
            let mut declares: HashMap<u32, bool> = HashMap::new();
            for ds in atlas.datasets() {
                let schema = ds.schema();
                let declared = *declares
                    .entry(schema.index())
                    .or_insert_with(|| schema.array(array).is_some());
                if declared && !rows.is_some_and(|r| r.contains_key(ds.name())) {
                    return Err(QueryError::NoStatistics {
                        array: array.clone(),
                        dataset: Some(ds.name().to_owned()),
                    });
                }
            }
        }
        Ok(())
    }
}

/// Whether statistics record a min and max for elements of this type.
pub(crate) fn has_order(dtype: &DType) -> bool {
    !matches!(dtype, DType::List { .. } | DType::FixedSizeList { .. })
}

fn resolve(declared: &Declared, field: &Field) -> Result<Field, QueryError> {
    let unknown = |name: &str| QueryError::UnknownName {
        name: name.to_owned(),
    };
    match field {
        Field::Name(name) => match (declared.has_attribute(name), declared.has_array(name)) {
            (true, true) => Err(QueryError::AmbiguousName { name: name.clone() }),
            (true, false) => Ok(Field::Attribute(name.clone())),
            (false, true) => Ok(Field::Array(name.clone())),
            (false, false) => Err(unknown(name)),
        },
        Field::Attribute(k) if !declared.has_attribute(k) => Err(unknown(k)),
        Field::Array(a) | Field::Stat(a, _) if !declared.has_array(a) => Err(unknown(a)),
        other => Ok(other.clone()),
    }
}

/// Whether `ds` satisfies the (resolved) predicate.
pub(crate) fn eval(p: &Predicate, ds: &Dataset, facts: &Facts) -> Result<bool, QueryError> {
    match p {
        Predicate::Compare {
            field,
            op: CmpOp::Ne,
            value,
        } => Ok(!compare(field, CmpOp::Eq, value, ds, facts)?),
        Predicate::Compare { field, op, value } => compare(field, *op, value, ds, facts),
        Predicate::Between { field, lo, hi } => {
            let Some((min, max)) = range(field, ds, facts)? else {
                return Ok(false);
            };
            Ok(ord(field, &min, lo, ds)? != Ordering::Less
                && ord(field, &max, hi, ds)? != Ordering::Greater)
        }
        Predicate::Overlaps { field, lo, hi } => {
            let Some((min, max)) = range(field, ds, facts)? else {
                return Ok(false);
            };
            Ok(ord(field, &min, hi, ds)? != Ordering::Greater
                && ord(field, &max, lo, ds)? != Ordering::Less)
        }
        Predicate::Exists(field) => Ok(exists(field, ds, facts)),
        Predicate::And(parts) => {
            for part in parts {
                if !eval(part, ds, facts)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        Predicate::Or(parts) => {
            for part in parts {
                if eval(part, ds, facts)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        Predicate::Not(part) => Ok(!eval(part, ds, facts)?),
    }
}

/// `field op value` with "every element" meaning: the range's low end decides
/// `>`/`>=`, its high end `<`/`<=`, both `=`.
fn compare(
    field: &Field,
    op: CmpOp,
    value: &Value,
    ds: &Dataset,
    facts: &Facts,
) -> Result<bool, QueryError> {
    let Some((min, max)) = range(field, ds, facts)? else {
        return Ok(false);
    };
    Ok(match op {
        CmpOp::Eq => {
            ord(field, &min, value, ds)? == Ordering::Equal
                && ord(field, &max, value, ds)? == Ordering::Equal
        }
        CmpOp::Ne => {
            ord(field, &min, value, ds)? != Ordering::Equal
                || ord(field, &max, value, ds)? != Ordering::Equal
        }
        CmpOp::Lt => ord(field, &max, value, ds)? == Ordering::Less,
        CmpOp::Le => ord(field, &max, value, ds)? != Ordering::Greater,
        CmpOp::Gt => ord(field, &min, value, ds)? == Ordering::Greater,
        CmpOp::Ge => ord(field, &min, value, ds)? != Ordering::Less,
    })
}

/// The lowest and highest value the field takes in `ds` (equal for a single
/// value); `None` when `ds` has none.
fn range(
    field: &Field,
    ds: &Dataset,
    facts: &Facts,
) -> Result<Option<(Scalar, Scalar)>, QueryError> {
    match field {
        Field::Attribute(key) => {
            let Some(attr) = facts.attrs.get(key).and_then(|m| m.get(ds.name())) else {
                return Ok(None);
            };
            let scalar = attr_scalar(attr).ok_or_else(|| QueryError::ListAttribute {
                field: field.to_string(),
                stored: attr.dtype(),
            })?;
            Ok(Some((scalar.clone(), scalar)))
        }
        Field::Array(array) => {
            let Some(stats) = facts.arrays.get(array).and_then(|m| m.get(ds.name())) else {
                return Ok(None);
            };
            Ok(match (&stats.min, &stats.max) {
                (Some(min), Some(max)) => {
                    Some((known_stat(min, array, ds)?, known_stat(max, array, ds)?))
                }
                _ => None,
            })
        }
        Field::Stat(array, stat) => {
            let Some(stats) = facts.arrays.get(array).and_then(|m| m.get(ds.name())) else {
                return Ok(None);
            };
            let one = match stat {
                StatField::Min => stats
                    .min
                    .as_ref()
                    .map(|s| known_stat(s, array, ds))
                    .transpose()?,
                StatField::Max => stats
                    .max
                    .as_ref()
                    .map(|s| known_stat(s, array, ds))
                    .transpose()?,
                StatField::Nulls => Some(Scalar::Int(i128::from(stats.null_count))),
                StatField::Count => Some(Scalar::Int(i128::from(stats.row_count))),
            };
            Ok(one.map(|s| (s.clone(), s)))
        }
        Field::Name(name) => Err(QueryError::UnknownName { name: name.clone() }),
    }
}

/// [`Scalar::of`], or `NoStatistics` for a statistic kind this version
/// cannot compare (never guessed as absent, which would drop datasets).
fn known_stat(stat: &Value, array: &str, ds: &Dataset) -> Result<Scalar, QueryError> {
    Scalar::of(stat).ok_or_else(|| QueryError::NoStatistics {
        array: array.to_owned(),
        dataset: Some(ds.name().to_owned()),
    })
}

/// [`order`], or `TypeMismatch` naming the field and the stored type.
fn ord(field: &Field, data: &Scalar, value: &Value, ds: &Dataset) -> Result<Ordering, QueryError> {
    order(data, value).ok_or_else(|| QueryError::TypeMismatch {
        field: field.to_string(),
        stored: stored_type(field, ds),
        value: value.clone(),
    })
}

fn stored_type(field: &Field, ds: &Dataset) -> Option<DType> {
    let schema = ds.schema();
    match field {
        Field::Attribute(k) => schema.attribute_dtype(k).cloned(),
        Field::Array(a) | Field::Stat(a, StatField::Min | StatField::Max) => {
            schema.array(a).map(|m| m.dtype().clone())
        }
        Field::Stat(_, _) => Some(DType::UInt64),
        Field::Name(_) => None,
    }
}

fn exists(field: &Field, ds: &Dataset, facts: &Facts) -> bool {
    let schema = ds.schema();
    match field {
        Field::Attribute(k) => schema.attribute_dtype(k).is_some(),
        Field::Array(a) | Field::Stat(a, StatField::Nulls | StatField::Count) => {
            schema.array(a).is_some()
        }
        Field::Stat(a, stat) => facts
            .arrays
            .get(a)
            .and_then(|m| m.get(ds.name()))
            .is_some_and(|s| match stat {
                StatField::Max => s.max.is_some(),
                _ => s.min.is_some(),
            }),
        Field::Name(_) => false,
    }
}

/// The live datasets of `views` (in order, each in ordinal order) that the
/// resolved `plan` accepts: a collection is the one-view case, a set passes
/// its members with replaced copies hidden. Index row groups the plan rules
/// out are not read.
pub(crate) async fn select_with(views: &[View], plan: &Plan) -> Result<Vec<String>, QueryError> {
    let views = &crate::index::narrow(views, &plan.predicate).await;
    let facts = Facts::gather(views, &plan.attributes, &plan.arrays).await?;
    plan.check_recorded(views, &facts)?;
    let mut out = Vec::new();
    for atlas in views {
        for ds in atlas.datasets() {
            if eval(&plan.predicate, &ds, &facts)? {
                out.push(ds.name().to_owned());
            }
        }
    }
    Ok(out)
}
