"""Writing: `atlasds.write(destination, {name: xarray.Dataset})`.

By default (`decode="xarray"`) a dataset is taken as xarray holds it: xarray's
own CF encoder (`Dataset.dump_to_store` into a `WritableCFDataStore`, the
path of `to_netcdf`) writes the stored form, which is kept as `decode="raw"`
keeps a file, with three marks the engine reads and removes
(`NO_FILL_ATTRIBUTE`, `BYTES_ATTRIBUTE`, `UNNAMED_ATTRIBUTE`); the engine
decodes it as xarray decodes a NetCDF file (docs/python.md, "What xarray
writes, Atlas gives back").

`decode="cf"` and `decode="raw"` take each dataset in its *stored* form, the
raw variables and attributes a NetCDF file holds, which is what
``xr.open_dataset(f, decode_cf=False, mask_and_scale=False, decode_times=False)``
gives. The Rust side then applies exactly the mapping `atlas create` applies to
files (`"cf"`: xarray's CF decoding as atlas-python stores it; `"raw"`: as
stored), so a collection written that way equals the one the CLI builds from
the same files. In-memory datasets work there too: their values are taken as
stored (NaN stays NaN, `datetime64` stays a timestamp), booleans become int8
with ``dtype = "bool"`` as xarray writes them to NetCDF, and non-index
coordinates are named in the ``coordinates`` attribute as NetCDF files name
them.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Literal, Mapping, Union

import numpy as np

from . import _native
from ._collection import _NUMERIC, _location, _storage
from ._errors import InvalidArgument

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["WriteResult", "write"]

@dataclass(frozen=True)
class WriteResult:
    """What `write` made."""

    datasets: list[str]
    """Dataset names in ordinal order."""
    container_bytes: int
    """Bytes of `data.atlas`."""
    skipped: list[tuple[str, str, str]]
    """`(dataset, variable, type)` of each variable left out (`skip_unsupported=True`)."""
    notes: list[str]
    """Choices the mapping made that you should know (`dataset: message`)."""
    member: str | None = None
    """With `append=True`: the id of the set member written."""
    generation: int | None = None
    """With `append=True`: the set manifest's generation after the commit."""
    undecoded: list[tuple[str, str, str]] = field(default_factory=list)
    """`(dataset, variable, reason)` of each time variable stored as its raw
    numbers with `units`/`calendar` because its dates have no `datetime64[ns]`
    form (another calendar, or out of range)."""


def _numeric(values: np.ndarray) -> tuple[str, np.ndarray] | None:
    """A numeric array as (kind, contiguous native 1-D array), or None."""
    name = values.dtype.name
    if values.dtype.kind not in "iuf" or name not in _NUMERIC:
        return None
    native = values.astype(values.dtype.newbyteorder("="), copy=False)
    return name, np.ascontiguousarray(native).reshape(-1)


def _text(value: Any, what: str) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value
    raise InvalidArgument(f"{what}: {value!r} is not text")


def _attr(key: Any, value: Any, owner: str) -> tuple[str, str, Any]:
    """One attribute as (name, kind, value): the types netCDF4 hands xarray."""
    if not isinstance(key, str):
        raise InvalidArgument(f"attribute names of {owner} must be strings, got {key!r}")
    what = f"attribute {key!r} of {owner}"
    if isinstance(value, (str, bytes, np.str_, np.bytes_)):
        return key, "chars", _text(value.item() if isinstance(value, np.generic) else value, what)
    if isinstance(value, (bool, np.bool_)):
        return key, "int8", np.array([int(value)], dtype=np.int8)
    if isinstance(value, int):
        dtype = np.int64 if -(2**63) <= value < 2**63 else np.uint64
        try:
            return key, np.dtype(dtype).name, np.array([value], dtype=dtype)
        except OverflowError:
            raise InvalidArgument(f"{what}: {value} does not fit 64 bits") from None
    if isinstance(value, float):
        return key, "float64", np.array([value], dtype=np.float64)
    if isinstance(value, (list, tuple)) and value and all(
        isinstance(v, (str, np.str_)) for v in value
    ):
        return key, "strings", [str(v) for v in value]
    array = np.asarray(value) if isinstance(value, (list, tuple, np.ndarray, np.generic)) else None
    if array is not None:
        if array.dtype.kind == "b":
            return key, "int8", array.astype(np.int8).reshape(-1)
        numeric = _numeric(array)
        if numeric is not None:
            return key, numeric[0], numeric[1]
        if array.dtype.kind in "USOT":
            items = [_text(v, what) for v in array.reshape(-1).tolist()]
            if array.ndim == 0:
                return key, "chars", items[0]
            return key, "strings", items
    raise InvalidArgument(
        f"{what}: a {type(value).__name__} cannot be stored "
        "(text, numbers, booleans or 1-D lists/arrays of them)"
    )


