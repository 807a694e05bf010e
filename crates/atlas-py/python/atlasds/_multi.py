"""`open_mfdataarray`: one variable of many datasets as one lazy DataArray.

Datasets of a collection often hold the same variable with different lengths
(profiles of different depths). The helper stacks them along a new dimension,
padding each to the largest shape with the missing value, as a dask array
whose chunks are runs of datasets sharing a storage block
(`Collection.partitions`): each task reads its run in one native call
(`read_concat`) and pickles the collection by location, so it computes
anywhere dask runs and 30 000 datasets are tens of tasks.
"""

from __future__ import annotations

import os
import uuid
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from . import _native
from ._collection import ArrayLayout, Collection, as_collection
from ._errors import InvalidArgument
from ._views import _task

if TYPE_CHECKING:
    import xarray

__all__ = ["open_mfdataarray"]


def _decoded_dtype(layout: ArrayLayout) -> np.dtype:
    """Fill values become NaN: integers with a fill value widen to float64."""
    if layout.fill is not None and layout.dtype.kind in "iu":
        return np.dtype("float64")
    return layout.dtype


def _missing(dtype: np.dtype) -> Any:
    if dtype.kind == "f":
        return np.nan
    if dtype.kind == "M":
        return np.datetime64("NaT", "ns")
    if dtype.kind == "O":
        return None
    return 0


def _read_run(
    collection: Collection,
    variable: str,
    names: list[str],
    fills: list[Any],
    shape: tuple[int, ...],
    dtype: np.dtype,
) -> np.ndarray:
    """The variable of a run of datasets in one native call, each dataset's
    fill value (`fills`) masked and its array padded to `shape`, stacked."""
    values, counts, shapes, _fill = _native.read_concat(collection._native, variable, names)
    out = np.full((len(names), *shape), _missing(dtype), dtype=dtype)
    if values is None:
        return out
    if values.dtype.kind in "iuf" and any(f is not None for f in fills):
        if len(set(map(repr, fills))) == 1:
            mask = values == fills[0]
        else:
            per_element = np.repeat(
                np.array([np.nan if f is None else f for f in fills], dtype=np.float64), counts
            )
            mask = values == per_element
        values = values.astype(dtype, copy=values.dtype != dtype)
        values[mask] = np.nan
    else:
        values = values.astype(dtype, copy=False)
    offset = 0
    for i, s in enumerate(shapes):
        if s is None:
            continue
        n = int(np.prod(s, dtype=np.int64))
        out[(i, *(slice(0, k) for k in s))] = values[offset : offset + n].reshape(s)
        offset += n
    return out


def open_mfdataarray(
    collection: Collection | str | os.PathLike[str],
    variable: str,
    datasets: Iterable[str] | None = None,
    *,
    dim: str = "dataset",
    datasets_per_chunk: int | None = 1000,
) -> xarray.DataArray:
    """`variable` of every listed dataset (default: every live one that has it),
    stacked along a new dimension `dim` whose coordinate is the dataset name.

    Lazy and dask-backed, one chunk per run of datasets sharing a storage
    block of `variable` (`Collection.partitions`; `datasets_per_chunk` caps a
    chunk, 1000 by default). Fill values read as NaN (NaT for timestamps);
    shorter arrays are padded the same way. The attributes are those of the
    first dataset. Reading the layouts costs one segment open.
    """
    import dask.array as da
    import xarray as xr

    collection = as_collection(collection, None)
    if datasets is None:
        names = [n for n in collection if variable in collection[n].arrays]
    else:
        names = list(datasets)
    if not names:
        raise InvalidArgument(f"no dataset of {collection.location} holds {variable!r}")
    handles = [collection[n] for n in names]
    layouts = [h.layout(variable) for h in handles]
    first = layouts[0]
    for name, layout in zip(names, layouts):
        if len(layout.shape) != len(first.shape) or layout.dims != first.dims:
            raise InvalidArgument(
                f"{variable!r} has dimensions {layout.dims} in {name!r} but {first.dims} in {names[0]!r}"
            )
    dtypes = {_decoded_dtype(layout) for layout in layouts}
    if len(dtypes) != 1:
        raise InvalidArgument(f"{variable!r} has different dtypes across datasets: {sorted(map(str, dtypes))}")
    dtype = dtypes.pop()
    shape = tuple(max(sizes) for sizes in zip(*(layout.shape for layout in layouts)))
    fill_of = dict(zip(names, (layout.fill for layout in layouts)))
    runs = collection.partitions([variable], names, datasets_per_chunk)
    token = uuid.uuid4().hex
    parts = [
        da.from_delayed(
            _task(
                f"atlas-mf-{variable}-{token}-{i}",
                _read_run,
                collection,
                variable,
                run,
                [fill_of[n] for n in run],
                shape,
                dtype,
            ),
            shape=(len(run), *shape),
            dtype=dtype,
        )
        for i, run in enumerate(runs)
    ]
    data = da.concatenate(parts) if parts else da.empty((0, *shape), dtype=dtype)
    attrs = handles[0].array_attrs(variable)
    attrs.pop("_FillValue", None)
    return xr.DataArray(
        data,
        dims=(dim, *first.dims),
        coords={dim: np.asarray(names, dtype=object)},
        name=variable,
        attrs=attrs,
    )
