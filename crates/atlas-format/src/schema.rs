//! Dataset declarations: the owned form, borrowing views over a footer, and
//! the interner a writer uses to build the pools.

use indexmap::{IndexMap, IndexSet};
use smallvec::SmallVec;
use smol_str::SmolStr;

use crate::constants::HEADER_LEN;
use crate::dtype::DType;
use crate::error::{FormatError, Result};
use crate::footer::{Codec, CollectionFooter, InternedSchema, NameType, VariableEntry};

/// An owned dataset declaration: its arrays with their types and attribute
/// keys, and its dataset-level attribute keys.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DatasetSchema {
    /// Arrays in definition order.
    pub arrays: Vec<ArrayDecl>,
    /// Dataset-level attribute keys and value types, in set order.
    pub attributes: Vec<(SmolStr, DType)>,
}

/// One array of an owned [`DatasetSchema`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayDecl {
    /// Array name.
    pub name: SmolStr,
    /// Element type.
    pub dtype: DType,
    /// Array-level attribute keys and value types, in set order.
    pub attributes: Vec<(SmolStr, DType)>,
}

/// A borrowed view of one interned schema; resolves names on demand, copies none.
#[derive(Debug, Clone, Copy)]
pub struct SchemaView<'a> {
    footer: &'a CollectionFooter,
    schema: &'a InternedSchema,
    index: u32,
}

/// A borrowed view of one array declared by a schema.
#[derive(Debug, Clone, Copy)]
pub struct ArrayMeta<'a> {
    footer: &'a CollectionFooter,
    name: &'a str,
    dtype: &'a DType,
    position: u32,
    attributes: &'a [NameType],
}

impl CollectionFooter {
    /// The view of schema `index`, if it exists.
    pub fn schema_view(&self, index: u32) -> Option<SchemaView<'_>> {
        Some(SchemaView {
            footer: self,
            schema: self.schema(index)?,
            index,
        })
    }

    /// The view of schema `index`, or of a schema with no arrays and no
    /// attributes when the pool has no such entry. For callers whose index was
    /// checked when the footer was validated, so the fallback never shows.
    pub fn schema_view_or_empty(&self, index: u32) -> SchemaView<'_> {
        /// The schema that declares nothing.
        static EMPTY: InternedSchema = InternedSchema {
            arrays: SmallVec::new_const(),
            attrs: SmallVec::new_const(),
            array_attrs: SmallVec::new_const(),
        };
        SchemaView {
            footer: self,
            schema: self.schema(index).unwrap_or(&EMPTY),
            index,
        }
    }

    fn resolve<'a>(
        &'a self,
        pairs: &'a [NameType],
    ) -> impl Iterator<Item = (&'a str, &'a DType)> + 'a {
        pairs
            .iter()
            .filter_map(|&(name, dtype)| Some((self.string(name)?, self.dtype(dtype)?)))
    }
}

impl<'a> SchemaView<'a> {
    /// Index of this schema in the pool.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Number of arrays declared.
    pub fn array_count(&self) -> usize {
        self.schema.arrays.len()
    }

    /// Declared arrays, in definition order.
    pub fn arrays(&self) -> impl Iterator<Item = ArrayMeta<'a>> + 'a {
        let footer = self.footer;
        let schema = self.schema;
        schema
            .arrays
            .iter()
            .enumerate()
            .filter_map(move |(position, &(name, dtype))| {
                let position = u32::try_from(position).ok()?;
                let attributes = schema
                    .array_attrs
                    .iter()
                    .find(|(p, _)| *p == position)
                    .map_or(&[][..], |(_, keys)| keys.as_slice());
                Some(ArrayMeta {
                    footer,
                    name: footer.string(name)?,
                    dtype: footer.dtype(dtype)?,
                    position,
                    attributes,
                })
            })
    }

    /// The declared array called `name`.
    pub fn array(&self, name: &str) -> Option<ArrayMeta<'a>> {
        self.arrays().find(|a| a.name == name)
    }

    /// Dataset-level attribute keys with their value types.
    pub fn attributes(&self) -> impl Iterator<Item = (&'a str, &'a DType)> + 'a {
        self.footer.resolve(&self.schema.attrs)
    }

    /// The type of dataset-level attribute `key`, if declared.
    pub fn attribute_dtype(&self, key: &str) -> Option<&'a DType> {
        self.attributes().find(|(k, _)| *k == key).map(|(_, d)| d)
    }

    /// Whether any dataset-level attribute is declared.
    pub fn has_attributes(&self) -> bool {
        !self.schema.attrs.is_empty()
    }

    /// The owned copy of this schema.
    pub fn to_owned_schema(&self) -> DatasetSchema {
        DatasetSchema {
            arrays: self.arrays().map(|a| a.to_owned_decl()).collect(),
            attributes: owned_pairs(self.attributes()),
        }
    }
}

