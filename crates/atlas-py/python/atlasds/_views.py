"""Many datasets of a collection as one lazy `xarray.Dataset`.

`open_dataset(path, variables=[...], where=..., layout=...)` gives either

- ``layout="ragged"``: the CF discrete-sampling-geometry *contiguous ragged
  array* form. Dimension ``obs`` holds every selected dataset's elements end
  to end, dimension ``profile`` one entry per dataset; ``row_size(profile)``
  (``sample_dimension = "obs"``) says how many ``obs`` each dataset owns.
- ``layout="padded"``: each variable stacked along ``profile`` and padded to
  the longest dataset with the missing value (argopy's profile form).

Variables holding one element in every dataset (``JULD``, ``LATITUDE``, a
rank-0 array) are per-dataset variables along ``profile`` in both layouts;
the dataset name is the ``dataset(profile)`` coordinate (``cf_role =
"profile_id"``), and the dataset attributes named in ``attrs`` become
variables along ``profile``. Opening reads metadata only (segment footers:
one segment open per variable). Values are dask arrays whose chunks are runs
of consecutive datasets sharing a member and a storage block of every
variable (`Collection.partitions`, from the segment footers), at most
``datasets_per_chunk`` datasets each, read by one native call per chunk and
variable (`_native.read_concat`), so 30 000 datasets are tens of tasks. Fill values travel as ``_FillValue`` and are masked by xarray's CF
decoding exactly as the ``atlas`` engine masks one dataset.
"""

from __future__ import annotations

import functools
import json
import os
import uuid
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Sequence

import numpy as np

from . import _native
from ._collection import Collection, as_collection, numpy_dtype
from ._errors import InvalidArgument

__all__ = ["open_dataset", "DATASETS_PER_CHUNK", "COORDS_ATTRIBUTE", "MISSING_TEXT_ATTRIBUTE"]

DATASETS_PER_CHUNK = 1000
"""Datasets one dask chunk (one task per variable) covers by default."""

PROFILE_DIM = "profile"
OBS_DIM = "obs"
NAME_VARIABLE = "dataset"
ROW_SIZE = "row_size"

Layout = Literal["ragged", "padded"]

COORDS_ATTRIBUTE = "_pyatlas_coords"
"""Dataset attribute naming the coordinate variables, as a JSON list (v8 tooling writes it)."""

MISSING_TEXT_ATTRIBUTE = "_atlas_missing_text"
"""Array attribute of the NetCDF ingest: cells holding this text are missing (NaN)."""

# Attributes of a timestamp array that would make xarray decode it a second time.
_TIME_ENCODING = ("units", "calendar", "_FillValue")
# How a text array's bytes became text; xarray would decode str a second time.
_TEXT_ENCODING = "_Encoding"
# Per-dataset variables made coordinates even without `_pyatlas_coords`.
_SPACE_TIME = {"time", "latitude", "longitude"}
_SPACE_TIME_NAMES = {"time", "juld", "latitude", "longitude", "lat", "lon"}


@dataclass
class _Var:
    """One variable over the selected datasets, as the footers describe it."""

    name: str
    atlas_dtype: str
    dtype: np.dtype  # what `read_concat` returns
    fill: Any
    dims: tuple[str, ...]
    ranks: np.ndarray  # int64 per dataset, -1 where it does not declare the variable
    shape: np.ndarray  # int64 (datasets, largest rank), each row padded with 1
    attrs: dict[str, Any]

    @property
    def present(self) -> np.ndarray:
        return self.ranks >= 0

    @property
    def sizes(self) -> np.ndarray:
        return np.where(self.present, self.shape.prod(axis=1), 0)

    @property
    def per_dataset(self) -> bool:
        """One element in every dataset declaring it (a scalar of each dataset)."""
        return bool(np.all(self.shape[self.present] == 1))

    @property
    def complete(self) -> bool:
        return bool(np.all(self.present))


def _describe(collection: Collection, variables: list[str], names: list[str]) -> list[_Var]:
    found = _native.shapes(collection._native, variables, names)
    out = []
    for name in variables:
        entry = found[name]
        if entry["dtype"] is None:
            raise InvalidArgument(f"no selected dataset of {collection.location} holds {name!r}")
        ranks = entry["ranks"]
        first = int(np.flatnonzero(ranks >= 0)[0])
        attrs = collection[names[first]].array_attrs(name)
        out.append(
            _Var(
                name=name,
                atlas_dtype=entry["dtype"],
                dtype=numpy_dtype(entry["dtype"]),
                fill=entry["fill"],
                dims=tuple(entry["dims"]),
                ranks=ranks,
                shape=entry["shape"],
                attrs=attrs,
            )
        )
    return out


