"""Collections and dataset handles: the numpy-level API.

A `Collection` is an open Atlas collection; `collection[name]` gives a `Dataset`
handle. Both pickle by location (and options), and unpickling reuses the
process's open collection of that location, so a dask worker opens a
collection once however many tasks it runs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Literal, Mapping, Sequence

import numpy as np

from . import _native
from ._errors import InvalidArgument

if TYPE_CHECKING:
    import pandas
    import pyarrow

__all__ = ["ArrayLayout", "ArrayStats", "Collection", "Dataset", "DeleteResult"]

_NUMERIC = {
    "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64",
    "float32", "float64",
}  # fmt: skip


def numpy_dtype(atlas_dtype: str) -> np.dtype:
    """The numpy dtype `Dataset.read` returns for an Atlas dtype name."""
    if atlas_dtype in _NUMERIC or atlas_dtype == "bool":
        return np.dtype(atlas_dtype)
    if atlas_dtype == "timestamp_ns":
        return np.dtype("datetime64[ns]")
    if atlas_dtype in ("string", "binary"):
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


@dataclass(frozen=True)
class DeleteResult:
    """What `Collection.delete` did."""

    deleted: int
    """Datasets named (all hidden now)."""
    guarantee: Literal["conditional", "last_writer_wins"]
    """`conditional`: a concurrent delete cannot have been lost; `last_writer_wins`: it may have been."""


def _region(
    key: Any, shape: Sequence[int]
) -> tuple[list[int], list[int], list[int]]:
    """numpy basic indexing (ints, step-1 slices, one `...`) as start, extent and the kept axes."""
    if not isinstance(key, tuple):
        key = (key,)
    ellipses = [i for i, k in enumerate(key) if k is Ellipsis]
    if len(ellipses) > 1:
        raise InvalidArgument("an index can only have one ellipsis ('...')")
    if ellipses:
        at = ellipses[0]
        missing = len(shape) - (len(key) - 1)
        if missing < 0:
            raise InvalidArgument(
                f"too many indices: {len(key) - 1} for an array of rank {len(shape)}"
            )
        key = key[:at] + (slice(None),) * missing + key[at + 1 :]
    if len(key) > len(shape):
        raise InvalidArgument(
            f"too many indices: {len(key)} for an array of rank {len(shape)}"
        )
    key = key + (slice(None),) * (len(shape) - len(key))
    start: list[int] = []
    extent: list[int] = []
    kept: list[int] = []
    for axis, (k, n) in enumerate(zip(key, shape)):
        if isinstance(k, (bool, np.bool_)):
            raise InvalidArgument(f"axis {axis}: boolean indices are not supported")
        if isinstance(k, (int, np.integer)):
            i = int(k)
            if i < 0:
                i += n
            if not 0 <= i < n:
                raise InvalidArgument(
                    f"axis {axis}: index {int(k)} is out of bounds for length {n}"
                )
            start.append(i)
            extent.append(1)
        elif isinstance(k, slice):
            s, e, step = k.indices(n)
            if step != 1:
                raise InvalidArgument(
                    f"axis {axis}: only slices with step 1 are supported, got {step}"
                )
            count = max(0, e - s)
            start.append(s if count else min(s, n))
            extent.append(count)
            kept.append(axis)
        else:
            raise InvalidArgument(
                f"axis {axis}: unsupported index {k!r} (ints, slices with step 1 and ... only)"
            )
    return start, extent, kept


def _location(url_or_path: str | os.PathLike[str]) -> str:
    location = os.fspath(url_or_path)
    if "://" in location:
        return location
    return os.path.abspath(location)


def _reopen(location: str, storage_options: dict[str, Any] | None) -> Collection:
    """Unpickling: this process's open collection of `location`, opened on first use."""
    return Collection.open(location, storage_options, cache=True)


