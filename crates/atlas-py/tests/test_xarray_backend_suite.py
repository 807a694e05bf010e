"""xarray's own backend round-trip suite, run against Atlas.

xarray ships the tests every one of its backends passes (`CFEncodedBase` with
`DatasetIOBase`, in `xarray/tests/test_backends.py`); netCDF4, h5netcdf, scipy
and zarr each run them through a small subclass that says how to save and how
to open. This is that subclass for Atlas: save is the plain ``atlasds.write(path,
{name: ds}, **to_netcdf_keywords)`` (no ``decode=``: its default), open is
``xr.open_dataset(path, engine="atlas", group=name)``. The xarray version is
pinned in scripts/requirements-test.txt.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest
import xarray as xr

import atlasds

backends = pytest.importorskip("xarray.tests.test_backends")
# Fixtures some of the inherited tests take (xarray's conftest is not ours).
from xarray.tests.conftest import time_unit, use_dask  # noqa: E402,F401

GROUP = "ds"


class TestAtlasBackendSuite(backends.CFEncodedBase):
    engine = "atlas"
    # xarray skips its uint8 cases unless the store holds NetCDF4's types;
    # Atlas holds them all (unsigned integers included).
    file_format = "NETCDF4"

    @contextlib.contextmanager
    def create_store(self):
        pytest.skip("Atlas has no writable xarray data store: collections are written whole by atlasds.write")
        yield

    def save(self, dataset, path, **kwargs):
        return atlasds.write(path, {GROUP: dataset}, **kwargs)

    @contextlib.contextmanager
    def open(self, path, **kwargs):
        with xr.open_dataset(path, engine="atlas", group=GROUP, **kwargs) as ds:
            yield ds

    # Reasons a user would accept, each listed in docs/python.md.
    WRITE_ONCE = "Atlas collections are write-once, so append tests do not apply"

    @pytest.mark.skip(reason=WRITE_ONCE)
    def test_append_write(self) -> None: ...

    @pytest.mark.skip(reason=WRITE_ONCE)
    def test_append_overwrite_values(self) -> None: ...

    @pytest.mark.skip(reason=WRITE_ONCE)
    def test_append_with_invalid_dim_raises(self) -> None: ...

    @pytest.mark.skip(
        reason="Atlas arrays are written whole, so no dimension is unlimited "
        "(unlimited_dims is accepted and ignored)"
    )
    def test_encoding_unlimited_dims(self) -> None: ...

    def test_load_async(self) -> None:
        # xarray marks it for pytest-asyncio, which this suite does not use:
        # the same coroutine runs on an event loop of its own.
        asyncio.run(super().test_load_async())
