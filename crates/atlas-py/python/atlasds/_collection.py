"""Collections and dataset handles: numpy arrays, and the long table as
Arrow, pandas or a dask DataFrame.

A `Collection` is an open Atlas collection, either a collection set (many
member collections under one prefix, named by a `set.manifest`) or a lone
collection; `collection[name]` gives a `Dataset` handle. Both pickle by
location (and options), and unpickling reuses the process's open collection
of that location, so a dask worker opens a collection once however many
tasks it runs. The dask DataFrame's partitions follow storage:
`Collection.partitions` groups the selected datasets into runs sharing a
member and a data block of every array (read off the segment footers), so
30 000 datasets are tens of tasks, each building its part of the table in
one native call.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Literal, Sequence

import numpy as np

from . import _native
from ._errors import InvalidArgument, NotFound

if TYPE_CHECKING:
    import pandas
    import pyarrow

__all__ = [
    "HAS_STRINGDTYPE",
    "Strings",
    "ArrayLayout",
    "ArrayStats",
    "Collection",
    "Dataset",
    "DeleteResult",
    "VerifyResult",
    "to_dask_dataframe",
]

_NUMERIC = {
    "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64",
    "float32", "float64",
}  # fmt: skip


Strings = Literal["auto", "object", "stringdtype"]
"""How `Dataset.read` returns string arrays: `stringdtype` is numpy's
variable-width `StringDType` (numpy >= 2), `object` an array of `str`, and
`auto` the first when numpy has it."""

HAS_STRINGDTYPE = hasattr(np.dtypes, "StringDType")
"""Whether this numpy has `StringDType` (numpy >= 2)."""

READ_MANY_BATCH = 1000
"""Datasets `Collection.read_many` reads per native call by default."""


def _string_dtype(strings: Strings) -> np.dtype:
    """The numpy dtype string arrays are returned as."""
    if strings == "object" or (strings == "auto" and not HAS_STRINGDTYPE):
        return np.dtype(object)
    if strings in ("auto", "stringdtype"):
        if not HAS_STRINGDTYPE:
            raise InvalidArgument(
                f"strings='stringdtype' needs numpy >= 2 (this is numpy {np.__version__})"
            )
        return np.dtype(np.dtypes.StringDType())
    raise InvalidArgument(
        f"strings must be 'auto', 'object' or 'stringdtype', not {strings!r}"
    )


def _strings_as(values: np.ndarray, wanted: np.dtype, atlas_dtype: Any) -> np.ndarray:
    """`values` as `read` returns them: text in the `wanted` string dtype.
    Strings and binary both arrive as objects; an empty array says which by
    its layout (`atlas_dtype()`, asked only then)."""
    if values.dtype != object or wanted == values.dtype:
        return values
    if values.size:
        text = isinstance(next(iter(values.flat)), str)
    else:
        text = atlas_dtype() == "string"
    return values.astype(wanted) if text else values


def numpy_dtype(atlas_dtype: str, strings: Strings = "object") -> np.dtype:
    """The numpy dtype `Dataset.read` returns for an Atlas dtype name
    (`strings` as `Dataset.read` takes it; `object` unless asked)."""
    if atlas_dtype in _NUMERIC or atlas_dtype == "bool":
        return np.dtype(atlas_dtype)
    if atlas_dtype == "timestamp_ns":
        return np.dtype("datetime64[ns]")
    if atlas_dtype == "string":
        return _string_dtype(strings)
    if atlas_dtype == "binary":
        return np.dtype(object)
    raise InvalidArgument(f"dtype {atlas_dtype} has no numpy mapping yet")


def _attr_value(dtype: str, value: Any) -> Any:
    """Numeric scalars as numpy scalars of their own type; everything else as is."""
    if dtype in _NUMERIC:
        return np.dtype(dtype).type(value)
    return value


def _attrs(rows: list[tuple[str, str, Any]]) -> dict[str, Any]:
    return {key: _attr_value(dtype, value) for key, dtype, value in rows}


@dataclass(frozen=True)
class ArrayStats:
    """Statistics a segment records: elements (nulls included), nulls, min and max of the rest."""

    count: int
    nulls: int
    min: Any
    max: Any

    @classmethod
    def _from(cls, row: tuple[int, int, Any, Any] | None) -> ArrayStats | None:
        return None if row is None else cls(*row)


@dataclass(frozen=True)
class ArrayLayout:
    """What a segment records about one array."""

    dtype: np.dtype
    """The numpy dtype `read` returns."""
    atlas_dtype: str
    """The stored dtype's name (`float32`, `timestamp_ns`, `string`, ...)."""
    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    dims: tuple[str, ...]
    fill: Any
    """Value of unwritten elements, or None when the writer gave none."""

    @classmethod
    def _from(cls, raw: dict[str, Any]) -> ArrayLayout:
        return cls(
            dtype=numpy_dtype(raw["dtype"]),
            atlas_dtype=raw["dtype"],
            shape=tuple(raw["shape"]),
            chunk_shape=tuple(raw["chunk_shape"]),
            dims=tuple(raw["dims"]),
            fill=raw["fill"],
        )