def _pad_value(var: _Var, dtype: np.dtype) -> Any:
    """What a missing element holds before decoding: the fill value, which
    xarray masks, or a value that is already missing."""
    if dtype.kind == "M":
        return np.datetime64("NaT", "ns")
    if var.fill is not None and dtype.kind in "iuf":
        return dtype.type(var.fill)
    if dtype.kind == "f":
        return np.nan
    if dtype.kind == "O":
        missing = var.attrs.get(MISSING_TEXT_ATTRIBUTE)
        return missing if isinstance(missing, str) else np.nan
    raise InvalidArgument(f"{var.name!r} has no missing value to pad {dtype} with")


def _encoded_dtype(var: _Var, needs_padding: bool) -> np.dtype:
    """The dtype of the values handed to xarray before CF decoding: integers
    without a fill value that must be padded become float64 (NaN padding)."""
    if needs_padding and var.dtype.kind in "iu" and var.fill is None:
        return np.dtype("float64")
    if var.dtype.kind == "b" and needs_padding:
        return np.dtype("float64")
    return var.dtype


def _obs_chunk(
    collection: Collection,
    var: str,
    names: list[str],
    rows: np.ndarray,
    dtype: np.dtype,
    pad: Any,
) -> np.ndarray:
    """`var` of `names` end to end, each dataset's part `rows` long (a
    dataset lacking it is padded)."""
    values, counts, _shapes, _fill = _native.read_concat(collection._native, var, names)
    if values is not None and np.array_equal(counts, rows):
        return values.astype(dtype, copy=False)
    out = np.full(int(rows.sum()), pad, dtype=dtype)
    if values is None:
        return out
    starts = np.concatenate(([0], np.cumsum(rows)[:-1]))
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1]))
    for start, offset, n in zip(starts, offsets, counts):
        out[start : start + n] = values[offset : offset + n]
    return out


def _padded_chunk(
    collection: Collection,
    var: str,
    names: list[str],
    shape: tuple[int, ...],
    dtype: np.dtype,
    pad: Any,
) -> np.ndarray:
    """`var` of `names` stacked along a new first axis, each padded to `shape`."""
    values, counts, shapes, _fill = _native.read_concat(collection._native, var, names)
    if pad is None:  # every dataset fills `shape` exactly
        out = np.empty((len(names), *shape), dtype=dtype)
    else:
        out = np.full((len(names), *shape), pad, dtype=dtype)
    if values is None:
        return out
    if len(shape) == 1:
        # Every dataset's elements at once: row i takes its first counts[i] cells.
        rows = np.repeat(np.arange(len(names)), counts)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        cols = np.arange(len(values)) - np.repeat(starts, counts)
        out[rows, cols] = values
        return out
    offset = 0
    for i, s in enumerate(shapes):
        if s is None:
            continue
        n = int(np.prod(s, dtype=np.int64))
        part = values[offset : offset + n].reshape(s)
        out[(i, *(slice(0, k) for k in s))] = part
        offset += n
    return out


def _task(key: str, func: Any, *args: Any) -> Any:
    """A dask task calling `func(*args)` under `key`: the arguments (a
    thousand names) are neither traversed nor hashed, which `dask.delayed`
    would do for each chunk."""
    import dask

    call = functools.partial(func, *args)
    return dask.delayed(call, name=f"{key}-call", pure=False)(dask_key_name=key)


def _groups(
    collection: Collection, variables: list[str], names: list[str], per_chunk: int
) -> list[slice]:
    """`names` cut into runs sharing a member and the storage blocks of
    `variables`, at most `per_chunk` datasets each (footers only)."""
    if not names or not variables:
        return [slice(i, min(i + per_chunk, len(names))) for i in range(0, len(names), per_chunk)]
    ranges = _native.partitions(collection._native, variables, names, per_chunk)
    return [slice(start, stop) for start, stop in ranges]


def _dask_array(parts: list[tuple[Any, tuple[int, ...]]], dtype: np.dtype) -> Any:
    import dask.array as da

    arrays = [da.from_delayed(task, shape=shape, dtype=dtype) for task, shape in parts]
    if not arrays:
        return da.empty((0,), dtype=dtype)
    return da.concatenate(arrays, axis=0)