class Collection:
    """An open Atlas collection: a mapping from live dataset names to `Dataset` handles.

    Open with `Collection.open`. Counting, listing and membership cost no I/O;
    statistics and attributes across every dataset cost one segment open per
    variable. Safe to share across threads; pickles by location.
    """

    __slots__ = ("_native", "_location", "_storage_options")

    def __init__(
        self,
        native: _native._Collection,
        location: str,
        storage_options: dict[str, Any] | None,
    ) -> None:
        self._native = native
        self._location = location
        self._storage_options = storage_options

    @classmethod
    def open(
        cls,
        url_or_path: str | os.PathLike[str],
        storage_options: Mapping[str, Any] | None = None,
        *,
        cache: bool = False,
    ) -> Collection:
        """Opens the collection at a local directory or `file://` URL (one read of the container's tail).

        `storage_options` are for object stores, which come later: for local
        paths it must be empty. With `cache`, reuse this process's open handle of
        the same location (what unpickling and the xarray backend do).
        """
        location = _location(url_or_path)
        options = dict(storage_options) if storage_options else None
        if options:
            raise InvalidArgument(
                f"{location}: storage_options are not supported for local paths "
                f"(got {sorted(options)})"
            )
        return cls(_native.open(location, cache), location, options)

    @property
    def location(self) -> str:
        """Where the collection is: an absolute path or a URL."""
        return self._location

    def __reduce__(self):
        return (_reopen, (self._location, self._storage_options))

    def __repr__(self) -> str:
        return f"<atlasds.Collection {self._location!r}: {len(self)} datasets>"

    def __len__(self) -> int:
        return len(self._native)

    def __iter__(self) -> Iterator[str]:
        return iter(self._native.names())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._native.contains(name)

    def __getitem__(self, name: str) -> Dataset:
        self._native.ordinal(name)  # NotFound unless live
        return Dataset(self, name)

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

    def delete(self, names: Sequence[str]) -> DeleteResult:
        """Hides the named datasets with one write of the deletion mask (all or nothing)."""
        if isinstance(names, str):
            raise InvalidArgument("delete takes a list of dataset names, not one string")
        count, conditional = self._native.delete(list(names))
        return DeleteResult(count, "conditional" if conditional else "last_writer_wins")

    def catalogue(
        self, format: Literal["pandas", "arrow"] = "pandas"
    ) -> pandas.DataFrame | pyarrow.Table:
        """One row per live dataset: name, ordinal, every dataset attribute, and
        per array `ARRAY.count`, `.nulls`, `.min`, `.max`.

        Costs one segment open per variable whatever the number of datasets.
        `format="arrow"` gives a `pyarrow.Table` instead of a DataFrame.
        """
        import pandas as pd

        if format not in ("pandas", "arrow"):
            raise InvalidArgument(f"format must be 'pandas' or 'arrow', not {format!r}")
        names, ordinals, attributes, stats = self._native.catalogue()
        columns: dict[str, Any] = {
            "name": names,
            "ordinal": np.asarray(ordinals, dtype=np.uint32),
        }
        for key, values in attributes.items():
            columns[key if key not in columns else f"attrs.{key}"] = values
        for array, rows in stats.items():
            counts = pd.array([None if r is None else r[0] for r in rows], dtype="UInt64")
            nulls = pd.array([None if r is None else r[1] for r in rows], dtype="UInt64")
            columns[f"{array}.count"] = counts
            columns[f"{array}.nulls"] = nulls
            columns[f"{array}.min"] = [None if r is None else r[2] for r in rows]
            columns[f"{array}.max"] = [None if r is None else r[3] for r in rows]
        frame = pd.DataFrame(columns)
        if format == "arrow":
            import pyarrow as pa

            return pa.Table.from_pandas(frame, preserve_index=False)
        return frame


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
        """Its position in the container, which never changes."""
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
        raw = self._collection._native.layout(self._name, array)
        return ArrayLayout(
            dtype=numpy_dtype(raw["dtype"]),
            atlas_dtype=raw["dtype"],
            shape=tuple(raw["shape"]),
            chunk_shape=tuple(raw["chunk_shape"]),
            dims=tuple(raw["dims"]),
            fill=raw["fill"],
        )

    def read(self, array: str, region: Any = None) -> np.ndarray:
        """The values of `array`, or of the region numpy basic indexing names
        (ints, slices with step 1, `...`), as a numpy array of the stored dtype.

        Timestamps come as `datetime64[ns]` with NaT where unwritten, strings
        and binary as object arrays. Unwritten elements of other arrays hold the
        fill value (see `layout`).
        """
        native = self._collection._native
        if region is None:
            return native.read(self._name, array, [], [])
        shape = native.layout(self._name, array)["shape"]
        start, extent, kept = _region(region, shape)
        values = native.read(self._name, array, start, extent)
        if len(kept) != len(extent):
            values = values.reshape([extent[axis] for axis in kept])
        return values

    def stats(self, array: str) -> ArrayStats | None:
        """Statistics of `array` as its segment records them (None if it records none)."""
        return ArrayStats._from(self._collection._native.stats(array, self._name))