def _attrs(attrs: Mapping[Any, Any], owner: str) -> list[tuple[str, str, Any]]:
    return [_attr(k, v, owner) for k, v in attrs.items()]


# Marks the writer leaves on a variable for the engine (docs/python.md, "What
# xarray writes"): the variable declared no `_FillValue` (the collection still
# records one, the NetCDF default), and its values were bytes (stored as the
# text the codec named gives, handed back as bytes).
NO_FILL_ATTRIBUTE = "_atlas_no_fill"
BYTES_ATTRIBUTE = "_atlas_bytes"
# Joins the node names of a DataTree path into one dataset name ("a∕b∕c" for
# the node /a/b/c): Atlas names cannot hold '/', and DIVISION SLASH reads as one.
TREE_SEPARATOR = "\N{DIVISION SLASH}"
# The dataset attribute naming the variable xarray held under the name None.
UNNAMED_ATTRIBUTE = "_atlas_unnamed"
NONE_VAR_NAME = "__values__"  # xarray.backends.common.NONE_VAR_NAME

# Encoding keys a variable may carry into `write`: the CF ones xarray's encoder
# consumes, and those that describe how another store held it (ignored here).
_VALID_ENCODINGS = frozenset({
    "dtype", "_FillValue", "missing_value", "scale_factor", "add_offset", "units",
    "calendar", "_Unsigned", "_Encoding", "chunksizes", "chunks", "preferred_chunks",
    "coordinates", "compression", "zlib", "complevel", "shuffle", "fletcher32",
    "contiguous", "endian", "least_significant_digit", "source", "original_shape",
    "char_dim_name", "szip", "zstd", "blosc", "bzip2", "quantize_mode",
    "significant_digits",
})  # fmt: skip


def _bytes_as_text(items: list[bytes]) -> tuple[list[str], str]:
    """Bytes as text and the codec that gives them back: UTF-8 where they
    are UTF-8 (so the stored text reads right), latin-1 otherwise (every
    byte is one character, so nothing is lost)."""
    try:
        return [b.decode("utf-8") for b in items], "utf-8"
    except UnicodeDecodeError:
        return [b.decode("latin-1") for b in items], "latin-1"


def _variable(name: Any, var: xr.Variable) -> tuple[Any, ...]:
    if not isinstance(name, str):
        raise InvalidArgument(f"variable names must be strings, got {name!r}")
    what = f"variable {name!r}"
    dims = list(var.dims)
    if not all(isinstance(d, str) for d in dims):
        raise InvalidArgument(f"{what}: dimension names must be strings, got {var.dims!r}")
    attrs = _attrs(var.attrs, what)
    values = np.asarray(var.values)
    shape = [int(n) for n in values.shape]
    kind = values.dtype.kind
    numeric = _numeric(values)
    if numeric is not None:
        return name, dims, shape, numeric[0], numeric[1], attrs
    if kind == "b":
        # What xarray writes to NetCDF for a bool variable (its BooleanCoder).
        attrs.append(("dtype", "chars", "bool"))
        data = np.ascontiguousarray(values.astype(np.int8)).reshape(-1)
        return name, dims, shape, "int8", data, attrs
    if kind == "M":
        stamps = values.astype("datetime64[ns]").view(np.int64)
        return name, dims, shape, "timestamp_ns", np.ascontiguousarray(stamps).reshape(-1), attrs
    if kind == "S" and values.dtype.itemsize == 1:
        # NetCDF char data: one byte per element, strings along the last axis.
        return name, dims, shape, "chars", np.ascontiguousarray(values).tobytes(), attrs
    if kind in "SUOT":
        items = values.reshape(-1).tolist()
        if kind == "O" and not all(isinstance(v, (str, bytes)) for v in items):
            odd = next(v for v in items if not isinstance(v, (str, bytes)))
            return name, dims, shape, "unsupported", f"object ({type(odd).__name__})", attrs
        return name, dims, shape, "strings", [_text(v, what) for v in items], attrs
    return name, dims, shape, "unsupported", str(values.dtype), attrs