def cf_encoding(
    atlas_dtype: str, fill: Any, dtype: np.dtype, attrs: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """An array's stored attributes as xarray's CF decoding wants them, and
    its encoding: the fill value of numbers as ``_FillValue`` (masked to
    NaN), a timestamp's ``units``/``calendar`` moved to encoding (it is
    decoded already), ``_Encoding`` of text moved to encoding, and the
    ingest's missing text as the ``_FillValue`` text is masked with.
    The one mapping for one dataset (the engine) and for many (`open_dataset`)."""
    attrs = dict(attrs)
    encoding: dict[str, Any] = {}
    if atlas_dtype == "timestamp_ns":
        for key in _TIME_ENCODING:
            if key in attrs:
                encoding[key] = attrs.pop(key)
    elif fill is not None and dtype.kind in "iuf":
        attrs["_FillValue"] = dtype.type(fill)
    elif atlas_dtype == "string":
        if _TEXT_ENCODING in attrs:
            encoding[_TEXT_ENCODING] = attrs.pop(_TEXT_ENCODING)
        missing = attrs.pop(MISSING_TEXT_ATTRIBUTE, None)
        if isinstance(missing, str):
            # xarray's mask: cells equal to it become NaN, and it moves to encoding.
            attrs["_FillValue"] = missing
    return attrs, encoding


def _attr_variable(collection: Collection, key: str, names: list[str]) -> np.ndarray:
    """Dataset attribute `key` of each dataset as one array (missing: NaN or None)."""
    found = collection.attrs_by_dataset(key)
    values = [found.get(n) for n in names]
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in present):
        if len(present) == len(values):
            return np.asarray(values)
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _coordinate_names(collection: Collection, names: list[str], per_dataset: list[_Var]) -> set[str]:
    coords: set[str] = set()
    if names:
        raw = collection[names[0]].attrs.get(COORDS_ATTRIBUTE)
        if isinstance(raw, str):
            try:
                listed = json.loads(raw)
            except ValueError:
                listed = []
            if isinstance(listed, list):
                coords.update(n for n in listed if isinstance(n, str))
    for var in per_dataset:
        units = str(var.attrs.get("units", "")).lower()
        if (
            str(var.attrs.get("standard_name", "")).lower() in _SPACE_TIME
            or var.name.lower() in _SPACE_TIME_NAMES
            or units in ("degree_north", "degrees_north", "degree_east", "degrees_east")
            or var.atlas_dtype == "timestamp_ns"
        ):
            coords.add(var.name)
    return coords


