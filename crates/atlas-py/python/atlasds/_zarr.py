"""A read-only Zarr v3 view of a collection: `atlasds.ZarrStore`.

``zarr.open_group(atlasds.ZarrStore(path), mode="r")`` gives one group per
live dataset (a dataset named by a tree path, ``a∕b∕c``, as nested groups
``a/b/c``) and one array per variable, with its attributes, dtype, shape,
dimension names and fill value. The metadata of every node is made when the
store is (one native call describes all datasets, as ``open_datatree``
does); array values are read only when zarr asks for a chunk.

Each Zarr chunk is one Atlas chunk (the array's stored chunk shape), read
through `Dataset.read` and served decoded: numbers, booleans and timestamps
with the plain ``bytes`` codec, text and bytes with zarr's ``vlen-utf8`` and
``vlen-bytes`` codecs (zarr-python's ``string`` and ``variable_length_bytes``
types; timestamps are its ``numpy.datetime64`` type, nanoseconds, NaT where
unwritten). List-typed arrays have no Zarr form and are refused
(`InvalidArgument`), or left out with ``skip_unsupported=True``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AsyncIterator, Iterable, Iterator

import numpy as np

from ._collection import _NUMERIC, Collection, Dataset, _attrs, as_collection
from ._errors import InvalidArgument
from ._write import TREE_SEPARATOR

if TYPE_CHECKING:
    from zarr.abc.store import ByteRequest
    from zarr.core.buffer import Buffer, BufferPrototype

__all__ = ["store_class"]

METADATA = "zarr.json"
_GROUP = {"zarr_format": 3, "node_type": "group", "attributes": {}}
_KEY_ENCODING = {"name": "default", "configuration": {"separator": "/"}}
_NAT = np.iinfo(np.int64).min


def _json_value(value: Any) -> Any:
    """An attribute value as JSON takes it (numpy scalars and arrays as Python values)."""
    if isinstance(value, np.ndarray):
        return [_json_value(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return _json_value(value.item())
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _json_float(value: float) -> Any:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


@dataclass(frozen=True)
class _Array:
    """What the store needs to serve one array's chunks."""

    dataset: str
    name: str
    atlas_dtype: str
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    fill: Any
    """The value padding edge chunks (the numpy scalar of the served dtype)."""


def _zarr_type(atlas_dtype: str, fill: Any) -> tuple[Any, list[dict[str, Any]], Any, Any] | None:
    """(data_type, codecs, JSON fill value, numpy fill) of an Atlas dtype, or
    None for a dtype with no Zarr form."""
    plain = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if atlas_dtype in _NUMERIC:
        dtype = np.dtype(atlas_dtype)
        value = dtype.type(0 if fill is None else fill)
        if dtype.kind == "f":
            return atlas_dtype, plain, _json_float(float(value)), value
        return atlas_dtype, plain, int(value), value
    if atlas_dtype == "bool":
        value = bool(fill) if fill is not None else False
        return "bool", plain, value, np.bool_(value)
    if atlas_dtype == "timestamp_ns":
        # `Dataset.read` gives NaT where unwritten: that is the fill here.
        return (
            {"name": "numpy.datetime64", "configuration": {"unit": "ns", "scale_factor": 1}},
            plain,
            int(_NAT),
            np.datetime64("NaT", "ns"),
        )
    if atlas_dtype == "string":
        value = fill if isinstance(fill, str) else ""
        return "string", [{"name": "vlen-utf8", "configuration": {}}], value, value
    if atlas_dtype == "binary":
        import base64

        value = fill if isinstance(fill, bytes) else b""
        encoded = base64.standard_b64encode(value).decode("ascii")
        return "variable_length_bytes", [{"name": "vlen-bytes", "configuration": {}}], encoded, value
    return None


def _array_document(
    dataset: str, name: str, layout: dict[str, Any], attrs: dict[str, Any]
) -> tuple[bytes, _Array]:
    """The `zarr.json` of one Atlas array and what its chunks are read with;
    `InvalidArgument` for a dtype with no Zarr form."""
    atlas_dtype = str(layout["dtype"])
    fill = layout.get("fill")
    zarr_type = _zarr_type(atlas_dtype, fill)
    if zarr_type is None:
        raise InvalidArgument(
            f"array {name!r} of dataset {dataset!r} is {atlas_dtype}, which has no "
            "Zarr v3 form (pass skip_unsupported=True to leave such arrays out)"
        )
    data_type, codecs, json_fill, numpy_fill = zarr_type
    shape = tuple(int(n) for n in layout["shape"])
    stored = tuple(int(n) for n in layout.get("chunk_shape") or ())
    if len(stored) != len(shape):
        stored = shape
    # Zarr chunks are at least one element along every axis.
    chunks = tuple(max(1, min(c, n) if n else c) for c, n in zip(stored, shape))
    dims = [str(d) if d else None for d in layout.get("dims") or ()]
    document: dict[str, Any] = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(shape),
        "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
        "chunk_key_encoding": _KEY_ENCODING,
        "fill_value": json_fill,
        "codecs": codecs,
        "attributes": {k: _json_value(v) for k, v in attrs.items()},
    }
    if len(dims) == len(shape) and any(dims):
        document["dimension_names"] = dims
    return (
        json.dumps(document).encode(),
        _Array(dataset, name, atlas_dtype, shape, chunks, numpy_fill),
    )


