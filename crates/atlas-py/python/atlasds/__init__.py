"""atlasds: read and write Atlas v8 collections from Python.

- `Collection.open(path_or_url, storage_options)`: the collection as a
  `collections.abc.Mapping` of live dataset names to `Dataset` handles;
  `Dataset.read(array, region)` gives numpy arrays (numpy basic indexing).
  A collection set opens the same way (`Collection.is_set`, `.members`,
  `.generation`): a name several members hold is the newest member's copy.
- `Collection.catalogue()`: the table `atlas catalogue` prints, one row per
  dataset (attributes and statistics), as pandas or a `pyarrow.Table`.
- `xarray.open_dataset(path, engine="atlas", group=NAME)` and
  `xarray.open_datatree(path, engine="atlas")`: lazily loaded xarray objects.
- `open_dataset(path, variables, where=..., layout="ragged" | "padded")`:
  many datasets as one lazy Dataset (CF contiguous ragged array, or padded
  along a `profile` dimension), also `xarray.open_dataset(path,
  engine="atlas", layout=...)`.
- `open_mfdataarray(path, variable)`: one variable of many datasets as one
  dask-backed DataArray along a new dimension.
- `to_dask_dataframe(path, arrays, where=..., attrs=[...])`: the long table
  as a dask DataFrame, one partition per run of datasets sharing storage blocks.
- `ZarrStore(path_or_url)`: a read-only Zarr v3 store over a collection
  (`zarr.open_group(atlasds.ZarrStore(path), mode="r")`): a group per
  dataset, an array per variable, chunks served decoded (needs zarr-python 3).
- `write(path_or_url, {name: xarray.Dataset})`: a new collection that the
  engine gives back as it went in (xarray's own CF encoding, as `to_netcdf`);
  `decode="cf"` maps datasets as files hold them as `atlas create` maps the files.
  With `append=True`, one new member of a collection set, committed.
- `ingest(sources, set_path, client=...)`: NetCDF files into a collection
  set, one member per task on dask.distributed (or local threads), one commit.
- `sync(set_path, index)`: a collection set kept in step with an archive's
  index (Argo GDAC format): additions, revisions and removals in one commit.

Handles pickle by location, so all of it runs on dask.distributed.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from ._collection import (
    HAS_STRINGDTYPE,
    ArrayLayout,
    ArrayStats,
    Collection,
    Dataset,
    DeleteResult,
    VerifyResult,
    to_dask_dataframe,
)
from ._errors import (
    AtlasError,
    CorruptCollection,
    InvalidArgument,
    NotAnAtlasCollection,
    NotFound,
    StorageError,
)
from ._multi import open_mfdataarray
from ._views import open_dataset
from ._write import TREE_SEPARATOR, WriteResult, write
from ._zarr import store_class as _zarr_store_class
from ._ingest import IngestResult, ingest
from ._sync import SyncResult, sync


def __getattr__(name: str):
    # zarr is optional and slow to import: `ZarrStore` is made when first asked for.
    if name == "ZarrStore":
        return _zarr_store_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


try:
    __version__ = version("atlasds")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0+unknown"

__all__ = [
    "HAS_STRINGDTYPE",
    "ArrayLayout",
    "ArrayStats",
    "AtlasError",
    "Collection",
    "CorruptCollection",
    "Dataset",
    "DeleteResult",
    "InvalidArgument",
    "NotAnAtlasCollection",
    "NotFound",
    "StorageError",
    "TREE_SEPARATOR",
    "VerifyResult",
    "WriteResult",
    "ZarrStore",
    "open_dataset",
    "open_mfdataarray",
    "write",
    "IngestResult",
    "ingest",
    "SyncResult",
    "sync",
    "to_dask_dataframe",
]