def open_dataset(
    source: Collection | str | os.PathLike[str],
    variables: Sequence[str] | None = None,
    *,
    where: str | None = None,
    layout: Layout = "ragged",
    attrs: Iterable[str] = (),
    storage_options: dict[str, Any] | None = None,
    datasets_per_chunk: int = DATASETS_PER_CHUNK,
    decode: dict[str, Any] | None = None,
) -> Any:
    """Many datasets of a collection as one lazy `xarray.Dataset` (see the module doc).

    `variables`: the arrays to include (default: every array of the
    collection); those with more than one element per dataset share the
    ``obs`` dimension (ragged) or are padded (padded), flattened row-major
    when of rank > 1 (ragged). `where`: an `atlas --where` expression
    choosing the datasets (as `Collection.select`); default every live
    dataset, in collection order. `attrs`: dataset attributes to carry as
    variables along ``profile``. Raises `InvalidArgument` for an unknown
    layout, a variable no selected dataset holds, or (ragged) variables
    whose per-dataset lengths differ.
    """
    import xarray as xr

    if layout not in ("ragged", "padded"):
        raise InvalidArgument(f"layout must be 'ragged' or 'padded', not {layout!r}")
    if isinstance(datasets_per_chunk, bool) or not isinstance(datasets_per_chunk, (int, np.integer)) or datasets_per_chunk < 1:
        raise InvalidArgument(f"datasets_per_chunk must be a positive integer, got {datasets_per_chunk!r}")
    collection = as_collection(source, storage_options)
    names = collection.select(where) if where is not None else list(collection)
    if isinstance(variables, str):
        variables = [variables]
    wanted = list(variables) if variables is not None else collection.arrays
    described = _describe(collection, wanted, names) if names else []
    per_dataset = [v for v in described if v.per_dataset]
    along = [v for v in described if not v.per_dataset]
    groups = _groups(collection, [v.name for v in described], names, int(datasets_per_chunk))
    token = uuid.uuid4().hex
    variables_out: dict[str, xr.Variable] = {}

    for var in per_dataset:
        needs_padding = not var.complete
        dtype = _encoded_dtype(var, needs_padding)
        pad = _pad_value(var, dtype) if needs_padding else None
        rows = np.ones(len(names), dtype=np.int64)
        parts = [
            (
                _task(f"atlas-{var.name}-{token}-{i}", _obs_chunk, collection, var.name, names[g], rows[g], dtype, pad),
                (g.stop - g.start,),
            )
            for i, g in enumerate(groups)
        ]
        a, enc = cf_encoding(var.atlas_dtype, var.fill, dtype, var.attrs)
        variables_out[var.name] = xr.Variable((PROFILE_DIM,), _dask_array(parts, dtype), attrs=a, encoding=enc)

    row_size = np.zeros(len(names), dtype=np.int64)
    if layout == "ragged" and along:
        first = along[0]
        row_size = first.sizes
        for var in along[1:]:
            sizes = var.sizes
            both = var.present & first.present
            if not np.array_equal(sizes[both], row_size[both]):
                i = int(np.flatnonzero(sizes[both] != row_size[both])[0])
                name = np.asarray(names, dtype=object)[both][i]
                raise InvalidArgument(
                    f"{var.name!r} and {first.name!r} have different lengths in {name!r}: "
                    "a ragged view needs one obs length per dataset (open them separately)"
                )
            row_size = np.maximum(row_size, sizes)
        obs_coords = []
        for var in along:
            needs_padding = not np.array_equal(var.sizes, row_size)
            dtype = _encoded_dtype(var, needs_padding)
            pad = _pad_value(var, dtype) if needs_padding else None
            parts = [
                (
                    _task(f"atlas-{var.name}-{token}-{i}", _obs_chunk, collection, var.name, names[g], row_size[g], dtype, pad),
                    (int(row_size[g].sum()),),
                )
                for i, g in enumerate(groups)
            ]
            a, enc = cf_encoding(var.atlas_dtype, var.fill, dtype, var.attrs)
            variables_out[var.name] = xr.Variable((OBS_DIM,), _dask_array(parts, dtype), attrs=a, encoding=enc)
            obs_coords.append(var.name)
    elif layout == "padded":
        for var in along:
            ranks = var.ranks[var.present]
            rank = int(ranks.max())
            if np.any(ranks != rank):
                raise InvalidArgument(f"{var.name!r} has different ranks across datasets")
            stored = var.shape[var.present]
            shape = tuple(int(n) for n in stored.max(axis=0))
            needs_padding = not var.complete or bool(np.any(stored != np.array(shape, dtype=np.int64)))
            dtype = _encoded_dtype(var, needs_padding)
            pad = _pad_value(var, dtype) if needs_padding else None
            parts = [
                (
                    _task(f"atlas-{var.name}-{token}-{i}", _padded_chunk, collection, var.name, names[g], shape, dtype, pad),
                    (g.stop - g.start, *shape),
                )
                for i, g in enumerate(groups)
            ]
            dims = var.dims if len(var.dims) == rank and all(var.dims) else tuple(f"{var.name}_dim_{i}" for i in range(rank))
            a, enc = cf_encoding(var.atlas_dtype, var.fill, dtype, var.attrs)
            variables_out[var.name] = xr.Variable((PROFILE_DIM, *dims), _dask_array(parts, dtype), attrs=a, encoding=enc)

    for key in attrs:
        variables_out[key] = xr.Variable((PROFILE_DIM,), _attr_variable(collection, key, names), attrs={"long_name": f"dataset attribute {key}"})

    decoders = dict(decode or {})
    decoded, global_attrs, coord_names = xr.conventions.decode_cf_variables(variables_out, {}, **decoders)
    coords = set(coord_names) | (_coordinate_names(collection, names, per_dataset) & set(decoded))
    name_array = np.empty(len(names), dtype=object)
    name_array[:] = names
    coord_vars: dict[str, Any] = {
        NAME_VARIABLE: xr.Variable((PROFILE_DIM,), name_array, attrs={"cf_role": "profile_id", "long_name": "dataset name"}),
    }
    coord_vars.update({k: v for k, v in decoded.items() if k in coords})
    data_vars = {k: v for k, v in decoded.items() if k not in coords}
    global_attrs = {
        "featureType": "profile",
        "Conventions": "CF-1.11",
        "source": f"atlas collection {collection.location}",
    }
    if layout == "ragged":
        data_vars[ROW_SIZE] = xr.Variable(
            (PROFILE_DIM,),
            row_size,
            attrs={"sample_dimension": OBS_DIM, "long_name": "number of obs of each profile"},
        )
        # CF: the obs variables name the per-profile coordinates.
        profile_coords = " ".join(sorted(k for k in coord_vars if k != NAME_VARIABLE))
        for k, v in data_vars.items():
            if OBS_DIM in v.dims and profile_coords:
                v.encoding["coordinates"] = profile_coords
    else:
        global_attrs["atlas_layout"] = "padded"
    ds = xr.Dataset(data_vars, coords=coord_vars, attrs=global_attrs)
    return ds
