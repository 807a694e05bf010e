"""`open_mfdataarray`: one variable of many datasets as one lazy DataArray.

Datasets of a collection often hold the same variable with different lengths
(profiles of different depths). The helper stacks them along a new dimension,
padding each to the largest shape with the missing value, as a dask array of
one task per dataset: each task pickles a `Dataset` handle (a location and a
name), so it computes anywhere dask runs.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from ._collection import ArrayLayout, Collection, Dataset
from ._errors import InvalidArgument

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


def _read_padded(
    handle: Dataset, variable: str, shape: tuple[int, ...], dtype: np.dtype
) -> np.ndarray:
    """The variable of one dataset, fill values masked, padded to `shape`."""
    layout = handle.layout(variable)
    values = handle.read(variable, strings="object")
    if layout.fill is not None and values.dtype.kind in "iuf":
        mask = values == layout.fill
        values = values.astype(dtype, copy=values.dtype != dtype)
        values[mask] = np.nan
    else:
        values = values.astype(dtype, copy=False)
    if values.shape == shape:
        return values
    out = np.full(shape, _missing(dtype), dtype=dtype)
    out[tuple(slice(0, n) for n in values.shape)] = values
    return out


def open_mfdataarray(
    collection: Collection | str | os.PathLike[str],
    variable: str,
    datasets: Iterable[str] | None = None,
    *,
    dim: str = "dataset",
) -> xarray.DataArray:
    """`variable` of every listed dataset (default: every live one that has it),
    stacked along a new dimension `dim` whose coordinate is the dataset name.

    Lazy and dask-backed, one chunk per dataset. Fill values read as NaN (NaT
    for timestamps); shorter arrays are padded the same way. The attributes are
    those of the first dataset. Reading the layouts costs one segment open.
    """
    import dask
    import dask.array as da
    import xarray as xr

    if not isinstance(collection, Collection):
        collection = Collection.open(collection, cache=True)
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
    read = dask.delayed(_read_padded, pure=True)
    parts = [
        da.from_delayed(read(h, variable, shape, dtype), shape=shape, dtype=dtype)
        for h in handles
    ]
    data = da.stack(parts) if parts else da.empty((0, *shape), dtype=dtype)
    attrs = handles[0].array_attrs(variable)
    attrs.pop("_FillValue", None)
    return xr.DataArray(
        data,
        dims=(dim, *first.dims),
        coords={dim: np.asarray(names, dtype=object)},
        name=variable,
        attrs=attrs,
    )