def _encoded_variable(name: Any, var: xr.Variable) -> tuple[Any, ...]:
    """A variable xarray's CF encoder produced, with the engine's marks."""
    attrs = var.attrs
    marks: dict[str, Any] = {}
    if "_FillValue" not in attrs:
        marks[NO_FILL_ATTRIBUTE] = np.int8(1)
    values = np.asarray(var.values)
    # One-byte items are NetCDF char data (strings along the last axis), as
    # before; other bytes are stored as text and marked to come back as bytes.
    if (values.dtype.kind == "S" and values.dtype.itemsize > 1) or (
        values.dtype.kind == "O" and values.size and isinstance(values.flat[0], bytes)
    ):
        items = values.reshape(-1).tolist()
        text, codec = _bytes_as_text(items)
        marks[BYTES_ATTRIBUTE] = codec
        fill = attrs.get("_FillValue")
        if isinstance(fill, (bytes, np.bytes_)):
            marks["_FillValue"] = bytes(fill).decode(codec)
        var = var.copy(data=np.array(text, dtype=object).reshape(values.shape), deep=False)
    elif values.dtype.kind == "T":
        var = var.copy(data=values.astype(object), deep=False)
    if marks:
        var = var.copy(deep=False)
        var.attrs = {**attrs, **marks}
    return _variable(name, var)


@functools.cache
def _encoding_store() -> type:
    """A writable xarray data store that keeps what it is given: through it
    `Dataset.dump_to_store` runs xarray's own CF encoding (coordinates,
    masks, packing, times, booleans, object arrays) and hands over the
    encoded variables, as it does for the NetCDF backends. Built on first use
    (xarray is an optional dependency)."""
    from xarray.backends.common import WritableCFDataStore
    from xarray.coding.strings import EncodedStringCoder

    class EncodingStore(WritableCFDataStore):  # type: ignore[misc]
        def __init__(self) -> None:
            self.attrs: dict[str, Any] = {}
            self.variables: dict[str, Any] = {}

        def get_dimensions(self) -> dict[str, int]:
            return {}

        def get_parent_dimensions(self) -> dict[str, int]:
            return {}

        def get_attrs(self) -> dict[str, Any]:
            return self.attrs

        def get_variables(self) -> dict[str, Any]:
            return self.variables

        def set_dimension(self, dim: str, length: int, is_unlimited: bool = False) -> None:
            pass  # Atlas arrays are written whole: no dimension is unlimited

        def set_attribute(self, key: str, value: Any) -> None:
            self.attrs[key] = value

        def encode_variable(self, variable: xr.Variable, name: Any = None) -> xr.Variable:
            # Text stays text (Atlas stores strings), as netCDF4 keeps it.
            return EncodedStringCoder(allows_unicode=True).encode(variable, name=name)

        def prepare_variable(
            self,
            name: str,
            variable: xr.Variable,
            check_encoding: bool = False,
            unlimited_dims: Any = None,
        ) -> tuple[Any, Any]:
            invalid = [k for k in variable.encoding if k not in _VALID_ENCODINGS]
            if check_encoding and invalid:
                raise InvalidArgument(
                    f"unexpected encoding parameters for Atlas: {invalid!r}. "
                    f"Valid encodings are: {sorted(_VALID_ENCODINGS)!r}"
                )
            data = np.asarray(variable.values)  # dask arrays computed here
            self.variables[name] = variable.copy(data=data, deep=False)
            return _Sink(), data

    return EncodingStore


