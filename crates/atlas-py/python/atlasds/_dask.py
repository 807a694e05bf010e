"""`to_dask_dataframe`: the long table of many datasets as a dask DataFrame.

The table is `Collection.to_arrow`'s (a row per element: `dataset`, an index
column per dimension, a column per array, the chosen dataset attributes), cut
into partitions that follow storage: `Collection.partitions` groups the
selected datasets into runs sharing a member and a data block of every array,
read off the segment footers, so a partition's task reads whole blocks and
30 000 datasets are tens of tasks, not 30 000. Building the DataFrame reads
metadata only (the footers, and each dataset's layout for the schema); each
task pickles the collection by location, reopens it once per worker process,
and builds its part of the table in one native call (GIL released).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Sequence

from ._collection import Collection, _nullable_pandas_dtype, as_collection
from ._errors import InvalidArgument

if TYPE_CHECKING:
    import pandas
    import pyarrow

__all__ = ["to_dask_dataframe"]


def _conform(table: pyarrow.Table, schema: pyarrow.Schema) -> pandas.DataFrame:
    """`table` (one partition) as a DataFrame with exactly the columns and
    dtypes of the whole table's `schema`: a partition may lack an index
    column the whole table has, or have a narrower one; `dataset` becomes a
    plain string column (each partition's dictionary differs)."""
    import pyarrow as pa

    columns = []
    fields = []
    for field in schema:
        target = pa.string() if pa.types.is_dictionary(field.type) else field.type
        if field.name in table.column_names:
            column = table.column(field.name)
        else:
            column = pa.nulls(table.num_rows, target)
        if column.type != target:
            column = column.cast(target)
        columns.append(column)
        fields.append(pa.field(field.name, target))
    conformed = pa.Table.from_arrays(columns, schema=pa.schema(fields))
    return conformed.to_pandas(types_mapper=_nullable_pandas_dtype)


def _read_partition(
    names: list[str],
    collection: Collection,
    arrays: list[str],
    attrs: list[str],
    schema: pyarrow.Schema,
) -> pandas.DataFrame:
    """One partition: the long table of `names`, read in one native call."""
    table = collection._table(arrays, None, attrs, None, True, names).read_all()
    return _conform(table, schema)


def to_dask_dataframe(
    source: Collection | str | os.PathLike[str],
    arrays: str | Sequence[str],
    where: str | None = None,
    attrs: Sequence[str] | None = None,
    *,
    storage_options: dict[str, Any] | None = None,
    datasets_per_partition: int | None = None,
) -> Any:
    """The long table of `arrays` over every live dataset (or those an
    `atlas --where` expression selects) as a lazy `dask.dataframe.DataFrame`.

    Columns as `Collection.to_arrow` gives them (`dataset` as a string
    column, integer columns as pandas' nullable dtypes, as `to_pandas`), one
    partition per run of datasets sharing a storage block of every array
    (`Collection.partitions`); `datasets_per_partition` merges neighbouring
    runs of a member up to that many datasets and cuts longer runs. Building
    it reads segment footers and layouts, no array data; the partitions are
    read when computed, on whatever workers the dask scheduler has (the
    collection pickles by location and is opened once per worker process).
    `source` is a `Collection`, or a path or URL opened with
    `storage_options`.
    """
    import dask.dataframe as dd

    collection = as_collection(source, storage_options)
    if isinstance(arrays, str):
        arrays = [arrays]
    arrays = list(arrays)
    if isinstance(attrs, str):
        raise InvalidArgument("attrs takes a list of attribute keys, not one string")
    attrs = list(attrs or [])
    if where is not None and not isinstance(where, str):
        raise InvalidArgument(f"where must be a string expression, not {where!r}")
    # The schema of the whole table, before any value is read.
    schema = collection._table(arrays, where, attrs, None, False).schema
    meta = _conform(schema.empty_table(), schema)
    names = collection.select(where) if where is not None else collection.names()
    parts = collection.partitions(arrays, names, datasets_per_partition) if names else []
    if not parts:
        return dd.from_pandas(meta, npartitions=1)
    return dd.from_map(
        _read_partition,
        parts,
        collection=collection,
        arrays=arrays,
        attrs=attrs,
        schema=schema,
        meta=meta,
        label="atlas-table",
        enforce_metadata=False,
    )
