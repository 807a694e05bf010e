"""The xarray backend: lazy variables, region reads, CF decoding, coordinates, DataTree."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import atlasds
from atlasds._collection import Dataset
from conftest import fixture


@pytest.fixture
def reads(monkeypatch):
    """Records every region the backend asks the library for."""
    seen: list[tuple[str, str, object]] = []
    original = Dataset.read

    def recording(self, array, region=None, **options):
        seen.append((self.name, array, region))
        return original(self, array, region, **options)

    monkeypatch.setattr(Dataset, "read", recording)
    return seen


def test_the_backend_is_registered_as_atlas():
    assert "atlas" in xr.backends.list_engines()


def test_opening_reads_no_array_values_and_indexing_reads_only_that_region(reads):
    ds = xr.open_dataset(fixture("small"), engine="atlas", group="jan_2024")
    assert [r for r in reads if r[1] == "temperature"] == []
    part = ds["temperature"][1:3, 2:5].values
    np.testing.assert_array_equal(part, [[25.5, 25.75, 26.0], [50.5, 50.75, 51.0]])
    assert [r[2] for r in reads if r[1] == "temperature"] == [(slice(1, 3), slice(2, 5))]


def test_strided_selections_read_the_covering_region_once(reads):
    ds = xr.open_dataset(fixture("small"), engine="atlas", group="jan_2024")
    values = ds["temperature"][::2, 1].values
    np.testing.assert_array_equal(values, [0.25, 50.25])
    assert len([r for r in reads if r[1] == "temperature"]) == 1


def test_fill_values_decode_to_nan_and_stay_raw_without_mask_and_scale():
    ds = xr.open_dataset(fixture("small"), engine="atlas", group="feb_2024")
    t = ds["temperature"].values
    assert np.isnan(t[2:]).all() and t[0, 0] == 10.0
    assert ds["temperature"].encoding["_FillValue"] == -999.0
    raw = xr.open_dataset(fixture("small"), engine="atlas", group="feb_2024", mask_and_scale=False)
    assert (raw["temperature"].values[2:] == -999.0).all()


def test_preferred_chunks_come_from_the_stored_chunk_shape():
    ds = xr.open_dataset(fixture("small"), engine="atlas", group="jan_2024")
    assert ds["temperature"].encoding["preferred_chunks"] == {"lat": 2, "lon": 4}
    chunked = xr.open_dataset(fixture("small"), engine="atlas", group="jan_2024", chunks={})
    assert chunked["temperature"].chunks == ((2, 2), (4, 4))
    np.testing.assert_array_equal(chunked["temperature"].values, ds["temperature"].values)


def test_attributes_dtypes_and_timestamps_survive(kinds):
    ds = xr.open_dataset(kinds, engine="atlas", group="every_dtype")
    assert ds.attrs == {"title": "every dtype", "version": 3}
    assert ds["grid"].attrs["units"] == "m"
    assert ds["time"].dtype == np.dtype("datetime64[ns]")
    assert np.isnat(ds["time"].values[3])
    assert ds["label"].values.tolist() == ["a", "é ü", ""]
    assert ds["u64"].encoding["_FillValue"] == np.uint64(2**64 - 1)


def test_coordinates_come_from_the_pyatlas_coords_attribute(kinds):
    ds = xr.open_dataset(kinds, engine="atlas", group="station_1")
    assert "lat" in ds.coords and "lat" not in ds.data_vars
    assert "_pyatlas_coords" not in ds.attrs
    assert ds["TEMP"].values.tolist()[:3] == [20.0, 21.0, 22.0]
    assert np.isnan(ds["TEMP"].values[3])


def test_a_group_must_name_a_live_dataset_when_there_are_several():
    with pytest.raises(atlasds.InvalidArgument):
        xr.open_dataset(fixture("small"), engine="atlas")
    with pytest.raises(atlasds.NotFound):
        xr.open_dataset(fixture("small"), engine="atlas", group="apr_2024")


def test_the_datatree_has_one_node_per_live_dataset_and_reads_no_values(reads):
    tree = xr.open_datatree(fixture("deleted"), engine="atlas")
    assert sorted(tree.children) == sorted(atlasds.Collection.open(fixture("deleted")))
    assert reads == []
    node = xr.open_datatree(fixture("deleted"), engine="atlas", mask_and_scale=False)["d00"].to_dataset()
    assert node["v"].values.tolist() == atlasds.Collection.open(fixture("deleted"))["d00"].read("v").tolist()


def test_storage_options_reach_the_collection_for_datasets_and_datatrees():
    url = f"file://{fixture('small')}"
    options = {"anonymous": True, "region": "x"}
    ds = xr.open_dataset(url, engine="atlas", group="jan_2024", storage_options=options)
    local = xr.open_dataset(fixture("small"), engine="atlas", group="jan_2024", storage_options={})
    xr.testing.assert_identical(ds.load(), local.load())
    tree = xr.open_datatree(url, engine="atlas", storage_options=options)
    assert sorted(tree.children) == sorted(atlasds.Collection.open(fixture("small")))
    # A value the options parser refuses proves the options are not dropped on the way.
    with pytest.raises(atlasds.InvalidArgument):
        xr.open_dataset(url, engine="atlas", group="jan_2024", storage_options={"anonymous": "yes"})
    with pytest.raises(atlasds.InvalidArgument):
        xr.open_datatree(url, engine="atlas", storage_options={"anonymous": "yes"})


def test_strings_reach_xarray_as_object_arrays(kinds):
    ds = xr.open_dataset(kinds, engine="atlas", group="every_dtype")
    assert ds["label"].dtype == object
    assert [type(v) for v in ds["label"].values] == [str, str, str]
