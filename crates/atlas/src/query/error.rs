//! What can go wrong building a catalogue or running a predicate.

use atlas_format::{DType, Value};

use crate::error::AtlasError;

/// An error of [`Atlas::select`](crate::Atlas::select),
/// [`Atlas::catalogue`](crate::Atlas::catalogue), [`Atlas::table`](crate::Atlas::table),
/// [`Predicate::parse`](crate::Predicate::parse) or an export.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The expression text is not a predicate; the error points at the token.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// No schema declares a dataset attribute or an array of this name.
    #[error("no dataset attribute or array is called {name:?}")]
    UnknownName {
        /// The name in the predicate.
        name: String,
    },
    /// The name is both a dataset attribute and an array; say which.
    #[error(
        "{name:?} is both a dataset attribute and an array: write @{name} for the attribute or {name}.min/.max/.nulls/.count for the array"
    )]
    AmbiguousName {
        /// The name in the predicate.
        name: String,
    },
    /// A predicate needs statistics the collection does not record: the
    /// array's type has no order, or a dataset's segment holds none for it.
    #[error("array {array:?} has no statistics to decide this{}", dataset.as_ref().map(|d| format!(" (dataset {d:?})")).unwrap_or_default())]
    NoStatistics {
        /// The array.
        array: String,
        /// The dataset lacking them, when it is one dataset rather than the type.
        dataset: Option<String>,
    },
    /// The literal cannot be compared with what is stored (a date against a float,
    /// a string against a number, a list attribute).
    #[error("{field}: cannot compare stored {} with {value}", stored_name(stored.as_ref()))]
    TypeMismatch {
        /// The field as written in the predicate.
        field: String,
        /// The stored type; `None` when the dataset stores nothing under the field.
        stored: Option<DType>,
        /// The literal.
        value: Value,
    },
    /// A comparison names a list attribute, which holds no single value to
    /// compare; only `exists` applies to it.
    #[error("{field}: a list attribute ({stored}) only answers exists")]
    ListAttribute {
        /// The field as written in the predicate.
        field: String,
        /// The attribute's stored type (a list).
        stored: DType,
    },
    /// A long table was asked for without any array.
    #[error("a table needs at least one array")]
    NoArrays,
    /// The arrays of a long table do not share their dimensions (names and
    /// lengths) within one dataset, so their elements cannot share rows.
    #[error("dataset {dataset:?}: arrays {arrays:?} do not share their dimensions ({shapes})")]
    DimensionsDiffer {
        /// The dataset.
        dataset: String,
        /// The arrays it declares among those asked for.
        arrays: Vec<String>,
        /// Each array's dimensions and lengths, as text.
        shapes: String,
    },
    /// The datasets declare an array of a long table with different element
    /// types, so it has no one column type.
    #[error(
        "array {array:?} is declared with different types ({}); ask for it where it has one",
        types.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    )]
    MixedArrayTypes {
        /// The array.
        array: String,
        /// The types declared, in order of first appearance.
        types: Vec<DType>,
    },
    /// An array of a long table holds elements no column here takes (bool, lists).
    #[error("array {array:?} holds {dtype} elements, which a table does not take")]
    UnsupportedArrayType {
        /// The array.
        array: String,
        /// Its element type.
        dtype: DType,
    },
    /// Arrow refused to build a table (catalogue or long table) or to write it
    /// as CSV or NDJSON.
    #[error("building the table failed")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// The Parquet writer failed.
    #[error("writing the table as Parquet failed")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// Writing an exported table (catalogue or long table) failed.
    #[error("writing the table failed")]
    Write(#[from] std::io::Error),
    /// Reading the collection failed.
    #[error(transparent)]
    Atlas(#[from] AtlasError),
}

impl QueryError {
    /// What kind of failure this is: a failed read is classed as the
    /// library classes it ([`AtlasError::class`]), a failed export write as
    /// storage, and the rest (the expression, the names, the table asked
    /// for) as the request.
    pub fn class(&self) -> crate::ErrorClass {
        match self {
            Self::Atlas(e) => e.class(),
            Self::Write(_) => crate::ErrorClass::Storage,
            _ => crate::ErrorClass::InvalidRequest,
        }
    }
}

/// An expression that does not parse: where, and why.
///
/// Its display shows the expression with a caret under the offending token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}\n  {expr}\n  {caret}^", caret = " ".repeat(self.column()))]
pub struct ParseError {
    /// The whole expression.
    pub expr: String,
    /// Byte offset of the offending token in `expr`.
    pub offset: usize,
    /// What was expected or found.
    pub message: String,
}

impl ParseError {
    /// The offending token's column in characters (where the caret goes).
    pub fn column(&self) -> usize {
        self.expr
            .get(..self.offset)
            .map_or(self.offset, |s| s.chars().count())
    }
}

/// A stored type as an error names it (`nothing` when none is stored).
fn stored_name(stored: Option<&DType>) -> String {
    stored.map_or_else(|| "nothing".to_owned(), DType::display_name)
}