class _Sink:
    """Where `ArrayWriter` puts a variable's values (already held)."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass


def _encode(
    ds: xr.Dataset, owner: str, encoding: Mapping[Any, Any] | None, unlimited_dims: Any
) -> tuple[dict[str, Any], dict[str, xr.Variable]]:
    """`ds` as xarray's CF encoder writes it to a NetCDF file."""
    enc: dict[Any, dict[str, Any]] = {}
    for key, value in (encoding or {}).items():
        if key not in ds.variables:
            continue  # held by other datasets of the call (`write` checks one does)
        try:
            enc[key] = dict(value)
        except (TypeError, ValueError) as e:
            raise InvalidArgument(f"encoding of {key!r} must be castable to a dictionary") from e
    for name in ds.variables:
        # xarray's own rules for names it writes (None is stored as NONE_VAR_NAME).
        if name is not None and not isinstance(name, str):
            raise TypeError(
                f"Invalid name {name!r} for a variable of {owner}: "
                "it must be a string or None"
            )
        if name == "":
            raise InvalidArgument(
                f"Invalid name {name!r} for a variable of {owner}: "
                "string must be length 1 or greater"
            )
    target = _encoding_store()()
    ds.dump_to_store(target, encoding=enc, unlimited_dims=unlimited_dims)
    variables = target.variables
    if NONE_VAR_NAME in variables:
        # Atlas reserves names starting with '_': the unnamed variable gets a
        # free name, which a dataset attribute gives the engine.
        free = next(
            n for n in ("values", *(f"values_{i}" for i in range(1, len(variables) + 1)))
            if n not in variables
        )
        variables = {free if k == NONE_VAR_NAME else k: v for k, v in variables.items()}
        target.attrs[UNNAMED_ATTRIBUTE] = free
    return target.attrs, variables


def _group(
    path: list[str], ds: xr.Dataset, encode: _Encode | None = None
) -> tuple[list[str], list, list]:
    owner = "the dataset" if not path else f"group {'/'.join(path)!r}"
    if encode is not None:
        attrs_in, encoded = _encode(ds, owner, *encode)
        attrs = _attrs(attrs_in, owner)
        return path, attrs, [_encoded_variable(name, var) for name, var in encoded.items()]
    attrs = _attrs(ds.attrs, owner)
    # Non-index coordinates: NetCDF names them in a `coordinates` attribute.
    extra = [str(c) for c in ds.coords if not (ds[c].dims == (c,))]
    if extra:
        at = next((i for i, a in enumerate(attrs) if a[0] == "coordinates"), None)
        if at is None:
            attrs.append(("coordinates", "chars", " ".join(extra)))
        else:
            named = attrs[at][2].split()
            missing = [c for c in extra if c not in named]
            if missing:
                attrs[at] = ("coordinates", "chars", " ".join([*named, *missing]))
    variables = [_variable(name, var) for name, var in ds.variables.items()]
    return path, attrs, variables


# `decode="xarray"`: (encoding=, unlimited_dims=) of the call.
_Encode = tuple[Union[Mapping[Any, Any], None], Any]


def _stored(
    value: Any, name: str, encode: _Encode | None = None
) -> list[tuple[list[str], list, list]]:
    """A Dataset (one root group) or DataTree (every node, depth first) in stored form."""
    import xarray as xr

    if isinstance(value, xr.Dataset):
        return [_group([], value, encode)]
    if isinstance(value, xr.DataTree):
        groups: list[tuple[list[str], list, list]] = []

        def walk(node: xr.DataTree, path: list[str]) -> None:
            groups.append(_group(path, node.to_dataset(inherit=False), encode))
            for child_name, child in node.children.items():
                walk(child, [*path, str(child_name)])

        walk(value, [])
        return groups
    raise InvalidArgument(
        f"dataset {name!r}: expected an xarray.Dataset or DataTree, got {type(value).__name__}"
    )


def _names(value: Any) -> set[Any]:
    """Variable names of a Dataset, or of every node of a DataTree."""
    import xarray as xr

    if isinstance(value, xr.DataTree):
        return {k for node in value.subtree for k in node.variables}
    return set(value.variables)