@dataclass(frozen=True)
class DeleteResult:
    """What `Collection.delete` did."""

    deleted: int
    """Datasets named (all hidden now)."""
    guarantee: Literal["conditional", "locked", "last_writer_wins"]
    """`conditional` (checked write) or `locked` (local disk, a lock file held):
    a concurrent delete cannot have been lost; `last_writer_wins`: it may have been."""


@dataclass(frozen=True)
class VerifyResult:
    """What `Collection.verify` found."""

    sound: bool
    """No problem found (warnings allowed)."""
    problems: list[str]
    """Damage found: one message per problem."""
    warnings: list[str]
    """Tolerated oddities, e.g. names in the deletion mask that match no dataset."""
    checked: dict[str, int]
    """What was checked: variables, data_segments, segments_opened, datasets, arrays, elements, hidden."""

    def __bool__(self) -> bool:
        return self.sound


CONTAINER_FILE = "data.atlas"
"""The container's file name inside a collection directory."""

SET_MANIFEST_FILE = "set.manifest"
"""The manifest's file name at the root of a collection set."""


def _location(url_or_path: str | os.PathLike[str]) -> str:
    """An absolute path, or the URL as given (the library reads a URL or path
    naming `data.atlas` as its directory)."""
    location = os.fspath(url_or_path)
    if "://" not in location:
        return os.path.abspath(location)
    return location


# OpenDAL configuration keys of the backends a URL can name (S3, GCS, Azure
# Blob, HTTP), accepted as they are. The bucket, container and root come from
# the URL and are not options.
_OPENDAL_KEYS = frozenset(
    """
    enable_versioning endpoint region profile access_key_id secret_access_key
    session_token role_arn external_id role_session_name
    assume_role_duration_seconds assume_role_session_tags disable_config_load
    disable_ec2_metadata skip_signature allow_anonymous server_side_encryption
    server_side_encryption_aws_kms_key_id server_side_encryption_customer_algorithm
    server_side_encryption_customer_key server_side_encryption_customer_key_md5
    default_storage_class enable_virtual_host_style batch_max_operations
    delete_max_size disable_stat_with_override checksum_algorithm
    disable_write_with_if_match enable_write_with_append disable_list_objects_v2
    enable_request_payer default_acl scope service_account credential
    credential_path predefined_acl disable_vm_metadata token account_name
    account_key encryption_key encryption_key_sha256 encryption_algorithm
    sas_token username password
    """.split()
)

# fsspec / s3fs / gcsfs spellings and the keys they stand for.
_FSSPEC_KEYS = {
    "key": "access_key_id",
    "secret": "secret_access_key",
    "endpoint_url": "endpoint",
    "region_name": "region",
}
_CLIENT_KWARGS = ("endpoint_url", "region_name")


def _scheme(locations: tuple[str, ...]) -> str:
    for location in locations:
        if "://" in location:
            return location.split("://", 1)[0].lower()
    return ""


def _scalar(key: str, value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (str, int, float, np.integer, np.floating)):
        return str(value)
    raise InvalidArgument(f"storage_options[{key!r}] must be a string, number or bool, got {value!r}")