impl<'a> ArrayMeta<'a> {
    /// Array name.
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// Element type as the footer declares it.
    pub fn dtype(&self) -> &'a DType {
        self.dtype
    }

    /// Position in the dataset's definition order.
    pub fn position(&self) -> u32 {
        self.position
    }

    /// Array-level attribute keys with their value types.
    pub fn attributes(&self) -> impl Iterator<Item = (&'a str, &'a DType)> + 'a {
        self.footer.resolve(self.attributes)
    }

    /// The type of array-level attribute `key`, if declared.
    pub fn attribute_dtype(&self, key: &str) -> Option<&'a DType> {
        self.attributes().find(|(k, _)| *k == key).map(|(_, d)| d)
    }

    /// The owned copy of this declaration.
    pub fn to_owned_decl(&self) -> ArrayDecl {
        ArrayDecl {
            name: SmolStr::new(self.name),
            dtype: self.dtype.clone(),
            attributes: owned_pairs(self.attributes()),
        }
    }
}

fn owned_pairs<'a>(pairs: impl Iterator<Item = (&'a str, &'a DType)>) -> Vec<(SmolStr, DType)> {
    pairs.map(|(k, d)| (SmolStr::new(k), d.clone())).collect()
}

/// Builds a footer: interns strings, dtypes and schemas (each by content, one
/// map lookup), lays segments back to back, and keeps datasets in ordinal order.
#[derive(Debug, Default)]
pub struct FooterBuilder {
    codec: Codec,
    created_unix_ms: i64,
    strings: IndexSet<SmolStr>,
    dtypes: Vec<DType>,
    schemas: IndexSet<InternedSchema>,
    variables: Vec<VariableEntry>,
    datasets: IndexMap<SmolStr, u32>,
    next_offset: u64,
}

impl FooterBuilder {
    /// A builder for a container written with `codec`, created at `created_unix_ms`.
    pub fn new(codec: Codec, created_unix_ms: i64) -> Self {
        Self {
            codec,
            created_unix_ms,
            next_offset: HEADER_LEN,
            ..Self::default()
        }
    }

    /// The pool index of `s`, adding it on first use.
    pub fn intern_string(&mut self, s: &str) -> u32 {
        let index = match self.strings.get_index_of(s) {
            Some(i) => i,
            None => self.strings.insert_full(SmolStr::new(s)).0,
        };
        u32::try_from(index).unwrap_or(u32::MAX)
    }

    /// The pool index of `dtype`, adding it on first use (a pool holds a handful: a scan).
    pub fn intern_dtype(&mut self, dtype: &DType) -> u32 {
        let index = match self.dtypes.iter().position(|d| d == dtype) {
            Some(i) => i,
            None => {
                self.dtypes.push(dtype.clone());
                self.dtypes.len().saturating_sub(1)
            }
        };
        u32::try_from(index).unwrap_or(u32::MAX)
    }

    /// The pool index of `schema`, adding it on first use. Equal declarations share one index.
    pub fn intern_schema(&mut self, schema: &DatasetSchema) -> u32 {
        let pair = |b: &mut Self, name: &str, dtype: &DType| {
            (b.intern_string(name), b.intern_dtype(dtype))
        };
        let mut interned = InternedSchema::default();
        for (position, array) in schema.arrays.iter().enumerate() {
            interned.arrays.push(pair(self, &array.name, &array.dtype));
            if !array.attributes.is_empty() {
                let keys: SmallVec<[NameType; 4]> = array
                    .attributes
                    .iter()
                    .map(|(k, d)| pair(self, k, d))
                    .collect();
                interned
                    .array_attrs
                    .push((u32::try_from(position).unwrap_or(u32::MAX), keys));
            }
        }
        for (key, dtype) in &schema.attributes {
            interned.attrs.push(pair(self, key, dtype));
        }
        let (index, _) = self.schemas.insert_full(interned);
        u32::try_from(index).unwrap_or(u32::MAX)
    }

    /// Appends dataset `name` with schema `schema`; its ordinal is the count before it.
    pub fn push_dataset(&mut self, name: &str, schema: u32) -> Result<u32> {
        let ordinal = u32::try_from(self.datasets.len())
            .map_err(|_| FormatError::corrupt("more than u32::MAX datasets"))?;
        if self.datasets.contains_key(name) {
            return Err(FormatError::corrupt(format!(
                "dataset {name:?} added twice"
            )));
        }
        self.datasets.insert(SmolStr::new(name), schema);
        Ok(ordinal)
    }

    /// Appends the segment of variable `name`, `seg_len` bytes long, right after the previous one.
    pub fn push_variable(&mut self, name: &str, seg_len: u64) -> Result<VariableEntry> {
        let entry = VariableEntry {
            name: self.intern_string(name),
            seg_offset: self.next_offset,
            seg_len,
        };
        self.next_offset = self
            .next_offset
            .checked_add(seg_len)
            .ok_or_else(|| FormatError::corrupt("container larger than u64::MAX"))?;
        self.variables.push(entry);
        Ok(entry)
    }

    /// Where the next segment (or the footer) starts.
    pub fn next_offset(&self) -> u64 {
        self.next_offset
    }

    /// The finished footer.
    pub fn finish(self) -> CollectionFooter {
        CollectionFooter {
            version: crate::constants::FORMAT_VERSION,
            codec: self.codec,
            created_unix_ms: self.created_unix_ms,
            string_pool: self.strings.into_iter().collect(),
            dtype_pool: self.dtypes,
            schema_pool: self.schemas.into_iter().collect(),
            variables: self.variables,
            datasets: self.datasets,
        }
    }
}
