"""The xarray backend: lazy variables, region reads, CF decoding, coordinates, DataTree."""

from __future__ import annotations

import os

import numpy as np
import pytest
import xarray as xr

import atlasds
import atlasds.xarray_backend
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
    # The key reaches the extension as xarray gave it: no Python-side rewriting.
    assert [r[2] for r in reads if r[1] == "temperature"] == [(slice(1, 3, 1), slice(2, 5, 1))]


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


@pytest.mark.parametrize(
    "url",
    [
        "s3://bucket/argo.atlas",
        "s3://bucket/prefix/argo.atlas/",
        "s3://bucket/prefix/data.atlas",
        "s3a://bucket/data.atlas",
        "gs://bucket/argo.atlas",
        "gcs://bucket/deep/er/data.atlas",
        "az://container/argo.atlas",
        "azblob://container/x/data.atlas",
        "http://127.0.0.1:9/collections/argo.atlas",
        "https://example.invalid/c/data.atlas?versionId=3",
        "HTTPS://example.invalid/c/DATA.atlas/data.atlas",
    ],
)
def test_the_backend_recognises_urls_of_collections_without_a_request(url):
    assert atlasds.xarray_backend.AtlasBackendEntrypoint().guess_can_open(url)


@pytest.mark.parametrize(
    "url",
    [
        "s3://bucket",
        "s3://bucket/",
        "s3://bucket/prefix/store.zarr",
        "gs://bucket/file.nc",
        "https://example.invalid/c/data.atlas.json",
        "https://example.invalid/.atlas",
        "ftp://host/argo.atlas",
        "s3://bucket/argo",
    ],
)
def test_the_backend_leaves_other_urls_to_other_engines(url):
    assert not atlasds.xarray_backend.AtlasBackendEntrypoint().guess_can_open(url)


def test_the_backend_recognises_local_collections_and_their_container_file(tmp_path):
    entry = atlasds.xarray_backend.AtlasBackendEntrypoint()
    assert entry.guess_can_open(fixture("small"))
    assert entry.guess_can_open(str(fixture("small") / "data.atlas"))
    assert entry.guess_can_open(f"file://{fixture('small')}")
    assert not entry.guess_can_open(tmp_path)
    assert not entry.guess_can_open(str(tmp_path / "data.atlas"))
    assert not entry.guess_can_open(b"bytes are no location")


def test_a_url_naming_the_container_file_opens_its_directory():
    # What guess_can_open accepts must open: `.../data.atlas` means the directory.
    # The library resolves it (for s3, gs, az and http too: its own tests).
    url = "file://" + os.path.join(os.path.abspath(fixture("small")), "data.atlas")
    ds = xr.open_dataset(url, engine="atlas", group="jan_2024")
    assert ds["temperature"].shape == (4, 8)


def test_xarray_picks_the_atlas_engine_by_itself_for_a_local_collection():
    ds = xr.open_dataset(fixture("small"), group="jan_2024")
    assert ds["temperature"].shape == (4, 8)


def test_the_backend_reads_negative_and_reversed_selections_through_the_extension(reads):
    ds = xr.open_dataset(fixture("small"), engine="atlas", group="jan_2024")
    whole = ds["temperature"].values
    np.testing.assert_array_equal(ds["temperature"][::-1, -1].values, whole[::-1, -1])
    np.testing.assert_array_equal(ds["temperature"][-3:, ::-3].values, whole[-3:, ::-3])


def _nodes_equal_one_by_one(path, **decoders) -> int:
    tree = xr.open_datatree(path, engine="atlas", **decoders)
    collection = atlasds.Collection.open(path)
    for name in collection:
        node = tree[name.replace("/", "\N{DIVISION SLASH}")].to_dataset()
        one = xr.open_dataset(path, engine="atlas", group=name, **decoders)
        xr.testing.assert_identical(node.load(), one.load())
        for var in one.variables:
            assert node[var].encoding == one[var].encoding, (name, var)
            assert node[var].dtype == one[var].dtype, (name, var)
    return len(collection)


@pytest.mark.parametrize("which", ["small", "mixed", "deleted", "kinds", "demo"])
def test_datatree_nodes_equal_the_datasets_opened_one_by_one(which, kinds, demo):
    # The tree decodes each kind of variable once and reuses it; every node
    # must still be what opening its dataset alone gives, masks included.
    path = {"kinds": kinds, "demo": demo}.get(which) or fixture(which)
    assert _nodes_equal_one_by_one(path) >= 2
    assert _nodes_equal_one_by_one(path, mask_and_scale=False, decode_times=False) >= 2