def _tree_items(value: Any) -> list[tuple[str, Any]] | None:
    """A DataTree as the collection it describes: one dataset per node below
    the root, named by its path with `TREE_SEPARATOR` between node names
    (``a∕b∕c`` for ``/a/b/c``), holding that node's own variables (what
    `xr.open_datatree(path, engine="atlas")` nests back). A node with
    children and nothing of its own is left out (opening the tree makes it
    again). None for anything else."""
    import xarray as xr

    if not isinstance(value, xr.DataTree):
        return None
    root = value.to_dataset(inherit=False)
    if root.variables or root.attrs:
        raise InvalidArgument(
            "the DataTree's root holds variables or attributes: a collection has "
            "none of its own (each node below the root is one dataset); move them into a child"
        )
    items: list[tuple[str, Any]] = []

    def walk(node: xr.DataTree, names: list[str]) -> None:
        # Depth first, so opening the collection meets the nodes in the tree's order.
        for child_name, child in node.children.items():
            name = str(child_name)
            if TREE_SEPARATOR in name:
                raise InvalidArgument(
                    f"DataTree node name {name!r} holds {TREE_SEPARATOR!r}, which joins "
                    "the node names of a path into a dataset name"
                )
            own = child.to_dataset(inherit=False)
            if own.variables or own.attrs or not child.children:
                items.append((TREE_SEPARATOR.join([*names, name]), own))
            walk(child, [*names, name])

    walk(value, [])
    return items


def _encoded_chunks(
    encoding: Mapping[Any, Mapping[str, Any]] | None, chunk_shapes: dict[str, list[int]]
) -> None:
    """The chunk shapes `encoding=` asks for (`chunksizes` as `to_netcdf`
    takes it, `chunks` as `to_zarr` does) added to `chunk_shapes`, the
    stored chunk shape per array name; one that `chunks=` names otherwise is
    refused."""
    for key, settings in (encoding or {}).items():
        if not isinstance(settings, Mapping):
            continue  # `_encode` names it
        for option in ("chunksizes", "chunks"):
            shape = settings.get(option)
            if shape is None:
                continue
            what = f"encoding[{key!r}][{option!r}]"
            if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
                shape = (shape,)
            try:
                wanted = [int(n) for n in shape]
            except (TypeError, ValueError):
                raise InvalidArgument(f"{what} must be a list of integers, got {shape!r}") from None
            if any(n < 1 for n in wanted):
                raise InvalidArgument(f"{what} must be positive, got {shape!r}")
            held = chunk_shapes.setdefault(str(key), wanted)
            if held != wanted:
                raise InvalidArgument(
                    f"{what} is {wanted}, but {held} was asked for {key!r} already "
                    "(by chunks= or the other chunk option)"
                )


DatasetsArg = Union[Mapping[str, Any], Iterable[tuple[str, Any]], "xr.DataTree"]