def _encode_chunk(array: _Array, values: np.ndarray) -> bytes:
    """A chunk's values (padded to the chunk shape) as its codecs expect them."""
    if array.atlas_dtype in ("string", "binary"):
        from numcodecs import VLenBytes, VLenUTF8

        codec = VLenUTF8() if array.atlas_dtype == "string" else VLenBytes()
        items = np.empty(values.size, dtype=object)
        items[:] = values.reshape(-1).tolist()
        return bytes(codec.encode(items))
    out = values
    if out.dtype.byteorder == ">":
        out = out.astype(out.dtype.newbyteorder("<"))
    # C order: the `bytes` codec's default (no transpose codec).
    return np.ascontiguousarray(out).tobytes()


@functools.cache
def store_class() -> type:
    """`atlasds.ZarrStore`, made on first use: it subclasses zarr-python 3's
    public `zarr.abc.store.Store`, and zarr (an optional dependency, slow to
    import) is imported only then."""
    try:
        from zarr.abc.store import OffsetByteRequest, RangeByteRequest, Store, SuffixByteRequest
    except ImportError as e:
        raise ImportError("atlasds.ZarrStore needs zarr-python 3 (pip install 'zarr>=3')") from e

    class ZarrStore(Store):
        """A read-only Zarr v3 store over a collection: a group per dataset, an
        array per variable, chunks served decoded (see the module docs).

        ``source`` is a path, URL or `Collection`; ``storage_options`` as for
        `Collection.open`. Arrays of a dtype with no Zarr form (lists) make the
        store refuse with `InvalidArgument`, unless ``skip_unsupported=True``
        leaves them out (listed in `skipped`).
        """

        supports_writes = False
        supports_deletes = False
        supports_listing = True
        supports_partial_writes = False

        def __init__(
            self,
            source: Collection | str | os.PathLike[str],
            storage_options: dict[str, Any] | None = None,
            *,
            skip_unsupported: bool = False,
        ) -> None:
            super().__init__(read_only=True)
            self._source = source
            self._storage_options = storage_options
            self._skip_unsupported = skip_unsupported
            self.collection = as_collection(source, storage_options)
            self.skipped: list[tuple[str, str, str]] = []
            """`(dataset, array, dtype)` of each array left out (``skip_unsupported=True``)."""
            self._documents: dict[str, bytes] = {METADATA: json.dumps(_GROUP).encode()}
            self._arrays: dict[str, _Array] = {}
            self._children: dict[str, list[str]] = {"": []}
            self._build()

        def _add_group(self, path: str, attrs: dict[str, Any] | None) -> None:
            """The group at `path` and its parents (empty, when no dataset is there)."""
            key = f"{path}/{METADATA}"
            if attrs is None and key in self._documents:
                return
            if path in self._arrays:
                raise InvalidArgument(f"{path!r} is both an array and a dataset's group")
            parent, _, leaf = path.rpartition("/")
            if parent:
                self._add_group(parent, None)
            if key not in self._documents:
                self._children[parent].append(leaf)
                self._children[path] = []
            document = {**_GROUP, "attributes": {k: _json_value(v) for k, v in (attrs or {}).items()}}
            self._documents[key] = json.dumps(document).encode()

        def _build(self) -> None:
            names = self.collection.names()
            described = self.collection._native.describe_many(names)
            for name, (attr_rows, arrays) in zip(names, described):
                parts = name.split(TREE_SEPARATOR)
                if not all(parts):
                    raise InvalidArgument(
                        f"dataset {name!r}: an empty node name between {TREE_SEPARATOR!r} "
                        "has no Zarr path"
                    )
                group = "/".join(parts)
                self._add_group(group, _attrs(attr_rows))
                for array, layout, array_attr_rows in arrays:
                    path = f"{group}/{array}"
                    if f"{path}/{METADATA}" in self._documents:
                        raise InvalidArgument(
                            f"array {array!r} of dataset {name!r} has the path of a dataset's group"
                        )
                    try:
                        document, info = _array_document(name, array, layout, _attrs(array_attr_rows))
                    except InvalidArgument:
                        if not self._skip_unsupported:
                            raise
                        self.skipped.append((name, array, str(layout["dtype"])))
                        continue
                    self._documents[f"{path}/{METADATA}"] = document
                    self._arrays[path] = info
                    self._children[group].append(array)

        # Store: identity ---------------------------------------------------------

        def __eq__(self, other: object) -> bool:
            return isinstance(other, ZarrStore) and other.collection.location == self.collection.location

        def __hash__(self) -> int:
            return hash(self.collection.location)

        def __repr__(self) -> str:
            return f"<atlasds.ZarrStore of {self.collection.location!r}>"

        def __reduce__(self):
            return (_reopen, (self._source, self._storage_options, self._skip_unsupported))

        def __dask_tokenize__(self) -> tuple[Any, ...]:
            # Without it dask names the store by pickling it, which rebuilds every document.
            return ("atlasds.ZarrStore", self.collection.location, self._skip_unsupported)

        def with_read_only(self, read_only: bool = False) -> Any:
            if not read_only:
                raise InvalidArgument("an atlasds.ZarrStore is read-only")
            return self

        # Store: reads ------------------------------------------------------------

        def _chunk_of(self, key: str) -> tuple[_Array, tuple[int, ...]] | None:
            """The array and chunk coordinates a chunk key names, or None."""
            parts = key.split("/")
            for at in range(1, len(parts)):
                if parts[at] != "c":
                    continue
                array = self._arrays.get("/".join(parts[:at]))
                if array is None or len(parts) - at - 1 != len(array.shape):
                    continue
                try:
                    coords = tuple(int(p) for p in parts[at + 1 :])
                except ValueError:
                    return None
                grid = (-(-n // c) for n, c in zip(array.shape, array.chunks))
                if all(0 <= i < g for i, g in zip(coords, grid)):
                    return array, coords
                return None
            return None

        def _read_chunk(self, array: _Array, coords: tuple[int, ...]) -> bytes:
            region = tuple(
                slice(i * c, min((i + 1) * c, n)) for i, c, n in zip(coords, array.chunks, array.shape)
            )
            dataset = Dataset(self.collection, array.dataset)
            values = dataset.read(array.name, region, strings="object")
            if values.shape != array.chunks:
                padded = np.full(array.chunks, array.fill, dtype=values.dtype)
                padded[tuple(slice(0, n) for n in values.shape)] = values
                values = padded
            return _encode_chunk(array, values)

        async def _value(self, key: str) -> bytes | None:
            document = self._documents.get(key)
            if document is not None:
                return document
            chunk = self._chunk_of(key)
            if chunk is None:
                return None
            # The extension's reads block: each runs on a worker thread.
            return await asyncio.to_thread(self._read_chunk, *chunk)

        async def get(
            self,
            key: str,
            prototype: BufferPrototype | None = None,
            byte_range: ByteRequest | None = None,
        ) -> Buffer | None:
            """The bytes of `key` (a metadata document or a decoded chunk), or
            the part `byte_range` names; None for a key the view does not hold."""
            if prototype is None:
                from zarr.core.buffer import default_buffer_prototype

                prototype = default_buffer_prototype()
            value = await self._value(key)
            if value is None:
                return None
            if byte_range is None:
                part = value
            elif isinstance(byte_range, RangeByteRequest):
                part = value[byte_range.start : byte_range.end]
            elif isinstance(byte_range, OffsetByteRequest):
                part = value[byte_range.offset :]
            elif isinstance(byte_range, SuffixByteRequest):
                part = value[max(0, len(value) - byte_range.suffix) :]
            else:
                raise InvalidArgument(f"unexpected byte range {byte_range!r}")
            return prototype.buffer.from_bytes(part)

        async def get_partial_values(
            self,
            prototype: BufferPrototype,
            key_ranges: Iterable[tuple[str, ByteRequest | None]],
        ) -> list[Buffer | None]:
            return list(
                await asyncio.gather(*(self.get(k, prototype, r) for k, r in key_ranges))
            )

        async def exists(self, key: str) -> bool:
            return key in self._documents or self._chunk_of(key) is not None

        # Store: listing ----------------------------------------------------------

        def _chunk_keys(self, path: str, array: _Array) -> Iterator[str]:
            grid = [-(-n // c) for n, c in zip(array.shape, array.chunks)]
            for coords in np.ndindex(*grid):
                yield "/".join([path, "c", *map(str, coords)])

        def _keys(self) -> Iterator[str]:
            yield from self._documents
            for path, array in self._arrays.items():
                yield from self._chunk_keys(path, array)

        async def list(self) -> AsyncIterator[str]:
            for key in self._keys():
                yield key

        async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
            for key in self._keys():
                if key.startswith(prefix):
                    yield key

        async def list_dir(self, prefix: str) -> AsyncIterator[str]:
            prefix = prefix.rstrip("/")
            if prefix in self._children:
                yield METADATA
                for child in self._children[prefix]:
                    yield child
            elif prefix in self._arrays:
                yield METADATA
                if all(self._arrays[prefix].shape):  # a zero-length axis has no chunk
                    yield "c"

        # Store: writes (refused) -------------------------------------------------

        async def set(self, key: str, value: Buffer) -> None:
            self._check_writable()

        async def delete(self, key: str) -> None:
            self._check_writable()

    ZarrStore.__module__, ZarrStore.__qualname__ = "atlasds", "ZarrStore"
    return ZarrStore


def _reopen(source: Any, storage_options: Any, skip_unsupported: bool) -> Any:
    return store_class()(source, storage_options, skip_unsupported=skip_unsupported)