def _flag(key: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidArgument(f"storage_options[{key!r}] must be True or False, got {value!r}")
    return bool(value)


def _storage(
    options: dict[str, Any] | None, *locations: str
) -> tuple[list[tuple[str, str]], bool]:
    """`storage_options` as OpenDAL key/value strings, and the `anonymous` flag.

    Keys are the backend's OpenDAL keys (`endpoint`, `region`,
    `access_key_id`, ...), `anonymous`, or what fsspec users write: `anon`,
    `key`, `secret`, `token` (an S3 session token; on `gs://` a credentials
    file, or `"anon"`), `endpoint_url`, `region_name`, and `client_kwargs`
    holding `endpoint_url` / `region_name`. Any other key is refused by name.
    `locations` say which backend `token` is for."""
    config: dict[str, str] = {}
    anonymous = False
    scheme = _scheme(locations)

    def put(key: str, source: str, value: Any) -> None:
        text = _scalar(source, value)
        if text is None:
            return
        if key in config and config[key] != text:
            raise InvalidArgument(
                f"storage_options[{source!r}] sets {key!r} again, to another value"
            )
        config[key] = text

    for key, value in (options or {}).items():
        if not isinstance(key, str):
            raise InvalidArgument(f"storage_options keys are strings, got {key!r}")
        if key in ("anonymous", "anon"):
            anonymous = _flag(key, value)
        elif key in _FSSPEC_KEYS:
            put(_FSSPEC_KEYS[key], key, value)
        elif key == "client_kwargs":
            if not isinstance(value, Mapping):
                raise InvalidArgument(
                    f"storage_options['client_kwargs'] must be a dict, got {value!r}"
                )
            for inner, inner_value in value.items():
                if inner not in _CLIENT_KWARGS:
                    raise InvalidArgument(
                        f"storage_options['client_kwargs'][{inner!r}] is not supported "
                        f"(known: {', '.join(_CLIENT_KWARGS)})"
                    )
                put(_FSSPEC_KEYS[inner], f"client_kwargs.{inner}", inner_value)
        elif key == "token" and scheme in ("gs", "gcs"):
            if value == "anon":
                anonymous = True
            elif value in (None, "google_default", "cloud"):
                pass  # the default credential chain
            elif isinstance(value, (str, os.PathLike)) and os.path.isfile(value):
                put("credential_path", key, os.fspath(value))
            else:
                raise InvalidArgument(
                    "storage_options['token'] on gs:// is a credentials file, 'anon', "
                    f"'google_default' or 'cloud'; got {value!r}"
                )
        elif key == "token" and scheme in ("s3", "s3a", ""):
            put("session_token", key, value)
        elif key in _OPENDAL_KEYS:
            put(key, key, value)
        else:
            raise InvalidArgument(
                f"storage_options: unknown key {key!r} (fsspec keys: anon, key, secret, token, "
                "endpoint_url, region_name, client_kwargs; or the backend's OpenDAL keys "
                "such as endpoint, region, access_key_id)"
            )
    return list(config.items()), anonymous


def _reopen(
    location: str,
    storage_options: dict[str, Any] | None,
    open_options: dict[str, int] | None = None,
) -> Collection:
    """Unpickling: this process's open collection of `location`, opened on first use."""
    return Collection.open(location, storage_options, cache=True, **(open_options or {}))


class Collection(Mapping[str, "Dataset"]):
    """An open Atlas collection: a read-only `collections.abc.Mapping` from
    live dataset names (in ordinal order) to `Dataset` handles.

    The same class reads a collection set (`is_set`): its members' live
    datasets in commit order, oldest member first, where a name that a newer
    member holds again is that newer copy (`collection[name]`, reads,
    statistics, the catalogue and `select` all see it, never the older one).
    A lone collection reads as before (`is_set` is False).

    Open with `Collection.open`. `len`, iteration, `in`, `keys()`, `items()`,
    `values()` and `get()` cost no I/O (a set opens its members the first time
    one of them is needed: one container tail read each); a missing name
    raises `NotFound`, which is a `KeyError`. Statistics and attributes across
    every dataset cost one segment open per variable (per member). Safe to
    share across threads; pickles by location. Two `Collection` objects are
    equal only when they are the same handle (they are views of storage, not
    values).
    """

    __slots__ = ("_native", "_location", "_storage_options", "_open_options")

    def __init__(
        self,
        native: _native._Collection,
        location: str,
        storage_options: dict[str, Any] | None,
        open_options: dict[str, int] | None = None,
    ) -> None:
        self._native = native
        self._location = location
        self._storage_options = storage_options
        self._open_options = open_options

    @classmethod
    def open(
        cls,
        url_or_path: str | os.PathLike[str],
        storage_options: Mapping[str, Any] | None = None,
        *,
        cache: bool = False,
        block_cache_bytes: int | None = None,
        segment_prefetch_bytes: int | None = None,
        count_requests: bool = False,
        dataset_index: bool = True,
    ) -> Collection:
        """Opens the collection or collection set at a path or URL: one read
        of the set manifest, and where there is none (a lone collection) one
        read of the container's tail.

        URLs: `file://`, `s3://bucket/prefix`, `gs://`, `az://`, `http(s)://`.
        `storage_options` configures the backend, in fsspec's spelling (`anon`,
        `key`, `secret`, `token`, `endpoint_url`, `region_name`,
        `client_kwargs={"endpoint_url": ...}`) or as OpenDAL configuration keys
        (`endpoint`, `region`, `access_key_id`, ..., and `anonymous`), with
        string, number or bool values; an unknown key is refused by name. A
        local path ignores them. `block_cache_bytes` (decompressed blocks kept in memory, 0 for
        none) and `segment_prefetch_bytes` override the reader's defaults. With
        `cache`, reuse this process's open handle of the same location and
        options (what unpickling and the xarray backend do). With
        `count_requests`, the handle counts what it asks storage for
        (`request_stats`): for tests and measurements. With
        `dataset_index=False`, collection-wide questions read the segment
        footers even where a dataset index (`data.atlas.index`) would answer.
        """
        location = _location(url_or_path)
        options = dict(storage_options) if storage_options else None
        pairs, anonymous = _storage(options, location)
        open_options = {
            k: v
            for k, v in (
                ("block_cache_bytes", block_cache_bytes),
                ("segment_prefetch_bytes", segment_prefetch_bytes),
            )
            if v is not None
        }
        for k, v in open_options.items():
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise InvalidArgument(f"{k} must be a non-negative integer, got {v!r}")
        native = _native.open(
            location,
            cache,
            pairs,
            anonymous,
            block_cache_bytes,
            segment_prefetch_bytes,
            bool(count_requests),
            bool(dataset_index),
        )
        if count_requests:
            open_options["count_requests"] = True
        if not dataset_index:
            open_options["dataset_index"] = False
        return cls(native, location, options, open_options or None)

    @property
    def location(self) -> str:
        """Where the collection is: an absolute path or a URL."""
        return self._location

    @property
    def is_set(self) -> bool:
        """Whether this is a collection set (False: a lone collection). No I/O."""
        return self._native.is_set()

    @property
    def generation(self) -> int | None:
        """The set manifest's generation (how many commits it has had), as
        opened or as this handle's deletes left it; None for a lone collection."""
        return self._native.generation()

    def refresh(self) -> Collection:
        """A new handle on the same location at its newest generation, with
        this handle's options. This handle keeps reading the generation it
        opened: a compaction leaves the members it replaces on storage
        (retired) until `atlas cleanup` removes them after the retention."""
        return Collection.open(
            self._location, self._storage_options, cache=False, **(self._open_options or {})
        )

    @property
    def members(self) -> list[dict[str, Any]]:
        """The set's committed members, oldest commit first, as the manifest
        describes them (no I/O): dicts of `id`, `path` (relative to the set),
        `datasets_live`, `datasets_total`, `bytes` and `created_unix_ms`.
        `datasets_live` counts copies a newer member replaces. Empty for a
        lone collection."""
        return self._native.members()

    def __reduce__(self):
        return (_reopen, (self._location, self._storage_options, self._open_options))

    def __repr__(self) -> str:
        if self.is_set:
            members = len(self.members)
            return f"<atlasds.Collection set {self._location!r}: {members} members, {len(self)} datasets>"
        return f"<atlasds.Collection {self._location!r}: {len(self)} datasets>"

    def __len__(self) -> int:
        return len(self._native)

    def __iter__(self) -> Iterator[str]:
        return iter(self._native.names())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._native.contains(name)

    def __getitem__(self, name: str) -> Dataset:
        if not isinstance(name, str):
            raise NotFound(f"dataset names are strings, not {type(name).__name__}: {name!r}")
        self._native.ordinal(name)  # NotFound unless live
        return Dataset(self, name)

    # A handle, not a value: equal to itself only (Mapping would compare every item).
    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__

    def names(self) -> list[str]:
        """Live dataset names, in ordinal order."""
        return self._native.names()

    @property
    def arrays(self) -> list[str]:
        """Every array name any dataset declares."""
        return self._native.array_names()

    def stats(self, array: str) -> ArrayStats | None:
        """Statistics of `array` over every live dataset (one segment open)."""
        return ArrayStats._from(self._native.stats(array))

    def stats_by_dataset(self, array: str) -> dict[str, ArrayStats]:
        """Statistics of `array` per live dataset declaring it, in ordinal order (one segment open)."""
        return {
            name: ArrayStats(count, nulls, lo, hi)
            for name, _ordinal, count, nulls, lo, hi in self._native.stats_by_dataset(
                array
            )
        }

    def attrs_by_dataset(self, key: str, array: str | None = None) -> dict[str, Any]:
        """Attribute `key` of every live dataset declaring it (of `array` when given), in ordinal order."""
        return {
            name: _attr_value(dtype, value)
            for name, dtype, value in self._native.attrs_by_dataset(key, array)
        }

    def request_stats(self, reset: bool = False) -> dict[str, Any] | None:
        """What this handle has asked storage for, when opened with
        `count_requests=True` (None otherwise): `reads` (ranged GETs),
        `stats`, `lists`, `writes`, `requests` (all kinds), `bytes_read`, and
        `read_log`, every read as `(path, offset, length)` (offset None: the
        last `length` bytes; length None: to the end). With `reset`, counting
        starts again from zero after this snapshot."""
        return self._native.request_stats(reset)

    def read_many(
        self,
        array: str,
        names: Sequence[str] | None = None,
        *,
        strings: Strings = "auto",
        batch: int = READ_MANY_BATCH,
    ) -> Iterator[tuple[str, np.ndarray]]:
        """`(name, values)` for `array` of each of `names` (default: every live
        dataset, in ordinal order), in that order; each `values` is what
        `self[name].read(array, strings=strings)` gives. Reads `batch`
        datasets per native call with the GIL released (blocks decoded once,
        reads overlapped), so a loop over every dataset costs about what the
        same reads cost from Rust; memory holds one batch at a time. A name
        that is not live raises `NotFound`, a dataset without `array` too."""
        if isinstance(names, str):
            raise InvalidArgument("names takes a list of dataset names, not one string")
        if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
            raise InvalidArgument(f"batch must be a positive integer, got {batch!r}")
        wanted = _string_dtype(strings)
        listed = self.names() if names is None else list(names)
        return self._read_batches(array, listed, wanted, int(batch))

    def _read_batches(
        self, array: str, names: list[str], wanted: np.dtype, batch: int
    ) -> Iterator[tuple[str, np.ndarray]]:
        native = self._native
        for start in range(0, len(names), batch):
            chunk = names[start : start + batch]
            for name, values in zip(chunk, _native.read_many(native, array, chunk)):
                yield name, _strings_as(values, wanted, lambda n=name: native.layout(n, array)["dtype"])

    def select(self, where: str) -> list[str]:
        """Names of the live datasets an `atlas --where` expression accepts
        (e.g. ``"TEMP.max > 20 and cycle >= 3"``), in `names()` order. Reads
        segment footers only; a set first skips the members its manifest's
        summaries rule out."""
        if not isinstance(where, str):
            raise InvalidArgument(f"where must be a string expression, not {where!r}")
        return self._native.select(where)

    def delete(self, names: Sequence[str]) -> DeleteResult:
        """Hides the named datasets with one write of the deletion mask (all or
        nothing). In a set, each name is hidden in the member holding its live
        copy (then the manifest is committed), so an older copy in an older
        member does not come back."""
        if isinstance(names, str):
            raise InvalidArgument("delete takes a list of dataset names, not one string")
        count, guarantee = self._native.delete(list(names))
        return DeleteResult(count, guarantee)

    def write_index(self) -> tuple[int, int]:
        """Writes the dataset index (`data.atlas.index`, a Parquet file with one
        row per dataset) beside every container: the lone one, or each member
        of a set. Collections written by `atlasds.write` have one already; this
        is for collections written by other v8 writers or before indexes.
        Returns `(containers, bytes)`."""
        return self._native.write_index()

    def verify(self, deep: bool = False) -> VerifyResult:
        """Checks every segment, dataset and array the container names (`deep`:
        also recomputes every array's statistics from its values). Damage is
        reported, not raised. A set checks each member as a collection of its
        own (findings start with `member ID:`, counts are summed); the
        manifest's checksums are `atlas verify --deep`'s."""
        sound, problems, warnings, checked = self._native.verify(deep)
        return VerifyResult(sound, problems, warnings, checked)

    def catalogue(
        self,
        format: Literal["pandas", "arrow"] = "pandas",
        *,
        attributes: Sequence[str] | None = None,
        arrays: Sequence[str] | None = None,
        where: str | None = None,
    ) -> pandas.DataFrame | pyarrow.Table:
        """The table `atlas catalogue` prints: one row per live dataset with
        `name`, `ordinal`, `schema` (the interned schema's index), every
        dataset attribute typed as declared, and per array `ARRAY.count`,
        `.nulls`, `.min`, `.max` (timestamps in UTC).

        `attributes` and `arrays` keep only those columns, in that order;
        `where` keeps the rows an `atlas catalogue --where` expression selects.
        A set's table has a `member` column (the member id) after `name`, and
        `ordinal` is the position within that member; a lone collection's
        table has no `member` column.
        Costs one segment-footer read per variable involved, no array data.
        The table crosses from Rust as Arrow (the C stream interface);
        `format="arrow"` returns that `pyarrow.Table`, the default its
        `to_pandas()` with integer and bool columns as pandas' nullable
        dtypes (so a missing cell stays `<NA>`, not a float NaN).
        """
        if format not in ("pandas", "arrow"):
            raise InvalidArgument(f"format must be 'pandas' or 'arrow', not {format!r}")
        for label, names in (("attributes", attributes), ("arrays", arrays)):
            if isinstance(names, str):
                raise InvalidArgument(f"{label} takes a list of names, not one string")
        import pyarrow as pa

        stream = self._native.catalogue(
            None if attributes is None else list(attributes),
            None if arrays is None else list(arrays),
            where,
        )
        table = pa.RecordBatchReader.from_stream(stream).read_all()
        if format == "arrow":
            return table
        return table.to_pandas(types_mapper=_nullable_pandas_dtype)

    def to_arrow(
        self,
        variables: str | Sequence[str],
        where: str | None = None,
        attrs: Sequence[str] | None = None,
        *,
        rows_per_batch: int | None = None,
    ) -> pyarrow.Table:
        """The values of `variables` over every live dataset (or those an
        `atlas --where` expression selects) as one long `pyarrow.Table`, a row
        per element: `dataset` (dictionary-encoded), one index column per
        dimension (named after it), one column per variable in its stored
        type (NaN and fill values as stored; null where a dataset lacks it),
        then one column per `attrs` key. The variables must share their
        dimensions within each dataset; a dataset holding none of them has no
        rows. The table `atlas export` writes.

        Only the selected datasets are read (a set skips members by their
        summaries), through the same sweep as `read_many`, with the GIL
        released; the batches cross as Arrow (the C stream interface) without
        a copy. DuckDB (``duckdb.sql("SELECT ... FROM t")`` with ``t`` the
        table) and Polars (``polars.from_arrow(t)``) read it directly.
        """
        return self._table(variables, where, attrs, rows_per_batch, True).read_all()

    def to_arrow_batches(
        self,
        variables: str | Sequence[str],
        where: str | None = None,
        attrs: Sequence[str] | None = None,
        *,
        rows_per_batch: int | None = None,
    ) -> pyarrow.RecordBatchReader:
        """`to_arrow`'s table as a `pyarrow.RecordBatchReader` that reads each
        batch (`rows_per_batch` rows, 65 536 by default) as it is pulled, so
        the whole table never sits in memory. A failure while reading is
        raised by the reader (as a pyarrow error carrying the message)."""
        return self._table(variables, where, attrs, rows_per_batch, False)

    def partitions(
        self,
        arrays: str | Sequence[str],
        names: Sequence[str] | None = None,
        target_datasets: int | None = None,
    ) -> list[list[str]]:
        """`names` (default: every live dataset, in order) cut into runs that
        follow storage, for one task each: a run never spans two members of a
        set, and a new run starts where any of `arrays` enters a new data
        block, so a task reads its own blocks (plus, at most, the edge of the
        block before, where the writer tucked a small array into it).
        With `target_datasets`, neighbouring runs of a member are merged while
        they hold at most that many datasets, and a longer run is cut into
        pieces of that size. Reads segment footers only (one per array and
        member), never array data."""
        if isinstance(arrays, str):
            arrays = [arrays]
        if names is None:
            names = self.names()
        elif isinstance(names, str):
            raise InvalidArgument("names takes a list of dataset names, not one string")
        names = list(names)
        if target_datasets is not None and (
            isinstance(target_datasets, bool)
            or not isinstance(target_datasets, (int, np.integer))
            or target_datasets < 1
        ):
            raise InvalidArgument(
                f"target_datasets must be a positive integer, got {target_datasets!r}"
            )
        ranges = _native.partitions(
            self._native,
            list(arrays),
            names,
            None if target_datasets is None else int(target_datasets),
        )
        return [names[start:stop] for start, stop in ranges]

    def to_dask_dataframe(
        self,
        arrays: str | Sequence[str],
        where: str | None = None,
        attrs: Sequence[str] | None = None,
        *,
        datasets_per_partition: int | None = None,
    ) -> Any:
        """`to_arrow`'s long table of `arrays` over every live dataset (or
        those an `atlas --where` expression selects) as a lazy
        `dask.dataframe.DataFrame`.

        Columns as `to_arrow` gives them (`dataset` as a string column,
        integer columns as pandas' nullable dtypes, as `to_pandas`), one
        partition per run of datasets sharing a storage block of every array
        (`partitions`); `datasets_per_partition` merges neighbouring runs of
        a member up to that many datasets and cuts longer runs. Building it
        reads segment footers and layouts, no array data; the partitions are
        read when computed, on whatever workers the dask scheduler has (the
        collection pickles by location and is opened once per worker
        process), each in one native call (GIL released).
        """
        import dask.dataframe as dd

        if isinstance(arrays, str):
            arrays = [arrays]
        arrays = list(arrays)
        if isinstance(attrs, str):
            raise InvalidArgument("attrs takes a list of attribute keys, not one string")
        attrs = list(attrs or [])
        # The schema of the whole table, before any value is read.
        schema = self._table(arrays, where, attrs, None, False).schema
        meta = _conform(schema.empty_table(), schema)
        names = self.select(where) if where is not None else self.names()
        parts = self.partitions(arrays, names, datasets_per_partition) if names else []
        if not parts:
            return dd.from_pandas(meta, npartitions=1)
        return dd.from_map(
            _read_partition,
            parts,
            collection=self,
            arrays=arrays,
            attrs=attrs,
            schema=schema,
            meta=meta,
            label="atlas-table",
            enforce_metadata=False,
        )

    def to_pandas(
        self,
        variables: str | Sequence[str],
        where: str | None = None,
        attrs: Sequence[str] | None = None,
    ) -> pandas.DataFrame:
        """`to_arrow`'s table as a pandas DataFrame (`dataset` categorical,
        integer columns as pandas' nullable dtypes)."""
        return self.to_arrow(variables, where, attrs).to_pandas(
            types_mapper=_nullable_pandas_dtype
        )

    def _table(
        self,
        variables: str | Sequence[str],
        where: str | None,
        attrs: Sequence[str] | None,
        rows_per_batch: int | None,
        read_all: bool,
        names: list[str] | None = None,
    ) -> pyarrow.RecordBatchReader:
        import pyarrow as pa

        if isinstance(variables, str):
            variables = [variables]
        if isinstance(attrs, str):
            raise InvalidArgument("attrs takes a list of attribute keys, not one string")
        if where is not None and not isinstance(where, str):
            raise InvalidArgument(f"where must be a string expression, not {where!r}")
        if rows_per_batch is not None and rows_per_batch < 1:
            raise InvalidArgument(f"rows_per_batch must be at least 1, not {rows_per_batch}")
        stream = self._native.table(
            list(variables), list(attrs or []), where, rows_per_batch, read_all, names
        )
        return pa.RecordBatchReader.from_stream(stream)


def _nullable_pandas_dtype(arrow_type: Any) -> Any:
    """pandas' nullable dtype for an Arrow integer or bool type; None (the default) otherwise."""
    import pandas as pd
    import pyarrow as pa

    nullable = {
        pa.bool_(): pd.BooleanDtype(),
        pa.int8(): pd.Int8Dtype(),
        pa.int16(): pd.Int16Dtype(),
        pa.int32(): pd.Int32Dtype(),
        pa.int64(): pd.Int64Dtype(),
        pa.uint8(): pd.UInt8Dtype(),
        pa.uint16(): pd.UInt16Dtype(),
        pa.uint32(): pd.UInt32Dtype(),
        pa.uint64(): pd.UInt64Dtype(),
    }
    return nullable.get(arrow_type)


def _conform(table: pyarrow.Table, schema: pyarrow.Schema) -> pandas.DataFrame:
    """`table` (one partition of `to_dask_dataframe`) as a DataFrame with
    exactly the columns and dtypes of the whole table's `schema`: a partition
    may lack an index column the whole table has, or have a narrower one;
    `dataset` becomes a plain string column (each partition's dictionary differs)."""
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
    """One partition of `to_dask_dataframe`: the long table of `names`, read in one native call."""
    table = collection._table(arrays, None, attrs, None, True, names).read_all()
    return _conform(table, schema)


class Dataset:
    """One live dataset of a collection, looked up by name on every call."""

    __slots__ = ("_collection", "_name")

    def __init__(self, collection: Collection, name: str) -> None:
        self._collection = collection
        self._name = name

    def __reduce__(self):
        return (Dataset, (self._collection, self._name))

    def __repr__(self) -> str:
        return f"<atlasds.Dataset {self._name!r} of {self._collection.location!r}>"

    def __eq__(self, other: object) -> bool:
        """The same name in the same `Collection` handle."""
        if not isinstance(other, Dataset):
            return NotImplemented
        return self._collection is other._collection and self._name == other._name

    def __hash__(self) -> int:
        return hash((id(self._collection), self._name))

    @property
    def name(self) -> str:
        """The dataset's name."""
        return self._name

    @property
    def collection(self) -> Collection:
        """The collection it belongs to."""
        return self._collection

    @property
    def ordinal(self) -> int:
        """Its position in the container (its member's, in a set), which never changes."""
        return self._collection._native.ordinal(self._name)

    @property
    def arrays(self) -> list[str]:
        """The arrays it declares, in declaration order (no I/O)."""
        return self._collection._native.arrays(self._name)

    @property
    def attrs(self) -> dict[str, Any]:
        """Dataset attributes in the order they were set."""
        return _attrs(self._collection._native.attrs(self._name))

    def array_attrs(self, array: str) -> dict[str, Any]:
        """Attributes of `array` in the order they were set."""
        return _attrs(self._collection._native.array_attrs(self._name, array))

    def layout(self, array: str) -> ArrayLayout:
        """Dtype, shape, chunking, dimension names and fill value of `array`."""
        return ArrayLayout._from(self._collection._native.layout(self._name, array))

    def describe(self) -> tuple[dict[str, Any], dict[str, tuple[ArrayLayout, dict[str, Any]]]]:
        """Dataset attributes and, per array in declaration order, its layout
        and attributes, in one call (what an xarray node needs)."""
        attrs, arrays = self._collection._native.describe(self._name)
        return _attrs(attrs), {
            name: (ArrayLayout._from(layout), _attrs(array_attrs))
            for name, layout, array_attrs in arrays
        }

    def read(self, array: str, region: Any = None, *, strings: Strings = "auto") -> np.ndarray:
        """The values of `array`, or of the part numpy basic indexing `region`
        names, as a numpy array of the stored dtype: `ds.read("T", (0, slice(2, None, 3)))`
        is `ds.read("T")[0, 2::3]` without reading the rest.

        Ints (negative from the end), slices (any step; bounds clamped as
        numpy does), one `...`, or a tuple of them; axes not named are whole.
        Anything numpy would refuse, or that basic indexing cannot say (an
        index out of bounds, too many indices, a zero step, lists, arrays,
        bools, `None` axes), raises `InvalidArgument`. The key is interpreted
        once, in the Rust extension, for every caller (the xarray backend and
        `open_mfdataarray` included). A stepped slice reads the block it spans.

        Timestamps come as `datetime64[ns]` with NaT where unwritten, binary as
        an object array of `bytes`. Strings come as numpy's `StringDType` when
        numpy has it (numpy >= 2) and as an object array of `str` otherwise;
        `strings="object"` or `"stringdtype"` asks for one of them (the second
        fails with `InvalidArgument` on numpy 1). Unwritten elements of other
        arrays hold the fill value (see `layout`).
        """
        wanted = _string_dtype(strings)
        native = self._collection._native
        values = native.read(self._name, array, region)
        return _strings_as(values, wanted, lambda: native.layout(self._name, array)["dtype"])

    def stats(self, array: str) -> ArrayStats | None:
        """Statistics of `array` as its segment records them (None if it records none)."""
        return ArrayStats._from(self._collection._native.stats(array, self._name))


def as_collection(
    source: Any,
    storage_options: dict[str, Any] | None,
    refusal: str = "expected a path, URL or atlasds.Collection",
) -> Collection:
    """`source` as a Collection: itself, or a path or URL opened through the
    handle cache (so tasks on one worker share one open); anything else is
    refused with `refusal` and the type it got."""
    if isinstance(source, Collection):
        return source
    if isinstance(source, (str, os.PathLike)):
        return Collection.open(source, storage_options, cache=True)
    raise InvalidArgument(f"{refusal}, not {type(source).__name__}")


def to_dask_dataframe(
    source: Collection | str | os.PathLike[str],
    arrays: str | Sequence[str],
    where: str | None = None,
    attrs: Sequence[str] | None = None,
    *,
    storage_options: dict[str, Any] | None = None,
    datasets_per_partition: int | None = None,
) -> Any:
    """`Collection.to_dask_dataframe` of `source`: a `Collection`, or a path
    or URL opened with `storage_options` (once per process, see `as_collection`)."""
    return as_collection(source, storage_options).to_dask_dataframe(
        arrays, where, attrs, datasets_per_partition=datasets_per_partition
    )