def write(
    destination: str | os.PathLike[str],
    datasets: DatasetsArg,
    *,
    decode: Literal["xarray", "cf", "raw"] = "xarray",
    codec: Literal["zstd", "lz4", "none"] = "zstd",
    zstd_level: int | None = None,
    chunks: Mapping[str, Iterable[int]] | None = None,
    jobs: int = 1,
    skip_unsupported: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    append: bool = False,
    encoding: Mapping[Any, Mapping[str, Any]] | None = None,
    mode: Literal["w", "w-"] = "w-",
    unlimited_dims: Iterable[str] | str | None = None,
) -> WriteResult:
    """Writes `datasets` (a mapping or iterable of `(name, xarray.Dataset)`,
    or an `xarray.DataTree` whose nodes below the root are the datasets, each
    named by its path: ``a∕b∕c`` for ``/a/b/c``, see `TREE_SEPARATOR`) as a new
    collection at `destination` (a path or URL that holds none yet).

    By default (`decode="xarray"`) datasets are taken as xarray holds them
    in memory (decoded, with their `encoding`) and stored as
    `Dataset.to_netcdf` would write them: xarray's own CF encoder encodes
    each one (masks, packing, times, booleans, coordinates), the encoded form
    is stored, and the xarray engine decodes it on open exactly as xarray
    decodes a NetCDF file, so the Dataset and its `encoding` come back as
    they went in. `encoding` (variable name -> settings, for each dataset
    holding that variable; a name no dataset holds is a `KeyError`) takes
    what `to_netcdf` takes that means something here (`dtype`, `_FillValue`,
    `scale_factor`/`add_offset`, `units`/`calendar` of times, `_Encoding` of
    text, `_Unsigned`, and `chunksizes` or `chunks`: the stored chunk shape
    of that array name, as `chunks` gives it); compression settings of other
    stores are accepted and ignored (use `codec`), unknown ones refused.
    `unlimited_dims` is accepted and ignored: arrays are written whole, so no
    dimension can grow. `mode` is `"w-"` or `"w"` (both create; a collection
    is never rewritten in place: see `append`).

    `decode="cf"` and `decode="raw"` take datasets as NetCDF files hold them,
    e.g. opened with
    ``xr.open_dataset(f, decode_cf=False, mask_and_scale=False, decode_times=False)``:
    `"cf"` applies the mapping `atlas create --decode cf` applies to the
    files (xarray's CF decoding), `"raw"` keeps them as stored, so the
    collection equals the one `atlas create` builds from those files; a
    mapping value that is an ``xarray.DataTree`` (one file's groups) adds
    its sub-groups as `atlas create` does. These take no `encoding` or
    `unlimited_dims`.

    Ordinals follow the order given. `chunks` maps array names to stored
    chunk shapes; `jobs` datasets compress at once; `storage_options` as for
    `Collection.open`.

    With `append=True`, `destination` is a collection set: the datasets become
    one new member, committed to the set's manifest once written (the set is
    created if absent; a lone collection there is refused). A name the set
    already holds is replaced: readers see the new copy.

    All or nothing: on any error (`InvalidArgument` for data that cannot be
    stored, `StorageError` for the backend) nothing appears at `destination`.
    """
    if isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)) or jobs < 1:
        raise InvalidArgument(f"jobs must be a positive integer, got {jobs!r}")
    if zstd_level is not None and (
        isinstance(zstd_level, bool) or not isinstance(zstd_level, (int, np.integer))
    ):
        raise InvalidArgument(f"zstd_level must be an integer, got {zstd_level!r}")
    chunk_shapes: dict[str, list[int]] = {}
    for key, shape in (chunks or {}).items():
        try:
            chunk_shapes[str(key)] = [int(n) for n in shape]
        except (TypeError, ValueError):
            raise InvalidArgument(f"chunks[{key!r}] must be a list of integers, got {shape!r}") from None
        if any(n < 1 for n in chunk_shapes[str(key)]):
            raise InvalidArgument(f"chunks[{key!r}] must be positive, got {shape!r}")
    if decode == "xarray":
        _encoded_chunks(encoding, chunk_shapes)
    if isinstance(datasets, (str, bytes)) or not isinstance(datasets, (Mapping, Iterable)):
        raise InvalidArgument(
            "datasets must be a mapping or iterable of (name, xarray.Dataset) pairs, "
            "or an xarray.DataTree"
        )
    items = _tree_items(datasets)
    if items is None:
        items = datasets.items() if isinstance(datasets, Mapping) else datasets
    if decode == "xarray":
        encode: _Encode | None = (encoding, unlimited_dims)
    elif encoding is not None or unlimited_dims is not None:
        raise InvalidArgument(
            "encoding= and unlimited_dims= take effect with decode='xarray' "
            "(datasets as xarray holds them, encoded as to_netcdf encodes them)"
        )
    else:
        encode = None
    if mode not in ("w", "w-"):
        raise InvalidArgument(
            f"mode={mode!r}: Atlas collections are write-once; mode is 'w' or 'w-' "
            "(to add or replace datasets, write a set member with append=True)"
        )
    pairs, anonymous = _storage(
        dict(storage_options) if storage_options else None, _location(destination)
    )
    writer = _native.create(
        _location(destination),
        pairs,
        anonymous,
        "raw" if decode == "xarray" else decode,
        codec,
        None if zstd_level is None else int(zstd_level),
        chunk_shapes,
        int(jobs),
        bool(skip_unsupported),
        bool(append),
    )
    held: set[Any] = set()  # variable names the datasets hold (for `encoding`)
    try:
        for item in items:
            try:
                name, value = item
            except (TypeError, ValueError):
                raise InvalidArgument(
                    f"datasets must yield (name, xarray.Dataset) pairs, got {item!r}"
                ) from None
            if not isinstance(name, str):
                raise InvalidArgument(f"dataset names must be strings, got {name!r}")
            writer.add(name, _stored(value, name, encode))
            if encoding:
                held.update(_names(value))
        unheld = [k for k in (encoding or {}) if k not in held]
        if unheld:
            raise KeyError(f"encoding names variables no dataset holds: {unheld!r}")
        names, container_bytes, skipped, notes, member, generation, undecoded = writer.finish()
    except BaseException:
        writer.abort()
        raise
    return WriteResult(names, container_bytes, skipped, notes, member, generation, undecoded)
