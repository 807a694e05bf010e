"""The xarray backend, registered as ``engine="atlas"``.

``xr.open_dataset(path_or_url, engine="atlas", group=NAME, storage_options={...})``
opens one dataset of a collection (or of a collection set, where NAME is the
live copy: the newest member's) lazily: each variable is a `BackendArray` that reads only the
region asked for. ``xr.open_datatree(path, engine="atlas")`` gives one node per
live dataset and reads no array bytes; a dataset named by a tree path
(``a∕b∕c``, as `atlasds.write` names the nodes of a DataTree) is the node
``/a/b/c``, and ``group="a/b/c"`` opens it alone. Without ``group``, ``layout="ragged"``
or ``"padded"`` (with ``where=``, ``variables=``, ``attrs=``) opens many
datasets as one Dataset (`atlasds._views`). Fill values travel as ``_FillValue`` so
xarray's CF decoding masks them; timestamps arrive as ``datetime64[ns]`` with
NaT already in place. Coordinates are restored from the ``_pyatlas_coords``
dataset attribute (a JSON list of names) that v8 tooling writes.

Text arrays come back as object arrays of ``str``. Two attributes of the
NetCDF ingest (docs/netcdf-ingest.md) are read, not shown: ``_Encoding``
(``"latin-1"`` where the file's bytes were not UTF-8; ``.encode("latin-1")``
gives them back) moves to ``encoding``, and ``_atlas_missing_text`` (the
stored text of cells the file left at its fill) becomes the ``_FillValue``
xarray masks with, so those cells are NaN as xarray gives for the file.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any, Iterable

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

from ._collection import (
    CONTAINER_FILE,
    SET_MANIFEST_FILE,
    ArrayLayout,
    Collection,
    Dataset,
    _attrs,
    as_collection,
)
from ._errors import InvalidArgument
from ._write import BYTES_ATTRIBUTE, NO_FILL_ATTRIBUTE, TREE_SEPARATOR, UNNAMED_ATTRIBUTE
from ._views import (
    COORDS_ATTRIBUTE,
    DATASETS_PER_CHUNK,
    MISSING_TEXT_ATTRIBUTE,
    cf_encoding,
    open_dataset,
)

__all__ = [
    "AtlasBackendArray",
    "AtlasBackendEntrypoint",
    "COORDS_ATTRIBUTE",
    "MISSING_TEXT_ATTRIBUTE",
]

# URL schemes of remote collections (the aliases the Rust side accepts too).
_REMOTE_SCHEMES = frozenset({"s3", "s3a", "gs", "gcs", "az", "azure", "azblob", "http", "https"})


class AtlasBackendArray(BackendArray):
    """One array of one dataset, read region by region on demand.

    Basic indexing reaches the extension as xarray gave it; outer and
    vectorised keys read the region that covers them and index it in numpy
    (`explicit_indexing_adapter`). Holds no state a read changes, so threads
    (dask's included) share it. ``codec`` names how text that was bytes when
    written is given back as bytes."""

    def __init__(
        self,
        dataset: Dataset,
        array: str,
        shape: tuple[int, ...],
        dtype: np.dtype,
        codec: str | None = None,
    ) -> None:
        self.dataset = dataset
        # Not `.array`: xarray takes an `array` attribute for a wrapped array.
        self.array_name = array
        self.shape = shape
        self.dtype = dtype
        self.codec = codec

    def _read(self, region: Any) -> np.ndarray:
        # xarray's convention for text is an object array of str.
        values = self.dataset.read(self.array_name, region, strings="object")
        if self.codec is not None:
            out = np.empty(values.shape, dtype=object)
            out.reshape(-1)[:] = [v.encode(self.codec) for v in values.reshape(-1).tolist()]
            return out
        return values

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.BASIC, self._read
        )

    async def async_getitem(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        # The extension's reads block: one runs on a worker thread.
        return await asyncio.to_thread(self.__getitem__, key)


def _dims(array: str, dims: tuple[str, ...], rank: int) -> tuple[str, ...]:
    if len(dims) == rank and all(dims):
        return dims
    return tuple(f"{array}_dim_{i}" for i in range(rank))


def _variable(
    handle: Dataset, array: str, layout: ArrayLayout, attrs: dict[str, Any]
) -> xr.Variable:
    dims = _dims(array, layout.dims, len(layout.shape))
    attrs = dict(attrs)
    declared = attrs.pop(NO_FILL_ATTRIBUTE, None) is None
    codec = attrs.pop(BYTES_ATTRIBUTE, None)
    if codec is not None:
        # Bytes when written: the engine hands back bytes, their `_Encoding`
        # (if any) left for xarray to decode, as a NetCDF file's char data.
        fill = layout.fill if declared else None
        if isinstance(fill, str):
            attrs["_FillValue"] = fill.encode(codec)
        # What xarray reports for a NetCDF file's char data.
        encoding: dict[str, Any] = {"dtype": np.dtype("S1")}
        dtype = np.dtype(object)
    else:
        attrs, encoding = cf_encoding(
            layout.atlas_dtype, layout.fill if declared else None, layout.dtype, attrs
        )
        dtype = layout.dtype
    if layout.chunk_shape and len(layout.chunk_shape) == len(dims):
        encoding["preferred_chunks"] = dict(zip(dims, layout.chunk_shape))
        encoding["chunksizes"] = tuple(layout.chunk_shape)
    backend = AtlasBackendArray(handle, array, layout.shape, dtype, codec)
    return xr.Variable(dims, indexing.LazilyIndexedArray(backend), attrs=attrs, encoding=encoding)


def _coords(attrs: dict[str, Any]) -> list[str]:
    raw = attrs.pop(COORDS_ATTRIBUTE, None)
    if raw is None:
        return []
    try:
        names = json.loads(raw)
    except (TypeError, ValueError) as e:
        raise InvalidArgument(f"{COORDS_ATTRIBUTE} is not a JSON list of names: {raw!r}") from e
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InvalidArgument(f"{COORDS_ATTRIBUTE} is not a JSON list of names: {raw!r}")
    return names


def _drop_set(drop_variables: str | Iterable[str] | None) -> set[str]:
    return {drop_variables} if isinstance(drop_variables, str) else set(drop_variables or ())


def _node(
    handle: Dataset,
    attrs: dict[str, Any],
    arrays: dict[str, tuple[ArrayLayout, dict[str, Any]]],
    drop: set[str],
    decoders: dict[str, Any],
) -> xr.Dataset:
    """One dataset as a lazy, CF-decoded Dataset, from what `describe` gave."""
    # A variable xarray wrote without a name (None) is stored under a free name.
    attrs = dict(attrs)
    unnamed = attrs.pop(UNNAMED_ATTRIBUTE, None)
    variables = {
        None if a == unnamed else a: _variable(handle, a, layout, array_attrs)
        for a, (layout, array_attrs) in arrays.items()
        if a not in drop
    }
    coords = _coords(attrs)
    variables, attrs, coord_names = xr.conventions.decode_cf_variables(
        variables, attrs, **decoders
    )
    # One construction with the coordinates named (set_coords would copy it again).
    coord_set = {*coord_names, *coords}
    coord_vars = {k: v for k, v in variables.items() if k in coord_set}
    data_vars = {k: v for k, v in variables.items() if k not in coord_set}
    return xr.Dataset(data_vars, coords=coord_vars, attrs=attrs)


_ENGINE_REFUSAL = "the atlas engine opens a path or an atlasds.Collection"


def _node_path(dataset: str) -> str:
    """The DataTree path of a dataset: its name split at `TREE_SEPARATOR`
    (what `atlasds.write` joins a tree's node names with)."""
    return "/" + dataset.replace(TREE_SEPARATOR, "/")


def _dataset_name(group: str) -> str:
    """The dataset a group path names (`_node_path` undone)."""
    return group.strip("/").replace("/", TREE_SEPARATOR)


_DECODERS = (
    "mask_and_scale",
    "decode_times",
    "concat_characters",
    "decode_coords",
    "use_cftime",
    "decode_timedelta",
)


class AtlasBackendEntrypoint(BackendEntrypoint):
    """Opens Atlas collections: one dataset as a Dataset (``group=NAME``), all of them as a DataTree."""

    description = "Atlas v8 collections (thousands of datasets in one container) via atlasds"
    url = "https://example.invalid/atlas"
    open_dataset_parameters = (
        "filename_or_obj",
        "drop_variables",
        "group",
        "storage_options",
        "layout",
        "where",
        "variables",
        "attrs",
        "datasets_per_chunk",
        *_DECODERS,
    )
    supports_groups = True

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        """Whether ``filename_or_obj`` looks like a collection, without any request.

        A `Collection`; a local directory (or ``file://`` URL) holding
        ``data.atlas`` or a set's ``set.manifest``, or that container itself; a remote URL (``s3://``, ``gs://``,
        ``az://``, ``http(s)://`` and their aliases) whose path ends in
        ``data.atlas`` or in a directory named ``*.atlas``. Other remote URLs are
        left to other engines (guessing must not send requests): open them with
        ``engine="atlas"``.
        """
        if isinstance(filename_or_obj, Collection):
            return True
        if not isinstance(filename_or_obj, (str, os.PathLike)):
            return False
        location = os.fspath(filename_or_obj)
        if not isinstance(location, str):
            return False
        scheme, sep, rest = location.partition("://")
        if not sep or scheme.lower() == "file":
            path = rest if sep else location
            if os.path.basename(path) == CONTAINER_FILE:
                return os.path.isfile(path)
            return any(
                os.path.isfile(os.path.join(path, name))
                for name in (CONTAINER_FILE, SET_MANIFEST_FILE)
            )
        if scheme.lower() not in _REMOTE_SCHEMES:
            return False
        path = rest.split("?", 1)[0].split("#", 1)[0].rstrip("/")
        if "/" not in path:
            return False  # a bucket or host alone
        last = path.rsplit("/", 1)[1]
        return last == CONTAINER_FILE or (last.endswith(".atlas") and last != ".atlas")

    def open_dataset(
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        group: str | None = None,
        storage_options: dict[str, Any] | None = None,
        mask_and_scale: bool = True,
        decode_times: bool = True,
        concat_characters: bool = True,
        decode_coords: bool = True,
        use_cftime: bool | None = None,
        decode_timedelta: bool | None = None,
        layout: str | None = None,
        where: str | None = None,
        variables: Iterable[str] | None = None,
        attrs: Iterable[str] = (),
        datasets_per_chunk: int | None = None,
    ) -> xr.Dataset:
        """One dataset (``group=NAME``), or with ``layout="ragged"`` or
        ``"padded"`` (and no group) the datasets ``where`` selects (default:
        all) as one Dataset: see `atlasds.open_dataset`."""
        collection = as_collection(filename_or_obj, storage_options, _ENGINE_REFUSAL)
        decoders = dict(
            mask_and_scale=mask_and_scale,
            decode_times=decode_times,
            concat_characters=concat_characters,
            decode_coords=decode_coords,
            use_cftime=use_cftime,
            decode_timedelta=decode_timedelta,
        )
        many = layout is not None or where is not None or variables is not None
        if group is None and many:
            ds = open_dataset(
                collection,
                None if variables is None else list(variables),
                where=where,
                layout=layout or "ragged",  # type: ignore[arg-type]
                attrs=attrs,
                datasets_per_chunk=datasets_per_chunk or DATASETS_PER_CHUNK,
                decode=decoders,
            )
            return ds.drop_vars([v for v in _drop_set(drop_variables) if v in ds.variables])
        if many:
            raise InvalidArgument("layout=, where= and variables= open many datasets: leave group= out")
        if group is None:
            if len(collection) != 1:
                raise InvalidArgument(
                    f"{collection.location} holds {len(collection)} datasets: "
                    "name one with group=, open many with layout='ragged' or 'padded', "
                    "or use xr.open_datatree"
                )
            group = next(iter(collection))
        handle = collection[_dataset_name(group)]
        attrs, arrays = handle.describe()  # one call for every layout and attribute
        return _node(handle, attrs, arrays, _drop_set(drop_variables), decoders)

    def open_groups_as_dict(
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        storage_options: dict[str, Any] | None = None,
        **decoders: Any,
    ) -> dict[str, xr.Dataset]:
        collection = as_collection(filename_or_obj, storage_options, _ENGINE_REFUSAL)
        decoders = {k: v for k, v in decoders.items() if k in _DECODERS}
        groups: dict[str, xr.Dataset] = {"/": xr.Dataset()}
        for name, node in _nodes(collection, drop_variables, decoders):
            groups[_node_path(name)] = node
        return groups

    def open_datatree(
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        storage_options: dict[str, Any] | None = None,
        **decoders: Any,
    ) -> xr.DataTree:
        collection = as_collection(filename_or_obj, storage_options, _ENGINE_REFUSAL)
        decoders = {k: v for k, v in decoders.items() if k in _DECODERS}
        nodes = list(_nodes(collection, drop_variables, decoders))
        if any(TREE_SEPARATOR in name for name, _ in nodes):
            # Datasets named by tree paths nest (nodes between them made empty).
            return xr.DataTree.from_dict({_node_path(name): node for name, node in nodes})
        # Children handed over at once: no path parsing or per-insertion copy
        # of the growing root, which is what DataTree.from_dict spends its time on.
        return xr.DataTree(children={name: xr.DataTree(node) for name, node in nodes})


def _nodes(
    collection: Collection, drop_variables: str | Iterable[str] | None, decoders: dict[str, Any]
) -> Iterable[tuple[str, xr.Dataset]]:
    """Every live dataset's node; one native call describes them all."""
    names = collection.names()
    drop = _drop_set(drop_variables)
    for name, (attrs, arrays) in zip(names, collection._native.describe_many(names)):
        described = {
            array: (ArrayLayout._from(layout), _attrs(array_attrs))
            for array, layout, array_attrs in arrays
        }
        yield name, _node(Dataset(collection, name), _attrs(attrs), described, drop, decoders)
